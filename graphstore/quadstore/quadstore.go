// Package quadstore is the memory as Cayley's graph: a read-only graph.QuadStore
// (github.com/cayleygraph/cayley/graph) over a graphstore.Store as of one transaction, as the
// owner sees it, whose quads are exactly those an owner's export of the store as of that
// transaction writes (docs/VOCABULARY.md). Cayley's path API (cayley.StartPath) and its query
// languages walk it like any other backend.
//
// Nothing is copied: the quads are made from mql's records when an iterator reaches them
// (package codec's encoding, record by record), and found through mql's persisted index. A
// record's quads (the subject direction) are made from the record; the quads that point at a
// claim or an artifact version (the object direction) from the index entries that link records
// to it (later versions, revocations, confirmations, artifacts derived from it, reviews, the
// retrievals that served it); a transaction's quads (the label direction) from the transaction.
// What the index does not link — the quads of a predicate, those that point at a principal, a
// grant, a source, a class or a literal, and every quad — is read lazily, transaction by
// transaction, in batches.
//
// The QuadStore fixes its transaction when it is made and reads the store in short snapshots,
// one per operation or per batch of an iterator, never holding one open between calls: every
// entry of the store is stamped with its transaction, so a snapshot taken later answers as of
// the QuadStore's transaction all the same, and writers are never held up.
//
// The package registers the Cayley backend "mql" (graph.NewQuadStore("mql", dsn, opts)), which
// opens the mql store at dsn itself, read-only, and closes it with the QuadStore.
package quadstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/cayley/graph/iterator"
	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// ErrReadOnly is returned by ApplyDeltas and NewQuadWriter: the graph is mql's records, which
// only mql's writes change.
var ErrReadOnly = errors.New("quadstore: the graph of an mql store is read-only; write through mql (Assert, Revoke, Derive, …)")

// ErrClosed is returned by every read of a closed QuadStore.
var ErrClosed = errors.New("quadstore: the graph was closed")

// QuadStore is the graph of a store as of one transaction. It is safe for concurrent use;
// each of its iterators is for one goroutine.
type QuadStore struct {
	s      *graphstore.Store
	asOf   record.TxID
	owned  bool // Close closes s (the registered backend's)
	closed atomic.Bool

	claims, artifacts int64 // as the store counted them when the QuadStore was made

	mu    sync.Mutex
	exact *graph.Stats // counted once, on the first Stats(exact)
	found map[found][]quad.Quad
}

// found names the quads with one node in one direction that the index found; the graph keeps
// up to foundMax of them (each of at most foundQuads quads), so that a walk that comes back to
// a node (a why tree reads a version's quads for each of its fields) reads it once.
type found struct {
	dir  quad.Direction
	val  quad.Value
	pred quad.IRI
}

const (
	foundMax   = 4096
	foundQuads = 1024
)

func (qs *QuadStore) cached(k found) ([]quad.Quad, bool) {
	qs.mu.Lock()
	defer qs.mu.Unlock()
	l, ok := qs.found[k]
	return l, ok
}

func (qs *QuadStore) keep(k found, l []quad.Quad) {
	if len(l) > foundQuads {
		return
	}
	qs.mu.Lock()
	defer qs.mu.Unlock()
	if qs.found == nil || len(qs.found) >= foundMax {
		qs.found = make(map[found][]quad.Quad, 64) // the simplest bound: start again
	}
	qs.found[k] = l
}

var _ graph.QuadStore = (*QuadStore)(nil)

// New returns the graph of s as of its newest transaction.
func New(ctx context.Context, s *graphstore.Store) (*QuadStore, error) { return NewAt(ctx, s, 0) }

// NewAt returns the graph of s as of transaction tx (0: the newest). It reads the store's state
// and nothing else.
func NewAt(ctx context.Context, s *graphstore.Store, tx record.TxID) (*QuadStore, error) {
	qs := &QuadStore{s: s}
	err := s.Read(ctx, func(ix *index.Index) error {
		switch {
		case tx == 0:
			tx = ix.Head()
		case tx < 0 || tx > ix.Head():
			return fmt.Errorf("quadstore: as of tx %d: transactions run from 1 to %d", tx, ix.Head())
		}
		qs.asOf = tx
		qs.claims, qs.artifacts = int64(ix.ClaimCount()), int64(ix.ArtifactCount())
		return nil
	})
	if err != nil {
		return nil, err
	}
	return qs, nil
}

// AsOf is the transaction the graph is as of.
func (qs *QuadStore) AsOf() record.TxID { return qs.asOf }

// view runs fn on a snapshot of the store, read as of the graph's transaction by the owner.
func (qs *QuadStore) view(ctx context.Context, fn func(v *index.View) error) error {
	if qs.closed.Load() {
		return ErrClosed
	}
	return qs.s.Read(ctx, func(ix *index.Index) error {
		return fn(ix.View(qs.asOf, ix.TxTime(qs.asOf), ""))
	})
}

