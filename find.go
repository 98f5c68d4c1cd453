package mql

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/mql-dev/mql/graphstore"
)

// Term is one side of a Find condition: a variable ("?v") or a constant value. A constant in
// subject position is a subject name.
type Term struct {
	Var   string // "?name"; empty for a constant
	Value Value
}

// Var returns a variable term.
func Var(name string) Term { return Term{Var: "?" + strings.TrimPrefix(name, "?")} }

// Const returns a constant term.
func Const(v Value) Term { return Term{Value: v} }

// Cond is one conjunct of a Find: either a pattern Subject.Predicate Op Object over live
// claims, or, with Predicate empty, a comparison of a bound variable (Subject) with Object.
type Cond struct {
	Subject   Term // a variable, or a subject name as Ref/String value
	Predicate string
	Op        string
	Object    Term
}

// Order sorts results by a variable.
type Order struct {
	Var  string
	Desc bool
}

// FindQuery is a conjunctive query over live claims.
type FindQuery struct {
	Select  []string // variables to return, "?v"
	Where   []Cond
	OrderBy []Order
	Limit   int // 0: no limit
}

// MaxFindRows bounds the rows a find may produce before ordering and limit.
const MaxFindRows = 1_000_000

// Find answers a conjunctive query over live claims, e.g. the vendors with soc2 = true and
// region = "EU", ordered by price_per_seat.
func (db *DB) Find(ctx context.Context, q FindQuery) (FindResult, error) {
	return db.Reader().Find(ctx, q)
}

// Find answers a conjunctive query over live claims.
func (r Reader) Find(ctx context.Context, q FindQuery) (FindResult, error) {
	out := FindResult{Vars: q.Select, Rows: []Row{}}
	if err := checkFind(q); err != nil {
		return out, err
	}
	err := r.view(ctx, func(v *graphstore.View) error {
		f := finder{v: v, q: q, ctx: ctx}
		if err := f.solve(0, map[string]Value{}, nil); err != nil {
			return err
		}
		rows := f.rows
		if len(q.OrderBy) > 0 {
			slices.SortStableFunc(rows, func(a, b binding) int {
				for _, o := range q.OrderBy {
					c := cmpValues(a.vals[o.Var], b.vals[o.Var])
					if o.Desc {
						c = -c
					}
					if c != 0 {
						return c
					}
				}
				return 0
			})
		}
		if q.Limit > 0 && len(rows) > q.Limit {
			rows = rows[:q.Limit]
		}
		for _, b := range rows {
			row := Row{Claims: b.claims}
			for _, s := range q.Select {
				row.Values = append(row.Values, b.vals[s])
			}
			out.Rows = append(out.Rows, row)
		}
		return nil
	})
	return out, err
}

func checkFind(q FindQuery) error {
	if len(q.Where) == 0 {
		return fmt.Errorf("find: %w: give at least one condition after where", ErrInvalid)
	}
	if q.Limit < 0 {
		return fmt.Errorf("limit %d: %w: limit is 0 (none) or more", q.Limit, ErrInvalid)
	}
	bound := map[string]bool{}
	// A variable is bound by a pattern's subject or by an = pattern's object.
	for _, c := range q.Where {
		if err := checkOp(c.Op); err != nil {
			return err
		}
		if c.Predicate == "" {
			if c.Subject.Var == "" {
				return fmt.Errorf("find: %w: a comparison needs a variable on its left", ErrInvalid)
			}
			continue
		}
		if err := checkName("predicate", c.Predicate); err != nil {
			return err
		}
		if c.Subject.Var != "" {
			bound[c.Subject.Var] = true
		} else if c.Subject.Value.Type != graphstore.Ref && c.Subject.Value.Type != graphstore.String {
			return fmt.Errorf("find: %w: the subject of a pattern is a variable or a subject name", ErrInvalid)
		}
		if c.Object.Var != "" && c.Op == "=" {
			bound[c.Object.Var] = true
		}
	}
	for _, c := range q.Where {
		for _, t := range []Term{c.Subject, c.Object} {
			if t.Var != "" && !bound[t.Var] {
				return fmt.Errorf("find: %w: %s is never bound; bind it with ?x.predicate = %s", ErrInvalid, t.Var, t.Var)
			}
		}
	}
	for _, s := range q.Select {
		if !bound[s] {
			return fmt.Errorf("find: %w: selected %s is never bound by a condition", ErrInvalid, s)
		}
	}
	for _, o := range q.OrderBy {
		if !bound[o.Var] {
			return fmt.Errorf("find: %w: order by %s, which is never bound", ErrInvalid, o.Var)
		}
	}
	return nil
}

