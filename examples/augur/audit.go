package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mql-dev/mql"
)

// secrets is everything only the engine may see, collected as the owner.
type secrets struct {
	refs      []string // every engine claim version, S.p@N
	keys      []string // S.p
	preds     []string
	subjects  []string // subjects only the engine has claims about
	tokens    []string // strings that must never appear in what the architect reads
	claims    int
	sources   int
	artifacts []string
}

func collectSecrets(ctx context.Context, db *mql.DB) (secrets, error) {
	var s secrets
	owner := db.Reader()
	live, err := owner.Live(ctx, "*")
	if err != nil {
		return s, err
	}
	bySubject := map[string][]string{} // subject → asserters of its live claims
	srcs := map[string]bool{}
	for _, c := range live {
		bySubject[c.Subject] = append(bySubject[c.Subject], c.By)
		if c.By != engine {
			continue
		}
		key := c.Subject + "." + c.Predicate
		s.keys = append(s.keys, key)
		h, err := owner.History(ctx, key)
		if err != nil {
			return s, err
		}
		for _, v := range h.Claims {
			s.refs = append(s.refs, v.Ref)
			s.tokens = append(s.tokens, v.Ref)
			if v.Value.Type == mql.TypeString {
				s.tokens = append(s.tokens, v.Value.Str)
			}
			for _, src := range v.Sources {
				if !srcs[src.ID] {
					srcs[src.ID] = true
					s.tokens = append(s.tokens, src.ID, src.Excerpt)
				}
			}
		}
		if !slices.Contains(s.preds, c.Predicate) {
			s.preds = append(s.preds, c.Predicate)
			s.tokens = append(s.tokens, c.Predicate)
		}
	}
	s.claims, s.sources = len(s.refs), len(srcs)
	for subj, by := range bySubject {
		if !slices.ContainsFunc(by, func(p string) bool { return p != engine }) {
			s.subjects = append(s.subjects, subj)
			s.tokens = append(s.tokens, `"`+subj+`"`, subj+":", subj+".")
		}
	}
	slices.Sort(s.subjects)
	for _, p := range players {
		name := "engine:threat:" + p.name
		if _, err := owner.History(ctx, name); err == nil {
			s.artifacts = append(s.artifacts, name)
			s.tokens = append(s.tokens, name)
		} else if !errors.Is(err, mql.ErrNotFound) {
			return s, err
		}
	}
	return s, nil
}

// leaks counts occurrences of engine-only strings in v, rendered as JSON.
func (s secrets) leaks(v any) int {
	raw, _ := json.Marshal(v)
	return s.count(string(raw))
}

func (s secrets) count(text string) int {
	n := 0
	for _, t := range s.tokens {
		if t != "" {
			n += strings.Count(text, t)
		}
	}
	return n
}

