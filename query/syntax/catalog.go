package syntax

import (
	"strconv"
	"strings"
)

// This file holds two groups of statements kept apart from the rest of the grammar: the
// catalogue reads, which list what a store holds (principals, grants, subjects, predicates,
// artifacts, sources, describe), and transaction control (begin, commit, rollback).

// ---- grammar ----

// globG is a name pattern: names and "*" written together, or a string (for source ids).
type globG struct {
	Parts []*globPartG `parser:"@@+"`
}

type globPartG struct {
	Tok tok `parser:"@( Ident | '*' | String )"`
}

type principalsG struct {
	Kw      tok    `parser:"@'principals'"`
	Pattern *globG `parser:"@@?"`
}

type grantsG struct {
	Kw   tok `parser:"@'grants'"`
	Name tok `parser:"( @Ident )?"`
}

type subjectsG struct {
	Kw      tok    `parser:"@'subjects'"`
	Pattern *globG `parser:"@@?"`
}

type predicatesG struct {
	Kw      tok    `parser:"@'predicates'"`
	Pattern *globG `parser:"@@?"`
}

type artifactsG struct {
	Kw      tok    `parser:"@'artifacts'"`
	Pattern *globG `parser:"@@?"`
}

type sourcesG struct {
	Kw      tok    `parser:"@'sources'"`
	Pattern *globG `parser:"@@?"`
}

type describeG struct {
	Kw   tok `parser:"@'describe'"`
	Name tok `parser:"@Ident"`
}

type beginG struct {
	Kw tok `parser:"@'begin'"`
}

type commitG struct {
	Kw tok `parser:"@'commit'"`
}

type rollbackG struct {
	Kw tok `parser:"@'rollback'"`
}

func (*principalsG) grammarStmt() {}
func (*grantsG) grammarStmt()     {}
func (*subjectsG) grammarStmt()   {}
func (*predicatesG) grammarStmt() {}
func (*artifactsG) grammarStmt()  {}
func (*sourcesG) grammarStmt()    {}
func (*describeG) grammarStmt()   {}
func (*beginG) grammarStmt()      {}
func (*commitG) grammarStmt()     {}
func (*rollbackG) grammarStmt()   {}

// catalogNodes and controlNodes are the statements of this file, for the parser's union.
var (
	catalogNodes = []stmtNode{&principalsG{}, &grantsG{}, &subjectsG{}, &predicatesG{}, &artifactsG{}, &sourcesG{}, &describeG{}}
	controlNodes = []stmtNode{&beginG{}, &commitG{}, &rollbackG{}}
)

// catalogKeywords and controlKeywords start the statements of this file.
var (
	catalogKeywords = []string{"principals", "grants", "subjects", "predicates", "artifacts", "sources", "describe"}
	controlKeywords = []string{"begin", "commit", "rollback"}
)

// ---- AST ----

// Principals lists the principals, with the rights each holds: principals [PATTERN].
type Principals struct {
	Start   Position
	Mods    Mods
	Pattern string // a name pattern ("*" matches any run of characters); "" for every one
}

// Grants lists the grants, or those a principal holds: grants [NAME].
type Grants struct {
	Start   Position
	Mods    Mods
	Grantee string // "" for every grant
}

// Subjects lists the subjects with a claim the reader may see: subjects [PATTERN].
type Subjects struct {
	Start   Position
	Mods    Mods
	Pattern string
}

// Predicates lists the predicates, each with its value type, half-life and counts of claims:
// predicates [PATTERN].
type Predicates struct {
	Start   Position
	Mods    Mods
	Pattern string
}

// Artifacts lists the artifacts: artifacts [PATTERN].
type Artifacts struct {
	Start   Position
	Mods    Mods
	Pattern string
}

// Sources lists the sources cited by claims the reader may see: sources [PATTERN].
type Sources struct {
	Start   Position
	Mods    Mods
	Pattern string
}

// Describe says what a name is in the store (a principal, a subject, a predicate, an
// artifact) and what it holds: describe NAME.
type Describe struct {
	Start Position
	Mods  Mods
	Name  string
}

// Begin starts a transaction: the statements up to commit are applied together, as one
// transaction, or not at all.
type Begin struct{ Start Position }

// Commit ends a transaction, applying it.
type Commit struct{ Start Position }

// Rollback ends a transaction, discarding it.
type Rollback struct{ Start Position }

func (s *Principals) Pos() Position { return s.Start }
func (s *Grants) Pos() Position     { return s.Start }
func (s *Subjects) Pos() Position   { return s.Start }
func (s *Predicates) Pos() Position { return s.Start }
func (s *Artifacts) Pos() Position  { return s.Start }
func (s *Sources) Pos() Position    { return s.Start }
func (s *Describe) Pos() Position   { return s.Start }
func (s *Begin) Pos() Position      { return s.Start }
func (s *Commit) Pos() Position     { return s.Start }
func (s *Rollback) Pos() Position   { return s.Start }

