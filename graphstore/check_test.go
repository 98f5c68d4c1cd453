package graphstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
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
	ix := s.Index()
	ix.RLock()
	defer ix.RUnlock()
	v := ix.View(0, time.Now(), "")
	if st, _ := v.State(v.Claim(*ckID("K.price@4"))); st != index.Superseded {
		t.Fatalf("corroborating claim is %s after reopen", st)
	}
	if ls := v.LiveClaims(record.Key{Subject: "K", Predicate: "price"}); len(ls) != 1 || ls[0].ID.Version != 3 {
		t.Fatalf("live claims of K.price after reopen: %d", len(ls))
	}
}

// ckStored returns the stored quads of the bbolt file at path.
func ckStored(t *testing.T, path string) []quad.Quad {
	t.Helper()
	be, err := openBBolt(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	qs, err := be.all(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return qs
}

// ckCorrupt writes straight through Cayley, bypassing every check of the Store.
func ckCorrupt(t *testing.T, path string, add, del []quad.Quad) {
	t.Helper()
	be, err := openBBolt(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	var deltas []graph.Delta
	for _, q := range del {
		deltas = append(deltas, graph.Delta{Quad: q, Action: graph.Delete})
	}
	for _, q := range add {
		deltas = append(deltas, graph.Delta{Quad: q, Action: graph.Add})
	}
	if err := be.qs.ApplyDeltas(deltas, graph.IgnoreOpts{}); err != nil {
		t.Fatalf("corrupting: %v", err)
	}
}

// ckWhere picks the stored quads of subject s with predicate p ("" for any).
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

// Deliberately corrupted stores: each corruption is written straight through Cayley into a
// bbolt file, and the check names it.
func TestCheckCorruptedStores(t *testing.T) {
	const (
		price1 = "urn:mql:claim:K.price@1"
		price2 = "urn:mql:claim:K.price@2"
		price3 = "urn:mql:claim:K.price@3"
		rev    = "urn:mql:revocation:r6.1"
	)
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tx := func(id record.TxID) quad.IRI { return codec.TxIRI(id) }
	cases := []struct {
		name string
		// corrupt returns the quads to add and to delete, given the stored ones.
		corrupt  func(all []quad.Quad) (add, del []quad.Quad)
		kind     string
		want     string
		opensBad bool // Open refuses the corrupted store too
	}{
		{"claim without asserter", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price1, codec.ProvWasAttributedTo)
		}, ProblemRecord, "K.price@1: has no asserter", true},
		{"claim without value", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price2, codec.MQLValue)
		}, ProblemRecord, "K.price@2: has no value", true},
		{"claim without subject", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price1, codec.MQLSubject)
		}, ProblemRecord, "has no subject", true},
		{"claim without predicate", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, price1, codec.MQLPredicate)
		}, ProblemRecord, "has no predicate", true},
		{"claim outside any transaction", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI("urn:mql:claim:K.ghost@1"), Predicate: codec.RDFType, Object: codec.MQLClaim}
			return []quad.Quad{q}, nil
		}, ProblemLabel, "not in a transaction graph", true},
		{"two values", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.MQLValue, Object: quad.Float(45), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, ProblemRecord, "has 2 values of value", true},
		{"confidence out of range", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, price1, codec.MQLConfidence)
			q := old[0]
			q.Object = quad.Float(1.5)
			return []quad.Quad{q}, old
		}, ProblemRecord, "confidence 1.5", true},
		{"dangling supersession", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, price2, codec.ProvWasRevisionOf)
			q := old[0]
			q.Object = quad.IRI("urn:mql:claim:K.price@99")
			return []quad.Quad{q}, old
		}, ProblemReference, "K.price@99> was never recorded", true},
		{"dangling source", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, "urn:mql:source:s1", "")
		}, ProblemReference, "urn:mql:source:s1> was never recorded", true},
		{"unknown principal", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, "urn:mql:principal:w", "")
		}, ProblemReference, "urn:mql:principal:w> was never recorded", true},
		{"version gap", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			del := ckWhere(all, price1, "")
			for _, q := range all {
				if q.Predicate == codec.MQLWrote && q.Object == quad.IRI(price1) {
					del = append(del, q)
				}
			}
			return nil, del
		}, ProblemVersion, "key K.price: version 1 is missing", true},
		{"version twice", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, price3, codec.MQLVersion)
			q := old[0]
			q.Object = quad.Int(2)
			return []quad.Quad{q}, old
		}, ProblemVersion, "version 2 is recorded 2 times", true},
		{"two live claims", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			// K.price@2 no longer records that it supersedes @1: both are live.
			return nil, ckWhere(all, price2, codec.ProvWasRevisionOf)
		}, ProblemLive, "K.price has 2 live claims for everyone: @1", false},
		{"corroboration lost", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, "urn:mql:claim:K.price@4", codec.MQLCorroborates)
		}, ProblemLive, "K.price has 2 live claims for everyone: @3, @4", false},
		{"revocation without standing", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, rev, codec.MQLStanding)
		}, ProblemRevocation, "names no standing", false},
		{"revocation without principal", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, rev, codec.ProvWasAssociatedWith)
		}, ProblemRevocation, "names no principal", true},
		{"revocation without claim", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, rev, codec.ProvInvalidated)
		}, ProblemRevocation, "names no claim", true},
		{"claim revoked twice", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return ckTxQuads(&record.Tx{ID: 9, Time: at, By: "owner", Revocations: []*record.Revocation{
				{ID: "r9.1", Claim: *ckID("K.price@2"), By: "owner", Standing: "owner", Tx: 9}}}), nil
		}, ProblemRevocation, "revoked 2 times", false},
		{"retrieval serving a claim never recorded", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return ckTxQuads(&record.Tx{ID: 9, Time: at, By: "w", Retrievals: []*record.Retrieval{
				{ID: "q9.1", Run: "r-1", By: "w", ReadAt: 8, Claims: []record.ClaimID{*ckID("K.price@1"), *ckID("K.ghost@1")}, Tx: 9}}}), nil
		}, ProblemReference, "served claim <urn:mql:claim:K.ghost@1> was never recorded", true},
		{"outcome with an unknown result", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			add := ckTxQuads(&record.Tx{ID: 9, Time: at, By: "w", Outcomes: []*record.Outcome{{ID: "o9.1", Run: "r-1", Result: record.Failed, By: "w", Tx: 9}}})
			for i, q := range add {
				if q.Predicate == codec.MQLResult {
					add[i].Object = quad.String("crashed")
				}
			}
			return add, nil
		}, ProblemRecord, `its result "crashed" is not succeeded, failed or declined`, true},
		{"transaction ids with a gap", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return ckTxQuads(&record.Tx{ID: 11, Time: at, By: "owner", Principals: []*record.Principal{{Name: "late", Type: record.Agent, Tx: 11}}}), nil
		}, ProblemTxIDs, "transactions 9 to 10 are missing", true},
		{"transaction without time", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, string(tx(4)), codec.ProvEndedAtTime)
		}, ProblemTx, "records no time", true},
		{"transaction without principal", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			return nil, ckWhere(all, string(tx(4)), codec.ProvWasAssociatedWith)
		}, ProblemTx, "records no principal", true},
		{"no genesis", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			var del []quad.Quad
			for _, q := range all {
				if q.Label == tx(1) {
					del = append(del, q)
				}
			}
			return nil, del
		}, ProblemTxIDs, "transaction 1 is missing", true},
		{"quad that is not canonical", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: quad.IRI("urn:mql:note"), Object: quad.String("x"), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, ProblemEncoding, "unexpected quad", true},
		{"dangling grant", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.MQLGrantPred, Object: quad.IRI("urn:mql:grant:g99.1"), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, ProblemReference, "grant:g99.1> was never recorded", false},
		{"time going backwards", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			old := ckWhere(all, string(tx(5)), codec.ProvEndedAtTime)
			q := old[0]
			q.Object = codec.TimeLit(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC))
			return []quad.Quad{q}, old
		}, ProblemTx, "its time 2001-01-01T00:00:00Z is before tx 4's", false},
		{"seen by a principal recorded later", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			late := ckTxQuads(&record.Tx{ID: 9, Time: at, By: "owner", Principals: []*record.Principal{{Name: "late", Type: record.Agent, Tx: 9}}})
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.MQLSeenBy, Object: codec.PrincipalIRI("late"), Label: tx(3)}
			return append(late, q), nil
		}, ProblemReference, "its seen-by principal <urn:mql:principal:late> is recorded later, in tx 9", false},
		{"forward reference", func(all []quad.Quad) ([]quad.Quad, []quad.Quad) {
			q := quad.Quad{Subject: quad.IRI(price1), Predicate: codec.ProvWasRevisionOf, Object: quad.IRI(price2), Label: tx(3)}
			return []quad.Quad{q}, nil
		}, ProblemReference, "is recorded later, in tx 4", true},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.db")
			s := mustOpen(t, path, Options{})
			ckSample(t, s)
			s.Close()
			add, del := tc.corrupt(ckStored(t, path))
			if len(add)+len(del) == 0 {
				t.Fatal("the corruption changes nothing")
			}
			ckCorrupt(t, path, add, del)

			r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range r.Problems {
				if p.Kind == tc.kind && strings.Contains(p.String(), tc.want) {
					found = true
				}
			}
			if !found || r.OK() {
				for _, p := range r.Problems {
					t.Logf("%s: %s", p.Kind, p)
				}
				t.Fatalf("no %s problem mentioning %q", tc.kind, tc.want)
			}
			s2, err := Open(ctx, path, Options{})
			if tc.opensBad && err == nil {
				s2.Close()
				t.Fatalf("Open accepted the corrupted store")
			}
			if !tc.opensBad {
				// Open takes it: only the check sees what is wrong, and says so on the open store too.
				if err != nil {
					t.Fatalf("open: %v", err)
				}
				defer s2.Close()
				r2, err := s2.Check(ctx, CheckOptions{})
				if err != nil || r2.OK() {
					t.Fatalf("Store.Check: %v, ok=%v", err, r2 != nil && r2.OK())
				}
			}
		})
	}
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
	// An empty file is not an mql memory.
	empty := filepath.Join(dir, "empty.db")
	be, err := openBBolt(empty, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	be.close()
	r, err := CheckDSN(ctx, empty, Options{}, CheckOptions{})
	if err != nil || r.OK() || r.Problems[0].Kind != ProblemTxIDs {
		t.Fatalf("empty store: %v %+v", err, r)
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