// hidden turns "not found" into 0 items seen, and success into 1 plus what the answer shows.
func (s secrets) hidden(v any, err error) (int, error) {
	switch {
	case errors.Is(err, mql.ErrNotFound):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return 1 + s.leaks(v), nil
}

// hiddenAll is hidden summed over what read answers for each of refs.
func (s secrets) hiddenAll(refs []string, read func(ref string) (any, error)) (int, error) {
	n := 0
	for _, ref := range refs {
		k, err := s.hidden(read(ref))
		if err != nil {
			return 0, err
		}
		n += k
	}
	return n, nil
}

// probe is hiddenAll of the engine's refs, and what leaks from read of each of architectRefs
// (as as gives it: itself or its key), found or not.
func (s secrets) probe(ctx context.Context, db *mql.DB, engine []string, as func(ref string) string, read func(ref string) (any, error)) (int, error) {
	n, err := s.hiddenAll(engine, read)
	if err != nil {
		return 0, err
	}
	refs, err := architectRefs(ctx, db)
	if err != nil {
		return 0, err
	}
	for _, ref := range refs {
		v, err := read(as(ref))
		if err != nil && !errors.Is(err, mql.ErrNotFound) {
			return 0, err
		}
		n += s.leaks(v)
	}
	return n, nil
}

func asIs(ref string) string { return ref }

// unversioned is ref without its @version: a key, or an artifact's name.
func unversioned(ref string) string { return strings.Split(ref, "@")[0] }

type auditRow struct {
	statement string
	architect int
	owner     int
	what      string
}

type check struct {
	statement, what string
	count           func(ctx context.Context, r mql.Reader, s secrets, db *mql.DB) (int, error)
}

var checks = []check{
	{"live", "live *, each engine key, *.pred, each engine-only subject", func(ctx context.Context, r mql.Reader, s secrets, _ *mql.DB) (int, error) {
		n := 0
		pats := append([]string{"*"}, s.keys...)
		for _, p := range s.preds {
			pats = append(pats, "*."+p)
		}
		pats = append(pats, s.subjects...)
		for _, p := range pats {
			cs, err := r.Live(ctx, p)
			if err != nil {
				return 0, err
			}
			n += s.leaks(cs)
		}
		return n, nil
	}},
	{"find", "?s.pred = ?v for each engine predicate (rows)", func(ctx context.Context, r mql.Reader, s secrets, _ *mql.DB) (int, error) {
		n := 0
		for _, p := range s.preds {
			res, err := r.Find(ctx, mql.FindQuery{Select: []string{"?s", "?v"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: p, Op: "=", Object: mql.Var("v")}}})
			if err != nil {
				return 0, err
			}
			n += len(res.Rows)
		}
		return n, nil
	}},
	{"why", "each engine claim version; every summary and impression", func(ctx context.Context, r mql.Reader, s secrets, db *mql.DB) (int, error) {
		return s.probe(ctx, db, s.refs, asIs, func(ref string) (any, error) { return r.Why(ctx, ref) })
	}},
	{"history", "each engine key and artifact; every architect key and summary", func(ctx context.Context, r mql.Reader, s secrets, db *mql.DB) (int, error) {
		return s.probe(ctx, db, append(slices.Clone(s.keys), s.artifacts...), unversioned, func(ref string) (any, error) { return r.History(ctx, ref) })
	}},
	{"impact", "each engine claim version; every architect key", func(ctx context.Context, r mql.Reader, s secrets, db *mql.DB) (int, error) {
		return s.probe(ctx, db, s.refs, unversioned, func(ref string) (any, error) { return r.Impact(ctx, ref, 0) })
	}},
	{"context", "context * and context of every subject, engine-only ones included", func(ctx context.Context, r mql.Reader, s secrets, _ *mql.DB) (int, error) {
		subjects := append([]string{"*"}, s.subjects...)
		for _, p := range players {
			subjects = append(subjects, p.name)
		}
		n := 0
		for _, list := range [][]string{{"*"}, subjects} {
			c, err := r.Context(ctx, list, 0)
			if err != nil {
				return 0, err
			}
			n += s.count(c.Text) + s.leaks(c.Refs) + s.leaks(c.Omitted)
		}
		return n, nil
	}},
	{"stats", "claims, keys, sources and artifacts counted beyond the architect's own", func(ctx context.Context, r mql.Reader, s secrets, db *mql.DB) (int, error) {
		st, err := r.Stats(ctx)
		if err != nil {
			return 0, err
		}
		all, err := db.Stats(ctx)
		if err != nil {
			return 0, err
		}
		extra := (st.Claims - (all.Claims - s.claims)) + (st.Keys - (all.Keys - len(s.keys))) +
			(st.Sources - (all.Sources - s.sources)) + (st.Artifacts - (all.Artifacts - len(s.artifacts)))
		return extra, nil
	}},
	{"export", "the N-Quads text: engine subjects, predicates, values, sources, artifacts", func(ctx context.Context, r mql.Reader, s secrets, _ *mql.DB) (int, error) {
		var b strings.Builder
		if err := r.Export(ctx, &b); err != nil {
			return 0, err
		}
		return s.count(b.String()), nil
	}},
	{"conflicts", "conflicts over every subject", func(ctx context.Context, r mql.Reader, s secrets, _ *mql.DB) (int, error) {
		cf, err := r.Conflicts(ctx)
		return s.leaks(cf), err
	}},
	{"revoked-by", "each engine claim version", func(ctx context.Context, r mql.Reader, s secrets, _ *mql.DB) (int, error) {
		return s.hiddenAll(s.refs, func(ref string) (any, error) { return r.RevokedBy(ctx, ref) })
	}},
	{"beliefs", "beliefs *.pred for each engine predicate (candidates)", func(ctx context.Context, r mql.Reader, s secrets, _ *mql.DB) (int, error) {
		n := 0
		for _, p := range s.preds {
			b, err := r.Beliefs(ctx, "*."+p, nil)
			if err != nil {
				return 0, err
			}
			n += len(b.Candidates)
		}
		return n, nil
	}},
	{"as of every tx", "live * and context * as of each transaction", func(ctx context.Context, r mql.Reader, s secrets, db *mql.DB) (int, error) {
		head, err := db.Head(ctx)
		if err != nil {
			return 0, err
		}
		n := 0
		for tx := int64(1); tx <= head; tx++ {
			old := r.AsOfTx(tx)
			cs, err := old.Live(ctx, "*")
			if errors.Is(err, mql.ErrUnknownPrincipal) {
				continue // before the architect was recorded
			}
			if err != nil {
				return 0, err
			}
			c, err := old.Context(ctx, []string{"*"}, 0)
			if err != nil {
				return 0, err
			}
			n += s.leaks(cs) + s.count(c.Text)
		}
		return n, nil
	}},
}

