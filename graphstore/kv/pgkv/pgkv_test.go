package pgkv

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
	"github.com/mql-dev/mql/internal/pgtest"
)

var testSchema = kv.Schema{Buckets: []kv.BucketDef{{Name: "a"}, {Name: "b", Append: true}}}

type pair struct{ k, v string }

func scanAll(t *testing.T, r kv.Reader, b kv.Bucket, prefix []byte, opts kv.ScanOptions, limit int) []pair {
	t.Helper()
	var out []pair
	err := r.Scan(b, prefix, opts, func(k, v []byte) (bool, error) {
		out = append(out, pair{string(k), string(v)})
		return len(out) < limit, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// openTest opens a store with opts on a new test database, closed when the test ends.
func openTest(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), pgtest.Database(t), testSchema, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// The store reads and writes as memkv does: random puts and deletes, committed or rolled
// back, with Gets and Scans (prefixes, starting points, both directions, stopped early)
// compared inside the write transaction (its own writes merged with the tables) and in
// snapshots; again with the last entries of a bucket and of prefixes (none of them, one
// without an upper bound) read with the lock (Options.PrefetchLast), which the reverse scans
// at their end or after their last entry start from.
func TestAgainstMemory(t *testing.T) {
	t.Run("tables", func(t *testing.T) { againstMemory(t, Options{LockKey: 42}) })
	t.Run("prefetched", func(t *testing.T) {
		againstMemory(t, Options{LockKey: 42, PrefetchLast: []Entry{
			{Bucket: 1}, {Bucket: 0, Key: []byte("a")}, {Bucket: 0, Key: []byte("\x00")}, {Bucket: 0, Key: []byte("\xff")}, {Bucket: 1, Key: []byte("b")},
		}})
	})
}

func againstMemory(t *testing.T, o Options) {
	ctx := context.Background()
	s := openTest(t, o)
	m := memkv.New(testSchema)
	rnd := rand.New(rand.NewPCG(1, 2))
	key := func() []byte {
		n := 1 + rnd.IntN(3)
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab\x00\xff"[rnd.IntN(4)]
		}
		return b
	}
	compare := func(what string, p, q kv.Reader) {
		t.Helper()
		for range 20 {
			b := kv.Bucket(rnd.IntN(2))
			k := key()
			v1, err1 := p.Get(b, k)
			v2, err2 := q.Get(b, k)
			if err1 != nil || err2 != nil || !bytes.Equal(v1, v2) || (v1 == nil) != (v2 == nil) {
				t.Fatalf("%s: Get(%d, %q) = %q %v, memkv %q %v", what, b, k, v1, err1, v2, err2)
			}
			var prefix []byte
			if rnd.IntN(2) == 0 {
				prefix = key()[:rnd.IntN(2)]
			}
			opts := kv.ScanOptions{Reverse: rnd.IntN(2) == 0}
			if rnd.IntN(2) == 0 {
				opts.From = append(append([]byte(nil), prefix...), key()...)
			}
			limit := 1 + rnd.IntN(40)
			got, want := scanAll(t, p, b, prefix, opts, limit), scanAll(t, q, b, prefix, opts, limit)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s: Scan(%d, %q, %+v, %d) = %q, memkv %q", what, b, prefix, opts, limit, got, want)
			}
		}
	}
	for round := range 30 {
		pw, err := s.Write(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mw, err := m.Write(ctx)
		if err != nil {
			t.Fatal(err)
		}
		compare(fmt.Sprintf("round %d, before writing", round), pw, mw)
		for range 1 + rnd.IntN(30) {
			b, k := kv.Bucket(rnd.IntN(2)), key()
			if rnd.IntN(3) == 0 {
				pw.Delete(b, k)
				mw.Delete(b, k)
			} else {
				v := []byte(fmt.Sprintf("v%d", rnd.IntN(1000)))
				if rnd.IntN(10) == 0 {
					v = []byte{}
				}
				pw.Put(b, k, v)
				mw.Put(b, bytes.Clone(k), v)
			}
		}
		compare(fmt.Sprintf("round %d, writing", round), pw, mw)
		if rnd.IntN(4) == 0 {
			pw.Rollback()
			mw.Rollback()
		} else {
			if err := pw.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if err := mw.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		pr, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mr, _ := m.Read(ctx)
		compare(fmt.Sprintf("round %d, snapshot", round), pr, mr)
		pr.End()
		mr.End()
	}
}

// A snapshot does not see a write committed after it began; a new one does.
func TestSnapshotIsolation(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{LockKey: 42})
	w, _ := s.WriteWith(ctx, WriteOptions{})
	w.Put(0, []byte("x"), []byte("1"))
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.End()
	w, _ = s.WriteWith(ctx, WriteOptions{})
	w.Put(0, []byte("x"), []byte("2"))
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if v, _ := r.Get(0, []byte("x")); string(v) != "1" {
		t.Fatalf("old snapshot reads %q", v)
	}
	r2, _ := s.Read(ctx)
	defer r2.End()
	if v, _ := r2.Get(0, []byte("x")); string(v) != "2" {
		t.Fatalf("new snapshot reads %q", v)
	}
}

// A write transaction larger than flushBytes is sent in parts within one SQL transaction:
// nothing is visible until it commits, and a rollback leaves nothing.
func TestLargeTransaction(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{LockKey: 42})
	val := bytes.Repeat([]byte("x"), 1000)
	for _, commit := range []bool{false, true} {
		w, err := s.WriteWith(ctx, WriteOptions{Synchronous: true})
		if err != nil {
			t.Fatal(err)
		}
		n := 3 * flushBytes / 1000
		for i := range n {
			if err := w.Put(1, fmt.Appendf(nil, "k%08d", i), val); err != nil {
				t.Fatal(err)
			}
		}
		if v, _ := w.Get(1, []byte("k00000001")); !bytes.Equal(v, val) {
			t.Fatal("the transaction does not read its own flushed write")
		}
		if got := len(scanAll(t, w, 1, []byte("k"), kv.ScanOptions{}, n+1)); got != n {
			t.Fatalf("scan in the transaction: %d, want %d", got, n)
		}
		r, _ := s.Read(ctx)
		if got := len(scanAll(t, r, 1, nil, kv.ScanOptions{}, n+1)); got != 0 {
			t.Fatalf("another snapshot sees %d entries before the commit", got)
		}
		r.End()
		if commit {
			if err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		} else {
			w.Rollback()
		}
		r, _ = s.Read(ctx)
		want := 0
		if commit {
			want = n
		}
		if got := len(scanAll(t, r, 1, nil, kv.ScanOptions{}, n+1)); got != want {
			t.Fatalf("after commit=%v: %d entries, want %d", commit, got, want)
		}
		r.End()
	}
}

// A commit's After statements run once the writer lock is released, in a transaction that
// commits asynchronously (a NOTIFY there would otherwise hold PostgreSQL's notify lock through
// a flush, and every writer's flush would wait for the one before), and the commit returns
// only once the WAL is flushed past them. If they fail, the write is still committed and
// durable, and the next write works.
func TestCommitAfter(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, Options{LockKey: 42})
	var sync, lsn string
	locks := -1
	w, err := s.WriteWith(ctx, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(0, []byte("k1"), []byte("v1")); err != nil {
		t.Fatal(err)
	}
	err = w.CommitWith(ctx, CommitOptions{After: func(b *pgx.Batch) {
		b.Queue(`SELECT current_setting('synchronous_commit'), pg_current_wal_insert_lsn()::text,
			(SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid())`).
			QueryRow(func(r pgx.Row) error { return r.Scan(&sync, &lsn, &locks) })
		b.Queue(`SELECT pg_notify('pgkv_test', 'x')`)
	}})
	if err != nil {
		t.Fatal(err)
	}
	if sync != "off" || locks != 0 {
		t.Fatalf("After ran with synchronous_commit %q holding %d advisory locks; want off and none", sync, locks)
	}
	var flushed bool
	if err := s.Conn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, lsn).Scan(&flushed)
	}); err != nil {
		t.Fatal(err)
	}
	if !flushed {
		t.Fatal("the commit returned before the WAL was flushed past its After statements")
	}

	w, err = s.WriteWith(ctx, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(0, []byte("k2"), []byte("v2")); err != nil {
		t.Fatal(err)
	}
	if err := w.CommitWith(ctx, CommitOptions{After: func(b *pgx.Batch) { b.Queue(`SELECT 1/0`) }}); err != nil {
		t.Fatalf("a commit whose After failed: %v", err)
	}
	w, err = s.WriteWith(ctx, WriteOptions{})
	if err != nil {
		t.Fatalf("the write after one whose After failed: %v", err)
	}
	if err := w.Put(0, []byte("k3"), []byte("v3")); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(ctx); err != nil {
		t.Fatalf("the write after one whose After failed: %v", err)
	}
	r, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.End()
	if got := fmt.Sprint(scanAll(t, r, 0, nil, kv.ScanOptions{}, 10)); got != "[{k1 v1} {k2 v2} {k3 v3}]" {
		t.Fatalf("stored %s", got)
	}
}

