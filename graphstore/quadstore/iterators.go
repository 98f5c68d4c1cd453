package quadstore

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/cayley/graph/iterator"
	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// A scan reads transactions in batches, one snapshot each: a batch ends after batchTxs
// transactions, batchQuads quads read or batchMatches quads kept, whichever comes first, so
// that a snapshot stays short and an iterator holds at most one batch (and at most one
// transaction's quads) at a time.
const (
	batchTxs     = 256
	batchQuads   = 16 << 10
	batchMatches = 1 << 10
)

// quads is the iterator.Shape of the quads with val in direction dir (quad.Any: every quad).
type quads struct {
	qs   *QuadStore
	dir  quad.Direction
	val  quad.Value
	pred quad.IRI // set for the quads of a predicate with a name as object (namedQuads)
	n    node
	scan bool // found by reading every transaction, not through the index

	mu   sync.Mutex
	done bool // list holds the quads
	list []quad.Quad
}

var _ iterator.Shape = (*quads)(nil)

func (qs *QuadStore) quadsWith(dir quad.Direction, val quad.Value) *quads {
	sh := &quads{qs: qs, dir: dir, val: val}
	if val != nil {
		sh.n = parseNode(val)
	}
	switch dir {
	case quad.Any:
		sh.scan = true
	case quad.Predicate:
		sh.scan = sh.n.kind == kVocab
	case quad.Object:
		switch sh.n.kind {
		case kVocab, kLiteral:
			sh.scan = true
		case kRecord:
			sh.scan = sh.n.rk == index.KindPrincipal || sh.n.rk == index.KindGrant || sh.n.rk == index.KindSource
		}
	}
	return sh
}

