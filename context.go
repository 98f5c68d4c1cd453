package mql

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/query/syntax"
)

// EstimateTokens is how mql counts tokens for a context budget: one token per four bytes of
// UTF-8, rounded up. That is the usual rule of thumb for English text and code under BPE
// tokenizers; it errs high for plain words and low for dense numbers, so leave headroom.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// Context renders the live claims of the given subjects ("*" for every subject) as compact text
// for a model: one line per subject, each claim with its version so "Subject.predicate@N" is a
// stable reference, and an effective confidence when it is below 1. Lines are added in the order
// asked until the next would pass budget tokens (0: no budget); a last line says what was left
// out, and that line is counted in the budget too.
func (r reads) Context(ctx context.Context, subjects []string, budget int) (ContextResult, error) {
	if r.run != "" {
		stmt := func() syntax.Stmt { return contextStatement(subjects, budget) }
		return forRun(ctx, r, stmt, func(r reads) (ContextResult, error) { return r.Context(ctx, subjects, budget) },
			func(c ContextResult) []string { return c.Refs })
	}
	out := ContextResult{Budget: budget, Lines: []string{}, Refs: []string{}}
	if err := checkBudget(budget); err != nil {
		return out, err
	}
	if len(subjects) == 0 {
		return out, fmt.Errorf("context: %w: name the subjects, or * for all", ErrInvalid)
	}
	subjects = nfcAll(subjects)
	for _, s := range subjects {
		if s != "*" {
			if err := checkName("subject", s); err != nil {
				return out, err
			}
		}
	}
	err := r.view(ctx, func(v *index.View) error {
		var order []string
		seen := map[string]bool{}
		for _, s := range subjects {
			list := []string{s}
			if s == "*" {
				list = v.Subjects()
			}
			for _, x := range list {
				if !seen[x] {
					seen[x] = true
					order = append(order, x)
				}
			}
		}
		line := func(s string) (string, []string) { return contextLine(v, s) }
		named := func(s string) bool { return !slices.Contains(subjects, "*") || slices.Contains(subjects, s) }
		fillContext(&out, order, line, named, "(nothing visible: no live claims)")
		return nil
	})
	return out, err
}

// ContextFor renders, as Context does, the live claims that best match question: the
// claims Search finds for it (of those the reader may see, ranked as Search ranks them, the
// MaxSearchLimit best at most), one line per subject with that subject's matching claims best
// first, the subjects in the order of their best claim. Lines are added until the next would
// pass budget tokens (0: no budget); a last line names the matching subjects left out. The
// question is refused as Search refuses its text.
func (r reads) ContextFor(ctx context.Context, question string, budget int) (ContextResult, error) {
	if r.run != "" {
		stmt := func() syntax.Stmt { return &syntax.Context{Question: &question, Budget: budget} }
		return forRun(ctx, r, stmt, func(r reads) (ContextResult, error) { return r.ContextFor(ctx, question, budget) },
			func(c ContextResult) []string { return c.Refs })
	}
	out := ContextResult{Question: question, Budget: budget, Lines: []string{}, Refs: []string{}}
	if err := checkBudget(budget); err != nil {
		return out, err
	}
	// A question is text: a search may also go by a vector alone, a question may not.
	if _, err := searchTerms(question); err != nil {
		return out, err
	}
	// The lines are made of the search's hits alone, read in one view of the store: they are
	// what the reader saw as of one transaction, the one a run's record names, whatever is
	// written meanwhile.
	res, err := r.Search(ctx, question, SearchOptions{Limit: MaxSearchLimit})
	if err != nil {
		return out, err
	}
	var order []string
	hits := map[string][]SearchHit{}
	for _, h := range res.Hits {
		if hits[h.Subject] == nil {
			order = append(order, h.Subject)
		}
		hits[h.Subject] = append(hits[h.Subject], h)
	}
	// Every subject found has a line, so named is never asked.
	fillContext(&out, order, func(s string) (string, []string) { return hitsLine(s, hits[s]) }, nil,
		"(nothing visible: no live claims match the question)")
	return out, nil
}

func checkBudget(budget int) error {
	if budget < 0 {
		return fmt.Errorf("budget %d: %w: give a positive number of tokens, or 0 for none", budget, ErrInvalid)
	}
	return nil
}

