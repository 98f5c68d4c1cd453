package index

// The vector index: each audience's vectors filed in lists by direction (an "inverted file",
// IVF), so that a search reads the lists nearest its query instead of every vector.
//
//	bMeta  "ivf"                                 → ivfParams: how this store files its vectors
//	bMeta  "ivf" NUL "s" audience NUL            → ivfState: the audience's vectors, and when its lists were trained
//	bMeta  "ivf" NUL "c" audience NUL            → the audience's centroids, once trained
//	bMeta  "ivf" NUL "p" audience NUL u(tx) u(seq) → vectorEntry: a vector of an audience not trained yet
//	bText  NUL 0xFF audience NUL u(list) u(tx) u(seq) → vectorEntry: a vector of a trained audience, in its list
//
// An audience's first trainAt vectors wait in bMeta, where a search reads them all (an exact
// search). The transaction that brings the audience to trainAt trains its centroids on them
// (package kmeans, deterministic), files each in the list of its nearest centroid and deletes
// it from bMeta; from then on every vector of the audience is filed as it is written. The
// global entries (vector.go) stay as they are: they are the claims' vectors, which the export
// and the check read; the lists are a second copy, in the order a search reads them.
//
// Why by audience: centroids trained on every vector would let vectors a reader may not see
// decide which lists a search reads, and so which visible vectors it finds. An audience's
// centroids are trained on that audience's vectors only, and whoever sees one of them sees
// them all: a search's answers are a function of what its reader may see.
//
// Why lists and not a graph (HNSW): a vector is filed by one entry written in its claim's
// transaction, on every backend, and an entry is never rewritten, so a search as of a past
// transaction reads the lists up to it, by key order, as it reads everything else. A search as
// of tx N finds what a store holding only the first N transactions finds: an audience trained
// after N is searched exactly, over the global entries up to N, which is what that store's
// bMeta holds for it. A graph rewrites its nodes' neighbours on every insert.
//
// A store that held vectors before this index existed has no "ivf" entry: its vectors are
// searched exactly, and filed in lists once `mql export` and `mql import` rebuild it.

