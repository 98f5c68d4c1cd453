package mql_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// The cache of decoded entries never changes an answer: two stores given the same writes, one
// with the cache and one whose cache holds nothing, answer every read the same after every
// write — of the newest state, as of earlier transactions, and as one principal — while the
// writes supersede, contest, revoke with replacement, confirm, derive and review, which is
// what rewrites cached entries.
func TestCacheNeverChangesAnAnswer(t *testing.T) {
	for _, backend := range []string{"memory", "bbolt"} {
		t.Run(backend, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			// One clock for both, moved by the test: reads ask it too.
			var now atomic.Int64
			now.Store(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).UnixNano())
			clock := func() func() time.Time {
				return func() time.Time { return time.Unix(0, now.Load()).UTC() }
			}
			open := func(name string, cache int) *mql.DB {
				dsn := "memory:"
				if backend == "bbolt" {
					dsn = filepath.Join(dir, name)
				}
				db, err := mql.Open(ctx, dsn, mql.Options{Clock: clock(), CacheBytes: cache})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.Close() })
				return db
			}
			cached, bare := open("cached.db", 0), open("bare.db", 1)
			rng := rand.New(rand.NewPCG(uint64(pmEnv(t, "MQL_CACHE_SEED", 7)), 11))
			subjects := []string{"K", "B", "C"}
			preds := []string{"price", "region"}
			users := []string{"alice", "w1", "w2"}
			both := func(f func(db *mql.DB) (mql.Receipt, error)) {
				r1, e1 := f(cached)
				r2, e2 := f(bare)
				if (e1 == nil) != (e2 == nil) || r1.Ref != r2.Ref || r1.State != r2.State {
					t.Fatalf("the stores wrote differently: %+v %v / %+v %v", r1, e1, r2, e2)
				}
			}
			for _, u := range users {
				typ := mql.Agent
				if u == "alice" {
					typ = mql.User
				}
				both(func(db *mql.DB) (mql.Receipt, error) {
					return db.AddPrincipal(ctx, mql.PrincipalSpec{Name: u, Type: typ, By: "owner"})
				})
			}
			both(func(db *mql.DB) (mql.Receipt, error) {
				return db.Grant(ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "*", By: "owner"})
			})
			var claims, arts []string
			read := func(db *mql.DB, head int64) string {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				rd := []mql.Reader{db.Reader(), db.As("w1"), db.AsOfTx(max(1, head-3)), db.AsOfTx(max(1, head/2))}
				for _, r := range rd {
					for _, s := range subjects {
						l, err := r.Live(ctx, s)
						enc.Encode(l)
						enc.Encode(fmt.Sprint(err))
						for _, p := range preds {
							w, err := r.Why(ctx, s+"."+p)
							enc.Encode(w)
							enc.Encode(fmt.Sprint(err))
							h, err := r.History(ctx, s+"."+p)
							enc.Encode(h)
							enc.Encode(fmt.Sprint(err))
						}
					}
					for _, c := range claims {
						im, err := r.Impact(ctx, c, 0)
						enc.Encode(im)
						enc.Encode(fmt.Sprint(err))
					}
					f, err := r.Find(ctx, mql.FindQuery{Select: []string{"?v", "?p"}, Where: []mql.Cond{
						{Subject: mql.Var("v"), Predicate: "price", Op: "=", Object: mql.Var("p")}}})
					enc.Encode(f)
					enc.Encode(fmt.Sprint(err))
					q, err := r.ReviewQueue(ctx)
					enc.Encode(q)
					enc.Encode(fmt.Sprint(err))
				}
				return b.String()
			}
			for step := range 200 {
				now.Add(int64(time.Second))
				by := users[rng.IntN(len(users))]
				switch k := rng.IntN(10); {
				case k < 5:
					s, p := subjects[rng.IntN(3)], preds[rng.IntN(2)]
					var v mql.Value
					if p == "price" {
						v = mql.Number(float64(rng.IntN(4)))
					} else {
						v = mql.String([]string{"EU", "US"}[rng.IntN(2)])
					}
					spec := mql.AssertSpec{Subject: s, Predicate: p, Value: v, By: by}
					if rng.IntN(2) == 0 {
						spec.Sources = []mql.Source{{ID: fmt.Sprintf("src:%d", step)}}
					}
					if rng.IntN(5) == 0 {
						spec.SeenBy = []string{by}
					}
					both(func(db *mql.DB) (mql.Receipt, error) {
						rc, err := db.Assert(ctx, spec)
						if err == nil && db == cached {
							claims = append(claims, rc.Ref)
						}
						return rc, err
					})
				case k < 7 && len(claims) > 0:
					c := claims[rng.IntN(len(claims))]
					spec := mql.RevokeSpec{Claim: c, By: "owner", Because: "test"}
					if rng.IntN(2) == 0 && len(claims) > 1 {
						spec.ReplacedBy = claims[rng.IntN(len(claims))]
					}
					both(func(db *mql.DB) (mql.Receipt, error) { return db.Revoke(ctx, spec) })
				case k < 8 && len(claims) > 0:
					c := claims[rng.IntN(len(claims))]
					both(func(db *mql.DB) (mql.Receipt, error) {
						return db.Confirm(ctx, mql.ConfirmSpec{Claim: c, By: "alice"})
					})
				case k < 9 && len(claims) > 0:
					name := fmt.Sprintf("a%d", rng.IntN(4))
					from := []string{claims[rng.IntN(len(claims))]}
					if len(arts) > 0 && rng.IntN(2) == 0 {
						from = append(from, arts[rng.IntN(len(arts))])
					}
					both(func(db *mql.DB) (mql.Receipt, error) {
						rc, err := db.Derive(ctx, mql.DeriveSpec{Artifact: name, From: from, By: "owner"})
						if err == nil && db == cached {
							arts = append(arts, rc.Ref)
						}
						return rc, err
					})
				case len(arts) > 0:
					a := arts[rng.IntN(len(arts))]
					both(func(db *mql.DB) (mql.Receipt, error) {
						return db.Review(ctx, mql.ReviewSpec{Artifact: a, By: "owner", Because: "checked"})
					})
				}
				if step%4 != 3 {
					continue
				}
				head, _ := cached.Head(ctx)
				a, b := read(cached, head), read(bare, head)
				if a != b {
					t.Fatalf("after step %d the cached store answers otherwise:\n%s\nthe store without a cache:\n%s", step, a, b)
				}
				// Read twice: the second read is served from what the first put in the cache.
				if again := read(cached, head); again != b {
					t.Fatalf("after step %d a second read of the cached store answers otherwise", step)
				}
			}
		})
	}
}
