package pgkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tidwall/btree"

	"github.com/mql-dev/mql/graphstore/kv"
)

// WriteTx is the write transaction: one SQL transaction holding the writer lock, with its
// writes kept in memory until they are sent (see the package comment).
type WriteTx struct {
	s       *Store
	c       *pgx.Conn
	ov      []*btree.BTreeG[ent] // per bucket: the writes not yet sent
	nbytes  int                  // about what ov holds
	pre     map[string][]byte    // prefetched entries, as of the transaction's start
	last    lasts                // prefetched last entries, as of the transaction's start (those of a bucket written since: left out)
	start   prefetched           // both, never changed (Prefetched)
	read    map[string][]byte    // entries read from the tables (nil: none there)
	missing bool                 // the tables did not exist when the lock was taken
	created bool                 // this transaction created them
	sync    bool                 // commit synchronously, without the flush after
	idle    time.Duration
	xid     int64  // txid_current()
	pid     uint32 // the session's backend
	lsn     string // the WAL insert position once the lock was taken
	flushed bool   // writes were sent before the commit
	done    bool
	kept    bool  // began on the connection an earlier transaction left open
	err     error // a write that failed to reach the tables: the transaction can only end
}

type ent struct {
	k, v []byte
	del  bool
}

func lessEnt(a, b ent) bool { return bytes.Compare(a.k, b.k) < 0 }

// WriteOptions configure one write transaction.
type WriteOptions struct {
	// Synchronous commits with synchronous_commit on, under the lock (an import: no writer
	// waits behind it).
	Synchronous bool
	// IdleTimeout overrides Options.IdleTimeout.
	IdleTimeout time.Duration
	// Before queues statements that run before the transaction begins, in the round trip
	// that takes the lock (each in a transaction of its own: they are committed whatever
	// the lock does).
	Before func(b *pgx.Batch)
	// Locked queues statements that run as soon as the lock is held, in the same round trip.
	// One that fails ends the transaction, and the lock is released as it fails, without
	// waiting for a word from this process: WriteWith returns the error.
	Locked func(b *pgx.Batch)
}

// flushBytes is how much a write transaction holds in memory before it sends it.
const flushBytes = 8 << 20

