// Package analysis turns text into the terms mql's text search indexes and looks up: the one
// analyzer both a claim's text and a search's text go through, so that the two always agree.
//
// The steps, each from a maintained library where one exists:
//
//   - Unicode normalization (NFKC, golang.org/x/text/unicode/norm): a full-width "ＡＢＣ" and
//     "ABC", or a ligature and its letters, are one word.
//   - Word segmentation by Unicode's rules (UAX #29, github.com/blevesearch/segment, the
//     segmenter of the Bleve search library): words, numbers, and each ideograph or kana run;
//     punctuation and spaces are dropped. ASCII text is segmented by a loop of mql's own that
//     gives the library's words (ascii.go; FuzzASCIIWords compares the two), at a fraction of
//     its cost.
//   - Splitting identifiers: UAX #29 keeps "price_per_seat", "src:Klarveld:rev0" and
//     "pricePerSeat" whole, which is right for prose and wrong for mql's names. A word is
//     split at '_', '.', ':', '-', lower-to-upper case changes and letter/digit boundaries,
//     and its parts are its terms, so "per seat" finds price_per_seat, and "pricePerSeat",
//     "price_per_seat" and "price per seat" all find one another (no library knows mql's
//     naming conventions, so this step is mql's own). The whole word is not a term besides
//     its parts: it would find nothing its parts do not, and would double the index of every
//     name. Numbers ("44.5", "1,000") are kept whole.
//   - Case folding (golang.org/x/text/cases, Unicode full case folding: "Straße" and
//     "STRASSE" fold alike), and a Latin word's accents dropped ("naïve" is "naive"), as
//     SQLite's unicode61 tokenizer does.
//   - English stop words dropped (Snowball's English stop list), then English stemming
//     (Snowball's Porter2 stemmer, github.com/blevesearch/snowballstem): "pricing" and "prices"
//     meet at "price". Words of other scripts are folded but not stemmed.
//
// A stemmer joins the forms that spelling rules join, not "buy" and "bought": Forms gives the
// terms of a word that inflects irregularly, which a search takes as one word (forms.go).
//
// Terms are at most MaxTermBytes long (longer ones are cut at a character boundary), so an
// index key holding one stays small.
package analysis

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/segment"
	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/english"
	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// MaxTermBytes is the longest term the analyzer gives.
const MaxTermBytes = 64

// Analyzer turns text into terms. It keeps buffers between calls: use one per goroutine.
type Analyzer struct {
	fold  cases.Caser
	marks transform.Transformer
	vals  [][]byte
	types []int
	// words keeps the terms of the words analyzed last: text repeats its words, and folding
	// and stemming cost more than a lookup. A word's terms are a function of the word alone.
	words map[string][]string
}

// maxWords bounds Analyzer.words.
const maxWords = 1 << 15

// New returns an Analyzer.
func New() *Analyzer {
	return &Analyzer{fold: cases.Fold(), marks: transform.Chain(norm.NFD, runes.Remove(runes.In(unicode.Mn)), norm.NFC)}
}

// Terms returns the terms of text in the order they occur, repeated as often as they occur.
// Text that is not valid UTF-8 is read with each bad byte as a space.
func (a *Analyzer) Terms(text string) []string {
	return a.AppendTerms(nil, text)
}

// AppendTerms appends the terms of text to ts and returns the result.
func (a *Analyzer) AppendTerms(ts []string, text string) []string {
	if isASCII(text) { // NFKC leaves ASCII as it is
		asciiWords(text, func(w string, letter bool) { ts = a.word(ts, w, letter) })
		return ts
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, " ")
	}
	text = norm.NFKC.String(text)
	var err error
	a.vals, a.types, _, err = segment.SegmentWordsDirect([]byte(text), a.vals[:0], a.types[:0])
	if err != nil {
		// The segmenter fails only on input it cannot advance through, which valid UTF-8 is
		// not; fall back to spaces rather than lose the text.
		for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
			ts = a.word(ts, w, true)
		}
		return ts
	}
	for i, v := range a.vals {
		switch a.types[i] {
		case segment.Letter:
			ts = a.word(ts, string(v), true)
		case segment.Number, segment.Ideo, segment.Kana:
			ts = a.word(ts, string(v), false)
		}
	}
	return ts
}

// word appends the terms of one segmented word: its parts when split and it has several,
// else the word.
func (a *Analyzer) word(ts []string, w string, split bool) []string {
	if t, ok := a.words[w]; ok {
		return append(ts, t...)
	}
	n := len(ts)
	ts = a.analyzeWord(ts, w, split)
	if a.words == nil || len(a.words) >= maxWords {
		a.words = map[string][]string{}
	}
	// Keyed by the word alone: split is false only for numbers, ideographs and kana, whose
	// words are never a letter word's.
	a.words[w] = slices.Clone(ts[n:])
	return ts
}

