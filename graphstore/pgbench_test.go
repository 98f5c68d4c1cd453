package graphstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/pgtest"
)

// BenchmarkPostgresWriters runs 8 Stores on one PostgreSQL database, as 8 processes would
// (each has its own connections and takes the writer lock for itself), each writing single
// claims one after another: the "8 processes writing single claims" target, in one process so
// that a CPU profile covers every writer.
func BenchmarkPostgresWriters(b *testing.B) {
	dsn := pgtest.Database(b)
	const writers = 8
	stores := make([]*Store, writers)
	for i := range stores {
		stores[i] = mustOpen(b, dsn, Options{})
		defer stores[i].Close()
	}
	var mu sync.Mutex
	next := 0
	b.ResetTimer()
	var wg sync.WaitGroup
	for w, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for v := 1; ; v++ {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= b.N {
					return
				}
				if _, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
					tx.Claims = []*record.Claim{{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("W%d", w), Predicate: "p"}, Version: v},
						Value: record.Value{Type: record.Number, Num: float64(i)}, By: "owner", Kind: record.Observed, Confidence: 1}}
					if v > 1 {
						tx.Claims[0].Supersedes = &record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("W%d", w), Predicate: "p"}, Version: v - 1}
					}
					return nil
				}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkPostgresIngest writes transactions of 1,000 claims (one op is one claim), as the
// bench's bulk ingest does.
func BenchmarkPostgresIngest(b *testing.B) {
	dsn := pgtest.Database(b)
	s := mustOpen(b, dsn, Options{})
	defer s.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i += 1000 {
		if _, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
			for j := i; j < min(b.N, i+1000); j++ {
				tx.Claims = append(tx.Claims, &record.Claim{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("V%d", j/4), Predicate: fmt.Sprintf("p%d", j%4)}, Version: 1},
					Value: record.Value{Type: record.Number, Num: float64(j % 97)}, By: "owner", Kind: record.Observed, Confidence: 1})
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresRefresh is what every read on PostgreSQL adds: asking for what other
// processes committed, when they committed nothing.
func BenchmarkPostgresRefresh(b *testing.B) {
	dsn := pgtest.Database(b)
	s := mustOpen(b, dsn, Options{})
	defer s.Close()
	for i := range 200 {
		if _, err := s.Write(context.Background(), "owner", countingClaim("R", i+1)); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if err := s.Refresh(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPostgresOpen opens a store of 10k claims (10 transactions of 1,000) in a new Store,
// as a new process does: its index comes from the transaction log.
func BenchmarkPostgresOpen(b *testing.B) {
	dsn := pgtest.Database(b)
	s := mustOpen(b, dsn, Options{})
	for i := 0; i < 10_000; i += 1000 {
		if _, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
			for j := i; j < i+1000; j++ {
				tx.Claims = append(tx.Claims, &record.Claim{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("V%d", j/4), Predicate: fmt.Sprintf("p%d", j%4)}, Version: 1},
					Value: record.Value{Type: record.Number, Num: float64(j % 97)}, By: "owner", Kind: record.Observed, Confidence: 1})
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	s.Close()
	b.ResetTimer()
	for b.Loop() {
		o := mustOpen(b, dsn, Options{})
		if !o.fromSnapshot {
			b.Fatal("the store was scanned, not loaded from its log")
		}
		o.Close()
	}
}
