package graphstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/nquads"
)

func ckID(s string) *record.ClaimID {
	id, err := record.ParseClaimID(s)
	if err != nil {
		panic(err)
	}
	return &id
}

// ckSample writes a history with every record type and every claim lifecycle: supersession,
// contest, corroboration, revocation with replacement, confirmation, seen-by, artifacts
// derived from claims and from artifacts, a review and a decay. It is consistent: Check finds
// nothing wrong with it.
func ckSample(t testing.TB, s *Store) {
	t.Helper()
	ctx := context.Background()
	until := time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []func(tx *record.Tx){
		func(tx *record.Tx) {
			tx.Principals = []*record.Principal{{Name: "alice", Type: record.User}, {Name: "w", Type: record.Agent}, {Name: "probe", Type: record.Tool}}
			tx.Grants = []*record.Grant{{ID: fmt.Sprintf("g%d.1", tx.ID), Grantee: "w", Right: record.RightRevoke, Scope: "price", By: "owner"}}
			tx.Sources = []*record.Source{{ID: "s1", Excerpt: "44 a seat", URI: "https://k.example", Revision: "r0"}}
		},
		func(tx *record.Tx) {
			tx.Claims = []*record.Claim{
				{ID: *ckID("K.price@1"), Value: record.Value{Type: record.Number, Num: 44}, By: "w", Sources: []string{"s1"}, Kind: record.Observed, Confidence: 0.9},
				{ID: *ckID("K.region@1"), Value: record.Value{Type: record.String, Str: "EU"}, By: "alice", Kind: record.Observed, Confidence: 1, SeenBy: []string{"alice"}, ValidUntil: until},
				{ID: *ckID("K.soc2@1"), Value: record.Value{Type: record.Bool, Bool: true}, By: "w", Kind: record.Observed, Confidence: 1},
				{ID: *ckID("K.founded@1"), Value: record.Value{Type: record.Time, Time: time.Date(1999, 1, 2, 3, 4, 5, 6, time.UTC)}, By: "w", Kind: record.Inferred, Confidence: 0.5},
				{ID: *ckID("K.parent@1"), Value: record.Value{Type: record.Ref, Str: "B"}, By: "w", Kind: record.Inferred, Confidence: 0.3},
			}
		},
		func(tx *record.Tx) {
			tx.Claims = []*record.Claim{{ID: *ckID("K.price@2"), Value: record.Value{Type: record.Number, Num: 89}, By: "w", Sources: []string{"s1"}, Kind: record.Observed, Confidence: 1, Supersedes: ckID("K.price@1")}}
		},
		func(tx *record.Tx) {
			tx.Claims = []*record.Claim{
				{ID: *ckID("K.price@3"), Value: record.Value{Type: record.Number, Num: 50}, By: "alice", Kind: record.Inferred, Confidence: 0.6, Contests: ckID("K.price@2")},
				{ID: *ckID("K.price@4"), Value: record.Value{Type: record.Number, Num: 89}, By: "alice", Kind: record.Inferred, Confidence: 0.6, Corroborates: ckID("K.price@2")},
			}
		},
		func(tx *record.Tx) {
			tx.Revocations = []*record.Revocation{{ID: fmt.Sprintf("r%d.1", tx.ID), Claim: *ckID("K.price@2"), By: "w", Because: "misread", Standing: "own claim", ReplacedBy: ckID("K.price@3")}}
			tx.Confirmations = []*record.Confirmation{{ID: fmt.Sprintf("c%d.1", tx.ID), Claim: *ckID("K.soc2@1"), By: "alice", Standing: "owner"}}
			tx.Decays = []*record.Decay{{Predicate: "signal", HalfLife: 10 * time.Minute, By: "owner"}}
		},
		func(tx *record.Tx) {
			tx.Artifacts = []*record.Artifact{{ID: record.ArtifactID{Name: "plan", Version: 1}, DerivedFrom: []record.NodeRef{{Claim: ckID("K.price@3")}, {Claim: ckID("K.region@1")}}, By: "alice", Confidence: 1, SeenBy: []string{"alice"}}}
		},
		func(tx *record.Tx) {
			tx.Reviews = []*record.Review{{ID: fmt.Sprintf("v%d.1", tx.ID), Artifact: record.ArtifactID{Name: "plan", Version: 1}, By: "alice", Because: "checked"}}
			tx.Artifacts = []*record.Artifact{{ID: record.ArtifactID{Name: "plan", Version: 2}, DerivedFrom: []record.NodeRef{{Artifact: &record.ArtifactID{Name: "plan", Version: 1}}}, By: "alice", Confidence: 0.5, SeenBy: []string{"alice"}}}
		},
	}
	for i, step := range steps {
		if _, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error { step(tx); return nil }); err != nil {
			t.Fatalf("sample step %d: %v", i, err)
		}
	}
}

