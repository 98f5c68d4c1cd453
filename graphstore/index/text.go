package index

// The text index: what text search reads, written by Apply with each claim (so that it never
// disagrees with the claims), in two buckets (layout.go, docs/FORMAT.md):
//
//	bText       term NUL u(tx)      → textBlock: the claims of tx that hold term
//	bTextStats  audience NUL u(tx)  → textStats: the claims of that audience up to tx
//
// A term's postings are kept one entry per transaction, not one per claim: a bulk load of
// 100,000 claims writes each of its terms once, and a search reads a term's claims a block at
// a time. Postings come in the order the claims were recorded (by global seq), within a block
// and across blocks (key order is tx order), which is the order the search merges them in.
//
// Every claim version is indexed once, when it is recorded, and never changed: whether it is
// live is decided when it is read (View.State), like every read decides it. The statistics
// BM25 needs are kept per audience and transaction so that a reader's are those of the claims
// it may see as of the transaction it reads, and nothing else: the number of claims and of
// their terms come from bTextStats (the last entry at or before the transaction, of each
// audience the reader may see), and a term's document frequency from the postings the reader
// may see.

import (
	"cmp"
	"container/heap"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/mql-dev/mql/analysis"
	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/benchknob"
	"github.com/mql-dev/mql/ranking"
)

// textBlock is the value of a bText entry: the postings of one term in one transaction, in
// seq order, and the audiences they name (each once, in the order of its first posting).
type textBlock struct {
	audiences []string
	posts     []textPost
	// Room for the first audience and postings, so that a block of a transaction that holds
	// its term once or twice (most of them) takes no allocation of its own: blocks are carved
	// from a textWriter's slab.
	aud1  [1]string
	post2 [2]textPost
}

// textPost is one posting: a claim holding a term. Its fields are as narrow as the decoders'
// bounds allow (versions, counts and lengths are at most 2³¹): a transaction's postings are
// copied as its blocks grow, and 32 bytes copy faster than 48.
type textPost struct {
	seq      uint64 // the claim's global seq: the order of claims that score alike
	keySeq   uint64
	version  uint32
	tf       uint32 // how often the claim holds the term
	length   uint32 // the claim's number of terms
	audience uint32 // in textBlock.audiences
}

// A text block is written in its compact form: a 0 byte (which no block of the first form
// starts with: it names at least one audience), the audiences, the number of postings, then per
// posting its seq (the first as it is, each next as the difference from the one before), its
// keySeq as the signed difference from the one before (claims recorded together mostly have
// neighbouring keys), and one uvarint packing its number of terms with two flags, followed by
// its tf when the flag says it is not 1, its version when not 1, and its audience's place when
// the block names more than one. Most postings take three or four bytes; the first form took
// seven or eight. Blocks of the first form, written before, still decode.
const (
	textCompact    = 0
	textTFNotOne   = 1 << 0
	textVerNotOne  = 1 << 1
	textFlagsShift = 2
)

// appendTo appends the block's encoding to buf.
func (b *textBlock) appendTo(buf []byte) []byte {
	e := enc{encoding.Enc{B: buf}}
	e.Byte(textCompact)
	e.Strings(b.audiences)
	e.Uvarint(uint64(len(b.posts)))
	var lastSeq, lastKey uint64
	for _, p := range b.posts {
		e.Uvarint(p.seq - lastSeq) // seqs only grow: a small delta
		e.Varint(int64(p.keySeq - lastKey))
		lastSeq, lastKey = p.seq, p.keySeq
		packed := uint64(p.length) << textFlagsShift
		if p.tf != 1 {
			packed |= textTFNotOne
		}
		if p.version != 1 {
			packed |= textVerNotOne
		}
		e.Uvarint(packed)
		if p.tf != 1 {
			e.Uvarint(uint64(p.tf))
		}
		if p.version != 1 {
			e.Uvarint(uint64(p.version))
		}
		if len(b.audiences) > 1 {
			e.Uvarint(uint64(p.audience))
		}
	}
	return e.B
}

