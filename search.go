package mql

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/mql-dev/mql/analysis"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/query/syntax"
	"github.com/mql-dev/mql/ranking"
)

// MaxSearchText is the longest search text, in bytes: a question, not a document. Longer
// text is refused rather than cut, so that what was searched for is what was asked.
const MaxSearchText = 4096

// DefaultSearchLimit is how many answers a search gives when it names no limit.
const DefaultSearchLimit = 20

// MaxSearchLimit is the largest limit a search may name.
const MaxSearchLimit = 10_000

// SearchOptions narrow a search.
type SearchOptions struct {
	// On lists patterns ("Klarveld", "Klarveld.*", "*.price_per_seat", "Klarveld.price"): only
	// claims of a key one of them matches are answers. Empty: every key.
	On []string
	// Limit is the most answers given: 0 for DefaultSearchLimit, at most MaxSearchLimit.
	Limit int
	// History makes every matching version an answer, each with its state; otherwise only
	// live claims are.
	History bool
	// Vector, if set, ranks the claims that carry a vector (AssertSpec.Vector) by its cosine
	// similarity to theirs: the "vector" signal. It must have the store's dimension.
	Vector []float32
	// Signals are the signals that rank, "text" (BM25 over the search text), "subject" (the
	// search's words in a claim's subject weigh more: with text only) and "vector" (cosine
	// similarity to Vector); empty: each one the search has the input of. With text and
	// vector, the answers are fused by reciprocal rank (see Search).
	Signals []string
}

// The search signals.
const (
	SignalText    = "text"
	SignalSubject = "subject"
	SignalVector  = "vector"
)

// SubjectWeight is what the subject signal adds to a claim's score for each word of the
// search its subject holds, as a share of the word's IDF: the word counts about twice as
// much in the subject as in the rest of the claim's text. Measured on long conversations
// (docs/BENCHMARKS.md, "Ranking"), where every turn's subject is its speaker and questions
// name the person they ask about.
const SubjectWeight = 1.0

// RRFK is the constant of reciprocal rank fusion: a claim ranked r-th (from 1) by a signal
// gets 1/(RRFK + r) from it. 60 is the value of Cormack, Clarke and Büttcher's paper, where
// it did well across collections; it keeps the first few ranks of each signal close.
const RRFK = 60

// RRFWindow is how many answers of each signal a fused search ranks: its limit, and at least
// this many, so that a claim second best by both signals is not lost to a limit of 1.
const RRFWindow = 100

// SearchHit is one answer of a search: a claim, its score, and what matched.
type SearchHit struct {
	Claim
	// Score is the claim's score for the search, only comparable within one answer: with the
	// text signal alone, its BM25 score (package ranking), relative to the claims the reader
	// may see as of the read; with the vector signal alone, the cosine similarity of its
	// vector to the search's (-1 to 1); with both, the sum over the signals that ranked it of
	// 1/(RRFK + its rank by the signal).
	Score float64 `json:"score"`
	// Signals names what ranked the claim: "text" (its text holds a term of the search),
	// "subject" (its subject holds one, which weighed more), "vector" (its vector was among
	// the most similar).
	Signals []string `json:"signals"`
	// Terms are the search's terms (as the analyzer gives them: folded and stemmed) that the
	// claim's text holds.
	Terms []string `json:"matched_terms"`
}

// SearchResult is a search's answers, best first.
type SearchResult struct {
	Text    string `json:"text"`
	History bool   `json:"history,omitempty"`
	// Signals are the signals the search ranked by.
	Signals []string    `json:"signals"`
	Hits    []SearchHit `json:"hits"`
}