// Write begins the write transaction with the Store's options.
func (s *Store) Write(ctx context.Context) (kv.WriteTx, error) {
	t, err := s.WriteWith(ctx, WriteOptions{})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// WriteWith begins the write transaction: it waits for the one of this process to end, then
// for the writer lock (at most Options.LockTimeout, then an error wrapping ErrLockTimeout; or
// until ctx ends). Its statements after that do not depend on ctx.
func (s *Store) WriteWith(ctx context.Context, o WriteOptions) (*WriteTx, error) {
	if s.closed.Load() {
		return nil, kv.ErrClosed
	}
	if len(s.opts.Absent) > 0 {
		return nil, errors.New("pgkv: a store opened with Options.Absent is only read")
	}
	select {
	case s.wmu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	t := &WriteTx{s: s, sync: o.Synchronous, idle: o.IdleTimeout, read: map[string][]byte{}}
	if t.idle <= 0 {
		t.idle = s.opts.IdleTimeout
	}
	err := t.begin(ctx, o)
	if err != nil && t.kept && t.c.IsClosed() && ctx.Err() == nil {
		// The kept connection's session had ended while no transaction used it (PostgreSQL
		// restarted, an administrator or a timeout ended it): nothing began on it, so begin
		// once more on a new one rather than fail the first write after a restart.
		closeConn(t.c)
		s.wconn = nil
		t = &WriteTx{s: s, sync: t.sync, idle: t.idle, read: map[string][]byte{}}
		err = t.begin(ctx, o)
	}
	if err != nil {
		failed := t.c != nil && Code(err) != "" && !t.c.IsClosed() // a statement failed: the session is sound
		if t.c != nil && !failed {
			if t.c.IsClosed() || rollback(t.c) != nil {
				closeConn(t.c)
				s.wconn = nil
			}
		}
		// A failed statement left the session in its transaction, which holds nothing (the
		// lock went with the failure): the next batch on the connection rolls it back first,
		// rather than a round trip now.
		<-s.wmu
		return nil, s.lockErr(ctx, err)
	}
	return t, nil
}

// WaitShared waits for the writer lock in shared mode (at most Options.LockTimeout, then an
// error wrapping ErrLockTimeout), which every session waiting so gets at once when the holder
// commits, and runs the statements in queues while it holds it, in a transaction committed
// without waiting for the disk; before queues statements that run first, in the same round
// trip (as WriteOptions.Before). It runs on the write transactions' connection, as Batch.
func (s *Store) WaitShared(ctx context.Context, before, in func(b *pgx.Batch)) error {
	err := s.Batch(ctx, func(b *pgx.Batch) {
		before(b)
		b.Queue("BEGIN")
		b.Queue(`SELECT set_config('lock_timeout', $1, true), set_config('synchronous_commit', 'off', true), pg_advisory_xact_lock_shared(`+s.lockID+`)`,
			ms(s.opts.LockTimeout))
		in(b)
		b.Queue("COMMIT")
	})
	return s.lockErr(ctx, err)
}

// lockErr is the error of a wait for the lock that failed with err.
func (s *Store) lockErr(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case Code(err) == "55P03": // lock_not_available: lock_timeout
		return fmt.Errorf("%w (waited %s): %w", ErrLockTimeout, s.opts.LockTimeout, err)
	}
	return err
}

// Batch runs the statements fn queues on the write transactions' connection, between two
// write transactions (it waits for the one in progress to end): what a caller of
// WriteOptions.Before or Locked does once WriteWith has returned.
func (s *Store) Batch(ctx context.Context, fn func(b *pgx.Batch)) error {
	if s.closed.Load() {
		return kv.ErrClosed
	}
	select {
	case s.wmu <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-s.wmu }()
	if s.wconn == nil || s.wconn.IsClosed() {
		c, err := s.connect(ctx)
		if err != nil {
			return err
		}
		s.wconn = c
	}
	send := func(rb bool) error {
		b := &pgx.Batch{}
		if rb {
			b.Queue("ROLLBACK")
		}
		fn(b)
		return s.wconn.SendBatch(ctx, b).Close()
	}
	var err error
	if s.wconn.PgConn().TxStatus() == 'I' {
		err = send(false)
	} else {
		// The transaction a failed statement left is rolled back in the same round trip,
		// unless a statement of the batch is new to the session: pgx prepares those first,
		// which a failed transaction refuses; then the rollback goes first, on its own.
		err = send(true)
		if Code(err) == "25P02" && !s.wconn.IsClosed() { // in_failed_sql_transaction
			if err = rollback(s.wconn); err == nil {
				err = send(false)
			}
		}
	}
	if err != nil && (Code(err) == "" || s.wconn.IsClosed()) {
		closeConn(s.wconn)
		s.wconn = nil
	}
	return err
}

func rollback(c *pgx.Conn) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, "ROLLBACK")
	return err
}

