package graphstore

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// A small vector index: each audience searched exactly up to 40 vectors, then filed in 4 lists
// of which a search reads 1 first.
var smallIVF = index.VectorIndex{TrainAt: 40, Lists: 4, Probes: 1}

// ivfClaim is a claim of the vector index's tests: written by by, seen by seenBy (nil: all).
type ivfClaim struct {
	by     string
	seenBy []string
	vec    []float32
}

// ivfHistory is a history of claims with vectors in three audiences (public, a's, b's), each
// near one of a few directions, in transactions of up to 7 claims.
func ivfHistory(seed uint64, n int) [][]ivfClaim {
	r := rand.New(rand.NewPCG(seed, 1))
	const dim = 12
	dirs := make([][]float32, 6)
	for i := range dirs {
		dirs[i] = make([]float32, dim)
		for j := range dirs[i] {
			dirs[i][j] = float32(r.NormFloat64())
		}
	}
	var txs [][]ivfClaim
	for len(txs) == 0 || n > 0 {
		var tx []ivfClaim
		for range 1 + r.IntN(7) {
			d := dirs[r.IntN(len(dirs))]
			v := make([]float32, dim)
			for j := range v {
				v[j] = d[j] + float32(r.NormFloat64()*0.4)
			}
			c := ivfClaim{by: "a", vec: v}
			switch r.IntN(3) {
			case 1:
				c.seenBy = []string{"a"}
			case 2:
				c.by, c.seenBy = "b", []string{"b"}
			}
			tx = append(tx, c)
			n--
		}
		txs = append(txs, tx)
	}
	return txs
}

