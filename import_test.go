package mql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// importStory writes a small history through the API into a bbolt file, a minute between
// writes, and returns the open fixture and its owner's export. In it w1 holds the grant right
// on price and gives alice the assert right on Klarveld.price (a grant made by w1); carol is
// recorded last.
func importStory(t *testing.T) (*fixture, string) {
	t.Helper()
	f := openDSN(t, filepath.Join(t.TempDir(), "original.db"), mql.Options{})
	step := func(rc mql.Receipt, err error) {
		t.Helper()
		f.ok(rc, err)
		f.clk.Add(time.Minute)
	}
	f.clk.Add(time.Minute)
	step(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "w1", Type: mql.Agent, By: "owner"}))
	step(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "alice", Type: mql.User, By: "owner"}))
	step(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "w1", Right: mql.RightGrant, Scope: "price", By: "owner"}))
	step(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(44), By: "w1", Sources: []mql.Source{{ID: "src:k0"}}}))
	step(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightAssert, Scope: "Klarveld.price", By: "w1"}))
	step(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(45), By: "alice", Sources: []mql.Source{{ID: "src:k1"}}}))
	step(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "carol", Type: mql.User, By: "owner"}))
	return f, f.export()
}

// lineOf returns the index of the first line holding all of parts.
func lineOf(t *testing.T, lines []string, parts ...string) int {
	t.Helper()
	for i, l := range lines {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return i
		}
	}
	t.Fatalf("no line holds %q", parts)
	return -1
}

// Files that check would reject, or that lie, are refused with the line of the lie, and no
// store is created (issue 11, item 9). Each is a real export, edited.
func TestImportRefusesForgeries(t *testing.T) {
	_, exp := importStory(t)
	lines := strings.SplitAfter(exp, "\n")
	edited := func(i int, with ...string) string {
		return strings.Join(append(append(append([]string(nil), lines[:i]...), with...), lines[i+1:]...), "")
	}
	// A seen-by naming carol, who is recorded only later, on w1's claim: carol would see it
	// once recorded, and before that nobody but the owner could.
	ord := lineOf(t, lines, "<urn:mql:claim:Klarveld.price@1> <urn:mql:ord>")
	tx1 := strings.TrimSuffix(lines[ord][strings.LastIndex(lines[ord], "<urn:mql:tx:"):], " .\n")
	ghost := edited(ord, lines[ord], "<urn:mql:claim:Klarveld.price@1> <urn:mql:seenBy> <urn:mql:principal:carol> "+tx1+" .\n")
	// The grant w1 gave alice, rewritten as given by the owner, in w1's transaction.
	by := lineOf(t, lines, "<urn:mql:grant:g6.1> <http://www.w3.org/ns/prov#wasAttributedTo> <urn:mql:principal:w1>")
	lie := edited(by, strings.Replace(lines[by], "<urn:mql:principal:w1>", "<urn:mql:principal:owner>", 1))
	grantFirst := lineOf(t, lines, "<urn:mql:grant:g6.1>")
	// Alice's claim moved back to 2001.
	when := lineOf(t, lines, "<urn:mql:tx:7> <http://www.w3.org/ns/prov#endedAtTime>")
	back := edited(when, `<urn:mql:tx:7> <http://www.w3.org/ns/prov#endedAtTime> "2001-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:mql:tx:7> .`+"\n")
	cases := []struct {
		name, text string
		line       int
		want       string
	}{
		{"seen by a principal recorded later", ghost, ord + 2, "reference: tx 5: urn:mql:claim:Klarveld.price@1: its seen-by principal <urn:mql:principal:carol> is not recorded before it"},
		{"a grant by the owner in w1's transaction", lie, grantFirst + 1, "author: tx 6: urn:mql:grant:g6.1: given by owner in a transaction made by w1"},
		{"a time moved to 2001", back, when + 1, "transaction: tx 7: urn:mql:tx:7: its time 2001-01-01T00:00:00Z is before tx 6's"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "copy.db")
			_, err := mql.ImportStore(context.Background(), path, strings.NewReader(tc.text), mql.Options{})
			var ie *mql.ImportError
			if !errors.As(err, &ie) || !errors.Is(err, mql.ErrBadImport) || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant line %d: %s", err, tc.line, tc.want)
			}
			if es, _ := os.ReadDir(dir); len(es) != 0 {
				t.Fatalf("a refused import left %s", es[0].Name())
			}
		})
	}
	// The export itself imports.
	if _, err := mql.ImportStore(context.Background(), filepath.Join(t.TempDir(), "copy.db"), strings.NewReader(exp), mql.Options{}); err != nil {
		t.Fatal(err)
	}
}