func (a *Analyzer) analyzeWord(ts []string, w string, split bool) []string {
	if split {
		if parts := splitIdent(w); len(parts) > 1 {
			for _, p := range parts {
				ts = a.term(ts, p)
			}
			return ts
		}
	}
	return a.term(ts, w)
}

// term appends the folded, stemmed form of w, unless it is a stop word.
func (a *Analyzer) term(ts []string, w string) []string {
	f := a.fold.String(w)
	if f == "" || stop[f] {
		return ts
	}
	if isLatin(f) {
		if !isASCII(f) {
			f = a.unaccent(f)
		}
		env := snowballstem.NewEnv(f)
		english.Stem(env)
		f = env.Current()
	}
	return append(ts, cut(f))
}

// cut shortens t to at most MaxTermBytes at a character boundary.
func cut(t string) string {
	if len(t) <= MaxTermBytes {
		return t
	}
	n := MaxTermBytes
	for n > 0 && !utf8.RuneStart(t[n]) {
		n--
	}
	return t[:n]
}

// unaccent drops the combining marks of a Latin word ("naïve": "naive"), as SQLite's
// unicode61 tokenizer does by default: text typed without its accents finds the word.
func (a *Analyzer) unaccent(w string) string {
	out, _, err := transform.String(a.marks, w)
	if err != nil {
		return w
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isLatin reports whether w has a letter and all its letters are Latin: the words the English
// stemmer is for.
func isLatin(w string) bool {
	letter := false
	for _, r := range w {
		if unicode.IsLetter(r) {
			if !unicode.Is(unicode.Latin, r) {
				return false
			}
			letter = true
		}
	}
	return letter
}

// splitIdent splits a word at the joints of mql's names: '_', '.', ':' and '-' are dropped
// (an apostrophe is left to the stemmer, which knows possessives), and a part ends where a
// lower-case letter or digit meets an upper-case letter, a letter meets a digit (either way),
// or an upper-case run meets a capitalized word ("HTTPServer": "HTTP", "Server").
func splitIdent(w string) []string {
	var parts []string
	rs := []rune(w)
	start := 0
	flush := func(end int) {
		if end > start {
			parts = append(parts, string(rs[start:end]))
		}
	}
	for i, r := range rs {
		if r == '_' || r == '.' || r == ':' || r == '-' {
			flush(i)
			start = i + 1
			continue
		}
		if i == start {
			continue
		}
		p := rs[i-1]
		switch {
		case unicode.IsUpper(r) && (unicode.IsLower(p) || unicode.IsDigit(p)),
			unicode.IsDigit(r) && unicode.IsLetter(p),
			unicode.IsLetter(r) && unicode.IsDigit(p):
			flush(i)
			start = i
		case unicode.IsUpper(p) && unicode.IsUpper(r) && i+1 < len(rs) && unicode.IsLower(rs[i+1]):
			flush(i)
			start = i
		}
	}
	flush(len(rs))
	return parts
}

// Document is a claim's text: what its terms are made of.
type Document struct {
	Subject, Predicate string
	Value              string // the value when it is a string, "" otherwise
	Excerpts           []string
}

// DocumentTerms returns the terms of a claim: its subject, its predicate, its value and its
// sources' excerpts, in that order.
func (a *Analyzer) DocumentTerms(d Document) []string {
	ts := a.AppendTerms(nil, d.Subject)
	ts = a.AppendTerms(ts, d.Predicate)
	ts = a.AppendTerms(ts, d.Value)
	for _, e := range d.Excerpts {
		ts = a.AppendTerms(ts, e)
	}
	return ts
}

// stop is Snowball's English stop list (snowballstem.org, "english/stop.txt"), folded: the
// words too common in English to tell one claim from another.
var stop = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their theirs themselves
		what which who whom this that these those am is are was were be been being have has had
		having do does did doing would should could ought i'm you're he's she's it's we're
		they're i've you've we've they've i'd you'd he'd she'd we'd they'd i'll you'll he'll
		she'll we'll they'll isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't
		didn't won't wouldn't shan't shouldn't can't cannot couldn't mustn't let's that's who's
		what's here's there's when's where's why's how's a an the and but if or because as until
		while of at by for with about against between into through during before after above
		below to from up down in out on off over under again further then once here there when
		where why how all any both each few more most other some such no nor not only own same
		so than too very`) {
		m[w] = true
	}
	return m
}()
