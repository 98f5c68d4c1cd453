package analysis

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestTerms(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"   \t\n", ""},
		{"EU pricing for the team plan", "eu price team plan"},
		{"prices PRICED Pricing", "price price price"},
		{"the vendors' EU pricing", "vendor eu price"},
		{"the vendor's price", "vendor price"},
		{"price_per_seat", "price per seat"},
		{"pricePerSeat", "price per seat"},
		{"src:Klarveld:rev0", "src klarveld rev 0"},
		{"Player7", "player 7"},
		{"HTTPServer", "http server"},
		{"44.5 seats", "44.5 seat"},
		{"1,000 seats", "1,000 seat"},
		{"the_of", ""},
		{"ＡＢＣ ｄｅｆ", "abc def"},
		{"Straße STRASSE", "strass strass"},
		{"Café naïve", "cafe naiv"},
		{"Москва и Петербург", "москва и петербург"},
		{"東京タワー", "東 京 タワー"},
		{"no, not, only", ""},
		{"a\x00b", "b"},
		{"bad\xffbyte", "bad byte"},
		{strings.Repeat("x", 100), strings.Repeat("x", MaxTermBytes)},
	} {
		got := strings.Join(New().Terms(c.in), " ")
		if got != c.want {
			t.Errorf("Terms(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestDocumentTerms(t *testing.T) {
	d := Document{Subject: "Klarveld", Predicate: "price_per_seat", Value: "44 a seat, EU pricing",
		Excerpts: []string{"Pricing page, rev 0"}}
	got := strings.Join(New().DocumentTerms(d), " ")
	want := "klarveld price per seat 44 seat eu price price page rev 0"
	if got != want {
		t.Errorf("DocumentTerms = %q, want %q", got, want)
	}
}

func TestSplitIdent(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"simple", []string{"simple"}},
		{"snake_case_name", []string{"snake", "case", "name"}},
		{"camelCaseName", []string{"camel", "Case", "Name"}},
		{"XMLHttpRequest", []string{"XML", "Http", "Request"}},
		{"a.b:c-d", []string{"a", "b", "c", "d"}},
		{"__x__", []string{"x"}},
		{"rev12b", []string{"rev", "12", "b"}},
	} {
		if got := splitIdent(c.in); !slices.Equal(got, c.want) {
			t.Errorf("splitIdent(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// An analyzer reused across texts gives what a new one gives.
func TestAnalyzerReuse(t *testing.T) {
	a := New()
	texts := []string{"EU pricing", "price_per_seat", "東京タワー", "Player7 wins"}
	for range 2 {
		for _, s := range texts {
			if got, want := a.Terms(s), New().Terms(s); !slices.Equal(got, want) {
				t.Errorf("reused Terms(%q) = %q, want %q", s, got, want)
			}
		}
	}
}

func FuzzTerms(f *testing.F) {
	for _, s := range []string{"EU pricing for the team plan", "price_per_seat", "src:Klarveld:rev0", "東京タワー", "a\x00b", "\xff", "HTTPServer2x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a := New()
		ts := a.Terms(s)
		for _, term := range ts {
			if term == "" || len(term) > MaxTermBytes || !utf8.ValidString(term) || strings.ContainsRune(term, 0) {
				t.Fatalf("Terms(%q) gave the term %q", s, term)
			}
		}
		// Analysis is a function of the text alone, and analyzing a text's terms again finds
		// terms (search text made of terms must find them).
		if again := a.Terms(s); !slices.Equal(ts, again) {
			t.Fatalf("Terms(%q) differs between calls: %q, %q", s, ts, again)
		}
	})
}

func TestForms(t *testing.T) {
	for _, tc := range []struct {
		term string
		want []string
	}{
		{"buy", []string{"buy", "bought"}},
		{"bought", []string{"buy", "bought"}},
		{"went", []string{"go", "went", "gone"}},
		{"children", []string{"child", "children"}},
		{"peopl", []string{"person", "peopl"}}, // the stemmer's term for "people"
		{"price", nil},                         // regular: the stemmer joins its forms
		{"rose", nil},                          // a flower as often as a past: left out
		{"had", nil},                           // a stop word, as every form of "have"
	} {
		if got := Forms(tc.term); !slices.Equal(got, tc.want) {
			t.Errorf("Forms(%q) = %q, want %q", tc.term, got, tc.want)
		}
	}
}
