package nquads

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/cayleygraph/quad"
)

const (
	exS  = quad.IRI("http://example/s")
	exP  = quad.IRI("http://example/p")
	exO  = quad.IRI("http://example/o")
	exG  = quad.IRI("http://example/g")
	exDT = quad.IRI("http://example/dt")
)

// lq is a quad and the line it is read from.
type lq struct {
	line int
	q    quad.Quad
}

func q4(s, p, o, g quad.Value) quad.Quad {
	return quad.Quad{Subject: s, Predicate: p, Object: o, Label: g}
}

// readLines reads every quad of doc with the line it started on, through a reader that hands
// over one byte at a time as well as through the whole buffer, and checks the two agree: line
// ends and escapes split across reads must not change what is read.
func readLines(t *testing.T, doc string) ([]lq, error) {
	t.Helper()
	read := func(src io.Reader) ([]lq, error) {
		r := NewReader(src)
		var got []lq
		for {
			q, err := r.Next()
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			if err != nil {
				return got, err
			}
			got = append(got, lq{r.Line(), q})
		}
	}
	got, err := read(strings.NewReader(doc))
	got1, err1 := read(iotest.OneByteReader(strings.NewReader(doc)))
	if fmt.Sprint(got, err) != fmt.Sprint(got1, err1) {
		t.Errorf("read whole: %v %v\nread a byte at a time: %v %v", got, err, got1, err1)
	}
	return got, err
}