// Search finds the claims whose text (key, value when a string, sources' excerpts) best
// matches text, or whose vector is most similar to opts.Vector, or both: live ones only,
// unless opts.History. With both signals, each ranks its best RRFWindow answers (or its
// limit's worth, if more) and a claim's score is the sum of 1/(RRFK + rank) over them:
// reciprocal rank fusion, which needs no common scale for BM25 and cosine similarity. It
// searches the store as the reader sees it: only what the reader may see is counted, scored,
// compared or returned.
func (r reads) Search(ctx context.Context, text string, opts SearchOptions) (SearchResult, error) {
	if r.run != "" {
		return forRun(ctx, r, func() syntax.Stmt { return searchStatement(text, opts) }, func(r reads) (SearchResult, error) { return r.Search(ctx, text, opts) },
			func(x SearchResult) []string {
				refs := make([]string, len(x.Hits))
				for i, h := range x.Hits {
					refs[i] = h.Ref
				}
				return refs
			})
	}
	byText, bySubject, byVector, err := searchSignals(text, opts)
	if err != nil {
		return SearchResult{}, err
	}
	var terms []string
	if byText {
		if terms, err = searchTerms(text); err != nil {
			return SearchResult{}, err
		}
	}
	limit, err := searchLimit(opts.Limit)
	if err != nil {
		return SearchResult{}, err
	}
	pats := make([]pattern, len(opts.On))
	for i, s := range opts.On {
		if pats[i], err = parsePattern(s); err != nil {
			return SearchResult{}, fmt.Errorf("search on %s: %w", s, err)
		}
	}
	var match func(e *index.ClaimEntry) bool
	if len(pats) > 0 {
		match = func(e *index.ClaimEntry) bool {
			for _, p := range pats {
				if p.matches(e.ID.Subject, e.ID.Predicate) {
					return true
				}
			}
			return false
		}
	}
	out := SearchResult{Text: text, History: opts.History, Hits: []SearchHit{}}
	window := limit
	if byText && byVector {
		window = max(limit, RRFWindow)
	}
	err = r.view(ctx, func(v *index.View) error {
		var texts []index.TextHit
		var vecs []index.VectorHit
		if byText {
			out.Signals = append(out.Signals, SignalText)
			tq := index.TextQuery{Terms: terms, Params: ranking.Default, History: opts.History, Match: match, Limit: window}
			if bySubject {
				out.Signals = append(out.Signals, SignalSubject)
				tq.SubjectWeight = SubjectWeight
			}
			texts = v.SearchText(tq)
		}
		if byVector {
			if err := checkSearchVector(v, opts.Vector); err != nil {
				return err
			}
			out.Signals = append(out.Signals, SignalVector)
			vecs = v.SearchVector(index.VectorQuery{Vector: opts.Vector, History: opts.History, Match: match, Limit: window})
		}
		out.Hits = fuse(v, texts, vecs, limit)
		return nil
	})
	return out, err
}

// searchSignals says which signals a search ranks by: those opts.Signals names, or each one
// the search has the input of (text, and the subject with it; vector).
func searchSignals(text string, opts SearchOptions) (byText, bySubject, byVector bool, err error) {
	hasText, hasVector := text != "", opts.Vector != nil
	if len(opts.Signals) == 0 {
		if !hasText && !hasVector {
			return false, false, false, fmt.Errorf("search: %w: it is empty (neither text nor a vector); say what to search for", ErrInvalid)
		}
		return hasText, hasText, hasVector, nil
	}
	for _, s := range opts.Signals {
		switch s {
		case SignalText:
			if !hasText {
				return false, false, false, fmt.Errorf("signal text: %w: the search has no text to rank by", ErrInvalid)
			}
			byText = true
		case SignalSubject:
			if !hasText {
				return false, false, false, fmt.Errorf("signal subject: %w: the search has no text whose words a subject could hold", ErrInvalid)
			}
			bySubject = true
		case SignalVector:
			if !hasVector {
				return false, false, false, fmt.Errorf("signal vector: %w: the search has no vector to rank by; give one (or serve with an embedder, which embeds the search text)", ErrInvalid)
			}
			byVector = true
		default:
			return false, false, false, fmt.Errorf("signal %q: %w: the signals are text, subject and vector", s, ErrInvalid)
		}
	}
	if bySubject && !byText {
		return false, false, false, fmt.Errorf("signal subject: %w: it weighs the text signal's words; name text too", ErrInvalid)
	}
	return byText, bySubject, byVector, nil
}

// checkSearchVector checks a search's vector against the store's dimension (any, while the
// store holds no vector: nothing is similar to it then).
func checkSearchVector(v *index.View, vec []float32) error {
	if err := record.CheckVector(vec); err != nil {
		return fmt.Errorf("search vector: %w: %w", ErrInvalid, err)
	}
	if dim := v.Index().VectorDim(); dim != 0 && dim != len(vec) {
		return fmt.Errorf("search vector: %w: %w: %d dimensions, and the store's vectors have %d; embed with the model the store's vectors came from", ErrInvalid, ErrVector, len(vec), dim)
	}
	return nil
}

