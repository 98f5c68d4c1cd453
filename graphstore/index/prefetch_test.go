package index

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
)

// eachSorted finds exactly the entries a lookup of each key (a scan of each prefix) finds,
// however far apart the keys are: side by side, across gaps longer than a scan passes before
// it seeks again, missing, before the first entry and after the last.
func TestEachSortedFindsWhatLookupsFind(t *testing.T) {
	ctx := context.Background()
	st := memkv.New(Schema)
	wt, err := st.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Entries 10..2000 step 1, each with two sub-entries under it for the prefix scans.
	for i := uint64(10); i <= 2000; i++ {
		for _, sub := range []uint64{1, 2} {
			k := u(u(nil, i), sub)
			if err := wt.Put(bDep, k, encoding.Seal(fmt.Appendf(nil, "%d.%d", i, sub))); err != nil {
				t.Fatal(err)
			}
		}
		if err := wt.Put(bArtName, u(nil, i), encoding.Seal(fmt.Appendf(nil, "%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := wt.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	rt, err := st.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.End()
	ix := &Index{r: rt}

	for _, tc := range []struct {
		name string
		nums []uint64
	}{
		{"none", nil},
		{"one", []uint64{500}},
		{"side by side", []uint64{100, 101, 102, 103, 104}},
		{"gaps past maxSkip", []uint64{20, 20 + maxSkip + 1, 20 + 5*maxSkip, 1999}},
		{"missing before, between and after", []uint64{1, 9, 10, 11, 2000, 2001, 5000}},
		{"only missing", []uint64{0, 3, 2001, 1 << 40}},
		{"every other", func() (ns []uint64) {
			for i := uint64(0); i < 300; i += 2 {
				ns = append(ns, i)
			}
			return ns
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var keys [][]byte
			for _, n := range tc.nums {
				keys = append(keys, u(nil, n))
			}
			for _, prefix := range []bool{false, true} {
				b := bArtName
				if prefix {
					b = bDep
				}
				var want, got []string
				for i, k := range keys {
					if prefix {
						ix.scan(b, k, kv.ScanOptions{}, func(_, v []byte) bool {
							want = append(want, fmt.Sprintf("%d:%s", i, v))
							return true
						})
					} else if v := ix.get(b, k); v != nil {
						want = append(want, fmt.Sprintf("%d:%s", i, v))
					}
				}
				ix.eachSorted(b, keys, prefix, func(i int, _, v []byte) {
					got = append(got, fmt.Sprintf("%d:%s", i, v))
				})
				if !slices.Equal(got, want) {
					t.Errorf("prefix %v: %q, want %q", prefix, got, want)
				}
			}
		})
	}
}
