package mql_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
)

// citedExcerpts lists, for each source of a key's live claim, its id and the excerpt the claim
// shows for it.
func citedExcerpts(t *testing.T, db *mql.DB, key string) []string {
	t.Helper()
	live, err := db.Live(t.Context(), key)
	if err != nil || len(live) != 1 {
		t.Fatalf("live %s: %v %v", key, live, err)
	}
	var out []string
	for _, s := range live[0].Sources {
		out = append(out, s.ID+": "+s.Excerpt)
	}
	return out
}

// An excerpt is what a claim quotes from its source: the citation's, so that one page supports
// many claims, each quoting its own words (issue 23, item 9). The source keeps its URI and
// revision, which still may not change under the same id. The claims, their why trees, the
// sources listing, an export, its import and the check all follow.
func TestOneSourceManyExcerpts(t *testing.T) {
	f := openDSN(t, filepath.Join(t.TempDir(), "team.db"), mql.Options{})
	f.ok(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"}))
	page := func(excerpt string) []mql.Source {
		return []mql.Source{{ID: "src:K:page", Excerpt: excerpt, URI: "https://k.example/pricing", Revision: "r1"}}
	}
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3", Sources: page("44 EUR per seat")}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "region", Value: mql.String("Frankfurt"), By: "worker-3", Sources: page("hosted in Frankfurt")}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "soc2", Value: mql.Bool(true), By: "worker-3", Sources: page("")}))
	_, err := f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "seats", Value: mql.Number(5), By: "worker-3",
		Sources: []mql.Source{{ID: "src:K:page", URI: "https://k.example/other"}}})
	if !errors.Is(err, mql.ErrConflict) || !strings.Contains(err.Error(), "another URI or revision") {
		t.Errorf("another URI under the same id: %v, want a conflict", err)
	}
	_, err = f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "seats", Value: mql.Number(5), By: "worker-3",
		Sources: []mql.Source{{ID: "src:K:page", Excerpt: "a"}, {ID: "src:K:page", Excerpt: "b"}}})
	if !errors.Is(err, mql.ErrInvalid) {
		t.Errorf("one source cited twice with two excerpts: %v, want invalid", err)
	}

	check := func(db *mql.DB, what string) {
		t.Helper()
		for key, want := range map[string]string{
			"K.price_per_seat": "src:K:page: 44 EUR per seat",
			"K.region":         "src:K:page: hosted in Frankfurt",
			"K.soc2":           "src:K:page: ",
		} {
			if got := citedExcerpts(t, db, key); len(got) != 1 || got[0] != want {
				t.Errorf("%s: %s cites %v, want %s", what, key, got, want)
			}
		}
		n, err := db.Why(f.ctx, "K.region")
		if err != nil || len(n.Children) == 0 || n.Children[0].Source == nil || n.Children[0].Source.Excerpt != "hosted in Frankfurt" || n.Children[0].Source.URI != "https://k.example/pricing" {
			b, _ := json.Marshal(n)
			t.Errorf("%s: why K.region: %s %v", what, b, err)
		}
		srcs, err := db.Reader().Sources(f.ctx, "")
		if err != nil || len(srcs) != 1 || srcs[0].Claims != 3 || srcs[0].Excerpt != "44 EUR per seat" {
			t.Errorf("%s: sources %+v %v, want src:K:page once, 3 claims, the first excerpt quoted", what, srcs, err)
		}
	}
	check(f.db, "the store")

	var exp bytes.Buffer
	if err := f.db.Export(f.ctx, &exp); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "copy.db")
	if _, err := mql.ImportStore(f.ctx, path, bytes.NewReader(exp.Bytes()), mql.Options{}); err != nil {
		t.Fatal(err)
	}
	cp, err := mql.Open(f.ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cp.Close()
	check(cp, "the imported copy")
	var again bytes.Buffer
	if err := cp.Export(f.ctx, &again); err != nil {
		t.Fatal(err)
	}
	if again.String() != exp.String() {
		t.Errorf("the copy exports differently:\n%s\nwant\n%s", again.String(), exp.String())
	}
	cp.Close()
	if rep, err := mql.CheckStore(f.ctx, path, mql.Options{}); err != nil || len(rep.Problems) != 0 {
		t.Errorf("check of the copy: %+v %v", rep, err)
	}
}

