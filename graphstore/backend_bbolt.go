package graphstore

import (
	"context"
	"errors"
	"fmt"
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
	qs      graph.QuadStore
}

func openBBolt(path string, timeout time.Duration) (*bboltBackend, error) {
	b := &bboltBackend{path: path, timeout: timeout}
	if err := b.open(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bboltBackend) open() error {
	db, err := bolt.Open(b.path, 0o600, &bolt.Options{Timeout: b.timeout})
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
	b.qs = qs
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

func (b *bboltBackend) lockWriters(ctx context.Context) (func(), error) { return noLock(ctx) }

func (b *bboltBackend) close() error {
	if b.qs == nil {
		return nil
	}
	err := b.qs.Close()
	b.qs = nil
	return err
}