// quads are the quads the index finds (for a shape that does not scan), made once.
func (sh *quads) quads(ctx context.Context) ([]quad.Quad, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.qs.closed.Load() {
		return nil, ErrClosed
	}
	if sh.done {
		return sh.list, nil
	}
	key := found{sh.dir, sh.val, sh.pred}
	if l, ok := sh.qs.cached(key); ok {
		sh.list, sh.done = l, true
		return l, nil
	}
	var out []quad.Quad
	err := sh.qs.view(ctx, func(v *index.View) error {
		var err error
		switch {
		case sh.pred != "":
			out, err = namedQuads(v, sh.pred, sh.val.(quad.String))
		case sh.dir == quad.Subject:
			out, err = subjectQuads(v, sh.n, sh.val)
		case sh.dir == quad.Object:
			out, _, err = objectQuads(v, sh.n, sh.val)
		case sh.dir == quad.Label:
			if sh.n.kind == kTx {
				if tx := v.Tx(sh.n.tx); tx != nil {
					out, err = codec.EncodeTx(tx)
				}
			}
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	sh.list, sh.done = slices.Clip(out), true
	sh.qs.keep(key, sh.list)
	return sh.list, nil
}

func (sh *quads) matches(q quad.Quad) bool {
	return (sh.dir == quad.Any || q.Get(sh.dir) == sh.val) && (sh.pred == "" || q.Predicate == sh.pred)
}

func (sh *quads) size(ctx context.Context) (refs.Size, error) {
	if !sh.scan {
		l, err := sh.quads(ctx)
		return refs.Size{Value: int64(len(l)), Exact: err == nil}, err
	}
	if sh.dir == quad.Any {
		st, err := sh.qs.Stats(ctx, false)
		return st.Quads, err
	}
	return refs.Size{Value: sh.estimate(), Exact: false}, nil
}

// estimate is how many quads a scan keeps, from the store's counts: a predicate by the records
// that write it, an object by what points at it.
func (sh *quads) estimate() int64 {
	c, a, t := sh.qs.claims, sh.qs.artifacts, int64(sh.qs.asOf)
	if sh.dir == quad.Predicate {
		switch sh.val {
		case codec.MQLSubject, codec.MQLValue, codec.MQLKind, codec.ProvHadPrimarySource, codec.MQLSourceOrder,
			codec.MQLValidFrom, codec.MQLValidUntil, codec.MQLContests, codec.MQLCorroborates, codec.MQLGrantPred:
			return c + 1
		case codec.MQLPredicate, codec.ProvWasRevisionOf:
			return c + a/2 + 1
		case codec.MQLVersion, codec.MQLConfidence, codec.ProvWasAttributedTo, codec.MQLSeenBy, codec.MQLSeenByOrder:
			return c + a + 1
		case codec.ProvWasDerivedFrom, codec.MQLDerivedFromOrder:
			return 2*a + 1
		case codec.RDFType:
			return 2*(c+a) + 3*t
		case codec.MQLWrote, codec.MQLOrd:
			return c + a + 2*t
		}
		return t + 1 // the predicates of the other records: a few a transaction at most
	}
	if sh.n.kind == kVocab { // a class: the records of its kind
		return (c+a)/2 + 1
	}
	return c/4 + 1
}

func (sh *quads) String() string {
	if sh.dir == quad.Any {
		return "MQLQuadsAll"
	}
	if sh.pred != "" {
		return fmt.Sprintf("MQLQuads(predicate %v, %v %v)", sh.pred, sh.dir, sh.val)
	}
	return fmt.Sprintf("MQLQuads(%v %v)", sh.dir, sh.val)
}

func (sh *quads) Iterate() iterator.Scanner {
	return &quadScanner{sh: sh, next: 1}
}

func (sh *quads) Lookup() iterator.Index { return &quadLookup{sh: sh} }

func (sh *quads) Stats(ctx context.Context) (iterator.Costs, error) {
	s, err := sh.size(ctx)
	next := int64(1)
	if sh.scan && s.Value > 0 {
		// A scan reads every quad to keep these: each kept one costs its share.
		next = max(1, min(sh.qs.quadsEstimate()/s.Value, 1<<20))
	}
	return iterator.Costs{ContainsCost: 1, NextCost: next, Size: s}, err
}

func (sh *quads) Optimize(ctx context.Context) (iterator.Shape, bool) { return sh, false }
func (sh *quads) SubIterators() []iterator.Shape                      { return nil }

// quadScanner walks a shape's quads: its list, or the transactions in batches.
type quadScanner struct {
	sh    *quads
	buf   []quad.Quad
	i     int
	next  record.TxID // a scan's next transaction
	last  bool        // buf holds the last of them
	cur   quad.Quad
	has   bool
	err   error
	ended bool
}

func (it *quadScanner) Next(ctx context.Context) bool {
	it.has = false
	if it.err != nil || it.ended {
		return false
	}
	if err := ctx.Err(); err != nil {
		it.err = err
		return false
	}
	for it.i >= len(it.buf) {
		if it.last {
			it.ended = true
			return false
		}
		if !it.fill(ctx) {
			return false
		}
	}
	it.cur, it.has = it.buf[it.i], true
	it.i++
	return true
}

func (it *quadScanner) fill(ctx context.Context) bool {
	it.buf, it.i = it.buf[:0], 0
	sh := it.sh
	if !sh.scan {
		it.buf, it.err = sh.quads(ctx)
		it.last = true
		return it.err == nil
	}
	asOf := sh.qs.asOf
	err := sh.qs.view(ctx, func(v *index.View) error {
		read := 0
		for txs := 0; it.next <= asOf && txs < batchTxs && read < batchQuads && len(it.buf) < batchMatches; txs++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			qs, err := codec.EncodeTx(v.Tx(it.next))
			if err != nil {
				return err
			}
			v.Index().Release()
			it.next++
			read += len(qs)
			for _, q := range qs {
				if sh.matches(q) {
					it.buf = append(it.buf, q)
				}
			}
		}
		return nil
	})
	if err != nil {
		it.err = err
		return false
	}
	it.last = it.next > asOf
	return true
}

func (it *quadScanner) Result() graph.Ref {
	if !it.has {
		return nil
	}
	return quadRef{it.cur}
}

func (it *quadScanner) Err() error                        { return it.err }
func (it *quadScanner) Close() error                      { it.ended, it.buf = true, nil; return nil }
func (it *quadScanner) NextPath(ctx context.Context) bool { return false }
func (it *quadScanner) TagResults(map[string]graph.Ref)   {}
func (it *quadScanner) String() string                    { return it.sh.String() + "Next" }

// quadLookup answers whether a quad of the graph is one of the shape's: by its node in the
// shape's direction, without reading the store.
type quadLookup struct {
	sh  *quads
	res graph.Ref
}

func (it *quadLookup) Contains(ctx context.Context, r graph.Ref) bool {
	it.res = nil
	q, ok := asQuad(r)
	if !ok || !it.sh.qs.holdsQuad(q) || !it.sh.matches(q) {
		return false
	}
	it.res = r
	return true
}

func (it *quadLookup) Err() error                        { return nil }
func (it *quadLookup) Close() error                      { return nil }
func (it *quadLookup) NextPath(ctx context.Context) bool { return false }
func (it *quadLookup) TagResults(map[string]graph.Ref)   {}
func (it *quadLookup) String() string                    { return it.sh.String() + "Contains" }
func (it *quadLookup) Result() graph.Ref                 { return it.res }

// allNodes is the iterator.Shape of every node.
type allNodes struct{ qs *QuadStore }

var _ iterator.Shape = (*allNodes)(nil)

func (sh *allNodes) String() string { return "MQLNodesAll" }

func (sh *allNodes) iterate() *nodeScanner {
	return &nodeScanner{quads: &quadScanner{sh: sh.qs.quadsWith(quad.Any, nil), next: 1}, seen: map[refs.ValueHash]struct{}{}}
}

func (sh *allNodes) Iterate() iterator.Scanner { return sh.iterate() }
func (sh *allNodes) Lookup() iterator.Index {
	return &nodeLookup{qs: sh.qs, known: map[quad.Value]bool{}}
}

func (sh *allNodes) Stats(ctx context.Context) (iterator.Costs, error) {
	st, err := sh.qs.Stats(ctx, false)
	return iterator.Costs{ContainsCost: 1, NextCost: 2, Size: st.Nodes}, err
}

func (sh *allNodes) Optimize(ctx context.Context) (iterator.Shape, bool) { return sh, false }
func (sh *allNodes) SubIterators() []iterator.Shape                      { return nil }

// nodeScanner gives each node of the graph once, reading every quad in order: a record's IRI
// at the quad that gives it its mql class (the first of its own quads: a record refers only to
// records recorded before it or with it, which the chain check guarantees), a transaction's at
// its first quad, any other value (a vocabulary IRI, a literal, a grant's IRI, which a claim
// may use for the owner's standing) the first time it is met.
type nodeScanner struct {
	quads   *quadScanner
	seen    map[refs.ValueHash]struct{}
	label   quad.Value
	pending []quad.Value
	cur     quad.Value
	quadsN  int64
}

func (it *nodeScanner) Next(ctx context.Context) bool {
	it.cur = nil
	for len(it.pending) == 0 {
		if !it.quads.Next(ctx) {
			return false
		}
		it.quadsN++
		it.meet(it.quads.cur)
	}
	it.cur, it.pending = it.pending[0], it.pending[1:]
	return true
}

func (it *nodeScanner) meet(q quad.Quad) {
	if q.Label != it.label {
		it.label = q.Label
		it.pending = append(it.pending, q.Label)
	}
	s := q.Subject.(quad.IRI)
	switch {
	case s == q.Label:
	case isGrantIRI(s):
		it.other(s)
	case isRecordIRI(s):
		if class, ok := q.Object.(quad.IRI); ok && q.Predicate == codec.RDFType && isMQLClass(class) {
			it.pending = append(it.pending, s)
		}
	default:
		it.other(s)
	}
	it.other(q.Predicate)
	if o, ok := q.Object.(quad.IRI); !ok || !isRecordIRI(o) || isGrantIRI(o) {
		it.other(q.Object)
	}
}

// isMQLClass reports whether an rdf:type object is one of mql's classes (every record has one).
func isMQLClass(iri quad.IRI) bool {
	return len(iri) > len(codec.NSMQL) && string(iri[:len(codec.NSMQL)]) == codec.NSMQL
}

func (it *nodeScanner) other(v quad.Value) {
	h := refs.HashOf(v)
	if _, ok := it.seen[h]; ok {
		return
	}
	it.seen[h] = struct{}{}
	it.pending = append(it.pending, v)
}

func (it *nodeScanner) Result() graph.Ref {
	if it.cur == nil {
		return nil
	}
	return nodeRef{it.cur}
}

func (it *nodeScanner) Err() error                        { return it.quads.Err() }
func (it *nodeScanner) Close() error                      { it.seen, it.pending = nil, nil; return it.quads.Close() }
func (it *nodeScanner) NextPath(ctx context.Context) bool { return false }
func (it *nodeScanner) TagResults(map[string]graph.Ref)   {}
func (it *nodeScanner) String() string                    { return "MQLNodesAllNext" }

// nodeLookup answers whether a value is a node of the graph: a record's IRI by the index, a
// vocabulary IRI or a literal by reading the transactions until a quad holds it.
type nodeLookup struct {
	qs    *QuadStore
	known map[quad.Value]bool
	res   graph.Ref
	err   error
}

func (it *nodeLookup) Contains(ctx context.Context, r graph.Ref) bool {
	it.res = nil
	if n, ok := r.(nodeRef); ok {
		if n.v == nil {
			return false
		}
		it.res = r // read from a quad of this graph, or found recorded
		return true
	}
	v := nodeValue(r)
	if v == nil {
		return false
	}
	ok, seen := it.known[v]
	if !seen {
		ok = it.holds(ctx, v)
		if it.err != nil {
			return false
		}
		it.known[v] = ok
	}
	if ok {
		it.res = r
	}
	return ok
}

func (it *nodeLookup) holds(ctx context.Context, v quad.Value) bool {
	n := parseNode(v)
	scan := n.kind == kVocab || n.kind == kLiteral
	if n.kind == kRecord && n.rk == index.KindGrant {
		var ok bool
		if it.err = it.qs.view(ctx, func(vw *index.View) error { ok = exists(vw, n); return nil }); ok || it.err != nil {
			return ok
		}
		scan = true // the owner's standing, urn:mql:grant:owner, is a node if a claim names it
	}
	switch {
	case n.kind == kNone:
		return false
	case scan:
		sc := &quadScanner{sh: it.qs.quadsWith(quad.Any, nil), next: 1}
		defer sc.Close()
		for sc.Next(ctx) {
			q := sc.cur
			if q.Subject == v || q.Predicate == v || q.Object == v || q.Label == v {
				return true
			}
		}
		it.err = sc.Err()
		return false
	}
	var ok bool
	it.err = it.qs.view(ctx, func(vw *index.View) error {
		ok = exists(vw, n)
		return nil
	})
	return ok
}

func (it *nodeLookup) Result() graph.Ref                 { return it.res }
func (it *nodeLookup) Err() error                        { return it.err }
func (it *nodeLookup) Close() error                      { return nil }
func (it *nodeLookup) NextPath(ctx context.Context) bool { return false }
func (it *nodeLookup) TagResults(map[string]graph.Ref)   {}
func (it *nodeLookup) String() string                    { return "MQLNodesAllContains" }
