package index

// The vectors: the embedding a claim's writer gave it, stored by Apply with the claim, beside
// the text index (layout.go, docs/FORMAT.md):
//
//	bText  NUL u(tx) u(seq)  → vectorEntry: the vector of the claim of global seq seq
//	bMeta  "vector"          → u(dim): the store's dimension, fixed by its first vector
//
// They live in the text bucket under a key no term has (a term is never empty, so no term key
// starts with NUL), so that a store of format mql-kv/3 written before vectors existed holds
// none and reads and checks as it did, on every backend: a new bucket would be a new table on
// PostgreSQL, which such a store lacks. Keys come in transaction order, as the text postings
// do, so that a view reads the vectors it may see and stops at the first later one.
//
// A vector is part of its claim's record (record.Claim.Vector): a transaction read back
// (Index.Tx) carries its claims' vectors, so an export writes them and a check replays and
// compares them like every other entry.

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

var metaVector = []byte("vector") // the store's vector dimension

// vectorPrefix starts every vector key in bText.
var vectorPrefix = []byte{0}

func vectorKey(tx record.TxID, seq uint64) []byte {
	return u(u(append(make([]byte, 0, 12), vectorPrefix...), uint64(tx)), seq)
}

// vectorEntry is the value of a vector key: which claim it is the vector of, its audience
// (so that a search skips what the viewer may not see without reading the claim), and the
// vector, little-endian float32s; or, for a vector filed in its audience's list when it was
// written (ivf.go), no components and the list's number, where the vector is.
type vectorEntry struct {
	keySeq   uint64
	version  int
	audience string
	vec      []float32
	list     int // with listed: the list the vector is in
	listed   bool
}

func (x *vectorEntry) encode() []byte {
	e := enc{}
	e.Uvarint(x.keySeq)
	e.Uvarint(uint64(x.version))
	e.String(x.audience)
	if x.listed {
		e.Uvarint(0)
		e.Uvarint(uint64(x.list))
		return e.B
	}
	e.Uvarint(uint64(len(x.vec)))
	for _, f := range x.vec {
		e.B = binary.LittleEndian.AppendUint32(e.B, math.Float32bits(f))
	}
	return e.B
}

