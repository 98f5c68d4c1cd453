package graphstore

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/quad"
)

func cid(s string) *ClaimID {
	id, err := ParseClaimID(s)
	if err != nil {
		panic(err)
	}
	return &id
}

// fullTx holds every record type and every value type, with names that need escaping.
func fullTx() *Tx {
	const id = 7
	ts := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	return &Tx{
		ID:   id,
		Time: ts,
		By:   "owner",
		Meta: &StoreMeta{Owner: "owner", Strict: true},
		Principals: []*Principal{
			{Name: "owner", Type: User, Tx: id},
			{Name: "worker-3", Type: Agent, Tx: id},
			{Name: "tools/scrape: v2 ü", Type: Tool, Tx: id},
		},
		Grants: []*Grant{
			{ID: "g7.1", Grantee: "worker-3", Right: RightAssert, Scope: "price_per_seat", By: "owner", Tx: id},
			{ID: "g7.2", Grantee: "worker-3", Right: RightRevoke, Scope: "Klarveld.*", By: "owner", Tx: id},
		},
		Sources: []*Source{
			{ID: "src:Klarveld:rev0", Excerpt: "Price: 44 €/seat\n\"quoted\" \\ tab\t", URI: "https://klarveld.example/pricing?x=1&y=2", Revision: "rev0", Tx: id},
			{ID: "src/b 100%", Tx: id},
		},
		Claims: []*Claim{
			{ID: *cid("Klarveld.price_per_seat@1"), Value: Value{Type: Number, Num: 44.5}, By: "worker-3",
				Sources: []string{"src:Klarveld:rev0", "src/b 100%"}, Kind: Observed, Confidence: 0.9, Grant: "g7.1", Tx: id},
			{ID: *cid("Klarveld.price_per_seat@2"), Value: Value{Type: Number, Num: -1e-300}, By: "worker-3",
				Kind: Inferred, Confidence: 0, Supersedes: cid("Klarveld.price_per_seat@1"), Tx: id},
			{ID: *cid("Klarveld.price_per_seat@3"), Value: Value{Type: Number, Num: 45}, By: "worker-3",
				Sources: []string{"src/b 100%"}, Kind: Inferred, Confidence: 0.25, Contests: cid("Klarveld.price_per_seat@2"), Tx: id},
			{ID: *cid("Klarveld.region@1"), Value: Value{Type: String, Str: "EU \\x00 \x01 ü\r\n"}, By: "worker-3",
				Kind: Confirmed, Confidence: 1, ValidFrom: ts.Add(-time.Hour), ValidUntil: time.Date(2027, 1, 1, 0, 0, 0, 1, time.UTC),
				SeenBy: []string{"worker-3", "owner"}, Tx: id},
			{ID: *cid("Klarveld.soc2@1"), Value: Value{Type: Bool, Bool: true}, By: "owner", Kind: Observed, Confidence: 1, SeenBy: []string{"owner"}, Tx: id},
			{ID: *cid("Klarveld.soc2@2"), Value: Value{Type: Bool, Bool: false}, By: "owner", Kind: Observed, Confidence: 1, Tx: id},
			{ID: *cid("Klarveld.founded@1"), Value: Value{Type: Time, Time: time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)}, By: "owner", Kind: Observed, Confidence: 0.5, Tx: id},
			{ID: *cid("Klarveld.parent@1"), Value: Value{Type: Ref, Str: "Brimsole"}, By: "owner", Kind: Inferred, Confidence: 0.5, Tx: id},
			{ID: *cid("Sub:ject-1/x.pred.with.dots@x@1"), Value: Value{Type: String}, By: "owner", Kind: Inferred, Confidence: 0.5, Tx: id},
		},
		Revocations: []*Revocation{
			{ID: "r7.1", Claim: *cid("Klarveld.price_per_seat@2"), By: "owner", Because: "misread the page", Standing: "owner", ReplacedBy: cid("Klarveld.price_per_seat@3"), Tx: id},
			{ID: "r7.2", Claim: *cid("Klarveld.soc2@1"), By: "owner", Standing: "own claim", Tx: id},
		},
		Confirmations: []*Confirmation{
			{ID: "c7.1", Claim: *cid("Klarveld.region@1"), By: "owner", Standing: "owner", Tx: id},
		},
		Artifacts: []*Artifact{
			{ID: ArtifactID{Name: "plan:pick-vendor", Version: 1}, DerivedFrom: []NodeRef{{Claim: cid("Klarveld.price_per_seat@3")}, {Claim: cid("Klarveld.region@1")}},
				By: "worker-3", Confidence: 1, Run: "r-17 ü", Tx: id},
			{ID: ArtifactID{Name: "plan:pick-vendor", Version: 2}, DerivedFrom: []NodeRef{{Artifact: &ArtifactID{Name: "plan:pick-vendor", Version: 1}}},
				By: "worker-3", Confidence: 0.75, SeenBy: []string{"worker-3"}, Tx: id},
			{ID: ArtifactID{Name: "plan:pick-vendor", Version: 3}, By: "worker-3", Confidence: 1,
				Supersedes: &ArtifactID{Name: "plan:pick-vendor", Version: 1}, Tx: id},
			{ID: ArtifactID{Name: "summary@x", Version: 1}, By: "owner", Confidence: 1, Tx: id},
		},
		Reviews: []*Review{
			{ID: "v7.1", Artifact: ArtifactID{Name: "plan:pick-vendor", Version: 1}, By: "owner", Because: "re-checked", Tx: id},
			{ID: "v7.2", Artifact: ArtifactID{Name: "plan:pick-vendor", Version: 2}, By: "owner", Tx: id},
		},
		Decays: []*Decay{
			{Predicate: "signal", HalfLife: 10 * time.Minute, By: "owner", Tx: id},
			{Predicate: "price_per_seat", HalfLife: 1500*time.Millisecond + 1, By: "owner", Tx: id},
		},
		Retrievals: []*Retrieval{
			{ID: "q7.1", Run: "r-17 ü", By: "worker-3", ReadAt: 6, Statement: "context Klarveld budget 60 for run r-17",
				Claims:    []ClaimID{*cid("Klarveld.region@1"), *cid("Klarveld.price_per_seat@3")},
				Artifacts: []ArtifactID{{Name: "plan:pick-vendor", Version: 1}}, Tx: id},
			{ID: "q7.2", Run: "r-18", By: "owner", ReadAt: 1, Tx: id},
			{ID: "q7.3", Run: "r-18", By: "owner", ReadAt: 6, Claims: []ClaimID{*cid("Klarveld.soc2@2")}, Tx: id},
		},
		Outcomes: []*Outcome{
			{ID: "o7.1", Run: "r-17 ü", Result: Failed, Because: "picked the wrong vendor", By: "worker-3", Tx: id},
			{ID: "o7.2", Run: "r-18", Result: Declined, By: "owner", Tx: id},
		},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	tx := fullTx()
	quads, err := encodeTx(tx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[quad.Quad]bool{}
	label := txIRI(tx.ID)
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
	txs, err := decodeTxs(quads)
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
	txs, err = decodeTxs(rev)
	if err != nil || !reflect.DeepEqual(txs[0], tx) {
		t.Fatalf("reversed quads: %v", err)
	}
}

func dumpTx(tx *Tx) string {
	var b strings.Builder
	if err := WriteNQuads(&b, []*Tx{tx}); err != nil {
		return err.Error()
	}
	return b.String()
}

func TestIRIEscaping(t *testing.T) {
	for _, s := range []string{"a", "src:K:rev0", "a-b/c d", "x.y.z", "at@1@2", "100%", "ü€", "a?b#c", "<>\"{}|\\^`", "a+b=c&d;e,f"} {
		if got, err := parseNamed(prefPrincipal, "p", principalIRI(s)); err != nil || got != s {
			t.Errorf("principal %q: got %q, %v", s, got, err)
		}
		iri := string(principalIRI(s))
		if strings.ContainsAny(iri, " <>\"{}|\\^`") {
			t.Errorf("IRI %q holds characters N-Quads forbids", iri)
		}
		for _, p := range []string{"p", "p.q", "p@1"} {
			id := ClaimID{Key: Key{Subject: s, Predicate: p}, Version: 3}
			if got, err := parseClaimIRI(claimIRI(id)); err != nil || got != id {
				t.Errorf("claim %v: got %v, %v", id, got, err)
			}
		}
		a := ArtifactID{Name: s, Version: 2}
		if got, err := parseArtifactIRI(artifactIRI(a)); err != nil || got != a {
			t.Errorf("artifact %v: got %v, %v", a, got, err)
		}
	}
	if got := claimIRI(*cid("Klarveld.price_per_seat@2")); got != "urn:mql:claim:Klarveld.price_per_seat@2" {
		t.Errorf("claim IRI %s", got)
	}
	if _, err := parseNamed(prefPrincipal, "p", quad.IRI(prefPrincipal+"K%6Cv")); err == nil {
		t.Error("non-canonical escape accepted")
	}
}

func TestDurationLiteral(t *testing.T) {
	for _, d := range []time.Duration{1, time.Second, 10 * time.Minute, 1500 * time.Millisecond, math.MaxInt64} {
		lit := durationLit(d).(quad.TypedString)
		got, ok := parseDuration(string(lit.Value))
		if !ok || got != d {
			t.Errorf("%v -> %s -> %v %v", d, lit.Value, got, ok)
		}
	}
	if got := durationLit(10 * time.Minute).(quad.TypedString).Value; got != "PT600S" {
		t.Errorf("10m = %s", got)
	}
	for _, s := range []string{"", "P1D", "PT-1S", "PT1.0000000001S", "PT99999999999999S"} {
		if _, ok := parseDuration(s); ok {
			t.Errorf("%q accepted", s)
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	cases := map[string]func(tx *Tx){
		"nul byte":          func(tx *Tx) { tx.Claims[3].Value.Str = "a\x00b" },
		"invalid utf8":      func(tx *Tx) { tx.Sources[0].Excerpt = "\xff" },
		"nan":               func(tx *Tx) { tx.Claims[0].Value.Num = math.NaN() },
		"kind":              func(tx *Tx) { tx.Claims[0].Kind = "guessed" },
		"confidence":        func(tx *Tx) { tx.Claims[0].Confidence = 1.5 },
		"two records":       func(tx *Tx) { tx.Principals[1].Name = "owner" },
		"dup source":        func(tx *Tx) { tx.Claims[0].Sources = []string{"src/b 100%", "src/b 100%"} },
		"both refs":         func(tx *Tx) { tx.Artifacts[0].DerivedFrom[0].Artifact = &ArtifactID{Name: "x", Version: 1} },
		"tx stamp":          func(tx *Tx) { tx.Grants[0].Tx = 3 },
		"no by":             func(tx *Tx) { tx.By = "" },
		"value type":        func(tx *Tx) { tx.Claims[0].Value.Type = "blob" },
		"right":             func(tx *Tx) { tx.Grants[0].Right = "everything" },
		"half-life":         func(tx *Tx) { tx.Decays[0].HalfLife = 0 },
		"principal type":    func(tx *Tx) { tx.Principals[0].Type = "robot" },
		"empty seen-by":     func(tx *Tx) { tx.Claims[4].SeenBy = []string{""} },
		"zero time value":   func(tx *Tx) { tx.Claims[6].Value.Time = time.Time{} },
		"claim no subject":  func(tx *Tx) { tx.Claims[0].ID.Subject = "" },
		"meta without name": func(tx *Tx) { tx.Meta.Owner = "" },
		"read at own tx":    func(tx *Tx) { tx.Retrievals[0].ReadAt = 7 },
		"read at nothing":   func(tx *Tx) { tx.Retrievals[0].ReadAt = 0 },
		"retrieval no run":  func(tx *Tx) { tx.Retrievals[0].Run = "" },
		"served twice":      func(tx *Tx) { tx.Retrievals[2].Claims = append(tx.Retrievals[2].Claims, tx.Retrievals[2].Claims[0]) },
		"served bad claim":  func(tx *Tx) { tx.Retrievals[2].Claims[0].Version = 0 },
		"outcome result":    func(tx *Tx) { tx.Outcomes[0].Result = "crashed" },
		"outcome no by":     func(tx *Tx) { tx.Outcomes[0].By = "" },
		"supersedes another name": func(tx *Tx) {
			tx.Artifacts[2].Supersedes = &ArtifactID{Name: "summary@x", Version: 1}
		},
		"supersedes a later version": func(tx *Tx) {
			tx.Artifacts[2].Supersedes = &ArtifactID{Name: "plan:pick-vendor", Version: 3}
		},
	}
	for name, mutate := range cases {
		tx := fullTx()
		mutate(tx)
		if _, err := encodeTx(tx); err == nil {
			t.Errorf("%s: encoded", name)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := encodeTx(fullTx())
	if err != nil {
		t.Fatal(err)
	}
	label := txIRI(7)
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
	claim := claimIRI(*cid("Klarveld.price_per_seat@1"))
	cases := map[string][]quad.Quad{
		"missing kind":       without(mqlKind, claim),
		"missing time":       without(provEndedAtTime, ""),
		"missing ord":        without(mqlOrd, grantIRI("g7.1")),
		"missing order list": without(mqlSourceOrder, claim),
		"missing wrote":      without(mqlWrote, ""),
		"missing annotation": without(provWasInvalidatedBy, ""),
		"no tx node":         without(rdfType, label),
		"extra predicate":    with(quad.Quad{Subject: claim, Predicate: quad.IRI("urn:mql:colour"), Object: quad.String("red"), Label: label}),
		"second value":       with(quad.Quad{Subject: claim, Predicate: mqlValue, Object: quad.Float(1), Label: label}),
		"unknown class":      with(quad.Quad{Subject: quad.IRI("urn:mql:thing:x"), Predicate: rdfType, Object: quad.IRI("urn:mql:Thing"), Label: label}),
		"lang string":        with(quad.Quad{Subject: quad.IRI("urn:x"), Predicate: mqlName, Object: quad.LangString{Value: "x", Lang: "en"}, Label: label}),
		"bad label":          with(quad.Quad{Subject: claim, Predicate: mqlKind, Object: quad.String("observed"), Label: quad.IRI("urn:mql:tx:07")}),
		"no label":           with(quad.Quad{Subject: claim, Predicate: mqlKind, Object: quad.String("observed")}),
		"bnode subject":      with(quad.Quad{Subject: quad.BNode("b"), Predicate: mqlKind, Object: quad.String("observed"), Label: label}),
		"wrong type value": func() []quad.Quad {
			out := without(mqlConfidence, claim)
			return append(out, quad.Quad{Subject: claim, Predicate: mqlConfidence, Object: quad.String("0.9"), Label: label})
		}(),
		"changed ord": func() []quad.Quad {
			out := without(mqlOrd, grantIRI("g7.1"))
			return append(out, quad.Quad{Subject: grantIRI("g7.1"), Predicate: mqlOrd, Object: quad.Int(1), Label: label})
		}(),
	}
	for name, qs := range cases {
		if _, err := decodeTxs(qs); err == nil {
			t.Errorf("%s: decoded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func TestChainCheck(t *testing.T) {
	c := newChain()
	g := &Tx{ID: 1, Meta: &StoreMeta{Owner: "owner"}}
	if err := c.check(g); err != nil {
		t.Fatal(err)
	}
	c.add(g)
	bad := map[string]*Tx{
		"gap":                      {ID: 3},
		"meta again":               {ID: 2, Meta: &StoreMeta{Owner: "x"}},
		"version skip":             {ID: 2, Claims: []*Claim{{ID: *cid("A.p@2")}}},
		"unknown revoke":           {ID: 2, Revocations: []*Revocation{{ID: "r", Claim: *cid("A.p@1")}}},
		"unknown source":           {ID: 2, Claims: []*Claim{{ID: *cid("A.p@1"), Sources: []string{"s"}}}},
		"other key":                {ID: 2, Claims: []*Claim{{ID: *cid("A.p@1")}, {ID: *cid("A.q@1"), Supersedes: cid("A.p@1")}}},
		"unknown derive":           {ID: 2, Artifacts: []*Artifact{{ID: ArtifactID{"a", 1}, DerivedFrom: []NodeRef{{Claim: cid("A.p@1")}}}}},
		"unknown review":           {ID: 2, Reviews: []*Review{{ID: "v", Artifact: ArtifactID{"a", 1}}}},
		"artifact skip":            {ID: 2, Artifacts: []*Artifact{{ID: ArtifactID{"a", 2}}}},
		"served unknown claim":     {ID: 2, Retrievals: []*Retrieval{{ID: "q", Run: "r", ReadAt: 1, Claims: []ClaimID{*cid("A.p@1")}}}},
		"served unknown artifact":  {ID: 2, Retrievals: []*Retrieval{{ID: "q", Run: "r", ReadAt: 1, Artifacts: []ArtifactID{{"a", 1}}}}},
		"served what it records":   {ID: 2, Claims: []*Claim{{ID: *cid("A.p@1")}}, Retrievals: []*Retrieval{{ID: "q", Run: "r", ReadAt: 1, Claims: []ClaimID{*cid("A.p@1")}}}},
		"unknown confirm":          {ID: 2, Confirmations: []*Confirmation{{ID: "c", Claim: *cid("A.p@1")}}},
		"unknown superseded":       {ID: 2, Artifacts: []*Artifact{{ID: ArtifactID{"a", 1}}, {ID: ArtifactID{"a", 2}, Supersedes: &ArtifactID{"a", 3}}}},
		"superseding another name": {ID: 2, Artifacts: []*Artifact{{ID: ArtifactID{"b", 1}}, {ID: ArtifactID{"a", 1}}, {ID: ArtifactID{"a", 2}, Supersedes: &ArtifactID{"b", 1}}}},
	}
	for name, tx := range bad {
		if err := c.check(tx); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := &Tx{ID: 2,
		Sources:     []*Source{{ID: "s"}},
		Claims:      []*Claim{{ID: *cid("A.p@1"), Sources: []string{"s"}}, {ID: *cid("A.p@2"), Supersedes: cid("A.p@1")}},
		Revocations: []*Revocation{{ID: "r", Claim: *cid("A.p@2"), ReplacedBy: cid("A.p@1")}},
		Artifacts:   []*Artifact{{ID: ArtifactID{"a", 1}, DerivedFrom: []NodeRef{{Claim: cid("A.p@1")}}}, {ID: ArtifactID{"a", 2}, DerivedFrom: []NodeRef{{Artifact: &ArtifactID{"a", 1}}}, Supersedes: &ArtifactID{"a", 1}}},
		Reviews:     []*Review{{ID: "v", Artifact: ArtifactID{"a", 2}}},
	}
	if err := c.check(ok); err != nil {
		t.Fatal(err)
	}
}
