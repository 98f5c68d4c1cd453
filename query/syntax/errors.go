package syntax

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrSyntax is matched (with errors.Is) by every error that Parse, ParseStmt
// and the other parsing functions of this package return: lexical errors,
// grammar errors and the range checks made while building the AST.
var ErrSyntax = errors.New("syntax error")

// Limits on the input, checked with a positioned error instead of a panic or
// an unbounded allocation.
const (
	// MaxStmtBytes is the largest source text one statement may span.
	MaxStmtBytes = 1 << 20
	// MaxStringBytes is the largest string literal, quotes and escapes included.
	MaxStringBytes = 1 << 20
	// maxErrors is how many errors Parse reports before giving up.
	maxErrors = 10
)

// Position is a place in the source: the file name given to Parse, the byte
// offset from the start (0-based), the line (1-based) and the column (1-based,
// counted in Unicode code points).
type Position struct {
	Filename string
	Offset   int
	Line     int
	Column   int
}

// IsValid reports whether the position has line information.
func (p Position) IsValid() bool { return p.Line > 0 }

// String formats the position as "name:line:col", leaving out the name when it
// is empty.
func (p Position) String() string {
	s := fmt.Sprintf("%d:%d", p.Line, p.Column)
	if p.Filename != "" {
		s = p.Filename + ":" + s
	}
	return s
}

// Error is one error in the source, at a position.
type Error struct {
	Pos Position
	Msg string
}

// Error formats the error as "name:line:col: message".
func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// Is makes errors.Is(err, ErrSyntax) true.
func (e *Error) Is(target error) bool { return target == ErrSyntax }

// ErrorList is a list of errors, sorted by position. Parse returns one when it
// finds errors in more than one statement.
type ErrorList []*Error

// Error reports the first error and how many more there are.
func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	var b strings.Builder
	b.WriteString(l[0].Error())
	fmt.Fprintf(&b, " (and %d more errors)", len(l)-1)
	return b.String()
}

// Unwrap returns the errors, so that errors.Is and errors.As look at each.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// Is makes errors.Is(err, ErrSyntax) true.
func (l ErrorList) Is(target error) bool { return target == ErrSyntax && len(l) > 0 }

// Err returns nil for an empty list, the single error for a list of one, and
// the list otherwise.
func (l ErrorList) Err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	return l
}

func (l *ErrorList) add(pos Position, format string, args ...any) {
	*l = append(*l, &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)})
}

func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool { return l[i].Pos.Offset < l[j].Pos.Offset })
}

func errorf(pos Position, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
