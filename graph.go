package mql

import (
	"context"
	"fmt"

	"github.com/cayleygraph/cayley/graph"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/quadstore"
	"github.com/mql-dev/mql/graphstore/record"
)

// Graph returns the memory as Cayley's graph (github.com/cayleygraph/cayley/graph), as of the
// reader's transaction or time (for a DB, now) and as the owner sees it: a read-only
// graph.QuadStore whose quads are exactly those an owner's Export writes as of then, in the
// vocabulary of docs/VOCABULARY.md, on every backend. Cayley's path API walks it:
// cayley.StartPath(qs, quad.IRI("urn:mql:claim:Klarveld.price@1")).
// FollowRecursive(path.StartMorphism().In(quad.IRI("http://www.w3.org/ns/prov#wasDerivedFrom")),
// 0, nil) reaches what Impact reports.
//
// Nothing is copied and nothing stays open: the graph is made from the store's records and
// index as an iterator reaches them, in short reads of the store as of one transaction (for a
// reader of the newest state, the newest when Graph was called), so that later writes do not
// change it and are not held up by it. A record's quads and those that point at a claim or
// artifact version are found through the index; the others (the quads of a predicate, those
// pointing at a principal, a grant, a source or a literal, every quad) by reading the
// transactions in order. Writing to it (ApplyDeltas, NewQuadWriter) fails with
// quadstore.ErrReadOnly; Close it when done (the DB stays open). See docs/VOCABULARY.md,
// "Walking the memory with Cayley".
//
// It is the owner's graph: a reader narrowed to another principal (As) gets ErrInvalid, because
// the quads a principal may perceive are not a subset of the owner's (its export rewrites the
// records that refer to what it may not see), and a reader inside a transaction gets it too.
func (r reads) Graph(ctx context.Context) (graph.QuadStore, error) {
	if r.tx != nil {
		return nil, fmt.Errorf("graph: %w: a transaction's pending writes are not in the store's graph; read it after the commit", ErrInvalid)
	}
	if r.run != "" {
		return nil, fmt.Errorf("graph: %w: a graph is not a read for a run: the walks made on it are not recorded", ErrInvalid)
	}
	var asOf record.TxID
	err := r.view(ctx, func(v *index.View) error {
		if !v.IsOwnerView() {
			return fmt.Errorf("graph as %s: %w: the graph is the owner's; a principal reads its memory through mql's reads (Live, Why, Impact, Export)", r.as, ErrInvalid)
		}
		asOf = v.AsOf()
		return nil
	})
	if err != nil {
		return nil, err
	}
	qs, err := quadstore.NewAt(ctx, r.db.store, asOf)
	if err != nil {
		return nil, err
	}
	return qs, nil
}
