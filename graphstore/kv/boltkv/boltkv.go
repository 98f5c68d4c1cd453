// Package boltkv is the kv interface on an open bbolt file: one bbolt bucket per kv bucket,
// snapshots as bbolt read transactions, a write transaction as bbolt's. Opening, locking and
// checking the file is the caller's (package graphstore's bbolt backend); bbolt panics on a
// damaged page, and the caller guards its calls.
package boltkv

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/kv"
)

// Store is a kv.Store over db.
type Store struct {
	db     *bolt.DB
	names  [][]byte
	fill   []float64
	noSync bool
}

// Prefix starts the name of every bbolt bucket a kv bucket is kept in ("mql.meta"), so that
// mql's buckets never meet another program's in one file.
const Prefix = "mql."

// Buckets creates the buckets of schema that db does not have yet, in one write transaction.
func Buckets(db *bolt.DB, schema kv.Schema) error {
	return db.Update(func(tx *bolt.Tx) error {
		for _, b := range schema.Buckets {
			if _, err := tx.CreateBucketIfNotExists([]byte(Prefix + b.Name)); err != nil {
				return fmt.Errorf("boltkv: creating bucket %s: %w", b.Name, err)
			}
		}
		return nil
	})
}

// New returns the store over db, whose buckets must exist (see Buckets).
func New(db *bolt.DB, schema kv.Schema) *Store {
	s := &Store{db: db}
	for _, b := range schema.Buckets {
		s.names = append(s.names, []byte(Prefix+b.Name))
		fill := bolt.DefaultFillPercent
		if b.Append {
			fill = 0.95
		}
		s.fill = append(s.fill, fill)
	}
	return s
}

// DB is the bbolt file under the store.
func (s *Store) DB() *bolt.DB { return s.db }

// Read begins a bbolt read transaction.
func (s *Store) Read(ctx context.Context) (kv.ReadTx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, err
	}
	return &readTx{s: s, tx: tx, bs: make([]*bolt.Bucket, len(s.names))}, nil
}

// Write begins bbolt's write transaction.
func (s *Store) Write(ctx context.Context) (kv.WriteTx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	tx, err := s.db.Begin(true)
	if err != nil {
		return nil, err
	}
	return &writeTx{readTx{s: s, tx: tx, bs: make([]*bolt.Bucket, len(s.names))}}, nil
}

// Close does nothing: the file is the caller's to close.
func (s *Store) Close() error { return nil }

type readTx struct {
	s  *Store
	tx *bolt.Tx
	bs []*bolt.Bucket
}

func (t *readTx) bucket(b kv.Bucket) (*bolt.Bucket, error) {
	if t.tx == nil {
		return nil, kv.ErrClosed
	}
	if int(b) >= len(t.bs) {
		return nil, fmt.Errorf("boltkv: no bucket %d", b)
	}
	if bk := t.bs[b]; bk != nil {
		return bk, nil
	}
	bk := t.tx.Bucket(t.s.names[b])
	if bk == nil {
		return nil, fmt.Errorf("boltkv: the file has no bucket %s", t.s.names[b])
	}
	if t.tx.Writable() {
		bk.FillPercent = t.s.fill[b]
	}
	t.bs[b] = bk
	return bk, nil
}

func (t *readTx) End() {
	if t.tx != nil {
		t.tx.Rollback()
		t.tx = nil
	}
}

func (t *readTx) Get(b kv.Bucket, key []byte) ([]byte, error) {
	bk, err := t.bucket(b)
	if err != nil {
		return nil, err
	}
	return bk.Get(key), nil
}

func (t *readTx) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	c := bk.Cursor()
	var k, v []byte
	if !opts.Reverse {
		from := opts.From
		if from == nil || bytes.Compare(from, prefix) < 0 {
			from = prefix
		}
		for k, v = c.Seek(from); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if more, err := fn(k, v); !more || err != nil {
				return err
			}
		}
		return nil
	}
	end := opts.From
	inclusive := true
	if end == nil {
		end, inclusive = kv.PrefixEnd(prefix), false
	}
	if end == nil {
		k, v = c.Last()
	} else if k, v = c.Seek(end); k == nil {
		k, v = c.Last()
	} else if !inclusive || !bytes.Equal(k, end) {
		k, v = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Prev() {
		if more, err := fn(k, v); !more || err != nil {
			return err
		}
	}
	return nil
}

type writeTx struct{ readTx }

func (t *writeTx) Put(b kv.Bucket, key, value []byte) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	return bk.Put(key, value)
}

func (t *writeTx) Delete(b kv.Bucket, key []byte) error {
	bk, err := t.bucket(b)
	if err != nil {
		return err
	}
	return bk.Delete(key)
}

func (t *writeTx) Commit(ctx context.Context) error {
	if t.tx == nil {
		return kv.ErrClosed
	}
	err := t.tx.Commit()
	t.tx = nil
	return err
}

func (t *writeTx) Rollback() { t.End() }
