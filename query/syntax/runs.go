package syntax

import (
	"time"

	"github.com/alecthomas/participle/v2/lexer"
)

// This file holds the statements about agent runs: the outcome write, the run and runs reads,
// and the "for run NAME" modifier that makes a read record what it served.

// ---- grammar ----

type outcomeG struct {
	Kw      tok               `parser:"@'outcome' 'run'"`
	Run     tok               `parser:"@Ident"`
	Result  tok               `parser:"@Ident"`
	Clauses []*outcomeClauseG `parser:"@@*"`
}

type outcomeClauseG struct {
	Pos     lexer.Position
	By      tok `parser:"(  'by' @Ident"`
	Because tok `parser:"| 'because' @String )"`
}

type runG struct {
	Kw   tok `parser:"@'run'"`
	Name tok `parser:"@Ident"`
}

type runsG struct {
	Kw      tok             `parser:"@'runs'"`
	By      tok             `parser:"( (?! 'since') @Ident )?"` // "runs since TIME" names no principal
	Clauses []*sinceClauseG `parser:"@@*"`
}

type sinceClauseG struct {
	Pos   lexer.Position
	Since tok `parser:"'since' @Time"`
}

func (*outcomeG) grammarStmt() {}
func (*runG) grammarStmt()     {}
func (*runsG) grammarStmt()    {}

// runWriteNodes and runReadNodes are the statements of this file, for the parser's union.
var (
	runWriteNodes = []stmtNode{&outcomeG{}}
	runReadNodes  = []stmtNode{&runG{}, &runsG{}}
)

// runWriteKeywords and runReadKeywords start the statements of this file.
var (
	runWriteKeywords = []string{"outcome"}
	runReadKeywords  = []string{"run", "runs"}
)

// ---- AST ----

// Run reports one run: what was served to it, what it decided, how it ended: run NAME.
type Run struct {
	Start Position
	Mods  Mods
	Name  string
}

// Runs lists the runs, one line each: runs [NAME] [since TIME].
type Runs struct {
	Start Position
	Mods  Mods
	By    string     // "" for every principal's the reader may see
	Since *time.Time // UTC; nil when absent
}

func (s *Outcome) Pos() Position { return s.Start }
func (s *Run) Pos() Position     { return s.Start }
func (s *Runs) Pos() Position    { return s.Start }

func (*Outcome) stmtNode() {}
func (*Run) stmtNode()     {}
func (*Runs) stmtNode()    {}

func (s *Run) Modifiers() Mods  { return s.Mods }
func (s *Runs) Modifiers() Mods { return s.Mods }

// ---- printing ----

// runSuffix prints "for run NAME" after a read, with its leading space.
func (m Mods) runSuffix() string {
	if m.ForRun == "" {
		return ""
	}
	return " for run " + m.ForRun
}

func (s *Run) String() string { return s.Mods.String() + "run " + s.Name }

func (s *Runs) String() string {
	out := s.Mods.String() + "runs"
	if s.By != "" {
		out += " " + s.By
	}
	if s.Since != nil {
		out += " since " + formatTime(*s.Since)
	}
	return out
}

// ---- conversion ----

// runs converts the statements of this file; nil for any other.
func (c *converter) runs(g stmtNode, mods Mods, start Position) Stmt {
	switch g := g.(type) {
	case *outcomeG:
		s := &Outcome{Start: start, Run: g.Run.Value, Result: g.Result.Value}
		switch s.Result {
		case "succeeded", "failed", "declined":
		default:
			c.failf(g.Result, "expected succeeded, failed or declined after the run's name, found %s", describe(g.Result))
		}
		seen := once{}
		for _, cl := range g.Clauses {
			switch {
			case present(cl.By):
				c.once(seen, "by", cl.Pos)
				s.By = cl.By.Value
			case present(cl.Because):
				c.once(seen, "because", cl.Pos)
				s.Because = c.str(cl.Because)
			}
		}
		return s
	case *runG:
		return &Run{Start: start, Mods: mods, Name: g.Name.Value}
	case *runsG:
		s := &Runs{Start: start, Mods: mods, By: g.By.Value}
		seen := once{}
		for _, cl := range g.Clauses {
			c.once(seen, "since", cl.Pos)
			t := c.time(cl.Since)
			s.Since = &t
		}
		return s
	}
	return nil
}

// servesClaims reports whether a read serves claims or artifacts, and so may be made for a run.
func servesClaims(kw string) bool {
	switch kw {
	case "live", "find", "why", "revoked-by", "impact", "history", "conflicts", "beliefs", "context", "search":
		return true
	}
	return false
}

// cutForRun takes "for run NAME" off the end of a statement's tokens: it returns the tokens
// before it, the run's name and the index of "for", or toks and "" when there is none.
func cutForRun(toks []tok) ([]tok, string, int) {
	n := len(toks)
	if n >= 4 && toks[n-3].Type == tokIdent && toks[n-3].Value == "for" &&
		toks[n-2].Type == tokIdent && toks[n-2].Value == "run" && toks[n-1].Type == tokIdent {
		return toks[:n-3], toks[n-1].Value, n - 3
	}
	return toks, "", -1
}

// badForRun finds a "for run" after the statement's keyword at k that is not followed by exactly
// one name: it returns the index of what stands where the name should be.
func badForRun(toks []tok, k int) (int, bool) {
	for i := k + 1; i+1 < len(toks); i++ {
		if toks[i].Type != tokIdent || toks[i].Value != "for" || toks[i+1].Type != tokIdent || toks[i+1].Value != "run" {
			continue
		}
		if i+2 >= len(toks) || toks[i+2].Type != tokIdent {
			return i + 2, true
		}
		if i+3 < len(toks) && i+3 == len(toks)-1 {
			// "for run a b": one token too many after the name.
			return i + 3, true
		}
	}
	return 0, false
}

// ForRun makes a read that serves claims (live, find, why, revoked-by, impact, history,
// conflicts, beliefs, context, search) a read for the run named run, as "for run NAME" does, and
// reports whether it did; any other statement is left as it is.
func ForRun(st Stmt, run string) bool {
	var m *Mods
	switch st := st.(type) {
	case *Live:
		m = &st.Mods
	case *Find:
		m = &st.Mods
	case *Why:
		m = &st.Mods
	case *RevokedBy:
		m = &st.Mods
	case *Impact:
		m = &st.Mods
	case *History:
		m = &st.Mods
	case *Conflicts:
		m = &st.Mods
	case *Beliefs:
		m = &st.Mods
	case *Context:
		m = &st.Mods
	case *Search:
		m = &st.Mods
	default:
		return false
	}
	m.ForRun = run
	return true
}
