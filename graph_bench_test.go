package mql_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/cayleygraph/cayley"
	"github.com/cayleygraph/cayley/graph/memstore"
	"github.com/cayleygraph/cayley/query/path"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// hubDerive adds to db h artifacts resting on claim hub, shaped like hubTree's: a tree of
// fan-out 4 where every third artifact also rests on a second artifact of the level above.
func hubDerive(b *testing.B, db *mql.DB, hub string, h int) {
	b.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 0x6d716c))
	name := func(i int) string { return "h:a" + strconv.Itoa(i) }
	made := 0
	var prev []int
	for made < h {
		size := min(max(4, 4*len(prev)), h-made)
		var lvl []int
		_, err := db.Tx(ctx, "loader", func(tx *mql.Tx) error {
			for j := range size {
				from := []string{hub}
				if len(prev) > 0 {
					from = []string{name(prev[j/4])}
					if o := prev[r.IntN(len(prev))]; j%3 == 0 && o != prev[j/4] {
						from = append(from, name(o))
					}
				}
				if _, err := tx.Derive(mql.DeriveSpec{Artifact: name(made + j), From: from, By: "loader"}); err != nil {
					return err
				}
				lvl = append(lvl, made+j)
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		made += size
		prev = lvl
	}
}

// BenchmarkGraph compares walks through Cayley's path API on Graph() with mql's own reads, on
// the 100k-claim bbolt store of BenchmarkImpact (MQL_BENCH_CLAIMS changes its size) with a
// claim that 1,000 artifacts rest on (Hub.score@1) and a key with six versions
// (V0.price_per_seat).
func BenchmarkGraph(b *testing.B) {
	n := 100_000
	if s := os.Getenv("MQL_BENCH_CLAIMS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	db := benchStore(b, filepath.Join(b.TempDir(), "graph.db"), n)
	ctx := context.Background()
	rc, err := db.Assert(ctx, mql.AssertSpec{Subject: "Hub", Predicate: "score", Value: mql.Number(1), By: "loader"})
	if err != nil {
		b.Fatal(err)
	}
	hubTx := rc.Tx
	hubDerive(b, db, "Hub.score@1", 1000)
	hub := codec.ClaimIRI(*claimID(b, "Hub.score@1"))
	derivedFrom := path.StartMorphism().In(codec.ProvWasDerivedFrom)

	b.Run("create", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			qs, err := db.Graph(ctx)
			if err != nil {
				b.Fatal(err)
			}
			qs.Close()
		}
	})
	b.Run("impact/mql", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r, err := db.Impact(ctx, "Hub.score@1", 0); err != nil || len(r.Dependents) != 1000 {
				b.Fatal(len(r.Dependents), err)
			}
		}
	})
	b.Run("impact/cayley", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			qs, err := db.Graph(ctx)
			if err != nil {
				b.Fatal(err)
			}
			vs, err := cayley.StartPath(qs, hub).FollowRecursive(derivedFrom, 0, nil).Iterate(ctx).AllValues(qs)
			if err != nil || len(vs) != 1000 {
				b.Fatal(len(vs), err)
			}
			qs.Close()
		}
	})
	b.Run("impact/memstore", func(b *testing.B) {
		// The same walk on Cayley's in-memory backend holding the hub's transactions only: what
		// Cayley's iterators cost on their fastest backend.
		qs, err := db.Graph(ctx)
		if err != nil {
			b.Fatal(err)
		}
		mem := memstore.New()
		head, _ := db.Head(ctx)
		for tx := hubTx; tx <= head; tx++ {
			it := qs.QuadIterator(quad.Label, mustRef(b, qs, codec.TxIRI(record.TxID(tx)))).Iterate()
			for it.Next(ctx) {
				q, _ := qs.Quad(it.Result())
				mem.AddQuad(q)
			}
			it.Close()
		}
		qs.Close()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			vs, err := cayley.StartPath(mem, hub).FollowRecursive(derivedFrom, 0, nil).Iterate(ctx).AllValues(mem)
			if err != nil || len(vs) != 1000 {
				b.Fatal(len(vs), err)
			}
		}
	})
	b.Run("why/mql", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := db.Why(ctx, "V0.price_per_seat"); err != nil {
				b.Fatal(err)
			}
		}
	})
	live, err := db.Live(ctx, "V0.price_per_seat")
	if err != nil {
		b.Fatal(err)
	}
	v := codec.ClaimIRI(*claimID(b, live[0].Ref))
	b.Run("why/cayley", func(b *testing.B) {
		// The versions back along prov:wasRevisionOf, each with its value, asserter and
		// sources: what the why tree holds of them.
		b.ReportAllocs()
		for b.Loop() {
			qs, err := db.Graph(ctx)
			if err != nil {
				b.Fatal(err)
			}
			versions := cayley.StartPath(qs, v).FollowRecursive(codec.ProvWasRevisionOf, 0, nil).Or(cayley.StartPath(qs, v)).
				Tag("version").Save(codec.MQLValue, "value").Save(codec.ProvWasAttributedTo, "by").Out(codec.ProvHadPrimarySource)
			rows := 0
			err = versions.Iterate(ctx).TagValues(qs, func(map[string]quad.Value) error { rows++; return nil })
			if err != nil || rows != 6 {
				b.Fatal(rows, err)
			}
			qs.Close()
		}
	})
	b.Run("name/cayley", func(b *testing.B) {
		// The claims of one subject, from its name: found through the index.
		b.ReportAllocs()
		for b.Loop() {
			qs, err := db.Graph(ctx)
			if err != nil {
				b.Fatal(err)
			}
			vs, err := cayley.StartPath(qs, quad.String("V"+strconv.Itoa(n/8))).In(codec.MQLSubject).Iterate(ctx).AllValues(qs)
			if err != nil || len(vs) != 4 {
				b.Fatal(len(vs), err)
			}
			qs.Close()
		}
	})
	b.Run("value/cayley", func(b *testing.B) {
		// The claims of one value: a scan of every transaction.
		b.ReportAllocs()
		for b.Loop() {
			qs, err := db.Graph(ctx)
			if err != nil {
				b.Fatal(err)
			}
			vs, err := cayley.StartPath(qs, quad.Float(42)).In(codec.MQLValue).Iterate(ctx).AllValues(qs)
			if err != nil || len(vs) < n/200 {
				b.Fatal(len(vs), err)
			}
			qs.Close()
		}
	})
	all := func(b *testing.B, sample func()) int {
		qs, err := db.Graph(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer qs.Close()
		it := qs.QuadsAllIterator().Iterate()
		defer it.Close()
		k := 0
		for it.Next(ctx) {
			if k++; sample != nil && k%(128<<10) == 0 {
				sample()
			}
		}
		if it.Err() != nil || k < 13*n {
			b.Fatal(k, it.Err())
		}
		return k
	}
	b.Run("all/cayley", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			b.ReportMetric(float64(all(b, nil)), "quads")
		}
	})
	b.Run("all/live", func(b *testing.B) {
		// What a scan keeps live: the heap after a collection, every 131,072 quads, less the
		// heap before it.
		live := func() uint64 {
			var m runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		for b.Loop() {
			base := live()
			peak := base
			all(b, func() { peak = max(peak, live()) })
			b.ReportMetric(float64(peak-base)/(1<<20), "live-MB")
		}
	})
	b.Run("all/export", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := db.Export(ctx, discard{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
