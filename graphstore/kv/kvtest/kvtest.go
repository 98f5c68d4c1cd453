// Package kvtest is the behaviour every kv backend must have, as a test any backend's package
// runs on a store of its own: reads of one's own writes, scans by prefix from a key in both
// directions, snapshots that never see a later commit, and a rollback that leaves nothing.
package kvtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/mql-dev/mql/graphstore/kv"
)

// Schema is the buckets Run needs.
var Schema = kv.Schema{Buckets: []kv.BucketDef{{Name: "one"}, {Name: "two", Append: true}}}

// Run checks s, a new empty store with Schema's buckets.
func Run(t *testing.T, s kv.Store) {
	ctx := context.Background()
	model := [2]map[string]string{{}, {}}
	rng := rand.New(rand.NewPCG(3, 4))
	key := func() []byte {
		n := 1 + rng.IntN(3)
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab\x00\xff"[rng.IntN(4)]
		}
		return b
	}
	for round := range 60 {
		w, err := s.Write(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pending := [2]map[string]string{clone(model[0]), clone(model[1])}
		for range 1 + rng.IntN(20) {
			b := kv.Bucket(rng.IntN(2))
			k := key()
			if rng.IntN(4) == 0 {
				if err := w.Delete(b, k); err != nil {
					t.Fatal(err)
				}
				delete(pending[b], string(k))
				continue
			}
			v := []byte(fmt.Sprintf("v%d", rng.IntN(1000)))
			if err := w.Put(b, slices.Clone(k), v); err != nil {
				t.Fatal(err)
			}
			pending[b][string(k)] = string(v)
		}
		// A write transaction reads its own writes.
		compare(t, fmt.Sprintf("round %d, in the write", round), w, pending, rng)
		before, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		prev := model
		if rng.IntN(5) == 0 {
			w.Rollback()
		} else {
			if err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			model = pending
		}
		// A snapshot begun before the commit sees none of it; one begun after sees all of it.
		compare(t, fmt.Sprintf("round %d, before", round), before, prev, rng)
		before.End()
		after, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		compare(t, fmt.Sprintf("round %d, after", round), after, model, rng)
		after.End()
	}
}

func clone(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func compare(t *testing.T, what string, r kv.Reader, want [2]map[string]string, rng *rand.Rand) {
	t.Helper()
	for b := range 2 {
		bucket := kv.Bucket(b)
		for k, v := range want[b] {
			got, err := r.Get(bucket, []byte(k))
			if err != nil || string(got) != v {
				t.Fatalf("%s: bucket %d, Get(%q) = %q, %v; want %q", what, b, k, got, err, v)
			}
		}
		if got, _ := r.Get(bucket, []byte("zz-none")); got != nil {
			t.Fatalf("%s: a missing key reads %q", what, got)
		}
		keys := make([]string, 0, len(want[b]))
		for k := range want[b] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for range 8 {
			prefix := []byte(nil)
			if rng.IntN(3) > 0 {
				prefix = []byte{"ab\x00\xff"[rng.IntN(4)]}
			}
			var from []byte
			if rng.IntN(2) == 0 {
				from = append(slices.Clone(prefix), "ab\x00\xff"[rng.IntN(4)])
			}
			reverse := rng.IntN(2) == 0
			var exp []string
			for _, k := range keys {
				if len(k) < len(prefix) || k[:len(prefix)] != string(prefix) {
					continue
				}
				if from != nil && (!reverse && k < string(from) || reverse && k > string(from)) {
					continue
				}
				exp = append(exp, k)
			}
			if reverse {
				slices.Reverse(exp)
			}
			var got []string
			err := r.Scan(bucket, prefix, kv.ScanOptions{From: from, Reverse: reverse}, func(k, v []byte) (bool, error) {
				if string(v) != want[b][string(k)] {
					t.Fatalf("%s: scan gives %q = %q, want %q", what, k, v, want[b][string(k)])
				}
				got = append(got, string(k))
				return true, nil
			})
			if err != nil || !slices.Equal(got, exp) {
				t.Fatalf("%s: bucket %d, Scan(prefix %q, from %q, reverse %v) = %q, %v; want %q", what, b, prefix, from, reverse, got, err, exp)
			}
		}
	}
}
