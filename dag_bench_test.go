package mql_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// denseDAG is an export of a store holding claims claims (K<i>.p, in transactions of 1,000)
// and arts artifacts d<i>, each derived from two random earlier nodes among the roots
// R<j>.p@1 (j < dagRoots) and the artifacts before it, each its own transaction: a derivation
// graph with many diamonds, where an early root's impact set is a large part of the graph.
const dagRoots = 50

func denseDAG(tb testing.TB, claims, arts int) string {
	tb.Helper()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	txs := []*record.Tx{
		{ID: 1, Time: at, By: "owner", Meta: &record.StoreMeta{Owner: "owner"}, Principals: []*record.Principal{{Name: "owner", Type: mql.User, Tx: 1}}},
		{ID: 2, Time: at, By: "owner", Principals: []*record.Principal{{Name: "x", Type: mql.Agent, Tx: 2}}},
	}
	next := func() record.TxID { return record.TxID(len(txs) + 1) }
	for i := 0; i < claims; i += 1000 {
		id := next()
		tx := &record.Tx{ID: id, Time: at.Add(time.Duration(id) * time.Millisecond), By: "x"}
		for j := i; j < min(i+1000, claims); j++ {
			subj := fmt.Sprintf("K%d", j)
			if j < dagRoots {
				subj = fmt.Sprintf("R%d", j)
			}
			cid, _ := record.ParseClaimID(subj + ".p@1")
			tx.Claims = append(tx.Claims, &record.Claim{ID: cid, Value: mql.Number(float64(j)), By: "x", Kind: mql.Inferred, Confidence: 1, Tx: id})
		}
		txs = append(txs, tx)
	}
	r := rand.New(rand.NewPCG(2, 0x6d716c))
	node := func(k int) record.NodeRef {
		if k < dagRoots {
			c, _ := record.ParseClaimID(fmt.Sprintf("R%d.p@1", k))
			return record.NodeRef{Claim: &c}
		}
		return record.NodeRef{Artifact: &record.ArtifactID{Name: fmt.Sprintf("d%d", k-dagRoots), Version: 1}}
	}
	for i := range arts {
		a, b := r.IntN(dagRoots+i), r.IntN(dagRoots+i)
		from := []record.NodeRef{node(a)}
		if b != a {
			from = append(from, node(b))
		}
		id := next()
		txs = append(txs, &record.Tx{ID: id, Time: at.Add(time.Duration(id) * time.Millisecond), By: "x", Artifacts: []*record.Artifact{
			{ID: record.ArtifactID{Name: fmt.Sprintf("d%d", i), Version: 1}, DerivedFrom: from, By: "x", Confidence: 1, Tx: id}}})
	}
	var buf bytes.Buffer
	if err := codec.WriteNQuads(&buf, txs); err != nil {
		tb.Fatal(err)
	}
	return buf.String()
}

func importDAG(b *testing.B, dsn string, claims, arts int) *mql.DB {
	b.Helper()
	ctx := context.Background()
	if dsn == "memory:" {
		return importStore(b, denseDAG(b, claims, arts))
	}
	if _, err := mql.ImportStore(ctx, dsn, strings.NewReader(denseDAG(b, claims, arts)), mql.Options{}); err != nil {
		b.Fatal(err)
	}
	db, err := mql.Open(ctx, dsn, mql.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

// BenchmarkDenseDAG measures impact of an early root over a dense derivation graph (5,000
// artifacts, each from two random earlier nodes) and one Derive, its own transaction, of a new
// artifact from two random artifacts of that graph, on memory and bbolt.
func BenchmarkDenseDAG(b *testing.B) {
	for _, claims := range []int{10_000, 100_000} {
		for _, backend := range []string{"memory", "bbolt"} {
			b.Run(fmt.Sprintf("%s/%dk", backend, claims/1000), func(b *testing.B) {
				dsn := "memory:"
				if backend == "bbolt" {
					dsn = filepath.Join(b.TempDir(), "dag.db")
				}
				db := importDAG(b, dsn, claims, 5000)
				ctx := context.Background()
				b.Run("impact", func(b *testing.B) {
					b.ReportAllocs()
					n := 0
					for b.Loop() {
						r, err := db.Impact(ctx, "R0.p@1", 0)
						if err != nil {
							b.Fatal(err)
						}
						n = len(r.Dependents)
					}
					b.ReportMetric(float64(n), "dependents")
				})
				b.Run("derive", func(b *testing.B) {
					b.ReportAllocs()
					r := rand.New(rand.NewPCG(3, 0))
					i := 0
					for b.Loop() {
						from := []string{fmt.Sprintf("d%d@1", r.IntN(5000)), fmt.Sprintf("d%d@1", r.IntN(5000))}
						if _, err := db.Derive(ctx, mql.DeriveSpec{Artifact: fmt.Sprintf("new%d", i), From: from, By: "x"}); err != nil {
							b.Fatal(err)
						}
						i++
					}
				})
			})
		}
	}
}