// writeIVF writes the principals a and b, then txs (claim i of the whole history is K.c<i>),
// leaving out the claims skip refuses.
func writeIVF(t testing.TB, s *Store, txs [][]ivfClaim, skip func(ivfClaim) bool) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
		tx.Principals = []*record.Principal{{Name: "a", Type: record.Agent}, {Name: "b", Type: record.Agent}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for _, cs := range txs {
		_, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
			for _, c := range cs {
				i++
				if skip != nil && skip(c) {
					continue
				}
				tx.Claims = append(tx.Claims, &record.Claim{ID: *ckID(fmt.Sprintf("K.c%d@1", i)), Value: record.Value{Type: record.Number, Num: float64(i)},
					By: c.by, Kind: record.Inferred, Confidence: 1, SeenBy: c.seenBy, Vector: c.vec})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

type vectorAnswer struct {
	id     string
	cosine float64
}

// searchVector is what viewer finds nearest q as of asOf (0: the head), with limit answers.
func searchVector(t testing.TB, s *Store, viewer string, asOf record.TxID, q []float32, limit int, exact bool) []vectorAnswer {
	t.Helper()
	var out []vectorAnswer
	err := s.Read(context.Background(), func(ix *index.Index) error {
		if asOf == 0 {
			asOf = ix.Head()
		}
		for _, h := range ix.View(asOf, time.Now(), viewer).SearchVector(index.VectorQuery{Vector: q, Limit: limit, Exact: exact}) {
			out = append(out, vectorAnswer{h.Claim.Claim.ID.String(), h.Cosine})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func randomQuery(r *rand.Rand, dim int) []float32 {
	q := make([]float32, dim)
	for j := range q {
		q[j] = float32(r.NormFloat64())
	}
	return q
}

// nearQuery is a query near one of the history's vectors, as a question is near what answers it.
func nearQuery(r *rand.Rand, txs [][]ivfClaim) []float32 {
	cs := txs[r.IntN(len(txs))]
	v := cs[r.IntN(len(cs))].vec
	q := make([]float32, len(v))
	for j := range q {
		q[j] = v[j] + float32(r.NormFloat64()*0.3)
	}
	return q
}

// What a principal's vector search finds is a function of what it may see: the same with and
// without another principal's hidden vectors, which train their own audience's lists.
func TestVectorIndexTwinAudiences(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		seeds := uint64(3)
		if bc.name == "postgres" {
			seeds = 1 // a round trip a transaction
		}
		for seed := range seeds {
			txs := ivfHistory(seed, 400)
			full := mustOpen(t, bc.newDSN(t), Options{VectorIndex: smallIVF})
			twin := mustOpen(t, bc.newDSN(t), Options{VectorIndex: smallIVF})
			writeIVF(t, full, txs, nil)
			writeIVF(t, twin, txs, func(c ivfClaim) bool { return c.by == "b" })
			r := rand.New(rand.NewPCG(seed, 2))
			for range 20 {
				q := randomQuery(r, 12)
				for _, limit := range []int{1, 5, 30} {
					got, want := searchVector(t, full, "a", 0, q, limit, false), searchVector(t, twin, "a", 0, q, limit, false)
					if !slices.Equal(got, want) {
						t.Fatalf("seed %d, limit %d: a finds %v with b's vectors, %v without", seed, limit, got, want)
					}
					if len(got) != limit {
						t.Fatalf("seed %d: %d answers, want %d", seed, len(got), limit)
					}
				}
			}
			full.Close()
			twin.Close()
		}
	})
}

// A search as of tx N finds what a store holding only the first N transactions finds, across
// the transactions that train an audience's lists.
func TestVectorIndexTwinAsOf(t *testing.T) {
	txs := ivfHistory(7, 160)
	full := mustOpen(t, "memory:", Options{VectorIndex: smallIVF})
	defer full.Close()
	writeIVF(t, full, txs, nil)
	r := rand.New(rand.NewPCG(7, 3))
	queries := [][]float32{randomQuery(r, 12), randomQuery(r, 12), randomQuery(r, 12)}
	for n := 1; n <= len(txs); n += 3 {
		part := mustOpen(t, "memory:", Options{VectorIndex: smallIVF})
		writeIVF(t, part, txs[:n], nil)
		var head record.TxID
		part.Read(context.Background(), func(ix *index.Index) error { head = ix.Head(); return nil })
		for _, viewer := range []string{"", "a", "b"} {
			for _, q := range queries {
				got, want := searchVector(t, full, viewer, head, q, 8, false), searchVector(t, part, viewer, 0, q, 8, false)
				if !slices.Equal(got, want) {
					t.Fatalf("%d transactions, viewer %q: as of tx %d %v, the store of them %v", n, viewer, head, got, want)
				}
			}
		}
		part.Close()
	}
}

// The lists hold every vector once: reading all of them is the exact search, and reading the
// nearest first finds most of what the exact search finds.
func TestVectorIndexRecall(t *testing.T) {
	txs := ivfHistory(11, 600)
	s := mustOpen(t, "memory:", Options{VectorIndex: smallIVF})
	defer s.Close()
	writeIVF(t, s, txs, nil)
	all := mustOpen(t, "memory:", Options{VectorIndex: index.VectorIndex{TrainAt: 40, Lists: 4, Probes: 4}})
	defer all.Close()
	writeIVF(t, all, txs, nil)
	r := rand.New(rand.NewPCG(11, 4))
	found, total := 0, 0
	for range 50 {
		q := nearQuery(r, txs)
		exact := searchVector(t, s, "", 0, q, 10, true)
		if got := searchVector(t, all, "", 0, q, 10, false); !slices.Equal(got, exact) {
			t.Fatalf("reading every list: %v, the exact search %v", got, exact)
		}
		approx := searchVector(t, s, "", 0, q, 10, false)
		for _, a := range approx {
			if slices.Contains(exact, a) {
				found++
			}
		}
		total += len(exact)
	}
	if recall := float64(found) / float64(total); recall < 0.8 || math.IsNaN(recall) {
		t.Fatalf("recall@10 of the nearest list against the exact search: %.3f", recall)
	}
}

// A store's vector index is checked like every other entry, and rebuilt by an import.
func TestCheckVectorIndex(t *testing.T) {
	ctx := context.Background()
	path, _ := closedStore(t, func(t testing.TB, s *Store) {})
	s := mustOpen(t, path, Options{VectorIndex: smallIVF})
	txs := ivfHistory(5, 300)
	writeIVF(t, s, txs, nil)
	// An export gives every claim its vector, wherever the store keeps it, and an import of it
	// files them as the store did: the same searches find the same claims.
	var export bytes.Buffer
	if err := codec.WriteNQuads(&export, txsOf(s)); err != nil {
		t.Fatal(err)
	}
	again := "bbolt:" + filepath.Join(t.TempDir(), "again.db")
	if _, err := ImportStore(ctx, again, bytes.NewReader(export.Bytes()), Options{VectorIndex: smallIVF}, CheckOptions{}); err != nil {
		t.Fatal(err)
	}
	imported := mustOpen(t, again, Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	for range 10 {
		q := nearQuery(rng, txs)
		for _, viewer := range []string{"", "a", "b"} {
			if got, want := searchVector(t, imported, viewer, 0, q, 10, false), searchVector(t, s, viewer, 0, q, 10, false); !slices.Equal(got, want) {
				t.Fatalf("viewer %q: the import finds %v, the store %v", viewer, got, want)
			}
		}
	}
	imported.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := CheckDSN(ctx, path, Options{}, CheckOptions{}); err != nil || !r.OK() {
		ckLogProblems(t, r)
		t.Fatalf("a sound store with a vector index: %v", err)
	}
	// A vector filed in another list than its own is a problem the check names.
	moved := false
	editBucket(t, path, "text", func(w kv.Writer, b kv.Bucket, es []entry) error {
		for _, e := range es {
			if len(e.k) > 2 && e.k[0] == 0 && e.k[1] == 0xff && !moved {
				i := slices.Index(e.k[2:], 0) + 3 // after the audience and its NUL
				list, rest, ok := encoding.Uint(e.k[i:])
				if !ok {
					t.Fatalf("listed vector %q: no list number", e.k)
				}
				k := append(encoding.AppendUint(slices.Clone(e.k[:i]), (list+1)%4), rest...)
				moved = true
				if err := w.Delete(b, e.k); err != nil {
					return err
				}
				return w.Put(b, k, e.v)
			}
		}
		return nil
	})
	if !moved {
		t.Fatal("no listed vector found")
	}
	r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
	if err != nil || r.OK() {
		t.Fatalf("a vector in the wrong list: check OK (%v)", err)
	}
}

// A store that held vectors before the vector index existed keeps them unfiled: its searches
// read every vector, new vectors are not filed either, and its check's replay does the same.
func TestVectorIndexStoreBefore(t *testing.T) {
	ctx := context.Background()
	txs := ivfHistory(3, 200)
	path, _ := closedStore(t, func(t testing.TB, s *Store) {})
	s := mustOpen(t, path, Options{VectorIndex: smallIVF})
	writeIVF(t, s, txs[:len(txs)/2], nil)
	s.Close()
	// What an mql from before the vector index wrote: no ivf entries at all.
	for _, b := range []string{"meta", "text"} {
		editBucket(t, path, b, func(w kv.Writer, bk kv.Bucket, es []entry) error {
			for _, e := range es {
				if b == "meta" && strings.HasPrefix(string(e.k), "ivf") || b == "text" && strings.HasPrefix(string(e.k), "\x00\xff") {
					if err := w.Delete(bk, e.k); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	s = mustOpen(t, path, Options{VectorIndex: smallIVF})
	i := 0
	for _, cs := range txs[len(txs)/2:] { // the rest, numbered after the first half
		_, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
			for _, c := range cs {
				i++
				tx.Claims = append(tx.Claims, &record.Claim{ID: *ckID(fmt.Sprintf("L.c%d@1", i)), Value: record.Value{Type: record.Number, Num: float64(i)},
					By: c.by, Kind: record.Inferred, Confidence: 1, SeenBy: c.seenBy, Vector: c.vec})
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(3, 5))
	for range 10 {
		q := nearQuery(r, txs)
		if got, want := searchVector(t, s, "a", 0, q, 10, false), searchVector(t, s, "a", 0, q, 10, true); !slices.Equal(got, want) {
			t.Fatalf("a store from before the vector index: %v, the exact search %v", got, want)
		}
	}
	s.Close()
	editBucket(t, path, "text", func(_ kv.Writer, _ kv.Bucket, es []entry) error {
		for _, e := range es {
			if strings.HasPrefix(string(e.k), "\x00\xff") {
				t.Errorf("a store from before the vector index filed a vector: %q", e.k)
			}
		}
		return nil
	})
	if r, err := CheckDSN(ctx, path, Options{}, CheckOptions{}); err != nil || !r.OK() {
		ckLogProblems(t, r)
		t.Fatalf("a store from before the vector index: %v", err)
	}
}