// When PostgreSQL ends every session (a restart, an administrator), the connections the store
// keeps idle are dead: the first snapshots and the first write after it begin on new ones
// instead of failing once per kept connection, and a server that stays down fails them fast.
func TestSessionsEndedWhileIdle(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, testSchema, Options{LockKey: 42, MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	put := func(v string) error {
		w, err := s.WriteWith(ctx, WriteOptions{})
		if err != nil {
			return err
		}
		w.Put(0, []byte("x"), []byte(v))
		return w.Commit(ctx)
	}
	if err := put("1"); err != nil {
		t.Fatal(err)
	}
	// Four snapshots at once leave four connections idle, in the pool's janitor's hands.
	var rs []kv.ReadTx
	for range 4 {
		r, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	for _, r := range rs {
		r.End()
	}
	time.Sleep(3 * dirtyFor) // rolled back: idle and clean, as a quiet server's are

	admin, err := sql.Open("postgres", pgtest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	u, _ := url.Parse(dsn)
	var n int
	if err := admin.QueryRow(`SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = $1`, strings.TrimPrefix(u.Path, "/")).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("ended %d sessions, want the 4 idle ones and the writer's", n)
	}
	time.Sleep(50 * time.Millisecond) // the ends reach the sockets

	for i := range 6 {
		r, err := s.Read(ctx)
		if err != nil {
			t.Fatalf("snapshot %d after the sessions ended: %v", i, err)
		}
		if v, err := r.Get(0, []byte("x")); err != nil || string(v) != "1" {
			t.Fatalf("snapshot %d reads %q, %v", i, v, err)
		}
		r.End()
	}
	if err := put("2"); err != nil {
		t.Fatalf("the first write after the sessions ended: %v", err)
	}
	r, err := s.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.End()
	if v, _ := r.Get(0, []byte("x")); string(v) != "2" {
		t.Fatalf("after the write, x = %q", v)
	}
}

// A database holding some of the store's tables but not all is a store with tables dropped,
// never a new one: a write refuses it with ErrPartialTables and writes nothing, where it once
// created the missing tables and wrote over what the others held as if into a new store.
func TestPartialTablesRefused(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	s, err := Open(ctx, dsn, testSchema, Options{LockKey: 42})
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.WriteWith(ctx, WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.Put(0, []byte("x"), []byte("1"))
	w.Put(1, []byte("y"), []byte("1"))
	if err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	dropped := s.Tables()[1]
	s.Close()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP TABLE " + dropped); err != nil {
		t.Fatal(err)
	}

	s, err = Open(ctx, dsn, testSchema, Options{LockKey: 42})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Exists() {
		t.Fatal("Exists with a table dropped")
	}
	if w, err := s.WriteWith(ctx, WriteOptions{}); !errors.Is(err, ErrPartialTables) {
		if err == nil {
			w.Rollback()
		}
		t.Fatalf("write: err %v, want ErrPartialTables", err)
	}
	var v string
	if err := db.QueryRow("SELECT v FROM " + s.Tables()[0] + " WHERE k = 'x'").Scan(&v); err != nil || v != "1" {
		t.Errorf("the remaining table holds %q (%v), want what was written", v, err)
	}
	var n int
	if err := db.QueryRow("SELECT count(*) FROM pg_class WHERE relname = $1", dropped).Scan(&n); err != nil || n != 0 {
		t.Errorf("the dropped table was created again (%d, %v)", n, err)
	}
}