func decodeVectorEntry(b []byte) (*vectorEntry, error) {
	d := dec{encoding.NewDec(b)}
	x := &vectorEntry{keySeq: d.Uvarint(), version: d.version(), audience: d.String()}
	n := d.Len()
	if n == 0 && d.Err == nil {
		x.list, x.listed = d.count(), true
		return x, d.Done()
	}
	raw := d.Raw(4 * n)
	if d.Err == nil {
		x.vec = make([]float32, n)
		for i := range x.vec {
			x.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
	}
	return x, d.Done()
}

// listedVector is the vector entry that a listed global entry x (of tx and seq) points to,
// read from its audience's list.
func (ix *Index) listedVector(x *vectorEntry, tx record.TxID, seq uint64) *vectorEntry {
	k := u(u(ivfListPrefix(x.audience, x.list), uint64(tx)), seq)
	b := ix.get(bText, k)
	if b == nil {
		corrupt(fmt.Sprintf("vector %q", k), fmt.Errorf("%w: the vector of %d:%d is not in its list", encoding.ErrCorrupt, tx, seq))
	}
	y, err := decodeVectorEntry(b)
	if err == nil && (y.listed || y.keySeq != x.keySeq || y.version != x.version) {
		err = fmt.Errorf("%w: it is not the vector of version %d of key number %d", encoding.ErrCorrupt, x.version, x.keySeq)
	}
	if err != nil {
		corrupt(fmt.Sprintf("vector %q", k), err)
	}
	return y
}

// VectorDim is the dimension of the store's vectors: that of the first one written, 0 before.
func (ix *Index) VectorDim() int {
	b := ix.get(bMeta, metaVector)
	if b == nil {
		return 0
	}
	d := dec{encoding.NewDec(b)}
	n := d.Uvarint()
	if err := d.Done(); err != nil || n == 0 || n > record.MaxVectorDim {
		corrupt("the vector dimension", fmt.Errorf("%w: %q", encoding.ErrCorrupt, b))
	}
	return int(n)
}

// addVector stores claim c's vector, if it has one (c the version of the key numbered keySeq,
// global seq seq); the first vector of the store fixes its dimension.
func (ix *Index) addVector(c *record.Claim, keySeq, seq uint64) error {
	if len(c.Vector) == 0 {
		return nil
	}
	switch dim := ix.VectorDim(); {
	case dim == 0:
		e := enc{}
		e.Uvarint(uint64(len(c.Vector)))
		ix.put(bMeta, slices.Clone(metaVector), e.B)
		ix.startFiling()
	case dim != len(c.Vector):
		return fmt.Errorf("%w: %s has a vector of %d dimensions, the store's have %d", ErrInvalid, c.ID, len(c.Vector), dim)
	}
	x := &vectorEntry{keySeq: keySeq, version: c.ID.Version, audience: Audience(c.SeenBy), vec: c.Vector}
	if ix.filing() != nil {
		ix.fileVector(c, x, seq) // with its global entry, when the Apply ends
		return nil
	}
	ix.put(bText, vectorKey(c.Tx, seq), x.encode())
	return nil
}

// txVectors gives each claim of tx (read back by Tx, in the order recorded, of global seqs
// seqs, which grow, and key numbers keySeqs) the vector stored with it. The claims are copies:
// a ClaimEntry's claim is shared with the cache.
func (ix *Index) txVectors(tx *record.Tx, seqs, keySeqs []uint64) {
	prefix := u(slices.Clone(vectorPrefix), uint64(tx.ID))
	i := 0 // the keys come in seq order too: one pass over the claims
	var listed []pointer
	ix.scan(bText, prefix, kv.ScanOptions{}, func(k, b []byte) bool {
		seq, rest, ok := encoding.Uint(k[len(prefix):])
		for i < len(seqs) && seqs[i] < seq {
			i++
		}
		if !ok || len(rest) > 0 || i == len(seqs) || seqs[i] != seq {
			corrupt(fmt.Sprintf("vector %q", k), fmt.Errorf("%w: it names no claim of tx %d", encoding.ErrCorrupt, tx.ID))
		}
		x, err := decodeVectorEntry(b)
		if err == nil && (x.keySeq != keySeqs[i] || x.version != tx.Claims[i].ID.Version) {
			err = fmt.Errorf("%w: it is of version %d of key number %d, not of %s", encoding.ErrCorrupt, x.version, x.keySeq, tx.Claims[i].ID)
		}
		if err != nil {
			corrupt(fmt.Sprintf("vector %q", k), err)
		}
		c := *tx.Claims[i]
		c.Vector = x.vec
		tx.Claims[i] = &c
		if x.listed {
			listed = append(listed, pointer{i: i, tx: tx.ID, seq: seq, x: x})
		}
		return true
	})
	// Read after the scan: a backend need not take a read inside its scan.
	for _, p := range listed {
		tx.Claims[p.i].Vector = ix.listedVector(p.x, tx.ID, p.seq).vec
	}
}

// pointer is a listed global entry found in a scan: its claim's place in its transaction (in
// txVectors), its key's tx and seq, and the entry.
type pointer struct {
	i   int
	tx  record.TxID
	seq uint64
	x   *vectorEntry
}

// VectorQuery is a search by similarity: the query vector, and which claims are answers.
type VectorQuery struct {
	Vector []float32
	// History, Match and Limit are as in TextQuery.
	History bool
	Match   func(*ClaimEntry) bool
	Limit   int
	// Exact reads every vector the viewer may see, not the nearest lists: the answers the
	// vector index approximates, which its tests and benchmarks compare it with.
	Exact bool
}

// VectorHit is one answer of a vector search: a claim and the cosine similarity of its vector
// to the query's.
type VectorHit struct {
	Claim  *ClaimEntry
	Cosine float64
}

type vectorCandidate struct {
	keySeq  uint64
	version int
	seq     uint64
	cosine  float64
}

// SearchVector returns the answers of q, most similar first, then in the order the claims
// were recorded: over every vector the viewer may see as of the view, exactly, on a store
// that does not file its vectors; over the nearest lists of each audience trained by then
// (ivf.go) and every vector of the others, on one that does. q's vector must have the store's
// dimension and not be zero (the caller checks).
func (v *View) SearchVector(q VectorQuery) []VectorHit {
	qn := norm(q.Vector)
	if qn == 0 {
		return nil
	}
	s := &vectorScan{v: v, q: q.Vector, qn: qn}
	if p := v.ix.filing(); p != nil && !q.Exact {
		return v.searchFiled(q, p, s)
	}
	sees := map[string]bool{} // by audience: a store has few
	s.entries(bText, vectorPrefix, func(aud []byte) bool {
		ok, known := sees[string(aud)]
		if !known {
			ok = v.seesAudience(string(aud))
			sees[string(aud)] = ok
		}
		return ok
	}, isListed)
	return v.vectorAnswers(s.cands, q)
}

// answer is the claim a search's candidate names if it is an answer (live unless history,
// and matched by match if set), nil otherwise: the filter text and vector search share.
// what names the index the candidate came from, for the fault of a candidate that names no
// claim the viewer may see.
func (v *View) answer(keySeq uint64, version int, history bool, match func(*ClaimEntry) bool, what string) *ClaimEntry {
	k := v.ix.keyOf(keySeq)
	e := v.ix.claimAt(k, keySeq, version)
	if !v.visibleClaim(e) {
		corrupt(fmt.Sprintf("%s of %s@%d", what, k, version), fmt.Errorf("%w: the claim is not the one indexed", encoding.ErrCorrupt))
	}
	if !history && !v.isLive(e) || match != nil && !match(e) {
		return nil
	}
	return e
}

func norm(x []float32) float64 {
	var s float64
	for _, f := range x {
		s += float64(f) * float64(f)
	}
	return math.Sqrt(s)
}

// cosine is the cosine similarity of q (of norm qn, not 0) and the vector of little-endian
// float32s raw, of q's dimension; 0 when that is zero, which has no direction. Four
// components a step, each into its own sums: the loop is most of an exact search's time, and
// independent sums keep the processor's multipliers busy.
func cosine(q []float32, qn float64, raw []byte) float64 {
	var d0, d1, d2, d3, n0, n1, n2, n3 float64
	i := 0
	for ; i+4 <= len(q); i += 4 {
		b := raw[4*i : 4*i+16]
		x0 := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[0:])))
		x1 := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4:])))
		x2 := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[8:])))
		x3 := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[12:])))
		d0 += float64(q[i]) * x0
		d1 += float64(q[i+1]) * x1
		d2 += float64(q[i+2]) * x2
		d3 += float64(q[i+3]) * x3
		n0 += x0 * x0
		n1 += x1 * x1
		n2 += x2 * x2
		n3 += x3 * x3
	}
	for ; i < len(q); i++ {
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		d0 += float64(q[i]) * x
		n0 += x * x
	}
	dot, xx := (d0+d1)+(d2+d3), (n0+n1)+(n2+n3)
	if xx == 0 {
		return 0
	}
	return dot / (qn * math.Sqrt(xx))
}

// cosineOf is cosine for a vector decoded already.
func cosineOf(q []float32, qn float64, x []float32) float64 {
	raw := make([]byte, 0, 4*len(x))
	for _, f := range x {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(f))
	}
	return cosine(q, qn, raw)
}

// vectorHeap is a max-heap of candidates by similarity, then by the order recorded.
type vectorHeap []vectorCandidate

func (h vectorHeap) Len() int { return len(h) }
func (h vectorHeap) Less(i, j int) bool {
	if h[i].cosine != h[j].cosine {
		return h[i].cosine > h[j].cosine
	}
	return h[i].seq < h[j].seq
}
func (h vectorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *vectorHeap) Push(x any)   { *h = append(*h, x.(vectorCandidate)) }
func (h *vectorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
