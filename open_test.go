package mql_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mql-dev/mql"
)

// TestOpenOwnerIsAName: an owner that is not a principal name is refused before anything is
// created. (Issue 11, item 13: --owner 'bad name' made a store in which every write failed.)
func TestOpenOwnerIsAName(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, owner := range []string{"bad name", "a--b", "-x", "9lives", "x\x1b[31m", "€uro", "a b"} { // (über is a name: letters of any script)
		path := filepath.Join(dir, "o.db")
		db, err := mql.Open(ctx, path, mql.Options{Owner: owner})
		if err == nil {
			db.Close()
			t.Fatalf("owner %q: opened", owner)
		}
		if !errors.Is(err, mql.ErrBadReference) {
			t.Errorf("owner %q: %v, want ErrBadReference", owner, err)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("owner %q: the store was created", owner)
		}
	}
	// A good name makes a store whose owner can write.
	db, err := mql.Open(ctx, filepath.Join(dir, "good.db"), mql.Options{Owner: "team-lead"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "w1", Type: mql.Agent, By: "team-lead"}); err != nil {
		t.Fatal(err)
	}
}

// TestOpenMustExist: a read opens an existing store and fails with ErrNoStore on a missing one,
// creating nothing; a write opens (and creates) it and says so with Created.
func TestOpenMustExist(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "teem.db")
	if _, err := mql.Open(ctx, path, mql.Options{MustExist: true}); !errors.Is(err, mql.ErrNoStore) {
		t.Fatalf("missing store: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a read created the store")
	}
	db, err := mql.Open(ctx, path, mql.Options{})
	if err != nil || !db.Created() {
		t.Fatalf("write open: %v, created %v", err, db != nil && db.Created())
	}
	db.Close()
	db, err = mql.Open(ctx, path, mql.Options{MustExist: true})
	if err != nil || db.Created() {
		t.Fatalf("read open of the existing store: %v", err)
	}
	db.Close()
	if got := mql.FilePath("bbolt:" + path); got != path {
		t.Errorf("FilePath(bbolt:%s) = %q", path, got)
	}
	if got := mql.FilePath("memory:"); got != "" {
		t.Errorf("FilePath(memory:) = %q", got)
	}
}
