// Package kv is the ordered key-value interface mql's storage is written against: named
// buckets of byte keys in byte order, read in consistent snapshots and written in atomic
// transactions. The records and the persisted index (package index) are laid out on it; each
// backend (boltkv: a bbolt file, memkv: memory, pgkv: PostgreSQL tables) implements it, and
// nothing above this package knows which one it runs on.
package kv

import (
	"context"
	"errors"
)

// Bucket is the number of a bucket in the Schema a store was opened with.
type Bucket uint8

// BucketDef describes one bucket.
type BucketDef struct {
	// Name is the bucket's name in the backend: a bbolt bucket, a PostgreSQL table suffix
	// (lower-case letters and digits only).
	Name string
	// Append says that new keys mostly arrive in increasing order, so a backend may pack its
	// pages full instead of leaving room for inserts between keys.
	Append bool
}

// Schema lists a store's buckets; Bucket(i) is Buckets[i].
type Schema struct {
	Buckets []BucketDef
}

// Reader reads one consistent snapshot. Values and keys handed out are valid until the
// transaction ends and must not be modified.
type Reader interface {
	// Get returns the value stored under key in b, or nil if there is none.
	Get(b Bucket, key []byte) ([]byte, error)
	// Scan calls fn with the keys of b that start with prefix, in ascending key order from the
	// first key >= from (from nil: the first with the prefix), or with Reverse in descending
	// order from the last key <= from (from nil: the last with the prefix), until fn returns
	// false or an error.
	Scan(b Bucket, prefix []byte, opts ScanOptions, fn func(k, v []byte) (bool, error)) error
}

// ScanOptions say where a Scan starts and which way it goes.
type ScanOptions struct {
	From    []byte
	Reverse bool
}

// Writer is a Reader that also writes; it reads its own writes.
type Writer interface {
	Reader
	// Put stores value under key in b. The store owns key and value from then on: the caller
	// must not modify them.
	Put(b Bucket, key, value []byte) error
	// Delete removes key from b; deleting a missing key is not an error.
	Delete(b Bucket, key []byte) error
}

// ReadTx is a read-only snapshot; End releases it.
type ReadTx interface {
	Reader
	End()
}

// MaxKey is the longest key a Store must take (bbolt's limit, less the byte that puts a kv
// bucket's keys in one bbolt tree): a layout keeps its keys within it.
const MaxKey = 32<<10 - 1

// Versioned is a snapshot that can say, without reading, which state of its Store it reads:
// two snapshots of one open Store with the same version hold the same data, and a later commit
// gives a larger one. It lets a reader keep what it derived from a snapshot (its head) for the
// next one of that state. A version means nothing across Stores, or across opens of one.
type Versioned interface {
	Version() uint64
}

// WriteTx is a write transaction: nothing of it is visible to other transactions until Commit
// returns nil, and after Rollback (or a failed Commit) nothing of it was stored.
type WriteTx interface {
	Writer
	Commit(ctx context.Context) error
	Rollback()
}

// Store is an open key-value store. Any number of read snapshots may be open at once, with at
// most one write transaction; a snapshot never sees a write committed after it began. A commit
// may wait for the snapshots open when it began to end (bbolt's, when the file outgrows its
// memory map): a goroutine ends its own snapshots before it commits.
type Store interface {
	// Read begins a read-only snapshot of the newest committed state.
	Read(ctx context.Context) (ReadTx, error)
	// Write begins the write transaction, waiting for one in progress to end.
	Write(ctx context.Context) (WriteTx, error)
	Close() error
}

// ErrClosed is returned by a Store that was closed.
var ErrClosed = errors.New("kv: store closed")

// PrefixEnd is the smallest key greater than every key that starts with prefix, or nil when
// there is none (prefix is empty or all 0xFF).
func PrefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] != 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
