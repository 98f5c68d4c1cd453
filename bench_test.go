package mql_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mql-dev/mql"
)

// benchStore loads n claims: n/4 subjects × 4 predicates, in batches of 1,000, then revises one
// key five times and hangs a chain of artifacts off its first version.
func benchStore(b *testing.B, dsn string, n int) *mql.DB {
	b.Helper()
	ctx := context.Background()
	db, err := mql.Open(ctx, dsn, mql.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "loader", Type: mql.Agent, By: "owner"}); err != nil {
		b.Fatal(err)
	}
	preds := []string{"price_per_seat", "region", "soc2", "seats"}
	var batch []mql.AssertSpec
	flush := func() {
		if _, err := db.AssertBatch(ctx, "loader", batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	for i := range n {
		s := fmt.Sprintf("V%d", i/len(preds))
		p := preds[i%len(preds)]
		var v mql.Value
		switch p {
		case "region":
			v = mql.String([]string{"EU", "US", "APAC"}[i%3])
		case "soc2":
			v = mql.Bool(i%2 == 0)
		default:
			v = mql.Number(float64(i % 97))
		}
		batch = append(batch, mql.AssertSpec{Subject: s, Predicate: p, Value: v, By: "loader", Sources: []mql.Source{{ID: "src:" + s}}})
		if len(batch) == 1000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	for i := range 5 {
		if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "V0", Predicate: "price_per_seat", Value: mql.Number(float64(100 + i)), By: "loader", Sources: []mql.Source{{ID: fmt.Sprintf("src:V0:rev%d", i+1)}}}); err != nil {
			b.Fatal(err)
		}
	}
	prev := "V1.price_per_seat@1"
	for i := range 10 {
		name := fmt.Sprintf("plan:%d", i)
		if _, err := db.Derive(ctx, mql.DeriveSpec{Artifact: name, From: []string{prev}, By: "loader"}); err != nil {
			b.Fatal(err)
		}
		prev = name
	}
	return db
}

func backends(b *testing.B) map[string]func() string {
	return map[string]func() string{
		"memory": func() string { return "memory:" },
		"bbolt":  func() string { return filepath.Join(b.TempDir(), "bench.db") },
	}
}

func forEachStore(b *testing.B, fn func(b *testing.B, db *mql.DB)) {
	for _, n := range []int{10_000, 100_000} {
		for _, name := range []string{"memory", "bbolt"} {
			b.Run(fmt.Sprintf("%s/%dk", name, n/1000), func(b *testing.B) {
				db := benchStore(b, backends(b)[name](), n)
				b.ReportAllocs()
				b.ResetTimer()
				fn(b, db)
			})
		}
	}
}

func BenchmarkAssert(b *testing.B) {
	forEachStore(b, func(b *testing.B, db *mql.DB) {
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "V7", Predicate: "seats", Value: mql.Number(float64(i)), By: "loader"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkLive(b *testing.B) {
	forEachStore(b, func(b *testing.B, db *mql.DB) {
		ctx := context.Background()
		for b.Loop() {
			if c, err := db.Live(ctx, "V1234.region"); err != nil || len(c) != 1 {
				b.Fatal(c, err)
			}
		}
	})
}

func BenchmarkWhy(b *testing.B) {
	forEachStore(b, func(b *testing.B, db *mql.DB) {
		ctx := context.Background()
		for b.Loop() {
			if _, err := db.Why(ctx, "V0.price_per_seat"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkImpact(b *testing.B) {
	forEachStore(b, func(b *testing.B, db *mql.DB) {
		ctx := context.Background()
		for b.Loop() {
			if r, err := db.Impact(ctx, "V1.price_per_seat@1", 0); err != nil || len(r.Dependents) != 10 {
				b.Fatal(r, err)
			}
		}
	})
}

func BenchmarkFind(b *testing.B) {
	forEachStore(b, func(b *testing.B, db *mql.DB) {
		ctx := context.Background()
		q := mql.FindQuery{
			Select: []string{"?v", "?p"},
			Where: []mql.Cond{
				{Subject: mql.Var("v"), Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
				{Subject: mql.Var("v"), Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
				{Subject: mql.Var("v"), Predicate: "price_per_seat", Op: "=", Object: mql.Var("p")},
			},
			OrderBy: []mql.Order{{Var: "?p"}},
			Limit:   1,
		}
		for b.Loop() {
			if r, err := db.Find(ctx, q); err != nil || len(r.Rows) != 1 {
				b.Fatal(r, err)
			}
		}
	})
}

// BenchmarkImpactHub measures impact of a claim with 1,000 direct dependents.
func BenchmarkImpactHub(b *testing.B) {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.Assert(ctx, mql.AssertSpec{Subject: "Hub", Predicate: "price", Value: mql.Number(1), By: "owner"})
	for i := range 1000 {
		if _, err := db.Derive(ctx, mql.DeriveSpec{Artifact: fmt.Sprintf("plan:%d", i), From: []string{"Hub.price"}, By: "owner"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if r, err := db.Impact(ctx, "Hub.price@1", 0); err != nil || len(r.Dependents) != 1000 {
			b.Fatal(len(r.Dependents), err)
		}
	}
}

// BenchmarkContext: the context of 12 subjects spread over the store, as the bench's row.
func BenchmarkContext(b *testing.B) {
	forEachStore(b, func(b *testing.B, db *mql.DB) {
		ctx := context.Background()
		subjects := make([]string, 12)
		for i := range subjects {
			subjects[i] = fmt.Sprintf("V%d", i*1000+2)
		}
		for b.Loop() {
			if r, err := db.Context(ctx, subjects, 100_000); err != nil || len(r.Lines) != 12 {
				b.Fatal(r, err)
			}
		}
	})
}