func decodeTextBlock(b []byte) (*textBlock, error) {
	if len(b) > 0 && b[0] == textCompact {
		return decodeCompactTextBlock(b[1:])
	}
	d := dec{encoding.NewDec(b)}
	t := &textBlock{audiences: d.Strings()}
	n := d.Len()
	if (len(t.audiences) == 0 || n == 0) && d.Err == nil {
		d.fail("text block without postings")
	}
	var last uint64
	for i := 0; i < n && d.Err == nil; i++ {
		p := textPost{seq: last + d.Uvarint(), keySeq: d.Uvarint(), version: uint32(d.version())}
		tf, length, aud := d.Uvarint(), d.Uvarint(), d.Uvarint()
		// Bounded before they become ints: a damaged value must not index past the audiences.
		if aud >= uint64(len(t.audiences)) || i > 0 && p.seq <= last || tf < 1 || tf > 1<<31 || length > 1<<31 {
			d.fail("text posting")
			break
		}
		p.tf, p.length, p.audience = uint32(tf), uint32(length), uint32(aud)
		last = p.seq
		t.posts = append(t.posts, p)
	}
	return t, d.Done()
}

func decodeCompactTextBlock(b []byte) (*textBlock, error) {
	d := dec{encoding.NewDec(b)}
	t := &textBlock{audiences: d.Strings()}
	n := d.Len()
	if (len(t.audiences) == 0 || n == 0) && d.Err == nil {
		d.fail("text block without postings")
	}
	var lastSeq, lastKey uint64
	for i := 0; i < n && d.Err == nil; i++ {
		p := textPost{seq: lastSeq + d.Uvarint(), tf: 1, version: 1}
		delta := d.Varint()
		packed := d.Uvarint()
		if packed>>textFlagsShift > 1<<31 {
			d.fail("text posting length")
			break
		}
		p.length = uint32(packed >> textFlagsShift)
		if packed&textTFNotOne != 0 {
			if tf := d.Uvarint(); tf <= 1 || tf > 1<<31 {
				d.fail("text posting tf")
			} else {
				p.tf = uint32(tf)
			}
		}
		if packed&textVerNotOne != 0 {
			if v := d.version(); v == 1 {
				d.fail("text posting version")
			} else {
				p.version = uint32(v)
			}
		}
		var aud uint64
		if len(t.audiences) > 1 {
			aud = d.Uvarint()
		}
		key := int64(lastKey) + delta
		if key < 0 || aud >= uint64(len(t.audiences)) || i > 0 && p.seq <= lastSeq {
			d.fail("text posting")
			break
		}
		p.audience = uint32(aud)
		p.keySeq = uint64(key)
		lastSeq, lastKey = p.seq, p.keySeq
		t.posts = append(t.posts, p)
	}
	return t, d.Done()
}

// SameEntry reports whether two values of an entry of bucket b under key say the same: equal
// bytes, or, for a text block, the same postings in either of its forms (a store written
// before the compact form holds the first; a replay of its records gives the compact one).
func SameEntry(b kv.Bucket, key, x, y []byte) bool {
	if string(x) == string(y) {
		return true
	}
	if b != bText || len(key) > 0 && key[0] == 0 { // a vector, under its NUL prefix
		return false
	}
	bx, errx := encoding.Unseal(x)
	by, erry := encoding.Unseal(y)
	if errx != nil || erry != nil {
		return false
	}
	tx, errx := decodeTextBlock(bx)
	ty, erry := decodeTextBlock(by)
	return errx == nil && erry == nil && slices.Equal(tx.audiences, ty.audiences) && slices.Equal(tx.posts, ty.posts)
}

// textStats is the value of a bTextStats entry: the claims of one audience recorded up to a
// transaction, and their terms in all.
type textStats struct{ docs, terms uint64 }

func (s textStats) encode() []byte {
	e := enc{}
	e.Uvarint(s.docs)
	e.Uvarint(s.terms)
	return e.B
}

func decodeTextStats(b []byte) (textStats, error) {
	d := dec{encoding.NewDec(b)}
	s := textStats{docs: d.Uvarint(), terms: d.Uvarint()}
	return s, d.Done()
}

func appendTextKey(b []byte, term string, tx record.TxID) []byte {
	return u(encoding.AppendName(b, term), uint64(tx))
}

func textStatsKey(audience string, tx record.TxID) []byte {
	return u(encoding.AppendName(make([]byte, 0, len(audience)+6), audience), uint64(tx))
}

