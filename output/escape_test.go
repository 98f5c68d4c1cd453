package output

import (
	"encoding/json"
	"fmt"
	"io"
	"testing"
	"unicode/utf8"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// unsafeIn returns the first rune of out that must not reach a terminal raw, apart from the
// newlines that lay the output out.
func unsafeIn(out string) (rune, bool) {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		if r != '\n' && unsafeRune(r, size) {
			return r, true
		}
		i += size
	}
	return 0, false
}

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, field, text, line string }{
		{"src:Klarveld:rev0", "src:Klarveld:rev0", "src:Klarveld:rev0", "src:Klarveld:rev0"},
		{"prix unitaire 44 €", "prix unitaire 44 €", "prix unitaire 44 €", "prix unitaire 44 €"},
		{"\x1b[31mred", `"\x1b[31mred"`, `\x1b[31mred`, `\x1b[31mred`},
		{"a\nb\tc", `"a\nb\tc"`, "a\nb\tc", `a\nb\tc`},
		{"x\u202ey", `"x\u202ey"`, `x\u202ey`, `x\u202ey`},
		{"\u009b", `"\u009b"`, `\u009b`, `\u009b`},
		{"bad \xff utf-8", `"bad \xff utf-8"`, `bad \xff utf-8`, `bad \xff utf-8`},
		{`"quoted"`, `"\"quoted\""`, `"quoted"`, `"quoted"`},
		{"", "", "", ""},
	} {
		if got := Escape(tc.in); got != tc.field {
			t.Errorf("Escape(%q) = %s, want %s", tc.in, got, tc.field)
		}
		if got := EscapeText(tc.in); got != tc.text {
			t.Errorf("EscapeText(%q) = %s, want %s", tc.in, got, tc.text)
		}
		if got := EscapeLine(tc.in); got != tc.line {
			t.Errorf("EscapeLine(%q) = %s, want %s", tc.in, got, tc.line)
		}
	}
	// JSON: the runes encoding/json leaves raw are escaped, and the text decodes the same.
	in := "a\x7fb\u0085c\u202ed\U000e0001e\x1b"
	b, _ := json.Marshal(in)
	esc := EscapeJSON(string(b) + "\n")
	if _, bad := unsafeIn(esc); bad {
		t.Errorf("EscapeJSON left %q", esc)
	}
	var back string
	if err := json.Unmarshal([]byte(esc), &back); err != nil || back != in {
		t.Errorf("EscapeJSON changed the data: %q (%v)", back, err)
	}
}

// BenchmarkPrintLive measures rendering a live result of 1,000 claims in each format, the
// escaping included (docs/OUTPUT.md).
func BenchmarkPrintLive(b *testing.B) {
	claims := make([]mql.Claim, 1000)
	for i := range claims {
		claims[i] = mql.Claim{Ref: fmt.Sprintf("Vendor%d.price_per_seat@1", i), Subject: fmt.Sprintf("Vendor%d", i), Predicate: "price_per_seat",
			Version: 1, Value: mql.String("44 per seat, billed yearly"), State: mql.Live, Kind: mql.Observed, Confidence: 0.9, Effective: 0.9,
			By: "worker-3", Sources: []mql.Source{{ID: fmt.Sprintf("src:Vendor%d:rev0", i), URI: "https://example.com/pricing"}}}
	}
	r := &query.Result{Kind: "live", Statement: "live *", Claims: claims}
	for _, f := range Formats {
		if f == FormatDOT {
			continue // dot draws why and impact only
		}
		b.Run(string(f), func(b *testing.B) {
			p := NewPrinter(io.Discard, f)
			for b.Loop() {
				if err := p.Print(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
