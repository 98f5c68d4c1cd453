package graphstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// vectorSample writes claims with vectors of dimension 3 (K.price@1, K.note@1, seen by w) and
// one without (K.soc2@1).
func vectorSample(t testing.TB, s *Store) {
	t.Helper()
	steps := []func(tx *record.Tx){
		func(tx *record.Tx) {
			tx.Principals = []*record.Principal{{Name: "w", Type: record.Agent}}
		},
		func(tx *record.Tx) {
			tx.Claims = []*record.Claim{
				{ID: *ckID("K.price@1"), Value: record.Value{Type: record.Number, Num: 44}, By: "w", Kind: record.Inferred, Confidence: 1, Vector: []float32{1, 0.5, -0.25}},
				{ID: *ckID("K.soc2@1"), Value: record.Value{Type: record.Bool, Bool: true}, By: "w", Kind: record.Inferred, Confidence: 1},
			}
		},
		func(tx *record.Tx) {
			tx.Claims = []*record.Claim{{ID: *ckID("K.note@1"), Value: record.Value{Type: record.String, Str: "EU"}, By: "w", Kind: record.Inferred, Confidence: 1, SeenBy: []string{"w"}, Vector: []float32{0, 1, 3.5e-05}}}
		},
	}
	for i, step := range steps {
		if _, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error { step(tx); return nil }); err != nil {
			t.Fatalf("vector sample step %d: %v", i, err)
		}
	}
}

// vectorEntries are the vector entries of the closed store at path (bucket text, keys that
// start with NUL), in key order.
func vectorEntries(t *testing.T, path string) []entry {
	t.Helper()
	var out []entry
	editBucket(t, path, "text", func(_ kv.Writer, _ kv.Bucket, es []entry) error {
		for _, e := range es {
			if len(e.k) > 0 && e.k[0] == 0 {
				out = append(out, e)
			}
		}
		return nil
	})
	if len(out) != 2 {
		t.Fatalf("%d vector entries, want 2", len(out))
	}
	return out
}

// A store's vectors are checked: a replay of its records (which carry them) gives every vector
// entry and the dimension, so one that belongs to no claim, or is of another dimension, or
// holds what no vector may, is a problem the check names.
func TestCheckVectors(t *testing.T) {
	ctx := context.Background()
	path, want := closedStore(t, vectorSample)
	if r, err := CheckDSN(ctx, path, Options{}, CheckOptions{}); err != nil || !r.OK() {
		ckLogProblems(t, r)
		t.Fatalf("a sound store with vectors: %v", err)
	}
	if got := want[2].Claims[0].Vector; len(got) != 3 || got[1] != 0.5 {
		t.Fatalf("tx 2 reads back K.price@1 with the vector %v", got)
	}
	if want[2].Claims[1].Vector != nil {
		t.Fatalf("tx 2 reads back K.soc2@1 with the vector %v", want[2].Claims[1].Vector)
	}
	// vectorValue is the fields of a vector entry with its components replaced.
	vectorValue := func(t *testing.T, v []byte, comps ...float32) []byte {
		fields, _ := unseal(v)
		d := encoding.NewDec(fields)
		d.Uvarint()
		d.Uvarint()
		_ = d.String()
		head := fields[:len(fields)-len(d.B)]
		out := binary.AppendUvarint(bytes.Clone(head), uint64(len(comps)))
		for _, f := range comps {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
		}
		return reseal(out, true)
	}
	cases := []struct {
		name string
		edit func(t *testing.T, path string)
		kind string
		want string
	}{
		{name: "a vector of a transaction without claims", edit: func(t *testing.T, path string) {
			es := vectorEntries(t, path)
			editBucket(t, path, "text", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				k := encoding.AppendUint(encoding.AppendUint([]byte{0}, 1), 0) // tx 1, the genesis
				return w.Put(b, k, bytes.Clone(es[0].v))
			})
		}, kind: ProblemIndex, want: `text: the store holds`},
		{name: "a vector naming no claim of its transaction", edit: func(t *testing.T, path string) {
			es := vectorEntries(t, path)
			editBucket(t, path, "text", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				k := encoding.AppendUint(encoding.AppendUint([]byte{0}, 3), 99)
				return w.Put(b, k, bytes.Clone(es[0].v))
			})
		}, kind: ProblemRecord, want: "tx 3: the transaction's records cannot be read"},
		{name: "a vector of another dimension", edit: func(t *testing.T, path string) {
			es := vectorEntries(t, path)
			editBucket(t, path, "text", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				return w.Put(b, es[1].k, vectorValue(t, es[1].v, 1, 2))
			})
		}, kind: ProblemReference, want: "tx 4: claim K.note@1 has a vector of 2 dimensions; the store's vectors have 3"},
		{name: "a vector holding a NaN", edit: func(t *testing.T, path string) {
			es := vectorEntries(t, path)
			editBucket(t, path, "text", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				return w.Put(b, es[0].k, vectorValue(t, es[0].v, 1, float32(math.NaN()), 0))
			})
		}, kind: ProblemEncoding, want: "component 1 is NaN"},
		{name: "another dimension recorded", edit: func(t *testing.T, path string) {
			editBucket(t, path, "meta", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				return w.Put(b, []byte("vector"), encoding.Seal(binary.AppendUvarint(nil, 4)))
			})
		}, kind: ProblemIndex, want: `meta: "vector" is not what its records give`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, _ := closedStore(t, vectorSample)
			tc.edit(t, path)
			r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !ckFound(r, tc.kind, tc.want) {
				ckLogProblems(t, r)
				t.Fatalf("no %s problem mentioning %q", tc.kind, tc.want)
			}
		})
	}
}

// A write whose vector has not the store's dimension is refused before anything is written:
// the chain check every transaction passes names it.
func TestWriteRefusesAnotherDimension(t *testing.T) {
	s := mustOpen(t, "memory:", Options{})
	defer s.Close()
	vectorSample(t, s)
	head := s.Head()
	_, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
		tx.Claims = []*record.Claim{{ID: *ckID("K.price@2"), Value: record.Value{Type: record.Number, Num: 45}, By: "w", Kind: record.Inferred, Confidence: 1, Vector: []float32{1, 2}, Supersedes: ckID("K.price@1")}}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "2 dimensions; the store's vectors have 3") {
		t.Fatalf("a vector of 2 dimensions: %v", err)
	}
	if s.Head() != head {
		t.Fatalf("the head moved from %d to %d", head, s.Head())
	}
	if errors.Is(err, ErrStorage) {
		t.Fatalf("a refused vector is no storage failure: %v", err)
	}
}