import (
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kmeans"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

var (
	metaIVF      = []byte("ivf")
	ivfStates    = []byte("ivf\x00s")
	ivfCentroids = []byte("ivf\x00c")
	ivfPending   = []byte("ivf\x00p")
	ivfListed    = []byte{0, 0xff} // after every global vector key: a u(tx) starts with its length, 0 to 8
)

// ivfParams are how a store files its vectors, fixed when it writes its first one.
type ivfParams struct {
	trainAt    int    // an audience's vectors searched exactly before its lists are trained
	lists      int    // centroids an audience is trained with
	sample     int    // of its first trainAt vectors, how many the training reads at most
	iterations int    // k-means rounds
	seed       uint64 // k-means++'s
	probes     int    // lists a search reads first (more while it has fewer answers than its limit)
}

// DefaultIVF: an exact search of 16,384 vectors of 384 dimensions takes some 30 ms of CPU
// (docs/BENCHMARKS.md, "Search by vector"); past that an audience's vectors are filed in 128
// lists, of which a search reads 8 first: a sixteenth of them.
var defaultIVF = ivfParams{trainAt: 16384, lists: 128, sample: 8192, iterations: 8, seed: 1, probes: 8}

// VectorIndex are the parameters a store's vector index is built with, fixed when the store
// writes its first vector; a zero field takes its default (defaultIVF).
type VectorIndex struct {
	TrainAt int // an audience's vectors searched exactly before they are filed in lists (16,384)
	Lists   int // the lists an audience's vectors are filed in (128)
	Probes  int // the lists a search reads first (8)
}

func (p VectorIndex) params() ivfParams {
	q := defaultIVF
	if p.TrainAt > 0 {
		q.trainAt = p.TrainAt
	}
	if p.Lists > 0 {
		q.lists = p.Lists
	}
	if p.Probes > 0 {
		q.probes = p.Probes
	}
	q.sample = min(q.sample, q.trainAt)
	return q
}

// FileVectorsWith sets the parameters the write handle builds the vector index with, if the
// store's first vector is among what it writes.
func (ix *Index) FileVectorsWith(p VectorIndex) { ix.ivfWant = p }

func (p ivfParams) encode() []byte {
	e := enc{}
	for _, x := range []uint64{uint64(p.trainAt), uint64(p.lists), uint64(p.sample), uint64(p.iterations), p.seed, uint64(p.probes)} {
		e.Uvarint(x)
	}
	return e.B
}

func decodeIVFParams(b []byte) (ivfParams, error) {
	d := dec{encoding.NewDec(b)}
	p := ivfParams{trainAt: d.count(), lists: d.count(), sample: d.count(), iterations: d.count()}
	p.seed = d.Uvarint()
	p.probes = d.count()
	err := d.Done()
	if err == nil && (p.trainAt < 1 || p.lists < 1 || p.sample < 1 || p.probes < 1 || p.iterations > 1000) {
		err = fmt.Errorf("%w: vector index parameters %+v", encoding.ErrCorrupt, p)
	}
	return p, err
}

// count reads what Uvarint wrote as a non-negative int.
func (d dec) count() int {
	x := d.Uvarint()
	if x > math.MaxInt32 {
		d.fail("count")
		return 0
	}
	return int(x)
}

// ivfState is an audience's: its vectors so far, and the transaction that trained its lists
// (0: not yet).
type ivfState struct {
	count   int
	trained record.TxID
}

func (s ivfState) encode() []byte {
	e := enc{}
	e.Uvarint(uint64(s.count))
	e.Tx(s.trained)
	return e.B
}

func decodeIVFState(b []byte) (ivfState, error) {
	d := dec{encoding.NewDec(b)}
	s := ivfState{count: d.count(), trained: d.Tx()}
	return s, d.Done()
}

func ivfKey(prefix []byte, aud string) []byte {
	return encoding.AppendName(append(make([]byte, 0, len(prefix)+len(aud)+12), prefix...), aud)
}

func ivfListPrefix(aud string, list int) []byte { return u(ivfKey(ivfListed, aud), uint64(list)) }

// Filing is how a store files its vectors for search, which the replay a check compares it
// with must copy (FileVectorsAs): its parameters, or that it searches its vectors exactly
// because it held vectors before the vector index existed.
type Filing struct {
	params []byte // the "ivf" entry, nil if none
	exact  bool   // the store holds vectors and no "ivf" entry
}

// FilingOf reads how the store r files its vectors.
func FilingOf(r kv.Reader) (Filing, error) {
	b, err := r.Get(bMeta, metaIVF)
	if err != nil {
		return Filing{}, err
	}
	if b != nil {
		b, err = encoding.Unseal(b)
		return Filing{params: bytes.Clone(b)}, err
	}
	d, err := r.Get(bMeta, metaVector)
	return Filing{exact: d != nil}, err
}

// FileVectorsAs makes the write handle file vectors as f says: a replay of a store files its
// vectors as that store does.
func (ix *Index) FileVectorsAs(f Filing) {
	ix.ivfExact = f.exact
	if f.params != nil && ix.get(bMeta, metaIVF) == nil {
		ix.put(bMeta, slices.Clone(metaIVF), bytes.Clone(f.params))
		ix.ivfLoaded = false
	}
}

// filing is the store's vector index parameters, nil if it searches its vectors exactly.
func (ix *Index) filing() *ivfParams {
	if ix.ivfLoaded {
		return ix.ivf
	}
	ix.ivf, ix.ivfLoaded = nil, true
	if b := ix.get(bMeta, metaIVF); b != nil {
		p, err := decodeIVFParams(b)
		if err != nil {
			corrupt("the vector index's parameters", err)
		}
		ix.ivf = &p
	}
	return ix.ivf
}

// startFiling is called with a store's first vector: from it on, the store files its vectors
// (unless a replay copies a store that does not).
func (ix *Index) startFiling() {
	if ix.ivfExact || ix.filing() != nil {
		return
	}
	ix.put(bMeta, slices.Clone(metaIVF), ix.ivfWant.params().encode())
	ix.ivfLoaded = false
}

func (ix *Index) ivfState(aud string) ivfState {
	b := ix.get(bMeta, ivfKey(ivfStates, aud))
	if b == nil {
		return ivfState{}
	}
	s, err := decodeIVFState(b)
	if err != nil {
		corrupt(fmt.Sprintf("the vector index of audience %q", aud), err)
	}
	return s
}

// centroids are audience aud's, nil before it is trained; a handle decodes them once.
func (ix *Index) centroids(aud string) [][]float32 {
	if cs, ok := ix.ivfCents[aud]; ok {
		return cs
	}
	b := ix.get(bMeta, ivfKey(ivfCentroids, aud))
	if b == nil {
		return nil
	}
	cs, err := decodeCentroids(b)
	if err != nil {
		corrupt(fmt.Sprintf("the centroids of audience %q", aud), err)
	}
	if ix.ivfCents == nil {
		ix.ivfCents = map[string][][]float32{}
	}
	ix.ivfCents[aud] = cs
	return cs
}

func encodeCentroids(cs [][]float32) []byte {
	e := enc{}
	e.Uvarint(uint64(len(cs)))
	e.Uvarint(uint64(len(cs[0])))
	for _, c := range cs {
		for _, f := range c {
			e.B = binary.LittleEndian.AppendUint32(e.B, math.Float32bits(f))
		}
	}
	return e.B
}

func decodeCentroids(b []byte) ([][]float32, error) {
	d := dec{encoding.NewDec(b)}
	k, dim := d.count(), d.count()
	if d.Err == nil && (k < 1 || dim < 1 || dim > record.MaxVectorDim || k*dim*4 > len(b)) {
		d.fail("centroids")
	}
	var cs [][]float32
	if d.Err == nil {
		raw := d.Raw(4 * k * dim)
		if d.Err != nil || len(raw) != 4*k*dim {
			d.fail("centroids")
			return nil, d.Done()
		}
		for i := range k {
			c := make([]float32, dim)
			for j := range c {
				c[j] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*(i*dim+j):]))
			}
			cs = append(cs, c)
		}
	}
	return cs, d.Done()
}

