package main

// `mql migrate OLD NEW` on stores of the earlier format (Cayley quads and a gob snapshot).
// The fixture, testdata/oldformat/old.db, was written by the mql of commit 05cc83f (the last
// before the storage rewrite), and old.nq is that mql's export of it: make.sh regenerates both.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	_ "github.com/cayleygraph/cayley/graph/sql/postgres" // Cayley's SQL quad store, as the old mql wrote it
	"github.com/cayleygraph/quad"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/pgtest"
)

const (
	oldFixture = "testdata/oldformat/old.db"
	oldExport  = "testdata/oldformat/old.nq"
)

// oldStore copies the fixture to dir/name (the tests never touch the committed file).
func oldStore(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(oldFixture)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// dirNames lists dir, hidden files included.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

// sameDir fails unless dir holds exactly names.
func sameDir(t *testing.T, dir string, names ...string) {
	t.Helper()
	slices.Sort(names)
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Errorf("%s holds %q; want %q", dir, got, names)
	}
}

// TestMigrate: the old store becomes a new one whose export is the old mql's export of it, byte
// for byte, and which mql check finds sound; the old file is left as it was.
func TestMigrate(t *testing.T) {
	dir := testEnv(t)
	old := oldStore(t, dir, "old.db")
	before := fileBytes(t, old)
	newDB := filepath.Join(dir, "new.db")
	out, errOut, code := mqlRun(t, "", "migrate", old, newDB)
	if code != exitOK || out != "" {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"migrated " + old + " into " + newDB, "36 transactions (11 claims, 518 quads)", " s; ", "checked (no problems)", "byte for byte (59326 bytes, SHA-256 ", "left as it was"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("the report does not say %q:\n%s", want, errOut)
		}
	}
	if fileBytes(t, old) != before {
		t.Error("migrate changed the old file")
	}
	sameDir(t, dir, "old.db", "new.db")

	// The golden export, byte for byte.
	got, errOut, code := mqlRun(t, "", "export", newDB)
	if code != exitOK {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	if want := fileBytes(t, oldExport); got != want {
		t.Fatalf("the export of the migrated store differs from the old mql's export of the old one (%d and %d bytes)", len(got), len(want))
	}
	// The check after, once more, from the command line.
	out, errOut, code = mqlRun(t, "", "check", newDB)
	if code != exitOK || !strings.Contains(out, "36 transactions (head 36)") || !strings.Contains(out, "ok: no problems found") {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	// The migrated store is a store: it reads and takes writes.
	out, errOut, code = mqlRun(t, "", "--format", "csv", "-c", "live Klarveld.price_per_seat", newDB)
	if code != exitOK || !strings.Contains(out, "Klarveld.price_per_seat@1,Klarveld,price_per_seat,1,44,number,live,") {
		t.Fatalf("read: exit %d\n%s%s", code, out, errOut)
	}
	if _, errOut, code := mqlRun(t, "", "-c", `assert Klarveld.price_per_seat = 47 by worker-3 from "src:Klarveld:rev2"`, newDB); code != exitOK {
		t.Fatalf("write: exit %d: %s", code, errOut)
	}

	// NEW as --db, and bbolt:PATH for both.
	second := filepath.Join(dir, "second.db")
	if _, errOut, code := mqlRun(t, "", "migrate", "--db", "bbolt:"+second, "bbolt:"+old); code != exitOK {
		t.Fatalf("migrate --db: exit %d: %s", code, errOut)
	}
	if got, _, _ := mqlRun(t, "", "export", second); got != fileBytes(t, oldExport) {
		t.Error("migrate --db: the export differs")
	}
	// Without NEW: the default store.
	if _, errOut, code := mqlRun(t, "", "migrate", old); code != exitOK {
		t.Fatalf("migrate into the default store: exit %d: %s", code, errOut)
	}
	if got, _, _ := mqlRun(t, "", "export"); got != fileBytes(t, oldExport) {
		t.Error("the default store: the export differs")
	}
}

// TestOldFormatOpened: the new mql opens no store of the old format; every command says to run
// mql migrate, and none changes the file.
func TestOldFormatOpened(t *testing.T) {
	dir := testEnv(t)
	old := oldStore(t, dir, "old.db")
	before := fileBytes(t, old)
	for _, args := range [][]string{
		{"-c", "live Klarveld", old},
		{"-c", `assert K.p = 1 by owner`, old},
		{"check", old},
		{"export", old},
		{"export", "-o", filepath.Join(dir, "out.nq"), old},
		{"token", "list", old},
	} {
		_, errOut, code := mqlRun(t, "", args...)
		if code == exitOK || !strings.Contains(errOut, "mql migrate "+old+" NEW") || !strings.Contains(errOut, "earlier mql") {
			t.Errorf("mql %s: exit %d, %q; want a failure naming `mql migrate %s NEW`", strings.Join(args, " "), code, errOut, old)
		}
		if code != exitOpen && code != exitTransfer {
			t.Errorf("mql %s: exit %d; want %d (the store cannot be opened)", strings.Join(args, " "), code, exitOpen)
		}
	}
	if fileBytes(t, old) != before {
		t.Error("opening the old file with the new mql changed it")
	}
	sameDir(t, dir, "old.db")
}

// TestMigrateRefuses: migrate creates nothing, and writes nothing over anything, when NEW
// exists, when NEW is OLD under any name, when OLD is damaged or not of the old format, or
// when it is interrupted.
func TestMigrateRefuses(t *testing.T) {
	dir := testEnv(t)
	old := oldStore(t, dir, "old.db")
	oldBytes := fileBytes(t, old)
	ctx := context.Background()
	existing := filepath.Join(dir, "existing.db")
	os.WriteFile(existing, []byte("not a store"), 0o600)
	current := filepath.Join(dir, "current.db")
	if db, err := mql.Open(ctx, current, mql.Options{}); err != nil {
		t.Fatal(err)
	} else {
		db.Close()
	}
	currentBytes := fileBytes(t, current)
	os.Symlink(old, filepath.Join(dir, "link.db"))
	os.Link(old, filepath.Join(dir, "hard.db"))
	truncated := oldStore(t, dir, "truncated.db")
	if err := os.Truncate(truncated, int64(len(oldBytes)/2)); err != nil {
		t.Fatal(err)
	}
	truncatedBytes := fileBytes(t, truncated)
	names := dirNames(t, dir)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"NEW exists", []string{"migrate", old, existing}, exitTransfer, existing + " exists"},
		{"NEW is a store", []string{"migrate", old, current}, exitTransfer, current + " exists"},
		{"NEW is OLD", []string{"migrate", old, old}, exitTransfer, "are the same store"},
		{"NEW is OLD as bbolt:", []string{"migrate", old, "bbolt:" + old}, exitTransfer, "are the same store"},
		{"NEW links to OLD", []string{"migrate", old, filepath.Join(dir, "link.db")}, exitTransfer, "are the same store"},
		{"NEW is a hard link to OLD", []string{"migrate", old, filepath.Join(dir, "hard.db")}, exitTransfer, "are the same store"},
		{"NEW named otherwise", []string{"migrate", old, dir + string(filepath.Separator) + "." + string(filepath.Separator) + "old.db"}, exitTransfer, "are the same store"},
		{"OLD truncated", []string{"migrate", truncated, filepath.Join(dir, "new.db")}, exitOpen, "is damaged: the file is"},
		{"OLD missing", []string{"migrate", filepath.Join(dir, "missing.db"), filepath.Join(dir, "new.db")}, exitOpen, "no such store"},
		{"OLD empty", []string{"migrate", filepath.Join(dir, "empty.db"), filepath.Join(dir, "new.db")}, exitOpen, "no such store"},
		{"OLD not a store", []string{"migrate", existing, filepath.Join(dir, "new.db")}, exitOpen, "not a bbolt file"},
		{"OLD of the current format", []string{"migrate", current, filepath.Join(dir, "new.db")}, exitOpen, "already in mql's current format"},
		{"OLD memory:", []string{"migrate", "memory:", filepath.Join(dir, "new.db")}, exitOpen, "no such store"},
		{"NEW memory:", []string{"migrate", old, "memory:"}, exitUsage, "name a file or a postgres:// database"},
		{"no OLD", []string{"migrate"}, exitUsage, "usage: mql migrate OLD"},
		{"NEW twice", []string{"migrate", "--db", filepath.Join(dir, "a.db"), old, filepath.Join(dir, "b.db")}, exitUsage, "named twice"},
		{"too many", []string{"migrate", old, filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")}, exitUsage, "too many arguments"},
		{"bad flag", []string{"migrate", "--nope", old, filepath.Join(dir, "a.db")}, exitUsage, "Run \"mql migrate --help\" for the usage."},
	} {
		if tc.name == "OLD empty" {
			os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o600)
		}
		out, errOut, code := mqlRun(t, "", tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit %d and %q", tc.name, code, out, errOut, tc.code, tc.want)
		}
		if tc.name == "OLD empty" {
			if fi, _ := os.Stat(filepath.Join(dir, "empty.db")); fi.Size() != 0 {
				t.Error("OLD empty: it was written")
			}
			os.Remove(filepath.Join(dir, "empty.db"))
		}
		if got := dirNames(t, dir); !slices.Equal(got, names) {
			t.Errorf("%s: the directory holds %q; want %q", tc.name, got, names)
		}
	}
	if fileBytes(t, old) != oldBytes || fileBytes(t, existing) != "not a store" || fileBytes(t, current) != currentBytes || fileBytes(t, truncated) != truncatedBytes {
		t.Error("a refused migrate changed a file")
	}

	// Interrupted before it began: exit 130, nothing created.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var o, e bytes.Buffer
	if code := run(cctx, []string{"migrate", old, filepath.Join(dir, "new.db")}, strings.NewReader(""), &o, &e); code != exitInterrupted || !strings.Contains(e.String(), "interrupted; nothing was migrated") {
		t.Errorf("interrupted: exit %d, %q", code, e.String())
	}
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Errorf("interrupted: the directory holds %q; want %q", got, names)
	}
}

