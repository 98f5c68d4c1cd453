// Package mql is an embedded graph-database memory for AI agents. Agents write typed claims
// into a shared graph; the graph keeps every version, who said it, from what evidence, with what
// standing, and what was derived from it, and answers what is true now, why it is believed, who
// revoked it and what must be reviewed now that it changed.
//
// Open a store with a data source name ("memory:", a bbolt file path, or "postgres://…"),
// write with Assert, Revoke, Confirm, Derive and Review, and read with Live, Find, Why, Impact
// and the rest, as the owner or, through As, as one principal who sees only what it may see.
package mql

import (
	"context"
	"fmt"
	"time"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// Options configure Open.
type Options struct {
	// Owner names the owner principal when the store is created ("owner" if empty). The owner
	// holds every right. Ignored for an existing store, which keeps its own.
	Owner string
	// Strict makes asserting need the assert right, when the store is created.
	Strict bool
	// Clock is the source of transaction time and of "now" for expiry and decay (time.Now if
	// nil). Simulations and tests set it. Reads and writes call it from their own goroutines,
	// so it must be safe for concurrent use, as time.Now is.
	Clock func() time.Time
	// OpenTimeout bounds the wait for a bbolt file that another process holds (1s if zero).
	OpenTimeout time.Duration
	// MustExist makes Open fail with ErrNoStore instead of creating a store, for a caller that
	// only reads: a bbolt path that does not exist, an empty file, a bbolt file that is not an
	// mql store, or a PostgreSQL database without mql's tables. Nothing is created. A memory:
	// store always exists.
	MustExist bool
	// CacheBytes bounds the cache of decoded records and index entries a process keeps across
	// reads (128 MiB if zero). Nothing else a DB holds in memory grows with the store.
	CacheBytes int
	// WriteLockTimeout bounds, on PostgreSQL, how long a write waits for another process's
	// write to end (10s if zero); the write then fails with an error wrapping ErrInUse that
	// names the process holding the writer lock. Reads never wait.
	WriteLockTimeout time.Duration
	// WriteIdleTimeout bounds, on PostgreSQL, how long this process may hold the writer lock
	// without talking to the server (5s if zero): past it PostgreSQL ends the session, rolls
	// the write back (the write fails; nothing of it is stored) and frees the lock, so a
	// paused or hung process cannot block the other writers for longer.
	WriteIdleTimeout time.Duration
	// OnCommit, if set, is told of every group commit this DB makes, when it ends: for
	// metrics (mql serve --metrics). It runs with writers waiting: it must be quick and must
	// not call the DB.
	OnCommit func(CommitInfo)
}

// CommitInfo is what one group commit did: the transactions it committed (several writers
// that arrive together share one commit), how long it waited for the writer lock (on
// PostgreSQL, another process's write), how long it took until durable, and whether it
// failed (no transaction committed).
type CommitInfo = graphstore.Commit

// DB is an open mql store. It is safe for concurrent use.
//
// A DB reads as its Reader does, as the owner and of the newest state: Live, Find, Why and
// the other reads are a DB's methods too, and As, AsOf and AsOfTx return a narrower Reader.
type DB struct {
	reads
	store *graphstore.Store
	clock func() time.Time
}

// Open opens or creates the store named by dsn: "memory:" for a scratch store, a file path or
// "bbolt:PATH" for the embedded default, or "postgres://…" for a memory shared by many
// processes.
//
// A non-empty Owner must be a valid principal name (see CheckName); otherwise Open returns
// ErrBadReference and opens nothing.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	if opts.Owner != "" {
		opts.Owner = nfc(opts.Owner)
		if err := CheckName("owner", opts.Owner); err != nil {
			return nil, err
		}
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	s, err := graphstore.Open(ctx, dsn, graphstore.Options{
		Owner:            opts.Owner,
		Strict:           opts.Strict,
		Clock:            clock,
		OpenTimeout:      opts.OpenTimeout,
		MustExist:        opts.MustExist,
		CacheBytes:       opts.CacheBytes,
		WriteLockTimeout: opts.WriteLockTimeout,
		WriteIdleTimeout: opts.WriteIdleTimeout,
		OnCommit:         opts.OnCommit,
		Requests:         requestBuilds{},
	})
	if err != nil {
		return nil, err
	}
	db := &DB{store: s, clock: clock}
	db.reads.db = db
	return db, nil
}

// Close releases the store.
func (db *DB) Close() error { return db.store.Close() }

// Backend names the storage backend: "memory", "bbolt" or "postgres".
func (db *DB) Backend() string { return db.store.Backend() }

// Created reports whether Open created the store (it did not exist, or held nothing, and Open
// wrote its genesis). A memory: store is always created.
func (db *DB) Created() bool { return db.store.Created() }

// FilePath is the file that a bbolt DSN (a plain path or bbolt:PATH) names, and "" for the
// other backends. Callers use it to recognise the store's file, e.g. not to write over it.
func FilePath(dsn string) string {
	p, _ := graphstore.FilePath(dsn)
	return p
}

