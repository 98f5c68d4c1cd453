package graphstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
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

// Apply writes quads as one Cayley transaction, under the writer lock, as Store.Write does for
// one group.
func (r *RawStore) Apply(ctx context.Context, quads []quad.Quad) error {
	unlock, err := r.be.lockWriters(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return r.be.apply(ctx, quads)
}

// Close closes the quad store.
func (r *RawStore) Close() error { return r.be.close() }

// EachTxQuadsForBenchmark reads an N-Quads export (WriteNQuads, which writes each
// transaction's quads together, in id order) and calls fn with each transaction's id and
// quads, one transaction at a time, so that a store of any size can be replayed without
// holding it in memory. It checks nothing beyond the syntax and the labels. For benchmarks
// only.
func EachTxQuadsForBenchmark(r io.Reader, fn func(id record.TxID, quads []quad.Quad) error) error {
	qr := newQuadReader(r)
	var cur record.TxID
	var group []quad.Quad
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		err := fn(cur, group)
		group = nil
		return err
	}
	for {
		q, err := qr.Next()
		if errors.Is(err, io.EOF) {
			return flush()
		}
		if err != nil {
			return err
		}
		id, ok := codec.ParseTxIRI(q.Label)
		if !ok {
			return fmt.Errorf("line %d: not in a transaction graph", qr.Line())
		}
		if id != cur {
			if err := flush(); err != nil {
				return err
			}
			cur = id
		}
		group = append(group, codec.CanonQuad(q))
	}
}
