// Package pgkv is the kv.Store over PostgreSQL: one table per bucket,
// PREFIX<name> (k bytea PRIMARY KEY, v bytea NOT NULL), shared by any number of processes.
//
// A snapshot (Read) is a REPEATABLE READ READ ONLY transaction on a pooled connection: its
// first round trip begins it, reads the WAL position and the entries named by
// Options.Prefetch, and runs the caller's statements (Options.Begin); Get is one prepared
// SELECT, Scan pages through the range in key order, a few rows first and more as it goes on.
//
// A write transaction (Write) is one SQL transaction, READ COMMITTED, that holds the writer
// lock, a transaction-level advisory lock: its first round trip begins it, sets its bounds
// (lock_timeout, idle_in_transaction_session_timeout) and takes the lock. Its writes are kept
// in memory, read through by its own Gets and Scans (merged with the tables in key order), and
// sent at commit in one round trip: one statement for all the buckets, the caller's statements
// (CommitOptions.Extra), the COMMIT, which releases the lock, and the durability check below.
// A large transaction sends what it holds every few MiB, within the same SQL transaction, so
// that its memory stays bounded.
//
// Durability. The locked transaction commits with synchronous_commit off: PostgreSQL releases
// the lock without waiting for the disk, so that one writer's flush overlaps the next one's
// work. The writer is told of success only after a small synchronous commit of its own that
// follows in the WAL (a transactional pg_logical_emit_message, in the same round trip): the
// WAL is sequential, so its flush covers the locked transaction. Such a transaction is visible
// to other sessions before it is durable, so no reader of this package uses what it read
// before the WAL is flushed past it: a snapshot reads pg_current_wal_insert_lsn() in its first
// statement, after its snapshot was taken, and waits until pg_current_wal_flush_lsn() reaches
// it before it returns (see Store.Read). Transaction ids stay dense: the next writer takes the
// lock only after the commit record is in the WAL, so a crash that loses one transaction loses
// every one after it.
package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"github.com/mql-dev/mql/graphstore/kv"
)

// Options configure a Store.
type Options struct {
	// Prefix is put before each bucket's name to name its table; default "mql_".
	Prefix string
	// LockKey is the advisory lock that write transactions hold (advisory locks are scoped to
	// the database).
	LockKey int64
	// LockTimeout bounds the wait for the writer lock (lock_timeout); default 10s.
	LockTimeout time.Duration
	// IdleTimeout bounds how long a write transaction may stay silent while it holds the lock
	// (idle_in_transaction_session_timeout): PostgreSQL then ends its session, which rolls it
	// back and releases the lock. Default 5s.
	IdleTimeout time.Duration
	// Prefetch names entries that every snapshot and write transaction reads in its first
	// round trip: their Gets cost nothing.
	Prefetch []Entry
	// PrefetchLast names buckets, or key prefixes within them (Entry.Key; nil: the whole
	// bucket), whose last entry every snapshot and write transaction reads in its first round
	// trip: a reverse Scan of that prefix starts with it, from its end or from any key at or
	// after it (a writer's look at the newest entry under a prefix costs no round trip).
	PrefetchLast []Entry
	// Begin, if set, queues the caller's statements into the first round trip of every
	// snapshot (write false) and write transaction (write true, after the lock is taken), when
	// the tables exist. What it returns, if not nil, runs once their results are in and (for a
	// snapshot) the WAL is flushed past what they read, with the prefetched entries.
	Begin func(b *pgx.Batch, write bool) func(pre kv.Reader)
	// Cache, if set, keeps entries across write transactions (see Cache).
	Cache *Cache
	// Create lists the caller's statements (CREATE TABLE …) that run where a write
	// transaction creates the tables.
	Create []string
	// MaxConns bounds the connections snapshots use at once; default 8.
	MaxConns int
	// Absent lists buckets whose tables a store of an earlier layout lacks: the store exists
	// without them, and such a bucket reads as empty. A store opened with Absent is read, never
	// written: its write transactions fail.
	Absent []kv.Bucket
}

// Entry names one entry of a bucket.
type Entry struct {
	Bucket kv.Bucket
	Key    []byte
}

