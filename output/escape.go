package output

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Agent-written text (values, source ids, excerpts, URIs, revisions, reasons, names) reaches a
// person's terminal through every format. Raw, it could carry terminal control sequences
// (ESC, CSI as C1 0x9b, carriage returns, newlines that split a row) or Unicode bidi overrides
// and isolates that reorder what an auditor reads. Values have always been printed as Go
// string literals (strconv.Quote), which escapes every rune that is not printable; the
// functions here apply the same rule to every other string, so that one definition of "unsafe
// to show" holds everywhere: a rune is shown raw only if strconv.IsPrint says it is printable
// (a letter, mark, number, punctuation, symbol or the ASCII space), and invalid UTF-8 is never
// shown raw.

// unsafeRune reports whether r (decoded from s with width size) must not reach a terminal raw.
func unsafeRune(r rune, size int) bool {
	return (r == utf8.RuneError && size <= 1) || !strconv.IsPrint(r)
}

// firstUnsafe is the index of the first rune of s that must not reach a terminal raw and is not
// in keep, or -1. Printable ASCII, most of any output, is passed over a byte at a time.
func firstUnsafe(s, keep string) int {
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != 0x7f || strings.IndexByte(keep, c) >= 0 {
				i++
				continue
			}
			return i
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, size) {
			return i
		}
		i += size
	}
	return -1
}

// needsQuote reports whether s must be shown quoted: it holds a rune that is not printable,
// or it starts with a quote and so could pass for a quoted string.
func needsQuote(s string) bool { return strings.HasPrefix(s, `"`) || firstUnsafe(s, "") >= 0 }

// Escape returns a field for a person to read: s itself when every rune is printable, and
// otherwise s as a quoted Go string literal (strconv.Quote, as values are printed), so that
// "src:\x1b[2K" shows as that text instead of clearing a line. A string that starts with a
// quote is quoted too, so that what looks quoted always is.
func Escape(s string) string {
	if !needsQuote(s) {
		return s
	}
	return strconv.Quote(s)
}

// EscapeText returns free text (a message, a line of a report, the context text) with each
// rune that is not printable replaced by its escape as strconv.Quote writes it (\x1b, \u202e),
// keeping newlines and tabs, which such text uses for its layout.
func EscapeText(s string) string { return escapeRunes(s, "\n\t") }

// EscapeLine returns s for one line of a person's screen, without quotes added: every rune
// that is not printable, newlines and tabs included, replaced by its escape (a CSV cell on a
// terminal, a line of mql check's report).
func EscapeLine(s string) string { return escapeRunes(s, "") }

// escapeRunes replaces each rune of s that is not printable, except the ASCII ones in keep, by
// its escape as strconv.Quote writes it.
func escapeRunes(s, keep string) string {
	i := firstUnsafe(s, keep)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unsafeRune(r, size) || r < utf8.RuneSelf && strings.ContainsRune(keep, r) {
			b.WriteString(s[i : i+size])
		} else {
			q := strconv.Quote(s[i : i+size])
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// EscapeJSON makes encoded JSON safe to show: encoding/json escapes C0 controls, U+2028 and
// U+2029 but writes DEL, C1 controls (0x9b is CSI) and the bidi overrides raw. Outside strings
// JSON holds only ASCII punctuation, letters, digits and spaces, so every other unprintable rune
// is inside a string, where \uXXXX means the same rune: the decoded data is unchanged. The
// newline that ends a JSON line is kept.
func EscapeJSON(s string) string {
	i := firstUnsafe(s, "\n")
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 32)
	b.WriteString(s[:i])
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || !unsafeRune(r, size):
			b.WriteString(s[i : i+size])
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			writeU(&b, r1)
			writeU(&b, r2)
		default:
			writeU(&b, r) // invalid UTF-8 (which encoding/json never writes) becomes \ufffd
		}
		i += size
	}
	return b.String()
}

func writeU(b *strings.Builder, r rune) {
	const hex = "0123456789abcdef"
	b.Write([]byte{'\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf]})
}
