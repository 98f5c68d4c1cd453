package mql_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// On PostgreSQL, a write queued while another process holds the writer lock may be built by
// the process that takes the lock next. Its writer gets what it would have got building it
// itself: the receipt (its reference, state, what it supersedes, its transaction and time, as
// history shows them), or the refusal, which errors.Is matches as ever.
func TestWriteBuiltByAnotherProcess(t *testing.T) {
	dsn := postgresDSN(t)
	ctx := context.Background()
	var mu sync.Mutex
	elsewhere := map[int]int{}
	open := func(i int) *mql.DB {
		db, err := mql.Open(ctx, dsn, mql.Options{OnCommit: func(c mql.CommitInfo) {
			mu.Lock()
			elsewhere[i] += c.Elsewhere
			mu.Unlock()
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	holder, first, second, third := open(0), open(1), open(2), open(3)
	mustAssert(t, holder, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(10), By: "owner"})
	mustAssert(t, holder, mql.AssertSpec{Subject: "Klarveld", Predicate: "tier", Value: mql.String("gold"), By: "owner"})

	pg, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	waiting := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got int
			if err := pg.QueryRow(`SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d writers waiting for the lock, want %d", got, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	hold, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, err := holder.Tx(ctx, "owner", func(tx *mql.Tx) error {
			close(hold)
			<-release
			_, err := tx.Assert(mql.AssertSpec{Subject: "Held", Predicate: "n", Value: mql.Number(1), By: "owner"})
			return err
		}); err != nil {
			t.Error(err)
		}
	}()
	<-hold
	var firstRC, secondRC mql.Receipt
	var firstErr, secondErr, thirdErr error
	wg.Add(3)
	go func() {
		defer wg.Done()
		firstRC, firstErr = first.Assert(ctx, mql.AssertSpec{Subject: "Vendor", Predicate: "region", Value: mql.String("EU"), By: "owner"})
	}()
	waiting(1)
	go func() {
		defer wg.Done()
		secondRC, secondErr = second.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(12), By: "owner",
			Sources: []mql.Source{{ID: "invoice-7", Excerpt: "12 a seat"}}})
	}()
	waiting(2)
	go func() {
		defer wg.Done()
		_, thirdErr = third.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "tier", Value: mql.Number(3), By: "owner"})
	}()
	waiting(3)
	close(release)
	wg.Wait()

	if firstErr != nil || secondErr != nil {
		t.Fatalf("the writes: %v, %v", firstErr, secondErr)
	}
	if !errors.Is(thirdErr, mql.ErrValueType) {
		t.Errorf("a write of the wrong type, built by another process: %v, want ErrValueType", thirdErr)
	}
	mu.Lock()
	if elsewhere[2]+elsewhere[3] == 0 {
		t.Errorf("no write was built by another process (%v): the test did not test it", elsewhere)
	}
	mu.Unlock()
	if firstRC.Ref != "Vendor.region@1" || firstRC.State != mql.Live {
		t.Errorf("first: %+v", firstRC)
	}
	if secondRC.Ref != "Klarveld.price@2" || secondRC.State != mql.Live || secondRC.Supersedes != "Klarveld.price@1" ||
		secondRC.Tx != firstRC.Tx+1 {
		t.Errorf("second: %+v (first's transaction %d)", secondRC, firstRC.Tx)
	}
	h, err := third.History(ctx, "Klarveld.price")
	if err != nil {
		t.Fatal(err)
	}
	last := h.Claims[len(h.Claims)-1]
	if last.Ref != secondRC.Ref || last.Tx != secondRC.Tx || !last.RecordedAt.Equal(secondRC.At) {
		t.Errorf("history's newest: %s tx %d at %s; the receipt: %s tx %d at %s", last.Ref, last.Tx, last.RecordedAt, secondRC.Ref, secondRC.Tx, secondRC.At)
	}
	if v, err := third.Live(ctx, "Klarveld.tier"); err != nil || len(v) != 1 || v[0].Ref != "Klarveld.tier@1" {
		t.Errorf("the refused write changed the key: %v, %v", v, err)
	}
}

func mustAssert(t *testing.T, db *mql.DB, s mql.AssertSpec) mql.Receipt {
	t.Helper()
	rc, err := db.Assert(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}
