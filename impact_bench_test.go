package mql_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// hubTree is an import of a claim H.score@1 and h artifacts resting on it, shaped like the
// impact hubs of bench/workload.go: a tree of fan-out 4 where every third artifact also rests
// on a second artifact of the level above (diamonds).
func hubTree(tb testing.TB, h int) string {
	tb.Helper()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	txs := []*record.Tx{
		{ID: 1, Time: at, By: "owner", Meta: &record.StoreMeta{Owner: "owner"}, Principals: []*record.Principal{{Name: "owner", Type: mql.User, Tx: 1}}},
		{ID: 2, Time: at, By: "owner", Principals: []*record.Principal{{Name: "x", Type: mql.Agent, Tx: 2}}},
	}
	hub, _ := record.ParseClaimID("H.score@1")
	txs = append(txs, &record.Tx{ID: 3, Time: at, By: "x", Claims: []*record.Claim{{ID: hub, Value: mql.Number(1), By: "x", Kind: mql.Inferred, Confidence: 1, Tx: 3}}})
	r := rand.New(rand.NewPCG(1, 0x6d716c))
	art := func(i int) record.NodeRef {
		return record.NodeRef{Artifact: &record.ArtifactID{Name: fmt.Sprintf("h:a%d", i), Version: 1}}
	}
	made := 0
	var prev []int
	for made < h {
		size := min(max(4, 4*len(prev)), h-made)
		var lvl []int
		for j := range size {
			from := []record.NodeRef{{Claim: &hub}}
			if len(prev) > 0 {
				from = []record.NodeRef{art(prev[j/4])}
				if o := prev[r.IntN(len(prev))]; j%3 == 0 && o != prev[j/4] {
					from = append(from, art(o))
				}
			}
			id := record.TxID(len(txs) + 1)
			txs = append(txs, &record.Tx{ID: id, Time: at.Add(time.Duration(id) * time.Millisecond), By: "x", Artifacts: []*record.Artifact{
				{ID: *art(made + j).Artifact, DerivedFrom: from, By: "x", Confidence: 1, Tx: id}}})
			lvl = append(lvl, made+j)
		}
		made += size
		prev = lvl
	}
	var b bytes.Buffer
	if err := codec.WriteNQuads(&b, txs); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

func importStore(b *testing.B, nquads string) *mql.DB {
	b.Helper()
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if err := db.Import(ctx, strings.NewReader(nquads)); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkImpactTree measures impact of a claim with 1,000 and 10,000 dependents shaped like
// the bench workload's hubs.
func BenchmarkImpactTree(b *testing.B) {
	for _, h := range []int{1_000, 10_000} {
		b.Run(fmt.Sprintf("%d", h), func(b *testing.B) {
			db := importStore(b, hubTree(b, h))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if r, err := db.Impact(ctx, "H.score@1", 0); err != nil || len(r.Dependents) != h {
					b.Fatal(len(r.Dependents), err)
				}
			}
		})
	}
}

// BenchmarkChain measures impact and why over a chain of artifacts a0 ← a1 ← … resting on
// K.p@1, which is superseded, so every artifact of the chain needs review.
func BenchmarkChain(b *testing.B) {
	for _, n := range []int{2_000, 10_000} {
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			db := importStore(b, hostileChain(b, n))
			ctx := context.Background()
			if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("w"), By: "owner"}); err != nil {
				b.Fatal(err)
			}
			b.Run("impact", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if r, err := db.Impact(ctx, "K.p@1", 0); err != nil || len(r.Dependents) != n {
						b.Fatal(len(r.Dependents), err)
					}
				}
			})
			b.Run("why", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := db.Why(ctx, fmt.Sprintf("a%d", n-1)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