// An export → import round trip gives back exactly the same store, times included: the copy
// exports the same bytes, and a reader as of a time sees on the copy what it saw on the
// original (issue 11, item 10).
func TestImportRoundTripExact(t *testing.T) {
	f, exp := importStory(t)
	path := filepath.Join(t.TempDir(), "copy.db")
	sum, err := mql.ImportStore(f.ctx, path, strings.NewReader(exp), mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Transactions != 8 || sum.Claims != 2 {
		t.Errorf("summary %+v", sum)
	}
	cp, err := mql.Open(f.ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	var again bytes.Buffer
	if err := cp.Export(f.ctx, &again); err != nil {
		t.Fatal(err)
	}
	if again.String() != exp {
		t.Fatalf("the copy exports differently:\n%s\nwant\n%s", again.String(), exp)
	}
	qa, _ := f.db.QuadCount(f.ctx)
	qb, _ := cp.QuadCount(f.ctx)
	if qa != qb {
		t.Fatalf("quads: original %d, copy %d", qa, qb)
	}
	// Between the genesis and tx 2 (a copy whose genesis was stamped at the import has no
	// transaction then), before the first claim, right after it, and after the second.
	for _, at := range []time.Duration{30 * time.Second, 90 * time.Second, 4*time.Minute + 30*time.Second, 10 * time.Minute} {
		read := func(db *mql.DB) string {
			live, err := db.AsOf(t0.Add(at)).Live(f.ctx, "Klarveld.price")
			if err != nil {
				t.Fatalf("as of %s: %v", t0.Add(at).Format(time.RFC3339), err)
			}
			b, _ := json.Marshal(live)
			return string(b)
		}
		if a, b := read(f.db), read(cp); a != b {
			t.Errorf("as of %s: original %s, copy %s", t0.Add(at).Format(time.RFC3339), a, b)
		}
	}
	if rep, err := mql.CheckStore(f.ctx, path+"-missing", mql.Options{}); err == nil {
		t.Fatalf("check of a missing store: %+v", rep)
	}
}

// A refused import leaves no store: the path stays absent, so a correct import into it then
// succeeds (issue 11, item 11). An existing store is never imported into; DB.Import refuses a
// store on a file and points at mql import.
func TestImportLeavesNothingWhenRefused(t *testing.T) {
	f, exp := importStory(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	bad := strings.Replace(exp, `"observed"`, `"guessed"`, 1)
	if _, err := mql.ImportStore(f.ctx, path, strings.NewReader(bad), mql.Options{Owner: "someone-else"}); !errors.Is(err, mql.ErrBadImport) {
		t.Fatalf("bad file: %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a refused import left %s: %v", path, err)
	}
	if _, err := mql.ImportStore(f.ctx, path, strings.NewReader(exp), mql.Options{}); err != nil {
		t.Fatalf("the correct import after a refused one: %v", err)
	}
	if _, err := mql.ImportStore(f.ctx, path, strings.NewReader(exp), mql.Options{}); !errors.Is(err, mql.ErrNotEmpty) {
		t.Fatalf("import into an existing store: %v", err)
	}
	db, err := mql.Open(f.ctx, filepath.Join(dir, "opened.db"), mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Import(f.ctx, strings.NewReader(exp)); !errors.Is(err, mql.ErrNotEmpty) || !strings.Contains(err.Error(), "mql import FILE NEWDB") {
		t.Fatalf("DB.Import into a file store: %v", err)
	}
	// A new memory: store becomes the exported one, genesis included.
	mem, err := mql.Open(f.ctx, "memory:", mql.Options{Owner: "someone-else", Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if err := mem.Import(f.ctx, strings.NewReader(exp)); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := mem.Export(f.ctx, &again); err != nil || again.String() != exp || mem.Owner() != "owner" {
		t.Fatalf("memory import: %v, owner %s", err, mem.Owner())
	}
}

// The check finds a record whose author is not its transaction's principal in a store too
// (written past the API, straight into graphstore).
func TestCheckAuthors(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "forged.db")
	checkStory(t, path).db.Close()
	s, err := graphstore.Open(ctx, path, graphstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "worker-7", func(_ *index.Index, tx *record.Tx) error {
		tx.Grants = []*record.Grant{{ID: "gA.1", Grantee: "worker-7", Right: mql.RightRevoke, Scope: "*", By: "owner"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	rep, err := mql.CheckStore(ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 1 || rep.Problems[0].Kind != graphstore.ProblemAuthor || !strings.Contains(rep.Problems[0].String(), "urn:mql:grant:gA.1: given by owner in a transaction made by worker-7") {
		t.Fatalf("problems: %v", rep.Problems)
	}
}
