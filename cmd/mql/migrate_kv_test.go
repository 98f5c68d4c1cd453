package main

// `mql migrate OLD NEW` on stores of the earlier key-value formats, mql-kv/1 and mql-kv/2,
// which have no text index. The fixtures are the root package's (citation_test.go says which
// mql wrote each); each export is that mql's export of the store.

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/internal/pgtest"
)

var earlierFixtures = []struct {
	format, db, export string
	search, found      string // a search, and the row of its CSV answer that the claims' text gives
}{
	// The page's excerpt is the source's own in mql-kv/1: the claim quotes nothing itself.
	{"mql-kv/1", "../../testdata/source-excerpts-kv1.db", "../../testdata/source-excerpts-v1.nq", `search "Frankfurt"`, "Klarveld.region@1,"},
	{"mql-kv/2", "../../testdata/excerpts-kv2.db", "../../testdata/excerpts-kv2.nq", `search "billed yearly"`, "Klarveld.pricing_note@1,"},
}

// copyTo copies the file src to dir/name.
func copyTo(t *testing.T, src, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(fileBytes(t, src)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestMigrateEarlierFormats: a store of mql-kv/1 or mql-kv/2 is refused by every command but
// migrate, which says so; migrate checks it, copies it into a new store whose export is the old
// mql's export byte for byte, whose check finds nothing wrong, and whose text index answers a
// search; the old file is left as it was.
func TestMigrateEarlierFormats(t *testing.T) {
	for _, fx := range earlierFixtures {
		t.Run(fx.format, func(t *testing.T) {
			dir := testEnv(t)
			old := copyTo(t, fx.db, dir, "old.db")
			before := fileBytes(t, old)
			for _, args := range [][]string{{"-c", "live Klarveld", old}, {"-c", "assert K.p = 1 by owner", old}, {"check", old}, {"export", old}} {
				_, errOut, code := mqlRun(t, "", args...)
				if code != exitOpen || !strings.Contains(errOut, "mql migrate "+old+" NEW") || !strings.Contains(errOut, `"`+fx.format+`"`) {
					t.Errorf("mql %s: exit %d, %q; want exit %d naming %s and `mql migrate %s NEW`", strings.Join(args, " "), code, errOut, exitOpen, fx.format, old)
				}
			}

			newDB := filepath.Join(dir, "new.db")
			out, errOut, code := mqlRun(t, "", "migrate", old, newDB)
			if code != exitOK || out != "" {
				t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
			}
			for _, want := range []string{"migrated " + old + " into " + newDB, "checked (no problems)", "byte for byte", old + " was left as it was"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("the report does not say %q:\n%s", want, errOut)
				}
			}
			if fileBytes(t, old) != before {
				t.Error("migrate changed the old file")
			}
			sameDir(t, dir, "old.db", "new.db")
			if got, errOut, code := mqlRun(t, "", "export", newDB); code != exitOK || got != fileBytes(t, fx.export) {
				t.Errorf("export of the migrated store: exit %d, %s; it differs from the old mql's export (%d and %d bytes)", code, errOut, len(got), len(fileBytes(t, fx.export)))
			}
			if out, errOut, code := mqlRun(t, "", "check", newDB); code != exitOK || !strings.Contains(out, "ok: no problems found") {
				t.Errorf("check: exit %d\n%s%s", code, out, errOut)
			}
			if out, errOut, code := mqlRun(t, "", "--format", "csv", "-c", fx.search, newDB); code != exitOK || !strings.Contains(out, ","+fx.found) {
				t.Errorf("%s: exit %d\n%s%s; want a row %s", fx.search, code, out, errOut, fx.found)
			}
			// Migrating the new store again: there is nothing to do.
			if _, errOut, code := mqlRun(t, "", "migrate", newDB, filepath.Join(dir, "again.db")); code != exitOpen || !strings.Contains(errOut, "already in mql's current format (mql-kv/3)") {
				t.Errorf("migrate of the new store: exit %d, %q", code, errOut)
			}
			sameDir(t, dir, "old.db", "new.db")
		})
	}
}

// TestMigrateEarlierDamaged: a store of an earlier key-value format whose check finds an index
// entry the records do not give is refused by migrate, naming the problem, and nothing is
// created.
func TestMigrateEarlierDamaged(t *testing.T) {
	dir := testEnv(t)
	old := copyTo(t, earlierFixtures[1].db, dir, "old.db")
	db, err := bolt.Open(old, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		// An entry of bucket 11, live (docs/FORMAT.md), that no claim gives.
		return tx.Bucket([]byte(boltkv.Bucket)).Put([]byte("\x0bprice\x00\x01x\x00Nobody\x00\x00"), nil)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := fileBytes(t, old)
	out, errOut, code := mqlRun(t, "", "migrate", old, filepath.Join(dir, "new.db"))
	if code != exitOpen || out != "" || !strings.Contains(errOut, "old.db is damaged: its check found 1 problems: index: live: the store holds") ||
		!strings.Contains(errOut, "export it with the mql that wrote it") || !strings.Contains(errOut, "new.db was not created") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if fileBytes(t, old) != before {
		t.Error("migrate changed the old file")
	}
	sameDir(t, dir, "old.db")
	if bytes.Contains([]byte(before), []byte("mql-kv/3")) {
		t.Error("the old file was relabelled")
	}
}

// TestMigrateEarlierPostgres: a PostgreSQL store of mql-kv/2 (the fixture's export imported,
// then labelled mql-kv/2 and the text index's tables dropped, as the mql of that format left
// one) is
// refused by Open, naming migrate, and migrates into a bbolt file whose export is the
// fixture's and whose text index answers; the database is left as it was. It skips unless
// MQL_TEST_POSTGRES is set.
func TestMigrateEarlierPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	dir := testEnv(t)
	fx := earlierFixtures[1]
	if _, errOut, code := mqlRun(t, "", "import", fx.export, dsn); code != exitOK {
		t.Fatalf("import: exit %d: %s", code, errOut)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`UPDATE mql_meta SET v = convert_to('mql-kv/2', 'UTF8') WHERE k = convert_to('format', 'UTF8')`, `DROP TABLE mql_text, mql_textstats`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	fingerprint := func() string {
		var fp string
		err := db.QueryRow(`SELECT (SELECT count(*) FROM mql_claim)::text || ' ' || (SELECT count(*) FROM pg_class WHERE relname LIKE 'mql\_%')::text || ' ' ||
			(SELECT convert_from(v, 'UTF8') FROM mql_meta WHERE k = convert_to('format', 'UTF8'))`).Scan(&fp)
		if err != nil {
			t.Fatal(err)
		}
		return fp
	}
	before := fingerprint()
	if _, errOut, code := mqlRun(t, "", "-c", "live Klarveld", dsn); code != exitOpen || !strings.Contains(errOut, "convert it with `mql migrate ") || !strings.Contains(errOut, `"mql-kv/2"`) {
		t.Errorf("live on the database: exit %d, %q; want a failure naming mql migrate", code, errOut)
	}
	newDB := filepath.Join(dir, "new.db")
	if _, errOut, code := mqlRun(t, "", "migrate", dsn, newDB); code != exitOK || !strings.Contains(errOut, "checked (no problems)") {
		t.Fatalf("migrate: exit %d: %s", code, errOut)
	}
	if got, _, _ := mqlRun(t, "", "export", newDB); got != fileBytes(t, fx.export) {
		t.Error("the export of the store migrated from PostgreSQL differs from the fixture's")
	}
	if out, errOut, code := mqlRun(t, "", "--format", "csv", "-c", fx.search, newDB); code != exitOK || !strings.Contains(out, ","+fx.found) {
		t.Errorf("%s: exit %d\n%s%s", fx.search, code, out, errOut)
	}
	if after := fingerprint(); after != before {
		t.Errorf("migrate changed the database: %s, then %s", before, after)
	}
}
