// Package extest makes, for the example programs' tests, the stores an example must refuse to
// write into, and records what a directory or database holds so a test can see that a refusal
// changed nothing.
package extest

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/pgtest"
)

// Refusal is a -store value an example must refuse without -reuse, and a phrase of the refusal.
type Refusal struct {
	Name string
	DSN  string
	Want string
}

// Store makes an mql store at dsn holding claims claims (none: only its genesis).
func Store(t testing.TB, dsn string, opts mql.Options, claims int) string {
	t.Helper()
	ctx := context.Background()
	db, err := mql.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range claims {
		if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "Ledger", Predicate: "balance", Value: mql.Number(float64(1200 + i)), By: db.Owner()}); err != nil {
			t.Fatal(err)
		}
	}
	return dsn
}

// BBoltRefusals makes under dir one of each thing an example must not write into as a bbolt
// -store.
func BBoltRefusals(t testing.TB, dir string) []Refusal {
	t.Helper()
	path := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, data string) string {
		if err := os.WriteFile(path(name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return path(name)
	}
	if err := os.Mkdir(path("empty-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	full := path("full-dir")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	write("full-dir/thesis.tex", "chapter one")
	foreign := path("app.db")
	fb, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fb.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("invoices")); return err }); err != nil {
		t.Fatal(err)
	}
	fb.Close()
	return []Refusal{
		{"an empty directory", path("empty-dir"), "it is a directory, not an mql store"},
		{"a directory with files", full, "it is a directory, not an mql store"},
		{"an empty file", write("empty.db", ""), "it is an empty file, not an mql store"},
		{"a text file", write("notes.txt", "keep me"), "it is a file that is not a bbolt database"},
		{"another program's bbolt file", foreign, "it is a bbolt database that is not an mql store"},
		{"an mql store with other data", Store(t, path("data.db"), mql.Options{}, 2), "it is an mql store that already holds 2 transactions besides its genesis"},
		{"a strict mql store", Store(t, path("strict.db"), mql.Options{Owner: "alice", Strict: true}, 0), "it is a strict mql store (owner alice)"},
		{"a path in a missing directory", path("missing/x.db"), "is not a directory that exists"},
		{"a data source name of no known kind", "mysql://db/x", "invalid data source name"},
	}
}

// PostgresRefusals makes the PostgreSQL databases an example must not write into; it skips the
// test when no test server is set (see internal/pgtest).
func PostgresRefusals(t testing.TB) []Refusal {
	t.Helper()
	app := pgtest.Database(t)
	Exec(t, app, `CREATE TABLE invoices (id serial PRIMARY KEY, total numeric)`)
	return []Refusal{
		{"a database with another program's tables", app, "public.invoices"},
		{"a database with an mql store with other data", Store(t, pgtest.Database(t), mql.Options{}, 3), "already holds 3 transactions besides its genesis"},
	}
}

// Exec runs one SQL statement on the database dsn names.
func Exec(t testing.TB, dsn, stmt string) {
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

// Snapshot is what a -store holds: every path under a directory with its contents, or a
// database's relations and number of quads.
func Snapshot(t testing.TB, where string) string {
	t.Helper()
	if strings.HasPrefix(where, "postgres") {
		return pgSnapshot(t, where)
	}
	var b strings.Builder
	err := filepath.WalkDir(where, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			fmt.Fprintf(&b, "%s/\n", path)
			return nil
		}
		data, err := os.ReadFile(path)
		fmt.Fprintf(&b, "%s %q\n", path, data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func pgSnapshot(t testing.TB, dsn string) string {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	quads := false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		quads = quads || name == "public.quads"
		b.WriteString(name + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if quads {
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM quads`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%d quads\n", n)
	}
	return b.String()
}

// Transactions is the number of transactions of the mql store at dsn (0 if there is none).
func Transactions(t testing.TB, dsn string) int64 {
	t.Helper()
	info, err := mql.Inspect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	return info.Transactions
}
