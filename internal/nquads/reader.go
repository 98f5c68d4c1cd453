// Package nquads reads and writes RDF 1.1 N-Quads (https://www.w3.org/TR/n-quads/).
//
// The reader is strict: it accepts the documents of the W3C grammar and refuses everything
// else with the line and column of the first thing wrong, so a file that some other tool would
// "repair" (a bare word where a literal belongs, a relative IRI, Turtle's @prefix) is never
// read as something its author did not write. It conforms to the W3C RDF 1.1 N-Quads and
// N-Triples test suites (testdata/w3c). Two rules go beyond the grammar's productions: IRIs
// must be absolute, as the N-Quads specification requires in its text, and an escape in an
// IRI may not stand for a character that an IRI cannot hold (a space, a control character,
// <>"{}|^`\), since RDF 1.1 Concepts makes every IRI an RFC 3987 IRI and these are the
// characters the grammar keeps out of IRIs written plainly.
//
// The writer (FormatTerm, FormatQuad) writes mql's canonical form, which the reader reads back
// to the same terms.
package nquads

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cayleygraph/quad"
)

const xsdString = quad.IRI("http://www.w3.org/2001/XMLSchema#string")

// SyntaxError reports where and why a document is not N-Quads. Line and Column are 1-based;
// Column counts Unicode code points.
type SyntaxError struct {
	Line, Column int
	Msg          string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg)
}

// Reader reads quads one at a time; memory is bounded by the longest line.
type Reader struct {
	src        io.Reader
	buf        []byte // buf[start:end] is read but not yet consumed
	start, end int
	eof        bool  // src has reported io.EOF
	err        error // returned by every Next after the first error
	lineNo     int   // the line last taken from buf
	quadLine   int   // the line of the quad last returned
	scratch    []byte
	iris       map[string]quad.Value
}

// NewReader returns a Reader of the N-Quads document r.
func NewReader(r io.Reader) *Reader {
	return &Reader{src: r, buf: make([]byte, 64<<10), iris: make(map[string]quad.Value)}
}

// Next returns the next quad, or io.EOF after the last. A syntax error is a *SyntaxError.
// Terms are quad.IRI (escapes decoded), quad.BNode, quad.String (a plain literal, or one
// typed xsd:string: RDF 1.1 makes them the same term), quad.TypedString{Value, Type} with
// the full datatype IRI, and quad.LangString{Value, Lang} with the tag in lower case.
// Label is nil for a triple in the default graph. After an error, Next returns it again.
func (r *Reader) Next() (quad.Quad, error) {
	if r.err != nil {
		return quad.Quad{}, r.err
	}
	for {
		line, ok, err := r.nextLine()
		if err != nil {
			r.err = fmt.Errorf("reading line %d: %w", r.lineNo+1, err)
			return quad.Quad{}, r.err
		}
		if !ok {
			r.err = io.EOF
			return quad.Quad{}, io.EOF
		}
		p := parser{b: line, line: r.lineNo, scratch: r.scratch, commentAt: -1, iris: r.iris}
		q, isQuad, err := p.statement()
		r.scratch = p.scratch
		if err != nil {
			r.err = err
			return quad.Quad{}, err
		}
		if isQuad {
			r.quadLine = r.lineNo
			return q, nil
		}
	}
}

// Line is the line on which the quad last returned by Next started.
func (r *Reader) Line() int { return r.quadLine }

// nextLine returns the next line without its end: a statement cannot span lines, so each
// line is parsed on its own. CR, LF and CR LF each end one line. The line is valid until the
// next call.
func (r *Reader) nextLine() (line []byte, ok bool, err error) {
	scanned := 0 // bytes after r.start known to hold no line end
	for {
		rest := r.buf[r.start+scanned : r.end]
		if i := indexEOL(rest); i >= 0 {
			i += r.start + scanned
			if r.buf[i] == '\r' && i+1 == r.end && !r.eof {
				// The CR may be the first half of a CR LF still unread.
				scanned = i - r.start
				if err := r.fill(); err != nil {
					return nil, false, err
				}
				continue
			}
			line = r.buf[r.start:i]
			r.start = i + 1
			if r.buf[i] == '\r' && r.start < r.end && r.buf[r.start] == '\n' {
				r.start++
			}
			r.lineNo++
			return line, true, nil
		}
		if r.eof {
			if r.start == r.end {
				return nil, false, nil
			}
			line = r.buf[r.start:r.end]
			r.start = r.end
			r.lineNo++
			return line, true, nil
		}
		scanned = r.end - r.start
		if err := r.fill(); err != nil {
			return nil, false, err
		}
	}
}