func ckOK(t *testing.T, r *Report) {
	t.Helper()
	if !r.OK() {
		for _, p := range r.Problems {
			t.Errorf("%s: %s", p.Kind, p)
		}
		t.Fatalf("a sound store has %d problems", len(r.Problems)+r.Omitted)
	}
}

// A sound store passes on every backend, open (Store.Check) and closed (CheckDSN).
func TestCheckSoundStore(t *testing.T) {
	for _, bc := range backendCases() {
		t.Run(bc.name, func(t *testing.T) {
			dsn := bc.newDSN(t)
			s := mustOpen(t, dsn, Options{})
			ckSample(t, s)
			r, err := s.Check(context.Background(), CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ckOK(t, r)
			if r.Head != 8 || r.Transactions != 8 || r.Claims != 8 || r.Keys != 5 || r.Revocations != 1 || r.Artifacts != 2 || r.Principals != 4 {
				t.Errorf("report %+v", r)
			}
			if n := quadCount(t, s); int64(r.Quads) != n {
				t.Errorf("%d quads checked, the store holds %d", r.Quads, n)
			}
			if !bc.persistent {
				return
			}
			s.Close()
			r, err = CheckDSN(context.Background(), dsn, Options{}, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			ckOK(t, r)
			// Checking wrote nothing: the store reopens with the same head.
			s = mustOpen(t, dsn, Options{})
			defer s.Close()
			if head(s) != 8 {
				t.Errorf("head %d after check", head(s))
			}
		})
	}
}

// A claim filed as corroborating evidence stays superseded after the store is reopened (the
// codec once dropped Corroborates, so it came back live beside the claim it corroborated).
func TestCheckCorroborationSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s := mustOpen(t, path, Options{})
	ckSample(t, s)
	s.Close()
	s = mustOpen(t, path, Options{})
	defer s.Close()
	err := s.Read(context.Background(), func(ix *index.Index) error {
		v := ix.View(ix.Head(), time.Now(), "")
		if st, _ := v.State(v.Claim(*ckID("K.price@4"))); st != index.Superseded {
			t.Errorf("corroborating claim is %s after reopen", st)
		}
		if ls := v.LiveClaims(record.Key{Subject: "K", Predicate: "price"}); len(ls) != 1 || ls[0].ID.Version != 3 {
			t.Errorf("live claims of K.price after reopen: %d", len(ls))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ckQuads returns the quads an export of ckSample holds, in export order.
func ckQuads(t *testing.T) []quad.Quad {
	t.Helper()
	s := mustOpen(t, "memory:", Options{})
	defer s.Close()
	ckSample(t, s)
	var all []quad.Quad
	for _, tx := range txsOf(s) {
		all = append(all, ckTxQuads(tx)...)
	}
	return all
}

// ckEdit returns all without del and with add: an added quad goes after the last quad of its
// transaction graph (so that a transaction's quads stay together, as an export has them), or
// at the end if no quad has its label.
func ckEdit(all, add, del []quad.Quad) []quad.Quad {
	var out []quad.Quad
	for _, q := range all {
		if !slices.Contains(del, q) {
			out = append(out, q)
		}
	}
	for _, q := range add {
		at := len(out)
		if q.Label != nil {
			for i := len(out) - 1; i >= 0; i-- {
				if out[i].Label == q.Label {
					at = i + 1
					break
				}
			}
		}
		out = slices.Insert(out, at, q)
	}
	return out
}

// ckWhere picks the quads of subject s with predicate p ("" for any).
func ckWhere(all []quad.Quad, s string, p quad.IRI) []quad.Quad {
	var out []quad.Quad
	for _, q := range all {
		if q.Subject == quad.IRI(s) && (p == "" || q.Predicate == p) {
			out = append(out, q)
		}
	}
	return out
}

func ckTxQuads(tx *record.Tx) []quad.Quad {
	qs, err := codec.EncodeTx(tx)
	if err != nil {
		panic(err)
	}
	return qs
}

func ckFormat(quads []quad.Quad) string {
	var b strings.Builder
	for _, q := range quads {
		b.WriteString(nquads.FormatQuad(q))
		b.WriteByte('\n')
	}
	return b.String()
}

// ckFound reports whether r holds a problem of kind whose text holds want.
func ckFound(r *Report, kind, want string) bool {
	return slices.ContainsFunc(r.Problems, func(p Problem) bool { return p.Kind == kind && strings.Contains(p.String(), want) })
}

func ckLogProblems(t *testing.T, r *Report) {
	t.Helper()
	for _, p := range r.Problems {
		t.Logf("%s: %s", p.Kind, p)
	}
}

// Deliberately corrupted exports: the quads of a sound store with one corruption each. A store
// no longer holds quads, but an import reads them: the check of the quads (CheckQuads, which
// `mql check` runs on the quads a store's records give) names each corruption, and an import
// of the corrupted file refuses it with an *ImportError naming the line and saying the same
// (or, when the problem shows before the import has read what the check knows, what it knows
// at that line).
func TestCheckCorruptedExports(t *testing.T) {
	const (
		price1 = "urn:mql:claim:K.price@1"
		price2 = "urn:mql:claim:K.price@2"
		price3 = "urn:mql:claim:K.price@3"
		rev    = "urn:mql:revocation:r6.1"
	)
	all := ckQuads(t)
	at := time.Now().UTC().Add(time.Hour) // after the sample's last transaction
	tx := func(id record.TxID) quad.IRI { return codec.TxIRI(id) }
	cases := []struct {
		name string
		// corrupt returns the quads to add and to delete, given the export's.
		corrupt func(all []quad.Quad) (add, del []quad.Quad)
		kind    string
		want    string
		// importKind and importWant (when set) are what the import says instead: it reads
		// the file once, front to back, and names the first problem at its line, before it
		// knows what comes later ("" is the kind of a problem with the file's shape).
		importKind, importWant string
	}{
		{name: "claim without asserter", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price1, codec.ProvWasAttributedTo)
		}, kind: ProblemRecord, want: "K.price@1: has no asserter"},
		{name: "claim without value", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price2, codec.MQLValue)
		}, kind: ProblemRecord, want: "K.price@2: has no value"},
		{name: "claim without subject", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price1, codec.MQLSubject)
		}, kind: ProblemRecord, want: "has no subject"},
		{name: "claim without predicate", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price1, codec.MQLPredicate)
		}, kind: ProblemRecord, want: "has no predicate"},
		{name: "claim outside any transaction", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI("urn:mql:claim:K.ghost@1"), Predicate: codec.RDFType, Object: codec.MQLClaim}
			return []quad.Quad{q}, nil
		}, kind: ProblemLabel, want: "not in a transaction graph",
			importKind: "", importWant: "quad has no graph"},
		{name: "two values", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.MQLValue, Object: quad.Float(45), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, kind: ProblemRecord, want: "has 2 values of value"},
		{name: "confidence out of range", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, price1, codec.MQLConfidence)
			q := old[0]
			q.Object = quad.Float(1.5)
			return []quad.Quad{q}, old
		}, kind: ProblemRecord, want: "confidence 1.5"},
		{name: "dangling supersession", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, price2, codec.ProvWasRevisionOf)
			q := old[0]
			q.Object = quad.IRI("urn:mql:claim:K.price@99")
			return []quad.Quad{q}, old
		}, kind: ProblemReference, want: "K.price@99> was never recorded",
			importKind: ProblemReference, importWant: "K.price@2: its superseded claim <urn:mql:claim:K.price@99> is not recorded before it"},
		{name: "dangling source", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, "urn:mql:source:s1", "")
		}, kind: ProblemReference, want: "urn:mql:source:s1> was never recorded",
			importKind: ProblemEncoding, importWant: "unexpected quad <urn:mql:tx:2> <urn:mql:wrote> <urn:mql:source:s1>"},
		{name: "unknown principal", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, "urn:mql:principal:w", "")
		}, kind: ProblemReference, want: "urn:mql:principal:w> was never recorded",
			importKind: ProblemReference, importWant: "its grantee <urn:mql:principal:w> is not recorded before it"},
		{name: "version gap", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			del := ckWhere(all, price1, "")
			for _, q := range all {
				if q.Predicate == codec.MQLWrote && q.Object == quad.IRI(price1) {
					del = append(del, q)
				}
			}
			return nil, del
		}, kind: ProblemVersion, want: "key K.price: version 1 is missing",
			importKind: ProblemEncoding, importWant: "claim records are numbered 1 at position 0"},
		{name: "version twice", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, price3, codec.MQLVersion)
			q := old[0]
			q.Object = quad.Int(2)
			return []quad.Quad{q}, old
		}, kind: ProblemVersion, want: "version 2 is recorded 2 times",
			importKind: ProblemRecord, importWant: "K.price@3: its version 2 differs from its IRI's 3"},
		{name: "two live claims", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			// K.price@2 no longer records that it supersedes @1: both are live.
			return nil, ckWhere(all, price2, codec.ProvWasRevisionOf)
		}, kind: ProblemLive, want: "K.price has 2 live claims for everyone: @1"},
		{name: "corroboration lost", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, "urn:mql:claim:K.price@4", codec.MQLCorroborates)
		}, kind: ProblemLive, want: "K.price has 2 live claims for everyone: @3, @4"},
		{name: "revocation without standing", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, rev, codec.MQLStanding)
		}, kind: ProblemRevocation, want: "names no standing"},
		{name: "revocation without principal", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, rev, codec.ProvWasAssociatedWith)
		}, kind: ProblemRevocation, want: "names no principal"},
		{name: "revocation without claim", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, rev, codec.ProvInvalidated)
		}, kind: ProblemRevocation, want: "names no claim"},
		{name: "claim revoked twice", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return ckTxQuads(&record.Tx{ID: 9, Time: at, By: "owner", Revocations: []*record.Revocation{
				{ID: "r9.1", Claim: *ckID("K.price@2"), By: "owner", Standing: "owner", Tx: 9}}}), nil
		}, kind: ProblemRevocation, want: "revoked 2 times"},
		{name: "retrieval serving a claim never recorded", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return ckTxQuads(&record.Tx{ID: 9, Time: at, By: "w", Retrievals: []*record.Retrieval{
				{ID: "q9.1", Run: "r-1", By: "w", ReadAt: 8, Claims: []record.ClaimID{*ckID("K.price@1"), *ckID("K.ghost@1")}, Tx: 9}}}), nil
		}, kind: ProblemReference, want: "served claim <urn:mql:claim:K.ghost@1> was never recorded",
			importKind: ProblemReference, importWant: "its served claim <urn:mql:claim:K.ghost@1> is not recorded before it"},
		{name: "outcome with an unknown result", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			add := ckTxQuads(&record.Tx{ID: 9, Time: at, By: "w", Outcomes: []*record.Outcome{{ID: "o9.1", Run: "r-1", Result: record.Failed, By: "w", Tx: 9}}})
			for i, q := range add {
				if q.Predicate == codec.MQLResult {
					add[i].Object = quad.String("crashed")
				}
			}
			return add, nil
		}, kind: ProblemRecord, want: `its result "crashed" is not succeeded, failed or declined`},
		{name: "transaction ids with a gap", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return ckTxQuads(&record.Tx{ID: 11, Time: at, By: "owner", Principals: []*record.Principal{{Name: "late", Type: record.Agent, Tx: 11}}}), nil
		}, kind: ProblemTxIDs, want: "transactions 9 to 10 are missing",
			importKind: "", importWant: "transaction ids jump from 8 to 11"},
		{name: "transaction without time", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, string(tx(4)), codec.ProvEndedAtTime)
		}, kind: ProblemTx, want: "records no time"},
		{name: "transaction without principal", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, string(tx(4)), codec.ProvWasAssociatedWith)
		}, kind: ProblemTx, want: "records no principal"},
		{name: "no genesis", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			var del []quad.Quad
			for _, q := range all {
				if q.Label == tx(1) {
					del = append(del, q)
				}
			}
			return nil, del
		}, kind: ProblemTxIDs, want: "transaction 1 is missing",
			importKind: "", importWant: "the file starts with tx 2; an export starts with the genesis, tx 1"},
		{name: "quad that is not canonical", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: quad.IRI("urn:mql:note"), Object: quad.String("x"), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, kind: ProblemEncoding, want: "unexpected quad"},
		{name: "dangling grant", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.MQLGrantPred, Object: quad.IRI("urn:mql:grant:g99.1"), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, kind: ProblemReference, want: "grant:g99.1> was never recorded",
			importKind: ProblemReference, importWant: "its grant <urn:mql:grant:g99.1> is not recorded before it"},
		{name: "time going backwards", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, string(tx(5)), codec.ProvEndedAtTime)
			q := old[0]
			q.Object = codec.TimeLit(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
			return []quad.Quad{q}, old
		}, kind: ProblemTx, want: "its time 2001-01-01T00:00:00Z is before tx 4's"},
		{name: "seen by a principal recorded later", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			late := ckTxQuads(&record.Tx{ID: 9, Time: at, By: "owner", Principals: []*record.Principal{{Name: "late", Type: record.Agent, Tx: 9}}})
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.MQLSeenBy, Object: codec.PrincipalIRI("late"), Label: tx(3)}
			return append(late, q), nil
		}, kind: ProblemReference, want: "its seen-by principal <urn:mql:principal:late> is recorded later, in tx 9",
			importKind: ProblemReference, importWant: "its seen-by principal <urn:mql:principal:late> is not recorded before it"},
		{name: "forward reference", corrupt: func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.ProvWasRevisionOf, Object: quad.IRI(price2), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, kind: ProblemReference, want: "is recorded later, in tx 4",
			importKind: ProblemReference, importWant: "its superseded claim <urn:mql:claim:K.price@2> is not recorded before it"},
	}
	ctx := context.Background()
	if r := CheckQuads(all, CheckOptions{}); !r.OK() {
		ckLogProblems(t, r)
		t.Fatal("the sound export does not check")
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			add, del := tc.corrupt(all)
			if len(add)+len(del) == 0 {
				t.Fatal("the corruption changes nothing")
			}
			bad := ckEdit(all, add, del)
			r := CheckQuads(bad, CheckOptions{})
			if !ckFound(r, tc.kind, tc.want) || r.OK() {
				ckLogProblems(t, r)
				t.Fatalf("no %s problem mentioning %q", tc.kind, tc.want)
			}
			kind, want := tc.kind, tc.want
			if tc.importWant != "" {
				kind, want = tc.importKind, tc.importWant
			}
			// Into memory: the checks are the same for every backend (TestImportTarget and
			// the others see that a refused import into a file leaves nothing behind).
			_, err := ImportStore(ctx, "memory:", strings.NewReader(ckFormat(bad)), Options{}, CheckOptions{})
			var ie *ImportError
			if !errors.As(err, &ie) || !errors.Is(err, ErrBadImport) || ie.Kind != kind || !strings.Contains(err.Error(), want) {
				t.Fatalf("import of the corrupted export: %v; want an *ImportError of kind %s saying %q", err, kind, want)
			}
			if ie.Line < 1 && !strings.Contains(err.Error(), "judged after the last transaction") {
				t.Fatalf("the import error names no line, nor that it was judged at the end: %v", err)
			}
		})
	}
}

