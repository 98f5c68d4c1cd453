package provenance_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/provenance"
)

// refReviewState is rule 4 read literally: an input that is not live is stale when the artifact
// was not reviewed since it stopped being live and some path of derivations leads down to it
// through no artifact whose review, made before the artifact above it on the path was derived,
// had accepted it. Each stale input is found by a breadth-first walk of its own, from the
// artifact, that enters only the artifacts its review had not accepted; inputs are reported by
// the first path that walk finds them by: shortest, then first in derivation order.
func refReviewState(v *index.View, a *index.ArtifactNode) provenance.Review {
	var r provenance.Review
	reviewed := time.Time{}
	if rs := v.Reviews(a); len(rs) > 0 {
		r.Last = rs[len(rs)-1]
		reviewed = v.TxTime(r.Last.Tx)
	}
	all := v.All()
	// path finds the first path to n that no review in between accepted, as the positions of
	// its inputs, or nil.
	path := func(n record.NodeRef, since time.Time) []int {
		type step struct {
			a    *index.ArtifactNode
			path []int
		}
		entered := map[*index.ArtifactNode]bool{a: true}
		queue := []step{{a, nil}}
		for len(queue) > 0 {
			st := queue[0]
			queue = queue[1:]
			for i, in := range st.a.DerivedFrom {
				p := append(slices.Clone(st.path), i)
				if in.String() == n.String() {
					return p
				}
				if in.Artifact == nil {
					continue
				}
				an := all.Artifact(*in.Artifact)
				if an == nil || entered[an] {
					continue
				}
				accepted := false
				for _, rv := range v.Reviews(an) {
					if rv.Tx <= st.a.Tx && !since.After(v.TxTime(rv.Tx)) {
						accepted = true
					}
				}
				if !accepted {
					entered[an] = true
					queue = append(queue, step{an, p})
				}
			}
		}
		return nil
	}
	type found struct {
		node record.NodeRef
		path []int
	}
	var stale []found
	for _, in := range provenance.Inputs(v, a) {
		live, since := provenance.NodeLive(v, in)
		if live || r.Last != nil && !since.After(reviewed) {
			continue
		}
		if p := path(in, since); p != nil {
			stale = append(stale, found{in, p})
		}
	}
	slices.SortStableFunc(stale, func(x, y found) int {
		return cmp.Or(cmp.Compare(len(x.path), len(y.path)), slices.Compare(x.path, y.path))
	})
	for _, s := range stale {
		r.Stale = append(r.Stale, s.node)
	}
	r.Needs = len(r.Stale) > 0
	return r
}

// refConfidence is rule 6 read literally, recursing through every input.
func refConfidence(v *index.View, a *index.ArtifactNode) float64 {
	c := a.Confidence
	for _, in := range a.DerivedFrom {
		switch {
		case in.Claim != nil:
			if e := v.All().Claim(*in.Claim); e != nil {
				c = math.Min(c, v.EffectiveConfidence(e))
			}
		case in.Artifact != nil:
			if an := v.All().Artifact(*in.Artifact); an != nil {
				c = math.Min(c, refConfidence(v, an))
			}
		}
	}
	return c
}