// claimDocument is the text of claim c, as the analyzer reads it: its key, its value when a
// string, and the excerpt it shows for each source: what it quotes from it, or, when it quotes
// nothing, the excerpt an earlier mql recorded with the source (recorded before it, in its
// transaction or earlier), as every read shows the citation.
func (ix *Index) claimDocument(c *record.Claim) analysis.Document {
	d := analysis.Document{Subject: c.ID.Subject, Predicate: c.ID.Predicate}
	if c.Value.Type == record.String {
		d.Value = c.Value.Str
	}
	for i, id := range c.Sources {
		quote := ""
		if i < len(c.Excerpts) {
			quote = c.Excerpts[i]
		}
		if quote == "" {
			if s := ix.source(id); s != nil {
				quote = s.Excerpt
			}
		}
		if quote != "" {
			d.Excerpts = append(d.Excerpts, quote)
		}
	}
	return d
}

// textWriter is what a write handle keeps to index text: its analyzer, and the postings and
// statistics of the transaction being applied, written at the end of each Apply.
type textWriter struct {
	*textAnalyzer // while a transaction is applied; back in textAnalyzers after
	tx            record.TxID
	pending       map[string]textStats  // by audience
	blocks        map[string]*textBlock // by term
	slab          []textBlock           // where blocks are carved from
	// written is the last statistics this handle wrote of each audience, with their
	// transaction: the statistics of any later transaction start there, with no look at the
	// bucket (which, on PostgreSQL, holds them only in this transaction's writes: a round trip
	// under the writer lock for every transaction of a group after the first).
	written map[string]writtenStats
}

type writtenStats struct {
	tx record.TxID
	st textStats
}

// textAnalyzer is an analyzer, with the terms of the words it analyzed last, and the terms of
// the subjects and predicates analyzed last (names): a bulk load names the same few predicates
// in every claim. Analysis is a function of the text alone, so these outlive a transaction:
// every transaction gets a new write handle, and a store's words and names repeat from one
// transaction to the next (kept across them, the analysis of bench -search's corpus takes a
// quarter less CPU: BenchmarkSearchIngest's profile).
type textAnalyzer struct {
	an    *analysis.Analyzer
	names map[string][]string
	buf   []string // the terms of the claim analyzed last, reused for the next
	// lastTerms is how many terms the transaction indexed last held: the next one's map of blocks
	// starts that large rather than growing to it.
	lastTerms int
}

// textAnalyzers keeps the analyzers between transactions.
var textAnalyzers = sync.Pool{New: func() any { return &textAnalyzer{an: analysis.New()} }}

// maxNames bounds textAnalyzer.names.
const maxNames = 4096

// nameTerms appends the terms of a subject or predicate name to ts.
func (tw *textAnalyzer) nameTerms(ts []string, name string) []string {
	t, ok := tw.names[name]
	if !ok {
		if tw.names == nil || len(tw.names) >= maxNames {
			tw.names = map[string][]string{}
		}
		t = tw.an.Terms(name)
		tw.names[name] = t
	}
	return append(ts, t...)
}

// terms is analysis.Analyzer.DocumentTerms of d, with its names' terms remembered.
func (tw *textAnalyzer) terms(d analysis.Document) []string {
	ts := tw.nameTerms(tw.buf[:0], d.Subject)
	ts = tw.nameTerms(ts, d.Predicate)
	ts = tw.an.AppendTerms(ts, d.Value)
	for _, e := range d.Excerpts {
		ts = tw.an.AppendTerms(ts, e)
	}
	tw.buf = ts
	return ts
}

// addText writes the postings of claim c (version of the key numbered keySeq, global seq seq)
// and counts it in its audience's statistics as of its transaction (flushText writes them).
func (ix *Index) addText(c *record.Claim, keySeq, seq uint64) {
	if ix.earlier || benchknob.NoTextIndex.Load() {
		return
	}
	if ix.text == nil {
		ix.text = &textWriter{}
	}
	tw := ix.text
	if tw.textAnalyzer == nil {
		tw.textAnalyzer = textAnalyzers.Get().(*textAnalyzer)
	}
	if tw.tx != c.Tx {
		tw.tx, tw.pending, tw.blocks = c.Tx, map[string]textStats{}, make(map[string]*textBlock, tw.lastTerms)
	}
	terms := tw.terms(ix.claimDocument(c))
	aud := Audience(c.SeenBy)
	for _, t := range terms {
		b := tw.blocks[t]
		if b == nil {
			b = tw.newBlock()
			tw.blocks[t] = b
		} else if n := len(b.posts); n > 0 && b.posts[n-1].seq == seq {
			// The claim holds the term again: its posting, the block's last, counts it.
			b.posts[n-1].tf++
			continue
		}
		a := slices.Index(b.audiences, aud)
		if a < 0 {
			a = len(b.audiences)
			b.audiences = append(b.audiences, aud)
		}
		b.posts = append(b.posts, textPost{seq: seq, keySeq: keySeq, version: uint32(c.ID.Version), tf: 1, length: uint32(len(terms)), audience: uint32(a)})
	}
	st, ok := tw.pending[aud]
	if w, done := tw.written[aud]; !ok && done && w.tx < c.Tx {
		st, ok = w.st, true
	}
	if !ok {
		st = ix.textStatsAt(aud, c.Tx)
	}
	st.docs++
	st.terms += uint64(len(terms))
	tw.pending[aud] = st
}