// forceStore writes txs, from the genesis on, into a new bbolt file at path with index.Apply
// straight into the kv store: none of the checks a Store's writer or an import makes. It is
// how a store whose records are unsound (written by a buggy or foreign writer) comes about.
func forceStore(t *testing.T, path string, txs []*record.Tx) {
	t.Helper()
	ctx := context.Background()
	be, err := openBBoltFile(path, time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	wt, err := be.kv().Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Rollback()
	h, err := index.Writer(wt, nil)
	if errors.Is(err, index.ErrNotStore) {
		if err = index.Init(wt); err == nil {
			h, err = index.Writer(wt, nil)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, tx := range txs {
		if err := h.Apply(tx, index.Mark{}); err != nil {
			t.Fatalf("applying tx %d: %v", tx.ID, err)
		}
	}
	if err := wt.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// ckTxs is ckSample's transactions, read from a memory store.
func ckTxs(t *testing.T) []*record.Tx {
	t.Helper()
	s := mustOpen(t, "memory:", Options{})
	defer s.Close()
	ckSample(t, s)
	return txsOf(s)
}

// ckClaim is the claim id of tx (which must hold it).
func ckClaim(t *testing.T, tx *record.Tx, id string) *record.Claim {
	t.Helper()
	for _, c := range tx.Claims {
		if c.ID.String() == id {
			return c
		}
	}
	t.Fatalf("tx %d holds no claim %s", tx.ID, id)
	return nil
}

// ckRefused asserts that the store at path, which a check found unsound, opens and reads, and
// refuses writes (the check recorded its verdict in the file); want are the transactions a
// read gives, nil to skip comparing them.
func ckRefused(t *testing.T, path string, want []*record.Tx) *Store {
	t.Helper()
	s := mustOpen(t, path, Options{})
	t.Cleanup(func() { s.Close() })
	if err := writeOne(s); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "a check on ") || !strings.Contains(err.Error(), "nothing was written") {
		t.Fatalf("a write after the check: %v, want ErrDamaged naming the check", err)
	}
	if want != nil {
		sameTxs(t, txsOf(s), want)
	}
	return s
}

// Stores whose records decode but are unsound (what a writer's checks refuse, written past
// them): Open takes each one, since it reads nothing but the store's state; the check names
// what is wrong (its replay of the records gives the entries the store holds, so it is no
// index problem), records its verdict, and from then on writes are refused while the records
// read as they were written. The open store's own check says the same.
func TestCheckUnsoundRecords(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, txs []*record.Tx) []*record.Tx
		kind string
		want string
	}{
		{"two live claims", func(t *testing.T, txs []*record.Tx) []*record.Tx {
			// K.price@2 no longer records that it supersedes @1: both are live.
			ckClaim(t, txs[3], "K.price@2").Supersedes = nil
			return txs
		}, ProblemLive, "K.price has 2 live claims for everyone: @1"},
		{"corroboration lost", func(t *testing.T, txs []*record.Tx) []*record.Tx {
			ckClaim(t, txs[4], "K.price@4").Corroborates = nil
			return txs
		}, ProblemLive, "K.price has 2 live claims for everyone: @3, @4"},
		{"revocation without standing", func(t *testing.T, txs []*record.Tx) []*record.Tx {
			txs[5].Revocations[0].Standing = ""
			return txs
		}, ProblemRevocation, "names no standing"},
		{"claim revoked twice", func(t *testing.T, txs []*record.Tx) []*record.Tx {
			last := txs[len(txs)-1]
			return append(txs, &record.Tx{ID: last.ID + 1, Time: last.Time, By: "owner", Revocations: []*record.Revocation{
				{ID: fmt.Sprintf("r%d.1", last.ID+1), Claim: *ckID("K.price@2"), By: "owner", Standing: "owner", Tx: last.ID + 1}}})
		}, ProblemRevocation, "revoked 2 times"},
		{"time going backwards", func(t *testing.T, txs []*record.Tx) []*record.Tx {
			txs[4].Time = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
			return txs
		}, ProblemTx, "its time 2001-01-01T00:00:00Z is before tx 4's"},
		{"seen by a principal recorded later", func(t *testing.T, txs []*record.Tx) []*record.Tx {
			last := txs[len(txs)-1]
			ckClaim(t, txs[2], "K.soc2@1").SeenBy = []string{"late"}
			return append(txs, &record.Tx{ID: last.ID + 1, Time: last.Time, By: "owner", Principals: []*record.Principal{{Name: "late", Type: record.Agent, Tx: last.ID + 1}}})
		}, ProblemReference, "its seen-by principal <urn:mql:principal:late> is recorded later, in tx 9"},
		{"dangling grant", func(t *testing.T, txs []*record.Tx) []*record.Tx {
			ckClaim(t, txs[2], "K.price@1").Grant = "g99.1"
			return txs
		}, ProblemReference, "grant:g99.1> was never recorded"},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			txs := tc.edit(t, ckTxs(t))
			path := filepath.Join(t.TempDir(), "bad.db")
			forceStore(t, path, txs)
			for i := range 2 { // a second check finds it again, and keeps the verdict
				r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !ckFound(r, tc.kind, tc.want) {
					ckLogProblems(t, r)
					t.Fatalf("check %d: no %s problem mentioning %q", i+1, tc.kind, tc.want)
				}
				if ckFound(r, ProblemIndex, "") {
					ckLogProblems(t, r)
					t.Fatalf("check %d: an index problem: the entries are the ones the records give", i+1)
				}
			}
			s := ckRefused(t, path, txs)
			r, err := s.Check(ctx, CheckOptions{})
			if err != nil || !ckFound(r, tc.kind, tc.want) {
				t.Fatalf("Store.Check: %v %+v", err, r)
			}
		})
	}
}