// architectRefs lists every claim version and summary the architect wrote, as the owner sees
// them (so a check also asks about what was revoked).
func architectRefs(ctx context.Context, db *mql.DB) ([]string, error) {
	var out []string
	for _, p := range players {
		h, err := db.History(ctx, "summary:"+p.name)
		if err == nil {
			for _, a := range h.Artifacts {
				out = append(out, a.Ref)
			}
		} else if !errors.Is(err, mql.ErrNotFound) {
			return nil, err
		}
	}
	live, err := db.Live(ctx, "*")
	if err != nil {
		return nil, err
	}
	for _, c := range live {
		if c.By == architect {
			out = append(out, c.Ref)
		}
	}
	// Revoked impressions have no live claim; the owner's history of every key has them.
	for _, p := range players {
		for i := 1; i <= len(schedule); i++ {
			for k := 1; k <= 3; k++ {
				key := fmt.Sprintf("%s.impression_e%02d_%d", p.name, i, k)
				h, err := db.History(ctx, key)
				if errors.Is(err, mql.ErrNotFound) {
					continue
				}
				if err != nil {
					return nil, err
				}
				for _, c := range h.Claims {
					if c.State == mql.Revoked {
						out = append(out, c.Ref)
					}
				}
			}
		}
	}
	return out, nil
}

// audit runs every check as the architect and, for contrast, as the owner.
func audit(ctx context.Context, db *mql.DB) ([]auditRow, error) {
	s, err := collectSecrets(ctx, db)
	if err != nil {
		return nil, err
	}
	if len(s.refs) == 0 {
		return nil, fmt.Errorf("the engine wrote nothing to hide")
	}
	var rows []auditRow
	for _, c := range checks {
		a, err := c.count(ctx, db.As(architect), s, db)
		if err != nil {
			return nil, fmt.Errorf("%s as architect: %w", c.statement, err)
		}
		o, err := c.count(ctx, db.Reader(), s, db)
		if err != nil {
			return nil, fmt.Errorf("%s as owner: %w", c.statement, err)
		}
		rows = append(rows, auditRow{statement: c.statement, architect: a, owner: o, what: c.what})
	}
	return rows, nil
}
