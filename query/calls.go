package query

import (
	"strings"

	"github.com/mql-dev/mql"
)

// The results of library calls made outside the language. A surface that calls mql's Actor
// itself (the MCP server's tools) still answers as the language does: a Result of the
// statement's kind, its Statement the canonical text of the statement that makes the same
// call, so that the result renders as that statement's would. The statement is printed by this
// package's printer, the one place the language is written; a write's By is printed as the spec
// has it, so give it the principal the write is made by.

// ResultOfAssert is the result of the library call Assert(spec) that gave rc. spec is the claim
// as it was asked for, before EmbedClaim gave it a vector: the statement does not echo one.
func ResultOfAssert(spec mql.AssertSpec, rc mql.Receipt) *Result {
	st := &Assert{
		Key: Ref{Subject: spec.Subject, Predicate: spec.Predicate}, Value: valueOf(spec.Value), By: spec.By,
		Confidence: spec.Confidence, Kind: ClaimKind(spec.Kind), SeenBy: spec.SeenBy, Vector: spec.Vector,
	}
	for _, src := range spec.Sources {
		st.Sources = append(st.Sources, Source{ID: src.ID, Excerpt: src.Excerpt, URI: src.URI, Revision: src.Revision})
	}
	if !spec.ValidFrom.IsZero() {
		st.ValidFrom = &spec.ValidFrom
	}
	if !spec.ValidUntil.IsZero() {
		st.ValidUntil = &spec.ValidUntil
	}
	return written(st, rc)
}

// ResultOfRevoke is the result of the library call Revoke(spec) that gave rc.
func ResultOfRevoke(spec mql.RevokeSpec, rc mql.Receipt) *Result {
	st := &Revoke{Claim: claimRef(spec.Ref, spec.Claim), By: spec.By, Because: spec.Because}
	if spec.ReplacedByRef != (mql.ClaimRef{}) || spec.ReplacedBy != "" {
		r := claimRef(spec.ReplacedByRef, spec.ReplacedBy)
		st.ReplacedBy = &r
	}
	return written(st, rc)
}

// ResultOfDerive is the result of the library call Derive(spec) that gave rc.
func ResultOfDerive(spec mql.DeriveSpec, rc mql.Receipt) *Result {
	st := &Derive{Artifact: spec.Artifact, By: spec.By, Confidence: spec.Confidence, SeenBy: spec.SeenBy, Run: spec.Run}
	for _, n := range spec.FromRefs {
		st.From = append(st.From, RefOf(n))
	}
	if len(spec.FromRefs) == 0 {
		for _, f := range spec.From {
			st.From = append(st.From, refText(f))
		}
	}
	return written(st, rc)
}

// ResultOfReview is the result of the library call Review(spec) that gave rc.
func ResultOfReview(spec mql.ReviewSpec, rc mql.Receipt) *Result {
	a := RefOf(spec.Ref)
	if spec.Ref == (mql.ArtifactRef{}) {
		a = refText(spec.Artifact)
	}
	return written(&Review{Artifact: a, By: spec.By, Because: spec.Because}, rc)
}

// ResultOfOutcome is the result of the library call Outcome(spec) that gave rc.
func ResultOfOutcome(spec mql.OutcomeSpec, rc mql.Receipt) *Result {
	return written(&Outcome{Run: spec.Run, Result: string(spec.Result), By: spec.By, Because: spec.Because}, rc)
}

// ResultOfWhy is the result n of the library call WhyRef(ref) by a Reader made ForRun(run) (""
// for none).
func ResultOfWhy(ref mql.NodeRef, run string, n *mql.Node) *Result {
	r := echo(&Why{Node: RefOf(ref), Mods: Mods{ForRun: run}})
	r.Why = n
	return r
}

// ResultOfImpact is the result imp of the library call ImpactRef(ref, depth) (0: no limit).
func ResultOfImpact(ref mql.NodeRef, depth int, imp mql.ImpactResult) *Result {
	st := &Impact{Node: RefOf(ref)}
	if depth != 0 {
		st.Depth = &depth
	}
	r := echo(st)
	r.Impact = &imp
	return r
}

// ResultOfSearch is the result res of the library call Search(text, opts) by a Reader made
// ForRun(run) ("" for none). opts are the options as they were asked for, before EmbedSearch
// gave them a vector: the statement does not echo one.
func ResultOfSearch(text string, opts mql.SearchOptions, run string, res mql.SearchResult) *Result {
	st := &Search{Mods: Mods{ForRun: run}, Text: text, Vector: opts.Vector, Signals: opts.Signals, Limit: opts.Limit, History: opts.History}
	for _, p := range opts.On {
		st.On = append(st.On, patternOf(p))
	}
	r := echo(st)
	r.Search = &res
	return r
}

// ResultOfContext is the result c of the library call Context(subjects, budget) by a Reader
// made ForRun(run) ("" for none).
func ResultOfContext(subjects []string, budget int, run string, c mql.ContextResult) *Result {
	r := echo(&Context{Mods: Mods{ForRun: run}, Subjects: subjects, Budget: budget})
	r.Context = &c
	return r
}

// ResultOfContextFor is the result c of the library call ContextFor(question, budget) by a
// Reader made ForRun(run) ("" for none).
func ResultOfContextFor(question string, budget int, run string, c mql.ContextResult) *Result {
	r := echo(&Context{Mods: Mods{ForRun: run}, Question: &question, Budget: budget})
	r.Context = &c
	return r
}

// written is the result of the write st stands for, which gave rc.
func written(st Stmt, rc mql.Receipt) *Result {
	r := echo(st)
	r.Receipt = &rc
	return r
}

// echo is the result of st with its kind and statement only: the caller adds what was read.
func echo(st Stmt) *Result { return &Result{Kind: KindOf(st), Statement: st.String()} }

// valueOf is v as the language writes it.
func valueOf(v mql.Value) Value {
	switch v.Type {
	case mql.TypeString:
		return Value{Kind: KindString, Str: v.Str}
	case mql.TypeNumber:
		return Value{Kind: KindNumber, Num: v.Num}
	case mql.TypeBool:
		return Value{Kind: KindBool, Bool: v.Bool}
	case mql.TypeTime:
		return Value{Kind: KindTime, Time: v.Time}
	case mql.TypeRef:
		return Value{Kind: KindRef, Ref: refText(v.Str)}
	}
	return Value{}
}

// patternOf is the pattern "Subject.predicate" ("*" for any) as the language holds it.
func patternOf(p string) Pattern {
	unstar := func(s string) string {
		if s == "*" {
			return ""
		}
		return s
	}
	subj, pred, _ := strings.Cut(p, ".")
	return Pattern{Subject: unstar(subj), Predicate: unstar(pred)}
}

// claimRef is the claim a spec names: typed, or else as text.
func claimRef(typed mql.ClaimRef, text string) Ref {
	if typed != (mql.ClaimRef{}) {
		return RefOf(typed)
	}
	return refText(text)
}

// refText is the Ref the library reads text as; text the library does not read as a reference
// is kept as it is, to be printed as it was given.
func refText(text string) Ref {
	n, err := mql.ParseNodeRef(text)
	if err != nil {
		return Ref{Subject: text}
	}
	return RefOf(n)
}
