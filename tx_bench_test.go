package mql_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mql-dev/mql"
)

// BenchmarkIngest writes n claims into a new bbolt store three ways: AssertBatch (the bulk
// path: one transaction), one transaction of n Assert calls (DB.Tx, what `begin … commit` and
// `mql -1` use), and n transactions of one Assert each. It reports claims/s.
func BenchmarkIngest(b *testing.B) {
	spec := func(i int) mql.AssertSpec {
		return mql.AssertSpec{Subject: fmt.Sprintf("V%d", i/4), Predicate: []string{"price_per_seat", "region", "soc2", "seats"}[i%4],
			Value: mql.Number(float64(i)), By: "loader", Sources: []mql.Source{{ID: "src:bench"}}}
	}
	open := func(b *testing.B) *mql.DB {
		db, err := mql.Open(context.Background(), filepath.Join(b.TempDir(), "b.db"), mql.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		if _, err := db.AddPrincipal(context.Background(), mql.PrincipalSpec{Name: "loader", Type: mql.Agent, By: "owner"}); err != nil {
			b.Fatal(err)
		}
		return db
	}
	ctx := context.Background()
	sizes := []int{10_000}
	if n, err := strconv.Atoi(os.Getenv("MQL_INGEST_N")); err == nil && n > 0 {
		sizes = []int{n} // docs/BENCHMARKS.md measures 100,000
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("AssertBatch/%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				db := open(b)
				specs := make([]mql.AssertSpec, n)
				for i := range specs {
					specs[i] = spec(i)
				}
				b.StartTimer()
				if _, err := db.AssertBatch(ctx, "loader", specs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "claims/s")
		})
		b.Run(fmt.Sprintf("Tx/%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				db := open(b)
				b.StartTimer()
				_, err := db.Tx(ctx, "owner", func(tx *mql.Tx) error {
					for i := range n {
						if _, err := tx.Assert(spec(i)); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "claims/s")
		})
		b.Run(fmt.Sprintf("Separate/%d", n/10), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				db := open(b)
				b.StartTimer()
				for i := range n / 10 {
					if _, err := db.Assert(ctx, spec(i)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n/10*b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}
