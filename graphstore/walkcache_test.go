package graphstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/graphstore/record/recordtest"
	"github.com/mql-dev/mql/provenance"
)

// countingKV counts the entries its snapshots read (each Get, each entry a Scan passes).
type countingKV struct {
	kv.Store
	reads atomic.Int64
}

func (c *countingKV) Read(ctx context.Context) (kv.ReadTx, error) {
	rt, err := c.Store.Read(ctx)
	if err != nil {
		return nil, err
	}
	return &countingRead{ReadTx: rt, n: &c.reads}, nil
}

type countingRead struct {
	kv.ReadTx
	n *atomic.Int64
}

func (r *countingRead) Get(b kv.Bucket, k []byte) ([]byte, error) {
	r.n.Add(1)
	return r.ReadTx.Get(b, k)
}

func (r *countingRead) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	return r.ReadTx.Scan(b, prefix, opts, func(k, v []byte) (bool, error) {
		r.n.Add(1)
		return fn(k, v)
	})
}

type countingBackend struct {
	backend
	ckv *countingKV
}

func (c *countingBackend) kv() kv.Store { return c.ckv }

// An impact walk over more entries than one read may add to the process cache (8,000 artifact
// versions, three entries each) is kept whole by the walk that read it: the next impact of the
// same claim reads (almost) nothing from the store. (Under the bound of any read, 16,384
// entries, the second read 6,654 entries again.)
func TestWalkIsCachedWhole(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, "memory:", Options{})
	defer s.Close()
	ck := &countingKV{Store: s.be.kv()}
	s.be = &countingBackend{backend: s.be, ckv: ck}

	hub := recordtest.ID("Hub.score@1")
	write := func(f func(tx *record.Tx)) {
		t.Helper()
		if _, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error { f(tx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	write(func(tx *record.Tx) {
		tx.Claims = []*record.Claim{{ID: *hub, Value: record.Value{Type: record.Number, Num: 1}, By: "owner", Kind: record.Observed, Confidence: 1}}
	})
	const mids, leaves = 8, 1000
	write(func(tx *record.Tx) {
		for m := range mids {
			tx.Artifacts = append(tx.Artifacts, &record.Artifact{ID: record.ArtifactID{Name: fmt.Sprintf("mid:%d", m), Version: 1},
				DerivedFrom: []record.NodeRef{{Claim: hub}}, By: "owner", Confidence: 1})
		}
	})
	for m := range mids {
		write(func(tx *record.Tx) {
			for l := range leaves {
				tx.Artifacts = append(tx.Artifacts, &record.Artifact{ID: record.ArtifactID{Name: fmt.Sprintf("leaf:%d:%d", m, l), Version: 1},
					DerivedFrom: []record.NodeRef{{Artifact: &record.ArtifactID{Name: fmt.Sprintf("mid:%d", m), Version: 1}}}, By: "owner", Confidence: 1})
			}
		})
	}

	impact := func() (reached int, reads int64) {
		t.Helper()
		before := ck.reads.Load()
		err := s.Read(ctx, func(ix *index.Index) error {
			out, _ := provenance.Impact(ix.View(ix.Head(), time.Now(), ""), []record.NodeRef{{Claim: hub}}, 0, 0)
			reached = len(out)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return reached, ck.reads.Load() - before
	}
	n, first := impact()
	if n != mids+mids*leaves {
		t.Fatalf("impact reached %d artifacts, want %d", n, mids+mids*leaves)
	}
	if first < 2*int64(n) {
		t.Fatalf("the first impact read %d entries; a walk of %d versions reads two or more each: is the counting wrong?", first, n)
	}
	if _, again := impact(); again > 100 {
		t.Errorf("the second impact read %d entries from the store (the first: %d); the first walk's should be cached", again, first)
	}
}