type binding struct {
	vals   map[string]Value
	claims []string
}

type finder struct {
	ctx  context.Context
	v    *graphstore.View
	q    FindQuery
	rows []binding
	done []bool
}

// solve picks the next condition that can run with the current bindings — a comparison whose
// sides are bound first, then the pattern with a bound subject, then any pattern — and recurses.
func (f *finder) solve(n int, vals map[string]Value, claims []string) error {
	if f.done == nil {
		f.done = make([]bool, len(f.q.Where))
	}
	if n == len(f.q.Where) {
		if len(f.rows) >= MaxFindRows {
			return fmt.Errorf("find: %w: more than %d rows before limit; narrow the conditions", ErrInvalid, MaxFindRows)
		}
		f.rows = append(f.rows, binding{vals: clone(vals), claims: slices.Clone(claims)})
		return nil
	}
	if err := f.ctx.Err(); err != nil {
		return err
	}
	i := f.next(vals)
	f.done[i] = true
	defer func() { f.done[i] = false }()
	c := f.q.Where[i]
	if c.Predicate == "" {
		if compare(vals[c.Subject.Var], c.Op, f.term(c.Object, vals)) {
			return f.solve(n+1, vals, claims)
		}
		return nil
	}
	for _, e := range f.candidates(c, vals) {
		added := []string{}
		if c.Subject.Var != "" {
			if _, ok := vals[c.Subject.Var]; !ok {
				vals[c.Subject.Var] = Ref(e.ID.Subject)
				added = append(added, c.Subject.Var)
			}
		}
		ok := true
		if c.Object.Var != "" {
			if bv, bound := vals[c.Object.Var]; bound {
				ok = compare(e.Value, c.Op, bv)
			} else {
				vals[c.Object.Var] = e.Value
				added = append(added, c.Object.Var)
			}
		} else {
			ok = compare(e.Value, c.Op, c.Object.Value)
		}
		if ok {
			if err := f.solve(n+1, vals, append(claims, e.ID.String())); err != nil {
				return err
			}
		}
		for _, a := range added {
			delete(vals, a)
		}
	}
	return nil
}

func (f *finder) next(vals map[string]Value) int {
	best, bestScore := -1, -1
	for i, c := range f.q.Where {
		if f.done[i] {
			continue
		}
		score := 0
		switch {
		case c.Predicate == "":
			if _, ok := vals[c.Subject.Var]; ok && (c.Object.Var == "" || has(vals, c.Object.Var)) {
				score = 3
			}
		case c.Subject.Var == "" || has(vals, c.Subject.Var):
			score = 2
		case c.Object.Var == "" || has(vals, c.Object.Var) || c.Op == "=":
			score = 1
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

func has(m map[string]Value, k string) bool { _, ok := m[k]; return ok }

func (f *finder) term(t Term, vals map[string]Value) Value {
	if t.Var != "" {
		return vals[t.Var]
	}
	return t.Value
}

// candidates returns the live claims a pattern may match: one key if the subject is known,
// else every key of the predicate.
func (f *finder) candidates(c Cond, vals map[string]Value) []*graphstore.ClaimEntry {
	subj := ""
	if c.Subject.Var == "" {
		subj = c.Subject.Value.Str
	} else if b, ok := vals[c.Subject.Var]; ok {
		if b.Type != graphstore.Ref && b.Type != graphstore.String {
			return nil
		}
		subj = b.Str
	}
	var out []*graphstore.ClaimEntry
	if subj != "" {
		return f.v.LiveClaims(graphstore.Key{Subject: subj, Predicate: c.Predicate})
	}
	for _, k := range f.v.KeysOfPredicate(c.Predicate) {
		out = append(out, f.v.LiveClaims(k)...)
	}
	return out
}

func clone(m map[string]Value) map[string]Value {
	out := make(map[string]Value, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
