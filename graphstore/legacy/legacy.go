// Package legacy reads the stores of earlier formats (docs/FORMAT.md, "Stores of earlier
// formats"), read-only, so that `mql migrate OLD NEW` can convert them: those of the mql before
// the storage rewrite, below, and those of the key-value formats before the text index
// (mql-kv/1, mql-kv/2), which graphstore.ReadEarlier reads and checks.
//
// That mql kept every record as Cayley quads (about 20 a claim) and a cache of decoded
// transactions beside them:
//
//   - a bbolt file: Cayley's key-value quad store (buckets "log", "sp", "ops", "meta" and the
//     value buckets "v??"), written through hidalgo's bbolt driver with Cayley's bloom filter
//     off, plus mql's gob snapshot in the bucket "mql.snapshot";
//   - a PostgreSQL database: Cayley's SQL tables quads and nodes, plus mql's gob log in the
//     table mql_snapshot.
//
// The quads are the source of truth; the gob snapshot is only a cache of them. The old Open
// trusted it after checking its two ends against the quads and rebuilding an in-memory index
// of every transaction from it, which holds the whole history in memory. Read reads the
// quads instead, one transaction at a time (bbolt: through each transaction's node and the
// subjects it wrote, as the old Open read the transactions after its snapshot; PostgreSQL: in
// one ordered query), decodes each with codec.DecodeTx (which checks that the quads are exactly
// the canonical encoding of what they decode to) and hands it on. The snapshot is never read.
//
// Nothing is written: the bbolt file is opened read-only under a shared lock (an old mql
// holding it exclusively makes Read fail with graphstore.ErrInUse, and no old mql can
// write while it reads), and PostgreSQL is read in one READ ONLY, REPEATABLE READ transaction
// that holds the old writers' advisory lock in shared mode.
//
// A damaged store is reported, with what is wrong, instead of being read in part: before the
// first transaction, the bbolt file's pages are checked with bounds-checked reads before bbolt
// maps the file (meta pages, freelist, every page in use: the walk of graphstore's `mql check`,
// which covers what bbolt's own check does) and so is Cayley's log of values and quads; on
// PostgreSQL, every value must have the hash it is stored under; while reading, every
// transaction must decode; after the last, every quad the store holds must have been read in
// some transaction. An error wrapping graphstore.ErrDamaged may therefore come after fn has
// seen every transaction: a caller must keep nothing of what fn was given unless Read
// returned nil.
package legacy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/record"
)

// ErrNotOld is wrapped by the error for a store that is not of an earlier format: a store
// already in mql's current format, or (with graphstore.ErrNoStore) no mql store at all.
var ErrNotOld = errors.New("not a store of an earlier mql format")

// Options tune Read.
type Options struct {
	// OpenTimeout bounds the wait for a bbolt file held by an old mql, and for PostgreSQL
	// writers of the old mql to finish their write. Default 1s (bbolt), 10s (PostgreSQL).
	OpenTimeout time.Duration
}

// Summary is what Read read.
type Summary struct {
	Backend      string // "bbolt" or "postgres"
	Transactions int
	Claims       int
	Quads        int  // every quad of a store of Cayley's quads, each read in its transaction (0 for a key-value store)
	Snapshot     bool // the store has a gob snapshot (ignored: the quads are read)
}

// Read calls fn with every transaction of the store dsn of an earlier format (a bbolt file
// path, bbolt:PATH, or postgres://…), in id order from the genesis, returns nil only if the
// whole store was read and is sound (see the package comment), and says what it read. An
// error returned by fn ends the read and is returned as it is.
func Read(ctx context.Context, dsn string, opts Options, fn func(*record.Tx) error) (Summary, error) {
	if err := ctx.Err(); err != nil {
		return Summary{}, err
	}
	switch {
	case dsn == "memory:" || dsn == "memory":
		return Summary{}, failure("no such store: memory: holds no store of an earlier mql (a memory: store starts empty and is gone when its process ends); name the file or database of the old store", graphstore.ErrNoStore)
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		sum, err := readPostgres(ctx, dsn, opts, fn)
		if err == errKV {
			return readKV(ctx, dsn, "the database "+graphstore.RedactDSN(dsn), "postgres", opts, fn)
		}
		return sum, err
	}
	if path, ok := graphstore.FilePath(dsn); ok {
		sum, err := readBBolt(ctx, path, opts, fn)
		if err == errKV {
			return readKV(ctx, dsn, path, "bbolt", opts, fn)
		}
		return sum, err
	}
	return Summary{}, fmt.Errorf("cannot read %q: %w; name a bbolt file (a path or bbolt:PATH) or postgres://user@host:port/db", dsn, graphstore.ErrBadDSN)
}