func (t *WriteTx) begin(ctx context.Context, o WriteOptions) error {
	s := t.s
	t.kept = s.wconn != nil && !s.wconn.IsClosed()
	if !t.kept {
		if s.wconn != nil {
			closeConn(s.wconn)
		}
		c, err := s.connect(ctx)
		if err != nil {
			s.wconn = nil
			return err
		}
		s.wconn = c
	}
	t.c = s.wconn
	t.ov = make([]*btree.BTreeG[ent], len(s.tables))
	for i := range t.ov {
		t.ov[i] = btree.NewBTreeGOptions(lessEnt, btree.Options{NoLocks: true})
	}
	mode := "off"
	if t.sync {
		mode = "on"
	}
	exists := s.exists.Load()
	if t.kept && t.c.PgConn().TxStatus() != 'I' {
		// The transaction a failed statement left (WriteWith, Batch).
		if err := rollback(t.c); err != nil {
			return err
		}
	}
	b := &pgx.Batch{}
	if o.Before != nil {
		o.Before(b)
	}
	b.Queue("BEGIN")
	// The bounds first: a writer is never without them while it holds the lock. SET LOCAL
	// (set_config's true) ends with the transaction.
	// Then the lock; once it holds it, the transaction's id tells, should the connection fail
	// during the COMMIT, whether it committed (Committed), and the WAL position bounds what
	// it reads (Rollback's gate). The columns are evaluated in order.
	b.Queue(`SELECT set_config('lock_timeout', $1, true), set_config('idle_in_transaction_session_timeout', $2, true), set_config('synchronous_commit', $3, true),
	pg_advisory_xact_lock(`+s.lockID+`), txid_current(), pg_backend_pid(), pg_current_wal_insert_lsn()::text`,
		ms(s.opts.LockTimeout), ms(t.idle), mode).QueryRow(func(r pgx.Row) error {
		var v1, v2, v3, v4 any
		return r.Scan(&v1, &v2, &v3, &v4, &t.xid, &t.pid, &t.lsn)
	})
	if o.Locked != nil {
		o.Locked(b)
	}
	n := -1
	var after func(kv.Reader)
	if exists {
		t.pre, t.last = s.queuePrefetch(b)
		if s.opts.Begin != nil {
			after = s.opts.Begin(b, true)
		}
	} else {
		b.Queue(probeSQL, s.tables).QueryRow(func(r pgx.Row) error { return r.Scan(&n) })
	}
	if err := t.c.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	if !exists {
		if n > 0 && n < len(s.tables) {
			// Some tables and not others is a store with tables dropped, never a new one: its
			// commit would write a new store over what the others hold.
			return fmt.Errorf("%w: %d of the store's %d tables exist", ErrPartialTables, n, len(s.tables))
		}
		if n != len(s.tables) {
			t.missing = true
		} else {
			s.exists.Store(true)
			b := &pgx.Batch{}
			t.pre, t.last = s.queuePrefetch(b)
			if s.opts.Begin != nil {
				after = s.opts.Begin(b, true)
			}
			if err := t.c.SendBatch(context.Background(), b).Close(); err != nil {
				return err
			}
		}
	}
	t.start = prefetched{pre: maps.Clone(t.pre), last: slices.Clone(t.last)}
	if after != nil {
		after(t.start)
	}
	return nil
}

// Missing reports whether the tables did not exist when the transaction took the lock: its
// commit creates them.
func (t *WriteTx) Missing() bool { return t.missing }

// PID is the PostgreSQL backend of the transaction's session.
func (t *WriteTx) PID() uint32 { return t.pid }

// XID is the transaction's id (txid_current).
func (t *WriteTx) XID() int64 { return t.xid }

// Prefetched reads the entries of Options.Prefetch as they were when the transaction began;
// every other entry reads as missing.
func (t *WriteTx) Prefetched() kv.Reader { return t.start }

type prefetched struct {
	pre  map[string][]byte
	last lasts
}

func (p prefetched) Get(b kv.Bucket, key []byte) ([]byte, error) { return p.pre[entryKey(b, key)], nil }

// Scan serves only the start of a reverse scan of a prefix (or bucket) of PrefetchLast from
// its end.
func (p prefetched) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	e := p.last.of(b, prefix)
	if e == nil || !opts.Reverse || opts.From != nil {
		return errors.New("pgkv: a prefetched reader scans only the end of a prefix it prefetched")
	}
	if e.k == nil {
		return nil
	}
	_, err := fn(e.k, e.v)
	return err
}

// broke records that a statement of the transaction failed with err, which it can only end
// now, and returns it (wrapping ErrSessionLost if the session ended).
func (t *WriteTx) broke(err error) error {
	if SessionEnded(err) {
		err = fmt.Errorf("%w: %w", ErrSessionLost, err)
	}
	if t.err == nil {
		t.err = err
	}
	return err
}

func (t *WriteTx) usable() error {
	if t.done {
		return kv.ErrClosed
	}
	return t.err
}

// onTables reports whether the tables can be read.
func (t *WriteTx) onTables() bool { return !t.missing || t.created }

