// Package provenance answers the derivation questions: what a claim or artifact rests on (the
// why tree, why.go), whether an artifact needs review, how confident it can be, what depends
// on a changed node (impact), and whether a derivation would close a cycle (DependsOn). It reads through an index.View, so it never sees past the
// reader's transaction or perception.
package provenance

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// NodeLive reports whether a claim or artifact version is live in v, and when it stopped being
// live if it is not.
func NodeLive(v *index.View, n record.NodeRef) (bool, time.Time) {
	if n.Claim != nil {
		e := v.All().Claim(*n.Claim)
		if e == nil {
			return false, time.Time{}
		}
		st, since := v.State(e)
		return st == index.Live, since
	}
	if n.Artifact != nil {
		a := v.All().Artifact(*n.Artifact)
		if a == nil {
			return false, time.Time{}
		}
		at := v.ArtifactSupersededAt(a)
		return at.IsZero(), at
	}
	return false, time.Time{}
}

// Inputs returns what an artifact version was derived from, transitively, each once, in
// breadth-first order. Derivation edges point at versions that existed before, so the walk
// always ends; the visited set also guards stores written by other tools.
func Inputs(v *index.View, a *index.ArtifactNode) []record.NodeRef {
	all := v.All()
	seen := map[string]bool{}
	var out []record.NodeRef
	queue := append([]record.NodeRef(nil), a.DerivedFrom...)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		if seen[n.String()] {
			continue
		}
		seen[n.String()] = true
		out = append(out, n)
		if n.Artifact != nil {
			if an := all.Artifact(*n.Artifact); an != nil {
				queue = append(queue, an.DerivedFrom...)
			}
		}
	}
	return out
}

// Review is the review state of an artifact version.
type Review struct {
	Needs bool
	// Stale lists the inputs (transitive) that stopped being live after the last review, or at
	// all if it was never reviewed, leaving out those a review of an artifact in between had
	// accepted before what rests on it was derived.
	Stale []record.NodeRef
	Last  *record.Review
}

// ReviewState applies rule 4: an artifact needs review when anything it was derived from,
// transitively, is no longer live, unless it was reviewed after that input stopped being live.
// A review says an artifact is sound as of then, so what was derived from it afterwards rests on
// the reviewed artifact: an input that had stopped being live by that review does not make them
// need review (through that artifact; reached another way, it still may).
func ReviewState(v *index.View, a *index.ArtifactNode) Review {
	return NewCache(v).ReviewState(a)
}

// Confidence applies rule 6: an artifact's effective confidence is its own, capped by the
// lowest effective confidence among its inputs (claims after decay, artifacts recursively).
func Confidence(v *index.View, a *index.ArtifactNode) float64 {
	return NewCache(v).Confidence(a)
}

// Cache holds review state and confidence of the artifacts one read has met, so that a read
// rendering many artifacts that share inputs (an impact over a hub, a why down a chain) works
// out each artifact once, from the facts of its direct inputs: the read then costs time linear
// in what it reaches, where walking every artifact's inputs afresh was quadratic on a chain.
// A Cache belongs to one view and one goroutine.
type Cache struct {
	v, all *index.View
	arts   nodeMap[*facts]
	free   []facts // facts are allocated in blocks: a read may meet thousands
}

// NewCache returns an empty cache over v.
func NewCache(v *index.View) *Cache {
	return &Cache{v: v, all: v.All(), arts: newNodeMap[*facts](v)}
}

// nodeMap maps artifact versions to values: a small map while it holds few, then a table
// indexed by the versions' Seq. A read that meets thousands of artifacts then pays an array
// index per lookup instead of a hash, and one that meets a few does not allocate a table the
// size of the store.
type nodeMap[T comparable] struct {
	ix    *index.Index
	small map[*index.ArtifactNode]T
	big   []T
}

// nodeMapSmall is where a nodeMap switches to its table.
const nodeMapSmall = 64

func newNodeMap[T comparable](v *index.View) nodeMap[T] {
	return nodeMap[T]{ix: v.Index(), small: map[*index.ArtifactNode]T{}}
}

func (m *nodeMap[T]) get(n *index.ArtifactNode) T {
	if m.big != nil {
		return m.big[n.Seq()]
	}
	return m.small[n]
}

func (m *nodeMap[T]) put(n *index.ArtifactNode, x T) {
	if m.big != nil {
		m.big[n.Seq()] = x
		return
	}
	m.small[n] = x
	if len(m.small) > nodeMapSmall {
		m.big = make([]T, m.ix.ArtifactCount())
		for k, v := range m.small {
			m.big[k.Seq()] = v
		}
		m.small = nil
	}
}