// fillContext adds to out the lines of subjects, in order, until the next would pass
// out.Budget, and writes its text. line gives a subject's line and the references it holds
// ("" when it has none the reader may see); named says whether such a subject is named in the
// text as having none; none is the notice when no subject has a line.
func fillContext(out *ContextResult, subjects []string, line func(string) (string, []string), named func(string) bool, none string) {
	budget := out.Budget
	used := 0
	for i, s := range subjects {
		text, refs := line(s)
		if text == "" {
			if named(s) {
				out.Empty = append(out.Empty, s)
			}
			continue
		}
		cost := EstimateTokens(text + "\n")
		if budget > 0 {
			// Keep room for the line that says what was left out, unless this is the last subject.
			reserve := 0
			if i < len(subjects)-1 {
				reserve = EstimateTokens(shortOmittedLine(len(subjects)-i-1) + "\n")
			}
			if used+cost+reserve > budget {
				for _, s := range subjects[i:] {
					if l, _ := line(s); l != "" {
						out.Omitted = append(out.Omitted, s)
					}
				}
				break
			}
		}
		used += cost
		out.Lines = append(out.Lines, text)
		out.Refs = append(out.Refs, refs...)
	}
	text := strings.Join(out.Lines, "\n")
	if len(out.Lines) > 0 {
		text += "\n"
	}
	// Saying that nothing could be shown matters more than the budget when nothing is;
	// otherwise the names of the empty subjects are added when they fit. (The same text
	// whether the store holds claims the reader may not see or none at all.)
	if len(out.Empty) > 0 || len(out.Lines) == 0 && len(out.Omitted) == 0 {
		notice := none
		if len(out.Empty) > 0 {
			notice = emptyLine(out.Empty, len(out.Lines) == 0)
		}
		if len(out.Lines) == 0 || budget == 0 || EstimateTokens(text+notice+"\n") <= budget {
			text += notice + "\n"
		}
	}
	if len(out.Omitted) > 0 {
		notice := omittedLine(out.Omitted)
		if budget > 0 && EstimateTokens(text+notice+"\n") > budget {
			notice = shortOmittedLine(len(out.Omitted))
		}
		text += notice + "\n"
	}
	out.Text = text
	out.Tokens = EstimateTokens(text)
}

// shortOmittedLine is the notice when the names do not fit the budget. A budget too small for
// even this line is exceeded by it: saying that something was left out matters more.
func shortOmittedLine(n int) string {
	return fmt.Sprintf("(%d subjects left out for the token budget)", n)
}

// emptyLine says which subjects asked for have no live claim the reader may see; nothing says
// that no subject has.
func emptyLine(subjects []string, nothing bool) string {
	if nothing {
		return fmt.Sprintf("(nothing visible: no live claims of %s)", strings.Join(subjects, ", "))
	}
	return fmt.Sprintf("(no live claims of %s)", strings.Join(subjects, ", "))
}

func omittedLine(subjects []string) string {
	return fmt.Sprintf("(left out for the token budget: %d subjects: %s)", len(subjects), strings.Join(subjects, ", "))
}

// contextLine is "Klarveld: price_per_seat=89 @2, region="EU" @1, soc2=true @1", or "" if the
// subject has no live claim the reader may see.
func contextLine(v *index.View, subject string) (string, []string) {
	var b strings.Builder
	var refs []string
	v.EachLiveOfSubject(subject, func(k record.Key, live []*index.ClaimEntry) {
		for _, e := range live {
			writeContextClaim(&b, subject, k.Predicate, e.Value, e.ID.Version, v.EffectiveConfidence(e), len(refs) == 0)
			refs = append(refs, e.ID.String())
		}
	})
	return b.String(), refs
}

// hitsLine is contextLine for the claims of subject a search found, in their order.
func hitsLine(subject string, hits []SearchHit) (string, []string) {
	var b strings.Builder
	refs := make([]string, len(hits))
	for i, h := range hits {
		writeContextClaim(&b, subject, h.Predicate, h.Value, h.Version, h.Effective, i == 0)
		refs[i] = h.Ref
	}
	return b.String(), refs
}

func writeContextClaim(b *strings.Builder, subject, predicate string, value Value, version int, confidence float64, first bool) {
	if first {
		b.WriteString(subject)
		b.WriteString(": ")
	} else {
		b.WriteString(", ")
	}
	b.WriteString(predicate)
	b.WriteByte('=')
	b.WriteString(value.String())
	b.WriteString(" @")
	b.WriteString(strconv.Itoa(version))
	if confidence < 1 {
		b.WriteString(" (")
		b.WriteString(strconv.FormatFloat(confidence, 'f', 2, 64))
		b.WriteByte(')')
	}
}
