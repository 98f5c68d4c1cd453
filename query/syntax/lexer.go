package syntax

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"
	"golang.org/x/text/unicode/norm"
)

// The lexical grammar. The rules are tried in order and the first that
// matches wins: times (2026-11-29) and durations (10m, 2d) come before
// numbers, so that they win over a number followed by a name. The other
// rules cannot match the same text, and the most frequent come first.
//
// Idents are letters (of any script: Klärveld, 東京), digits and '_', and may contain ':', '/'
// and single '-' between other characters, so
// worker-3, plan:pick-vendor, half-life and revoked-by are one token each; an
// ident never contains "--" nor ends with '-', so a comment can follow a name
// without a space.
//
// Time and Duration are matched loosely (2026-11-29T10:00, 3days) and checked
// when the AST is built, so that a malformed one is reported as a bad time or
// duration at its own position rather than as a confusing run of tokens.
var lexDef = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Whitespace", Pattern: `[ \t\r\f\x{FEFF}]+`},
	{Name: "Ident", Pattern: `[\p{L}_][\p{L}\p{M}\p{Nd}_:/]*(?:-[\p{L}\p{M}\p{Nd}_:/]+)*`},
	{Name: "Punct", Pattern: `[.@,*;]`},
	{Name: "Op", Pattern: `!=|<=|>=|[=<>]`},
	{Name: "Newline", Pattern: `\n`},
	{Name: "Comment", Pattern: `--[^\n]*`},
	{Name: "String", Pattern: `"(?:[^"\\]|\\[\s\S])*"`},
	{Name: "Time", Pattern: `\d{4}-\d{2}-\d{2}(?:[Tt][0-9:.]*(?:[Zz]|[+-][0-9:]*)?)?`},
	{Name: "Duration", Pattern: `-?\d+(?:\.\d+)?[A-Za-zµ][A-Za-z0-9_.µ]*`},
	{Name: "Number", Pattern: `-?\d+(?:\.\d+)?`},
	{Name: "Var", Pattern: `\?[A-Za-z_][A-Za-z0-9_]*`},
})

var (
	tokEOF        = lexer.EOF
	tokComment    = mustSym("Comment")
	tokWhitespace = mustSym("Whitespace")
	tokNewline    = mustSym("Newline")
	tokString     = mustSym("String")
	tokTime       = mustSym("Time")
	tokNumber     = mustSym("Number")
	tokIdent      = mustSym("Ident")
	tokOp         = mustSym("Op")
	tokPunct      = mustSym("Punct")
	// tokBad marks the place of a lexical error (already reported); the
	// statement that contains it is skipped.
	tokBad lexer.TokenType = 1
)

func mustSym(name string) lexer.TokenType {
	t, ok := lexDef.Symbols()[name]
	if !ok {
		panic("syntax: no lexer symbol " + name)
	}
	return t
}

// posOf converts a participle position to ours.
func posOf(p lexer.Position) Position {
	return Position{Filename: p.Filename, Offset: p.Offset, Line: p.Line, Column: p.Column}
}

// scan splits src into tokens, always ending with an EOF token. Whitespace
// is dropped; comments are kept only when keepComments is set. Lexical errors
// are returned in errs; in their place the token list holds a tokBad token,
// and scanning resumes at the next line (an unterminated string runs to the
// end of the input, so scanning stops there).
//
// unterminated reports that the input ends inside a string literal. After
// more than maxErrs errors (when maxErrs > 0) it stops as if the input ended.
func scan(name, src string, keepComments bool, maxErrs int) (toks []lexer.Token, errs ErrorList, unterminated bool) {
	return scanAt(lexer.Position{Filename: name, Line: 1, Column: 1}, src, keepComments, maxErrs)
}

