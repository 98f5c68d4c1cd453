package graphstore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// BenchmarkConcurrentWrites runs 12 writers of single-claim transactions on a bbolt store that
// already holds 100k claims: the group-commit path of the "12 agents at once" target. It
// reports the bbolt pages written per transaction (bbolt's counters), which group commits
// share.
func BenchmarkConcurrentWrites(b *testing.B) {
	path := filepath.Join(b.TempDir(), "w.db")
	s := mustOpen(b, path, Options{})
	defer s.Close()
	const preload = 100_000
	for i := 0; i < preload; i += 1000 {
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
	const writers = 12
	var mu sync.Mutex
	next := 0
	db := s.be.(*bboltBackend).db
	st0 := db.Stats()
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= b.N {
					return
				}
				if _, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
					tx.Claims = []*record.Claim{{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("W%d-%d", w, i), Predicate: "p"}, Version: 1},
						Value: record.Value{Type: record.Number, Num: float64(i)}, By: "owner", Kind: record.Observed, Confidence: 1}}
					return nil
				}); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	// Writers that arrive together share a commit: pages written per transaction fall as the
	// groups grow.
	st := db.Stats()
	d := st.TxStats.Sub(&st0.TxStats)
	b.ReportMetric(float64(d.Write)/float64(b.N), "pages-written/op")
}

// BenchmarkSingleCommit commits single-claim transactions, one after another, on a bbolt store
// of 20k claims, and reports what each costs the file: the bbolt pages written, the nodes
// spilled and the time bbolt spent writing and syncing per commit (bbolt's own counters), and
// the quads an export holds for it (what the store no longer writes: before mql-kv/1 every quad
// was stored). It is the "one commit" figure of docs/BENCHMARKS.md, and says where its time
// goes.
func BenchmarkSingleCommit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "w.db")
	s := mustOpen(b, path, Options{})
	defer s.Close()
	ctx := context.Background()
	for i := 0; i < 20_000; i += 1000 {
		if _, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
			for j := i; j < i+1000; j++ {
				tx.Claims = append(tx.Claims, &record.Claim{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("V%d", j/4), Predicate: fmt.Sprintf("p%d", j%4)}, Version: 1},
					Value: record.Value{Type: record.Number, Num: float64(j % 97)}, By: "owner", Kind: record.Observed, Confidence: 1})
			}
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	db := s.be.(*bboltBackend).db
	quads := 0
	st0 := db.Stats()
	i := 0
	for b.Loop() {
		tx, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
			tx.Claims = []*record.Claim{{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("W%d", i), Predicate: "p"}, Version: 1},
				Value: record.Value{Type: record.Number, Num: float64(i)}, By: "owner", Kind: record.Observed, Confidence: 1}}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		q, _ := codec.EncodeTx(tx)
		quads += len(q)
		i++
	}
	st := db.Stats()
	d := st.TxStats.Sub(&st0.TxStats)
	n := float64(i)
	b.ReportMetric(float64(quads)/n, "quads/op")
	b.ReportMetric(float64(d.Write)/n, "pages-written/op")
	b.ReportMetric(float64(d.Spill)/n, "nodes-spilled/op")
	b.ReportMetric(float64(d.WriteTime.Microseconds())/n, "write+sync-µs/op")
}
