// Package kmeans partitions vectors by direction: spherical k-means, which the vector index
// (graphstore/index, "IVF") trains once per audience and then files every vector under the
// centroid nearest it, so that a search reads the few lists nearest its query instead of every
// vector.
//
// Everything here is deterministic: the same vectors in the same order give the same
// centroids, bit for bit, on every run. The index depends on it: a check replays a store's
// records and compares the entries it gets with the stored ones, and an import rebuilds them.
// So the randomness is a fixed-seed PCG read through its raw outputs, sums run in one fixed
// order, and every product is rounded before it is added (an explicit conversion, which keeps
// the compiler from fusing a multiply and an add into one instruction on processors that have
// one, which would change the last bits).
package kmeans

import (
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Params are the knobs of Train.
type Params struct {
	K          int // the number of centroids (fewer if there are fewer distinct vectors)
	Iterations int // rounds of assignment and update after the k-means++ seeding
	Seed       uint64
}

// Train returns up to p.K unit centroids of vs, whose components need not be normalized (a
// zero vector has no direction and is ignored). vs is not modified.
func Train(vs [][]float32, p Params) [][]float32 {
	var xs [][]float32
	for _, v := range vs {
		if u := Unit(v); u != nil {
			xs = append(xs, u)
		}
	}
	if len(xs) == 0 || p.K < 1 {
		return nil
	}
	cs := seed(xs, p.K, rand.New(rand.NewPCG(p.Seed, p.Seed^0x9e3779b97f4a7c15)))
	assign := make([]int, len(xs))
	for range p.Iterations {
		Assign(cs, xs, assign)
		cs = update(xs, assign, cs)
	}
	return cs
}

// Assign sets out[i] to Nearest(cs, xs[i]) for every i, on every processor: the assignment is
// most of a training's time, and each vector's is computed alone, so the result is the same
// however the work is split.
func Assign(cs, xs [][]float32, out []int) {
	workers := min(runtime.GOMAXPROCS(0), 1+len(xs)/256)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(xs); i += workers {
				out[i] = Nearest(cs, xs[i])
			}
		})
	}
	wg.Wait()
}

// seed picks k centroids among xs by k-means++: the first uniformly, each next one with a
// probability that grows with its distance (1 - cosine) to the nearest chosen so far.
func seed(xs [][]float32, k int, r *rand.Rand) [][]float32 {
	cs := [][]float32{clone(xs[pick(r, len(xs))])}
	dist := make([]float64, len(xs))
	for i, x := range xs {
		dist[i] = distance(cs[0], x)
	}
	for len(cs) < k {
		var total float64
		for _, d := range dist {
			total += d
		}
		if total <= 0 {
			break // every vector lies on a chosen centroid: no other direction to give
		}
		target := unitFloat(r) * total
		i := 0
		for ; i < len(xs)-1; i++ {
			if target -= dist[i]; target < 0 && dist[i] > 0 {
				break
			}
		}
		for dist[i] == 0 { // the walk ended on a chosen vector: take the last one not chosen
			i--
		}
		c := clone(xs[i])
		cs = append(cs, c)
		for j, x := range xs {
			if d := distance(c, x); d < dist[j] {
				dist[j] = d
			}
		}
	}
	return cs
}

// update moves each centroid to the direction of the mean of the vectors assigned to it. A
// centroid left without vectors takes the vector farthest from its own centroid, so that no
// list stays empty while another holds vectors that are far apart.
func update(xs [][]float32, assign []int, old [][]float32) [][]float32 {
	dim := len(xs[0])
	sums := make([][]float64, len(old))
	counts := make([]int, len(old))
	for i := range sums {
		sums[i] = make([]float64, dim)
	}
	for i, x := range xs {
		s := sums[assign[i]]
		for j, f := range x {
			s[j] += float64(f)
		}
		counts[assign[i]]++
	}
	cs := make([][]float32, len(old))
	taken := map[int]bool{}
	for c := range cs {
		if counts[c] == 0 {
			far, farD := -1, -1.0
			for i, x := range xs {
				if d := distance(old[assign[i]], x); d > farD && !taken[i] {
					far, farD = i, d
				}
			}
			if far < 0 { // more centroids than vectors to move them to
				cs[c] = old[c]
				continue
			}
			taken[far] = true
			cs[c] = clone(xs[far])
			continue
		}
		v := make([]float32, dim)
		for j, s := range sums[c] {
			v[j] = float32(s)
		}
		if u := Unit(v); u != nil {
			cs[c] = u
		} else {
			cs[c] = old[c] // opposite vectors cancelled out: keep the direction it had
		}
	}
	return cs
}

// Nearest is the index of the centroid most similar to x (by dot product, which for unit
// centroids orders them as cosine does), the first of equals.
func Nearest(cs [][]float32, x []float32) int {
	best, bestDot := 0, math.Inf(-1)
	for i, c := range cs {
		if d := Dot(c, x); d > bestDot {
			best, bestDot = i, d
		}
	}
	return best
}

// Dot is the dot product of a and b (of one length), in float32: eight running sums (one per
// component modulo 8, which keep the processor's adders busy, and float32 because it needs no
// conversion: the assignment of every vector written is most of what the index costs a write),
// added in a fixed order, each product rounded before it is added.
func Dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		s0 += float32(a[i] * b[i])
		s1 += float32(a[i+1] * b[i+1])
		s2 += float32(a[i+2] * b[i+2])
		s3 += float32(a[i+3] * b[i+3])
		s4 += float32(a[i+4] * b[i+4])
		s5 += float32(a[i+5] * b[i+5])
		s6 += float32(a[i+6] * b[i+6])
		s7 += float32(a[i+7] * b[i+7])
	}
	for ; i < len(a); i++ {
		s0 += float32(a[i] * b[i])
	}
	return float64(((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)))
}

// Unit is x scaled to length 1, or nil if x is zero (or not finite).
func Unit(x []float32) []float32 {
	n := math.Sqrt(Dot(x, x))
	if n == 0 || math.IsInf(n, 0) || math.IsNaN(n) {
		return nil
	}
	u := make([]float32, len(x))
	for i, f := range x {
		u[i] = float32(float64(f) / n)
	}
	return u
}

func distance(c, x []float32) float64 {
	if d := 1 - Dot(c, x); d > 0 {
		return d
	}
	return 0
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

// pick is a uniform integer in [0, n), from the generator's raw output: a library's reduction
// of it to a range could change between Go versions, and the centroids with it.
func pick(r *rand.Rand, n int) int { return int(r.Uint64() % uint64(n)) }

// unitFloat is a uniform float64 in [0, 1), from the generator's top 53 bits.
func unitFloat(r *rand.Rand) float64 { return float64(r.Uint64()>>11) / (1 << 53) }
