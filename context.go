package mql

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
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
func (db *DB) Context(ctx context.Context, subjects []string, budget int) (ContextResult, error) {
	return db.Reader().Context(ctx, subjects, budget)
}

// Context renders compact working-context text within a token budget.
func (r Reader) Context(ctx context.Context, subjects []string, budget int) (ContextResult, error) {
	if r.run != "" {
		stmt := "context " + strings.Join(subjects, ", ")
		if budget > 0 {
			stmt += " budget " + strconv.Itoa(budget)
		}
		return forRun(ctx, r, stmt, func(r Reader) (ContextResult, error) { return r.Context(ctx, subjects, budget) },
			func(c ContextResult) []string { return c.Refs })
	}
	out := ContextResult{Budget: budget, Lines: []string{}, Refs: []string{}}
	if budget < 0 {
		return out, fmt.Errorf("budget %d: %w: give a positive number of tokens, or 0 for none", budget, ErrInvalid)
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
		used := 0
		for i, s := range order {
			line, refs := contextLine(v, s)
			if line == "" {
				if !slices.Contains(subjects, "*") || slices.Contains(subjects, s) {
					out.Empty = append(out.Empty, s)
				}
				continue
			}
			cost := EstimateTokens(line + "\n")
			if budget > 0 {
				// Keep room for the line that says what was left out, unless this is the last subject.
				reserve := 0
				if i < len(order)-1 {
					reserve = EstimateTokens(shortOmittedLine(len(order)-i-1) + "\n")
				}
				if used+cost+reserve > budget {
					out.Omitted = omittedSubjects(v, order[i:])
					break
				}
			}
			used += cost
			out.Lines = append(out.Lines, line)
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
			notice := emptyLine(out.Empty, len(out.Lines) == 0)
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
		return nil
	})
	return out, err
}

func omittedSubjects(v *index.View, subjects []string) []string {
	var out []string
	for _, s := range subjects {
		if l, _ := contextLine(v, s); l != "" {
			out = append(out, s)
		}
	}
	return out
}

// shortOmittedLine is the notice when the names do not fit the budget. A budget too small for
// even this line is exceeded by it: saying that something was left out matters more.
func shortOmittedLine(n int) string {
	return fmt.Sprintf("(%d subjects left out for the token budget)", n)
}

// emptyLine says which subjects asked for have no live claim the reader may see; nothing says
// that none of them has.
func emptyLine(subjects []string, nothing bool) string {
	switch {
	case nothing && len(subjects) == 0:
		return "(nothing visible: no live claims)"
	case nothing:
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
			writeContextClaim(&b, v, subject, k, e, len(refs) == 0)
			refs = append(refs, e.ID.String())
		}
	})
	return b.String(), refs
}

func writeContextClaim(b *strings.Builder, v *index.View, subject string, k record.Key, e *index.ClaimEntry, first bool) {
	if first {
		b.WriteString(subject)
		b.WriteString(": ")
	} else {
		b.WriteString(", ")
	}
	b.WriteString(k.Predicate)
	b.WriteByte('=')
	b.WriteString(e.Value.String())
	b.WriteString(" @")
	b.WriteString(strconv.Itoa(e.ID.Version))
	if c := v.EffectiveConfidence(e); c < 1 {
		b.WriteString(" (")
		b.WriteString(strconv.FormatFloat(c, 'f', 2, 64))
		b.WriteByte(')')
	}
}
