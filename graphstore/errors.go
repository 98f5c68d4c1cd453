package graphstore

import (
	"errors"
	"fmt"

	"github.com/mql-dev/mql/graphstore/boltfile"
)

// Sentinel errors. Every error the store returns for one of these conditions wraps the
// sentinel, so callers test with errors.Is; the message around it says which file, database,
// transaction or line is concerned and what to do about it.
var (
	// ErrInUse is returned by Open when a bbolt file is held by another process (or by another
	// open Store in this process) and was not released within Options.OpenTimeout. Only one
	// process may own a bbolt store at a time: close the other session, or use PostgreSQL to
	// share one memory between processes.
	//
	// On PostgreSQL it is returned by a write (Write, Import, and Check, which waits for
	// writers) that waited Options.WriteLockTimeout for the writer lock held by another
	// process; the message names that process as PostgreSQL sees it. Nothing was written:
	// try again.
	ErrInUse = errors.New("store is in use")

	// ErrBadDSN is returned by Open when the data source name has none of the accepted forms:
	// "memory:", "bbolt:PATH", a plain file path, or a "postgres://" / "postgresql://" URL.
	ErrBadDSN = errors.New("invalid data source name")

	// ErrStorage is returned when the storage below (a bbolt file and its log, PostgreSQL)
	// fails to read or write, or holds data that does not decode as an mql store. When a write
	// fails this way nothing was recorded (on PostgreSQL, when the connection failed during the
	// COMMIT, the error says the outcome is unknown), and the next write starts afresh.
	ErrStorage = errors.New("storage failure")

	// ErrBadImport is returned by ImportStore and Store.Import when the input is not
	// a sound mql export: a line that does not parse as an N-Quad, quads outside a transaction
	// graph, transactions whose quads are not together and in order, a record with an unknown
	// shape or a missing field, a reference to something not recorded before it, times that go
	// backwards, or anything else a check finds. The error is an *ImportError naming the line.
	// Nothing is written when it is returned.
	ErrBadImport = errors.New("invalid import")

	// ErrNotEmpty is returned by ImportStore when the store it would create exists already (a
	// bbolt file, even an empty one, or a PostgreSQL database holding quads), and by
	// Store.Import when the store is not a new memory: store. An import creates a store; it
	// never adds to one.
	ErrNotEmpty = errors.New("store is not empty")

	// ErrNoStore is returned by Open with Options.MustExist, and by CheckDSN, when there is no
	// mql store at the DSN: the file does not exist or is empty, or the database holds no mql
	// memory. Nothing was created.
	ErrNoStore = errors.New("no such store")
	// ErrDamaged is returned when a store's file is damaged. Open refuses a file that the
	// storage engine cannot read safely (shorter than its pages in use, no valid meta page, a
	// broken freelist). A Store that finds damage — at open, or later: a page that is not what
	// it should be, a fault reading the file (truncated while open), a panic of the storage
	// engine, a value that fails its checksum — refuses every write from then on with it;
	// reads of what is still readable go on. Run `mql check` on the file to see what is wrong, and restore the store from
	// an export or a backup.
	ErrDamaged = boltfile.ErrDamaged

	// ErrClosed is returned by every method of a Store after Close.
	ErrClosed = errors.New("store is closed")
)

// noStoreError is ErrNoStore with what was found instead of a store; it also matches its cause
// (fs.ErrNotExist for a missing file).
type noStoreError struct {
	what  string
	cause error
}

func (e *noStoreError) Error() string { return ErrNoStore.Error() + ": " + e.what }
func (e *noStoreError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrNoStore}
	}
	return []error{ErrNoStore, e.cause}
}

// errNoStore returns ErrNoStore saying what is at the DSN instead ("x.db does not exist").
func errNoStore(cause error, format string, args ...any) error {
	return &noStoreError{what: fmt.Sprintf(format, args...), cause: cause}
}

// StorageFailure marks err as a failure of the storage below: errors.Is(e, ErrStorage) holds
// for the error it returns, whose message is err's own, saying what failed and where, without
// the sentinel's words.
func StorageFailure(err error) error { return &storageError{err} }

type storageError struct{ err error }

func (e *storageError) Error() string        { return e.err.Error() }
func (e *storageError) Unwrap() error        { return e.err }
func (e *storageError) Is(target error) bool { return target == ErrStorage }