// toFile is a vector an Apply files when it ends (flushVectors): its global entry, its key's
// u(tx) u(seq), its entry in bMeta or a list.
type toFile struct {
	x     *vectorEntry
	tx    record.TxID
	seq   uint64
	txSeq []byte
	entry []byte
}

// fileVector has claim c's vector (entry x, global seq seq) filed in its audience's index when
// the Apply ends; the store files its vectors (addVector asks).
func (ix *Index) fileVector(c *record.Claim, x *vectorEntry, seq uint64) {
	filed := vectorEntry{keySeq: x.keySeq, version: x.version, vec: x.vec}
	ix.toFile = append(ix.toFile, toFile{x: x, tx: c.Tx, seq: seq, txSeq: u(u(nil, uint64(c.Tx)), seq), entry: filed.encode()})
}

// flushVectors files the vectors the Apply wrote, audience by audience: while an audience has
// fewer than trainAt, in bMeta, with a global entry that holds the vector; the one that brings
// it to trainAt trains its lists; the rest in the list of their nearest centroid, found for all
// of them at once on every processor, with a global entry that names the list. So a vector is
// stored twice only while its audience is small (and at most trainAt of them once it is not).
// Which of the two a vector gets depends on how many of its audience came before it, not on
// how a staged build splits its transaction into Applies.
func (ix *Index) flushVectors(tx record.TxID) {
	if len(ix.toFile) == 0 {
		return
	}
	p := ix.filing()
	var auds []string
	byAud := map[string][]toFile{}
	for _, f := range ix.toFile {
		if _, ok := byAud[f.x.audience]; !ok {
			auds = append(auds, f.x.audience)
		}
		byAud[f.x.audience] = append(byAud[f.x.audience], f)
	}
	ix.toFile = ix.toFile[:0]
	for _, aud := range auds {
		fs := byAud[aud]
		st := ix.ivfState(aud)
		for st.trained == 0 && len(fs) > 0 {
			ix.put(bText, vectorKey(fs[0].tx, fs[0].seq), fs[0].x.encode())
			ix.put(bMeta, append(ivfKey(ivfPending, aud), fs[0].txSeq...), fs[0].entry)
			fs = fs[1:]
			if st.count++; st.count >= p.trainAt {
				ix.train(aud, *p)
				st.trained = tx
			}
		}
		if len(fs) > 0 {
			vecs := make([][]float32, len(fs))
			for i, f := range fs {
				vecs[i] = f.x.vec
			}
			lists := make([]int, len(fs))
			kmeans.Assign(ix.centroids(aud), vecs, lists)
			for i, f := range fs {
				ix.put(bText, append(ivfListPrefix(aud, lists[i]), f.txSeq...), f.entry)
				ref := vectorEntry{keySeq: f.x.keySeq, version: f.x.version, audience: aud, list: lists[i], listed: true}
				ix.put(bText, vectorKey(f.tx, f.seq), ref.encode())
			}
			st.count += len(fs)
		}
		ix.put(bMeta, ivfKey(ivfStates, aud), st.encode())
	}
}

