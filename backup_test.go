package mql_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mql-dev/mql"
)

// A backup taken while writers commit holds every commit acknowledged before it began, opens
// with no log beside it, and passes the check.
func TestBackupUnderWriters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := mql.Open(ctx, filepath.Join(dir, "team.db"), mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const writers = 4
	var acked [writers]atomic.Int64 // the last version each writer's key was acknowledged at
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stop); wg.Wait() }() // before the store closes
	for w := range writers {
		wg.Go(func() {
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.Assert(ctx, mql.AssertSpec{Subject: fmt.Sprintf("w%d", w), Predicate: "n", Value: mql.Number(float64(i)), By: "owner"}); err != nil {
					t.Error(err)
					return
				}
				acked[w].Store(int64(i))
			}
		})
	}
	for round := range 3 {
		for acked[0].Load() < int64(50*(round+1)) {
		}
		var before [writers]int64
		for w := range writers {
			before[w] = acked[w].Load()
		}
		var copy bytes.Buffer
		if _, err := db.Backup(ctx, &copy); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("copy%d.db", round))
		if err := os.WriteFile(path, copy.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		rep, err := mql.CheckStore(ctx, path, mql.Options{})
		if err != nil || !rep.OK() {
			t.Fatalf("round %d: check of the copy: %v %+v", round, err, rep.Problems)
		}
		cp, err := mql.Open(ctx, path, mql.Options{MustExist: true})
		if err != nil {
			t.Fatal(err)
		}
		for w := range writers {
			live, err := cp.Live(ctx, fmt.Sprintf("w%d", w))
			if err != nil {
				t.Fatal(err)
			}
			if before[w] == 0 {
				continue
			}
			if len(live) != 1 || int64(live[0].Value.Num) < before[w] {
				t.Errorf("round %d: the copy has w%d = %v, want at least %d (acknowledged before the backup)", round, w, live, before[w])
			}
		}
		cp.Close()
	}
}

// Only a bbolt store is a file to copy.
func TestBackupRefusesOtherBackends(t *testing.T) {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b bytes.Buffer
	if _, err := db.Backup(ctx, &b); !errors.Is(err, errors.ErrUnsupported) || b.Len() != 0 {
		t.Errorf("memory: backup: %v, %d bytes; want errors.ErrUnsupported and nothing written", err, b.Len())
	}
}

func ExampleDB_Backup() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mql-backup")
	defer os.RemoveAll(dir)
	db, _ := mql.Open(ctx, filepath.Join(dir, "team.db"), mql.Options{})
	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "owner"})
	f, _ := os.Create(filepath.Join(dir, "copy.db"))
	db.Backup(ctx, f) // the store stays open meanwhile
	f.Sync()
	f.Close()
	db.Close()

	restored, _ := mql.Open(ctx, filepath.Join(dir, "copy.db"), mql.Options{MustExist: true})
	defer restored.Close()
	live, _ := restored.Live(ctx, "Klarveld.price_per_seat")
	fmt.Println(live[0].Value)
	// Output: 44
}
