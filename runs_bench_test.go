package mql_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkContextForRun: the cost of recording what a context served to a run, against the
// same context without a run, and the store's growth per retrieval (quads, and bytes of its
// N-Quads export). Each read for a run is one more durable transaction.
func BenchmarkContextForRun(b *testing.B) {
	subjects := make([]string, 12)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("V%d", i*7)
	}
	for _, name := range []string{"memory", "bbolt"} {
		for _, run := range []bool{false, true} {
			mode := "plain"
			if run {
				mode = "for-run"
			}
			b.Run(fmt.Sprintf("%s/10k/%s", name, mode), func(b *testing.B) {
				dsn := backends(b)[name]()
				db := benchStore(b, dsn, 10_000)
				ctx := context.Background()
				r := db.As("loader")
				if run {
					r = r.ForRun("r-1")
				}
				q0, _ := db.QuadCount(ctx)
				size := func() int {
					var w strings.Builder
					if err := db.Export(ctx, &w); err != nil {
						b.Fatal(err)
					}
					return w.Len()
				}
				s0 := size()
				b.ReportAllocs()
				b.ResetTimer()
				n := 0
				for b.Loop() {
					if c, err := r.Context(ctx, subjects, 0); err != nil || len(c.Refs) != 48 {
						b.Fatal(len(c.Refs), err)
					}
					n++
				}
				b.StopTimer()
				q1, _ := db.QuadCount(ctx)
				b.ReportMetric(float64(q1-q0)/float64(n), "quads/read")
				b.ReportMetric(float64(size()-s0)/float64(n), "nquads-B/read")
			})
		}
	}
}
