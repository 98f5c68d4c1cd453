package graphstore

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// ImportError is an import refused for what the file holds: where (the line, and the column
// when the parser gives one; no line when the problem is the file as a whole, such as two live
// claims of a key) and why. It wraps ErrBadImport.
type ImportError struct {
	Line, Column int
	Tx           record.TxID // the transaction concerned, 0 if none
	Kind         string      // the kind of problem the check found (Problem.Kind); "" for the syntax
	Msg          string
}

func (e *ImportError) Error() string {
	var b strings.Builder
	b.WriteString(ErrBadImport.Error())
	b.WriteString(": ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ", column %d", e.Column)
		}
		b.WriteString(": ")
	}
	if e.Kind != "" {
		b.WriteString(e.Kind)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

func (e *ImportError) Unwrap() error { return ErrBadImport }

// txGroup is the quads of one transaction, as read from a file, with the line of each.
type txGroup struct {
	id    record.TxID
	quads []quad.Quad
	lines []int
}

// lineOf is the line of q (compared in canonical form); the transaction's first line if it is
// not in the group.
func (g *txGroup) lineOf(q quad.Quad) int {
	q = codec.CanonQuad(q)
	for i := range g.quads {
		if codec.CanonQuad(g.quads[i]) == q {
			return g.lines[i]
		}
	}
	return g.lines[0]
}

// lineOfSubject is the line of the first quad about s; the transaction's first line if none.
func (g *txGroup) lineOfSubject(s quad.IRI) int {
	for i := range g.quads {
		if g.quads[i].Subject == s {
			return g.lines[i]
		}
	}
	return g.lines[0]
}

// txReader groups a stream of quads into transactions. An exporter writes each transaction's
// quads together in its graph, transactions in id order; the reader holds one transaction at
// a time and refuses a file that does otherwise, with the line where it does.
type txReader struct {
	src      quadReader
	start    record.TxID // the id the first transaction must have; 0: any
	last     record.TxID // the id of the last transaction read
	ahead    quad.Quad   // the first quad of the next transaction, read with the last one's (a value: a pointer to it made every quad read escape)
	aheadAt  int
	hasAhead bool
	finished bool
	size     int // the last transaction's quads
}

func newTxReader(src quadReader, start record.TxID) *txReader {
	return &txReader{src: src, start: start}
}

// read returns the next transaction's quads, io.EOF after the last, or an *ImportError.
func (r *txReader) read() (*txGroup, error) {
	var g *txGroup
	for {
		var q quad.Quad
		var line int
		if r.hasAhead {
			q, line, r.ahead, r.hasAhead = r.ahead, r.aheadAt, quad.Quad{}, false
		} else {
			if r.finished {
				break
			}
			var err error
			q, err = r.src.Next()
			if errors.Is(err, io.EOF) {
				r.finished = true
				break
			}
			if err != nil {
				return nil, syntaxError(err)
			}
			line = r.src.Line()
		}
		id, err := txLabel(q)
		if err != nil {
			return nil, &ImportError{Line: line, Msg: err.Error()}
		}
		if g != nil && id != g.id {
			r.ahead, r.aheadAt, r.hasAhead = q, line, true // the next transaction starts here
			break
		}
		if g == nil {
			switch {
			case r.last == 0 && r.start != 0 && id != r.start:
				return nil, &ImportError{Line: line, Tx: id, Msg: fmt.Sprintf("the file starts with tx %d; an export starts with the genesis, tx %d", id, r.start)}
			case r.last != 0 && id <= r.last:
				return nil, &ImportError{Line: line, Tx: id, Msg: fmt.Sprintf("a quad of tx %d after the quads of tx %d: each transaction's quads must be together, transactions in order, as an export writes them", id, r.last)}
			case r.last != 0 && id != r.last+1:
				return nil, &ImportError{Line: line, Tx: id, Msg: fmt.Sprintf("transaction ids jump from %d to %d; an export holds contiguous transactions", r.last, id)}
			}
			// Sized as the last one was: a bulk load's transactions are alike, and growing the
			// slices of one of 16,000 quads was a tenth of the reading goroutine's time.
			g = &txGroup{id: id, quads: make([]quad.Quad, 0, r.size), lines: make([]int, 0, r.size)}
		}
		g.quads = append(g.quads, q)
		g.lines = append(g.lines, line)
	}
	if g == nil {
		return nil, io.EOF
	}
	r.last, r.size = g.id, len(g.quads)
	return g, nil
}

// txLabel returns the transaction a quad's graph names.
func txLabel(q quad.Quad) (record.TxID, error) {
	if q.Label == nil {
		return 0, fmt.Errorf("quad has no graph; every mql quad names its transaction as <%sN>", codec.PrefTx)
	}
	id, ok := codec.ParseTxIRI(q.Label)
	if !ok {
		return 0, fmt.Errorf("graph %s is not a transaction <%sN>", codec.Show(q.Label), codec.PrefTx)
	}
	return id, nil
}