func (*Principals) stmtNode() {}
func (*Grants) stmtNode()     {}
func (*Subjects) stmtNode()   {}
func (*Predicates) stmtNode() {}
func (*Artifacts) stmtNode()  {}
func (*Sources) stmtNode()    {}
func (*Describe) stmtNode()   {}
func (*Begin) stmtNode()      {}
func (*Commit) stmtNode()     {}
func (*Rollback) stmtNode()   {}

func (s *Principals) Modifiers() Mods { return s.Mods }
func (s *Grants) Modifiers() Mods     { return s.Mods }
func (s *Subjects) Modifiers() Mods   { return s.Mods }
func (s *Predicates) Modifiers() Mods { return s.Mods }
func (s *Artifacts) Modifiers() Mods  { return s.Mods }
func (s *Sources) Modifiers() Mods    { return s.Mods }
func (s *Describe) Modifiers() Mods   { return s.Mods }

// ---- printing ----

func withPattern(head, pattern string) string {
	if pattern == "" {
		return head
	}
	return head + " " + globSource(pattern)
}

func (s *Principals) String() string { return s.Mods.String() + withPattern("principals", s.Pattern) }
func (s *Grants) String() string     { return s.Mods.String() + withPattern("grants", s.Grantee) }
func (s *Subjects) String() string   { return s.Mods.String() + withPattern("subjects", s.Pattern) }
func (s *Predicates) String() string { return s.Mods.String() + withPattern("predicates", s.Pattern) }
func (s *Artifacts) String() string  { return s.Mods.String() + withPattern("artifacts", s.Pattern) }
func (s *Sources) String() string    { return s.Mods.String() + withPattern("sources", s.Pattern) }
func (s *Describe) String() string   { return s.Mods.String() + "describe " + s.Name }
func (s *Begin) String() string      { return "begin" }
func (s *Commit) String() string     { return "commit" }
func (s *Rollback) String() string   { return "rollback" }

// globSource prints a pattern as written in the language: bare when it lexes back as names
// and "*", else as a string.
func globSource(p string) string {
	if p == "" || isNameGlob(p) {
		return p
	}
	return strconv.Quote(p)
}

// isNameGlob reports whether p is names and "*" that the lexer reads back as one pattern: no
// name runs into the next one.
func isNameGlob(p string) bool {
	for _, part := range strings.Split(p, "*") {
		if part != "" && !isIdent(part) {
			return false
		}
	}
	return !strings.Contains(p, "**")
}

// isIdent reports whether s lexes as one name and nothing else: no space around it.
func isIdent(s string) bool {
	toks, errs, _ := scan("", s, false, 1)
	return len(errs) == 0 && len(toks) == 2 && toks[0].Type == tokIdent && toks[0].Value == s
}

// ---- conversion ----

// catalog converts the statements of this file; nil for any other.
func (c *converter) catalog(g stmtNode, mods Mods, start Position) Stmt {
	switch g := g.(type) {
	case *principalsG:
		return &Principals{Start: start, Mods: mods, Pattern: c.glob(g.Pattern)}
	case *grantsG:
		return &Grants{Start: start, Mods: mods, Grantee: g.Name.Value}
	case *subjectsG:
		return &Subjects{Start: start, Mods: mods, Pattern: c.glob(g.Pattern)}
	case *predicatesG:
		return &Predicates{Start: start, Mods: mods, Pattern: c.glob(g.Pattern)}
	case *artifactsG:
		return &Artifacts{Start: start, Mods: mods, Pattern: c.glob(g.Pattern)}
	case *sourcesG:
		return &Sources{Start: start, Mods: mods, Pattern: c.glob(g.Pattern)}
	case *describeG:
		return &Describe{Start: start, Mods: mods, Name: g.Name.Value}
	case *beginG:
		return &Begin{Start: start}
	case *commitG:
		return &Commit{Start: start}
	case *rollbackG:
		return &Rollback{Start: start}
	}
	return nil
}

// glob joins a pattern's parts, which must touch: "plan:*", "*vendor*", "Kl*". A string is a
// pattern on its own ("src:Klarveld:*").
func (c *converter) glob(g *globG) string {
	if g == nil {
		return ""
	}
	var b strings.Builder
	for i, p := range g.Parts {
		t := p.Tok
		if i > 0 {
			prev := g.Parts[i-1].Tok
			if t.Type == tokString || prev.Type == tokString {
				c.failf(t, "a pattern is one string, or names and * written together; found %s after it", describe(t))
				return ""
			}
			if prev.Pos.Offset+len(prev.Value) != t.Pos.Offset {
				c.failf(t, `a pattern is names and * written together, without spaces ("Kl*", "plan:*"); found %s after a space`, describe(t))
				return ""
			}
		}
		if t.Type == tokString {
			b.WriteString(c.str(t))
			continue
		}
		b.WriteString(t.Value)
	}
	return b.String()
}
