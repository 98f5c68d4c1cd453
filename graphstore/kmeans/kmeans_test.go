package kmeans

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// around returns n vectors near each of the given directions (noise of scale sd), in turn.
func around(r *rand.Rand, dirs [][]float32, n int, sd float64) [][]float32 {
	var vs [][]float32
	for i := range n {
		d := dirs[i%len(dirs)]
		v := make([]float32, len(d))
		for j := range v {
			v[j] = d[j] + float32(r.NormFloat64()*sd)
		}
		vs = append(vs, v)
	}
	return vs
}

func axis(dim, i int, sign float32) []float32 {
	v := make([]float32, dim)
	v[i] = sign
	return v
}

func TestTrain(t *testing.T) {
	dirs := [][]float32{axis(8, 0, 1), axis(8, 3, 1), axis(8, 5, -1)}
	cases := []struct {
		name  string
		vs    [][]float32
		k     int
		want  int  // centroids
		found bool // each direction has a centroid within 0.1 of it (cosine above 0.99)
	}{
		{"three clusters, three centroids", around(rand.New(rand.NewPCG(1, 2)), dirs, 300, 0.05), 3, 3, true},
		{"more centroids than clusters", around(rand.New(rand.NewPCG(3, 4)), dirs, 300, 0.05), 6, 6, true},
		{"fewer vectors than centroids", dirs, 5, 3, true},
		{"zero vectors are ignored", append([][]float32{make([]float32, 8), make([]float32, 8)}, dirs...), 3, 3, true},
		{"only zero vectors", [][]float32{make([]float32, 8)}, 3, 0, false},
		{"no vectors", nil, 3, 0, false},
		{"one vector repeated", [][]float32{axis(8, 2, 2), axis(8, 2, 3), axis(8, 2, 1)}, 4, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := Train(c.vs, Params{K: c.k, Iterations: 8, Seed: 7})
			if len(cs) != c.want {
				t.Fatalf("%d centroids, want %d", len(cs), c.want)
			}
			for _, x := range cs {
				if n := math.Sqrt(Dot(x, x)); math.Abs(n-1) > 1e-6 {
					t.Fatalf("centroid of length %v, want 1", n)
				}
			}
			if c.found {
				for _, d := range dirs {
					if best := Dot(cs[Nearest(cs, d)], d); best < 0.99 {
						t.Errorf("direction %v: nearest centroid at cosine %v", d, best)
					}
				}
			}
		})
	}
}

// The index's check compares a replay's centroids with the stored ones byte for byte.
func TestTrainIsDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var dirs [][]float32
	for range 20 {
		dirs = append(dirs, around(r, [][]float32{make([]float32, 64)}, 1, 1)[0])
	}
	vs := around(r, dirs, 2000, 0.3)
	p := Params{K: 16, Iterations: 6, Seed: 11}
	a, b := Train(vs, p), Train(slices.Clone(vs), p)
	if !slices.EqualFunc(a, b, slices.Equal[[]float32]) {
		t.Fatal("two trainings on the same vectors gave different centroids")
	}
	if c := Train(vs, Params{K: 16, Iterations: 6, Seed: 12}); slices.EqualFunc(a, c, slices.Equal[[]float32]) {
		t.Fatal("the seed changes nothing: is it used?")
	}
}

func TestNearest(t *testing.T) {
	cs := [][]float32{axis(4, 0, 1), axis(4, 1, 1), axis(4, 1, 1)}
	cases := []struct {
		x    []float32
		want int
	}{
		{[]float32{1, 0.5, 0, 0}, 0},
		{[]float32{0.2, 3, 0, 0}, 1}, // 1 and 2 are equal: the first
		{[]float32{-1, -1, 0, 0}, 0}, // all negative, 0 is as near as any: the first of equals
		{[]float32{0, 0, 1, 0}, 0},
	}
	for _, c := range cases {
		if got := Nearest(cs, c.x); got != c.want {
			t.Errorf("Nearest(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

func TestDot(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6, 7}
	b := []float32{7, 6, 5, 4, 3, 2, 1}
	if got := Dot(a, b); got != 84 {
		t.Fatalf("Dot = %v, want 84", got)
	}
	if Unit(make([]float32, 3)) != nil || Unit([]float32{float32(math.Inf(1))}) != nil {
		t.Fatal("Unit of a zero or infinite vector is not nil")
	}
}