// Entries of a sound store damaged in the file itself (the file opened with bbolt once the
// Store is closed, the entries changed through package boltkv as docs/FORMAT.md names them):
// the check reports each one, as a record that cannot be read (kind "record") or an entry that
// is not the one the records give (kind "index"), and records its verdict, so that Open then
// refuses writes with ErrDamaged; reads go on where they can: the transactions all read when
// only the index is damaged, and every one but the damaged one when a record is.
func TestCheckDamagedEntries(t *testing.T) {
	cases := []struct {
		name string
		edit func(t *testing.T, path string)
		kind string
		want string
		// unreadable is the transaction whose records no longer read, 0 if none.
		unreadable record.TxID
		// after, if set, checks what a read sees in the damaged store.
		after func(t *testing.T, s *Store)
		// orKind and orWant, if set, are what the check may say instead (the index problem
		// that a record changed in place gives if it still decodes; unreadable is 0 then).
		orKind, orWant string
	}{
		{name: "a claim record that no longer decodes", edit: func(t *testing.T, path string) {
			seq := keySeqOf(t, path, "K", "price")
			editBucket(t, path, "claim", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				return w.Put(b, claimKeyOf(seq, 2), []byte{0xff, 0xff, 0xff})
			})
		}, kind: ProblemRecord, want: "tx 4: the transaction's records cannot be read", unreadable: 4},
		{name: "a byte of a claim flipped", edit: func(t *testing.T, path string) {
			// K.soc2@1's value, true, becomes false, as a bit flipped on disk would change it:
			// a record that fails its checksum, or (values without one) an index that no
			// longer follows from the records.
			seq := keySeqOf(t, path, "K", "soc2")
			editBucket(t, path, "claim", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				v, err := w.Get(b, claimKeyOf(seq, 1))
				if err != nil {
					return err
				}
				v = bytes.Clone(v)
				i := bytes.Index(v, []byte{3, 1}) // type byte 3 (bool), then true
				if i < 0 {
					return fmt.Errorf("no value true in % x", v)
				}
				v[i+1] = 0
				return w.Put(b, claimKeyOf(seq, 1), v)
			})
		}, kind: ProblemRecord, want: "tx 3: the transaction's records cannot be read", unreadable: 3,
			orKind: ProblemIndex, orWant: "live: the store holds"},
		{name: "a truncated transaction header", edit: func(t *testing.T, path string) {
			editBucket(t, path, "tx", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				v, err := w.Get(b, txKeyOf(4))
				if len(v) < 2 || err != nil {
					return fmt.Errorf("no header of tx 4 (%v)", err)
				}
				return w.Put(b, txKeyOf(4), bytes.Clone(v[:len(v)/2]))
			})
		}, kind: ProblemRecord, want: "tx 4: the transaction's records cannot be read", unreadable: 4},
		{name: "a key whose live slot names the wrong version", edit: func(t *testing.T, path string) {
			editBucket(t, path, "key", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				k := keyOf("K", "price")
				v, err := w.Get(b, k)
				if err != nil {
					return err
				}
				fields, sealed := unseal(v)
				at, live := liveOfFirstSlot(t, fields)
				if live != 3 {
					return fmt.Errorf("K.price's first slot has @%d live, want @3", live)
				}
				fields[at] = 1 // @1, a one-byte uvarint like @3
				return w.Put(b, k, reseal(fields, sealed))
			})
		}, kind: ProblemIndex, want: `key: "K\x00price" is not what its records give`, after: func(t *testing.T, s *Store) {
			// What the check protects from: the reads that use the slot are wrong (here no
			// claim is live: @1, which the slot names, is superseded).
			if err := s.Read(context.Background(), func(ix *index.Index) error {
				v := ix.View(ix.Head(), time.Now(), "")
				if c := v.LiveClaim(record.Key{Subject: "K", Predicate: "price"}); c != nil && c.ID.Version == 3 {
					t.Errorf("the damaged slot does not show: the live claim is @3, as the records say")
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a live entry missing", edit: func(t *testing.T, path string) {
			editBucket(t, path, "live", func(w kv.Writer, b kv.Bucket, es []entry) error {
				for _, e := range es {
					if bytes.HasPrefix(e.k, encoding.AppendName(nil, "price")) {
						return w.Delete(b, e.k)
					}
				}
				return errors.New("no live claim of price")
			})
		}, kind: ProblemIndex, want: `live: the store lacks "price\x00`},
		{name: "an extra dep entry", edit: func(t *testing.T, path string) {
			// plan@1 (artifact version 0) as derived from K.soc2@1 too.
			seq := keySeqOf(t, path, "K", "soc2")
			editBucket(t, path, "dep", func(w kv.Writer, b kv.Bucket, es []entry) error {
				if len(es) == 0 {
					return errors.New("no dep entries")
				}
				k := encoding.AppendUint(encoding.AppendUint(encoding.AppendUint([]byte{'c'}, seq), 1), 0)
				if v, err := w.Get(b, k); v != nil || err != nil {
					return fmt.Errorf("K.soc2@1 has dependents already (%v)", err)
				}
				return w.Put(b, k, bytes.Clone(es[0].v))
			})
		}, kind: ProblemIndex, want: "dep: the store holds", after: func(t *testing.T, s *Store) {
			if err := s.Read(context.Background(), func(ix *index.Index) error {
				v := ix.View(ix.Head(), time.Now(), "")
				if deps := v.Dependents(record.NodeRef{Claim: ckID("K.soc2@1")}); len(deps) != 1 {
					t.Errorf("the extra dep entry does not show: %d dependents of K.soc2@1", len(deps))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, want := closedStore(t, ckSample)
			tc.edit(t, path)
			for i := range 2 { // a second check finds the damage again, and keeps the verdict
				r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if tc.orKind != "" && ckFound(r, tc.orKind, tc.orWant) {
					t.Logf("check %d: %s", i+1, firstProblem(r))
					tc.unreadable = 0
					continue
				}
				if !ckFound(r, tc.kind, tc.want) || r.OK() {
					ckLogProblems(t, r)
					t.Fatalf("check %d: no %s problem mentioning %q", i+1, tc.kind, tc.want)
				}
			}
			if tc.unreadable == 0 && tc.orKind != "" {
				// The record changed in place and still decodes: it reads with its new value.
				ckRefused(t, path, nil)
				return
			}
			if tc.unreadable == 0 {
				s := ckRefused(t, path, want)
				if tc.after != nil {
					tc.after(t, s)
				}
				return
			}
			s := ckRefused(t, path, nil)
			if h := head(s); h != want[len(want)-1].ID {
				t.Fatalf("head %d, want %d", h, want[len(want)-1].ID)
			}
			for _, w := range want {
				var got *record.Tx
				err := s.Read(ctx, func(ix *index.Index) error { got = ix.Tx(w.ID); return nil })
				switch {
				case w.ID == tc.unreadable:
					if !errors.Is(err, ErrDamaged) {
						t.Fatalf("reading tx %d, which is damaged: %v, want ErrDamaged", w.ID, err)
					}
				case err != nil:
					t.Fatalf("reading tx %d: %v", w.ID, err)
				case showTx(got) != showTx(w):
					t.Fatalf("tx %d reads\n%s\nwant\n%s", w.ID, showTx(got), showTx(w))
				}
			}
		})
	}
}

// liveOfFirstSlot finds, in a `key` value as docs/FORMAT.md lays it out, the live version of
// its first slot: it reads the fields before it (keySeq, versions, tx of the last, the number
// of slots, then the slot's audience, first version, global seq and tx) and returns the
// offset of the live version and its value; what follows it is left to the layout.
func liveOfFirstSlot(t *testing.T, v []byte) (at int, live uint64) {
	t.Helper()
	d := encoding.NewDec(v)
	d.Uvarint() // keySeq
	d.Uvarint() // versions
	d.Uvarint() // tx of the last
	if n := d.Uvarint(); n < 1 {
		t.Fatalf("a key entry without slots: % x", v)
	}
	_ = d.String() // audience
	d.Uvarint()    // first version
	d.Uvarint()    // its global seq
	d.Uvarint()    // its tx
	at = len(v) - len(d.B)
	live = d.Uvarint()
	if d.Err != nil {
		t.Fatalf("the key entry % x: %v", v, d.Err)
	}
	return at, live
}

func TestCheckDSNErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := CheckDSN(ctx, missing, Options{}, CheckOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("check created the file: %v", err)
	}
	if _, err := CheckDSN(ctx, "memory:", Options{}, CheckOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("memory: %v", err)
	}
	if _, err := CheckDSN(ctx, dir, Options{}, CheckOptions{}); !errors.Is(err, ErrBadDSN) {
		t.Fatalf("directory: %v", err)
	}
	// A file in use: ErrInUse within the timeout, never a hang.
	held := filepath.Join(dir, "held.db")
	s := mustOpen(t, held, Options{})
	defer s.Close()
	start := time.Now()
	if _, err := CheckDSN(ctx, held, Options{OpenTimeout: 200 * time.Millisecond}, CheckOptions{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("held file: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("took %s", d)
	}
	// A file with mql's buckets and no genesis (its creation was interrupted before the first
	// commit) holds no mql memory yet: the check says so, as Open with MustExist does.
	bare := filepath.Join(dir, "bare.db")
	bareStore(t, bare)
	if r, err := CheckDSN(ctx, bare, Options{}, CheckOptions{}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("a store without genesis: %v %+v", err, r)
	}
}

// The report lists at most MaxProblems problems and counts the rest.
func TestCheckManyProblems(t *testing.T) {
	var quads []quad.Quad
	for i := range MaxProblems + 50 {
		quads = append(quads, quad.Quad{Subject: quad.IRI(fmt.Sprintf("urn:x:%d", i)), Predicate: codec.RDFType, Object: codec.MQLClaim})
	}
	r := CheckQuads(quads, CheckOptions{})
	if len(r.Problems) != MaxProblems || r.Omitted < 50 || r.OK() {
		t.Fatalf("%d problems listed, %d omitted", len(r.Problems), r.Omitted)
	}
}

// A write handle that looked up a record before it was recorded finds it once it is: a miss it
// remembers is forgotten by the write (an import's checker asks about a new source before the
// transaction that records it is applied).
func TestWriterForgetsAMissOnWrite(t *testing.T) {
	ctx := context.Background()
	txs := ckTxs(t)
	b := openMemory()
	defer b.close()
	wt, err := b.kv().Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Rollback()
	if err := index.Init(wt); err != nil {
		t.Fatal(err)
	}
	h, err := index.Writer(wt, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, tx := range txs {
		for _, s := range tx.Sources {
			if _, ok := h.RecordTxAsOf(index.KindSource, s.ID, tx.ID); ok {
				t.Fatalf("source %s found before tx %d recorded it", s.ID, tx.ID)
			}
		}
		if err := h.Apply(tx, index.Mark{}); err != nil {
			t.Fatalf("applying tx %d: %v", tx.ID, err)
		}
		for _, s := range tx.Sources {
			if got, ok := h.RecordTxAsOf(index.KindSource, s.ID, tx.ID); !ok || got != tx.ID {
				t.Fatalf("source %s after tx %d recorded it: %d, %v", s.ID, tx.ID, got, ok)
			}
			found++
		}
	}
	if found == 0 {
		t.Fatal("the sample records no source")
	}
}