// Get returns the value under key in b, as this transaction left it.
func (t *WriteTx) Get(b kv.Bucket, key []byte) ([]byte, error) {
	if err := t.usable(); err != nil {
		return nil, err
	}
	if e, ok := t.ov[b].Get(ent{k: key}); ok {
		if e.del {
			return nil, nil
		}
		return e.v, nil
	}
	k := entryKey(b, key)
	if v, ok := t.pre[k]; ok {
		return v, nil
	}
	if v, ok := t.read[k]; ok {
		return v, nil
	}
	c := t.s.opts.Cache
	if t.sync || t.flushed {
		c = nil // what the tables hold may be this transaction's
	}
	if c != nil {
		if v, ok := c.get(k); ok {
			return v, nil
		}
	}
	if v, ok := t.last.get(b, key); ok {
		return v, nil
	}
	if !t.onTables() {
		return nil, nil
	}
	v, err := getOn(context.Background(), t.c, t.s.get[b], key)
	if err != nil {
		return nil, t.broke(err)
	}
	if c != nil {
		c.put(k, v)
	} else if len(t.read) < 1<<14 {
		t.read[k] = v
	}
	return v, nil
}

// Put stores value under key in b.
func (t *WriteTx) Put(b kv.Bucket, key, value []byte) error {
	if err := t.usable(); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	return t.set(b, ent{k: key, v: value})
}

// Delete removes key from b.
func (t *WriteTx) Delete(b kv.Bucket, key []byte) error {
	if err := t.usable(); err != nil {
		return err
	}
	return t.set(b, ent{k: key, del: true})
}

func (t *WriteTx) set(b kv.Bucket, e ent) error {
	if old, ok := t.ov[b].Set(e); ok {
		t.nbytes -= len(old.k) + len(old.v) + 48
	} else {
		k := entryKey(b, e.k)
		delete(t.pre, k)
		delete(t.read, k)
		t.last = t.last.without(b)
	}
	t.nbytes += len(e.k) + len(e.v) + 48
	if t.nbytes > flushBytes {
		return t.flush()
	}
	return nil
}

// ensureTables creates the tables (and Options.Create's) in a transaction into a database
// without them, in a round trip of their own: a statement is prepared before the batch it is
// in runs, and the tables it names must exist by then.
func (t *WriteTx) ensureTables() error {
	if !t.missing || t.created {
		return nil
	}
	b := &pgx.Batch{}
	for i, name := range t.s.tables {
		pk := "PRIMARY KEY (k)"
		if t.s.schema.Buckets[i].Append {
			pk = "PRIMARY KEY (k) WITH (fillfactor = 100)"
		}
		b.Queue("CREATE TABLE IF NOT EXISTS " + name + " (k bytea NOT NULL, v bytea NOT NULL, " + pk + ")")
	}
	for _, q := range t.s.opts.Create {
		b.Queue(q)
	}
	if err := t.c.SendBatch(context.Background(), b).Close(); err != nil {
		return t.broke(fmt.Errorf("creating the tables: %w", err))
	}
	t.created = true
	return nil
}

// flush sends what the transaction holds to the tables, within the transaction.
func (t *WriteTx) flush() error {
	if err := t.ensureTables(); err != nil {
		return err
	}
	b := &pgx.Batch{}
	t.queueWrites(b, nil)
	if err := t.c.SendBatch(context.Background(), b).Close(); err != nil {
		return t.broke(err)
	}
	for i := range t.ov {
		t.ov[i].Clear()
	}
	t.nbytes = 0
	t.flushed = true
	return nil
}

