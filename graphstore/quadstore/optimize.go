package quadstore

import (
	"context"

	"github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/cayley/graph/iterator"
	"github.com/cayleygraph/cayley/query/shape"
	"github.com/cayleygraph/quad"
)

var _ shape.Optimizer = (*QuadStore)(nil)

// OptimizeShape is Cayley's hook for a backend's own plans (shape.Optimizer): a query's quads
// of predicate mql:subject, mql:predicate or mql:name with a given name as object — the claims
// about a subject, of a predicate, the principal or the artifact versions of a name — are
// found through the index instead of by reading every transaction. Only the shapes the path
// API optimizes come here (cayley.StartPath(qs, quad.String("Klarveld")).In(mql:subject), or
// .Has(mql:subject, quad.String("Klarveld"))); the steps of a FollowRecursive are built
// without it.
func (qs *QuadStore) OptimizeShape(ctx context.Context, s shape.Shape) (shape.Shape, bool) {
	a, ok := s.(shape.QuadsAction)
	if !ok || len(a.Save) != 0 || len(a.Filter) != 2 {
		return s, false
	}
	p, o := nodeValue(a.Filter[quad.Predicate]), nodeValue(a.Filter[quad.Object])
	lit, ok := o.(quad.String)
	if !ok || !named(p) {
		return s, false
	}
	return namedShape{qs: qs, pred: p.(quad.IRI), name: lit, result: a.Result}, true
}

// namedShape is the nodes in direction result of the quads of pred with the name as object.
type namedShape struct {
	qs     *QuadStore
	pred   quad.IRI
	name   quad.String
	result quad.Direction
}

func (s namedShape) BuildIterator(graph.QuadStore) iterator.Shape {
	sh := s.qs.quadsWith(quad.Object, s.name)
	sh.pred, sh.scan = s.pred, false
	return graph.NewHasA(s.qs, sh, s.result)
}

func (s namedShape) Optimize(ctx context.Context, r shape.Optimizer) (shape.Shape, bool) {
	return s, false
}
