package index

import (
	"context"
	"fmt"
	"testing"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// A snapshot told to Pass (an export's) reads what the cache holds and adds nothing to it;
// one that does not adds what it read.
func TestPassAddsNothingToTheCache(t *testing.T) {
	ctx := context.Background()
	st := memkv.New(Schema)
	wt, err := st.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		id := fmt.Sprintf("s%d", i)
		if err := wt.Put(bSource, []byte(id), encoding.Seal(encodeSource(&record.Source{ID: id, Tx: 1}))); err != nil {
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
	c := NewCache(0, 1<<20)
	read := func(pass bool) int {
		ix := open(rt, c, storeState{})
		if pass {
			ix.Pass()
		}
		for i := range 100 {
			if s := ix.source(fmt.Sprintf("s%d", i)); s == nil {
				t.Fatalf("source s%d not read", i)
			}
		}
		return len(c.m)
	}
	if n := read(true); n != 0 {
		t.Fatalf("a passing read added %d entries to the cache", n)
	}
	if n := read(false); n != 100 {
		t.Fatalf("a read added %d entries, want 100", n)
	}
	if n := read(true); n != 100 {
		t.Fatalf("a passing read over the cached entries left %d, want 100", n)
	}
}