// train trains audience aud's centroids on its vectors waiting in bMeta, files each in its
// list and deletes it there.
func (ix *Index) train(aud string, p ivfParams) {
	prefix := ivfKey(ivfPending, aud)
	type waiting struct {
		key, entry []byte
		vec        []float32
	}
	var all []waiting
	ix.scan(bMeta, prefix, kv.ScanOptions{}, func(k, b []byte) bool {
		x, err := decodeVectorEntry(b)
		if err != nil {
			corrupt(fmt.Sprintf("vector %q", k), err)
		}
		all = append(all, waiting{bytes.Clone(k), bytes.Clone(b), x.vec})
		return true
	})
	step := (len(all) + p.sample - 1) / p.sample
	var sample [][]float32
	for i := 0; i < len(all); i += step {
		sample = append(sample, all[i].vec)
	}
	cs := kmeans.Train(sample, kmeans.Params{K: p.lists, Iterations: p.iterations, Seed: p.seed})
	if len(cs) == 0 { // only zero vectors: one list, in any direction
		cs = [][]float32{make([]float32, len(all[0].vec))}
		cs[0][0] = 1
	}
	ix.put(bMeta, ivfKey(ivfCentroids, aud), encodeCentroids(cs))
	if ix.ivfCents == nil {
		ix.ivfCents = map[string][][]float32{}
	}
	ix.ivfCents[aud] = cs
	vecs := make([][]float32, len(all))
	for i, w := range all {
		vecs[i] = w.vec
	}
	lists := make([]int, len(all))
	kmeans.Assign(cs, vecs, lists)
	for i, w := range all {
		txSeq := w.key[len(prefix):]
		ix.put(bText, append(ivfListPrefix(aud, lists[i]), txSeq...), w.entry)
		ix.del(bMeta, w.key)
	}
}

// vectorScan reads vector entries for a search: each one's cosine with the query, in place.
type vectorScan struct {
	v     *View
	q     []float32
	qn    float64
	cands []vectorCandidate
}

// entries adds the candidates of the entries of b under prefix, whose keys go on with u(tx)
// u(seq), up to the view's transaction. sees, if set, says whether the viewer may see an
// entry's audience; stop, if set, ends the scan at the first key it holds. A global entry that
// names the list its vector is in is read from there, after the scan.
func (s *vectorScan) entries(b kv.Bucket, prefix []byte, sees func(aud []byte) bool, stop func(k []byte) bool) {
	var listed []pointer
	s.v.ix.scan(b, prefix, kv.ScanOptions{}, func(k, val []byte) bool {
		if stop != nil && stop(k) {
			return false
		}
		tx, rest, ok1 := encoding.Uint(k[len(prefix):])
		seq, rest, ok2 := encoding.Uint(rest)
		if !ok1 || !ok2 || len(rest) > 0 {
			corrupt(fmt.Sprintf("vector %q", k), fmt.Errorf("%w: bad key", encoding.ErrCorrupt))
		}
		if !s.v.in(record.TxID(tx)) {
			return false // keys come in tx order: the rest are later still
		}
		// Read in place, without decoding the vector into a slice: a search reads them all.
		d := dec{encoding.NewDec(val)}
		c := vectorCandidate{keySeq: d.Uvarint(), version: d.version(), seq: seq}
		aud := d.Raw(d.Len())
		n := d.Len()
		if n == 0 && d.Err == nil {
			x := &vectorEntry{keySeq: c.keySeq, version: c.version, audience: string(aud), list: d.count(), listed: true}
			if err := d.Done(); err != nil {
				corrupt(fmt.Sprintf("vector %q", k), err)
			}
			if sees == nil || sees(aud) {
				listed = append(listed, pointer{tx: record.TxID(tx), seq: seq, x: x})
			}
			return true
		}
		raw := d.Raw(4 * n)
		if err := d.Done(); err != nil || len(raw) != 4*len(s.q) {
			if err == nil {
				err = fmt.Errorf("%w: %d dimensions, the store's have %d", encoding.ErrCorrupt, len(raw)/4, len(s.q))
			}
			corrupt(fmt.Sprintf("vector %q", k), err)
		}
		if sees == nil || sees(aud) {
			c.cosine = cosine(s.q, s.qn, raw)
			s.cands = append(s.cands, c)
		}
		return true
	})
	for _, p := range listed {
		y := s.v.ix.listedVector(p.x, p.tx, p.seq)
		if len(y.vec) != len(s.q) {
			corrupt(fmt.Sprintf("the vector of %d:%d", p.tx, p.seq), fmt.Errorf("%w: %d dimensions, the store's have %d", encoding.ErrCorrupt, len(y.vec), len(s.q)))
		}
		s.cands = append(s.cands, vectorCandidate{keySeq: p.x.keySeq, version: p.x.version, seq: p.seq, cosine: cosineOf(s.q, s.qn, y.vec)})
	}
}