// scanAt is scan for src that starts at start in its file, so that positions are the file's.
func scanAt(start lexer.Position, src string, keepComments bool, maxErrs int) (toks []lexer.Token, errs ErrorList, unterminated bool) {
	if off, msg := checkEncoding(src); msg != "" {
		pos := advance(start, src[:off])
		errs.add(posOf(pos), "%s", msg)
		return []lexer.Token{{Type: tokBad, Pos: pos}, {Type: tokEOF, Pos: pos}}, errs, false
	}
	base := start
	rest := src
	for {
		lx, err := lexDef.LexString(start.Filename, rest)
		if err != nil { // cannot happen for LexString
			errs.add(posOf(base), "%v", err)
			return append(toks, lexer.Token{Type: tokEOF, Pos: base}), errs, false
		}
		for {
			t, err := lx.Next()
			if err != nil {
				lerr, _ := err.(*lexer.Error)
				var p lexer.Position
				if lerr != nil {
					p = lerr.Pos
				}
				p = rebase(base, p)
				errAt := p.Offset - base.Offset
				msg, stop := lexErrorMessage(rest[errAt:])
				errs.add(posOf(p), "%s", msg)
				toks = append(toks, lexer.Token{Type: tokBad, Pos: p})
				nl := strings.IndexByte(rest[errAt:], '\n')
				if stop || nl < 0 || (maxErrs > 0 && len(errs) > maxErrs) {
					end := advance(p, rest[errAt:])
					return append(toks, lexer.Token{Type: tokEOF, Pos: end}), errs, stop
				}
				base = advance(p, rest[errAt:errAt+nl])
				rest = rest[errAt+nl:]
				break
			}
			t.Pos = rebase(base, t.Pos)
			switch t.Type {
			case tokEOF:
				return append(toks, t), errs, false
			case tokWhitespace:
				continue
			case tokComment:
				if !keepComments {
					continue
				}
			case tokIdent:
				// A name is one name however its letters were composed: NFC, as mql stores it.
				t.Value = nfc(t.Value)
			case tokString:
				if len(t.Value) > MaxStringBytes {
					errs.add(posOf(t.Pos), "string literal is longer than 1 MiB (%d bytes)", len(t.Value))
					t = lexer.Token{Type: tokBad, Pos: t.Pos}
				}
			}
			toks = append(toks, t)
		}
	}
}

// rebase turns a position relative to a sub-lexer that started at base into
// an absolute one.
func rebase(base, p lexer.Position) lexer.Position {
	out := lexer.Position{Filename: base.Filename, Offset: base.Offset + p.Offset, Line: base.Line + p.Line - 1, Column: p.Column}
	if p.Line == 1 {
		out.Column = base.Column + p.Column - 1
	}
	return out
}

// advance moves p over text.
func advance(p lexer.Position, text string) lexer.Position {
	p.Advance(text)
	return p
}

// checkEncoding returns the offset and a message for the first NUL byte or
// invalid UTF-8 sequence in src.
func checkEncoding(src string) (int, string) {
	for i := 0; i < len(src); {
		c := src[i]
		if c == 0 {
			return i, "NUL byte in input"
		}
		if c < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(src[i:])
		if r == utf8.RuneError && n == 1 {
			return i, "invalid UTF-8 encoding"
		}
		i += n
	}
	return 0, ""
}

// lexErrorMessage describes why no token starts at rest. stop reports that
// the rest of the input cannot be scanned (an unterminated string).
func lexErrorMessage(rest string) (msg string, stop bool) {
	r, _ := utf8.DecodeRuneInString(rest)
	switch r {
	case '"':
		return "unterminated string literal", true
	case '?':
		return `expected variable name after "?"`, false
	case '-':
		// In r-, then U+202E (a bidi override), then 1, the name ends at "r": name the character
		// that cannot be seen rather than leave the reader to look at the '-'.
		if next, n := utf8.DecodeRuneInString(rest[1:]); n > 0 && !unicode.IsGraphic(next) && !unicode.IsSpace(next) {
			return `unexpected "-" before the invisible character ` + quoteRune(next) + `; a name goes on after "-" with a letter or digit`, false
		}
		return `unexpected "-"; a number follows "-" directly, and "--" starts a comment`, false
	case '!':
		return `unexpected "!"; did you mean "!="?`, false
	}
	if r < ' ' || r == 0x7f {
		return "unexpected control character " + quoteRune(r), false
	}
	return "unexpected character " + quoteRune(r), false
}

func quoteRune(r rune) string { return strconv.Quote(string(r)) }

// describe names a token for an error message.
func describe(t lexer.Token) string {
	switch t.Type {
	case tokEOF:
		return "end of input"
	case tokNewline:
		return "end of line"
	case tokString:
		v := t.Value
		if utf8.RuneCountInString(v) > 24 {
			v = string([]rune(v)[:20]) + `..."`
		}
		return "string " + v
	case tokBad:
		return "invalid input"
	}
	if t.Value == ";" {
		return `";"`
	}
	v := t.Value
	if utf8.RuneCountInString(v) > 40 {
		v = string([]rune(v)[:36]) + "..."
	}
	return `"` + v + `"`
}

// nfc is s in Unicode normalization form C.
func nfc(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	return norm.NFC.String(s)
}