// An export written before excerpts were the citation's (testdata/source-excerpts-v1.nq, by
// the mql of format mql-kv/1: each source holds one excerpt) imports as it is: each claim that
// cites a source shows its excerpt, as it did, a new claim may quote the same page otherwise,
// and the store exports the old transactions byte for byte as the file has them.
func TestImportExportOfSourceExcerpts(t *testing.T) {
	old, err := os.ReadFile("testdata/source-excerpts-v1.nq")
	if err != nil {
		t.Fatal(err)
	}
	f := open(t, mql.Options{})
	path := filepath.Join(t.TempDir(), "old.db")
	if _, err := mql.ImportStore(f.ctx, path, bytes.NewReader(old), mql.Options{}); err != nil {
		t.Fatal(err)
	}
	db, err := mql.Open(f.ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got := citedExcerpts(t, db, "Klarveld.price_per_seat"); strings.Join(got, "|") != "src:Klarveld:page: 44 EUR per seat" {
		t.Errorf("Klarveld.price_per_seat cites %v", got)
	}
	if got := citedExcerpts(t, db, "Klarveld.region"); strings.Join(got, "|") != "src:Klarveld:page: 44 EUR per seat|src:Klarveld:imprint: Klarveld GmbH, Frankfurt" {
		t.Errorf("Klarveld.region cites %v", got)
	}
	var exp bytes.Buffer
	if err := db.Export(f.ctx, &exp); err != nil {
		t.Fatal(err)
	}
	if exp.String() != string(old) {
		t.Errorf("the import exports differently:\n%s\nwant\n%s", exp.String(), old)
	}
	if _, err := db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "hosting", Value: mql.String("Frankfurt"), By: "worker-3",
		Sources: []mql.Source{{ID: "src:Klarveld:page", Excerpt: "hosted in Frankfurt"}}}); err != nil {
		t.Fatal(err)
	}
	if got := citedExcerpts(t, db, "Klarveld.hosting"); strings.Join(got, "|") != "src:Klarveld:page: hosted in Frankfurt" {
		t.Errorf("Klarveld.hosting cites %v", got)
	}
	if got := citedExcerpts(t, db, "Klarveld.price_per_seat"); strings.Join(got, "|") != "src:Klarveld:page: 44 EUR per seat" {
		t.Errorf("after a new citation, Klarveld.price_per_seat cites %v", got)
	}
}

// storeFormat reads the format a closed bbolt store is labelled with.
func storeFormat(t *testing.T, path string) string {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var f string
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(boltkv.Bucket)); b != nil {
			f = string(b.Get([]byte("\x00format"))) // the meta entry "format" (docs/FORMAT.md)
		}
		return nil
	})
	return f
}

// Stores of the earlier key-value formats, written by the mql that wrote each: mql-kv/1
// (testdata/source-excerpts-kv1.db, by the mql of commit 4830098 with the statements of
// testdata/source-excerpts-v1.nq, its export then) and mql-kv/2 (testdata/excerpts-kv2.db,
// by the mql of commit aff6f0d running testdata/excerpts-kv2.mql; excerpts-kv2.nq is its
// export). Neither has the text index.
var earlierStores = []struct{ format, db, export string }{
	{"mql-kv/1", "testdata/source-excerpts-kv1.db", "testdata/source-excerpts-v1.nq"},
	{"mql-kv/2", "testdata/excerpts-kv2.db", "testdata/excerpts-kv2.nq"},
}

// copyFixture copies the fixture file src into a new directory and returns the copy's path.
func copyFixture(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A store of an earlier key-value format is opened by nothing but `mql migrate`: Open (for a
// read, for a write, with MustExist) and the check refuse it with an error wrapping
// graphstore.ErrOldFormat that names the command to run, and leave it as it was, beside it
// nothing new.
func TestOpenEarlierFormats(t *testing.T) {
	ctx := t.Context()
	for _, es := range earlierStores {
		t.Run(es.format, func(t *testing.T) {
			path := copyFixture(t, es.db)
			if f := storeFormat(t, path); f != es.format {
				t.Fatalf("the fixture is labelled %q, want %q", f, es.format)
			}
			before, _ := os.ReadFile(path)
			want := "convert it with `mql migrate " + path + " NEW`"
			for _, opts := range []mql.Options{{}, {MustExist: true}} {
				db, err := mql.Open(ctx, path, opts)
				if err == nil {
					db.Close()
					t.Fatalf("Open(MustExist %v) opened a store of %s", opts.MustExist, es.format)
				}
				if !errors.Is(err, graphstore.ErrOldFormat) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"`+es.format+`"`) {
					t.Errorf("Open(MustExist %v): %v; want ErrOldFormat naming %s and saying %q", opts.MustExist, err, es.format, want)
				}
			}
			if _, err := mql.CheckStore(ctx, path, mql.Options{}); !errors.Is(err, graphstore.ErrOldFormat) || !strings.Contains(err.Error(), want) {
				t.Errorf("CheckStore: %v; want ErrOldFormat saying %q", err, want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the store changed")
			}
			if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
				t.Errorf("beside the store: %v", ents)
			}
		})
	}

	// A format this mql does not know is refused, naming the ones it reads and migrates.
	path := copyFixture(t, earlierStores[0].db)
	bdb, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bdb.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(boltkv.Bucket)).Put([]byte("\x00format"), []byte("mql-kv/9"))
	}); err != nil {
		t.Fatal(err)
	}
	bdb.Close()
	if db, err := mql.Open(ctx, path, mql.Options{}); err == nil || errors.Is(err, graphstore.ErrOldFormat) ||
		!strings.Contains(err.Error(), `the store is in format "mql-kv/9", and this mql reads "mql-kv/3" (and migrates "mql-kv/1" and "mql-kv/2")`) {
		if db != nil {
			db.Close()
		}
		t.Errorf("a store of format mql-kv/9: %v", err)
	}
}
