package mql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/provenance"
)

// refReviewState is rule 4 read literally: walk all of the artifact's inputs afresh.
func refReviewState(v *graphstore.View, a *graphstore.ArtifactNode) provenance.Review {
	var r provenance.Review
	reviewed := time.Time{}
	if rs := v.Reviews(a); len(rs) > 0 {
		r.Last = rs[len(rs)-1]
		reviewed = v.TxTime(r.Last.Tx)
	}
	for _, in := range provenance.Inputs(v, a) {
		live, since := provenance.NodeLive(v, in)
		if !live && (r.Last == nil || since.After(reviewed)) {
			r.Stale = append(r.Stale, in)
		}
	}
	r.Needs = len(r.Stale) > 0
	return r
}

// refConfidence is rule 6 read literally, recursing through every input.
func refConfidence(v *graphstore.View, a *graphstore.ArtifactNode) float64 {
	c := a.Confidence
	for _, in := range a.DerivedFrom {
		switch {
		case in.Claim != nil:
			if e := v.All().Claim(*in.Claim); e != nil {
				c = math.Min(c, v.EffectiveConfidence(e))
			}
		case in.Artifact != nil:
			if an := v.All().Artifact(*in.Artifact); an != nil {
				c = math.Min(c, refConfidence(v, an))
			}
		}
	}
	return c
}

// The cache, shared by every artifact of a read and filled in any order, gives each artifact the
// review state and confidence that walking its inputs afresh gives, stale inputs in the same
// order, over random derivation graphs with diamonds, re-derivations, superseded, revoked and
// decaying claims, and reviews; at the head and as of earlier transactions.
func TestCacheMatchesRules(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 7))
			now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
			ctx := context.Background()
			db, err := Open(ctx, "memory:", Options{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ok := func(_ Receipt, err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			keys := []string{"K0.p", "K1.p", "K2.q", "K3.q", "K4.q"}
			versions := map[string]int{} // of each key and artifact name
			revoked := map[string]bool{}
			// pick names a key or artifact, now and then pinning an older version.
			pick := func(ref string) string {
				if r.IntN(4) == 0 {
					return fmt.Sprintf("%s@%d", ref, 1+r.IntN(versions[ref]))
				}
				return ref
			}
			ok(db.SetDecay(ctx, DecaySpec{Predicate: "q", HalfLife: time.Hour, By: "owner"}))
			for _, k := range keys {
				s, p, _ := strings.Cut(k, ".")
				ok(db.Assert(ctx, AssertSpec{Subject: s, Predicate: p, Value: Number(1), By: "owner", Confidence: Confidence(0.5 + r.Float64()/2)}))
				versions[k]++
			}
			var names []string
			for range 120 {
				switch n := r.IntN(10); {
				case n < 6 || len(names) == 0:
					name := fmt.Sprintf("x%d", r.IntN(25))
					var from []string
					for range 1 + r.IntN(3) {
						if len(names) == 0 || r.IntN(3) == 0 {
							from = append(from, pick(keys[r.IntN(len(keys))]))
						} else {
							from = append(from, pick(names[r.IntN(len(names))]))
						}
					}
					if _, err := db.Derive(ctx, DeriveSpec{Artifact: name, From: from, By: "owner", Confidence: Confidence(0.7 + r.Float64()/3.4)}); err == nil {
						versions[name]++
						names = append(names, name)
					} else if !errors.Is(err, ErrCycle) && !errors.Is(err, ErrNotFound) { // a cycle, or a revoked key
						t.Fatal(err)
					}
				case n < 8:
					k := keys[r.IntN(len(keys))]
					s, p, _ := strings.Cut(k, ".")
					ok(db.Assert(ctx, AssertSpec{Subject: s, Predicate: p, Value: Number(float64(r.IntN(100))), By: "owner"}))
					versions[k]++
				case n < 9:
					c := pick(keys[r.IntN(len(keys))])
					if !strings.Contains(c, "@") || revoked[c] {
						continue
					}
					ok(db.Revoke(ctx, RevokeSpec{Claim: c, By: "owner", Because: "wrong"}))
					revoked[c] = true
				default:
					ok(db.Review(ctx, ReviewSpec{Artifact: pick(names[r.IntN(len(names))]), By: "owner"}))
				}
				now = now.Add(time.Minute)
			}
			head, _ := db.Head(ctx)
			for _, at := range []int64{head, head / 2, head - 5} {
				err := db.AsOfTx(at).view(ctx, func(v *graphstore.View) error {
					var arts []*graphstore.ArtifactNode
					for _, name := range v.ArtifactNames() {
						arts = append(arts, v.ArtifactVersions(name)...)
					}
					r.Shuffle(len(arts), func(i, j int) { arts[i], arts[j] = arts[j], arts[i] })
					pc := provenance.NewCache(v)
					for _, a := range arts {
						if got, want := pc.ReviewState(a), refReviewState(v, a); !reflect.DeepEqual(got, want) {
							t.Errorf("as of tx %d, %s: review %v, stale %v; want %v, stale %v", at, a.ID, got.Needs, got.Stale, want.Needs, want.Stale)
						}
						if got, want := pc.Confidence(a), refConfidence(v, a); got != want {
							t.Errorf("as of tx %d, %s: confidence %v, want %v", at, a.ID, got, want)
						}
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
