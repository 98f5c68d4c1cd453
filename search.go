package mql

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/mql-dev/mql/analysis"
	"github.com/mql-dev/mql/graphstore/index"
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
}

// SearchHit is one answer of a search: a claim, its score, and what matched.
type SearchHit struct {
	Claim
	// Score is the claim's BM25 score for the search (package ranking): relative to the
	// claims the reader may see as of the read, and only comparable within one answer.
	Score float64 `json:"score"`
	// Signals names what ranked the claim: "text" (BM25 over its text) for now.
	Signals []string `json:"signals"`
	// Terms are the search's terms (as the analyzer gives them: folded and stemmed) that the
	// claim's text holds.
	Terms []string `json:"matched_terms"`
}

// SearchResult is a search's answers, best first.
type SearchResult struct {
	Text    string      `json:"text"`
	History bool        `json:"history,omitempty"`
	Hits    []SearchHit `json:"hits"`
}

// Search finds the claims whose text (key, value when a string, sources' excerpts) best
// matches text: live ones only, unless opts.History.
func (db *DB) Search(ctx context.Context, text string, opts SearchOptions) (SearchResult, error) {
	return db.Reader().Search(ctx, text, opts)
}

// Search finds the claims whose text best matches text, as the reader sees the store: only
// what it may see is counted, scored or returned.
func (r Reader) Search(ctx context.Context, text string, opts SearchOptions) (SearchResult, error) {
	if r.run != "" {
		return forRun(ctx, r, searchStatement(text, opts), func(r Reader) (SearchResult, error) { return r.Search(ctx, text, opts) },
			func(x SearchResult) []string {
				refs := make([]string, len(x.Hits))
				for i, h := range x.Hits {
					refs[i] = h.Ref
				}
				return refs
			})
	}
	terms, err := searchTerms(text)
	if err != nil {
		return SearchResult{}, err
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
	out := SearchResult{Text: text, History: opts.History, Hits: []SearchHit{}}
	err = r.view(ctx, func(v *index.View) error {
		q := index.TextQuery{Terms: terms, Params: ranking.Default, History: opts.History, Limit: limit}
		if len(pats) > 0 {
			q.Match = func(e *index.ClaimEntry) bool {
				for _, p := range pats {
					if p.matches(e.ID.Subject, e.ID.Predicate) {
						return true
					}
				}
				return false
			}
		}
		for _, h := range v.SearchText(q) {
			out.Hits = append(out.Hits, SearchHit{Claim: claimOf(v, h.Claim), Score: h.Score, Signals: []string{"text"}, Terms: h.Terms})
		}
		return nil
	})
	return out, err
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

// searchStatement is the statement a search for a run records.
func searchStatement(text string, opts SearchOptions) string {
	s := "search " + strconv.Quote(text)
	if len(opts.On) > 0 {
		s += " on " + strings.Join(opts.On, ", ")
	}
	if opts.Limit != 0 {
		s += " limit " + strconv.Itoa(opts.Limit)
	}
	if opts.History {
		s += " history"
	}
	return s
}