// Scan calls fn with the keys of b under prefix in order, as this transaction left them.
func (t *WriteTx) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	if err := t.usable(); err != nil {
		return err
	}
	if t.ov[b].Len() == 0 && t.onTables() {
		// Nothing of the bucket written yet: the tables' scan alone, from a prefetched end.
		sc, done, err := t.s.fromLast(context.Background(), t.c, t.last, b, prefix, opts, fn)
		if err != nil || done {
			return err
		}
		if sc == nil {
			sc = t.s.newScanner(context.Background(), t.c, b, prefix, opts)
		}
		for {
			k, v, ok, err := sc.next()
			if err != nil {
				return t.broke(err)
			}
			if !ok {
				return nil
			}
			more, err := fn(k, v)
			if err != nil || !more {
				return err
			}
		}
	}
	var db *scanner
	if t.onTables() {
		db = t.s.newScanner(context.Background(), t.c, b, prefix, opts)
	}
	shape := t.s.newScanner(context.Background(), nil, b, prefix, opts) // the bounds, for the overlay
	ov := newOvIter(t.ov[b].Copy(), shape)
	defer ov.it.Release()
	var dk, dv []byte
	dok := false
	if db != nil {
		var err error
		if dk, dv, dok, err = db.next(); err != nil {
			return t.broke(err)
		}
	}
	for {
		e, eok := ov.cur()
		var k, v []byte
		switch {
		case !eok && !dok:
			return nil
		case eok && dok && bytes.Equal(e.k, dk):
			k, v = e.k, e.v
			if e.del {
				k = nil
			}
			ov.next()
			var err error
			if dk, dv, dok, err = db.next(); err != nil {
				return t.broke(err)
			}
		case eok && (!dok || (bytes.Compare(e.k, dk) < 0) != opts.Reverse):
			k, v = e.k, e.v
			if e.del {
				k = nil
			}
			ov.next()
		default:
			k, v = dk, dv
			var err error
			if dk, dv, dok, err = db.next(); err != nil {
				return t.broke(err)
			}
		}
		if k == nil {
			continue
		}
		more, err := fn(k, v)
		if err != nil || !more {
			return err
		}
	}
}

// ovIter walks the overlay of one bucket within a scanner's bounds.
type ovIter struct {
	it btree.IterG[ent]
	sc *scanner
	ok bool
}

func newOvIter(tr *btree.BTreeG[ent], sc *scanner) *ovIter {
	o := &ovIter{it: tr.Iter(), sc: sc}
	if !sc.desc {
		if sc.lo != nil {
			o.ok = o.it.Seek(ent{k: sc.lo})
		} else {
			o.ok = o.it.First()
		}
		return o
	}
	if sc.hi != nil {
		o.ok = o.it.Seek(ent{k: sc.hi})
		switch {
		case !o.ok:
			o.ok = o.it.Last()
		case bytes.Compare(o.it.Item().k, sc.hi) > 0 || sc.hiOp == '<' && bytes.Equal(o.it.Item().k, sc.hi):
			o.ok = o.it.Prev()
		}
	} else {
		o.ok = o.it.Last()
	}
	return o
}

func (o *ovIter) cur() (ent, bool) {
	if !o.ok {
		return ent{}, false
	}
	e := o.it.Item()
	sc := o.sc
	if !sc.desc && sc.hi != nil {
		if c := bytes.Compare(e.k, sc.hi); c > 0 || c == 0 && sc.hiOp == '<' {
			o.ok = false
			return ent{}, false
		}
	}
	if sc.desc && sc.lo != nil && bytes.Compare(e.k, sc.lo) < 0 {
		o.ok = false
		return ent{}, false
	}
	return e, true
}

func (o *ovIter) next() {
	if o.sc.desc {
		o.ok = o.it.Prev()
	} else {
		o.ok = o.it.Next()
	}
}

// maxStatementRows and maxStatementBytes bound one statement of a write.
const (
	maxStatementRows  = 20000
	maxStatementBytes = 4 << 20
)

