package codec

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cayleygraph/quad"
)

// naiveGraph is what a Graph must hold: each subject's values of each predicate, in the
// order first met, without repeats; subjects and predicates in the order first met.
type naiveGraph struct {
	order []quad.IRI
	preds map[quad.IRI][]quad.IRI
	vals  map[[2]quad.IRI][]quad.Value
	quads []quad.Quad
}

func naive(quads []quad.Quad) *naiveGraph {
	g := &naiveGraph{preds: map[quad.IRI][]quad.IRI{}, vals: map[[2]quad.IRI][]quad.Value{}}
	seen := map[quad.Quad]bool{}
	for _, q := range quads {
		if seen[q] {
			continue
		}
		seen[q] = true
		s, p := q.Subject.(quad.IRI), q.Predicate.(quad.IRI)
		if _, ok := g.preds[s]; !ok {
			g.order = append(g.order, s)
			g.preds[s] = nil
		}
		k := [2]quad.IRI{s, p}
		if _, ok := g.vals[k]; !ok {
			g.preds[s] = append(g.preds[s], p)
		}
		g.vals[k] = append(g.vals[k], q.Object)
		g.quads = append(g.quads, q)
	}
	return g
}

func checkGraph(t *testing.T, quads []quad.Quad) {
	t.Helper()
	g := NewGraph(len(quads))
	added := 0
	for _, q := range quads {
		if g.Add(q) {
			added++
		}
	}
	want := naive(quads)
	if added != len(want.quads) || !slices.Equal(g.Quads, want.quads) {
		t.Fatalf("kept %d quads %v, want %d %v", added, g.Quads, len(want.quads), want.quads)
	}
	var order []quad.IRI
	for _, n := range g.Order {
		order = append(order, n.IRI)
		if g.Node(n.IRI) != n {
			t.Fatalf("Node(%s) is not the node listed", n.IRI)
		}
	}
	if !slices.Equal(order, want.order) {
		t.Fatalf("subjects %v, want %v", order, want.order)
	}
	for _, s := range want.order {
		n := g.Node(s)
		for _, p := range want.preds[s] {
			if got, w := n.All(p), want.vals[[2]quad.IRI{s, p}]; !slices.Equal(got, w) {
				t.Fatalf("%s %s: %v, want %v", s, p, got, w)
			}
		}
		if got := n.All("urn:nothing"); got != nil {
			t.Fatalf("%s: values of a predicate it does not have: %v", s, got)
		}
	}
	// What All returns is the caller's: appending to it changes nothing the graph holds.
	for _, s := range want.order {
		n := g.Node(s)
		for _, p := range want.preds[s] {
			vs := n.All(p)
			_ = append(vs, quad.String("clobber"))
		}
	}
	for _, s := range want.order {
		for _, p := range want.preds[s] {
			if got, w := g.Node(s).All(p), want.vals[[2]quad.IRI{s, p}]; !slices.Equal(got, w) {
				t.Fatalf("after appending to what All returned, %s %s: %v, want %v", s, p, got, w)
			}
		}
	}
}

func TestGraph(t *testing.T) {
	q := func(s, p string, o quad.Value) quad.Quad {
		return quad.Quad{Subject: quad.IRI(s), Predicate: quad.IRI(p), Object: o, Label: quad.IRI("g")}
	}
	many := func(s, p string, n int, from int) []quad.Quad {
		var out []quad.Quad
		for i := range n {
			out = append(out, q(s, p, quad.Int(from+i)))
		}
		return out
	}
	cases := map[string][]quad.Quad{
		"empty":                 nil,
		"one":                   {q("a", "p", quad.String("x"))},
		"a repeat":              {q("a", "p", quad.String("x")), q("a", "p", quad.String("x"))},
		"a node's quads apart":  {q("a", "p", quad.Int(1)), q("b", "p", quad.Int(2)), q("a", "r", quad.Int(3)), q("a", "p", quad.Int(4))},
		"a predicate's apart":   {q("a", "p", quad.Int(1)), q("a", "r", quad.Int(2)), q("a", "p", quad.Int(3)), q("a", "r", quad.Int(4)), q("a", "p", quad.Int(1))},
		"the same value, other": {q("a", "p", quad.Int(1)), q("a", "r", quad.Int(1)), q("b", "p", quad.Int(1))},
		"a long list":           append(append(many("a", "p", 40, 0), many("a", "p", 40, 20)...), many("b", "p", 5, 0)...),
		"a long list apart":     append(append(many("a", "p", 30, 0), many("b", "p", 3, 0)...), many("a", "p", 30, 10)...),
	}
	for name, quads := range cases {
		t.Run(name, func(t *testing.T) { checkGraph(t, quads) })
	}
}

// TestGraphShuffled adds the quads of real transactions, repeated and in every order a seeded
// shuffle gives, and compares the Graph with a map of every quad.
func TestGraphShuffled(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 200 {
		var quads []quad.Quad
		for range 1 + r.IntN(60) {
			s := fmt.Sprintf("s%d", r.IntN(6))
			p := fmt.Sprintf("p%d", r.IntN(4))
			quads = append(quads, quad.Quad{Subject: quad.IRI(s), Predicate: quad.IRI(p), Object: quad.Int(r.IntN(45)), Label: quad.IRI("g")})
		}
		if r.IntN(2) == 0 {
			slices.SortStableFunc(quads, func(a, b quad.Quad) int {
				return cmpIRI(a.Subject.(quad.IRI), b.Subject.(quad.IRI))
			})
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkGraph(t, quads) })
	}
}

func cmpIRI(a, b quad.IRI) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
