// Package provenance answers the derivation questions: whether an artifact needs review, how
// confident it can be, what depends on a changed node (impact), and why something is believed
// (the provenance tree). It reads through a graphstore.View, so it never sees past the reader's
// transaction or perception.
package provenance

import (
	"math"
	"time"

	"github.com/mql-dev/mql/graphstore"
)

// NodeLive reports whether a claim or artifact version is live in v, and when it stopped being
// live if it is not.
func NodeLive(v *graphstore.View, n graphstore.NodeRef) (bool, time.Time) {
	if n.Claim != nil {
		e := v.All().Claim(*n.Claim)
		if e == nil {
			return false, time.Time{}
		}
		st, since := v.State(e)
		return st == graphstore.Live, since
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
func Inputs(v *graphstore.View, a *graphstore.ArtifactNode) []graphstore.NodeRef {
	all := v.All()
	seen := map[string]bool{}
	var out []graphstore.NodeRef
	queue := append([]graphstore.NodeRef(nil), a.DerivedFrom...)
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
	// all if it was never reviewed.
	Stale []graphstore.NodeRef
	Last  *graphstore.Review
}

// ReviewState applies rule 4: an artifact needs review when anything it was derived from,
// transitively, is no longer live, unless it was reviewed after that input stopped being live.
func ReviewState(v *graphstore.View, a *graphstore.ArtifactNode) Review {
	var r Review
	reviewed := time.Time{}
	if rs := v.Reviews(a); len(rs) > 0 {
		r.Last = rs[len(rs)-1]
		reviewed = v.TxTime(r.Last.Tx)
	}
	for _, in := range Inputs(v, a) {
		live, since := NodeLive(v, in)
		if live {
			continue
		}
		if r.Last == nil || since.After(reviewed) {
			r.Stale = append(r.Stale, in)
		}
	}
	r.Needs = len(r.Stale) > 0
	return r
}

// Confidence applies rule 6: an artifact's effective confidence is its own, capped by the
// lowest effective confidence among its inputs (claims after decay, artifacts recursively).
func Confidence(v *graphstore.View, a *graphstore.ArtifactNode) float64 {
	return confidence(v, a, map[graphstore.ArtifactID]float64{})
}

func confidence(v *graphstore.View, a *graphstore.ArtifactNode, memo map[graphstore.ArtifactID]float64) float64 {
	if c, ok := memo[a.ID]; ok {
		return c
	}
	memo[a.ID] = a.Confidence // a cycle, impossible by construction, ends here
	all := v.All()
	c := a.Confidence
	for _, in := range a.DerivedFrom {
		switch {
		case in.Claim != nil:
			if e := all.Claim(*in.Claim); e != nil {
				c = math.Min(c, v.EffectiveConfidence(e))
			}
		case in.Artifact != nil:
			if an := all.Artifact(*in.Artifact); an != nil {
				c = math.Min(c, confidence(v, an, memo))
			}
		}
	}
	memo[a.ID] = c
	return c
}

// Reached is an artifact version found by an impact walk.
type Reached struct {
	Artifact *graphstore.ArtifactNode
	Path     []graphstore.NodeRef // from the start node to the artifact, both included
	Depth    int
}

// Impact walks breadth-first from the start nodes to every artifact version the viewer can see
// that was derived from them, transitively, up to maxDepth hops (0: unbounded). Each artifact is
// reported once, with its shortest path. truncated reports that the depth limit cut the walk.
// limit bounds the number of results (0: unbounded).
func Impact(v *graphstore.View, start []graphstore.NodeRef, maxDepth, limit int) (out []Reached, truncated bool) {
	type item struct {
		node graphstore.NodeRef
		path []graphstore.NodeRef
	}
	seen := map[string]bool{}
	var frontier []item
	for _, s := range start {
		seen[s.String()] = true
		frontier = append(frontier, item{s, []graphstore.NodeRef{s}})
	}
	for depth := 1; len(frontier) > 0; depth++ {
		if maxDepth > 0 && depth > maxDepth {
			for _, it := range frontier {
				if len(v.Dependents(it.node)) > 0 {
					truncated = true
					break
				}
			}
			return out, truncated
		}
		var next []item
		for _, it := range frontier {
			for _, d := range v.Dependents(it.node) {
				ref := graphstore.NodeRef{Artifact: &d.ID}
				if seen[ref.String()] {
					continue
				}
				seen[ref.String()] = true
				path := append(append([]graphstore.NodeRef(nil), it.path...), ref)
				out = append(out, Reached{Artifact: d, Path: path, Depth: depth})
				if limit > 0 && len(out) >= limit {
					return out, true
				}
				next = append(next, item{ref, path})
			}
		}
		frontier = next
	}
	return out, false
}