// newBlock returns an empty block of the transaction being applied.
func (tw *textWriter) newBlock() *textBlock {
	if len(tw.slab) == cap(tw.slab) {
		tw.slab = make([]textBlock, 0, 256)
	}
	tw.slab = tw.slab[:len(tw.slab)+1]
	b := &tw.slab[len(tw.slab)-1]
	b.audiences, b.posts = b.aud1[:0], b.post2[:0]
	return b
}

// flushText writes the postings and statistics the transaction being applied gave (again,
// for a transaction applied in parts: the same keys, with what it gave so far).
func (ix *Index) flushText() {
	if ix.text == nil || ix.text.tx != ix.cur.tx.ID {
		return
	}
	// The blocks and their keys are encoded into shared chunks rather than a buffer each (a
	// transaction writes thousands), each value followed by room for the checksum put appends
	// in place. A backend may keep what it is given: no part of a chunk is written twice.
	var chunk []byte
	for t, b := range ix.text.blocks {
		need := 64 + len(t) + 64*len(b.posts)
		for _, a := range b.audiences {
			need += len(a) + binary.MaxVarintLen64
		}
		if cap(chunk)-len(chunk) < need {
			chunk = make([]byte, 0, max(need, 64<<10))
		}
		start := len(chunk)
		chunk = appendTextKey(chunk, t, ix.text.tx)
		key := chunk[start:len(chunk):len(chunk)]
		start = len(chunk)
		chunk = b.appendTo(chunk)
		end := len(chunk)
		chunk = append(chunk, make([]byte, encoding.SealBytes)...)
		ix.put(bText, key, chunk[start:end:end+encoding.SealBytes])
	}
	for aud, st := range ix.text.pending {
		ix.put(bTextStats, textStatsKey(aud, ix.text.tx), st.encode())
		if ix.text.written == nil {
			ix.text.written = map[string]writtenStats{}
		}
		ix.text.written[aud] = writtenStats{ix.text.tx, st}
	}
	if ix.text.textAnalyzer != nil {
		ix.text.lastTerms = len(ix.text.blocks)
		textAnalyzers.Put(ix.text.textAnalyzer)
		ix.text.textAnalyzer = nil
	}
}

// textStatsAt is the statistics of an audience as of tx: its last entry at or before tx.
func (ix *Index) textStatsAt(aud string, tx record.TxID) textStats {
	var st textStats
	prefix := encoding.AppendName(nil, aud)
	ix.scan(bTextStats, prefix, kv.ScanOptions{From: textStatsKey(aud, tx), Reverse: true}, func(k, v []byte) bool {
		var err error
		if st, err = decodeTextStats(v); err != nil {
			corrupt(fmt.Sprintf("text statistics %q", k), err)
		}
		return false
	})
	return st
}

// textAudiences lists the audiences that hold an indexed claim, in key order.
func (ix *Index) textAudiences() []string {
	var auds []string
	var from []byte
	for {
		found := false
		ix.scan(bTextStats, nil, kv.ScanOptions{From: from}, func(k, _ []byte) bool {
			i := slices.Index(k, 0)
			if i < 0 {
				corrupt(fmt.Sprintf("text statistics %q", k), fmt.Errorf("%w: key without a NUL", encoding.ErrCorrupt))
			}
			auds = append(auds, string(k[:i]))
			from = kv.PrefixEnd(k[:i+1])
			found = true
			return false
		})
		if !found || from == nil {
			return auds
		}
	}
}

// seesAudience reports whether the viewer may perceive the claims of audience aud.
func (v *View) seesAudience(aud string) bool {
	if v.viewer == "" || aud == "" {
		return true
	}
	for a := range strings.SplitSeq(aud, ",") {
		if a == v.viewer {
			return true
		}
	}
	return false
}