// canon is v in the form the graph holds it (codec.CanonQuad's): a time as its xsd:dateTime
// typed string, an xsd:string, xsd:integer, xsd:double or xsd:boolean typed string as the
// plain value.
func canon(v quad.Value) quad.Value {
	if v == nil {
		return nil
	}
	return codec.CanonQuad(quad.Quad{Object: v}).Object
}

// ValueOf returns the graph's reference to v, or nil if v is not a node of it. A record's IRI
// resolves only if the record is in the graph (a read of the store); an IRI of the
// vocabulary's namespaces (rdf:, prov:, mql:), a literal and a grant's IRI (a claim's
// mql:grant may name the owner's standing, urn:mql:grant:owner, which is no grant) resolve
// without reading anything, whether or not a quad holds them (deciding it would mean reading
// every transaction): an iterator from them finds what the graph holds.
func (qs *QuadStore) ValueOf(v quad.Value) (graph.Ref, error) {
	v = canon(v)
	n := parseNode(v)
	switch n.kind {
	case kNone:
		return nil, nil
	case kVocab, kLiteral:
		return valueRef{v}, nil
	case kRecord:
		if n.rk == index.KindGrant {
			return valueRef{v}, nil
		}
	}
	var ok bool
	err := qs.view(context.Background(), func(vw *index.View) error {
		ok = exists(vw, n)
		return nil
	})
	if err != nil || !ok {
		return nil, err
	}
	return nodeRef{v}, nil
}

// NameOf returns the value a node reference stands for (nil for a quad's reference).
func (qs *QuadStore) NameOf(r graph.Ref) (quad.Value, error) {
	if p, ok := r.(refs.PreFetchedValue); ok {
		return p.NameOf(), nil
	}
	return nil, nil
}

// nodeRef is the reference of a value the graph holds: read from one of its quads, or a
// record's IRI found recorded.
type nodeRef struct{ v quad.Value }

func (r nodeRef) Key() any            { return r.v }
func (r nodeRef) NameOf() quad.Value  { return r.v }
func (r valueRef) Key() any           { return r.v }
func (r valueRef) NameOf() quad.Value { return r.v }

// valueRef is the reference ValueOf gives, without reading the store, to a vocabulary IRI, a
// literal or a grant's IRI, which the graph may or may not hold. Both kinds of reference have
// the value as their key, so they match each other and any other refs.PreFetchedValue.
type valueRef struct{ v quad.Value }

// quadRef is the reference of a quad: the quad itself.
type quadRef struct{ q quad.Quad }

func (r quadRef) Key() any { return r.q }

func asQuad(r graph.Ref) (quad.Quad, bool) {
	q, ok := r.(quadRef)
	return q.q, ok
}

// holdsQuad reports whether q, a quad of some graph of the store, is in this one: whether its
// transaction is.
func (qs *QuadStore) holdsQuad(q quad.Quad) bool {
	id, ok := codec.ParseTxIRI(q.Label)
	return ok && id <= qs.asOf
}

// Quad returns the quad a reference from one of the graph's quad iterators stands for.
func (qs *QuadStore) Quad(r graph.Ref) (quad.Quad, error) {
	q, ok := asQuad(r)
	if !ok {
		return quad.Quad{}, fmt.Errorf("quadstore: %v is not a quad of this graph", r)
	}
	return q, nil
}

// QuadDirection returns the node in direction d of a quad.
func (qs *QuadStore) QuadDirection(r graph.Ref, d quad.Direction) (graph.Ref, error) {
	q, ok := asQuad(r)
	if !ok {
		return nil, fmt.Errorf("quadstore: %v is not a quad of this graph", r)
	}
	v := q.Get(d)
	if v == nil {
		return nil, nil
	}
	return nodeRef{v}, nil
}

// nodeValue is the value of a node reference, nil for anything else.
func nodeValue(r graph.Ref) quad.Value {
	switch r := r.(type) {
	case nodeRef:
		return r.v
	case valueRef:
		return r.v
	}
	if p, ok := r.(refs.PreFetchedValue); ok {
		return canon(p.NameOf())
	}
	return nil
}

// QuadIterator returns the quads that have the node r in direction d.
func (qs *QuadStore) QuadIterator(d quad.Direction, r graph.Ref) iterator.Shape {
	v := nodeValue(r)
	if v == nil || d == quad.Any {
		return iterator.NewNull()
	}
	return qs.quadsWith(d, v)
}