func indexEOL(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

// fill reads more input behind buf[start:end], moving it to the front and growing buf when
// a line does not fit.
func (r *Reader) fill() error {
	if r.start > 0 {
		r.end = copy(r.buf, r.buf[r.start:r.end])
		r.start = 0
	}
	if r.end == len(r.buf) {
		grown := make([]byte, 2*len(r.buf))
		copy(grown, r.buf[:r.end])
		r.buf = grown
	}
	for range 100 {
		n, err := r.src.Read(r.buf[r.end:])
		r.end += n
		if err == io.EOF {
			r.eof = true
			return nil
		}
		if n > 0 || err != nil {
			return err
		}
	}
	return io.ErrNoProgress
}

// parser parses one line. Positions are byte offsets into b; errors convert them to columns.
type parser struct {
	b         []byte
	pos       int
	line      int
	scratch   []byte
	commentAt int // where the comment that the last space skipped begins, or -1
	iris      map[string]quad.Value
}

// An export repeats a few IRIs on every line (predicates, types, the transaction graph), so
// the reader keeps short IRIs it has read, boxed as quad.Value: a repeat then costs neither a
// string nor an interface allocation. The cache holds at most irisMax IRIs of at most
// irisLen bytes, so it adds at most a fixed 1 MiB to the longest line.
const (
	irisMax = 4096
	irisLen = 256
)

func (p *parser) errAt(pos int, format string, args ...any) error {
	return &SyntaxError{Line: p.line, Column: utf8.RuneCount(p.b[:pos]) + 1, Msg: fmt.Sprintf(format, args...)}
}

// errHere reports an error at the current position, or at the comment that ended the line
// early: a statement cut short by a comment is best shown where the comment starts.
func (p *parser) errHere(format string, args ...any) error {
	if p.pos == len(p.b) && p.commentAt >= 0 {
		return p.errAt(p.commentAt, format, args...)
	}
	return p.errAt(p.pos, format, args...)
}

// space skips white space and a comment, which runs to the end of the line.
func (p *parser) space() {
	if p.pos < len(p.b) {
		p.commentAt = -1
	}
	for p.pos < len(p.b) {
		switch p.b[p.pos] {
		case ' ', '\t':
			p.pos++
		case '#':
			p.commentAt = p.pos
			p.pos = len(p.b)
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.pos < len(p.b) {
		return p.b[p.pos]
	}
	return 0
}

// found describes what stands at the current position, for an error message.
func (p *parser) found() string {
	switch {
	case p.pos == len(p.b) && p.commentAt >= 0:
		return "a comment"
	case p.pos == len(p.b):
		return "end of line"
	case p.b[p.pos] == ' ':
		return "a space"
	case p.b[p.pos] == '\t':
		return "a tab"
	}
	rest := p.b[p.pos:]
	n, runes := 0, 0
	for n < len(rest) && rest[n] != ' ' && rest[n] != '\t' && runes < 20 {
		_, size := utf8.DecodeRune(rest[n:])
		n += size
		runes++
	}
	s := strconv.Quote(string(rest[:n]))
	if n < len(rest) && rest[n] != ' ' && rest[n] != '\t' {
		s += "..."
	}
	return s
}

// statement parses a line: a statement, or nothing but white space and a comment.
func (p *parser) statement() (q quad.Quad, isQuad bool, err error) {
	p.space()
	if p.pos == len(p.b) {
		return q, false, nil
	}
	switch p.peek() {
	case '<':
		q.Subject, err = p.iri()
	case '_':
		q.Subject, err = p.bnode()
	case '"':
		err = p.errHere("a literal cannot be a subject; the subject is an IRI <...> or a blank node _:label")
	default:
		err = p.errHere("expected a subject (an IRI <...> or a blank node _:label), found %s", p.found())
	}
	if err != nil {
		return q, false, err
	}

	p.space()
	switch p.peek() {
	case '<':
		q.Predicate, err = p.iri()
	case '_':
		err = p.errHere("a blank node cannot be a predicate; the predicate is an IRI <...>")
	case '"':
		err = p.errHere("a literal cannot be a predicate; the predicate is an IRI <...>")
	default:
		err = p.errHere("expected a predicate (an IRI <...>), found %s", p.found())
	}
	if err != nil {
		return q, false, err
	}

	p.space()
	switch p.peek() {
	case '<':
		q.Object, err = p.iri()
	case '_':
		q.Object, err = p.bnode()
	case '"':
		q.Object, err = p.literal()
	default:
		err = p.errHere(`expected an object (an IRI <...>, a blank node _:label or a literal "..."), found %s`, p.found())
	}
	if err != nil {
		return q, false, err
	}

	p.space()
	switch p.peek() {
	case '<':
		q.Label, err = p.iri()
	case '_':
		q.Label, err = p.bnode()
	case '"':
		err = p.errHere("a literal cannot be a graph name; the graph is an IRI <...> or a blank node _:label")
	}
	if err != nil {
		return q, false, err
	}

	p.space()
	if p.peek() != '.' {
		if q.Label == nil {
			return q, false, p.errHere("expected a graph name (an IRI <...> or a blank node _:label) or the '.' that ends a statement, found %s", p.found())
		}
		return q, false, p.errHere("expected the '.' that ends a statement, found %s", p.found())
	}
	p.pos++
	p.space()
	if p.pos != len(p.b) {
		return q, false, p.errHere("found %s after the '.' that ends a statement; each statement goes on a line of its own", p.found())
	}
	return q, true, nil
}

// iri parses an IRIREF: '<' ([^#x00-#x20<>"{}|^`\] | UCHAR)* '>', which must be absolute.
// The value is a quad.IRI.
func (p *parser) iri() (quad.Value, error) {
	open := p.pos
	p.pos++
	from := p.pos
	escaped := false
	for p.pos < len(p.b) {
		c := p.b[p.pos]
		switch {
		case c == '>':
			raw := p.b[from:p.pos]
			p.pos++
			if !escaped {
				if v, ok := p.iris[string(raw)]; ok {
					return v, nil
				}
			}
			s := string(raw)
			if escaped {
				s = string(p.scratch)
			}
			if !absolute(s) {
				return nil, p.errAt(open, "relative IRI %s: IRIs in N-Quads are absolute, with a scheme such as urn: or http:", shorten("<"+s+">"))
			}
			v := quad.Value(quad.IRI(s))
			if !escaped && len(s) <= irisLen {
				if len(p.iris) == irisMax {
					clear(p.iris)
				}
				p.iris[s] = v
			}
			return v, nil
		case c == '\\':
			at := p.pos
			if at+1 == len(p.b) || p.b[at+1] != 'u' && p.b[at+1] != 'U' {
				return nil, p.errAt(at, `an IRI cannot contain '\' except in the escapes \uXXXX and \UXXXXXXXX`)
			}
			r, err := p.uchar()
			if err != nil {
				return nil, err
			}
			if forbiddenInIRI(r) {
				return nil, p.errAt(at, "the escape %s stands for %s, which an IRI cannot contain", p.b[at:p.pos], describeIRIChar(r))
			}
			if !escaped {
				p.scratch = append(p.scratch[:0], p.b[from:at]...)
				escaped = true
			}
			p.scratch = utf8.AppendRune(p.scratch, r)
		case c < utf8.RuneSelf:
			if forbiddenInIRI(rune(c)) {
				return nil, p.errHere("an IRI cannot contain %s", describeIRIChar(rune(c)))
			}
			if escaped {
				p.scratch = append(p.scratch, c)
			}
			p.pos++
		default:
			r, n := utf8.DecodeRune(p.b[p.pos:])
			if r == utf8.RuneError && n == 1 {
				return nil, p.errHere("invalid UTF-8")
			}
			if escaped {
				p.scratch = append(p.scratch, p.b[p.pos:p.pos+n]...)
			}
			p.pos += n
		}
	}
	return nil, p.errAt(open, "the IRI starting here has no closing '>' on its line")
}

func forbiddenInIRI(r rune) bool {
	return r < utf8.RuneSelf && notInIRI[r]
}

// notInIRI marks the ASCII characters that IRIREF excludes: #x00-#x20 and <>"{}|^`\.
var notInIRI = func() (t [utf8.RuneSelf]bool) {
	for c := 0; c <= 0x20; c++ {
		t[c] = true
	}
	for _, c := range `<>"{}|^` + "`\\" {
		t[c] = true
	}
	return t
}()

func describeIRIChar(r rune) string {
	switch {
	case r == ' ':
		return "a space"
	case r < 0x20:
		return fmt.Sprintf("the control character U+%04X", r)
	}
	return strconv.QuoteRune(r)
}

// absolute reports whether s starts with a scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":".
func absolute(s string) bool {
	colon := strings.IndexByte(s, ':')
	if colon < 1 {
		return false
	}
	for i := 0; i < colon; i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return true
}

func shorten(s string) string {
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	return string([]rune(s)[:57]) + "..."
}

// uchar parses \uXXXX or \UXXXXXXXX at p.pos into the code point it stands for.
func (p *parser) uchar() (rune, error) {
	at := p.pos
	digits := 4
	if p.b[p.pos+1] == 'U' {
		digits = 8
	}
	p.pos += 2
	var u uint32 // eight digits fill 32 bits: a rune would turn \U80000000 negative
	for i := 0; i < digits; i++ {
		if p.pos == len(p.b) || !isHex(p.b[p.pos]) {
			return 0, p.errAt(at, `\%c must be followed by %d hexadecimal digits`, p.b[at+1], digits)
		}
		u = u<<4 | uint32(unhex(p.b[p.pos]))
		p.pos++
	}
	if u > unicode.MaxRune || 0xD800 <= u && u <= 0xDFFF {
		return 0, p.errAt(at, "the escape %s is not a Unicode character", p.b[at:p.pos])
	}
	return rune(u), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}

// bnode parses a BLANK_NODE_LABEL: '_:' (PN_CHARS_U | [0-9]) ((PN_CHARS | '.')* PN_CHARS)?
//
// PN_CHARS_U here leaves out the ':' that the N-Quads grammar lists: the W3C test suite
// refuses _::a and _:abc:def, following Turtle, and so does every conforming reader.
func (p *parser) bnode() (quad.BNode, error) {
	if p.pos+1 >= len(p.b) || p.b[p.pos+1] != ':' {
		return "", p.errHere("a blank node is written _:label, found %s", p.found())
	}
	p.pos += 2
	from := p.pos
	r, n := utf8.DecodeRune(p.b[p.pos:])
	if n == 0 || !(isPNCharsU(r) || '0' <= r && r <= '9') || r == utf8.RuneError && n == 1 {
		return "", p.errHere("a blank node label starts with a letter, a digit or '_', found %s", p.found())
	}
	p.pos += n
	end := p.pos
	for p.pos < len(p.b) {
		r, n := utf8.DecodeRune(p.b[p.pos:])
		if r == utf8.RuneError && n == 1 {
			return "", p.errHere("invalid UTF-8")
		}
		if r == '.' {
			p.pos++
			continue
		}
		if !isPNChars(r) {
			break
		}
		p.pos += n
		end = p.pos
	}
	// A label does not end in '.': the dots after its last character belong to what follows.
	p.pos = end
	if p.peek() == ':' {
		return "", p.errHere("a blank node label cannot contain ':'")
	}
	return quad.BNode(p.b[from:end]), nil
}

func isPNCharsBase(r rune) bool {
	switch {
	case 'A' <= r && r <= 'Z', 'a' <= r && r <= 'z':
		return true
	case r < 0xC0:
		return false
	}
	return 0x00C0 <= r && r <= 0x00D6 || 0x00D8 <= r && r <= 0x00F6 || 0x00F8 <= r && r <= 0x02FF ||
		0x0370 <= r && r <= 0x037D || 0x037F <= r && r <= 0x1FFF || 0x200C <= r && r <= 0x200D ||
		0x2070 <= r && r <= 0x218F || 0x2C00 <= r && r <= 0x2FEF || 0x3001 <= r && r <= 0xD7FF ||
		0xF900 <= r && r <= 0xFDCF || 0xFDF0 <= r && r <= 0xFFFD || 0x10000 <= r && r <= 0xEFFFF
}

func isPNCharsU(r rune) bool { return r == '_' || isPNCharsBase(r) }

func isPNChars(r rune) bool {
	return isPNCharsU(r) || r == '-' || '0' <= r && r <= '9' || r == 0x00B7 ||
		0x0300 <= r && r <= 0x036F || 0x203F <= r && r <= 0x2040
}

// literal parses STRING_LITERAL_QUOTE ('^^' IRIREF | LANGTAG)?.
func (p *parser) literal() (quad.Value, error) {
	open := p.pos
	p.pos++
	from := p.pos
	escaped := false
	var value string
	for {
		if p.pos == len(p.b) {
			return nil, p.errAt(open, `the literal starting here has no closing '"' on its line`)
		}
		c := p.b[p.pos]
		if c == '"' {
			if escaped {
				value = string(p.scratch)
			} else {
				value = string(p.b[from:p.pos])
			}
			p.pos++
			break
		}
		if c == '\\' {
			at := p.pos
			if !escaped {
				p.scratch = append(p.scratch[:0], p.b[from:at]...)
				escaped = true
			}
			var e byte
			if at+1 < len(p.b) {
				e = p.b[at+1]
			}
			switch e {
			case 'u', 'U':
				r, err := p.uchar()
				if err != nil {
					return nil, err
				}
				p.scratch = utf8.AppendRune(p.scratch, r)
				continue
			case 't':
				e = '\t'
			case 'b':
				e = '\b'
			case 'n':
				e = '\n'
			case 'r':
				e = '\r'
			case 'f':
				e = '\f'
			case '"', '\'', '\\':
			default:
				return nil, p.errAt(at, `unknown escape %s in a literal; the escapes are \t \b \n \r \f \" \' \\ \uXXXX \UXXXXXXXX`, p.escapeText(at))
			}
			p.scratch = append(p.scratch, e)
			p.pos += 2
			continue
		}
		n := 1
		if c >= utf8.RuneSelf {
			var r rune
			r, n = utf8.DecodeRune(p.b[p.pos:])
			if r == utf8.RuneError && n == 1 {
				return nil, p.errHere("invalid UTF-8")
			}
		}
		if escaped {
			p.scratch = append(p.scratch, p.b[p.pos:p.pos+n]...)
		}
		p.pos += n
	}

	p.space()
	switch p.peek() {
	case '^':
		if p.pos+1 == len(p.b) || p.b[p.pos+1] != '^' {
			return nil, p.errHere("a datatype is written ^^<IRI>, found %s", p.found())
		}
		p.pos += 2
		p.space()
		if p.peek() != '<' {
			return nil, p.errHere("expected a datatype IRI <...> after ^^, found %s", p.found())
		}
		v, err := p.iri()
		if err != nil {
			return nil, err
		}
		dt := v.(quad.IRI)
		if dt == xsdString {
			return quad.String(value), nil
		}
		return quad.TypedString{Value: quad.String(value), Type: dt}, nil
	case '@':
		lang, err := p.langTag()
		if err != nil {
			return nil, err
		}
		return quad.LangString{Value: quad.String(value), Lang: lang}, nil
	}
	return quad.String(value), nil
}

func (p *parser) escapeText(at int) string {
	if at+1 == len(p.b) {
		return `\ at the end of the line`
	}
	r, n := utf8.DecodeRune(p.b[at+1:])
	if !unicode.IsPrint(r) {
		return strconv.Quote(string(p.b[at : at+1+n]))
	}
	return string(p.b[at : at+1+n])
}

// langTag parses LANGTAG: '@' [a-zA-Z]+ ('-' [a-zA-Z0-9]+)*, in lower case: RDF 1.1
// compares language tags without case, so "chat"@EN and "chat"@en are one term.
func (p *parser) langTag() (string, error) {
	from := p.pos + 1
	p.pos++
	if p.letters(false) == 0 {
		return "", p.errHere("a language tag starts with a letter, found %s", p.found())
	}
	for p.peek() == '-' {
		p.pos++
		if p.letters(true) == 0 {
			return "", p.errHere("a language subtag after '-' is letters or digits, found %s", p.found())
		}
	}
	return strings.ToLower(string(p.b[from:p.pos])), nil
}

func (p *parser) letters(digits bool) int {
	n := 0
	for p.pos < len(p.b) {
		c := p.b[p.pos]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || digits && '0' <= c && c <= '9') {
			break
		}
		p.pos++
		n++
	}
	return n
}
