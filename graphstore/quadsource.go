package graphstore

// The seam between reading an export and the N-Quads grammar: everything that knows the
// syntax is in this file. An import only needs a stream of quads, each with its line, and a
// position for a syntax error; it checks graphs, grouping and everything mql-specific itself.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/nquads"
)

// quadReader yields the quads of an N-Quads document one at a time.
type quadReader interface {
	// Next returns the next quad, io.EOF at the end, or a syntax error (see syntaxError).
	Next() (quad.Quad, error)
	// Line is the line of the quad Next returned last.
	Line() int
}

func newQuadReader(r io.Reader) quadReader { return &lineReader{br: bufio.NewReader(r)} }

// syntaxError turns an error of a quadReader into an *ImportError that names its position.
func syntaxError(err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return &ImportError{Line: le.line, Msg: le.msg}
	}
	return fmt.Errorf("%w: %w", ErrBadImport, err)
}

// lineReader reads one quad per line with Cayley's N-Quads parser, skipping blank lines and
// # comments.
type lineReader struct {
	br   *bufio.Reader
	line int
}

type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

func (r *lineReader) Line() int { return r.line }

func (r *lineReader) Next() (quad.Quad, error) {
	for {
		s, err := r.br.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return quad.Quad{}, fmt.Errorf("reading line %d: %w", r.line+1, err)
		}
		if s == "" && err != nil {
			return quad.Quad{}, io.EOF
		}
		r.line++
		s = strings.TrimSpace(s)
		if s == "" || s[0] == '#' {
			continue
		}
		q, perr := parseLine(s)
		if perr != nil {
			return quad.Quad{}, &lineError{r.line, perr.Error()}
		}
		return q, nil
	}
}

// parseLine parses one N-Quad.
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
	if q.Subject == nil || q.Predicate == nil || q.Object == nil {
		return q, errors.New("incomplete N-Quad: want a subject, a predicate, an object and a graph")
	}
	return q, nil
}