// errKV is readBBolt's and readPostgres's error for a store of mql's key-value formats, which
// Read reads through graphstore instead (readKV), once they have let go of it.
var errKV = errors.New("a store of mql's key-value formats")

// readKV reads the store dsn (named name in messages), of mql's key-value formats: one of an
// earlier one (mql-kv/1, mql-kv/2, without the text index) through graphstore.ReadEarlier,
// which checks it as `mql check` does and hands on its transactions; one of the current format
// has nothing to migrate.
func readKV(ctx context.Context, dsn, name, backend string, opts Options, fn func(*record.Tx) error) (Summary, error) {
	r := &reader{fn: fn, sum: Summary{Backend: backend}}
	label, err := graphstore.ReadEarlier(ctx, dsn, graphstore.Options{OpenTimeout: opts.OpenTimeout}, func(tx *record.Tx) error {
		return r.call(tx, 0)
	})
	switch {
	case err != nil:
		return r.sum, unwrapFn(err)
	case label == encoding.Format:
		return r.sum, current(name)
	case label == "":
		return r.sum, notOld("%s has mql's buckets but no format: its creation was interrupted before it held anything (open it with mql to finish it)", name)
	case !encoding.Earlier(label):
		return r.sum, notOld("%s is an mql store of format %q, which this mql neither reads nor migrates (it reads %s, and migrates %s and %s)", name, label, encoding.Format, encoding.FormatKV1, encoding.FormatKV2)
	}
	return r.sum, nil
}

// reader hands decoded transactions to fn and counts them. Its callers give them in id order
// from 1, without gaps.
type reader struct {
	fn   func(*record.Tx) error
	sum  Summary
	next record.TxID // the id the next transaction must have (0: 1)
}

// errFn marks an error returned by fn, to return it as it is.
type errFn struct{ err error }

func (e *errFn) Error() string { return e.err.Error() }
func (e *errFn) Unwrap() error { return e.err }

// call hands tx, read from quads quads, to fn.
func (r *reader) call(tx *record.Tx, quads int) error {
	r.next = tx.ID + 1
	r.sum.Transactions++
	r.sum.Claims += len(tx.Claims)
	r.sum.Quads += quads
	if err := r.fn(tx); err != nil {
		return &errFn{err}
	}
	return nil
}

// unwrapFn returns fn's own error as fn returned it.
func unwrapFn(err error) error {
	var fe *errFn
	if errors.As(err, &fe) {
		return fe.err
	}
	return err
}

// notFound is ErrNoStore for a file that does not exist; it matches fs.ErrNotExist too.
type notFound struct{ what string }

func (e *notFound) Error() string   { return graphstore.ErrNoStore.Error() + ": " + e.what }
func (e *notFound) Unwrap() []error { return []error{graphstore.ErrNoStore, fs.ErrNotExist} }

// failed is an error that says msg, in full, and matches errs.
type failed struct {
	msg  string
	errs []error
}

func (e *failed) Error() string   { return e.msg }
func (e *failed) Unwrap() []error { return e.errs }

func failure(msg string, errs ...error) error { return &failed{msg, errs} }

// damaged is the error for a damaged old store at name: what is wrong, and what to do. It
// wraps graphstore.ErrDamaged.
func damaged(name, what string) error {
	return failure(fmt.Sprintf("%s is damaged: %s; restore it from a backup, or export it with the mql that wrote it (`mql export`) and import the export with this one", name, what), graphstore.ErrDamaged)
}

// current is the error for a store of the current format.
func current(name string) error {
	return failure(fmt.Sprintf("%s is already in mql's current format (%s), not in an earlier one: there is nothing to migrate; open it with mql as it is", name, encoding.Format), ErrNotOld)
}

// notOld is the error for something that is not an mql store of the earlier format.
func notOld(format string, args ...any) error {
	return failure(graphstore.ErrNoStore.Error()+": "+fmt.Sprintf(format, args...), graphstore.ErrNoStore, ErrNotOld)
}