// queueWrites queues the statements that store what the overlay holds: one statement for
// all the buckets of an ordinary transaction, each bucket's puts as two unnested arrays and
// its deletes as one; the last one also runs also's statements.
func (t *WriteTx) queueWrites(b *pgx.Batch, also []Part) {
	var sql strings.Builder
	var args []any
	parts, rows, size := 0, 0, 0
	end := func() {
		if parts == 0 {
			return
		}
		sql.WriteString(" SELECT 1")
		b.Queue(sql.String(), args...)
		sql.Reset()
		args = nil
		parts, rows, size = 0, 0, 0
	}
	part := func(text string, a ...any) {
		if parts == 0 {
			sql.WriteString("WITH ")
		} else {
			sql.WriteString(", ")
		}
		sql.WriteString("w" + strconv.Itoa(parts) + " AS (" + text + ")")
		parts++
		args = append(args, a...)
	}
	param := func(i int) string { return "$" + strconv.Itoa(len(args)+i) }
	for bi, tr := range t.ov {
		if tr.Len() == 0 {
			continue
		}
		table := t.s.tables[bi]
		var ks, vs, ds [][]byte
		flushPart := func() {
			if len(ks) > 0 {
				part("INSERT INTO "+table+" (k, v) SELECT * FROM unnest("+param(1)+"::bytea[], "+param(2)+"::bytea[]) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", ks, vs)
			}
			if len(ds) > 0 {
				part("DELETE FROM "+table+" WHERE k = ANY("+param(1)+"::bytea[])", ds)
			}
			ks, vs, ds = nil, nil, nil
		}
		tr.Scan(func(e ent) bool {
			if e.del {
				ds = append(ds, e.k)
			} else {
				ks, vs = append(ks, e.k), append(vs, e.v)
			}
			rows++
			size += len(e.k) + len(e.v)
			if rows >= maxStatementRows || size >= maxStatementBytes {
				flushPart()
				end()
			}
			return true
		})
		flushPart()
	}
	for _, p := range also {
		text, a := p(param)
		part(text, a...)
	}
	end()
}

// Part is a data-modifying statement (INSERT, UPDATE or DELETE without RETURNING) run as a
// part of the statement that writes the buckets: it writes its text naming its i-th
// parameter (from 1) param(i), and returns its arguments.
type Part func(param func(i int) string) (text string, args []any)

// CommitOptions add to a commit.
type CommitOptions struct {
	// Also are statements that run in the statement writing the transaction's last entries:
	// they cost no statement of their own under the lock.
	Also []Part
	// Extra queues statements that commit with the transaction, after its writes.
	Extra func(b *pgx.Batch)
	// After queues statements that run after the COMMIT, out of the lock, in a small
	// transaction of their own that commits without waiting for the disk, just before the one
	// whose flush makes the write durable (in the transaction itself, before its COMMIT, when
	// it is synchronous). A NOTIFY there can be heard before the write is durable: a snapshot
	// of this package waits for that. (A transaction that notifies holds PostgreSQL's lock
	// that orders notifying commits until its commit returns; committed synchronously, it
	// would hold it through its flush, and the writers' flushes would follow one another
	// instead of being shared.)
	After func(b *pgx.Batch)
	// Synchronous commits with synchronous_commit on, whatever the transaction began with:
	// PostgreSQL releases the lock only once the commit is durable, so that a session waiting
	// for the lock (in shared mode too) finds what it committed durable when it gets it.
	Synchronous bool
	// Witness, if set, tells whether the transaction committed from what it wrote (a row
	// with its mark), on a connection of another session. Committed asks it when
	// PostgreSQL reports the transaction committed, or no longer knows it: after a crash of
	// the server a transaction id can be given again.
	Witness func(ctx context.Context, c *pgx.Conn) (bool, error)
}

// Commit stores the transaction.
func (t *WriteTx) Commit(ctx context.Context) error { return t.CommitWith(ctx, CommitOptions{}) }

