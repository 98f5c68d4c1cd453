package mql

import (
	"strings"

	"github.com/mql-dev/mql/query/syntax"
)

// A read made for a run records the statement it answered, so that an auditor can read it
// again. The statement is built as the language's AST (package syntax) and printed by its
// printer, the one every surface prints with: what a run's record says is canonical source
// that parses back to the read it was. It is built after the read succeeded, from the
// arguments as given.

// syntaxPattern is a pattern ("Klarveld", "Klarveld.*", "*.soc2", "*") as the language holds it.
func syntaxPattern(p string) syntax.Pattern {
	subj, pred, _ := strings.Cut(p, ".")
	return syntax.Pattern{Subject: notStar(subj), Predicate: notStar(pred)}
}

// notStar is "" for "*", which the language's patterns hold as "" (any).
func notStar(s string) string {
	if s == "*" {
		return ""
	}
	return s
}

// syntaxRef is n as the language names a claim or an artifact; nil gives the zero Ref.
func syntaxRef(n NodeRef) syntax.Ref {
	switch n := n.(type) {
	case ClaimRef:
		return syntax.Ref{Subject: n.Subject, Predicate: n.Predicate, Version: n.Version}
	case ArtifactRef:
		return syntax.Ref{Subject: n.Name, Version: n.Version}
	}
	return syntax.Ref{}
}

// stmtRef is the reference a read was given, as the language names it. The read succeeded, so
// the reference is one.
func (a refArg) stmtRef() syntax.Ref {
	n, _ := a.node()
	return syntaxRef(n)
}

// syntaxValue is v as a literal of the language. A reference value names a subject, an
// artifact or a claim; one a filter was given that names none (filters do not check their
// values) is kept as written.
func syntaxValue(v Value) syntax.Value {
	switch v.Type {
	case TypeString:
		return syntax.Value{Kind: syntax.KindString, Str: v.Str}
	case TypeNumber:
		return syntax.Value{Kind: syntax.KindNumber, Num: v.Num}
	case TypeBool:
		return syntax.Value{Kind: syntax.KindBool, Bool: v.Bool}
	case TypeTime:
		return syntax.Value{Kind: syntax.KindTime, Time: v.Time.UTC()}
	case TypeRef:
		if n, err := ParseNodeRef(v.Str); err == nil {
			return syntax.Value{Kind: syntax.KindRef, Ref: syntaxRef(n)}
		}
		return syntax.Value{Kind: syntax.KindRef, Ref: syntax.Ref{Subject: v.Str}}
	}
	return syntax.Value{}
}

// varName is a variable of a find ("?v") as the language's AST holds it, without its '?'.
func varName(v string) string { return strings.TrimPrefix(v, "?") }

// liveStatement is live PATTERN [where value OP V {, value OP V}].
func liveStatement(pat string, where []Filter) syntax.Stmt {
	s := &syntax.Live{Pattern: syntaxPattern(pat)}
	for _, f := range where {
		s.Where = append(s.Where, syntax.Filter{Op: syntax.Op(f.Op), Value: syntaxValue(f.Value)})
	}
	return s
}

// statement is find ?a {, ?b} where COND {, COND} [order by ?x [desc] {, …}] [limit N].
func (q FindQuery) statement() syntax.Stmt {
	s := &syntax.Find{Limit: q.Limit}
	for _, v := range q.Select {
		s.Vars = append(s.Vars, varName(v))
	}
	for _, c := range q.Where {
		sc := syntax.Cond{Predicate: c.Predicate, Op: syntax.Op(c.Op)}
		if c.Subject.Var != "" {
			sc.SubjectVar = varName(c.Subject.Var)
		} else {
			sc.Subject = c.Subject.Value.Str // a subject's name, as a Ref or a String value
		}
		if c.Object.Var != "" {
			sc.ObjectVar = varName(c.Object.Var)
		} else {
			sc.Object = syntaxValue(c.Object.Value)
		}
		s.Where = append(s.Where, sc)
	}
	for _, o := range q.OrderBy {
		s.OrderBy = append(s.OrderBy, syntax.OrderKey{Var: varName(o.Var), Desc: o.Desc})
	}
	return s
}

// searchStatement is search TEXT [on PATTERN {, PATTERN}] [vector V] [signals S {, S}]
// [limit N] [history].
func searchStatement(text string, opts SearchOptions) syntax.Stmt {
	s := &syntax.Search{Text: text, Vector: opts.Vector, Signals: opts.Signals, Limit: opts.Limit, History: opts.History}
	for _, p := range opts.On {
		s.On = append(s.On, syntaxPattern(p))
	}
	return s
}

// contextStatement is context SUBJECT {, SUBJECT} [budget N], or context * [budget N].
func contextStatement(subjects []string, budget int) syntax.Stmt {
	if len(subjects) == 1 && subjects[0] == "*" {
		return &syntax.Context{All: true, Budget: budget}
	}
	return &syntax.Context{Subjects: subjects, Budget: budget}
}