func TestReadTerms(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []lq
	}{
		{"triple without graph", "<http://example/s> <http://example/p> <http://example/o> .\n",
			[]lq{{1, q4(exS, exP, exO, nil)}}},
		{"quad", "<http://example/s> <http://example/p> <http://example/o> <http://example/g> .",
			[]lq{{1, q4(exS, exP, exO, exG)}}},
		{"UCHAR in an IRI", `<http://example/\u0053> <http://example/p> <http://example/o> .`,
			[]lq{{1, q4(quad.IRI("http://example/S"), exP, exO, nil)}}},
		{"the issue's re-spelled principal", `<urn:mql:principal:\u0061lice> <http://example/p> <http://example/o> .`,
			[]lq{{1, q4(quad.IRI("urn:mql:principal:alice"), exP, exO, nil)}}},
		{"\\U beyond the BMP in an IRI", `<urn:x:\U0001F600> <http://example/p> <urn:\u00E9t\u00C9> .`,
			[]lq{{1, q4(quad.IRI("urn:x:😀"), exP, quad.IRI("urn:étÉ"), nil)}}},
		{"UCHAR in a literal", `<http://example/s> <http://example/p> "\u00E9\u20AC\U0001F600x\U00000041" .`,
			[]lq{{1, q4(exS, exP, quad.String("é€😀xA"), nil)}}},
		{"ECHARs", `<http://example/s> <http://example/p> "\t\b\n\r\f\"\'\\" .`,
			[]lq{{1, q4(exS, exP, quad.String("\t\b\n\r\f\"'\\"), nil)}}},
		{"raw characters a literal may hold", "<http://example/s> <http://example/p> \"a\tb\x00c\x7f'# <x> \u00e9\" .",
			[]lq{{1, q4(exS, exP, quad.String("a\tb\x00c\x7f'# <x> é"), nil)}}},
		{"empty literal", `<http://example/s> <http://example/p> "" .`,
			[]lq{{1, q4(exS, exP, quad.String(""), nil)}}},
		{"language tags", `<http://example/s> <http://example/p> "chat"@fr .
<http://example/s> <http://example/p> "x"@en-US <http://example/g> .
<http://example/s> <http://example/p> "x"@zh-Hant-TW .
<http://example/s> <http://example/p> "x"@de-1996 .
<http://example/s> <http://example/p> "x"@EN .`,
			[]lq{
				{1, q4(exS, exP, quad.LangString{Value: "chat", Lang: "fr"}, nil)},
				{2, q4(exS, exP, quad.LangString{Value: "x", Lang: "en-us"}, exG)},
				{3, q4(exS, exP, quad.LangString{Value: "x", Lang: "zh-hant-tw"}, nil)},
				{4, q4(exS, exP, quad.LangString{Value: "x", Lang: "de-1996"}, nil)},
				{5, q4(exS, exP, quad.LangString{Value: "x", Lang: "en"}, nil)}, // one term with "x"@en
			}},
		{"datatypes", `<http://example/s> <http://example/p> "1"^^<http://www.w3.org/2001/XMLSchema#integer> .
<http://example/s> <http://example/p> "x"^^<http://example/dt> <http://example/g> .
<http://example/s> <http://example/p> "x"^^<http://www.w3.org/2001/XMLSchema#string> .
<http://example/s> <http://example/p> "x"^^<http://example/\u0064t> .`,
			[]lq{
				{1, q4(exS, exP, quad.TypedString{Value: "1", Type: "http://www.w3.org/2001/XMLSchema#integer"}, nil)},
				{2, q4(exS, exP, quad.TypedString{Value: "x", Type: exDT}, exG)},
				{3, q4(exS, exP, quad.String("x"), nil)}, // RDF 1.1: xsd:string is the plain literal
				{4, q4(exS, exP, quad.TypedString{Value: "x", Type: exDT}, nil)},
			}},
		{"white space between a literal and its tag or datatype", "<http://example/s> <http://example/p> \"Alice\" @en .\n" +
			"<http://example/s>  <http://example/p>  \"2\"  ^^  <http://example/dt>  <http://example/g>  .",
			[]lq{
				{1, q4(exS, exP, quad.LangString{Value: "Alice", Lang: "en"}, nil)},
				{2, q4(exS, exP, quad.TypedString{Value: "2", Type: exDT}, exG)},
			}},
		{"blank node labels with dots, dashes and more", `_:a.b-c <http://example/p> _:1x.y .
_:_x <http://example/p> _:o. 
_:é·‿x <http://example/p> _:a..b <http://example/g>.
_:s <http://example/p> _:o <http://example/g> .
_:s <http://example/p> <http://example/o> _:g.`,
			[]lq{
				{1, q4(quad.BNode("a.b-c"), exP, quad.BNode("1x.y"), nil)},
				{2, q4(quad.BNode("_x"), exP, quad.BNode("o"), nil)},
				{3, q4(quad.BNode("é·‿x"), exP, quad.BNode("a..b"), exG)},
				{4, q4(quad.BNode("s"), exP, quad.BNode("o"), exG)},
				{5, q4(quad.BNode("s"), exP, exO, quad.BNode("g"))},
			}},
		{"minimal white space", `<http://example/s><http://example/p><http://example/o><http://example/g>.
_:s<http://example/p>"x"@en<http://example/g>.
<http://example/s><http://example/p>"x"^^<http://example/dt><http://example/g>.
<http://example/s><http://example/p>_:o.`,
			[]lq{
				{1, q4(exS, exP, exO, exG)},
				{2, q4(quad.BNode("s"), exP, quad.LangString{Value: "x", Lang: "en"}, exG)},
				{3, q4(exS, exP, quad.TypedString{Value: "x", Type: exDT}, exG)},
				{4, q4(exS, exP, quad.BNode("o"), nil)},
			}},
		{"CR line ends", "<http://example/s> <http://example/p> <http://example/o> .\r\r# c\r<http://example/s> <http://example/p> \"x\" .\r",
			[]lq{{1, q4(exS, exP, exO, nil)}, {4, q4(exS, exP, quad.String("x"), nil)}}},
		{"CR LF line ends", "# c\r\n<http://example/s> <http://example/p> <http://example/o> .\r\n\r\n<http://example/s> <http://example/p> \"x\" .",
			[]lq{{2, q4(exS, exP, exO, nil)}, {4, q4(exS, exP, quad.String("x"), nil)}}},
		{"LF CR is two line ends", "\n\r<http://example/s> <http://example/p> <http://example/o> .",
			[]lq{{3, q4(exS, exP, exO, nil)}}},
		{"comments and blank lines", "# head\n\n \t \n<http://example/s> <http://example/p> <http://example/o> <http://example/g> . # after\n" +
			"<http://example/s> <http://example/p> <http://example/o>.#tight\n\t<http://example/s>\t<http://example/p>\t\"#x\"\t.\t\n",
			[]lq{
				{4, q4(exS, exP, exO, exG)},
				{5, q4(exS, exP, exO, nil)},
				{6, q4(exS, exP, quad.String("#x"), nil)},
			}},
		{"empty document", "", nil},
		{"only comments", "# a\n#b\r\n", nil},
		{"IRIs with characters the grammar allows", "<urn:a:\u00e9\x7f%20~[]()!$&'*+,;=@?#frag> <http://example/p> <HTTP+x-y.z:X> .",
			[]lq{{1, q4(quad.IRI("urn:a:é\x7f%20~[]()!$&'*+,;=@?#frag"), exP, quad.IRI("HTTP+x-y.z:X"), nil)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLines(t, tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", tc.want) {
				t.Errorf("got\n%#v\nwant\n%#v", got, tc.want)
			}
		})
	}
}

