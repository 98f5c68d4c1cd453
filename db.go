package mql

import (
	"context"
	"encoding/json"
	"errors"
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

// Subscribe returns a channel that receives a signal after new transactions become readable
// (committed by this process, or, on PostgreSQL, loaded from others by a read or Head), and a
// function that ends the subscription. Signals coalesce: on one, read Events up to the head.
func (db *DB) Subscribe() (<-chan struct{}, func()) { return db.store.Subscribe() }

// HasPrincipal reports whether name is a recorded principal.
func (db *DB) HasPrincipal(ctx context.Context, name string) (bool, error) {
	found := false
	err := db.store.Read(ctx, func(ix *index.Index) error {
		found = ix.View(ix.Head(), db.clock(), "").Principal(name) != nil
		return nil
	})
	return found, err
}

// write runs build against the newest state under the store's write lock and commits what it
// recorded as one transaction. If build fails, nothing is written. A build that finds its
// record there already (rc.Unchanged) writes nothing either, and its receipt names the
// transaction that recorded it.
func (db *DB) write(ctx context.Context, by string, build func(v *index.View, tx *record.Tx, rc *Receipt) error) (Receipt, error) {
	return db.writeRequest(ctx, by, build, nil)
}

// writeRequest is write for a write that, on PostgreSQL, another process may build in this
// one's place (req, see requests.go); nil: this process builds it.
func (db *DB) writeRequest(ctx context.Context, by string, build func(v *index.View, tx *record.Tx, rc *Receipt) error, req *graphstore.Request) (Receipt, error) {
	by = nfc(by)
	var rc Receipt
	local := func(ix *index.Index, tx *record.Tx) error { return runBuild(ix, tx, by, build, &rc) }
	var tx *record.Tx
	var remote *graphstore.Remote
	var err error
	if req != nil {
		tx, remote, err = db.store.WriteRequest(ctx, by, local, *req)
	} else {
		tx, err = db.store.Write(ctx, by, local)
	}
	if remote != nil {
		// Another process built it: the receipt came back with its outcome.
		rc = Receipt{}
		if jerr := json.Unmarshal(remote.Result, &rc); jerr != nil && err == nil {
			err = fmt.Errorf("%w: the receipt of a write another process built does not decode: %v", ErrStorage, jerr)
		}
		if err == nil {
			rc.Tx, rc.At = int64(remote.Tx), remote.Time
		}
	} else if err == nil {
		rc.Tx, rc.At = int64(tx.ID), tx.Time
	}
	if errors.Is(err, errUnchanged) {
		return rc, nil
	}
	if err != nil {
		return Receipt{}, err
	}
	return rc, nil
}

// runBuild runs a write's build as made by by: the principal must be recorded, and a record
// already there is errUnchanged.
func runBuild(ix *index.Index, tx *record.Tx, by string, build func(v *index.View, tx *record.Tx, rc *Receipt) error, rc *Receipt) error {
	v := ix.View(0, tx.Time, "")
	if err := checkWriter(v, by); err != nil {
		return err
	}
	if err := build(v, tx, rc); err != nil {
		return err
	}
	if rc.Unchanged {
		return errUnchanged
	}
	return nil
}

// errUnchanged aborts a write whose record exists already; it never reaches the caller.
var errUnchanged = errors.New("unchanged")

// checkWriter checks that by names a recorded principal.
func checkWriter(v *index.View, by string) error {
	if err := checkName("principal", by); err != nil {
		return err
	}
	if v.Principal(by) == nil {
		return unknownPrincipal(by)
	}
	return nil
}

// AddPrincipal records a principal.
func (db *DB) AddPrincipal(ctx context.Context, s PrincipalSpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindPrincipal, s))
}

// Grant gives a right over a scope.
func (db *DB) Grant(ctx context.Context, s GrantSpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindGrant, s))
}

// Assert records a claim. It supersedes the key's live claim when its kind ranks equal or
// higher; otherwise it is recorded as contested (or, if it agrees with the live claim, filed as
// corroborating evidence that is never live).
func (db *DB) Assert(ctx context.Context, s AssertSpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindAssert, s))
}

// AssertBatch records many claims in one transaction made by by, as if each were asserted after
// the one before it: all of them or, if any is refused, none. Each spec keeps its own asserter.
// It is the fast path for bulk loads: one commit, one sync.
func (db *DB) AssertBatch(ctx context.Context, by string, specs []AssertSpec) ([]Receipt, error) {
	var out []Receipt
	rc, err := db.write(ctx, by, func(v *index.View, tx *record.Tx, _ *Receipt) error {
		p := newPending(v)
		out = out[:0]
		for i, s := range specs {
			s = s.norm()
			if v.Principal(s.By) == nil {
				return fmt.Errorf("claim %d: %w", i+1, unknownPrincipal(s.By))
			}
			c, liveKind, err := p.buildClaim(tx, s)
			if err != nil {
				return fmt.Errorf("claim %d (%s.%s): %w", i+1, s.Subject, s.Predicate, err)
			}
			rc := claimReceipt(c, tx)
			rc.Note = rankNote(c, liveKind, len(s.Sources) > 0)
			out = append(out, rc)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Tx, out[i].At = rc.Tx, rc.At
	}
	return out, nil
}

// Revoke hard-invalidates a claim version. A principal may revoke its own claims; revoking
// another's needs the revoke right on its key.
func (db *DB) Revoke(ctx context.Context, s RevokeSpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindRevoke, s))
}

// Confirm records that a user confirms the live claim of a key; it ranks Confirmed from now on.
func (db *DB) Confirm(ctx context.Context, s ConfirmSpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindConfirm, s))
}

// Derive records a new version of an artifact. Its inputs are pinned to exact versions.
func (db *DB) Derive(ctx context.Context, s DeriveSpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindDerive, s))
}

// Review records that By looked at an artifact again; it clears "needs review" until one of
// its inputs changes again.
func (db *DB) Review(ctx context.Context, s ReviewSpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindReview, s))
}

// SetDecay declares a half-life for a predicate from now on.
func (db *DB) SetDecay(ctx context.Context, s DecaySpec) (Receipt, error) {
	s = s.norm()
	return db.writeRequest(ctx, s.By, s.build, request(kindDecay, s))
}

// Outcome records how a run ended: succeeded, failed, or declined (the agent said it lacked
// the evidence to act). A run may record several outcomes; the last one counts.
func (db *DB) Outcome(ctx context.Context, s OutcomeSpec) (Receipt, error) {
	s = s.norm()
	return db.write(ctx, s.By, s.build)
}