// TextCorpus is what the view's text search scores against: the claims the viewer may see as of
// the view, and their terms in all.
func (v *View) TextCorpus() ranking.Corpus {
	var c ranking.Corpus
	for _, aud := range v.ix.textAudiences() {
		if v.seesAudience(aud) {
			st := v.ix.textStatsAt(aud, v.asOf)
			c.Docs += int64(st.docs)
			c.Terms += int64(st.terms)
		}
	}
	return c
}

// TextQuery is a text search: the terms searched for (analysis.Analyzer.Terms of its text),
// how to score them, and which claims are answers.
type TextQuery struct {
	Terms  []string
	Params ranking.BM25
	// History makes every matching version an answer, whatever its state; otherwise only live
	// claims are.
	History bool
	// Match, if set, says which claims are answers (a search's `on` patterns). It narrows the
	// answers only: the statistics are those of every claim the viewer may see.
	Match func(*ClaimEntry) bool
	// Limit is the most answers given (0: all).
	Limit int
	// SubjectWeight, when above 0, weighs the search's terms that a claim's subject holds
	// more: each adds SubjectWeight × its IDF to the claim's score, among the best
	// SubjectWindow answers by BM25 (or Limit's, if more), which are then ordered again.
	// A question naming an entity is most often about it rather than about a claim that
	// mentions it.
	SubjectWeight float64
}

// SubjectWindow is how many of the best answers by BM25 the subject's weight orders again.
// On the conversations measured (docs/BENCHMARKS.md), weighing every candidate gave the
// same answers as weighing the best 100.
const SubjectWindow = 100

// TextHit is one answer of a text search.
type TextHit struct {
	Claim *ClaimEntry
	Score float64
	// Terms are the search's terms the claim holds (itself or another of its forms,
	// analysis.Forms), in the search's order.
	Terms []string
	// Subject reports whether the claim's subject holds a search term and SubjectWeight
	// added to its score.
	Subject bool
	seq     uint64
}

type textCandidate struct {
	keySeq  uint64
	version int
	seq     uint64
	score   float64
	tf      []int // per distinct search term
}

// better orders candidates as the answers come: by score, then in the order recorded.
func better(a, b *textCandidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.seq < b.seq
}