// Owner is the name of the store's owner principal.
func (db *DB) Owner() string { return db.store.Meta().Owner }

// QuadCount is the number of quads of the store's graph (see Graph): what an owner's export
// writes. It reads every transaction.
func (db *DB) QuadCount(ctx context.Context) (int64, error) {
	n, err := db.store.QuadCount(ctx)
	return n, err
}

// Writable returns the error a write would get now for the store's state, or nil:
// ErrDamaged once the store is known to be damaged (a read met damage, a check recorded its
// verdict in the file, or the bbolt file is, now, truncated under the store or without a
// valid meta page), ErrClosed after Close. It writes nothing and reads little (on bbolt, the
// file's size and two meta pages): what a readiness probe can afford.
func (db *DB) Writable() error { return db.store.Writable() }

// Size is how many bytes the store takes where it is kept: on bbolt its file and write-ahead
// log on disk, on PostgreSQL its tables with their indexes (pg_total_relation_size), on the
// memory store 0. It reads no record.
func (db *DB) Size(ctx context.Context) (int64, error) {
	n, err := db.store.Size(ctx)
	return n, err
}

// Head is the id of the last committed transaction.
func (db *DB) Head(ctx context.Context) (int64, error) {
	var head int64
	err := db.store.Read(ctx, func(ix *index.Index) error {
		head = int64(ix.Head())
		return nil
	})
	return head, err
}

// Reader makes reads. The zero options read the newest state as the owner; As, AsOf and AsOfTx
// narrow it. A Reader is a value: narrowing returns a new one.
type Reader struct{ reads }

// reads holds a Reader's options and has its methods, so that a DB, which embeds it, has them
// too without a second declaration of each.
type reads struct {
	db       *DB
	as       string
	asOfTx   int64
	asOfTime time.Time
	asOfSet  bool      // asOfTime is set (the zero time is a time too: before every store)
	tx       *Tx       // reads inside a transaction: its pending state (Tx.Reader)
	run      string    // ForRun: record what each read serves to this run
	mark     *readMark // set by view: what a read for a run read at
}

// Reader returns a reader of the newest state, as the owner.
func (db *DB) Reader() Reader { return Reader{db.reads} }

// As returns a reader that sees only what principal may see.
func (r reads) As(principal string) Reader { r.as = nfc(principal); return Reader{r} }

// AsOf returns a reader of the store as it was at time t.
func (r reads) AsOf(t time.Time) Reader {
	r.asOfTime, r.asOfSet, r.asOfTx = t, true, 0
	return Reader{r}
}

// AsOfTx returns a reader of the store as it was right after transaction id.
func (r reads) AsOfTx(id int64) Reader {
	r.asOfTx, r.asOfTime, r.asOfSet = id, time.Time{}, false
	return Reader{r}
}

// view runs fn on a consistent view: a snapshot of the newest committed state, or inside a
// transaction its writer's handle.
func (r reads) view(ctx context.Context, fn func(v *index.View) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if r.tx != nil {
		// Inside a transaction: its writer's handle, which the transaction's own goroutine
		// reads (only the writer changes it meanwhile).
		if r.tx.ended || r.tx.tx == nil {
			return ErrTxDone
		}
		return r.viewOf(r.tx.ix, r.tx.tx.Time, fn)
	}
	err := r.db.store.Read(ctx, func(ix *index.Index) error {
		if err := r.viewOf(ix, r.db.clock(), fn); err != nil {
			return viewError{err}
		}
		return nil
	})
	if ve, ok := err.(viewError); ok {
		return ve.err
	}
	if err != nil {
		return err
	}
	return nil
}

// viewError is the error of a view's function, which the store returns as it is: told from
// the store's own, it is returned unchanged.
type viewError struct{ err error }

func (e viewError) Error() string { return e.err.Error() }

func (r reads) viewOf(ix *index.Index, now time.Time, fn func(v *index.View) error) error {
	asOf := ix.Head()
	switch {
	case r.asOfTx != 0:
		if r.asOfTx < 1 || record.TxID(r.asOfTx) > ix.Head() {
			return fmt.Errorf("as of tx %d: %w: transactions run from 1 to %d", r.asOfTx, ErrNotFound, ix.Head())
		}
		asOf = record.TxID(r.asOfTx)
		now = ix.TxTime(asOf)
	case r.asOfSet:
		asOf = ix.TxAt(r.asOfTime)
		if asOf == 0 {
			return fmt.Errorf("as of %s: %w: the store was created at %s", r.asOfTime.UTC().Format(time.RFC3339), ErrNotFound, ix.TxTime(1).Format(time.RFC3339))
		}
		now = r.asOfTime
	}
	if r.mark != nil {
		r.mark.at, r.mark.owner = asOf, ix.Meta().Owner
	}
	viewer := ""
	if r.as != "" {
		if v := ix.View(asOf, now, ""); v.Principal(r.as) == nil {
			return fmt.Errorf("as %s: %w: record it with `principal %s agent` first", r.as, ErrUnknownPrincipal, r.as)
		}
		viewer = r.as
	}
	return fn(ix.View(asOf, now, viewer))
}
