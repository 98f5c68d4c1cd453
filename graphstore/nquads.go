package graphstore

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/nquads"
)

// WriteNQuads writes txs as RDF 1.1 N-Quads, one quad per line, each transaction's quads in
// the graph <urn:mql:tx:N> and preceded by a comment line naming it. Literals carry full XSD
// datatype IRIs, so any RDF or PROV tool can read the file; ReadNQuads reads it back exactly.
func WriteNQuads(w io.Writer, txs []*Tx) error {
	bw := bufio.NewWriter(w)
	for _, tx := range txs {
		quads, err := encodeTx(tx)
		if err != nil {
			return fmt.Errorf("graphstore: export: %w", err)
		}
		fmt.Fprintf(bw, "# tx %d at %s by %s\n", tx.ID, tx.Time.UTC().Format(time.RFC3339Nano), oneLine(tx.By))
		for _, q := range quads {
			bw.WriteString(formatQuad(q))
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

// formatQuad renders one quad as an N-Quads line (without the newline).
func formatQuad(q quad.Quad) string {
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
		return quoteLit(strconv.FormatInt(int64(x), 10)) + "^^<" + string(xsdInteger) + ">"
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
		return quoteLit(s) + "^^<" + string(xsdDouble) + ">"
	case quad.Bool:
		return quoteLit(strconv.FormatBool(bool(x))) + "^^<" + string(xsdBoolean) + ">"
	case quad.Time:
		return formatTerm(timeLit(time.Time(x)))
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

// ReadNQuads reads an export written by WriteNQuads. Blank lines and # comments are skipped.
// Every other line must be one N-Quad in a transaction graph <urn:mql:tx:N>; a line that is
// not is reported by number ("line 17: …"). The quads must decode into well-formed
// transactions with contiguous ids, and when the file starts at the genesis, every reference
// must resolve to something recorded earlier in the file. Every error wraps ErrBadImport.
func ReadNQuads(r io.Reader) ([]*Tx, error) {
	br := bufio.NewReader(r)
	var quads []quad.Quad
	lineOf := map[quad.Quad]int{}
	firstLine := map[TxID]int{}
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("graphstore: import: reading line %d: %w", lineNo, err)
		}
		if line == "" && err != nil {
			break
		}
		s := strings.TrimSpace(line)
		if s != "" && s[0] != '#' {
			q, perr := parseLine(s)
			if perr != nil {
				return nil, fmt.Errorf("%w: line %d: %v", ErrBadImport, lineNo, perr)
			}
			cq := canonQuad(q)
			if _, ok := lineOf[cq]; !ok {
				lineOf[cq] = lineNo
			}
			id, _ := parseTxIRI(q.Label)
			if _, ok := firstLine[id]; !ok {
				firstLine[id] = lineNo
			}
			quads = append(quads, q)
		}
		if err != nil {
			break
		}
	}
	txs, err := decodeTxs(quads)
	if err != nil {
		var de *decodeError
		if errors.As(err, &de) {
			if de.quad != nil {
				if n, ok := lineOf[canonQuad(*de.quad)]; ok {
					return nil, fmt.Errorf("%w: line %d: %v", ErrBadImport, n, err)
				}
			}
			if n, ok := firstLine[de.tx]; ok {
				return nil, fmt.Errorf("%w: transaction starting on line %d: %v", ErrBadImport, n, err)
			}
		}
		return nil, fmt.Errorf("%w: %v", ErrBadImport, err)
	}
	if err := checkSequence(txs); err != nil {
		return nil, err
	}
	return txs, nil
}

// checkSequence checks that txs have contiguous ids and, when they start at the genesis, that
// each one only refers to what came before it.
func checkSequence(txs []*Tx) error {
	if len(txs) == 0 {
		return nil
	}
	for i := 1; i < len(txs); i++ {
		if txs[i].ID != txs[i-1].ID+1 {
			return fmt.Errorf("%w: transaction ids jump from %d to %d; an export holds contiguous transactions", ErrBadImport, txs[i-1].ID, txs[i].ID)
		}
	}
	if txs[0].ID != 1 {
		return nil
	}
	c := newChain()
	for _, tx := range txs {
		if err := c.check(tx); err != nil {
			return fmt.Errorf("%w: %v", ErrBadImport, err)
		}
		c.add(tx)
	}
	return nil
}

// parseLine parses one N-Quad that must be in a transaction graph.
func parseLine(s string) (q quad.Quad, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot parse N-Quad: %v", r)
		}
	}()
	if !utf8.ValidString(s) {
		return q, errors.New("not valid UTF-8")
	}
	q, err = nquads.Parse(s)
	if err != nil {
		return q, fmt.Errorf("cannot parse N-Quad: %v", err)
	}
	if !q.IsValid() {
		return q, errors.New("incomplete N-Quad: want <subject> <predicate> object <graph> .")
	}
	if q.Label == nil {
		return q, fmt.Errorf("quad has no graph; every mql quad names its transaction as <%sN>", prefTx)
	}
	if _, ok := parseTxIRI(q.Label); !ok {
		return q, fmt.Errorf("graph %s is not a transaction <%sN>", show(q.Label), prefTx)
	}
	return q, nil
}
