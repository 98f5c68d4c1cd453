package graphstore

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// backend is the kv store behind a Store, with what the Store needs to know about where it
// lives.
type backend interface {
	kind() string
	// name is the store as a message names it: the file, the redacted DSN, "memory:".
	name() string
	// shared reports whether other processes may write to the same store (PostgreSQL).
	shared() bool
	kv() kv.Store
	// writable reports the damage that forbids writing (a bbolt file's), or nil.
	writable() error
	// size is how many bytes the store takes where it is kept: a bbolt file and its
	// write-ahead log on disk, PostgreSQL's tables with their indexes and TOAST, the memory
	// store's nothing (0).
	size(ctx context.Context) (int64, error)
	// guard runs fn, a call into the kv store, turning a panic or a fault of the storage
	// engine into an error wrapping ErrDamaged.
	guard(fn func() error) error
	close() error
}

// watcher is a backend that announces other processes' commits (PostgreSQL's NOTIFY), to a
// process whose subscribers (subs) want to hear of them.
type watcher interface {
	watchCommits(ctx context.Context, subs *notifier, fn func(head record.TxID))
}

// sharer is a backend that other processes write too (PostgreSQL). Each process keeps a cache
// of decoded entries; a process that commits says which entries its transactions changed, and
// the others drop them from their caches before they read past those transactions.
type sharer interface {
	// commitShared commits wt, whose transactions end at head and changed the cache entries
	// touched (index.Index.Touched), recording touched for the other processes in the same
	// commit, with what rc says of the requests the group built (head 0: a commit of rc
	// alone, whose group built no transaction).
	commitShared(ctx context.Context, wt kv.WriteTx, head record.TxID, touched []string, rc reqCommit) error
	// changes returns the newest committed transaction and the cache entries that the
	// transactions after `after` changed; ok is false when that can no longer be told (the
	// record of them was pruned), and the cache must be emptied.
	changes(ctx context.Context, after record.TxID) (head record.TxID, touched []string, ok bool, err error)
}

// writeTx is a kv write transaction of the Store's backend, guarded.
type writeTx struct {
	be backend
	tx kv.WriteTx
}

func (s *Store) beginWrite(ctx context.Context) (*writeTx, error) {
	var tx kv.WriteTx
	err := s.be.guard(func() error {
		var err error
		tx, err = s.be.kv().Write(ctx)
		return err
	})
	if err != nil {
		return nil, storageErr("beginning a write", err)
	}
	return &writeTx{be: s.be, tx: tx}, nil
}

// commitRequests commits the transactions up to head, which changed the cache entries
// touched, with the outcomes of the requests the group built (rc: only a backend that shares
// the store has them).
func (w *writeTx) commitRequests(ctx context.Context, head record.TxID, touched []string, rc reqCommit) error {
	if sh, ok := w.be.(sharer); ok {
		return w.be.guard(func() error { return sh.commitShared(ctx, w.tx, head, touched, rc) })
	}
	if !rc.empty() {
		return fmt.Errorf("requests of other processes in a %s store", w.be.kind())
	}
	return w.be.guard(func() error { return w.tx.Commit(ctx) })
}

func (w *writeTx) rollback() { w.be.guard(func() error { w.tx.Rollback(); return nil }) }

// memoryBackend keeps the store in memory (package memkv).
type memoryBackend struct{ s atomic.Pointer[memkv.Store] }

func openMemory() *memoryBackend {
	b := &memoryBackend{}
	b.s.Store(memkv.New(index.Schema))
	return b
}

// swap puts s in the place of the store's kv store (an import into a new memory store) and
// returns the old one.
func (b *memoryBackend) swap(s *memkv.Store) *memkv.Store { return b.s.Swap(s) }

func (b *memoryBackend) kind() string                        { return "memory" }
func (b *memoryBackend) name() string                        { return "memory:" }
func (b *memoryBackend) shared() bool                        { return false }
func (b *memoryBackend) kv() kv.Store                        { return b.s.Load() }
func (b *memoryBackend) writable() error                     { return nil }
func (b *memoryBackend) size(context.Context) (int64, error) { return 0, nil }
func (b *memoryBackend) guard(fn func() error) error         { return fn() }
func (b *memoryBackend) close() error                        { return b.s.Load().Close() }
