// Package boltkv is the kv interface on an open bbolt file: every kv bucket in one bbolt
// bucket, mql.kv, its keys prefixed with the kv bucket's number; snapshots are bbolt read
// transactions and a write transaction is bbolt's. Opening, locking and checking the file is
// the caller's (package graphstore's bbolt backend); bbolt panics on a damaged page, and the
// caller guards its calls.
//
// One tree rather than a bbolt bucket per kv bucket: a commit rewrites every page on the path
// from each changed leaf to its tree's root, and a single-claim write changes entries in some
// ten kv buckets; in one tree those paths share their upper pages, so a commit writes about
// half the pages it would over ten trees.
package boltkv

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/kv"
)

// Bucket is the bbolt bucket that holds every kv bucket. Its name starts with "mql." so that
// mql's data never meets another program's in one file.
const Bucket = "mql.kv"

// FillPercent is how full bbolt packs the pages it splits: most keys arrive in increasing order
// (transactions, claims, artifact versions by number), and half-empty pages made the file twice
// the size of its data.
const FillPercent = 0.9

// bbolt's key limit, less the bucket's number boltkv puts first, is kv.MaxKey.
var _ = [1]struct{}{}[bolt.MaxKeySize-1-kv.MaxKey]

// Store is a kv.Store over db.
type Store struct {
	db *bolt.DB
	n  int
}

// Init creates the bbolt bucket that holds the store, if db does not have it yet.
func Init(db *bolt.DB) error {
	return db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists([]byte(Bucket))
		return err
	})
}

// Has reports whether db holds a store.
func Has(tx *bolt.Tx) bool { return tx.Bucket([]byte(Bucket)) != nil }

// New returns the store over db, which Init prepared, with the buckets of schema.
func New(db *bolt.DB, schema kv.Schema) *Store { return &Store{db: db, n: len(schema.Buckets)} }

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
	return s.wrap(tx)
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
	r, err := s.wrap(tx)
	if err != nil {
		return nil, err
	}
	r.bk.FillPercent = FillPercent
	return &writeTx{*r}, nil
}

func (s *Store) wrap(tx *bolt.Tx) (*readTx, error) {
	bk := tx.Bucket([]byte(Bucket))
	if bk == nil {
		tx.Rollback()
		return nil, fmt.Errorf("boltkv: the file has no bucket %s", Bucket)
	}
	return &readTx{s: s, tx: tx, bk: bk}, nil
}

// Close does nothing: the file is the caller's to close.
func (s *Store) Close() error { return nil }

type readTx struct {
	s   *Store
	tx  *bolt.Tx
	bk  *bolt.Bucket
	buf []byte
	// get is the cursor Get seeks with, made once a transaction: bbolt's own Get makes a
	// cursor, and the path down the tree it keeps, for every key (a find at 10M claims looks
	// up hundreds of thousands). Seek repositions it, so a Put between two Gets is harmless;
	// a Scan, which may call Get from its callback, has a cursor of its own.
	get *bolt.Cursor
}

// key is b's prefix and key, in a buffer reused by the next call.
func (t *readTx) key(b kv.Bucket, key []byte) ([]byte, error) {
	if t.tx == nil {
		return nil, kv.ErrClosed
	}
	if int(b) >= t.s.n {
		return nil, fmt.Errorf("boltkv: no bucket %d", b)
	}
	t.buf = append(append(t.buf[:0], byte(b)), key...)
	return t.buf, nil
}

// Size is the size of the file as of the snapshot: while it is open, bbolt keeps at least that
// much of the file mapped, at the same address.
func (t *readTx) Size() int64 {
	if t.tx == nil {
		return 0
	}
	return t.tx.Size()
}

func (t *readTx) End() {
	if t.tx != nil {
		t.tx.Rollback()
		t.tx = nil
	}
}

func (t *readTx) Get(b kv.Bucket, key []byte) ([]byte, error) {
	k, err := t.key(b, key)
	if err != nil {
		return nil, err
	}
	if t.get == nil {
		t.get = t.bk.Cursor()
	}
	if at, v := t.get.Seek(k); bytes.Equal(at, k) {
		return v, nil
	}
	return nil, nil
}

func (t *readTx) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	p, err := t.key(b, prefix)
	if err != nil {
		return err
	}
	prefix = bytes.Clone(p)
	var from []byte
	if opts.From != nil {
		from = append([]byte{byte(b)}, opts.From...)
	}
	c := t.bk.Cursor()
	var k, v []byte
	if !opts.Reverse {
		if from == nil || bytes.Compare(from, prefix) < 0 {
			from = prefix
		}
		for k, v = c.Seek(from); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if more, err := fn(k[1:], v); !more || err != nil {
				return err
			}
		}
		return nil
	}
	end, inclusive := from, true
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
		if more, err := fn(k[1:], v); !more || err != nil {
			return err
		}
	}
	return nil
}

type writeTx struct{ readTx }

func (t *writeTx) Put(b kv.Bucket, key, value []byte) error {
	k, err := t.key(b, key)
	if err != nil {
		return err
	}
	return t.bk.Put(k, value) // bbolt copies the key
}

func (t *writeTx) Delete(b kv.Bucket, key []byte) error {
	k, err := t.key(b, key)
	if err != nil {
		return err
	}
	return t.bk.Delete(k)
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