func TestReadRefuses(t *testing.T) {
	const s, p, o, g = "<http://example/s>", "<http://example/p>", "<http://example/o>", "<http://example/g>"
	for _, tc := range []struct {
		name, doc  string
		line, col  int
		msgContain string
	}{
		// The attacks of issue 11 item 12.
		{"bare word as object", "# tx 1\n<urn:mql:claim:c> <urn:mql:subject> alice <urn:mql:tx:1> .", 2, 37, `found "alice"`},
		{"relative IRI", s + " " + p + " <alice> .", 1, 39, "relative IRI <alice>"},
		{"relative IRI as graph", s + " " + p + " " + o + " <g> .", 1, 58, "relative IRI <g>"},
		{"relative datatype", s + " " + p + ` "1"^^<int> .`, 1, 44, "relative IRI <int>"},
		{"IRI with a space", "<urn:mql:principal:al ice> " + p + " " + o + " .", 1, 22, "cannot contain a space"},
		{"literal as graph name", s + " " + p + " " + o + ` "g" .`, 1, 58, "literal cannot be a graph name"},
		{"@prefix", "@prefix ex: <http://example/> .", 1, 1, `found "@prefix"`},
		{"_::a", "_::a " + p + " " + o + " .", 1, 3, "starts with a letter"},
		{"object list", s + " " + p + " " + o + ", <http://example/o2> .", 1, 57, `found ","`},
		{"predicate list", s + " " + p + " " + o + "; " + p + " " + o + " .", 1, 57, `found ";"`},
		{"bare integer", s + " " + p + " 1 .", 1, 39, `found "1"`},
		{"bare decimal", s + " " + p + " -1.5 .", 1, 39, `found "-1.5"`},
		{"bare double", s + " " + p + " 1e3 .", 1, 39, `found "1e3"`},
		{"bare boolean", s + " " + p + " true .", 1, 39, `found "true"`},
		{"long quotes", s + " " + p + " '''x''' .", 1, 39, `found "'''x'''"`},
		{"long double quotes", s + " " + p + ` """x""" .`, 1, 41, "literal cannot be a graph name"},
		{"single quotes", s + " " + p + " 'x' .", 1, 39, `found "'x'"`},
		{"prefixed name", s + " ex:p " + o + " .", 1, 20, `found "ex:p"`},
		{"a", s + " a " + o + " .", 1, 20, `found "a"`},

		// Structure.
		{"two statements on a line", s + " " + p + " " + o + " . " + s + " " + p + " " + o + " .", 1, 60, "line of its own"},
		{"quint", s + " " + p + " " + o + " " + g + " " + g + " .", 1, 77, "expected the '.'"},
		{"no final dot", s + " " + p + " " + o, 1, 57, "found end of line"},
		{"no final dot in a quad", s + " " + p + " " + o + " " + g, 1, 76, "expected the '.'"},
		{"statement across lines", s + " " + p + "\n" + o + " .", 1, 38, "expected an object"},
		{"comment inside a statement", s + " # " + p + " " + o + " .", 1, 20, "expected a predicate (an IRI <...>), found a comment"},
		{"comment after a literal", s + " " + p + ` "x" # no dot`, 1, 43, "or the '.' that ends a statement, found a comment"},
		{"comment before the dot", s + " " + p + " " + o + " " + g + "# .", 1, 76, "expected the '.' that ends a statement, found a comment"},
		{"literal as subject", `"s" ` + p + " " + o + " .", 1, 1, "literal cannot be a subject"},
		{"blank node as predicate", s + " _:p " + o + " .", 1, 20, "blank node cannot be a predicate"},
		{"literal as predicate", s + ` "p" ` + o + " .", 1, 20, "literal cannot be a predicate"},
		{"dot alone", ".", 1, 1, "expected a subject"},
		{"error on a later line", s + " " + p + " " + o + " .\r\n\r\n" + s + " " + p + " x .", 3, 39, `found "x"`},
		{"byte order mark", "\ufeff" + s + " " + p + " " + o + " .", 1, 1, `found "\ufeff`},
		{"form feed is not white space", s + "\f" + p + " " + o + " .", 1, 19, "expected a predicate"},

		// IRIs.
		{"unclosed IRI", "<http://example/s", 1, 1, "no closing '>'"},
		{"IRI with <", "<http://exa<mple/s> " + p + " " + o + " .", 1, 12, `cannot contain '<'`},
		{"IRI with a quote", `<http://exa"mple/s> ` + p + " " + o + " .", 1, 12, `cannot contain '"'`},
		{"IRI with braces", "<http://exa{mple/s> " + p + " " + o + " .", 1, 12, `cannot contain '{'`},
		{"IRI with a pipe", "<http://exa|mple/s> " + p + " " + o + " .", 1, 12, `cannot contain '|'`},
		{"IRI with a caret", "<http://exa^mple/s> " + p + " " + o + " .", 1, 12, `cannot contain '^'`},
		{"IRI with a backquote", "<http://exa`mple/s> " + p + " " + o + " .", 1, 12, "cannot contain '`'"},
		{"IRI with a tab", "<http://exa\tmple/s> " + p + " " + o + " .", 1, 12, "control character U+0009"},
		{"IRI with NUL", "<http://exa\x00mple/s> " + p + " " + o + " .", 1, 12, "control character U+0000"},
		{"IRI with a backslash", `<http://exa\mple/s> ` + p + " " + o + " .", 1, 12, `cannot contain '\'`},
		{"IRI with an ECHAR", `<http://exa\tmple/s> ` + p + " " + o + " .", 1, 12, `cannot contain '\'`},
		{"escape for a space in an IRI", `<urn:mql:principal:\u0020alice> ` + p + " " + o + " .", 1, 20, `\u0020 stands for a space`},
		{"escape for > in an IRI", `<urn:a\u003E> ` + p + " " + o + " .", 1, 7, `stands for '>'`},
		{"escape for a backslash in an IRI", `<urn:a\U0000005C> ` + p + " " + o + " .", 1, 7, `stands for '\\'`},
		{"surrogate escape in an IRI", `<urn:a\uD800> ` + p + " " + o + " .", 1, 7, "not a Unicode character"},
		{"escape past U+10FFFF", s + " " + p + ` "\U00110000" .`, 1, 40, "not a Unicode character"},
		{"escape past 31 bits in an IRI", `<urn:a\U80000000> ` + p + " " + o + " .", 1, 7, "not a Unicode character"},
		{"escape of all ones in a literal", s + " " + p + ` "\UFFFFFFFF" .`, 1, 40, "not a Unicode character"},
		{"short \\u", `<urn:a\u41> ` + p + " " + o + " .", 1, 7, "4 hexadecimal digits"},
		{"escape cut by the line end", `<urn:a\u004`, 1, 7, "4 hexadecimal digits"},
		{"escaped scheme is still relative", `<\u0061> ` + p + " " + o + " .", 1, 1, "relative IRI <a>"},
		{"empty IRI", "<> " + p + " " + o + " .", 1, 1, "relative IRI <>"},
		{"scheme starting with a digit", "<1a:b> " + p + " " + o + " .", 1, 1, "relative IRI"},
		{"invalid UTF-8 in an IRI", "<urn:a\xff> " + p + " " + o + " .", 1, 7, "invalid UTF-8"},

		// Literals.
		{"unclosed literal", s + " " + p + ` "abc .`, 1, 39, `no closing '"'`},
		{"unknown escape", s + " " + p + ` "a\zb" .`, 1, 41, `unknown escape \z`},
		{"backslash at the end", s + " " + p + ` "a\`, 1, 41, "at the end of the line"},
		{"invalid UTF-8 in a literal", s + " " + p + " \"a\xc3\" .", 1, 41, "invalid UTF-8"},
		{"surrogate escape in a literal", s + " " + p + ` "\uDFFF" .`, 1, 40, "not a Unicode character"},
		{"empty language tag", s + " " + p + ` "x"@ .`, 1, 43, "language tag starts with a letter"},
		{"language tag starting with a digit", s + " " + p + ` "x"@1 .`, 1, 43, "language tag starts with a letter"},
		{"empty subtag", s + " " + p + ` "x"@en- .`, 1, 46, "subtag after '-' is letters or digits, found a space"},
		{"subtag with _", s + " " + p + ` "x"@en_US .`, 1, 45, "_:label"},
		{"single caret", s + " " + p + ` "x"^<http://example/dt> .`, 1, 42, "^^<IRI>"},
		{"datatype not an IRI", s + " " + p + ` "x"^^xsd:int .`, 1, 44, "expected a datatype IRI"},
		{"datatype and language", s + " " + p + ` "x"^^<http://example/dt>@en .`, 1, 63, "expected a graph name"},

		// Blank nodes.
		{"underscore alone", "_ " + p + " " + o + " .", 1, 1, "_:label"},
		{"empty label", "_: " + p + " " + o + " .", 1, 3, "starts with a letter"},
		{"label starting with a dash", "_:-a " + p + " " + o + " .", 1, 3, "starts with a letter"},
		{"label starting with a dot", "_:.a " + p + " " + o + " .", 1, 3, "starts with a letter"},
		{"colon in a label", "_:abc:def " + p + " " + o + " .", 1, 6, "cannot contain ':'"},
		{"invalid UTF-8 in a label", "_:a\xff " + p + " " + o + " .", 1, 4, "invalid UTF-8"},
		{"two dots after a label", s + " " + p + " _:o.. .", 1, 43, "found \".\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readLines(t, tc.doc)
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("got %v, err %v; want a *SyntaxError", got, err)
			}
			if se.Line != tc.line || se.Column != tc.col || !strings.Contains(se.Msg, tc.msgContain) {
				t.Errorf("got %q, want line %d, column %d, containing %q", se.Error(), tc.line, tc.col, tc.msgContain)
			}
			want := fmt.Sprintf("line %d, column %d: ", se.Line, se.Column)
			if !strings.HasPrefix(se.Error(), want) {
				t.Errorf("Error() = %q, want it to start with %q", se.Error(), want)
			}
		})
	}
}

