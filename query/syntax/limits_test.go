package syntax

import (
	"errors"
	"strings"
	"testing"
)

// A statement of more than MaxStmtTokens tokens is a syntax error at its start, and parsing
// goes on after it; one just below the limit parses.
func TestMaxStmtTokens(t *testing.T) {
	subjects := func(n int) string { return strings.TrimSuffix(strings.Repeat("a,", n), ",") }
	// "context" + n names + (n-1) commas = 2n tokens.
	ok := "context " + subjects(MaxStmtTokens/2-1)
	if _, err := ParseStmt("t", ok); err != nil {
		t.Fatalf("a statement of %d tokens: %v", MaxStmtTokens-2, err)
	}
	src := "context " + subjects(MaxStmtTokens/2+1) + "\nstats\n"
	s, err := Parse("t", src)
	var e *Error
	if !errors.Is(err, ErrSyntax) || !errors.As(err, &e) || e.Pos.Line != 1 || e.Pos.Column != 1 || !strings.Contains(e.Msg, "20,000 tokens") {
		t.Fatalf("a statement of %d tokens: %v", MaxStmtTokens+2, err)
	}
	if len(s.Stmts) != 1 {
		t.Fatalf("parsing did not go on after the long statement: %d statements", len(s.Stmts))
	}
}