// Store is a kv.Store in one PostgreSQL database. It is safe for concurrent use.
type Store struct {
	cfg    *pgx.ConnConfig
	opts   Options
	schema kv.Schema
	tables []string // per bucket
	get    []string // per bucket: the Get statement
	// required are the tables that must exist for the store to exist (those of the buckets not in
	// Options.Absent); missing, the buckets of Options.Absent whose tables do not.
	required []string
	missing  map[kv.Bucket]bool

	exists atomic.Bool // every bucket's table exists
	closed atomic.Bool
	pool   *pool

	wmu   chan struct{} // one write transaction at a time in this process
	wconn *pgx.Conn     // the write transactions' connection, kept between them; guarded by wmu

	beforeCommit atomic.Pointer[func(*WriteTx)] // tests: SetBeforeCommit
	preOnce      sync.Once
	preSQL       string

	fmu    sync.Mutex // serialises the flushes readers ask for (forceFlush)
	fconn  *pgx.Conn
	scans  sync.Map // scan statement text by scanShape
	lockID string   // LockKey as SQL text
}

// Open connects to the database named by dsn, whose tables are named after schema's buckets.
// It creates nothing: a write transaction creates the tables when it commits into a database
// without them.
func Open(ctx context.Context, dsn string, schema kv.Schema, opts Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		cfg.RuntimeParams["application_name"] = "mql pid " + strconv.Itoa(os.Getpid())
	}
	// A context that ends asks PostgreSQL to cancel the statement (a wait for the lock) rather
	// than cutting the connection.
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: 2 * time.Second}
	}
	if opts.Prefix == "" {
		opts.Prefix = "mql_"
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 10 * time.Second
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 5 * time.Second
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 8
	}
	s := &Store{cfg: cfg, opts: opts, schema: schema, wmu: make(chan struct{}, 1), lockID: strconv.FormatInt(opts.LockKey, 10)}
	for i, b := range schema.Buckets {
		t := opts.Prefix + b.Name
		s.tables = append(s.tables, t)
		s.get = append(s.get, "SELECT v FROM "+t+" WHERE k = $1")
		if !slices.Contains(opts.Absent, kv.Bucket(i)) {
			s.required = append(s.required, t)
		}
	}
	s.pool = newPool(s, opts.MaxConns)
	c, err := s.pool.get(ctx)
	if err != nil {
		return nil, err
	}
	defer s.pool.put(c, false)
	ok, err := s.probe(ctx, c)
	if err != nil {
		return nil, err
	}
	s.exists.Store(ok)
	if len(opts.Absent) > 0 {
		found, err := s.Found(ctx, s.tables)
		if err != nil {
			return nil, err
		}
		s.missing = map[kv.Bucket]bool{}
		for _, b := range opts.Absent {
			s.missing[b] = !found[s.tables[b]]
		}
	}
	return s, nil
}

func (s *Store) connect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.ConnectConfig(ctx, s.cfg.Copy())
}