func TestColumnsCountCodePoints(t *testing.T) {
	doc := `<urn:é> <urn:😀> "ééé" x .`
	_, err := readAll([]byte(doc))
	var se *SyntaxError
	if !errors.As(err, &se) || se.Column != 23 {
		t.Fatalf("got %v, want column 23 (the x)", err)
	}
}

func TestQuadsBeforeAnErrorAndAfter(t *testing.T) {
	doc := "<http://example/s> <http://example/p> <http://example/o> .\n<http://example/s> <http://example/p> bad .\n<http://example/s> <http://example/p> <http://example/o> .\n"
	r := NewReader(strings.NewReader(doc))
	if _, err := r.Next(); err != nil || r.Line() != 1 {
		t.Fatalf("first quad: %v at line %d", err, r.Line())
	}
	_, err := r.Next()
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 {
		t.Fatalf("second line: %v", err)
	}
	// The reader stops at the first error: nothing past it is read as if it were fine.
	if _, again := r.Next(); again != err {
		t.Fatalf("after an error Next returned %v, want the same error", again)
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("disk on fire")
	src := io.MultiReader(strings.NewReader("<http://example/s> <http://example/p> <http://example/o> .\n<http://ex"), iotest.ErrReader(boom))
	r := NewReader(src)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("got %v, want the read error on line 2", err)
	}
	var se *SyntaxError
	if errors.As(err, &se) {
		t.Fatalf("a read error is not a syntax error: %v", err)
	}
}

