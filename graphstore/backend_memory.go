package graphstore

import (
	"context"
	"sync"

	"github.com/cayleygraph/cayley/graph/memstore"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/record"
)

// memoryBackend is Cayley's memstore. The memstore is not safe for concurrent use (it crashes
// on concurrent map access), so every access goes through mu.
type memoryBackend struct {
	mu sync.Mutex
	qs *memstore.QuadStore
}

func openMemory() *memoryBackend { return &memoryBackend{qs: memstore.New()} }

func (b *memoryBackend) kind() string { return "memory" }
func (b *memoryBackend) name() string { return "memory:" }
func (b *memoryBackend) shared() bool { return false }

func (b *memoryBackend) all(ctx context.Context) ([]quad.Quad, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return allQuads(ctx, b.qs)
}

func (b *memoryBackend) countGraphs(ctx context.Context) (graphCounts, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return countGraphs(ctx, b.qs, nil)
}

func (b *memoryBackend) eachQuad(ctx context.Context, fn func(quad.Quad) error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return eachQuad(ctx, b.qs, fn)
}

func (b *memoryBackend) txQuads(ctx context.Context, id record.TxID) ([]quad.Quad, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return txQuadsOf(ctx, b.qs, id)
}

func (b *memoryBackend) apply(ctx context.Context, quads []quad.Quad) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return applyQuads(b.qs, quads)
}

func (b *memoryBackend) count(ctx context.Context) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return statsCount(ctx, b.qs)
}

// reopen keeps the memstore: reopening would lose it, and a memstore checks a whole
// transaction before applying any of it, so a failed apply leaves it unchanged.
func (b *memoryBackend) reopen(context.Context) error { return nil }

func (b *memoryBackend) lockWriters(ctx context.Context) (func(), error) { return noLock(ctx) }

func (b *memoryBackend) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.qs.Close()
}
