package nquads

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cayleygraph/quad"
)

const (
	xsd         = "http://www.w3.org/2001/XMLSchema#"
	xsdInteger  = xsd + "integer"
	xsdDouble   = xsd + "double"
	xsdBoolean  = xsd + "boolean"
	xsdDateTime = xsd + "dateTime"
)

// FormatQuad renders q as one N-Quads statement, without the line end: its terms as
// FormatTerm writes them, separated by one space, then " .". A nil Label makes a triple in the
// default graph.
func FormatQuad(q quad.Quad) string {
	var b strings.Builder
	for i, v := range []quad.Value{q.Subject, q.Predicate, q.Object, q.Label} {
		if v == nil {
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(FormatTerm(v))
	}
	b.WriteString(" .")
	return b.String()
}

// FormatTerm renders v in mql's canonical N-Quads form, the one its exports are written in:
// datatypes as full IRIs, literals with \\ \" \n \r \t escaped and every other control
// character (and DEL) as \u00XX, everything else as itself; language tags in lower case. Go values that quad stores
// natively are written as the typed literals they stand for: quad.Int as xsd:integer,
// quad.Float as xsd:double (NaN, INF, -INF), quad.Bool as xsd:boolean, quad.Time as an
// xsd:dateTime in UTC with nanoseconds.
//
// quad's own String methods are not used for literals: they write datatypes as prefixed names
// in angle brackets (<xsd:double>), booleans as "True", times without the fraction of a
// second, and control characters unescaped.
func FormatTerm(v quad.Value) string {
	switch x := v.(type) {
	case quad.IRI:
		return formatIRI(string(x))
	case quad.BNode:
		return "_:" + string(x)
	case quad.String:
		return quoteLit(string(x))
	case quad.TypedString:
		return quoteLit(string(x.Value)) + "^^" + formatIRI(string(x.Type))
	case quad.LangString:
		return quoteLit(string(x.Value)) + "@" + strings.ToLower(x.Lang)
	case quad.Int:
		return quoteLit(strconv.FormatInt(int64(x), 10)) + "^^<" + xsdInteger + ">"
	case quad.Float:
		f := float64(x)
		var s string
		switch {
		case math.IsNaN(f):
			s = "NaN"
		case math.IsInf(f, 1):
			s = "INF"
		case math.IsInf(f, -1):
			s = "-INF"
		default:
			s = strconv.FormatFloat(f, 'g', -1, 64)
		}
		return quoteLit(s) + "^^<" + xsdDouble + ">"
	case quad.Bool:
		return quoteLit(strconv.FormatBool(bool(x))) + "^^<" + xsdBoolean + ">"
	case quad.Time:
		return quoteLit(time.Time(x).UTC().Format(time.RFC3339Nano)) + "^^<" + xsdDateTime + ">"
	}
	return v.String()
}

// formatIRI writes an IRI in angle brackets. A character that an IRI cannot hold is written
// as a \u escape, so a broken IRI can never end the term early and smuggle in others; the
// reader then refuses it where it stands.
func formatIRI(s string) string {
	if !strings.ContainsFunc(s, forbiddenInIRI) {
		return "<" + s + ">"
	}
	var b strings.Builder
	b.WriteByte('<')
	for _, r := range s {
		if forbiddenInIRI(r) {
			fmt.Fprintf(&b, `\u%04X`, r)
		} else {
			b.WriteRune(r)
		}
	}
	b.WriteByte('>')
	return b.String()
}

func quoteLit(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
