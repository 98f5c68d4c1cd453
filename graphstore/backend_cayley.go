package graphstore

import (
	"context"
	"fmt"

	"github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/cayley/graph/iterator"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// backend is one Cayley quad store behind the Store. Implementations serialise their own
// access where Cayley needs it (memstore); the Store serialises writers.
type backend interface {
	kind() string
	// name is the store as a message names it: the file, the redacted DSN, "memory:".
	name() string
	// shared reports whether other processes may write to the same store (PostgreSQL).
	shared() bool
	// all returns every quad in the store.
	all(ctx context.Context) ([]quad.Quad, error)
	// countGraphs counts the quads of every graph (see countGraphs).
	countGraphs(ctx context.Context) (graphCounts, error)
	// eachQuad calls fn with every quad in the store, one at a time.
	eachQuad(ctx context.Context, fn func(quad.Quad) error) error
	// txQuads returns the quads of transaction id, or none if it is not (yet) stored.
	txQuads(ctx context.Context, id record.TxID) ([]quad.Quad, error)
	// apply adds quads as one transaction. The quads are new: they carry a transaction label
	// that nothing stored carries yet. Callers hold the writer lock and call apply at most
	// once under it: on PostgreSQL apply writes in the lock's own SQL transaction and commits
	// it, which releases the lock.
	apply(ctx context.Context, quads []quad.Quad) error
	count(ctx context.Context) (int64, error)
	// reopen closes and reopens the Cayley handle (after a failed apply: trap 1).
	reopen(ctx context.Context) error
	// lockWriters takes the cross-process writer lock (a no-op where one process owns the
	// store) and returns its release. The wait is bounded (PostgreSQL: ErrInUse after
	// Options.WriteLockTimeout).
	lockWriters(ctx context.Context) (func(), error)
	close() error
}

func quadsOf(ctx context.Context, qs graph.QuadStore, sh iterator.Shape) ([]quad.Quad, error) {
	it := sh.Iterate()
	defer it.Close()
	var out []quad.Quad
	for it.Next(ctx) {
		q, err := qs.Quad(it.Result())
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}

func allQuads(ctx context.Context, qs graph.QuadStore) ([]quad.Quad, error) {
	return quadsOf(ctx, qs, qs.QuadsAllIterator())
}

// subjectQuads returns the quads whose subject is v (using the subject index).
func subjectQuads(ctx context.Context, qs graph.QuadStore, v quad.Value) ([]quad.Quad, error) {
	ref, err := qs.ValueOf(v)
	if err != nil || ref == nil {
		return nil, err
	}
	return quadsOf(ctx, qs, qs.QuadIterator(quad.Subject, ref))
}

// graphQuadsOf collects the quads of transaction id through the label index: the same quads
// as txQuadsOf on a sound store, read another way (see checkSnapshot).
func graphQuadsOf(ctx context.Context, qs graph.QuadStore, id record.TxID) ([]quad.Quad, error) {
	ref, err := qs.ValueOf(codec.TxIRI(id))
	if err != nil || ref == nil {
		return nil, err
	}
	return quadsOf(ctx, qs, qs.QuadIterator(quad.Label, ref))
}

// txQuadsOf collects the quads of transaction id without a label scan: the transaction node's
// own quads, then those of every subject it links with urn:mql:wrote, keeping the ones
// labelled with this transaction.
func txQuadsOf(ctx context.Context, qs graph.QuadStore, id record.TxID) ([]quad.Quad, error) {
	label := codec.TxIRI(id)
	own, err := subjectQuads(ctx, qs, label)
	if err != nil || len(own) == 0 {
		return nil, err
	}
	var out []quad.Quad
	for _, q := range own {
		if q.Label == label {
			out = append(out, q)
		}
	}
	for _, q := range own {
		if q.Label != label || q.Predicate != codec.MQLWrote {
			continue
		}
		more, err := subjectQuads(ctx, qs, q.Object)
		if err != nil {
			return nil, err
		}
		for _, m := range more {
			if m.Label == label {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

func applyQuads(qs graph.QuadStore, quads []quad.Quad) error {
	deltas := make([]graph.Delta, len(quads))
	for i, q := range quads {
		deltas[i] = graph.Delta{Quad: q, Action: graph.Add}
	}
	// IgnoreDup false: a duplicate would be a bug (every quad carries a new label), and
	// ignoring it would leak node reference counts (trap 2).
	return qs.ApplyDeltas(deltas, graph.IgnoreOpts{IgnoreDup: false, IgnoreMissing: false})
}

func statsCount(ctx context.Context, qs graph.QuadStore) (int64, error) {
	st, err := qs.Stats(ctx, true)
	if err != nil {
		return 0, err
	}
	return st.Quads.Value, nil
}

func noLock(context.Context) (func(), error) { return func() {}, nil }

func storageErr(what string, err error) error {
	return fmt.Errorf("graphstore: %s: %w: %w", what, ErrStorage, err)
}

// graphCounts is how many quads each transaction graph holds, and how many quads lie outside
// every transaction graph.
type graphCounts struct {
	txs   map[record.TxID]int
	other int
}

// countGraphs counts the quads of every graph without resolving their subjects, predicates
// and objects: only each distinct graph label is looked up, once. It calls every, if set,
// after each 4,096 quads.
func countGraphs(ctx context.Context, qs graph.QuadStore, every func()) (graphCounts, error) {
	it := qs.QuadsAllIterator().Iterate()
	defer it.Close()
	byLabel := map[any]int{}
	refs := map[any]graph.Ref{}
	out := graphCounts{txs: map[record.TxID]int{}}
	for n := 1; it.Next(ctx); n++ {
		if n%(1<<12) == 0 {
			if err := ctx.Err(); err != nil {
				return out, err
			}
			if every != nil {
				every()
			}
		}
		l, err := qs.QuadDirection(it.Result(), quad.Label)
		if err != nil {
			return out, err
		}
		if l == nil {
			out.other++
			continue
		}
		k := l.Key()
		if byLabel[k]++; byLabel[k] == 1 {
			refs[k] = l
		}
	}
	if err := it.Err(); err != nil {
		return out, err
	}
	for k, n := range byLabel {
		v, err := qs.NameOf(refs[k])
		if err != nil {
			return out, err
		}
		if id, ok := codec.ParseTxIRI(v); ok {
			out.txs[id] += n
		} else {
			out.other += n
		}
	}
	return out, ctx.Err()
}

// eachQuad calls fn with every quad of the store, one at a time.
func eachQuad(ctx context.Context, qs graph.QuadStore, fn func(quad.Quad) error) error {
	it := qs.QuadsAllIterator().Iterate()
	defer it.Close()
	for n := 1; it.Next(ctx); n++ {
		if n%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		q, err := qs.Quad(it.Result())
		if err != nil {
			return err
		}
		if err := fn(q); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return ctx.Err()
}
