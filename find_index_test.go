package mql_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// TestFindByValueAgreesWithScan: a find that names constant values starts from the claims
// live with those values, the condition with the fewest first; the same find with each
// constant moved into a comparison scans every key in the order written. Both must return the
// same rows in the same order — including which rows win ties of the order asked for under a
// limit — for every reader, as of every few transactions, after supersessions, contests,
// corroborations, revocations with and without replacement, confirmations and expiry.
func TestFindByValueAgreesWithScan(t *testing.T) {
	t.Run("lookups", testFindByValueAgreesWithScan)
	t.Run("joined", func(t *testing.T) {
		defer mql.JoinAfterForTest(0)()
		testFindByValueAgreesWithScan(t)
	})
}

func testFindByValueAgreesWithScan(t *testing.T) {
	f := open(t, mql.Options{})
	ctx := f.ctx
	db := f.db
	for _, p := range []string{"alice", "bob"} {
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	regions := []string{"EU", "US"}
	value := func(pred string) mql.Value {
		switch pred {
		case "soc2":
			return mql.Bool(rng.IntN(3) > 0)
		case "region":
			return mql.String(regions[rng.IntN(len(regions))])
		}
		return mql.Number(float64(rng.IntN(4))) // few prices: many ties
	}
	audiences := [][]string{nil, nil, nil, {"alice"}, {"bob"}, {"alice", "bob"}}
	var refs []string
	var heads []int64
	for step := range 400 {
		f.clk.Add(time.Minute)
		s := fmt.Sprintf("V%d", rng.IntN(12))
		pred := []string{"soc2", "region", "price"}[rng.IntN(3)]
		switch n := rng.IntN(10); {
		case n < 6:
			spec := mql.AssertSpec{Subject: s, Predicate: pred, Value: value(pred), By: "owner", SeenBy: audiences[rng.IntN(len(audiences))]}
			if rng.IntN(2) == 0 {
				spec.Sources = []mql.Source{{ID: fmt.Sprintf("src:%d", step)}}
			}
			if rng.IntN(8) == 0 {
				spec.ValidUntil = f.clk.Now().Add(time.Duration(rng.IntN(30)) * time.Minute)
			}
			rc, err := db.Assert(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			refs = append(refs, rc.Ref)
		case n < 8 && len(refs) > 0:
			spec := mql.RevokeSpec{Claim: refs[rng.IntN(len(refs))], By: "owner", Because: "test"}
			if rng.IntN(2) == 0 {
				spec.ReplacedBy = refs[rng.IntN(len(refs))]
			}
			db.Revoke(ctx, spec) // refused when the replacement does not qualify
		case n < 9 && len(refs) > 0:
			db.Confirm(ctx, mql.ConfirmSpec{Claim: refs[rng.IntN(len(refs))], By: "owner"})
		default:
			head, err := db.Head(ctx)
			if err != nil {
				t.Fatal(err)
			}
			heads = append(heads, head)
		}
	}
	readers := map[string]mql.Reader{"owner": db.Reader(), "alice": db.As("alice"), "bob": db.As("bob")}
	for i, h := range heads {
		if i%3 != 0 {
			continue
		}
		readers[fmt.Sprintf("as of tx %d", h)] = db.AsOfTx(h)
		readers[fmt.Sprintf("alice as of tx %d", h)] = db.As("alice").AsOfTx(h)
	}
	v, p := mql.Var("v"), mql.Var("p")
	byValue := []mql.Cond{
		{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
		{Subject: v, Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
		{Subject: v, Predicate: "price", Op: "=", Object: p},
	}
	scan := []mql.Cond{
		{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Var("s")},
		{Subject: mql.Var("s"), Op: "=", Object: mql.Const(mql.Bool(true))},
		{Subject: v, Predicate: "region", Op: "=", Object: mql.Var("r")},
		{Subject: mql.Var("r"), Op: "=", Object: mql.Const(mql.String("EU"))},
		{Subject: v, Predicate: "price", Op: "=", Object: p},
	}
	queries := []struct{ name, with string }{{"ordered, limit 3", "limit"}, {"ordered", "order"}, {"unordered", ""}}
	for who, r := range readers {
		for _, q := range queries {
			a := mql.FindQuery{Select: []string{"?v", "?p"}, Where: byValue}
			b := mql.FindQuery{Select: []string{"?v", "?p"}, Where: scan}
			if q.with != "" {
				a.OrderBy = []mql.Order{{Var: "?p", Desc: true}}
				b.OrderBy = a.OrderBy
			}
			if q.with == "limit" {
				a.Limit, b.Limit = 3, 3
			}
			got, err := r.Find(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			want, err := r.Find(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Rows) == 0 && who == "owner" {
				t.Errorf("%s, %s: no rows; the test exercises nothing", who, q.name)
			}
			if !reflect.DeepEqual(got.Rows, want.Rows) {
				t.Errorf("%s, %s:\nby value %v\nscan     %v", who, q.name, got.Rows, want.Rows)
			}
		}
	}
}

// TestFindIntersectsLongLists: a find whose conditions name two or three constant values walks
// those values' lists side by side, a few hundred entries at a time; over lists many times that
// long, where each reader sees a different part of each list (audiences, supersessions with
// other values, revocations, claims that expired), it returns the rows the same find gives
// when every constant is moved into a comparison (a scan of every key).
func TestFindIntersectsLongLists(t *testing.T) {
	for _, dsn := range []string{"memory:", "bbolt:" + t.TempDir() + "/m.db"} {
		t.Run(dsn[:6], func(t *testing.T) { testFindIntersectsLongLists(t, dsn) })
	}
}

func testFindIntersectsLongLists(t *testing.T, dsn string) {
	f := openDSN(t, dsn, mql.Options{})
	ctx, db := f.ctx, f.db
	for _, p := range []string{"alice", "bob"} {
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	audiences := [][]string{nil, nil, nil, nil, {"alice"}, {"bob"}, {"alice", "bob"}}
	value := func(pred string) mql.Value {
		switch pred {
		case "soc2":
			return mql.Bool(rng.IntN(3) > 0)
		case "region":
			return mql.String([]string{"EU", "US"}[rng.IntN(2)])
		}
		return mql.Number(float64(rng.IntN(5)))
	}
	const subjects = 1500
	var refs []string
	for round := range 3 {
		var specs []mql.AssertSpec
		for s := range subjects {
			for _, pred := range []string{"soc2", "region", "price"} {
				if round > 0 && rng.IntN(3) > 0 {
					continue // later rounds supersede a third of the keys
				}
				spec := mql.AssertSpec{Subject: fmt.Sprintf("V%d", s), Predicate: pred, Value: value(pred), By: "owner",
					SeenBy: audiences[rng.IntN(len(audiences))]}
				if rng.IntN(20) == 0 {
					spec.ValidUntil = f.clk.Now().Add(time.Hour)
				}
				specs = append(specs, spec)
			}
		}
		rcs, err := db.AssertBatch(ctx, "owner", specs)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range rcs {
			refs = append(refs, rc.Ref)
		}
	}
	for range 200 {
		db.Revoke(ctx, mql.RevokeSpec{Claim: refs[rng.IntN(len(refs))], By: "owner", Because: "test"})
	}
	f.clk.Add(2 * time.Hour) // the claims valid for an hour have expired
	v, p := mql.Var("v"), mql.Var("p")
	queries := map[string]struct{ byValue, scan []mql.Cond }{
		"two constants": {
			[]mql.Cond{
				{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
				{Subject: v, Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
				{Subject: v, Predicate: "price", Op: "=", Object: p},
			},
			[]mql.Cond{
				{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Var("s")},
				{Subject: mql.Var("s"), Op: "=", Object: mql.Const(mql.Bool(true))},
				{Subject: v, Predicate: "region", Op: "=", Object: mql.Var("r")},
				{Subject: mql.Var("r"), Op: "=", Object: mql.Const(mql.String("EU"))},
				{Subject: v, Predicate: "price", Op: "=", Object: p},
			},
		},
		"three constants": {
			[]mql.Cond{
				{Subject: v, Predicate: "region", Op: "=", Object: mql.Const(mql.String("US"))},
				{Subject: v, Predicate: "price", Op: "=", Object: mql.Const(mql.Number(3))},
				{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(false))},
			},
			[]mql.Cond{
				{Subject: v, Predicate: "region", Op: "=", Object: mql.Var("r")},
				{Subject: mql.Var("r"), Op: "=", Object: mql.Const(mql.String("US"))},
				{Subject: v, Predicate: "price", Op: "=", Object: p},
				{Subject: p, Op: "=", Object: mql.Const(mql.Number(3))},
				{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Var("s")},
				{Subject: mql.Var("s"), Op: "=", Object: mql.Const(mql.Bool(false))},
			},
		},
	}
	readers := map[string]mql.Reader{"owner": db.Reader(), "alice": db.As("alice"), "bob": db.As("bob")}
	for name, q := range queries {
		for who, r := range readers {
			for _, limit := range []int{0, 7} {
				a := mql.FindQuery{Select: []string{"?v", "?p"}, Where: q.byValue, Limit: limit}
				b := mql.FindQuery{Select: []string{"?v", "?p"}, Where: q.scan, Limit: limit}
				if name == "three constants" {
					// Each lists its claims in an order of its own: compare the rows as sets.
					a.Select, b.Select = []string{"?v"}, []string{"?v"}
					if limit > 0 {
						continue
					}
				}
				if limit > 0 {
					a.OrderBy = []mql.Order{{Var: "?p", Desc: true}}
					b.OrderBy = a.OrderBy
				}
				got, err := r.Find(ctx, a)
				if err != nil {
					t.Fatal(err)
				}
				want, err := r.Find(ctx, b)
				if err != nil {
					t.Fatal(err)
				}
				if limit == 0 && len(want.Rows) < 40 {
					t.Errorf("%s, %s: %d rows; the lists should be long enough to read in several chunks", name, who, len(want.Rows))
				}
				if name == "three constants" {
					for _, x := range []*mql.FindResult{&got, &want} {
						for i := range x.Rows {
							slices.Sort(x.Rows[i].Claims)
						}
						slices.SortFunc(x.Rows, func(a, b mql.Row) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
					}
				}
				if !reflect.DeepEqual(got.Rows, want.Rows) {
					t.Errorf("%s, %s, limit %d: by value %d rows, scan %d rows", name, who, limit, len(got.Rows), len(want.Rows))
				}
			}
		}
	}
}
