package mql_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// benchWords is a vocabulary drawn with Zipf's law, as the words of real text are: a few
// words are in most claims, most words in few.
func benchText(rng *rand.Rand, z *rand.Zipf, n int) string {
	ws := make([]string, n)
	for i := range ws {
		ws[i] = "w" + strconv.FormatUint(z.Uint64(), 36)
	}
	return strings.Join(ws, " ")
}

func benchClaims() int {
	if n, err := strconv.Atoi(os.Getenv("MQL_SEARCH_BENCH_CLAIMS")); err == nil && n > 0 {
		return n
	}
	return 20_000
}

// ingest writes n claims of 12 words each, 500 a transaction, into a new bbolt store at path.
func ingest(b *testing.B, n int, path string) *mql.DB {
	ctx := context.Background()
	db, err := mql.Open(ctx, path, mql.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "w", Type: mql.Agent, By: "owner"}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(rng, 1.1, 2, 50_000)
	var specs []mql.AssertSpec
	for i := range n {
		specs = append(specs, mql.AssertSpec{Subject: fmt.Sprintf("S%d", i%(n/4+1)), Predicate: fmt.Sprintf("note_%d", i%4),
			Value: mql.String(benchText(rng, z, 12)), By: "w"})
		if len(specs) == 500 || i == n-1 {
			if _, err := db.AssertBatch(ctx, "w", specs); err != nil {
				b.Fatal(err)
			}
			specs = specs[:0]
		}
	}
	return db
}

// BenchmarkIngestText: claims a second into bbolt, the text index included
// (MQL_SEARCH_BENCH_CLAIMS claims, 20,000 by default), and the file's size once closed.
func BenchmarkIngestText(b *testing.B) {
	n := benchClaims()
	var size int64
	for b.Loop() {
		path := filepath.Join(b.TempDir(), "s.db")
		db := ingest(b, n, path)
		b.StopTimer()
		db.Close()
		if fi, err := os.Stat(path); err == nil {
			size = fi.Size()
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "claims/s")
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// BenchmarkSearch: a search of three words drawn as the claims' words are, limit 10.
func BenchmarkSearch(b *testing.B) {
	db := ingest(b, benchClaims(), filepath.Join(b.TempDir(), "s.db"))
	rng := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(rng, 1.1, 2, 50_000)
	ctx := context.Background()
	var hits int
	for b.Loop() {
		res, err := db.Search(ctx, benchText(rng, z, 3), mql.SearchOptions{Limit: 10})
		if err != nil {
			b.Fatal(err)
		}
		hits += len(res.Hits)
	}
	b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
}

func benchVectorDim() int {
	if n, err := strconv.Atoi(os.Getenv("MQL_VECTOR_BENCH_DIM")); err == nil && n > 0 {
		return n
	}
	return 384
}

func randomVector(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// BenchmarkSearchVector: an exact search by a vector (limit 10) over n claims that each carry
// a random vector of MQL_VECTOR_BENCH_DIM dimensions (384 by default, a small sentence
// model's), in a bbolt store written 500 claims a transaction.
func BenchmarkSearchVector(b *testing.B) {
	dim := benchVectorDim()
	for _, n := range []int{10_000, 100_000} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			db, err := mql.Open(ctx, filepath.Join(b.TempDir(), "v.db"), mql.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "w", Type: mql.Agent, By: "owner"}); err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			var specs []mql.AssertSpec
			for i := range n {
				specs = append(specs, mql.AssertSpec{Subject: fmt.Sprintf("S%d", i), Predicate: "note", Value: mql.Number(float64(i)), By: "w", Vector: randomVector(rng, dim)})
				if len(specs) == 500 || i == n-1 {
					if _, err := db.AssertBatch(ctx, "w", specs); err != nil {
						b.Fatal(err)
					}
					specs = specs[:0]
				}
			}
			var hits int
			for b.Loop() {
				res, err := db.Search(ctx, "", mql.SearchOptions{Vector: randomVector(rng, dim), Limit: 10})
				if err != nil {
					b.Fatal(err)
				}
				hits += len(res.Hits)
			}
			b.ReportMetric(float64(hits)/float64(b.N), "hits/op")
		})
	}
}
