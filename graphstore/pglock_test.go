package graphstore

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv/pgkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// pgHoldLock takes the writer lock of dsn in a session named app, as a writer stalled inside
// its write would hold it, and returns its release.
func pgHoldLock(t *testing.T, dsn, app string) func() {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	db := pgOpenDB(t, u.String())
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`SELECT pg_advisory_xact_lock($1)`, int64(pgLockKey)); err != nil {
		t.Fatal(err)
	}
	return func() { tx.Rollback() }
}

// While another session holds the writer lock, a store that exists opens, refreshes and
// answers and checks without waiting for it; a write waits WriteLockTimeout, then fails with
// ErrInUse naming the holder and writes nothing.
func TestPostgresReadersDoNotLock(t *testing.T) {
	dsn := newPGDatabase(t)
	w := mustOpen(t, dsn, Options{})
	writeSample(t, w)
	w.Close()
	release := pgHoldLock(t, dsn, "stalled-writer")
	defer release()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	s, err := Open(ctx, dsn, Options{WriteLockTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatalf("open while a writer holds the lock: %v after %s", err, time.Since(start))
	}
	defer s.Close()
	if err := s.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if h := head(s); h != 7 {
		t.Fatalf("head %d, want 7", h)
	}
	t.Logf("open and refresh while locked: %s", time.Since(start))

	n := quadCount(t, s)
	start = time.Now()
	_, err = s.Write(context.Background(), "owner", countingClaim("X", 1))
	took := time.Since(start)
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "stalled-writer") || !strings.Contains(err.Error(), "idle in transaction") {
		t.Fatalf("write while locked: %v", err)
	}
	if took < 300*time.Millisecond || took > 3*time.Second {
		t.Fatalf("write gave up after %s, want about 300ms", took)
	}
	t.Logf("write: %v (after %s)", err, took)
	// A check reads a snapshot: it waits for nobody either.
	if r, err := s.Check(context.Background(), CheckOptions{}); err != nil {
		t.Fatalf("check while locked: %v", err)
	} else {
		ckOK(t, r)
	}
	if quadCount(t, s) != n || head(s) != 7 {
		t.Fatal("a refused write changed the store")
	}

	release()
	if _, err := s.Write(context.Background(), "owner", countingClaim("X", 1)); err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}
	r, err := s.Check(context.Background(), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ckOK(t, r)
}

// A new database needs the lock for its schema and genesis: while it is held, Open fails with
// ErrInUse and creates nothing; CheckDSN never creates anything nor waits: a database without
// mql's tables is no store.
func TestPostgresNewStoreWhileLocked(t *testing.T) {
	dsn := newPGDatabase(t)
	release := pgHoldLock(t, dsn, "creator")
	defer release()
	_, err := Open(context.Background(), dsn, Options{WriteLockTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "creator") {
		t.Fatalf("open of a new database while locked: %v", err)
	}
	if _, err := CheckDSN(context.Background(), dsn, Options{WriteLockTimeout: 300 * time.Millisecond}, CheckOptions{}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("check while locked: %v", err)
	}
	release()
	if _, err := CheckDSN(context.Background(), dsn, Options{}, CheckOptions{}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("check of an empty database: %v", err)
	}
	if ok, err := pgHasSchema(t, dsn); ok || err != nil {
		t.Fatalf("schema created by a failed open or a check: %v %v", ok, err)
	}
	s := mustOpen(t, dsn, Options{})
	defer s.Close()
	if head(s) != 1 {
		t.Fatalf("head %d after creating", head(s))
	}
}

// A writer that stalls while it holds the lock loses it after WriteIdleTimeout: another
// process's write goes through, and the stalled write, when it resumes, fails and leaves
// nothing, although it was built on the same head and took the same transaction id.
func TestPostgresStalledWriterIsFenced(t *testing.T) {
	dsn := newPGDatabase(t)
	a := mustOpen(t, dsn, Options{WriteIdleTimeout: 500 * time.Millisecond})
	defer a.Close()
	b := mustOpen(t, dsn, Options{})
	defer b.Close()

	holding, resume := make(chan record.TxID), make(chan struct{})
	stalled := make(chan error, 1)
	go func() {
		_, err := a.Write(context.Background(), "owner", func(ix *index.Index, tx *record.Tx) error {
			if err := countingClaim("STALLED", 1)(ix, tx); err != nil {
				return err
			}
			holding <- tx.ID
			<-resume // stalled with the lock held, as a paused process would be
			return nil
		})
		stalled <- err
	}()
	id := <-holding

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		tx, err := b.Write(context.Background(), "owner", countingClaim("B", 1))
		if err == nil && tx.ID != id {
			err = errors.New("B's write did not take the stalled writer's id")
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("write behind a stalled writer: %v", err)
		}
		t.Logf("write behind a writer stalled with the lock: %s", time.Since(start))
	case <-time.After(8 * time.Second):
		close(resume)
		t.Fatal("a writer stalled with the lock blocked another writer for 8s (WriteIdleTimeout is 500ms)")
	}

	close(resume)
	err := <-stalled
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "the session holding the writer lock ended") {
		t.Fatalf("the stalled write: %v", err)
	}
	t.Logf("the stalled write: %v", err)
	if _, err := a.Write(context.Background(), "owner", countingClaim("A", 1)); err != nil {
		t.Fatalf("the stalled writer's next write: %v", err)
	}
	if err := b.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*Store{a, b} {
		txs := txsOf(s)
		checkCounting(t, txs, 3)
		for _, tx := range txs {
			for _, c := range tx.Claims {
				if c.ID.Subject == "STALLED" {
					t.Fatalf("the stalled write is in the store: tx %d", tx.ID)
				}
			}
		}
	}
	r, err := CheckDSN(context.Background(), dsn, Options{}, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ckOK(t, r)
}

