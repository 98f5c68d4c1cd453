package analysis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/blevesearch/segment"
)

// libraryWords is what blevesearch/segment gives for text: its letter and number words.
func libraryWords(t *testing.T, text string) []string {
	t.Helper()
	vals, types, _, err := segment.SegmentWordsDirect([]byte(text), nil, nil)
	if err != nil {
		t.Fatalf("segment(%q): %v", text, err)
	}
	var out []string
	for i, v := range vals {
		switch types[i] {
		case segment.Letter:
			out = append(out, "L:"+string(v))
		case segment.Number:
			out = append(out, "N:"+string(v))
		case segment.None:
		default:
			out = append(out, fmt.Sprintf("%d:%s", types[i], v))
		}
	}
	return out
}

func fastWords(text string) []string {
	var out []string
	asciiWords(text, func(w string, letter bool) {
		if letter {
			out = append(out, "L:"+w)
		} else {
			out = append(out, "N:"+w)
		}
	})
	return out
}

func TestASCIIWords(t *testing.T) {
	for _, s := range []string{
		"", " ", "EU pricing for the team plan", "can't won't", "a.b.c", "a..b", "a.", ".a", "1.5", "1,000.25",
		"1.a", "a.1", "a1.5", "1a.b", "_", "__", "_1_", "1_a", "a_.b", "x:y", "1:2", "3;4", "a;b", "1'000",
		"'a'", "\"q\"", "rev12b", "src:Klarveld:rev0", "price_per_seat", "44.5 seats", "e-mail", "a\r\nb",
		"tab\there", "v\vf\fx", "a'b'c", "1.2.3", "1..2", "a._b", "_a_", "._.", "9_", "_9", "a:1", "1.",
	} {
		if got, want := fastWords(s), libraryWords(t, s); !slices.Equal(got, want) {
			t.Errorf("asciiWords(%q) = %q, the library %q", s, got, want)
		}
	}
	// Short texts over the bytes the rules tell apart, every joint next to every other.
	const alphabet = "aZ09_.,;:'\" \t\r\n\v-#\x00\x7f"
	rnd := rand.New(rand.NewPCG(7, 29))
	b := make([]byte, 0, 12)
	for range 50_000 {
		b = b[:0]
		for range 1 + rnd.IntN(11) {
			b = append(b, alphabet[rnd.IntN(len(alphabet))])
		}
		if got, want := fastWords(string(b)), libraryWords(t, string(b)); !slices.Equal(got, want) {
			t.Fatalf("asciiWords(%q) = %q, the library %q", b, got, want)
		}
	}
}

// The fast path gives the library's words on every ASCII text.
func FuzzASCIIWords(f *testing.F) {
	for _, s := range []string{"EU pricing", "a.b:c'd", "1,000.5;7", "_x_9", "a\r\nb\x00c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !isASCII(s) {
			return
		}
		if got, want := fastWords(s), libraryWords(t, s); !slices.Equal(got, want) {
			t.Fatalf("asciiWords(%q) = %q, the library %q", s, got, want)
		}
	})
}