func (m *nodeMap[T]) len() int {
	if m.big != nil {
		return nodeMapSmall + 1 // at least
	}
	return len(m.small)
}

func (c *Cache) newFacts(confidence float64) *facts {
	if len(c.free) == 0 {
		c.free = make([]facts, min(max(c.arts.len(), 16), 1024))
	}
	f := &c.free[0]
	c.free = c.free[1:]
	f.confidence = confidence
	return f
}

type facts struct {
	done       bool
	confidence float64
	// notLive are the transitive inputs that are not live and that no review of an artifact in
	// between accepted (ReviewState's rule), each at the shortest depth it is reached at without
	// one, in the order Review.Stale reports them in.
	notLive []input
}

type input struct {
	node  record.NodeRef
	since time.Time // when it stopped being live
	depth int       // hops from the artifact: 1 for a direct input
}

// nodeKey identifies a claim or artifact version without spelling out its reference.
type nodeKey struct {
	claim    record.ClaimID
	artifact record.ArtifactID
}

func keyOf(n record.NodeRef) nodeKey {
	var k nodeKey
	if n.Claim != nil {
		k.claim = *n.Claim
	}
	if n.Artifact != nil {
		k.artifact = *n.Artifact
	}
	return k
}

// ReviewState is ReviewState(v, a) for the cache's view.
func (c *Cache) ReviewState(a *index.ArtifactNode) Review {
	var r Review
	reviewed := time.Time{}
	if rs := c.v.Reviews(a); len(rs) > 0 {
		r.Last = rs[len(rs)-1]
		reviewed = c.v.TxTime(r.Last.Tx)
	}
	for _, in := range c.facts(a).notLive {
		if r.Last == nil || in.since.After(reviewed) {
			r.Stale = append(r.Stale, in.node)
		}
	}
	r.Needs = len(r.Stale) > 0
	return r
}

// Confidence is Confidence(v, a) for the cache's view.
func (c *Cache) Confidence(a *index.ArtifactNode) float64 {
	return c.facts(a).confidence
}

// facts works out a and every input artifact not yet in the cache, inputs first. The walk keeps
// its own stack, so a chain of any length does not deepen the goroutine's.
func (c *Cache) facts(a *index.ArtifactNode) *facts {
	if f := c.arts.get(a); f != nil && f.done {
		return f
	}
	stack := []*index.ArtifactNode{a}
	for len(stack) > 0 {
		top := stack[len(stack)-1]
		f := c.arts.get(top)
		if f == nil {
			// Its inputs go above it, to be done first. An input already in the cache is done,
			// or still open because it lies on a cycle (impossible by construction): then its
			// own confidence and no stale inputs stand in for it, which ends the walk.
			c.arts.put(top, c.newFacts(top.Confidence))
			for i := range top.DerivedFrom {
				if an, _ := c.all.Input(top, i); an != nil && c.arts.get(an) == nil {
					stack = append(stack, an)
				}
			}
			continue
		}
		stack = stack[:len(stack)-1]
		if !f.done {
			c.fill(top, f)
			f.done = true
		}
	}
	return c.arts.get(a)
}

// fill works out a's facts from those of its direct inputs. A node reached through several
// inputs counts at its shortest depth, through the first input that gives it; ordering by
// depth, that input, and the node's place among that input's own not-live inputs reproduces
// the breadth-first order of a walk that enters an input artifact only for the nodes its
// review had not accepted when the artifact above it was derived (refReviewState in the root
// package's tests is that walk).
func (c *Cache) fill(a *index.ArtifactNode, f *facts) {
	type cand struct {
		input
		from, pos int
	}
	var cands []cand
	var best map[nodeKey]int // index in cands; only needed when two inputs can meet
	add := func(x cand) {
		if len(a.DerivedFrom) == 1 {
			cands = append(cands, x)
			return
		}
		if best == nil {
			best = map[nodeKey]int{}
		}
		k := keyOf(x.node)
		if i, ok := best[k]; ok {
			if x.depth < cands[i].depth {
				cands[i] = x
			}
			return
		}
		best[k] = len(cands)
		cands = append(cands, x)
	}
	for i, in := range a.DerivedFrom {
		an, e := c.all.Input(a, i)
		switch {
		case e != nil:
			if st, since := c.all.State(e); st != index.Live {
				add(cand{input{in, since, 1}, i, -1})
			}
			f.confidence = math.Min(f.confidence, c.v.EffectiveConfidence(e))
		case an == nil:
			add(cand{input{in, time.Time{}, 1}, i, -1}) // not in the view: not live
		default:
			if at := c.all.ArtifactSupersededAt(an); !at.IsZero() {
				add(cand{input{in, at, 1}, i, -1})
			}
			g := c.arts.get(an)
			if g == nil {
				continue
			}
			f.confidence = math.Min(f.confidence, g.confidence)
			var reviewed time.Time
			accepted := false
			if len(g.notLive) > 0 {
				// A review of an in a's own transaction or earlier was made before a was derived.
				reviewed, accepted = c.all.ReviewedBy(an, a.Tx)
			}
			for pos, x := range g.notLive {
				if accepted && !x.since.After(reviewed) {
					continue // that review accepted it, and a rests on what was reviewed
				}
				x.depth++
				add(cand{x, i, pos})
			}
		}
	}
	if len(a.DerivedFrom) > 1 {
		slices.SortFunc(cands, func(x, y cand) int {
			return cmp.Or(cmp.Compare(x.depth, y.depth), cmp.Compare(x.from, y.from), cmp.Compare(x.pos, y.pos))
		})
	}
	if len(cands) > 0 {
		f.notLive = make([]input, len(cands))
		for i, x := range cands {
			f.notLive[i] = x.input
		}
	}
}

