package mql_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/pgtest"
)

// Inspect says what a data source name holds and writes nothing: every file it looks at has
// the same bytes afterwards, and a missing path stays missing.
func TestInspectBBolt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, data string) string {
		if err := os.WriteFile(path(name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	store := func(name string, opts mql.Options, claims int) string {
		db, err := mql.Open(ctx, path(name), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		owner := db.Owner()
		for i := range claims {
			if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "S", Predicate: "p", Value: mql.Number(float64(i)), By: owner}); err != nil {
				t.Fatal(err)
			}
		}
		return path(name)
	}
	foreign := path("app.db")
	fb, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fb.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("app")); return err }); err != nil {
		t.Fatal(err)
	}
	fb.Close()
	if err := os.Mkdir(path("dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path("nowhere"), path("dangling")); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, dsn string
		want      mql.StoreInfo
		other     string // a phrase of Other
	}{
		{"memory", "memory:", mql.StoreInfo{}, ""},
		{"missing file", path("new.db"), mql.StoreInfo{}, ""},
		{"missing file, bbolt: prefix", "bbolt:" + path("new.db"), mql.StoreInfo{}, ""},
		{"dangling link", path("dangling"), mql.StoreInfo{Exists: true}, "symbolic link"},
		{"directory", path("dir"), mql.StoreInfo{Exists: true}, "a directory"},
		{"empty file", write("empty", ""), mql.StoreInfo{Exists: true}, "an empty file"},
		{"text file", write("notes.txt", "shopping list\n"), mql.StoreInfo{Exists: true}, "not a bbolt database"},
		{"another program's bbolt file", foreign, mql.StoreInfo{Exists: true}, "not an mql store"},
		{"genesis only", store("genesis.db", mql.Options{}, 0), mql.StoreInfo{Exists: true, MQL: true, Transactions: 1, Owner: "owner"}, ""},
		{"strict, another owner", store("strict.db", mql.Options{Owner: "alice", Strict: true}, 0), mql.StoreInfo{Exists: true, MQL: true, Transactions: 1, Owner: "alice", Strict: true}, ""},
		{"with claims", store("data.db", mql.Options{}, 3), mql.StoreInfo{Exists: true, MQL: true, Transactions: 4, Owner: "owner"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := strings.TrimPrefix(tc.dsn, "bbolt:")
			before, beforeErr := os.ReadFile(file)
			got, err := mql.Inspect(ctx, tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			other := got.Other
			got.Other = ""
			if got != tc.want || !strings.Contains(other, tc.other) || (tc.other == "") != (other == "") {
				t.Errorf("Inspect(%s) = %+v, Other %q; want %+v, Other with %q", tc.dsn, got, other, tc.want, tc.other)
			}
			after, afterErr := os.ReadFile(file)
			if !bytes.Equal(before, after) || (beforeErr == nil) != (afterErr == nil) {
				t.Errorf("Inspect changed %s: %d bytes (%v) before, %d bytes (%v) after", file, len(before), beforeErr, len(after), afterErr)
			}
		})
	}
	if _, err := os.Lstat(path("nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dangling link's target was created: %v", err)
	}

	t.Run("held by another process", func(t *testing.T) {
		p := path("held.db")
		db, err := mql.Open(ctx, p, mql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := mql.Inspect(ctx, p); !errors.Is(err, mql.ErrInUse) {
			t.Errorf("Inspect of a held file: %v, want ErrInUse", err)
		}
	})
	t.Run("bad dsn", func(t *testing.T) {
		if _, err := mql.Inspect(ctx, "mysql://x/y"); !errors.Is(err, mql.ErrBadDSN) {
			t.Errorf("Inspect(mysql://…): %v, want ErrBadDSN", err)
		}
	})
}

func TestInspectPostgres(t *testing.T) {
	ctx := context.Background()
	relations := func(dsn string) int {
		t.Helper()
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	exec := func(dsn, stmt string) {
		t.Helper()
		db, err := sql.Open("postgres", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}

	empty := pgtest.Database(t)
	app := pgtest.Database(t)
	exec(app, `CREATE TABLE invoices (id serial PRIMARY KEY, total numeric)`)
	full := pgtest.Database(t)
	db, err := mql.Open(ctx, full, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "S", Predicate: "p", Value: mql.Number(1), By: "owner"}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	for _, tc := range []struct {
		name, dsn string
		want      mql.StoreInfo
		other     string
	}{
		{"empty database", empty, mql.StoreInfo{}, ""},
		{"another program's tables", app, mql.StoreInfo{Exists: true}, "public.invoices"},
		{"an mql store", full, mql.StoreInfo{Exists: true, MQL: true, Transactions: 2, Owner: "owner"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := relations(tc.dsn)
			got, err := mql.Inspect(ctx, tc.dsn)
			if err != nil {
				t.Fatal(err)
			}
			other := got.Other
			got.Other = ""
			if got != tc.want || !strings.Contains(other, tc.other) || (tc.other == "") != (other == "") {
				t.Errorf("Inspect = %+v, Other %q; want %+v, Other with %q", got, other, tc.want, tc.other)
			}
			if after := relations(tc.dsn); after != before {
				t.Errorf("Inspect changed the database: %d relations before, %d after", before, after)
			}
		})
	}
}

// Decide whether to write into a store before opening it: Open would create one inside any
// empty file or bbolt database, and write into a store that holds other data.
func ExampleInspect() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "inspect")
	defer os.RemoveAll(dir)

	path := filepath.Join(dir, "team.db")
	info, _ := mql.Inspect(ctx, path)
	fmt.Println("before:", info.Exists)

	db, _ := mql.Open(ctx, path, mql.Options{})
	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "owner"})
	db.Close()
	info, _ = mql.Inspect(ctx, path)
	fmt.Println("after:", info.MQL, info.Transactions, "transactions, owner", info.Owner)

	info, _ = mql.Inspect(ctx, dir)
	fmt.Println("the directory:", info.Exists, info.MQL, info.Other)
	// Output:
	// before: false
	// after: true 2 transactions, owner owner
	// the directory: true false a directory
}