func TestLongLine(t *testing.T) {
	long := strings.Repeat("é", 200_000) // 400 kB, beyond the reader's first buffer
	doc := "<http://example/s> <http://example/p> \"" + long + "\" .\r<http://example/s> <http://example/p> \"" + long + "\" x ."
	qs, err := readAll([]byte(doc))
	if len(qs) != 1 || qs[0].Object != quad.String(long) {
		t.Fatalf("read %d quads", len(qs))
	}
	var se *SyntaxError
	if !errors.As(err, &se) || se.Line != 2 || se.Column != 39+200_000+3 {
		t.Fatalf("got %v, want line 2, column %d", err, 39+200_000+3)
	}
}

// lineSource generates n copies of a line without holding them in memory.
type lineSource struct {
	line []byte
	n    int
	off  int
}

func (s *lineSource) Read(p []byte) (int, error) {
	if s.n == 0 {
		return 0, io.EOF
	}
	c := copy(p, s.line[s.off:])
	s.off += c
	if s.off == len(s.line) {
		s.off = 0
		s.n--
	}
	return c, nil
}

// TestStreams checks that memory stays bounded by the longest line: reading 24 MB of
// quads never grows the reader's 64 KiB buffer.
func TestStreams(t *testing.T) {
	line := []byte(`<urn:mql:claim:Klarveld.price_per_seat@1> <urn:mql:value> "44"^^<http://www.w3.org/2001/XMLSchema#double> <urn:mql:tx:3> .` + "\n")
	const n = 200_000
	if testing.Short() {
		t.Skip("reads 200,000 quads")
	}
	r := NewReader(&lineSource{line: line, n: n})
	size := len(r.buf)
	count := 0
	for {
		_, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		count++
	}
	if count != n || r.Line() != n {
		t.Fatalf("read %d quads, last on line %d; want %d", count, r.Line(), n)
	}
	if len(r.buf) != size {
		t.Fatalf("buffer grew from %d to %d bytes", size, len(r.buf))
	}
}

func TestLineCountsEveryLineEnd(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		line int
	}{
		{"\n\nx", 3}, {"\r\rx", 3}, {"\r\n\r\nx", 3}, {"\n\r\nx", 3}, {"\r\n\rx", 3}, {"\n\rx", 3},
	} {
		_, err := readLines(t, tc.doc)
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != tc.line || se.Column != 1 {
			t.Errorf("%q: got %v, want line %d, column 1", tc.doc, err, tc.line)
		}
	}
}

func TestSyntaxErrorIsFoundByAs(t *testing.T) {
	_, err := readAll([]byte("x"))
	wrapped := fmt.Errorf("import: %w", err)
	var se *SyntaxError
	if !errors.As(wrapped, &se) || se.Line != 1 || se.Column != 1 || bytes.Contains([]byte(se.Msg), []byte("line")) {
		t.Fatalf("got %#v", se)
	}
}