// TestMigrateDamagedLate: damage that shows only once every transaction it can reach was read
// (a transaction out of reach of the subject index, so that the transactions read stop before
// it) fails the whole migration: the import of the transactions before it is not kept.
func TestMigrateDamagedLate(t *testing.T) {
	dir := testEnv(t)
	old := oldStore(t, dir, "old.db")
	db, err := bolt.Open(old, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		// Cayley's value id of <urn:mql:tx:20>, then its entries in the subject index "sp"
		// (keys: subject id, predicate id, each 8 bytes big-endian).
		var id uint64
		log := tx.Bucket([]byte("log"))
		iri := []byte(codec.TxIRI(20))
		c := log.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if i := bytes.Index(v, iri); i >= 0 && (i+len(iri) == len(v) || v[i+len(iri)] < '0' || v[i+len(iri)] > '9') {
				id = binary.BigEndian.Uint64(k)
				break
			}
		}
		sp := tx.Bucket([]byte("sp"))
		prefix := binary.BigEndian.AppendUint64(nil, id)
		var keys [][]byte
		sc := sp.Cursor()
		for k, _ := sc.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = sc.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		if id == 0 || len(keys) == 0 {
			t.Fatal("the fixture has no subject index entries of tx 20")
		}
		for _, k := range keys {
			if err := sp.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	before := fileBytes(t, old)
	newDB := filepath.Join(dir, "new.db")
	_, errOut, code := mqlRun(t, "", "migrate", old, newDB)
	if code != exitOpen || !strings.Contains(errOut, "is damaged") || !strings.Contains(errOut, "tx 20 cannot be read through its transaction node") || !strings.Contains(errOut, "nothing was migrated and "+newDB+" was not created") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	mustNotExist(t, newDB)
	sameDir(t, dir, "old.db")
	if fileBytes(t, old) != before {
		t.Error("migrate changed the damaged file")
	}
}

// oldTxs are the fixture's transactions, as the old mql exported them.
func oldTxs(t *testing.T) []*record.Tx {
	t.Helper()
	return exportTxs(t, oldExport)
}

// exportTxs are the transactions of the export at path: imported into a memory store, which
// checks them as any import does, and read back from it.
func exportTxs(t *testing.T, path string) []*record.Tx {
	t.Helper()
	ctx := context.Background()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := graphstore.Open(ctx, "memory:", graphstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Import(ctx, f, graphstore.CheckOptions{}); err != nil {
		t.Fatal(err)
	}
	var txs []*record.Tx
	err = s.Read(ctx, func(ix *index.Index) error {
		for id := record.TxID(1); id <= ix.Head(); id++ {
			txs = append(txs, ix.Tx(id))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return txs
}

// writeOldTxs writes txs into qs as the old mql wrote them: a transaction's quads in one
// write, in the order of codec.EncodeTx.
func writeOldTxs(t *testing.T, qs graph.QuadStore, txs []*record.Tx) {
	t.Helper()
	for _, tx := range txs {
		quads, err := codec.EncodeTx(tx)
		if err != nil {
			t.Fatal(err)
		}
		deltas := make([]graph.Delta, len(quads))
		for i, q := range quads {
			deltas[i] = graph.Delta{Quad: q, Action: graph.Add}
		}
		if err := qs.ApplyDeltas(deltas, graph.IgnoreOpts{}); err != nil {
			t.Fatalf("tx %d: %v", tx.ID, err)
		}
	}
}

// writeOldBolt writes txs into a new bbolt file at path as the old mql wrote one: Cayley's kv
// store through hidalgo's bbolt, without the bloom filter, a transaction's quads in one write.
func writeOldBolt(t *testing.T, path string, txs []*record.Tx) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	kv := hbolt.New(db)
	if err := ckv.Init(kv, nil); err != nil {
		t.Fatal(err)
	}
	qs, err := ckv.New(kv, graph.Options{ckv.OptNoBloom: true})
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close() // closes db
	writeOldTxs(t, qs, txs)
}

// TestMigrateRefusedTransaction: the check before. A transaction that the import's checks
// refuse (here a grant given by the owner inside a transaction another principal made, written
// past the old mql's API) stops the migration at that transaction, and nothing is created.
func TestMigrateRefusedTransaction(t *testing.T) {
	dir := testEnv(t)
	txs := oldTxs(t)
	if txs[7].ID != 8 || len(txs[7].Grants) != 1 || txs[7].Grants[0].By != "owner" {
		t.Fatalf("tx 8 of the fixture is not the owner's grant: %+v", txs[7])
	}
	// First the same transactions as the fixture, written the same way: they migrate.
	same := filepath.Join(dir, "same.db")
	writeOldBolt(t, same, txs)
	if _, errOut, code := mqlRun(t, "", "migrate", same, filepath.Join(dir, "same-new.db")); code != exitOK {
		t.Fatalf("the fixture rewritten: exit %d: %s", code, errOut)
	}
	if got, _, _ := mqlRun(t, "", "export", filepath.Join(dir, "same-new.db")); got != fileBytes(t, oldExport) {
		t.Fatal("the fixture rewritten: the export differs")
	}
	txs[7].By = "worker-3"
	forged := filepath.Join(dir, "forged.db")
	writeOldBolt(t, forged, txs)
	newDB := filepath.Join(dir, "new.db")
	_, errOut, code := mqlRun(t, "", "migrate", forged, newDB)
	if code != exitTransfer || !strings.Contains(errOut, "transactions refused one: author: tx 8: urn:mql:grant:g8.1: given by owner in a transaction made by worker-3") || !strings.Contains(errOut, "(line 96 of its export)") || !strings.Contains(errOut, "nothing was migrated and "+newDB+" was not created") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if strings.Contains(errOut, ".migrate-") {
		t.Errorf("the message names the hidden file: %s", errOut)
	}
	t.Log(errOut)
	sameDir(t, dir, "same.db", "same-new.db", "forged.db")
}

// TestMigrateStale: hidden files left by a migration that was killed are removed by the next
// migration into the same NEW; those of a running one are not.
func TestMigrateStale(t *testing.T) {
	dir := testEnv(t)
	old := oldStore(t, dir, "old.db")
	dead := filepath.Join(dir, ".new.db.migrate-999999999")
	deadImport := filepath.Join(dir, "..new.db.migrate-999999999.import-123")
	live := filepath.Join(dir, ".new.db.migrate-1") // pid 1 runs
	for _, p := range []string{dead, deadImport, live} {
		os.WriteFile(p, []byte("x"), 0o600)
	}
	if _, errOut, code := mqlRun(t, "", "migrate", old, filepath.Join(dir, "new.db")); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sameDir(t, dir, "old.db", "new.db", ".new.db.migrate-1")
}

// TestMigrateHelp: --help prints the usage on stdout and exits 0; the usage lists migrate.
func TestMigrateHelp(t *testing.T) {
	testEnv(t)
	out, errOut, code := mqlRun(t, "", "migrate", "--help")
	if code != exitOK || errOut != "" || !strings.HasPrefix(out, "usage: mql migrate OLD [NEW | --db NEW]") || !strings.Contains(out, "--db NEW") || !strings.Contains(out, "130") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if out, _, _ := mqlRun(t, "", "--help"); !strings.Contains(out, "mql migrate OLD [NEW]") {
		t.Error("mql --help does not list mql migrate")
	}
}

// writeOldPostgres writes the fixture's transactions into dsn as the old mql wrote a PostgreSQL
// store: Cayley's SQL schema and rows (the old writer wrote the rows Cayley's own writes, as
// its TestPostgresWriterMatchesCayley checked), a transaction's quads in one write, in the
// order of codec.EncodeTx.
func writeOldPostgres(t *testing.T, dsn string) {
	t.Helper()
	txs := exportTxs(t, oldExport)
	if err := graph.InitQuadStore("postgres", dsn, nil); err != nil {
		t.Fatal(err)
	}
	qs, err := graph.NewQuadStore("postgres", dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close()
	writeOldTxs(t, qs, txs)
}

// pgFingerprint sums up what the database holds, to tell that nothing changed it.
func pgFingerprint(t *testing.T, dsn string) string {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var fp string
	err = db.QueryRow(`SELECT (SELECT count(*) FROM quads)::text || ' ' || (SELECT coalesce(max(horizon), 0) FROM quads)::text || ' ' ||
		(SELECT count(*) FROM nodes)::text || ' ' || (SELECT coalesce(sum(refs), 0) FROM nodes)::text || ' ' ||
		(SELECT md5(coalesce(string_agg(encode(hash, 'hex') || coalesce(value_string, ''), ',' ORDER BY hash), '')) FROM nodes)`).Scan(&fp)
	if err != nil {
		t.Fatal(err)
	}
	return fp
}

// TestMigrateOldPostgres: an old-format PostgreSQL store migrates into a bbolt file whose export
// is the old export; the database is left as it was. It skips unless MQL_TEST_POSTGRES is set.
func TestMigrateOldPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	dir := testEnv(t)
	writeOldPostgres(t, dsn)
	before := pgFingerprint(t, dsn)
	newDB := filepath.Join(dir, "new.db")
	_, errOut, code := mqlRun(t, "", "migrate", dsn, newDB)
	if code != exitOK || !strings.Contains(errOut, "36 transactions (11 claims, 518 quads)") {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, _, _ := mqlRun(t, "", "export", newDB); got != fileBytes(t, oldExport) {
		t.Fatal("the export of the store migrated from PostgreSQL differs from the old export")
	}
	if after := pgFingerprint(t, dsn); after != before {
		t.Errorf("migrate changed the old database: %s, then %s", before, after)
	}
	// NEW the same database as OLD, named otherwise.
	if _, errOut, code := mqlRun(t, "", "migrate", dsn, dsn+"&application_name=x"); code != exitTransfer || !strings.Contains(errOut, "are the same store") {
		t.Errorf("NEW is OLD: exit %d: %s", code, errOut)
	}
	// A value changed in nodes: damage, and nothing is created.
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE nodes SET value_string = 'Klarfeld' WHERE value_string = 'Klarveld'`); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.db")
	if _, errOut, code := mqlRun(t, "", "migrate", dsn, other); code != exitOpen || !strings.Contains(errOut, "is damaged") || !strings.Contains(errOut, "does not have the hash it is stored under") {
		t.Errorf("damaged: exit %d: %s", code, errOut)
	}
	mustNotExist(t, other)
	// A quad outside every transaction graph.
	if _, err := db.Exec(`UPDATE nodes SET value_string = 'Klarveld' WHERE value_string = 'Klarfeld'`); err != nil {
		t.Fatal(err)
	}
	qs, err := graph.NewQuadStore("postgres", dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = qs.ApplyDeltas([]graph.Delta{{Quad: quad.MakeIRI("urn:x", "urn:y", "urn:z", ""), Action: graph.Add}}, graph.IgnoreOpts{})
	qs.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := mqlRun(t, "", "migrate", dsn, other); code != exitOpen || !strings.Contains(errOut, "outside every transaction graph") {
		t.Errorf("a quad outside: exit %d: %s", code, errOut)
	}
	mustNotExist(t, other)
}

// TestMigrateIntoPostgres: a PostgreSQL NEW, when the backend works. It skips unless
// MQL_TEST_POSTGRES is set.
func TestMigrateIntoPostgres(t *testing.T) {
	probe := pgtest.Database(t)
	if db, err := mql.Open(context.Background(), probe, mql.Options{}); err != nil {
		t.Skipf("the PostgreSQL backend does not open a store yet: %v", err)
	} else {
		db.Close()
	}
	dsn := pgtest.Database(t)
	dir := testEnv(t)
	old := oldStore(t, dir, "old.db")
	if _, errOut, code := mqlRun(t, "", "migrate", old, dsn); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got, _, _ := mqlRun(t, "", "export", dsn); got != fileBytes(t, oldExport) {
		t.Fatal("the export of the store migrated into PostgreSQL differs from the old export")
	}
	if out, errOut, code := mqlRun(t, "", "check", dsn); code != exitOK {
		t.Fatalf("check: exit %d\n%s%s", code, out, errOut)
	}
	// Again into the same database: it holds a store now.
	if _, errOut, code := mqlRun(t, "", "migrate", old, dsn); code != exitTransfer {
		t.Errorf("into a database that holds a store: exit %d: %s", code, errOut)
	}
	if got, _, _ := mqlRun(t, "", "export", dsn); got != fileBytes(t, oldExport) {
		t.Error("a refused migrate changed the database")
	}
}
