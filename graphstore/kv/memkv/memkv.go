// Package memkv is the in-memory kv backend ("memory:"): a copy-on-write B-tree per bucket.
// A snapshot is a copy of the trees, which shares their nodes until a writer changes one; a
// write transaction works on copies of its own and publishes them at commit. Everything is
// gone when the store is closed.
package memkv

import (
	"bytes"
	"context"
	"sync"

	"github.com/tidwall/btree"

	"github.com/mql-dev/mql/graphstore/kv"
)

type item struct{ k, v []byte }

func less(a, b item) bool { return bytes.Compare(a.k, b.k) < 0 }

type tree = btree.BTreeG[item]

// Store is an in-memory kv.Store. It is safe for concurrent use.
type Store struct {
	mu        sync.Mutex // guards committed and closed
	committed []*tree    // never changed once published: writers change copies
	closed    bool
	wmu       chan struct{} // the write transaction's token: one writer at a time
}

// New returns an empty store with the buckets of schema.
func New(schema kv.Schema) *Store {
	s := &Store{wmu: make(chan struct{}, 1)}
	for range schema.Buckets {
		s.committed = append(s.committed, btree.NewBTreeG(less))
	}
	return s
}

func (s *Store) snapshot() ([]*tree, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, kv.ErrClosed
	}
	out := make([]*tree, len(s.committed))
	for i, t := range s.committed {
		out[i] = t.Copy()
	}
	return out, nil
}

// Read begins a snapshot.
func (s *Store) Read(ctx context.Context) (kv.ReadTx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ts, err := s.snapshot()
	if err != nil {
		return nil, err
	}
	return &readTx{ts: ts}, nil
}

// Write begins the write transaction.
func (s *Store) Write(ctx context.Context) (kv.WriteTx, error) {
	select {
	case s.wmu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ts, err := s.snapshot()
	if err != nil {
		<-s.wmu
		return nil, err
	}
	return &writeTx{readTx: readTx{ts: ts}, s: s}, nil
}

// Close drops everything.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.committed = nil
	return nil
}

type readTx struct{ ts []*tree }

func (t *readTx) End() { t.ts = nil }

func (t *readTx) Get(b kv.Bucket, key []byte) ([]byte, error) {
	if t.ts == nil {
		return nil, kv.ErrClosed
	}
	it, ok := t.ts[b].Get(item{k: key})
	if !ok {
		return nil, nil
	}
	return it.v, nil
}

func (t *readTx) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	if t.ts == nil {
		return kv.ErrClosed
	}
	var err error
	visit := func(it item) bool {
		if !bytes.HasPrefix(it.k, prefix) {
			return false
		}
		var more bool
		more, err = fn(it.k, it.v)
		return more && err == nil
	}
	tr := t.ts[b]
	if !opts.Reverse {
		from := opts.From
		if from == nil || bytes.Compare(from, prefix) < 0 {
			from = prefix
		}
		tr.Ascend(item{k: from}, visit)
		return err
	}
	if opts.From != nil {
		tr.Descend(item{k: opts.From}, visit)
		return err
	}
	end := kv.PrefixEnd(prefix)
	if end == nil {
		tr.Reverse(visit)
		return err
	}
	tr.Descend(item{k: end}, func(it item) bool {
		if bytes.Equal(it.k, end) {
			return true
		}
		return visit(it)
	})
	return err
}

type writeTx struct {
	readTx
	s    *Store
	done bool
}

func (t *writeTx) Put(b kv.Bucket, key, value []byte) error {
	if t.done {
		return kv.ErrClosed
	}
	t.ts[b].Set(item{k: key, v: value})
	return nil
}

func (t *writeTx) Delete(b kv.Bucket, key []byte) error {
	if t.done {
		return kv.ErrClosed
	}
	t.ts[b].Delete(item{k: key})
	return nil
}

func (t *writeTx) Commit(ctx context.Context) error {
	if t.done {
		return kv.ErrClosed
	}
	t.done = true
	defer func() { <-t.s.wmu }()
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	if t.s.closed {
		return kv.ErrClosed
	}
	t.s.committed = t.ts
	t.ts = nil
	return nil
}

func (t *writeTx) Rollback() {
	if t.done {
		return
	}
	t.done = true
	t.ts = nil
	<-t.s.wmu
}