// SearchText returns the answers of q, best first: by score, then in the order the claims were
// recorded. Everything it counts or scores is a claim the viewer may see as of the view.
func (v *View) SearchText(q TextQuery) []TextHit {
	// A term and the other forms of its word (analysis.Forms) are one term of the search: a
	// claim holding "bought" holds "buy" as often, and the IDF is that of the claims holding
	// any of them.
	var terms []string
	for _, t := range q.Terms {
		if !slices.ContainsFunc(terms, func(u string) bool { return u == t || slices.Contains(analysis.Forms(u), t) }) {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return nil
	}
	corpus := v.TextCorpus()
	// Each term's postings, in seq order: merged below without a map.
	lists := make([][]textPost, len(terms))
	for i, t := range terms {
		lists[i] = v.wordPostings(t)
	}
	idf := make([]float64, len(terms))
	for i := range terms {
		idf[i] = q.Params.IDF(corpus, int64(len(lists[i])))
	}
	var cands []*textCandidate
	pos := make([]int, len(terms))
	for {
		// The smallest claim not merged yet, and the terms it holds.
		var lo *textPost
		for i, l := range lists {
			if pos[i] < len(l) {
				p := &l[pos[i]]
				if lo == nil || p.seq < lo.seq {
					lo = p
				}
			}
		}
		if lo == nil {
			break
		}
		c := &textCandidate{keySeq: lo.keySeq, version: int(lo.version), seq: lo.seq, tf: make([]int, len(terms))}
		length := int(lo.length)
		for i, l := range lists {
			if pos[i] < len(l) && l[pos[i]].seq == c.seq {
				c.tf[i] = int(l[pos[i]].tf)
				pos[i]++
			}
		}
		// Summed in the search's term order, so that equal inputs give equal bits.
		for i := range terms {
			c.score += q.Params.Term(idf[i], c.tf[i], length, corpus)
		}
		cands = append(cands, c)
	}
	// The answers are taken best first until the limit: a heap gives them in order without
	// sorting every candidate.
	h := textHeap(cands)
	heap.Init(&h)
	window := q.Limit
	if q.SubjectWeight > 0 && window > 0 {
		window = max(window, SubjectWindow)
	}
	var hits []TextHit
	for h.Len() > 0 {
		c := heap.Pop(&h).(*textCandidate)
		e := v.answer(c.keySeq, c.version, q.History, q.Match, "text posting")
		if e == nil {
			continue
		}
		hit := TextHit{Claim: e, Score: c.score, seq: c.seq}
		for i, t := range terms {
			if c.tf[i] > 0 {
				hit.Terms = append(hit.Terms, t)
			}
		}
		hits = append(hits, hit)
		if window > 0 && len(hits) == window {
			break
		}
	}
	if q.SubjectWeight > 0 {
		weighSubjects(hits, terms, idf, q.SubjectWeight)
	}
	if q.Limit > 0 && len(hits) > q.Limit {
		hits = hits[:q.Limit]
	}
	return hits
}

// weighSubjects adds to each hit weight × the IDF of every search term its subject holds,
// then orders the hits again: by score, then in the order the claims were recorded.
func weighSubjects(hits []TextHit, terms []string, idf []float64, weight float64) {
	a := analysis.New()
	var subj []string
	for i := range hits {
		h := &hits[i]
		subj = a.AppendTerms(subj[:0], h.Claim.ID.Subject)
		// Summed in the search's term order, so that equal inputs give equal bits.
		for j, t := range terms {
			if slices.Contains(subj, t) {
				h.Score += weight * idf[j]
				h.Subject = true
			}
		}
	}
	slices.SortFunc(hits, func(x, y TextHit) int {
		if c := cmp.Compare(y.Score, x.Score); c != 0 {
			return c
		}
		return cmp.Compare(x.seq, y.seq)
	})
}

// wordPostings is the postings of term and of the other forms of its word (analysis.Forms)
// the viewer may see as of the view, in seq order: a claim holding several of the forms is one
// posting, holding the word as often as it holds them all.
func (v *View) wordPostings(term string) []textPost {
	forms := analysis.Forms(term)
	if forms == nil {
		return v.textPostings(term)
	}
	var out []textPost
	for _, f := range forms {
		out = mergePostings(out, v.textPostings(f))
	}
	return out
}

// mergePostings merges two seq-ordered lists of postings of one claim each per seq.
func mergePostings(a, b []textPost) []textPost {
	if len(a) == 0 {
		return b
	}
	if len(b) == 0 {
		return a
	}
	out := make([]textPost, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i].seq < b[j].seq:
			out = append(out, a[i])
			i++
		case a[i].seq > b[j].seq:
			out = append(out, b[j])
			j++
		default:
			p := a[i]
			p.tf += b[j].tf
			out = append(out, p)
			i, j = i+1, j+1
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// textPostings is the postings of term the viewer may see as of the view, in seq order.
func (v *View) textPostings(term string) []textPost {
	var out []textPost
	prefix := encoding.AppendName(nil, term)
	v.ix.scan(bText, prefix, kv.ScanOptions{}, func(k, b []byte) bool {
		tx, rest, ok := encoding.Uint(k[len(prefix):])
		if !ok || len(rest) > 0 {
			corrupt(fmt.Sprintf("text postings %q", k), fmt.Errorf("%w: bad key", encoding.ErrCorrupt))
		}
		if !v.in(record.TxID(tx)) {
			return false // blocks come in tx order: the rest are later still
		}
		blk, err := decodeTextBlock(b)
		if err != nil {
			corrupt(fmt.Sprintf("text postings %q", k), err)
		}
		sees := make([]bool, len(blk.audiences))
		for i, a := range blk.audiences {
			sees[i] = v.seesAudience(a)
		}
		for _, p := range blk.posts {
			if sees[p.audience] {
				out = append(out, p)
			}
		}
		return true
	})
	return out
}

// textHeap is a max-heap of candidates by better.
type textHeap []*textCandidate

func (h textHeap) Len() int           { return len(h) }
func (h textHeap) Less(i, j int) bool { return better(h[i], h[j]) }
func (h textHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *textHeap) Push(x any)        { *h = append(*h, x.(*textCandidate)) }
func (h *textHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// PublicTextStats is the bucket and key prefix of the text statistics of the claims everyone
// may see: every write of such a claim reads the newest entry under it, which a backend whose
// reads are round trips may fetch with the lock (pgkv.Options.PrefetchLast).
func PublicTextStats() (kv.Bucket, []byte) { return bTextStats, encoding.AppendName(nil, "") }