// CommitWith sends what the transaction holds, the statements of o.Extra and the COMMIT in
// one round trip, followed (unless the transaction is synchronous) by o.After's statements
// and a small synchronous commit whose flush makes it durable. It returns nil once the transaction is durable. On an
// error nothing was stored, unless the error wraps ErrCommitUnknown: the connection failed
// during the commit and PostgreSQL could not be asked (see Store.Committed). An error that
// wraps ErrSessionLost says the session ended first and PostgreSQL rolled it back.
func (t *WriteTx) CommitWith(ctx context.Context, o CommitOptions) (err error) {
	if t.done {
		return kv.ErrClosed
	}
	if c := t.s.opts.Cache; c != nil {
		defer func() {
			if err != nil {
				c.Reset()
			}
		}()
	}
	if t.err != nil {
		err := t.err
		t.Rollback()
		return err
	}
	s := t.s
	defer t.finish()
	if err := t.ensureTables(); err != nil {
		return t.failed(ctx, err, false, o)
	}
	b := &pgx.Batch{}
	t.queueWrites(b, o.Also)
	if o.Extra != nil {
		o.Extra(b)
	}
	if hook := s.beforeCommit.Load(); hook != nil {
		if err := t.c.SendBatch(context.Background(), b).Close(); err != nil {
			return t.failed(ctx, err, false, o)
		}
		(*hook)(t)
		b = &pgx.Batch{}
	}
	sync := t.sync || o.Synchronous
	if sync && !t.sync {
		b.Queue("SELECT set_config('synchronous_commit', 'on', true)")
	}
	if sync && o.After != nil {
		o.After(b)
	}
	committed := false
	b.Queue("COMMIT").Exec(func(ct pgconn.CommandTag) error {
		committed = ct.String() == "COMMIT"
		return nil
	})
	if !sync {
		if o.After != nil {
			b.Queue("BEGIN")
			b.Queue("SELECT set_config('synchronous_commit', 'off', true)")
			o.After(b)
			b.Queue("COMMIT")
		}
		// Its flush covers everything before it in the WAL.
		b.Queue(durableSQL)
	}
	err = t.c.SendBatch(context.Background(), b).Close()
	if err == nil && !committed {
		err = errors.New("pgkv: PostgreSQL rolled the transaction back at its COMMIT")
	}
	if err != nil {
		err = t.failed(ctx, err, committed, o)
	}
	if c := s.opts.Cache; c != nil && !t.sync {
		switch {
		case err != nil || t.flushed:
			c.Reset()
		default:
			for b, tr := range t.ov {
				tr.Scan(func(e ent) bool {
					var v []byte
					if !e.del {
						v = e.v
					}
					c.put(entryKey(kv.Bucket(b), e.k), v)
					return true
				})
			}
		}
	}
	return err
}

// Written lists the entries the transaction wrote, with the values of those up to maxValue
// bytes long; ok false when it sent some before its commit and no longer knows them all.
func (t *WriteTx) Written(maxValue int) (ws []Write, ok bool) {
	if t.flushed {
		return nil, false
	}
	for b, tr := range t.ov {
		tr.Scan(func(e ent) bool {
			w := Write{Key: entryKey(kv.Bucket(b), e.k), Del: e.del, Known: e.del || len(e.v) <= maxValue}
			if w.Known && !e.del {
				w.Value = e.v
			}
			ws = append(ws, w)
			return true
		})
	}
	return ws, true
}

// failed sorts out a commit whose round trip failed with err; committed says the COMMIT's
// answer arrived.
func (t *WriteTx) failed(ctx context.Context, err error, committed bool, o CommitOptions) error {
	s := t.s
	if !SessionEnded(err) {
		if committed {
			// The flush or the announcement after the COMMIT failed, which may have left the
			// session in their transaction: make it durable another way.
			if t.c.PgConn().TxStatus() != 'I' && rollback(t.c) != nil {
				closeConn(t.c)
				s.wconn = nil
			}
			if ferr := s.flushNew(ctx); ferr != nil {
				return fmt.Errorf("%w: the transaction committed, and making it durable failed: %v", ErrCommitUnknown, ferr)
			}
			return nil
		}
		// A statement failed, on a live session: PostgreSQL skipped the rest and the COMMIT.
		if rollback(t.c) != nil {
			closeConn(t.c)
			s.wconn = nil
		}
		return err
	}
	closeConn(t.c)
	s.wconn = nil
	if committed {
		if ferr := s.flushNew(ctx); ferr == nil {
			return nil
		}
	}
	// The COMMIT may have reached PostgreSQL and only its answer been lost, or the session
	// may have ended before it (a process paused while it held the lock loses it): ask.
	ok, qerr := s.Committed(ctx, t.xid, o.Witness)
	switch {
	case qerr != nil:
		return fmt.Errorf("%w: %w (asking PostgreSQL whether it committed: %v)", ErrCommitUnknown, err, qerr)
	case ok:
		return nil
	}
	return fmt.Errorf("%w: %w", ErrSessionLost, err)
}

// flushNew makes the WAL durable up to now, on a new session.
func (s *Store) flushNew(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer closeConn(c)
	return flushOn(ctx, c)
}