// Listener opens a new session of the store's configuration for LISTEN: a context that ends
// while it waits for a notification sets a deadline on the connection (the session stays
// usable) instead of asking the server to cancel.
func (s *Store) Listener(ctx context.Context) (*pgx.Conn, error) {
	cfg := s.cfg.Copy()
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// SetBeforeCommit makes fn (nil: nothing) run between each write transaction's statements
// and its COMMIT, in their own round trips: for tests that end the session there.
func (s *Store) SetBeforeCommit(fn func(t *WriteTx)) {
	if fn == nil {
		s.beforeCommit.Store(nil)
		return
	}
	s.beforeCommit.Store(&fn)
}

// Tables returns the names of the tables the buckets are stored in.
func (s *Store) Tables() []string { return append([]string(nil), s.tables...) }

// Exists reports whether the tables existed when last looked at (at Open, and by every
// snapshot and write transaction since, until they were found).
func (s *Store) Exists() bool { return s.exists.Load() }

const probeSQL = `SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = ANY($1) AND c.relkind IN ('r', 'p')`

// probe says whether every bucket's table exists (but those of Options.Absent). It reads
// pg_class rather than asking to_regclass, which answers from the session's catalog cache.
func (s *Store) probe(ctx context.Context, c *pgx.Conn) (bool, error) {
	var n int
	if err := c.QueryRow(ctx, probeSQL, s.required).Scan(&n); err != nil {
		return false, err
	}
	return n == len(s.required), nil
}

// Found returns which of names are tables, views or sequences in the database's current
// schema.
func (s *Store) Found(ctx context.Context, names []string) (map[string]bool, error) {
	c, err := s.pool.get(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = ANY($1)`, names)
	if err != nil {
		s.pool.discard(c)
		return nil, err
	}
	found := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			s.pool.discard(c)
			return nil, err
		}
		found[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		s.pool.discard(c)
		return nil, err
	}
	s.pool.put(c, false)
	return found, nil
}

// Conn runs fn on a pooled connection out of any transaction (for the caller's own queries).
func (s *Store) Conn(ctx context.Context, fn func(c *pgx.Conn) error) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	c, err := s.pool.get(ctx)
	if err != nil {
		return err
	}
	err = fn(c)
	if err != nil && !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
		s.pool.discard(c)
		return err
	}
	s.pool.put(c, false)
	return err
}

// Close closes every connection. A write transaction in progress is rolled back by
// PostgreSQL when its connection closes.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.pool.close()
	select {
	case s.wmu <- struct{}{}:
		if s.wconn != nil {
			closeConn(s.wconn)
			s.wconn = nil
		}
		<-s.wmu
	case <-time.After(5 * time.Second):
	}
	s.fmu.Lock()
	if s.fconn != nil {
		closeConn(s.fconn)
		s.fconn = nil
	}
	s.fmu.Unlock()
	return nil
}

// ---- snapshots ---------------------------------------------------------------------------

// ReadTx is a snapshot.
type ReadTx struct {
	s     *Store
	c     *pgx.Conn
	ctx   context.Context
	pre   map[string][]byte // prefetched entries (a nil value: none)
	last  lasts             // prefetched last entries
	empty bool              // the tables do not exist: nothing to read
	dirty bool              // the connection is still in the previous snapshot's transaction
	done  bool
}

// Read begins a snapshot of the newest durable state. It returns only once the WAL is
// flushed past everything the snapshot can see (the durability gate, see the package
// comment): nothing it reads can be lost by a crash of the server.
func (s *Store) Read(ctx context.Context) (kv.ReadTx, error) {
	if s.closed.Load() {
		return nil, kv.ErrClosed
	}
	for tries := 0; ; tries++ {
		c, dirty, kept, err := s.pool.getDirty(ctx)
		if err != nil {
			return nil, err
		}
		t := &ReadTx{s: s, c: c, ctx: ctx, dirty: dirty}
		err = t.begin(ctx)
		if err == nil {
			return t, nil
		}
		dead := c.IsClosed()
		t.fail()
		// A snapshot that did not begin read nothing: on a connection the server had closed
		// while it sat idle, it begins again on another instead of failing the reader once per
		// idle connection after PostgreSQL restarts.
		if !s.pool.retry(ctx, kept, dead, tries) {
			return nil, err
		}
	}
}

func (t *ReadTx) begin(ctx context.Context) error {
	s := t.s
	exists := s.exists.Load()
	b := &pgx.Batch{}
	if t.dirty {
		b.Queue("ROLLBACK")
	}
	b.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	// The first statement takes the snapshot; the insert position it reads is past the commit
	// record of every transaction the snapshot sees.
	var flushed bool
	var lsn string
	b.Queue(gateSQL).QueryRow(func(r pgx.Row) error { return r.Scan(&flushed, &lsn) })
	n := -1
	if !exists {
		b.Queue(probeSQL, s.required).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
	}
	var after func(kv.Reader)
	if exists {
		t.pre, t.last = s.queuePrefetch(b)
		if s.opts.Begin != nil {
			after = s.opts.Begin(b, false)
		}
	}
	if err := t.c.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if !exists {
		if n != len(s.required) {
			t.empty = true
		} else {
			// Created since we looked: read the rest in a second round trip, same snapshot.
			s.exists.Store(true)
			b := &pgx.Batch{}
			t.pre, t.last = s.queuePrefetch(b)
			if s.opts.Begin != nil {
				after = s.opts.Begin(b, false)
			}
			if err := t.c.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
	}
	if !flushed {
		if err := s.waitFlushed(ctx, t.c, lsn); err != nil {
			return err
		}
	}
	if after != nil {
		after(prefetched{t.pre, t.last})
	}
	return nil
}

// Conn is the snapshot's connection, for the caller's own queries in it.
func (t *ReadTx) Conn() *pgx.Conn { return t.c }

// Context is the context the snapshot's statements run with.
func (t *ReadTx) Context() context.Context { return t.ctx }

// Prefetched reads the entries of Options.Prefetch and PrefetchLast; every other entry reads
// as missing.
func (t *ReadTx) Prefetched() kv.Reader { return prefetched{t.pre, t.last} }

const gateSQL = `SELECT pg_current_wal_flush_lsn() >= pg_current_wal_insert_lsn(), pg_current_wal_insert_lsn()::text`

// queuePrefetch queues the reads of Options.Prefetch and PrefetchLast and returns the maps
// their values land in.
func (s *Store) queuePrefetch(b *pgx.Batch) (map[string][]byte, lasts) {
	n := len(s.opts.Prefetch) + len(s.opts.PrefetchLast)
	if n == 0 {
		return nil, nil
	}
	pre := make(map[string][]byte, len(s.opts.Prefetch))
	last := make(lasts, len(s.opts.PrefetchLast))
	keys := make([]string, 0, len(s.opts.Prefetch))
	args := make([]any, 0, n)
	for _, e := range s.opts.Prefetch {
		k := entryKey(e.Bucket, e.Key)
		pre[k] = nil
		keys = append(keys, k)
		args = append(args, e.Key)
	}
	for i, e := range s.opts.PrefetchLast {
		last[i] = &lastEnt{b: e.Bucket, prefix: e.Key}
		if len(e.Key) > 0 {
			args = append(args, e.Key)
			if end := kv.PrefixEnd(e.Key); end != nil {
				args = append(args, end)
			}
		}
	}
	b.Queue(s.prefetchSQL(), args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			raw := rows.RawValues()
			i := int(raw[0][0])
			v := append([]byte{}, raw[1]...)
			if i < len(keys) {
				pre[keys[i]] = v
			} else {
				e := last[i-len(keys)]
				e.k, e.v = append([]byte{}, raw[2]...), v
			}
		}
		return rows.Err()
	})
	return pre, last
}

// prefetchSQL reads every entry of Options.Prefetch and PrefetchLast in one statement: rows
// of (which, value, key), which as one byte.
func (s *Store) prefetchSQL() string {
	s.preOnce.Do(func() {
		var parts []string
		arg := 0
		for i, e := range s.opts.Prefetch {
			arg++
			parts = append(parts, fmt.Sprintf("SELECT '\\x%02x'::bytea, v, NULL::bytea FROM %s WHERE k = $%d", i, s.tables[e.Bucket], arg))
		}
		for j, e := range s.opts.PrefetchLast {
			where := ""
			if len(e.Key) > 0 {
				arg++
				where = fmt.Sprintf(" WHERE k >= $%d", arg)
				if kv.PrefixEnd(e.Key) != nil {
					arg++
					where += fmt.Sprintf(" AND k < $%d", arg)
				}
			}
			parts = append(parts, fmt.Sprintf("(SELECT '\\x%02x'::bytea, v, k FROM %s%s ORDER BY k DESC LIMIT 1)", len(s.opts.Prefetch)+j, s.tables[e.Bucket], where))
		}
		s.preSQL = strings.Join(parts, " UNION ALL ")
	})
	return s.preSQL
}

// lasts are the prefetched last entries of Options.PrefetchLast, in its order.
type lasts []*lastEnt

// lastEnt is the last entry of a bucket under a prefix (k nil: there is none).
type lastEnt struct {
	b      kv.Bucket
	prefix []byte
	k, v   []byte
}

// of returns the prefetched last entry of b under prefix, if there is one.
func (l lasts) of(b kv.Bucket, prefix []byte) *lastEnt {
	for _, e := range l {
		if e.b == b && bytes.Equal(e.prefix, prefix) {
			return e
		}
	}
	return nil
}

// get returns the value of key in b if it is a prefetched last entry.
func (l lasts) get(b kv.Bucket, key []byte) ([]byte, bool) {
	for _, e := range l {
		if e.b == b && e.k != nil && bytes.Equal(e.k, key) {
			return e.v, true
		}
	}
	return nil, false
}

// without returns l without the entries of bucket b (which a write changed).
func (l lasts) without(b kv.Bucket) lasts {
	return slices.DeleteFunc(l, func(e *lastEnt) bool { return e.b == b })
}

// fromLast serves a reverse Scan of a prefetched prefix (or whole bucket) from its last
// entry, when the scan starts at its end or at a key at or after that entry: it calls fn
// with it and returns the scanner of the rest, or done when there is no more to read.
func (s *Store) fromLast(ctx context.Context, c *pgx.Conn, last lasts, b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) (sc *scanner, done bool, err error) {
	if !opts.Reverse {
		return nil, false, nil
	}
	e := last.of(b, prefix)
	if e == nil {
		return nil, false, nil
	}
	if e.k == nil {
		return nil, true, nil
	}
	if opts.From != nil && bytes.Compare(opts.From, e.k) < 0 {
		return nil, false, nil
	}
	more, err := fn(e.k, e.v)
	if err != nil || !more {
		return nil, true, err
	}
	sc = s.newScanner(ctx, c, b, prefix, kv.ScanOptions{Reverse: true})
	sc.hi, sc.hiOp = e.k, '<'
	return sc, false, nil
}

func entryKey(b kv.Bucket, key []byte) string {
	return string(append([]byte{byte(b)}, key...))
}

// waitFlushed returns once the server's WAL is flushed up to lsn: it asks every little while
// (the writer whose commit is the last one flushes it within milliseconds) and, past
// forceAfter, flushes it itself with a small synchronous commit on another connection (WAL
// that no commit follows is otherwise flushed only when its page is full).
func (s *Store) waitFlushed(ctx context.Context, c *pgx.Conn, lsn string) error {
	start := time.Now()
	sleep := 500 * time.Microsecond
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(sleep):
		}
		var ok bool
		if err := c.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, lsn).Scan(&ok); err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Since(start) > forceAfter {
			return s.forceFlush(ctx, lsn)
		}
		sleep = time.Millisecond
	}
}

// forceAfter is longer than a writer's flush usually takes on a busy server: a forced flush
// is one more synchronous commit queued behind the writers' (10–66 ms each, measured on a
// loaded machine, when a reader that had heard an announcement forced one after 5 ms in 15 of
// its 25 waits).
const forceAfter = 20 * time.Millisecond

// forceFlush makes the WAL durable up to lsn (at least) with a synchronous commit of a
// transaction that writes a WAL record, on a connection kept for it.
func (s *Store) forceFlush(ctx context.Context, lsn string) error {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	for tries := 0; ; tries++ {
		kept := s.fconn != nil && !s.fconn.IsClosed()
		if !kept {
			c, err := s.connect(ctx)
			if err != nil {
				return err
			}
			s.fconn = c
		}
		b := &pgx.Batch{}
		b.Queue("BEGIN READ WRITE")
		b.Queue("SELECT set_config('synchronous_commit', 'on', true)")
		b.Queue(flushSQL)
		b.Queue("COMMIT")
		err := s.fconn.SendBatch(ctx, b).Close()
		if err == nil {
			return nil
		}
		dead := s.fconn.IsClosed()
		closeConn(s.fconn)
		s.fconn = nil
		// A flush is safe to repeat: once more on a new session when the kept one had ended.
		if !kept || !dead || ctx.Err() != nil || tries > 0 {
			return err
		}
	}
}

// flushSQL, committed synchronously as a transaction of its own, writes a WAL record and
// waits until the WAL is flushed past it.
const flushSQL = `SELECT pg_logical_emit_message(true, 'mql', '')`

// durableSQL is flushSQL for the implicit transaction at the end of a batch, which must
// commit synchronously whatever the session's setting.
const durableSQL = `SELECT set_config('synchronous_commit', 'on', true), pg_logical_emit_message(true, 'mql', '')`

func (t *ReadTx) fail() {
	t.done = true
	if t.c != nil {
		t.s.pool.discard(t.c)
		t.c = nil
	}
}

// End ends the snapshot. Its connection goes back to the pool still in the transaction,
// which the next snapshot on it (or the pool, soon) rolls back.
func (t *ReadTx) End() {
	if t.done {
		return
	}
	t.done = true
	t.s.pool.put(t.c, true)
	t.c = nil
}

// Get returns the value under key in b, or nil.
func (t *ReadTx) Get(b kv.Bucket, key []byte) ([]byte, error) {
	if t.done {
		return nil, kv.ErrClosed
	}
	if t.pre != nil {
		if v, ok := t.pre[entryKey(b, key)]; ok {
			return v, nil
		}
	}
	if v, ok := t.last.get(b, key); ok {
		return v, nil
	}
	if t.empty || t.s.missing[b] {
		return nil, nil
	}
	return getOn(t.ctx, t.c, t.s.get[b], key)
}

func getOn(ctx context.Context, c *pgx.Conn, q string, key []byte) ([]byte, error) {
	var v []byte
	err := c.QueryRow(ctx, q, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// Scan calls fn with the keys of b under prefix in order (see kv.Reader).
func (t *ReadTx) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	if t.done {
		return kv.ErrClosed
	}
	if t.empty || t.s.missing[b] {
		return nil
	}
	sc, done, err := t.s.fromLast(t.ctx, t.c, t.last, b, prefix, opts, fn)
	if err != nil || done {
		return err
	}
	if sc == nil {
		sc = t.s.newScanner(t.ctx, t.c, b, prefix, opts)
	}
	for {
		k, v, ok, err := sc.next()
		if err != nil || !ok {
			return err
		}
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
	}
}

// ---- scans -------------------------------------------------------------------------------

// scanShape is the form of one page's query.
type scanShape struct {
	b      kv.Bucket
	lo, hi byte // 0: no bound; '>', '<' exclusive; '=' inclusive
	desc   bool
}

func (s *Store) scanSQL(sh scanShape) string {
	if q, ok := s.scans.Load(sh); ok {
		return q.(string)
	}
	var w []string
	n := 0
	arg := func() string { n++; return "$" + strconv.Itoa(n) }
	switch sh.lo {
	case '>':
		w = append(w, "k > "+arg())
	case '=':
		w = append(w, "k >= "+arg())
	}
	switch sh.hi {
	case '<':
		w = append(w, "k < "+arg())
	case '=':
		w = append(w, "k <= "+arg())
	}
	q := "SELECT k, v FROM " + s.tables[sh.b]
	if len(w) > 0 {
		q += " WHERE " + strings.Join(w, " AND ")
	}
	q += " ORDER BY k"
	if sh.desc {
		q += " DESC"
	}
	q += " LIMIT " + arg()
	s.scans.Store(sh, q)
	return q
}

// scanner pages through a range of one bucket: a few rows first, more as the caller goes on.
type scanner struct {
	s      *Store
	ctx    context.Context
	c      *pgx.Conn
	b      kv.Bucket
	desc   bool
	lo, hi []byte // the bounds; nil: none
	loOp   byte
	hiOp   byte
	page   int
	buf    []kvp
	i      int
	last   bool // the last page was read
	prefix []byte
}

type kvp struct{ k, v []byte }

const (
	firstPage = 16
	maxPage   = 1024
)

func (s *Store) newScanner(ctx context.Context, c *pgx.Conn, b kv.Bucket, prefix []byte, opts kv.ScanOptions) *scanner {
	sc := &scanner{s: s, ctx: ctx, c: c, b: b, desc: opts.Reverse, page: firstPage, prefix: prefix}
	end := kv.PrefixEnd(prefix)
	if !opts.Reverse {
		lo := prefix
		if opts.From != nil && string(opts.From) > string(prefix) {
			lo = opts.From
		}
		if len(lo) > 0 {
			sc.lo, sc.loOp = lo, '='
		}
		if end != nil {
			sc.hi, sc.hiOp = end, '<'
		}
	} else {
		if len(prefix) > 0 {
			sc.lo, sc.loOp = prefix, '='
		}
		switch {
		case opts.From != nil && (end == nil || string(opts.From) < string(end)):
			sc.hi, sc.hiOp = opts.From, '='
		case end != nil:
			sc.hi, sc.hiOp = end, '<'
		}
	}
	return sc
}

// next returns the next entry, ok false at the end.
func (sc *scanner) next() (k, v []byte, ok bool, err error) {
	if sc.i >= len(sc.buf) {
		if sc.last {
			return nil, nil, false, nil
		}
		if err := sc.fetch(); err != nil {
			return nil, nil, false, err
		}
		if len(sc.buf) == 0 {
			return nil, nil, false, nil
		}
	}
	e := sc.buf[sc.i]
	sc.i++
	return e.k, e.v, true, nil
}

func (sc *scanner) fetch() error {
	if sc.lo != nil && sc.hi != nil {
		if c := strings.Compare(string(sc.lo), string(sc.hi)); c > 0 || c == 0 && (sc.loOp != '=' || sc.hiOp != '=') {
			sc.buf, sc.i, sc.last = nil, 0, true
			return nil
		}
	}
	sh := scanShape{b: sc.b, lo: sc.loOp, hi: sc.hiOp, desc: sc.desc}
	var args []any
	if sc.loOp != 0 {
		args = append(args, sc.lo)
	}
	if sc.hiOp != 0 {
		args = append(args, sc.hi)
	}
	args = append(args, sc.page)
	rows, err := sc.c.Query(sc.ctx, sc.s.scanSQL(sh), args...)
	if err != nil {
		return err
	}
	sc.buf, sc.i = sc.buf[:0], 0
	for rows.Next() {
		raw := rows.RawValues()
		k := append([]byte(nil), raw[0]...)
		v := append([]byte{}, raw[1]...)
		sc.buf = append(sc.buf, kvp{k, v})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(sc.buf) < sc.page {
		sc.last = true
	}
	if n := len(sc.buf); n > 0 {
		if sc.desc {
			sc.hi, sc.hiOp = sc.buf[n-1].k, '<'
		} else {
			sc.lo, sc.loOp = sc.buf[n-1].k, '>'
		}
	}
	sc.page = min(sc.page*4, maxPage)
	return nil
}

// ---- errors ------------------------------------------------------------------------------

// ErrPartialTables is returned by a write transaction into a database that holds some of the
// store's tables but not all: a store with tables dropped, which a write must not take for new.
var ErrPartialTables = errors.New("pgkv: some of the store's tables are missing")

// ErrLockTimeout is wrapped by a Write that waited Options.LockTimeout for the writer lock.
var ErrLockTimeout = errors.New("pgkv: the writer lock was not released in time")

// ErrSessionLost is wrapped by a write transaction whose session ended before it committed
// (a read or write of it failed so, or PostgreSQL said so when asked after a failed Commit):
// nothing of it was stored.
var ErrSessionLost = errors.New("the session holding the writer lock ended before the write was committed, and PostgreSQL rolled the write back with it (PostgreSQL ends a session that holds the lock without a word from its process for longer than its idle timeout — was this process paused? — or the connection failed)")

// ErrCommitUnknown is wrapped by a Commit whose connection failed during the commit when
// PostgreSQL could not then be asked whether it committed.
var ErrCommitUnknown = errors.New("pgkv: the outcome of the commit is unknown")

// Holder describes the session holding the writer lock.
type Holder struct {
	PID         int
	Application string
	State       string
	Held, Idle  time.Duration
}

// LockHolder returns the session holding the writer lock, ok false when none does.
func (s *Store) LockHolder(ctx context.Context) (h Holder, ok bool, err error) {
	err = s.Conn(ctx, func(c *pgx.Conn) error {
		var held, idle float64
		err := c.QueryRow(ctx, `
SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''),
       coalesce(extract(epoch FROM now() - a.xact_start), 0)::float8,
       coalesce(extract(epoch FROM now() - a.state_change), 0)::float8
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = $1 AND l.objid::bigint = $2
LIMIT 1`, (s.opts.LockKey>>32)&0xffffffff, s.opts.LockKey&0xffffffff).Scan(&h.PID, &h.Application, &h.State, &held, &idle)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		h.Held = time.Duration(held * float64(time.Second))
		h.Idle = time.Duration(idle * float64(time.Second))
		return nil
	})
	return h, ok, err
}

// SessionEnded reports whether err ended the session (a lost connection, or a FATAL error
// such as idle_in_transaction_session_timeout) rather than one statement.
func SessionEnded(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Severity == "FATAL" || pe.Severity == "PANIC"
	}
	return true
}

// Code returns the SQLSTATE of err, or "".
func Code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

func ms(d time.Duration) string { return fmt.Sprintf("%d", d.Milliseconds()) }
