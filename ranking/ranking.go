// Package ranking is how text search orders what it finds: Okapi BM25 over the terms of
// package analysis.
//
// A claim's score for a search is the sum, over the distinct terms of the search text that the
// claim holds, of
//
//	IDF(t) · tf·(K1+1) / (tf + K1·(1 − B + B·len/avglen))
//	IDF(t) = ln(1 + (N − df + 0.5) / (df + 0.5))
//
// where tf is how often the claim holds t, len the claim's number of terms, N the number of
// claims of the corpus, avglen their mean length and df the number of them holding t. This IDF
// (Lucene's) is never negative, so a term found in most claims still counts for a little and a
// claim never ranks lower for holding one more of the search's terms.
//
// The corpus is what the reader may see: Corpus and df are counted over the claims visible to
// it as of the transaction it reads, so a score tells nothing of the claims it may not see.
package ranking

import "math"

// BM25 holds the parameters of BM25.
type BM25 struct {
	// K1 is how quickly a term's repetitions stop counting: 0 counts a term once, large
	// values count every repetition nearly in full.
	K1 float64
	// B is how much a claim's length discounts its terms: 0 not at all, 1 fully in
	// proportion to its length over the mean.
	B float64
}

// Default is Robertson and Zaragoza's K1 1.2 with B 0.5, a lighter discount for length than
// the 0.75 SQLite FTS5's bm25() and Lucene use: a claim is a sentence or two, and a long turn
// of a conversation is more often the one that answers than a padded one. On the
// conversations of docs/BENCHMARKS.md ("Ranking") B 0.5 found more of the evidence than 0.75
// (LoCoMo's conversations, one store: 0.617 against 0.607 of it in the top 10) and as much
// on the generated corpus.
var Default = BM25{K1: 1.2, B: 0.5}

// Corpus is what the scores are relative to: how many claims, and how many terms they hold in
// all.
type Corpus struct {
	Docs  int64
	Terms int64
}

// AvgLen is the mean number of terms of a claim of the corpus (1 for an empty corpus, which
// has no claim to score).
func (c Corpus) AvgLen() float64 {
	if c.Docs <= 0 || c.Terms <= 0 {
		return 1
	}
	return float64(c.Terms) / float64(c.Docs)
}

// IDF is the weight of a term that df claims of the corpus hold.
func (p BM25) IDF(c Corpus, df int64) float64 {
	n := float64(c.Docs)
	d := float64(df)
	return math.Log(1 + (n-d+0.5)/(d+0.5))
}

// Term is the score a claim of docLen terms gets for holding a term tf times, idf its IDF.
func (p BM25) Term(idf float64, tf, docLen int, c Corpus) float64 {
	if tf <= 0 {
		return 0
	}
	f := float64(tf)
	norm := p.K1 * (1 - p.B + p.B*float64(docLen)/c.AvgLen())
	return idf * f * (p.K1 + 1) / (f + norm)
}
