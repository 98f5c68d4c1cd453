package graphstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
)

// What goes through the spool ends in the store as if written straight into it: random puts
// and deletes of the bulk buckets and of others, over many small runs, some keys written in
// several runs; a bucket read part-way is written out at once and reads its own writes; no
// run file is left in the directory.
func TestBulkSpool(t *testing.T) {
	ctx := context.Background()
	for _, readAt := range []int{-1, 150} {
		t.Run(fmt.Sprintf("read at %d", readAt), func(t *testing.T) {
			dir := t.TempDir()
			sp := newBulkSpool(dir, ".x.spool-*")
			defer sp.close()
			sp.limit = 64 // a run every few entries
			got, want := memkv.New(index.Schema), memkv.New(index.Schema)
			store := spoolStore{got, sp}
			rnd := rand.New(rand.NewPCG(5, uint64(readAt+2)))
			buckets := append([]kv.Bucket{0, 6}, index.BulkBuckets...)
			for batch := range 30 {
				wt, err := store.Write(ctx)
				if err != nil {
					t.Fatal(err)
				}
				ww, _ := want.Write(ctx)
				for i := range 10 {
					b := buckets[rnd.IntN(len(buckets))]
					k := []byte(fmt.Sprintf("k%03d", rnd.IntN(60)))
					if rnd.IntN(4) == 0 {
						wt.Delete(b, k)
						ww.Delete(b, k)
					} else {
						v := []byte(fmt.Sprintf("v%d.%d", batch, i))
						wt.Put(b, k, v)
						ww.Put(b, k, v)
					}
					if batch*10+i == readAt {
						// A read of a bulk bucket: it sees every write before it.
						rb := index.BulkBuckets[1]
						for n := range 60 {
							k := []byte(fmt.Sprintf("k%03d", n))
							g, _ := wt.Get(rb, k)
							w, _ := ww.Get(rb, k)
							if string(g) != string(w) {
								t.Fatalf("read part-way: %q = %q, want %q", k, g, w)
							}
						}
					}
				}
				if err := wt.Commit(ctx); err != nil {
					t.Fatal(err)
				}
				ww.Commit(ctx)
			}
			if len(sp.runs) < 10 {
				t.Fatalf("%d runs: the test wants many", len(sp.runs))
			}
			if err := sp.finish(ctx, got, nil); err != nil {
				t.Fatal(err)
			}
			for _, b := range buckets {
				if g, w := bucketDump(t, got, b), bucketDump(t, want, b); g != w {
					t.Errorf("bucket %d:\n got %s\nwant %s", b, g, w)
				}
			}
			if names, _ := filepath.Glob(filepath.Join(dir, "*")); len(names) > 0 {
				t.Errorf("left in the directory: %v", names)
			}
		})
	}
}

func bucketDump(t *testing.T, s kv.Store, b kv.Bucket) string {
	t.Helper()
	rt, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.End()
	out := ""
	rt.Scan(b, nil, kv.ScanOptions{}, func(k, v []byte) (bool, error) {
		out += string(k) + "=" + string(v) + " "
		return true, nil
	})
	return out
}
