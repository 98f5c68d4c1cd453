package graphstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bareStore creates a bbolt file at path prepared for mql's buckets and holding nothing else:
// what Open leaves when it is interrupted between preparing the file and committing the
// genesis (the backend's open, without the Store's load).
func bareStore(t *testing.T, path string) {
	t.Helper()
	be, err := openBBoltFile(path, time.Second, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenMustExist: with MustExist, Open refuses with ErrNoStore whatever is not an mql store
// yet, and leaves it exactly as it was: a missing path is not created, an empty file is not
// initialised (bolt.Open would write its meta pages into it), another program's bbolt file
// gets no mql buckets, a file prepared for mql's buckets but without a genesis gets none. (Issue 11, item 14: `mql
// -c 'live *' teem.db` created teem.db.)
func TestOpenMustExist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	foreign := filepath.Join(dir, "foreign.db")
	fdb, err := bolt.Open(foreign, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := fdb.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("theirs")); return err }); err != nil {
		t.Fatal(err)
	}
	fdb.Close()
	bare := filepath.Join(dir, "bare.db") // mql's buckets, no transaction
	bareStore(t, bare)
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		notExist   bool // the error also matches fs.ErrNotExist
	}{
		{"missing", filepath.Join(dir, "teem.db"), true},
		{"missing bbolt:", "bbolt:" + filepath.Join(dir, "teem2.db"), true},
		{"empty file", empty, false},
		{"directory", dir, false},
		{"another program's bbolt file", foreign, false},
		{"mql file without genesis", bare, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := FilePath(tc.path)
			before, statErr := os.ReadFile(path)
			s, err := Open(ctx, tc.path, Options{MustExist: true})
			if err == nil {
				s.Close()
				t.Fatal("opened")
			}
			if !errors.Is(err, ErrNoStore) || errors.Is(err, fs.ErrNotExist) != tc.notExist {
				t.Fatalf("err %v: want ErrNoStore (and fs.ErrNotExist: %v)", err, tc.notExist)
			}
			after, statErr2 := os.ReadFile(path)
			if (statErr == nil) != (statErr2 == nil) || !bytes.Equal(before, after) {
				t.Errorf("the file changed: %d bytes (%v) before, %d (%v) after", len(before), statErr, len(after), statErr2)
			}
		})
	}

	// An mql store opens, and was not created by this Open; a new one was.
	path := filepath.Join(dir, "real.db")
	s := mustOpen(t, path, Options{})
	if !s.Created() {
		t.Error("a new store: Created is false")
	}
	s.Close()
	s = mustOpen(t, path, Options{MustExist: true})
	if s.Created() {
		t.Error("an existing store: Created is true")
	}
	s.Close()
	// memory: always exists.
	s = mustOpen(t, "memory:", Options{MustExist: true})
	s.Close()
}

