package graphstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	"github.com/cayleygraph/quad"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bolt "go.etcd.io/bbolt"
)

// bboltBackend is Cayley's key-value quad store (graph/kv) on one bbolt file.
//
// Cayley's registered "bbolt" store (graph/kv/bbolt) treats its path as a directory holding
// indexes.bolt and opens it with no timeout, so a second process blocks forever. This backend
// does what that registration does — hidalgo's bbolt KV under graph/kv's Init and New — but on
// the file itself and with bbolt's own lock timeout, so a file held by another process is
// reported as ErrInUse instead of hanging.
type bboltBackend struct {
	path    string
	timeout time.Duration
	noSync  bool // an import: the file is synced once, at the end
	qs      graph.QuadStore
	db      *bolt.DB // the file under qs, for the snapshot bucket
}

func openBBolt(path string, timeout time.Duration) (*bboltBackend, error) {
	b := &bboltBackend{path: path, timeout: timeout}
	if err := b.open(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bboltBackend) open() error {
	db, err := bolt.Open(b.path, 0o600, &bolt.Options{Timeout: b.timeout, NoSync: b.noSync})
	if errors.Is(err, bolt.ErrTimeout) {
		return fmt.Errorf("graphstore: %s is held by another process (its lock was not released within %s); close the other mql session using it, or open another file: %w", b.path, b.timeout, ErrInUse)
	}
	if err != nil {
		return fmt.Errorf("graphstore: cannot open bbolt file %s: %w: %w", b.path, ErrStorage, err)
	}
	kv := hbolt.New(db)
	// Init creates the buckets of a new file and reports ErrDatabaseExists for an existing one.
	if err := ckv.Init(kv, nil); err != nil && !errors.Is(err, graph.ErrDatabaseExists) {
		kv.Close()
		return fmt.Errorf("graphstore: cannot initialise %s as a Cayley store: %w: %w", b.path, ErrStorage, err)
	}
	qs, err := ckv.New(kv, graph.Options{ckv.OptNoBloom: true})
	if err != nil {
		kv.Close()
		return fmt.Errorf("graphstore: %s is not a Cayley store: %w: %w", b.path, ErrStorage, err)
	}
	b.qs, b.db = qs, db
	return nil
}

func (b *bboltBackend) kind() string { return "bbolt" }
func (b *bboltBackend) shared() bool { return false }

// handle returns the open quad store; it is nil after a failed reopen.
func (b *bboltBackend) handle() (graph.QuadStore, error) {
	if b.qs == nil {
		return nil, fmt.Errorf("graphstore: %s could not be reopened after a failed write: %w", b.path, ErrStorage)
	}
	return b.qs, nil
}

func (b *bboltBackend) all(ctx context.Context) ([]quad.Quad, error) {
	qs, err := b.handle()
	if err != nil {
		return nil, err
	}
	return allQuads(ctx, qs)
}

func (b *bboltBackend) countGraphs(ctx context.Context) (graphCounts, error) {
	qs, err := b.handle()
	if err != nil {
		return graphCounts{}, err
	}
	return countGraphs(ctx, qs, b.dropMapped)
}

func (b *bboltBackend) eachQuad(ctx context.Context, fn func(quad.Quad) error) error {
	qs, err := b.handle()
	if err != nil {
		return err
	}
	return eachQuad(ctx, qs, fn)
}

func (b *bboltBackend) txQuads(ctx context.Context, id TxID) ([]quad.Quad, error) {
	qs, err := b.handle()
	if err != nil {
		return nil, err
	}
	return txQuadsOf(ctx, qs, id)
}

func (b *bboltBackend) apply(ctx context.Context, quads []quad.Quad) error {
	qs, err := b.handle()
	if err != nil {
		return err
	}
	return applyQuads(qs, quads)
}

func (b *bboltBackend) count(ctx context.Context) (int64, error) {
	qs, err := b.handle()
	if err != nil {
		return 0, err
	}
	return statsCount(ctx, qs)
}

func (b *bboltBackend) reopen(context.Context) error {
	if b.qs != nil {
		b.qs.Close()
		b.qs = nil
	}
	return b.open()
}

// dropMapped releases the pages of the file's memory map read so far (see dropMapped). The
// caller holds the writer lock.
func (b *bboltBackend) dropMapped() { dropMapped(b.db) }

func (b *bboltBackend) lockWriters(ctx context.Context) (func(), error) { return noLock(ctx) }

func (b *bboltBackend) close() error {
	if b.qs == nil {
		return nil
	}
	err := b.qs.Close()
	b.qs, b.db = nil, nil
	return err
}

// snapshotBucket holds the snapshot's chunks keyed by their first transaction id (8 bytes,
// big-endian, so that bbolt's key order is id order). Cayley's own buckets have other names
// and Cayley never scans the file's root.
var snapshotBucket = []byte("mql.snapshot")

func (b *bboltBackend) eachSnapshotChunk(ctx context.Context, fn func([]byte) error) error {
	if b.db == nil {
		return nil
	}
	return b.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(snapshotBucket)
		if bk == nil {
			return nil
		}
		return bk.ForEach(func(_, v []byte) error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fn(v)
		})
	})
}

func (b *bboltBackend) appendSnapshot(_ context.Context, chunks []snapshotChunk) error {
	if b.db == nil {
		return fmt.Errorf("graphstore: %s is not open: %w", b.path, ErrStorage)
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(snapshotBucket)
		if err != nil {
			return err
		}
		for _, c := range chunks {
			if err := bk.Put(binary.BigEndian.AppendUint64(nil, uint64(c.first)), c.data); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *bboltBackend) resetSnapshot(context.Context) error {
	if b.db == nil {
		return fmt.Errorf("graphstore: %s is not open: %w", b.path, ErrStorage)
	}
	return b.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(snapshotBucket) == nil {
			return nil
		}
		return tx.DeleteBucket(snapshotBucket)
	})
}

func (b *bboltBackend) txNodeQuads(ctx context.Context, id TxID) ([]quad.Quad, error) {
	qs, err := b.handle()
	if err != nil {
		return nil, err
	}
	own, err := subjectQuads(ctx, qs, txIRI(id))
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(own, func(q quad.Quad) bool { return q.Label != txIRI(id) }), nil
}