// trainedAudience is an audience whose lists a search reads, nearest first.
type trainedAudience struct {
	aud   string
	order []int // its lists, by their centroid's similarity to the query
}

// searchFiled is SearchVector on a store that files its vectors (p its parameters).
func (v *View) searchFiled(q VectorQuery, p *ivfParams, s *vectorScan) []VectorHit {
	var trained []trainedAudience
	exactly := map[string]bool{} // audiences trained after the view: searched over the global entries
	v.ix.scan(bMeta, ivfStates, kv.ScanOptions{}, func(k, b []byte) bool {
		aud, rest, ok := bytes.Cut(k[len(ivfStates):], []byte{0})
		if !ok || len(rest) > 0 {
			corrupt(fmt.Sprintf("vector index %q", k), fmt.Errorf("%w: bad key", encoding.ErrCorrupt))
		}
		if !v.seesAudience(string(aud)) {
			return true
		}
		st, err := decodeIVFState(b)
		if err != nil {
			corrupt(fmt.Sprintf("vector index %q", k), err)
		}
		switch a := string(aud); {
		case st.trained == 0:
			s.entries(bMeta, ivfKey(ivfPending, a), nil, nil)
		case v.in(st.trained):
			trained = append(trained, trainedAudience{aud: a, order: nearestLists(v.ix.centroids(a), s.q)})
		default:
			exactly[a] = true
		}
		return true
	})
	if len(exactly) > 0 {
		s.entries(bText, vectorPrefix, func(aud []byte) bool { return exactly[string(aud)] }, isListed)
	}
	read := 0 // of each trained audience's lists, nearest first, those read so far
	for probes := p.probes; ; probes *= 2 {
		all := true
		for _, t := range trained {
			n := len(t.order)
			if q.Limit > 0 && probes < n {
				n, all = probes, false
			}
			for _, l := range t.order[min(read, n):n] {
				s.entries(bText, ivfListPrefix(t.aud, l), nil, nil)
			}
		}
		read = probes
		// vectorAnswers reorders what it is given: the candidates stay for the next round.
		hits := v.vectorAnswers(slices.Clone(s.cands), q)
		if all || len(hits) >= q.Limit {
			return hits
		}
	}
}

func isListed(k []byte) bool { return bytes.HasPrefix(k, ivfListed) }

// nearestLists orders the lists by their centroid's similarity to q, the first of equals first.
func nearestLists(cs [][]float32, q []float32) []int {
	dots := make([]float64, len(cs))
	order := make([]int, len(cs))
	for i, c := range cs {
		dots[i], order[i] = kmeans.Dot(c, q), i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(dots[b], dots[a]) })
	return order
}

// vectorAnswers are the answers among cands, most similar first, up to q's limit.
func (v *View) vectorAnswers(cands []vectorCandidate, q VectorQuery) []VectorHit {
	h := vectorHeap(cands)
	heap.Init(&h)
	var hits []VectorHit
	for h.Len() > 0 {
		c := heap.Pop(&h).(vectorCandidate)
		e := v.answer(c.keySeq, c.version, q.History, q.Match, "vector")
		if e == nil {
			continue
		}
		hits = append(hits, VectorHit{Claim: e, Cosine: c.cosine})
		if q.Limit > 0 && len(hits) == q.Limit {
			break
		}
	}
	return hits
}