func flushOn(ctx context.Context, c *pgx.Conn) error {
	b := &pgx.Batch{}
	b.Queue("BEGIN READ WRITE")
	b.Queue("SELECT set_config('synchronous_commit', 'on', true)")
	b.Queue(flushSQL)
	b.Queue("COMMIT")
	return c.SendBatch(ctx, b).Close()
}

// QueueFlush queues the statement whose commit, in a transaction with synchronous_commit on,
// waits until the WAL is flushed past it, and so past every transaction committed before it.
func QueueFlush(b *pgx.Batch) { b.Queue(flushSQL) }

// Committed asks PostgreSQL, on a session of its own, whether the transaction xid committed,
// and if it did makes it durable. A session whose client is gone may still be finishing, or
// idle until IdleTimeout ends it: it waits that long (plus 5 s) for the answer.
func (s *Store) Committed(ctx context.Context, xid int64, witness func(ctx context.Context, c *pgx.Conn) (bool, error)) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.IdleTimeout+5*time.Second)
	defer cancel()
	var last error
	for {
		if err := ctx.Err(); err != nil {
			if last == nil {
				last = err
			}
			return false, last
		}
		c, err := s.connect(ctx)
		if err != nil {
			last = err
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		ok, done, err := committedOn(ctx, c, xid, witness)
		closeConn(c)
		if done {
			return ok, err
		}
		last = err
		sleep(ctx, 50*time.Millisecond)
	}
}

// committedOn asks once; done false: ask again.
func committedOn(ctx context.Context, c *pgx.Conn, xid int64, witness func(ctx context.Context, c *pgx.Conn) (bool, error)) (ok, done bool, err error) {
	var status *string
	if err := c.QueryRow(ctx, `SELECT txid_status($1)`, xid).Scan(&status); err != nil {
		if Code(err) == "22023" { // "transaction ID … is in the future": a crash lost it
			return false, true, nil
		}
		return false, false, err
	}
	switch {
	case status != nil && *status == "in progress":
		return false, false, fmt.Errorf("transaction %d is still in progress", xid)
	case status != nil && *status == "aborted":
		return false, true, nil
	case witness != nil:
		ok, err := witness(ctx, c)
		if err != nil {
			return false, false, err
		}
		if !ok {
			return false, true, nil
		}
	case status == nil:
		return false, true, fmt.Errorf("PostgreSQL no longer knows transaction %d", xid)
	}
	if err := flushOn(ctx, c); err != nil {
		return false, false, err
	}
	return true, true, nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// Rollback ends the transaction without storing anything, then waits (a little) until the
// WAL is flushed past what it read: its caller may act on what it read, such as a refusal.
func (t *WriteTx) Rollback() {
	if t.done {
		return
	}
	defer t.finish()
	s := t.s
	ctx, cancel := context.WithTimeout(context.Background(), t.idle+5*time.Second)
	defer cancel()
	if t.c.IsClosed() {
		s.wconn = nil
		return
	}
	b := &pgx.Batch{}
	b.Queue("ROLLBACK")
	flushed := true
	if t.lsn != "" {
		b.Queue(`SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, t.lsn).QueryRow(func(r pgx.Row) error { return r.Scan(&flushed) })
	}
	if err := t.c.SendBatch(ctx, b).Close(); err != nil {
		closeConn(t.c)
		s.wconn = nil
		return
	}
	if !flushed {
		// WAL that no commit follows (aborted transactions') may stay unflushed: after a
		// moment, flush it rather than wait.
		sleep(ctx, time.Millisecond)
		var ok bool
		err := t.c.QueryRow(ctx, `SELECT pg_current_wal_flush_lsn() >= $1::pg_lsn`, t.lsn).Scan(&ok)
		if err == nil && !ok {
			err = flushOn(ctx, t.c)
		}
		if err != nil {
			closeConn(t.c)
			s.wconn = nil
		}
	}
}

func (t *WriteTx) finish() {
	if t.done {
		return
	}
	t.done = true
	t.ov, t.pre, t.read = nil, nil, nil
	<-t.s.wmu
}
