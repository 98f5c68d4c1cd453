package nquads

import (
	"math"
	"testing"
	"time"

	"github.com/cayleygraph/quad"
)

func TestFormatTerm(t *testing.T) {
	for _, tc := range []struct {
		v    quad.Value
		want string
	}{
		{quad.IRI("urn:mql:principal:alice"), "<urn:mql:principal:alice>"},
		{quad.IRI("urn:é😀"), "<urn:é😀>"},
		// A broken IRI cannot end its term early: what an IRI cannot hold is escaped.
		{quad.IRI("urn:a> <urn:b"), `<urn:a\u003E\u0020\u003Curn:b>`},
		{quad.IRI("urn:\x00\\{}|^`\""), `<urn:\u0000\u005C\u007B\u007D\u007C\u005E\u0060\u0022>`},
		{quad.BNode("b.1-x"), "_:b.1-x"},
		{quad.String(""), `""`},
		{quad.String("a\\b\"c\nd\re\tf\bg\fh\x00i\x1fj\x7fk é 😀 ' #"), `"a\\b\"c\nd\re\tf\u0008g\u000Ch\u0000i\u001Fj\u007Fk é 😀 ' #"`},
		{quad.TypedString{Value: "PT600S", Type: "http://www.w3.org/2001/XMLSchema#duration"}, `"PT600S"^^<http://www.w3.org/2001/XMLSchema#duration>`},
		{quad.LangString{Value: "chat", Lang: "fr"}, `"chat"@fr`},
		{quad.LangString{Value: "colour", Lang: "EN-GB"}, `"colour"@en-gb`},
		{quad.Int(-42), `"-42"^^<http://www.w3.org/2001/XMLSchema#integer>`},
		{quad.Float(0.9), `"0.9"^^<http://www.w3.org/2001/XMLSchema#double>`},
		{quad.Float(1e21), `"1e+21"^^<http://www.w3.org/2001/XMLSchema#double>`},
		{quad.Float(math.NaN()), `"NaN"^^<http://www.w3.org/2001/XMLSchema#double>`},
		{quad.Float(math.Inf(1)), `"INF"^^<http://www.w3.org/2001/XMLSchema#double>`},
		{quad.Float(math.Inf(-1)), `"-INF"^^<http://www.w3.org/2001/XMLSchema#double>`},
		{quad.Bool(true), `"true"^^<http://www.w3.org/2001/XMLSchema#boolean>`},
		{quad.Time(time.Date(2026, 1, 2, 4, 4, 5, 6, time.FixedZone("", 3600))), `"2026-01-02T03:04:05.000000006Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>`},
	} {
		if got := FormatTerm(tc.v); got != tc.want {
			t.Errorf("FormatTerm(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestFormatQuad(t *testing.T) {
	s, p, o, g := quad.IRI("urn:s"), quad.IRI("urn:p"), quad.String("o"), quad.IRI("urn:g")
	if got, want := FormatQuad(quad.Quad{Subject: s, Predicate: p, Object: o, Label: g}), `<urn:s> <urn:p> "o" <urn:g> .`; got != want {
		t.Errorf("quad: %s, want %s", got, want)
	}
	if got, want := FormatQuad(quad.Quad{Subject: s, Predicate: p, Object: o}), `<urn:s> <urn:p> "o" .`; got != want {
		t.Errorf("triple: %s, want %s", got, want)
	}
}

// TestFormatReadsBack checks that what the writer writes the reader reads as the same terms,
// for literals of every kind the exporter writes and the edge cases of escaping.
func TestFormatReadsBack(t *testing.T) {
	s, p, g := quad.IRI("urn:s"), quad.IRI("urn:p"), quad.IRI("urn:g")
	var qs []quad.Quad
	for _, o := range []quad.Value{
		quad.IRI("urn:é😀\x7f"), quad.BNode("a.b"),
		quad.String(""), quad.String("a\\b\"c\nd\re\tf\bg\fh\x00i\x1fj\x7fk é 😀 ' # \ufffd"),
		quad.TypedString{Value: "x", Type: "urn:dt"}, quad.LangString{Value: "x", Lang: "en-gb"},
	} {
		qs = append(qs, quad.Quad{Subject: s, Predicate: p, Object: o, Label: g}, quad.Quad{Subject: s, Predicate: p, Object: o})
	}
	got, err := readAll([]byte(format(qs)))
	if err != nil {
		t.Fatal(err)
	}
	if !sameQuads(got, qs) {
		t.Fatalf("read back\n%v\nwant\n%v", got, qs)
	}
}
