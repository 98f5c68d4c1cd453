package graphstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestOpenMustExist: with MustExist, Open refuses with ErrNoStore whatever is not an mql store
// yet, and leaves it exactly as it was: a missing path is not created, an empty file is not
// initialised (bolt.Open would write its meta pages into it), another program's bbolt file
// gets no Cayley buckets, a Cayley file without a genesis gets none. (Issue 11, item 14: `mql
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
	bare := filepath.Join(dir, "bare.db") // Cayley's buckets, no transaction
	be, err := openBBolt(bare, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	be.close()
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
		{"Cayley file without genesis", bare, false},
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
