package graphstore

// The seam between reading an export and the N-Quads grammar: everything that knows the
// syntax is in this file. An import only needs a stream of quads, each with its line, and a
// position for a syntax error; it checks graphs, grouping and everything mql-specific itself.

import (
	"errors"
	"fmt"
	"io"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/internal/nquads"
)

// quadReader yields the quads of an N-Quads document one at a time.
type quadReader interface {
	// Next returns the next quad, io.EOF at the end, or a syntax error (see syntaxError).
	Next() (quad.Quad, error)
	// Line is the line of the quad Next returned last.
	Line() int
}

// newQuadReader reads r with the strict W3C N-Quads reader: a file is read as its author
// wrote it, or refused with the line and column of the first thing wrong.
func newQuadReader(r io.Reader) quadReader { return nquads.NewReader(r) }

// syntaxError turns an error of a quadReader into an *ImportError that names its position.
func syntaxError(err error) error {
	var se *nquads.SyntaxError
	if errors.As(err, &se) {
		return &ImportError{Line: se.Line, Column: se.Column, Msg: se.Msg}
	}
	return fmt.Errorf("%w: %w", ErrBadImport, err)
}
