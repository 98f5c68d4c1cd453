package codec

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/record"
)

// WriteNQuads writes txs as RDF 1.1 N-Quads, one quad per line, each transaction's quads in
// the graph <urn:mql:tx:N> and preceded by a comment line naming it. Literals carry full XSD
// datatype IRIs, so any RDF or PROV tool can read the file; ReadNQuads reads it back exactly.
func WriteNQuads(w io.Writer, txs []*record.Tx) error {
	bw := bufio.NewWriter(w)
	for _, tx := range txs {
		quads, err := EncodeTx(tx)
		if err != nil {
			return fmt.Errorf("graphstore: export: %w", err)
		}
		fmt.Fprintf(bw, "# tx %d at %s by %s\n", tx.ID, tx.Time.UTC().Format(time.RFC3339Nano), oneLine(tx.By))
		for _, q := range quads {
			bw.WriteString(FormatQuad(q))
			bw.WriteByte('\n')
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("graphstore: export: %w", err)
	}
	return nil
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// FormatQuad renders one quad as an N-Quads line (without the newline).
func FormatQuad(q quad.Quad) string {
	var b strings.Builder
	for i, v := range []quad.Value{q.Subject, q.Predicate, q.Object, q.Label} {
		if v == nil {
			continue
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(formatTerm(v))
	}
	b.WriteString(" .")
	return b.String()
}

// formatTerm renders a term as N-Quads. quad's own String methods are not used for literals:
// they write datatypes as prefixed names in angle brackets (<xsd:double>), booleans as "True",
// times without the fraction of a second, and control characters unescaped.
func formatTerm(v quad.Value) string {
	switch x := v.(type) {
	case quad.IRI:
		return "<" + string(x) + ">"
	case quad.String:
		return quoteLit(string(x))
	case quad.TypedString:
		return quoteLit(string(x.Value)) + "^^<" + string(x.Type.Full()) + ">"
	case quad.Int:
		return quoteLit(strconv.FormatInt(int64(x), 10)) + "^^<" + string(XSDInteger) + ">"
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
		return quoteLit(s) + "^^<" + string(XSDDouble) + ">"
	case quad.Bool:
		return quoteLit(strconv.FormatBool(bool(x))) + "^^<" + string(XSDBoolean) + ">"
	case quad.Time:
		return formatTerm(TimeLit(time.Time(x)))
	}
	return v.String()
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