// The cache, shared by every artifact of a read and filled in any order, gives each artifact the
// review state and confidence that walking its inputs afresh gives, stale inputs in the same
// order, over random derivation graphs with diamonds, re-derivations, superseded, revoked and
// decaying claims, and reviews; at the head and as of earlier transactions.
func TestCacheMatchesRules(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "m.db")
			db, err := mql.Open(ctx, path, mql.Options{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ok := func(_ mql.Receipt, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			keys := []string{"K0.p", "K1.p", "K2.q", "K3.q", "K4.q"}
			versions := map[string]int{} // of each key and artifact name
			revoked := map[string]bool{}
			// pick names a key or artifact, now and then pinning an older version.
			pick := func(ref string) string {
				if r.IntN(4) == 0 {
					return fmt.Sprintf("%s@%d", ref, 1+r.IntN(versions[ref]))
				}
				return ref
			}
			ok(db.SetDecay(ctx, mql.DecaySpec{Predicate: "q", HalfLife: time.Hour, By: "owner"}))
			for _, k := range keys {
				s, p, _ := strings.Cut(k, ".")
				ok(db.Assert(ctx, mql.AssertSpec{Subject: s, Predicate: p, Value: mql.Number(1), By: "owner", Confidence: mql.Confidence(0.5 + r.Float64()/2)}))
				versions[k]++
			}
			var names []string
			for range 120 {
				switch n := r.IntN(10); {
				case n < 6 || len(names) == 0:
					name := fmt.Sprintf("x%d", r.IntN(25))
					var from []string
					for range 1 + r.IntN(3) {
						if len(names) == 0 || r.IntN(3) == 0 {
							from = append(from, pick(keys[r.IntN(len(keys))]))
						} else {
							from = append(from, pick(names[r.IntN(len(names))]))
						}
					}
					if _, err := db.Derive(ctx, mql.DeriveSpec{Artifact: name, From: from, By: "owner", Confidence: mql.Confidence(0.7 + r.Float64()/3.4)}); err == nil {
						versions[name]++
						names = append(names, name)
					} else if !errors.Is(err, mql.ErrCycle) && !errors.Is(err, mql.ErrNotFound) { // a cycle, or a revoked key
						t.Fatal(err)
					}
				case n < 8:
					k := keys[r.IntN(len(keys))]
					s, p, _ := strings.Cut(k, ".")
					ok(db.Assert(ctx, mql.AssertSpec{Subject: s, Predicate: p, Value: mql.Number(float64(r.IntN(100))), By: "owner"}))
					versions[k]++
				case n < 9:
					c := pick(keys[r.IntN(len(keys))])
					if !strings.Contains(c, "@") || revoked[c] {
						continue
					}
					ok(db.Revoke(ctx, mql.RevokeSpec{Claim: c, By: "owner", Because: "wrong"}))
					revoked[c] = true
				default:
					ok(db.Review(ctx, mql.ReviewSpec{Artifact: pick(names[r.IntN(len(names))]), By: "owner"}))
				}
				now = now.Add(time.Minute)
			}
			head, _ := db.Head(ctx)
			db.Close()
			for _, at := range []int64{head, head / 2, head - 5} {
				err := viewAt(ctx, path, at, func(v *index.View) error {
					var arts []*index.ArtifactNode
					for _, name := range v.ArtifactNames() {
						arts = append(arts, v.ArtifactVersions(name)...)
					}
					r.Shuffle(len(arts), func(i, j int) { arts[i], arts[j] = arts[j], arts[i] })
					pc := provenance.NewCache(v)
					for _, a := range arts {
						if got, want := pc.ReviewState(a), refReviewState(v, a); !reflect.DeepEqual(got, want) {
							t.Errorf("as of tx %d, %s: review %v, stale %v; want %v, stale %v", at, a.ID, got.Needs, got.Stale, want.Needs, want.Stale)
						}
						if got, want := pc.Confidence(a), refConfidence(v, a); got != want {
							t.Errorf("as of tx %d, %s: confidence %v, want %v", at, a.ID, got, want)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// refDependsOn is the cycle rule read literally: walk every input the deriver may see, from
// node down, and look for a version of name.
func refDependsOn(v *index.View, node record.NodeRef, name string) bool {
	seen := map[string]bool{}
	stack := []record.NodeRef{node}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if n.Artifact == nil || seen[n.String()] {
			continue
		}
		seen[n.String()] = true
		if n.Artifact.Name == name {
			return true
		}
		if a := v.Artifact(*n.Artifact); a != nil {
			stack = append(stack, a.DerivedFrom...)
		}
	}
	return false
}

// refImpact is the impact walk read literally: breadth-first, a node's dependents found by
// scanning every visible artifact version, in the order they were recorded, for one derived
// from it; the depth bound truncates when a node at the bound has any dependent.
func refImpact(v *index.View, start []record.NodeRef, maxDepth int) (out []provenance.Reached, truncated bool) {
	var arts []*index.ArtifactNode
	for _, name := range v.ArtifactNames() {
		arts = append(arts, v.ArtifactVersions(name)...)
	}
	place := func(a *index.ArtifactNode) int {
		return slices.IndexFunc(v.Tx(a.Tx).Artifacts, func(x *record.Artifact) bool { return x.ID == a.ID })
	}
	slices.SortFunc(arts, func(a, b *index.ArtifactNode) int {
		return cmp.Or(cmp.Compare(a.Tx, b.Tx), cmp.Compare(place(a), place(b)))
	})
	dependents := func(n record.NodeRef) []*index.ArtifactNode {
		var out []*index.ArtifactNode
		for _, a := range arts {
			if slices.ContainsFunc(a.DerivedFrom, func(in record.NodeRef) bool { return in.String() == n.String() }) {
				out = append(out, a)
			}
		}
		return out
	}
	type step struct {
		node record.NodeRef
		at   int
	}
	seen := map[record.ArtifactID]bool{}
	var frontier []step
	for i, s := range start {
		if s.Artifact != nil {
			seen[*s.Artifact] = true
		}
		frontier = append(frontier, step{s, i})
	}
	for depth := 1; len(frontier) > 0; depth++ {
		if maxDepth > 0 && depth > maxDepth {
			for _, st := range frontier {
				if len(dependents(st.node)) > 0 {
					return out, true
				}
			}
			return out, false
		}
		var next []step
		for _, st := range frontier {
			for _, d := range dependents(st.node) {
				if seen[d.ID] {
					continue
				}
				seen[d.ID] = true
				out = append(out, provenance.Reached{Artifact: d, Depth: depth, From: st.at})
				next = append(next, step{record.NodeRef{Artifact: &d.ID}, len(out) - 1})
			}
		}
		frontier = next
	}
	return out, false
}

// The cycle check and the impact walk, which follow index pointers and stop the cycle walk at
// artifacts older than the name, answer what the literal walks answer, for every viewer, node,
// name and depth, over random derivation graphs with diamonds, re-derivations and artifacts
// seen by some principals only; at the head and as of earlier transactions.
func TestDependsOnAndImpactMatchLiteralWalks(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 11))
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "m.db")
			db, err := mql.Open(ctx, path, mql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, p := range []string{"w1", "w2"} {
				if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}); err != nil {
					t.Fatal(err)
				}
			}
			keys := []string{"K0.p", "K1.p", "K2.p"}
			for _, k := range keys {
				s, p, _ := strings.Cut(k, ".")
				if _, err := db.Assert(ctx, mql.AssertSpec{Subject: s, Predicate: p, Value: mql.Number(1), By: "owner"}); err != nil {
					t.Fatal(err)
				}
			}
			audiences := [][]string{nil, nil, {"w1"}, {"w2"}, {"w1", "w2"}}
			var names []string
			for range 150 {
				name := fmt.Sprintf("x%d", r.IntN(30))
				var from []string
				for range 1 + r.IntN(3) {
					if len(names) == 0 || r.IntN(4) == 0 {
						from = append(from, keys[r.IntN(len(keys))]+"@1")
					} else {
						from = append(from, names[r.IntN(len(names))])
					}
				}
				by, seen := "owner", audiences[r.IntN(len(audiences))]
				if r.IntN(3) == 0 {
					by, seen = "w1", nil // derived through what w1 may see
				}
				if _, err := db.Derive(ctx, mql.DeriveSpec{Artifact: name, From: from, By: by, SeenBy: seen}); err == nil {
					names = append(names, name)
				} else if !errors.Is(err, mql.ErrCycle) && !errors.Is(err, mql.ErrNotFound) && !errors.Is(err, mql.ErrInvalid) {
					t.Fatal(err)
				}
			}
			head, _ := db.Head(ctx)
			db.Close()
			for _, at := range []int64{head, head / 2, head - 20} {
				err := viewAt(ctx, path, at, func(all *index.View) error {
					for _, viewer := range []string{"", "w1", "w2"} {
						v := all.Index().View(all.AsOf(), all.Now(), viewer)
						var nodes []record.NodeRef
						for _, k := range keys {
							id, _ := record.ParseClaimID(k + "@1")
							nodes = append(nodes, record.NodeRef{Claim: &id})
						}
						for _, name := range all.ArtifactNames() {
							for _, a := range all.ArtifactVersions(name) {
								id := a.ID
								nodes = append(nodes, record.NodeRef{Artifact: &id})
							}
						}
						for _, n := range nodes {
							for i := range 30 {
								name := fmt.Sprintf("x%d", i)
								if got, want := provenance.DependsOn(v, all, n, name), refDependsOn(v, n, name); got != want {
									t.Errorf("as of tx %d, viewer %q: %s rests on %s: %v, want %v", at, viewer, n, name, got, want)
								}
							}
							if n.Artifact != nil && v.Artifact(*n.Artifact) == nil {
								continue // impact starts from what the reader may see
							}
							for _, depth := range []int{0, 1, 2} {
								got, gt := provenance.Impact(v, []record.NodeRef{n}, depth, 0)
								want, wt := refImpact(v, []record.NodeRef{n}, depth)
								if !reflect.DeepEqual(got, want) || gt != wt {
									t.Errorf("as of tx %d, viewer %q: impact of %s, depth %d: %d reached (truncated %v), want %d (%v)", at, viewer, n, depth, len(got), gt, len(want), wt)
								}
							}
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// viewAt runs fn on the owner's view of the store at path as of transaction at, as a read
// `as of tx` sees it.
func viewAt(ctx context.Context, path string, at int64, fn func(v *index.View) error) error {
	s, err := graphstore.Open(ctx, path, graphstore.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Read(ctx, func(ix *index.Index) error {
		id := record.TxID(at)
		return fn(ix.View(id, ix.TxTime(id), ""))
	})
}
