package codec

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/graphstore/record/recordtest"
)

func TestCodecRoundTrip(t *testing.T) {
	tx := recordtest.FullTx()
	quads, err := EncodeTx(tx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[quad.Quad]bool{}
	label := TxIRI(tx.ID)
	for _, q := range quads {
		if seen[q] {
			t.Errorf("duplicate quad %s", q.NQuad())
		}
		seen[q] = true
		if q.Label != label {
			t.Errorf("quad %s not labelled %s", q.NQuad(), label)
		}
		for _, v := range []quad.Value{q.Subject, q.Predicate} {
			if _, ok := v.(quad.IRI); !ok {
				t.Errorf("non-IRI node %#v in %s", v, q.NQuad())
			}
		}
		switch o := q.Object.(type) {
		case quad.IRI, quad.String, quad.TypedString, quad.Int, quad.Float, quad.Bool:
		default:
			t.Errorf("unexpected object type %T", o)
		}
	}
	txs, err := DecodeTxs(quads)
	if err != nil {
		t.Fatal(err)
	}
	if len(txs) != 1 || !reflect.DeepEqual(txs[0], tx) {
		t.Fatalf("round trip differs:\n got %s\nwant %s", dumpTx(txs[0]), dumpTx(tx))
	}
	// Quads in any order decode the same.
	rev := make([]quad.Quad, len(quads))
	for i, q := range quads {
		rev[len(quads)-1-i] = q
	}
	txs, err = DecodeTxs(rev)
	if err != nil || !reflect.DeepEqual(txs[0], tx) {
		t.Fatalf("reversed quads: %v", err)
	}
}

func TestIRIEscaping(t *testing.T) {
	for _, s := range []string{"a", "src:K:rev0", "a-b/c d", "x.y.z", "at@1@2", "100%", "ü€", "a?b#c", "<>\"{}|\\^`", "a+b=c&d;e,f"} {
		if got, err := ParseNamed(PrefPrincipal, "p", PrincipalIRI(s)); err != nil || got != s {
			t.Errorf("principal %q: got %q, %v", s, got, err)
		}
		iri := string(PrincipalIRI(s))
		if strings.ContainsAny(iri, " <>\"{}|\\^`") {
			t.Errorf("IRI %q holds characters N-Quads forbids", iri)
		}
		for _, p := range []string{"p", "p.q", "p@1"} {
			id := record.ClaimID{Key: record.Key{Subject: s, Predicate: p}, Version: 3}
			if got, err := ParseClaimIRI(ClaimIRI(id)); err != nil || got != id {
				t.Errorf("claim %v: got %v, %v", id, got, err)
			}
		}
		a := record.ArtifactID{Name: s, Version: 2}
		if got, err := ParseArtifactIRI(ArtifactIRI(a)); err != nil || got != a {
			t.Errorf("artifact %v: got %v, %v", a, got, err)
		}
	}
	if got := ClaimIRI(*recordtest.ID("Klarveld.price_per_seat@2")); got != "urn:mql:claim:Klarveld.price_per_seat@2" {
		t.Errorf("claim IRI %s", got)
	}
	if _, err := ParseNamed(PrefPrincipal, "p", quad.IRI(PrefPrincipal+"K%6Cv")); err == nil {
		t.Error("non-canonical escape accepted")
	}
}

func TestDurationLiteral(t *testing.T) {
	for _, d := range []time.Duration{1, time.Second, 10 * time.Minute, 1500 * time.Millisecond, math.MaxInt64} {
		lit := DurationLit(d).(quad.TypedString)
		got, ok := ParseDuration(string(lit.Value))
		if !ok || got != d {
			t.Errorf("%v -> %s -> %v %v", d, lit.Value, got, ok)
		}
	}
	if got := DurationLit(10 * time.Minute).(quad.TypedString).Value; got != "PT600S" {
		t.Errorf("10m = %s", got)
	}
	for _, s := range []string{"", "P1D", "PT-1S", "PT1.0000000001S", "PT99999999999999S"} {
		if _, ok := ParseDuration(s); ok {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	cases := map[string]func(tx *record.Tx){
		"nul byte":     func(tx *record.Tx) { tx.Claims[3].Value.Str = "a\x00b" },
		"invalid utf8": func(tx *record.Tx) { tx.Sources[0].Excerpt = "\xff" },
		"nan":          func(tx *record.Tx) { tx.Claims[0].Value.Num = math.NaN() },
		"kind":         func(tx *record.Tx) { tx.Claims[0].Kind = "guessed" },
		"confidence":   func(tx *record.Tx) { tx.Claims[0].Confidence = 1.5 },
		"two records":  func(tx *record.Tx) { tx.Principals[1].Name = "owner" },
		"dup source":   func(tx *record.Tx) { tx.Claims[0].Sources = []string{"src/b 100%", "src/b 100%"} },
		// What a claim quotes is one excerpt for each of its sources, and quotes something.
		"excerpts for other sources": func(tx *record.Tx) { tx.Claims[2].Excerpts = []string{"a", "b"} },
		"excerpts of nothing":        func(tx *record.Tx) { tx.Claims[2].Excerpts = []string{""} },
		"excerpt nul byte":           func(tx *record.Tx) { tx.Claims[2].Excerpts = []string{"a\x00b"} },
		"excerpt invalid utf8":       func(tx *record.Tx) { tx.Claims[2].Excerpts = []string{"\xff"} },
		"both refs": func(tx *record.Tx) {
			tx.Artifacts[0].DerivedFrom[0].Artifact = &record.ArtifactID{Name: "x", Version: 1}
		},
		"tx stamp":          func(tx *record.Tx) { tx.Grants[0].Tx = 3 },
		"no by":             func(tx *record.Tx) { tx.By = "" },
		"value type":        func(tx *record.Tx) { tx.Claims[0].Value.Type = "blob" },
		"right":             func(tx *record.Tx) { tx.Grants[0].Right = "everything" },
		"half-life":         func(tx *record.Tx) { tx.Decays[0].HalfLife = 0 },
		"principal type":    func(tx *record.Tx) { tx.Principals[0].Type = "robot" },
		"empty seen-by":     func(tx *record.Tx) { tx.Claims[4].SeenBy = []string{""} },
		"zero time value":   func(tx *record.Tx) { tx.Claims[6].Value.Time = time.Time{} },
		"claim no subject":  func(tx *record.Tx) { tx.Claims[0].ID.Subject = "" },
		"meta without name": func(tx *record.Tx) { tx.Meta.Owner = "" },
		"read at own tx":    func(tx *record.Tx) { tx.Retrievals[0].ReadAt = 7 },
		"read at nothing":   func(tx *record.Tx) { tx.Retrievals[0].ReadAt = 0 },
		"retrieval no run":  func(tx *record.Tx) { tx.Retrievals[0].Run = "" },
		"served twice": func(tx *record.Tx) {
			tx.Retrievals[2].Claims = append(tx.Retrievals[2].Claims, tx.Retrievals[2].Claims[0])
		},
		"served bad claim": func(tx *record.Tx) { tx.Retrievals[2].Claims[0].Version = 0 },
		"outcome result":   func(tx *record.Tx) { tx.Outcomes[0].Result = "crashed" },
		"outcome no by":    func(tx *record.Tx) { tx.Outcomes[0].By = "" },
		"supersedes another name": func(tx *record.Tx) {
			tx.Artifacts[2].Supersedes = &record.ArtifactID{Name: "summary@x", Version: 1}
		},
		"supersedes a later version": func(tx *record.Tx) {
			tx.Artifacts[2].Supersedes = &record.ArtifactID{Name: "plan:pick-vendor", Version: 3}
		},
	}
	for name, mutate := range cases {
		tx := recordtest.FullTx()
		mutate(tx)
		if _, err := EncodeTx(tx); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := EncodeTx(recordtest.FullTx())
	if err != nil {
		t.Fatal(err)
	}
	label := TxIRI(7)
	without := func(pred quad.IRI, subj quad.IRI) []quad.Quad {
		var out []quad.Quad
		for _, q := range good {
			if q.Predicate == pred && (subj == "" || q.Subject == subj) {
				continue
			}
			out = append(out, q)
		}
		return out
	}
	with := func(extra ...quad.Quad) []quad.Quad { return append(append([]quad.Quad{}, good...), extra...) }
	claim := ClaimIRI(*recordtest.ID("Klarveld.price_per_seat@1"))
	cases := map[string][]quad.Quad{
		"missing kind":       without(MQLKind, claim),
		"missing time":       without(ProvEndedAtTime, ""),
		"missing ord":        without(MQLOrd, GrantIRI("g7.1")),
		"missing order list": without(MQLSourceOrder, claim),
		"missing wrote":      without(MQLWrote, ""),
		"missing annotation": without(ProvWasInvalidatedBy, ""),
		"no tx node":         without(RDFType, label),
		"extra predicate":    with(quad.Quad{Subject: claim, Predicate: quad.IRI("urn:mql:colour"), Object: quad.String("red"), Label: label}),
		"second value":       with(quad.Quad{Subject: claim, Predicate: MQLValue, Object: quad.Float(1), Label: label}),
		"unknown class":      with(quad.Quad{Subject: quad.IRI("urn:mql:thing:x"), Predicate: RDFType, Object: quad.IRI("urn:mql:Thing"), Label: label}),
		"lang string":        with(quad.Quad{Subject: quad.IRI("urn:x"), Predicate: MQLName, Object: quad.LangString{Value: "x", Lang: "en"}, Label: label}),
		"bad label":          with(quad.Quad{Subject: claim, Predicate: MQLKind, Object: quad.String("observed"), Label: quad.IRI("urn:mql:tx:07")}),
		"no label":           with(quad.Quad{Subject: claim, Predicate: MQLKind, Object: quad.String("observed")}),
		"bnode subject":      with(quad.Quad{Subject: quad.BNode("b"), Predicate: MQLKind, Object: quad.String("observed"), Label: label}),
		"wrong type value": func() []quad.Quad {
			out := without(MQLConfidence, claim)
			return append(out, quad.Quad{Subject: claim, Predicate: MQLConfidence, Object: quad.String("0.9"), Label: label})
		}(),
		"excerpts not json": func() []quad.Quad {
			out := without(MQLSourceExcerpts, claim)
			return append(out, quad.Quad{Subject: claim, Predicate: MQLSourceExcerpts, Object: quad.String("44 a seat"), Label: label})
		}(),
		"excerpts not canonical": func() []quad.Quad {
			out := without(MQLSourceExcerpts, claim)
			return append(out, quad.Quad{Subject: claim, Predicate: MQLSourceExcerpts, Object: quad.String(`[ "", "x"]`), Label: label})
		}(),
		"excerpts for one of two sources": func() []quad.Quad {
			out := without(MQLSourceExcerpts, claim)
			return append(out, quad.Quad{Subject: claim, Predicate: MQLSourceExcerpts, Object: quad.String(`["x"]`), Label: label})
		}(),
		"excerpts twice": with(quad.Quad{Subject: claim, Predicate: MQLSourceExcerpts, Object: quad.String(`["","y"]`), Label: label}),
		"changed ord": func() []quad.Quad {
			out := without(MQLOrd, GrantIRI("g7.1"))
			return append(out, quad.Quad{Subject: GrantIRI("g7.1"), Predicate: MQLOrd, Object: quad.Int(1), Label: label})
		}(),
	}
	for name, qs := range cases {
		if _, err := DecodeTxs(qs); err == nil {
			t.Errorf("%s: decoded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestChainCheck(t *testing.T) {
	c := NewChain()
	g := &record.Tx{ID: 1, Meta: &record.StoreMeta{Owner: "owner"}}
	if err := c.Check(g); err != nil {
		t.Fatal(err)
	}
	c.Add(g)
	bad := map[string]*record.Tx{
		"gap":                      {ID: 3},
		"meta again":               {ID: 2, Meta: &record.StoreMeta{Owner: "x"}},
		"version skip":             {ID: 2, Claims: []*record.Claim{{ID: *recordtest.ID("A.p@2")}}},
		"unknown revoke":           {ID: 2, Revocations: []*record.Revocation{{ID: "r", Claim: *recordtest.ID("A.p@1")}}},
		"unknown source":           {ID: 2, Claims: []*record.Claim{{ID: *recordtest.ID("A.p@1"), Sources: []string{"s"}}}},
		"other key":                {ID: 2, Claims: []*record.Claim{{ID: *recordtest.ID("A.p@1")}, {ID: *recordtest.ID("A.q@1"), Supersedes: recordtest.ID("A.p@1")}}},
		"unknown derive":           {ID: 2, Artifacts: []*record.Artifact{{ID: record.ArtifactID{Name: "a", Version: 1}, DerivedFrom: []record.NodeRef{{Claim: recordtest.ID("A.p@1")}}}}},
		"unknown review":           {ID: 2, Reviews: []*record.Review{{ID: "v", Artifact: record.ArtifactID{Name: "a", Version: 1}}}},
		"artifact skip":            {ID: 2, Artifacts: []*record.Artifact{{ID: record.ArtifactID{Name: "a", Version: 2}}}},
		"served unknown claim":     {ID: 2, Retrievals: []*record.Retrieval{{ID: "q", Run: "r", ReadAt: 1, Claims: []record.ClaimID{*recordtest.ID("A.p@1")}}}},
		"served unknown artifact":  {ID: 2, Retrievals: []*record.Retrieval{{ID: "q", Run: "r", ReadAt: 1, Artifacts: []record.ArtifactID{{Name: "a", Version: 1}}}}},
		"served what it records":   {ID: 2, Claims: []*record.Claim{{ID: *recordtest.ID("A.p@1")}}, Retrievals: []*record.Retrieval{{ID: "q", Run: "r", ReadAt: 1, Claims: []record.ClaimID{*recordtest.ID("A.p@1")}}}},
		"unknown confirm":          {ID: 2, Confirmations: []*record.Confirmation{{ID: "c", Claim: *recordtest.ID("A.p@1")}}},
		"unknown superseded":       {ID: 2, Artifacts: []*record.Artifact{{ID: record.ArtifactID{Name: "a", Version: 1}}, {ID: record.ArtifactID{Name: "a", Version: 2}, Supersedes: &record.ArtifactID{Name: "a", Version: 3}}}},
		"superseding another name": {ID: 2, Artifacts: []*record.Artifact{{ID: record.ArtifactID{Name: "b", Version: 1}}, {ID: record.ArtifactID{Name: "a", Version: 1}}, {ID: record.ArtifactID{Name: "a", Version: 2}, Supersedes: &record.ArtifactID{Name: "b", Version: 1}}}},
	}
	for name, tx := range bad {
		if err := c.Check(tx); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := &record.Tx{ID: 2,
		Sources:     []*record.Source{{ID: "s"}},
		Claims:      []*record.Claim{{ID: *recordtest.ID("A.p@1"), Sources: []string{"s"}}, {ID: *recordtest.ID("A.p@2"), Supersedes: recordtest.ID("A.p@1")}},
		Revocations: []*record.Revocation{{ID: "r", Claim: *recordtest.ID("A.p@2"), ReplacedBy: recordtest.ID("A.p@1")}},
		Artifacts:   []*record.Artifact{{ID: record.ArtifactID{Name: "a", Version: 1}, DerivedFrom: []record.NodeRef{{Claim: recordtest.ID("A.p@1")}}}, {ID: record.ArtifactID{Name: "a", Version: 2}, DerivedFrom: []record.NodeRef{{Artifact: &record.ArtifactID{Name: "a", Version: 1}}}, Supersedes: &record.ArtifactID{Name: "a", Version: 1}}},
		Reviews:     []*record.Review{{ID: "v", Artifact: record.ArtifactID{Name: "a", Version: 2}}},
	}
	if err := c.Check(ok); err != nil {
		t.Fatal(err)
	}
}

func dumpTx(tx *record.Tx) string {
	var b strings.Builder
	if err := WriteNQuads(&b, []*record.Tx{tx}); err != nil {
		return err.Error()
	}
	return b.String()
}

// The fast canonical check (encodesTo) accepts exactly the quads EncodeTx gives, in its order:
// a quad moved, dropped, added, repeated or changed sends DecodeTxQuads to the full check.
func TestEncodesTo(t *testing.T) {
	tx := recordtest.FullTx()
	good, err := EncodeTx(tx)
	if err != nil {
		t.Fatal(err)
	}
	if !encodesTo(tx, good) {
		t.Fatal("the encoding itself does not match")
	}
	swapped := append([]quad.Quad{}, good...)
	swapped[1], swapped[2] = swapped[2], swapped[1]
	changed := append([]quad.Quad{}, good...)
	changed[3].Object = quad.String("other")
	for name, qs := range map[string][]quad.Quad{
		"moved":    swapped,
		"dropped":  good[:len(good)-1],
		"added":    append(append([]quad.Quad{}, good...), quad.Quad{Subject: TxIRI(tx.ID), Predicate: MQLName, Object: quad.String("x"), Label: TxIRI(tx.ID)}),
		"repeated": append(append([]quad.Quad{}, good...), good[0]),
		"changed":  changed,
	} {
		if encodesTo(tx, qs) {
			t.Errorf("%s: matches", name)
		}
	}
	// Reordered quads are still the transaction (a graph is a set), through the full check.
	if got, _, err := DecodeTxQuads(tx.ID, swapped); err != nil || !reflect.DeepEqual(got, tx) {
		t.Fatalf("reordered quads: %v", err)
	}
}
