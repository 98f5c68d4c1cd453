package graphstore

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
)

// The text index is checked as every other bucket: a posting missing, or one the records do
// not give, is an index problem, and the store is refused writes until it is copied.
func TestCheckDamagedTextIndex(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, bucket, want string
		edit               func(w kv.Writer, b kv.Bucket, es []entry) error
	}{
		{"a posting missing", "text", `text: the store lacks "price\x00`, func(w kv.Writer, b kv.Bucket, es []entry) error {
			for _, e := range es {
				if bytes.HasPrefix(e.k, []byte("price\x00")) {
					return w.Delete(b, e.k)
				}
			}
			return errors.New("no posting of price")
		}},
		{"a posting the records do not give", "text", `text: the store holds "zebra\x00`, func(w kv.Writer, b kv.Bucket, es []entry) error {
			if len(es) == 0 {
				return errors.New("no postings")
			}
			k := append([]byte("zebra\x00"), es[0].k[bytes.IndexByte(es[0].k, 0)+1:]...)
			return w.Put(b, k, bytes.Clone(es[0].v))
		}},
		{"statistics changed", "textstats", `textstats: `, func(w kv.Writer, b kv.Bucket, es []entry) error {
			if len(es) == 0 {
				return errors.New("no statistics")
			}
			return w.Put(b, bytes.Clone(es[0].k), encoding.Seal([]byte{9, 9}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, want := closedStore(t, ckSample)
			editBucket(t, path, tc.bucket, tc.edit)
			r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !ckFound(r, ProblemIndex, tc.want) {
				ckLogProblems(t, r)
				t.Fatalf("no index problem mentioning %q", tc.want)
			}
			ckRefused(t, path, want)
		})
	}
}