// fuse makes the answers of a search from what each signal ranked: the text hits, the vector
// hits, or both fused by reciprocal rank (ties in the order the text signal, then the vector
// signal, ranked them), the best limit of them.
func fuse(v *index.View, texts []index.TextHit, vecs []index.VectorHit, limit int) []SearchHit {
	hits := []SearchHit{}
	if vecs == nil {
		for _, h := range texts {
			hits = append(hits, SearchHit{Claim: claimOf(v, h.Claim), Score: h.Score, Signals: textSignals(h), Terms: h.Terms})
		}
		return hits
	}
	if texts == nil {
		for _, h := range vecs {
			hits = append(hits, SearchHit{Claim: claimOf(v, h.Claim), Score: h.Cosine, Signals: []string{SignalVector}})
		}
		return hits
	}
	at := map[record.ClaimID]int{}
	type fused struct {
		e   *index.ClaimEntry
		hit SearchHit
	}
	var all []fused
	for r, h := range texts {
		at[h.Claim.ID] = len(all)
		all = append(all, fused{h.Claim, SearchHit{Score: 1 / float64(RRFK+r+1), Signals: textSignals(h), Terms: h.Terms}})
	}
	for r, h := range vecs {
		i, ok := at[h.Claim.ID]
		if !ok {
			i = len(all)
			all = append(all, fused{e: h.Claim})
		}
		all[i].hit.Score += 1 / float64(RRFK+r+1)
		all[i].hit.Signals = append(all[i].hit.Signals, SignalVector)
	}
	slices.SortStableFunc(all, func(a, b fused) int { return cmp.Compare(b.hit.Score, a.hit.Score) })
	for _, f := range all[:min(limit, len(all))] {
		f.hit.Claim = claimOf(v, f.e)
		hits = append(hits, f.hit)
	}
	return hits
}

// textSignals names what ranked a text hit: the text, and the subject when it weighed.
func textSignals(h index.TextHit) []string {
	if h.Subject {
		return []string{SignalText, SignalSubject}
	}
	return []string{SignalText}
}

// matches reports whether the key subject.predicate fits the pattern.
func (p pattern) matches(subject, predicate string) bool {
	return (p.subject == "*" || p.subject == subject) && (p.predicate == "*" || p.predicate == predicate)
}

// searchTerms checks a search's text and returns its terms.
func searchTerms(text string) ([]string, error) {
	switch {
	case len(text) > MaxSearchText:
		return nil, fmt.Errorf("search text of %d bytes: %w: search text is at most %d bytes; ask with fewer words", len(text), ErrInvalid, MaxSearchText)
	case strings.ContainsRune(text, 0):
		return nil, fmt.Errorf("search text %.40q: %w: it holds a NUL byte", text, ErrInvalid)
	case strings.TrimFunc(text, unicode.IsSpace) == "":
		return nil, fmt.Errorf("search text %q: %w: it is empty; say what to search for", text, ErrInvalid)
	}
	terms := analysis.New().Terms(nfc(text))
	if len(terms) == 0 {
		return nil, fmt.Errorf("search text %.40q: %w: it has no word to search for (only punctuation or words as common as \"the\"); add a distinctive word", text, ErrInvalid)
	}
	return terms, nil
}

func searchLimit(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultSearchLimit, nil
	case n < 0 || n > MaxSearchLimit:
		return 0, fmt.Errorf("limit %d: %w: a search's limit runs from 1 to %d", n, ErrInvalid, MaxSearchLimit)
	}
	return n, nil
}

// FormatVector writes a vector as the language and the export do: each component in the
// shortest decimal form that reads back to the same float32, separated by spaces.
func FormatVector(v []float32) string { return record.FormatVector(v) }

// ParseVector reads a vector written as FormatVector writes it, or with other decimal forms
// of its components, separated by spaces or commas ("0.25 -1 3.5e-05", "0.25, -1, 3.5e-05").
// It checks only the syntax: the write or the search checks the rest. Its errors wrap
// ErrInvalid and ErrVector.
func ParseVector(s string) ([]float32, error) { return record.ParseVector(s) }