// A write whose session ends between its INSERTs and its COMMIT (a process paused there loses
// the lock like any other) is known to have been rolled back: mql asks PostgreSQL, and reports
// the write as failed and not recorded, rather than of unknown outcome.
func TestPostgresSessionLostAtCommit(t *testing.T) {
	dsn := newPGDatabase(t)
	s := mustOpen(t, dsn, Options{})
	defer s.Close()
	admin := pgOpenDB(t, dsn)
	be := s.be.(*pgBackend)
	be.kvs.SetBeforeCommit(func(w *pgkv.WriteTx) {
		if _, err := admin.Exec(`SELECT pg_terminate_backend($1)`, w.PID()); err != nil {
			t.Error(err)
		}
		for gone := false; !gone; {
			if err := admin.QueryRow(`SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`, w.PID()).Scan(&gone); err != nil {
				t.Error(err)
				return
			}
		}
	})
	n := quadCount(t, s)
	_, err := s.Write(context.Background(), "owner", countingClaim("LOST", 1))
	if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "nothing was recorded") ||
		!strings.Contains(err.Error(), "the session holding the writer lock ended") {
		t.Fatalf("write whose session ended before its COMMIT: %v", err)
	}
	be.kvs.SetBeforeCommit(nil)
	if quadCount(t, s) != n || head(s) != 1 {
		t.Fatal("the failed write left something")
	}
	if _, err := s.Write(context.Background(), "owner", countingClaim("A", 1)); err != nil {
		t.Fatal(err)
	}
	checkCounting(t, txsOf(s), 2)
}

// Committed tells a committed write transaction from a rolled-back one by its id, and a
// witness that says no (the id given again after a crash of the server) overrules it.
func TestPostgresCommittedAsksPostgreSQL(t *testing.T) {
	dsn := newPGDatabase(t)
	db := pgOpenDB(t, dsn)
	s := mustOpen(t, dsn, Options{WriteIdleTimeout: time.Second})
	defer s.Close()
	kvs := s.be.(*pgBackend).kvs
	no := func(context.Context, *pgx.Conn) (bool, error) { return false, nil }
	for _, commit := range []bool{true, false} {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		var xid int64
		if err := tx.QueryRow(`SELECT txid_current()`).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, err := kvs.Committed(context.Background(), xid, nil); got != commit || err != nil {
			t.Fatalf("Committed() = %v, %v; want %v", got, err, commit)
		}
		if got, err := kvs.Committed(context.Background(), xid, no); got || err != nil {
			t.Fatalf("Committed(witness no) = %v, %v; want false", got, err)
		}
	}
	// An id PostgreSQL has not given yet (a crash lost it): not committed.
	var next int64
	if err := db.QueryRow(`SELECT txid_current() + 1000`).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if got, err := kvs.Committed(context.Background(), next, nil); got || err != nil {
		t.Fatalf("Committed(future id) = %v, %v", got, err)
	}
}

// pgOpenDB is a database/sql handle on dsn, closed when the test ends.
func pgOpenDB(t *testing.T, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
