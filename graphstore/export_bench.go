package graphstore

import (
	"context"
	"io"

	"github.com/cayleygraph/quad"
)

// RawStore is the Cayley quad store under a Store, opened without mql on top: no index, no
// checks, no transaction building. It exists for benchmarks only (bench/, "the engine's
// ceiling"): writing through it bypasses every rule of the model, so a store written with it is
// not a valid mql memory unless the quads came from one.
type RawStore struct{ be backend }

// OpenRawForBenchmark opens dsn ("memory:" or a bbolt path) exactly as Open would open its
// backend, with the same options, and nothing else. For benchmarks only.
func OpenRawForBenchmark(ctx context.Context, dsn string, opts Options) (*RawStore, error) {
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = 1e9
	}
	be, err := openBackend(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return &RawStore{be: be}, nil
}

// Apply writes quads as one Cayley transaction, as Store.Write does for one group.
func (r *RawStore) Apply(ctx context.Context, quads []quad.Quad) error { return r.be.apply(ctx, quads) }

// Close closes the quad store.
func (r *RawStore) Close() error { return r.be.close() }

// TxQuadsForBenchmark reads an N-Quads export (WriteNQuads) and returns the quads each
// transaction is stored as, in transaction order: what Store.Write hands to Cayley. For
// benchmarks only.
func TxQuadsForBenchmark(r io.Reader) ([][]quad.Quad, error) {
	txs, err := ReadNQuads(r)
	if err != nil {
		return nil, err
	}
	out := make([][]quad.Quad, 0, len(txs))
	for _, tx := range txs {
		q, err := encodeTx(tx)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}