// QuadIteratorSize is the number of quads QuadIterator(d, r) gives: exact for a record's own
// quads, a transaction's and those the index links to a claim or artifact version; an
// estimate for what is read by a scan.
func (qs *QuadStore) QuadIteratorSize(ctx context.Context, d quad.Direction, r graph.Ref) (refs.Size, error) {
	v := nodeValue(r)
	if v == nil || d == quad.Any {
		return refs.Size{Value: 0, Exact: true}, nil
	}
	return qs.quadsWith(d, v).size(ctx)
}

// QuadsAllIterator returns every quad of the graph, transaction by transaction.
func (qs *QuadStore) QuadsAllIterator() iterator.Shape { return qs.quadsWith(quad.Any, nil) }

// NodesAllIterator returns every node of the graph once: each record's IRI at the transaction
// that records it, and each vocabulary IRI and literal where a quad first holds it. It reads
// every transaction and keeps the hashes of the vocabulary IRIs and literals met so far.
func (qs *QuadStore) NodesAllIterator() iterator.Shape { return &allNodes{qs: qs} }

// Stats counts the graph's nodes and quads. Unless exact is set, it estimates them from the
// store's counts of claims, artifact versions and transactions; exact counts read every
// transaction once, and are kept.
func (qs *QuadStore) Stats(ctx context.Context, exact bool) (graph.Stats, error) {
	qs.mu.Lock()
	st := qs.exact
	qs.mu.Unlock()
	if st != nil {
		return *st, nil
	}
	if !exact {
		return graph.Stats{
			Nodes: refs.Size{Value: qs.nodesEstimate(), Exact: false},
			Quads: refs.Size{Value: qs.quadsEstimate(), Exact: false},
		}, nil
	}
	it := (&allNodes{qs: qs}).iterate()
	defer it.Close()
	var nodes int64
	for it.Next(ctx) {
		nodes++
	}
	if err := it.Err(); err != nil {
		return graph.Stats{}, err
	}
	st = &graph.Stats{Nodes: refs.Size{Value: nodes, Exact: true}, Quads: refs.Size{Value: it.quadsN, Exact: true}}
	qs.mu.Lock()
	qs.exact = st
	qs.mu.Unlock()
	return *st, nil
}

// Estimates: a claim is about 14 quads (12 of its own, its transaction's mql:wrote, a share of
// its source's), an artifact version about 11, a transaction 6 of its own.
func (qs *QuadStore) quadsEstimate() int64 {
	return 14*qs.claims + 11*qs.artifacts + 8*int64(qs.asOf)
}

func (qs *QuadStore) nodesEstimate() int64 {
	return 2*qs.claims + qs.artifacts + 2*int64(qs.asOf) + 100
}

// ApplyDeltas refuses: the graph is read-only.
func (qs *QuadStore) ApplyDeltas([]graph.Delta, graph.IgnoreOpts) error { return ErrReadOnly }

// NewQuadWriter refuses: the graph is read-only.
func (qs *QuadStore) NewQuadWriter() (quad.WriteCloser, error) { return nil, ErrReadOnly }

// Close ends the QuadStore: its iterators and reads fail with ErrClosed from then on. The store
// stays open, unless the QuadStore was opened as Cayley's backend "mql", which opened it.
func (qs *QuadStore) Close() error {
	if qs.closed.Swap(true) || !qs.owned {
		return nil
	}
	return qs.s.Close()
}

// Backend is the name the package registers with Cayley.
const Backend = "mql"

func init() {
	graph.RegisterQuadStore(Backend, graph.QuadStoreRegistration{
		NewFunc:      openBackend,
		IsPersistent: true,
	})
}

// openBackend opens the mql store at addr (a bbolt file or a postgres:// DSN; it must exist)
// and returns its graph as of its newest transaction, or of option "tx". Closing the QuadStore
// closes the store. A bbolt file is held by one process, and one Open, at a time: a store that
// this process opened already is walked through its own Graph instead.
func openBackend(addr string, opts graph.Options) (graph.QuadStore, error) {
	if addr == "" || addr == "memory:" || addr == "memory" {
		return nil, fmt.Errorf("quadstore: %q: a memory: store lives in the process that opened it; walk it with (*mql.DB).Graph", addr)
	}
	tx, err := opts.IntKey("tx", 0)
	if err != nil {
		return nil, err
	}
	timeout, err := opts.IntKey("open_timeout_ms", 1000)
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	s, err := graphstore.Open(ctx, addr, graphstore.Options{MustExist: true, OpenTimeout: time.Duration(timeout) * time.Millisecond})
	if err != nil {
		return nil, err
	}
	qs, err := NewAt(ctx, s, record.TxID(tx))
	if err != nil {
		s.Close()
		return nil, err
	}
	qs.owned = true
	return qs, nil
}

// String names the graph.
func (qs *QuadStore) String() string {
	return fmt.Sprintf("mql graph of a %s store as of tx %d", strings.ToLower(qs.s.Backend()), qs.asOf)
}