// TestOpenMqlNamedBuckets: a bbolt file holding buckets named as mql names its own but not
// the one every store has (a byte flipped in that bucket's name, as cmd/mql's
// TestDamagedStores found at seed 89) is refused as damaged, with and without MustExist, and
// no write starts a new store in it over the history it holds.
func TestOpenMqlNamedBuckets(t *testing.T) {
	ctx := context.Background()
	for _, names := range [][]string{{"mql.kw"}, {"mql.damaged"}, {"mql.damaged", "mql.kx"}} {
		t.Run(strings.Join(names, ","), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := db.Update(func(tx *bolt.Tx) error {
				for _, n := range names {
					b, err := tx.CreateBucket([]byte(n))
					if err != nil {
						return err
					}
					if err := b.Put([]byte("k"), []byte("the history")); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			db.Close()
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, mustExist := range []bool{false, true} {
				s, err := Open(ctx, path, Options{MustExist: mustExist})
				if err == nil {
					s.Close()
					t.Fatalf("MustExist %v: opened", mustExist)
				}
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "not mql.kv") {
					t.Errorf("MustExist %v: err %v: want ErrDamaged naming mql.kv", mustExist, err)
				}
			}
			if _, err := CheckDSN(ctx, path, Options{}, CheckOptions{}); !errors.Is(err, ErrDamaged) {
				t.Errorf("CheckDSN: err %v: want ErrDamaged", err)
			}
			in, err := Inspect(ctx, path, time.Second)
			if err != nil || in.Found != FoundOther || !strings.Contains(in.Other, "damaged") {
				t.Errorf("Inspect: %+v, %v: want a damaged mql store", in, err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Error("the file changed")
			}
		})
	}
}

// TestOpenOldFormat: a store of the format before mql-kv/1 (Cayley's buckets) is refused by
// Open, with and without MustExist, with ErrOldFormat and a message naming `mql migrate`, and
// left as it was; CheckDSN refuses it the same way.
func TestOpenOldFormat(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range []string{"log", "sp", "ops", "meta"} {
			if _, err := tx.CreateBucket([]byte(name)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, _ := os.ReadFile(path)
	for _, opts := range []Options{{}, {MustExist: true}} {
		s, err := Open(ctx, path, opts)
		if err == nil {
			s.Close()
			t.Fatalf("Open(MustExist %v) opened a store of the old format", opts.MustExist)
		}
		if !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "mql migrate") {
			t.Fatalf("Open(MustExist %v): %v, want ErrOldFormat naming mql migrate", opts.MustExist, err)
		}
	}
	if _, err := CheckDSN(ctx, path, Options{}, CheckOptions{}); !errors.Is(err, ErrOldFormat) {
		t.Fatalf("CheckDSN: %v, want ErrOldFormat", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("the old store changed")
	}
}

// TestCheckDSNCreatesNothing: mql check on an empty file reports that there is no store and
// leaves the file empty (bolt.Open used to initialise it).
func TestCheckDSNCreatesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := CheckDSN(ctx, empty, Options{}, CheckOptions{}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("empty file: %v", err)
	}
	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Fatalf("the empty file changed: %v %v", fi.Size(), err)
	}
	missing := filepath.Join(dir, "missing.db")
	if _, err := CheckDSN(ctx, missing, Options{}, CheckOptions{}); !errors.Is(err, ErrNoStore) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestOpenMustExistPostgres: a database without mql's tables is no store for a read, and the
// read creates no table in it.
func TestOpenMustExistPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := newPGDatabase(t)
	if s, err := Open(ctx, dsn, Options{MustExist: true}); !errors.Is(err, ErrNoStore) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("empty database: %v", err)
	}
	if _, err := CheckDSN(ctx, dsn, Options{}, CheckOptions{}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("check of an empty database: %v", err)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("the read created %d tables (%v)", tables, err)
	}
	// A write creates it; then a read opens it.
	s := mustOpen(t, dsn, Options{})
	if !s.Created() {
		t.Error("Created is false")
	}
	s.Close()
	s = mustOpen(t, dsn, Options{MustExist: true})
	s.Close()
}

// TestCheckDSNOfUnfinishedStore: a file whose creation was interrupted before the genesis
// (bareStore) holds no mql memory, as Open with MustExist says; the check says so too, and
// writes nothing into it, so that the next Open can still finish creating it.
func TestCheckDSNOfUnfinishedStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "unfinished.db")
	bareStore(t, path)
	before, _ := os.ReadFile(path)
	if _, err := CheckDSN(ctx, path, Options{}, CheckOptions{}); !errors.Is(err, ErrNoStore) {
		t.Errorf("check: %v, want ErrNoStore", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("the check wrote into the file")
	}
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open after the check: %v", err)
	}
	defer s.Close()
	if !s.Created() {
		t.Error("Open did not write the genesis")
	}
}

// TestOpenPostgresTableDropped: a database holding some of a store's tables but not all (one
// dropped) is refused as damaged by Open, with and without MustExist, and by CheckDSN, naming
// the missing table; nothing is written. It once read as no store, and the next write wrote a
// genesis over the transactions the other tables held.
func TestOpenPostgresTableDropped(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	s := mustOpen(t, dsn, Options{})
	s.Close()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP TABLE mql_text"); err != nil {
		t.Fatal(err)
	}
	rows := func() string {
		var n int
		var sum string
		if err := db.QueryRow("SELECT count(*), coalesce(md5(string_agg(encode(k, 'hex') || encode(v, 'hex'), ',' ORDER BY k)), '') FROM mql_tx").Scan(&n, &sum); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(n, sum)
	}
	before := rows()
	for _, mustExist := range []bool{false, true} {
		s, err := Open(ctx, dsn, Options{MustExist: mustExist})
		if err == nil {
			s.Close()
			t.Fatalf("MustExist %v: opened", mustExist)
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "mql_text") {
			t.Errorf("MustExist %v: err %v: want ErrDamaged naming mql_text", mustExist, err)
		}
	}
	if _, err := CheckDSN(ctx, dsn, Options{}, CheckOptions{}); !errors.Is(err, ErrDamaged) {
		t.Errorf("CheckDSN: err %v: want ErrDamaged", err)
	}
	if after := rows(); after != before {
		t.Errorf("mql_tx changed: %s before, %s after", before, after)
	}
}