// Reached is an artifact version found by an impact walk.
type Reached struct {
	Artifact *index.ArtifactNode
	Depth    int
	// From is the index, in the walk's answer, of the artifact this one was reached from; at
	// depth 1, the index of the start node. Following From back spells out the shortest path;
	// the walk does not copy the path for every artifact, which on a chain would be quadratic.
	From int
}

// Impact walks breadth-first from the start nodes to every artifact version the viewer can see
// that was derived from them, transitively, up to maxDepth hops (0: unbounded). Each artifact is
// reported once, reached along a shortest path. truncated reports that the depth limit cut the
// walk. limit bounds the number of results (0: unbounded).
func Impact(v *index.View, start []record.NodeRef, maxDepth, limit int) (out []Reached, truncated bool) {
	type step struct {
		start *record.NodeRef     // at depth 1: the start node
		node  *index.ArtifactNode // later: an artifact reached
		at    int                 // the From of its dependents
	}
	dependents := func(st step) []*index.ArtifactNode {
		if st.node != nil {
			return v.ArtifactDependents(st.node)
		}
		return v.Dependents(*st.start)
	}
	seen := newNodeMap[bool](v)
	frontier := make([]step, len(start))
	for i := range start {
		if s := start[i]; s.Artifact != nil {
			if n := v.All().Artifact(*s.Artifact); n != nil {
				seen.put(n, true)
			}
		}
		frontier[i] = step{start: &start[i], at: i}
	}
	for depth := 1; len(frontier) > 0; depth++ {
		if maxDepth > 0 && depth > maxDepth {
			for _, st := range frontier {
				if len(dependents(st)) > 0 {
					return out, true
				}
			}
			return out, false
		}
		if depth > 1 {
			nodes := make([]*index.ArtifactNode, len(frontier))
			for i, st := range frontier {
				nodes[i] = st.node
			}
			v.PrefetchDependents(nodes)
		}
		var next []step
		for _, st := range frontier {
			for _, d := range dependents(st) {
				if seen.get(d) {
					continue
				}
				seen.put(d, true)
				out = append(out, Reached{Artifact: d, Depth: depth, From: st.at})
				if limit > 0 && len(out) >= limit {
					return out, true
				}
				next = append(next, step{node: d, at: len(out) - 1})
			}
		}
		frontier = next
	}
	return out, false
}

// DependsOn reports whether node rests, transitively, on any version of artifact name, through
// what v's reader may see. Inputs are pinned to versions that existed before, so the versions
// themselves never form a cycle; the rule is about names, and is judged on what the deriver
// may see so that a refusal never depends on a hidden artifact.
//
// The walk costs what it visits, not the store: since an artifact can only rest on versions
// recorded before it, one recorded before name's first version (since, from the head view all)
// cannot rest on name, and the walk does not go below it. A name never recorded needs no walk.
func DependsOn(v, all *index.View, node record.NodeRef, name string) bool {
	versions := all.ArtifactVersions(name)
	if len(versions) == 0 || node.Artifact == nil {
		return false
	}
	if node.Artifact.Name == name {
		return true
	}
	since := versions[0].Tx
	start := v.Artifact(*node.Artifact)
	if start == nil || start.Tx < since {
		return false
	}
	seen := map[*index.ArtifactNode]bool{start: true}
	stack := []*index.ArtifactNode{start}
	for len(stack) > 0 {
		a := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for i, in := range a.DerivedFrom {
			if in.Artifact == nil {
				continue
			}
			if in.Artifact.Name == name {
				return true
			}
			if p, _ := v.Input(a, i); p != nil && p.Tx >= since && !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false
}
