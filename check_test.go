package mql_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// checkStory writes a history through the API with every kind of write, in a strict store.
func checkStory(t *testing.T, dsn string) *fixture {
	t.Helper()
	f := openDSN(t, dsn, mql.Options{Strict: true}).team()
	f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightGrant, Scope: "*", By: "owner"}))
	f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "worker-3", Right: mql.RightAssert, Scope: "Klarveld.*", By: "alice"}))
	f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "worker-7", Right: mql.RightAssert, Scope: "price", By: "alice"}))
	f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightRevoke, Scope: "price", By: "owner"}))
	f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "bob", Right: mql.RightConfirm, Scope: "Klarveld.*", By: "owner"}))
	f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "orchestrator", Right: mql.RightAssert, Scope: "*", By: "alice"}))
	f.assert("Klarveld", "price", mql.Number(44), "worker-3", "src:k0")
	f.assert("Klarveld", "price", mql.Number(89), "worker-7", "src:k1")
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(89), By: "orchestrator"})) // corroborates
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(50), By: "orchestrator"})) // contests
	f.assert("Klarveld", "soc2", mql.Bool(true), "owner", "src:trust")
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("patient"), By: "orchestrator", SeenBy: []string{"orchestrator"}}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "mood", Value: mql.String("calm"), By: "orchestrator", SeenBy: []string{"orchestrator"}}))
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Klarveld.price@2", By: "alice", Because: "misread", ReplacedBy: "Klarveld.price@4"}))
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Player7.style@1", By: "orchestrator", Because: "own"}))
	f.ok(f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: "Klarveld.soc2", By: "bob"}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan", From: []string{"Klarveld.price", "Klarveld.soc2"}, By: "orchestrator"}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan", From: []string{"plan@1", "Klarveld.price@1"}, By: "orchestrator"}))
	f.ok(f.db.Review(f.ctx, mql.ReviewSpec{Artifact: "plan@1", By: "alice", Because: "checked"}))
	f.ok(f.db.SetDecay(f.ctx, mql.DecaySpec{Predicate: "price", HalfLife: time.Hour, By: "alice"}))
	f.ok(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "carol", Type: mql.User, By: "alice"}))
	return f
}

func TestCheckAPI(t *testing.T) {
	path := filepath.Join(t.TempDir(), "check.db")
	f := checkStory(t, path)
	rep, err := f.db.Check(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("a store written through the API has problems: %v", rep.Problems)
	}
	head, _ := f.db.Head(f.ctx)
	if rep.Head != head || rep.Claims != 7 || rep.Keys != 4 || rep.Revocations != 2 || rep.Artifacts != 2 {
		t.Errorf("report %+v", rep)
	}
	f.db.Close()
	rep2, err := mql.CheckStore(f.ctx, path, mql.Options{})
	if err != nil || !rep2.OK() || rep2.Quads != rep.Quads {
		t.Fatalf("CheckStore: %v %+v", err, rep2)
	}
	if _, err := mql.CheckStore(f.ctx, filepath.Join(t.TempDir(), "nothing.db"), mql.Options{}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("CheckStore of a missing file: %v", err)
	}
}

// Standings are checked from the quads: a store whose records claim standings that never held
// (written past the API, straight into graphstore) fails the check.
func TestCheckStandings(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "forged.db")
	checkStory(t, path).db.Close()
	s, err := graphstore.Open(ctx, path, graphstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	forge := func(build func(tx *record.Tx)) {
		if _, err := s.Write(ctx, "worker-7", func(_ *index.Index, tx *record.Tx) error { build(tx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	id := func(s string) record.ClaimID { c, _ := record.ParseClaimID(s); return c }
	forge(func(tx *record.Tx) { // worker-7 revokes worker-3's claim "as its own"
		tx.Revocations = []*record.Revocation{{ID: "rX.1", Claim: id("Klarveld.price@1"), By: "worker-7", Standing: "own claim"}}
	})
	forge(func(tx *record.Tx) { // a grant worker-7 does not hold
		tx.Revocations = []*record.Revocation{{ID: "rY.1", Claim: id("Klarveld.soc2@1"), By: "worker-7", Standing: "g9.1"}}
	})
	forge(func(tx *record.Tx) { // an agent confirms, on the owner's standing
		tx.Confirmations = []*record.Confirmation{{ID: "cZ.1", Claim: id("Klarveld.price@4"), By: "worker-7", Standing: "owner"}}
	})
	forge(func(tx *record.Tx) { // a grant given without the grant right
		tx.Grants = []*record.Grant{{ID: "gW.1", Grantee: "worker-7", Right: mql.RightRevoke, Scope: "*", By: "worker-7"}}
	})
	forge(func(tx *record.Tx) { // revoking a claim it may not see
		tx.Revocations = []*record.Revocation{{ID: "rV.1", Claim: id("Player7.mood@1"), By: "worker-7", Standing: "g9.1"}}
	})
	s.Close()
	rep, err := mql.CheckStore(ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range rep.Problems {
		if p.Kind != graphstore.ProblemStanding {
			t.Errorf("unexpected %s problem: %s", p.Kind, p)
		}
		got = append(got, p.String())
	}
	for _, want := range []string{
		"worker-7 revoked Klarveld.price@1 as its own claim, but worker-3 asserted it",
		"worker-7 revoked Klarveld.soc2@1 without standing: worker-7 held no grant g9.1",
		"confirmed by worker-7, who is not a user",
		"worker-7 confirmed Klarveld.price@4 on the owner's standing",
		"given by worker-7, who held no grant right on *",
		"worker-7 revoked Player7.mood@1, which it may not see",
	} {
		if !strings.Contains(strings.Join(got, "\n"), want) {
			t.Errorf("no problem says %q; got:\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// An import is refused when the file, although well formed, describes a store that would fail
// the check; nothing is imported.
func TestImportRefusesUnsoundStores(t *testing.T) {
	f := checkStory(t, "memory:")
	var exp bytes.Buffer
	if err := f.db.Export(f.ctx, &exp); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, drop, replace, with, want string
	}{
		{name: "two live claims", drop: "<urn:mql:claim:Klarveld.price@2> <http://www.w3.org/ns/prov#wasRevisionOf>", want: "live: Klarveld.price has 2 live claims"},
		{name: "forged standing", replace: `"own claim"`, with: `"owner"`, want: "standing:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			for _, l := range strings.SplitAfter(exp.String(), "\n") {
				if tc.drop != "" && strings.HasPrefix(l, tc.drop) {
					continue
				}
				if tc.replace != "" {
					l = strings.ReplaceAll(l, tc.replace, tc.with)
				}
				lines = append(lines, l)
			}
			db, err := mql.Open(f.ctx, "memory:", mql.Options{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q0, _ := db.QuadCount(f.ctx)
			err = db.Import(f.ctx, strings.NewReader(strings.Join(lines, "")))
			if !errors.Is(err, graphstore.ErrBadImport) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import: %v; want ErrBadImport mentioning %q", err, tc.want)
			}
			if q, _ := db.QuadCount(f.ctx); q != q0 {
				t.Fatalf("a refused import changed the store")
			}
		})
	}
	// The export itself imports.
	db, _ := mql.Open(f.ctx, "memory:", mql.Options{Strict: true})
	defer db.Close()
	if err := db.Import(f.ctx, &exp); err != nil {
		t.Fatal(err)
	}
}
