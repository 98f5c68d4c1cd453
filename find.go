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
		f := newFinder(ctx, v, q)
		if err := f.solve(0); err != nil {
			return err
		}
		rows := f.rows
		if len(q.OrderBy) > 0 {
			slots := make([]int, len(q.OrderBy))
			for i, o := range q.OrderBy {
				slots[i] = f.slot[o.Var]
			}
			slices.SortStableFunc(rows, func(a, b binding) int {
				for i, o := range q.OrderBy {
					c := cmpValues(a.vals[slots[i]], b.vals[slots[i]])
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
		// References are spelled out only for the rows returned.
		for _, b := range rows {
			row := Row{Claims: make([]string, len(b.claims))}
			for i, e := range b.claims {
				row.Claims[i] = e.ID.String()
			}
			for _, s := range q.Select {
				row.Values = append(row.Values, b.vals[f.slot[s]])
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
	vals   []Value // by variable slot
	claims []*graphstore.ClaimEntry
}

// finder solves a conjunctive query by backtracking. Variables live in numbered slots so that
// binding and unbinding cost nothing; a row is copied only when every condition holds.
type finder struct {
	ctx    context.Context
	v      *graphstore.View
	q      FindQuery
	slot   map[string]int
	vals   []Value
	bound  []bool
	claims []*graphstore.ClaimEntry
	rows   []binding
	done   []bool
	steps  int
}

func newFinder(ctx context.Context, v *graphstore.View, q FindQuery) *finder {
	f := &finder{ctx: ctx, v: v, q: q, slot: map[string]int{}, done: make([]bool, len(q.Where))}
	for _, c := range q.Where {
		for _, t := range []Term{c.Subject, c.Object} {
			if _, ok := f.slot[t.Var]; t.Var != "" && !ok {
				f.slot[t.Var] = len(f.slot)
			}
		}
	}
	f.vals = make([]Value, len(f.slot))
	f.bound = make([]bool, len(f.slot))
	return f
}

func (f *finder) has(name string) bool { return f.bound[f.slot[name]] }

// solve picks the next condition that can run with the current bindings — a comparison whose
// sides are bound first, then the pattern with a bound subject, then any pattern — and recurses.
func (f *finder) solve(n int) error {
	if n == len(f.q.Where) {
		if len(f.rows) >= MaxFindRows {
			return fmt.Errorf("find: %w: more than %d rows before limit; narrow the conditions", ErrInvalid, MaxFindRows)
		}
		f.rows = append(f.rows, binding{vals: slices.Clone(f.vals), claims: slices.Clone(f.claims)})
		return nil
	}
	if f.steps++; f.steps%1024 == 0 {
		if err := f.ctx.Err(); err != nil {
			return err
		}
	}
	i := f.next()
	f.done[i] = true
	defer func() { f.done[i] = false }()
	c := f.q.Where[i]
	if c.Predicate == "" {
		if compare(f.vals[f.slot[c.Subject.Var]], c.Op, f.term(c.Object)) {
			return f.solve(n + 1)
		}
		return nil
	}
	subjSlot, objSlot := -1, -1
	if c.Subject.Var != "" && !f.has(c.Subject.Var) {
		subjSlot = f.slot[c.Subject.Var]
	}
	if c.Object.Var != "" && !f.has(c.Object.Var) {
		objSlot = f.slot[c.Object.Var]
	}
	var err error
	f.candidates(c, func(e *graphstore.ClaimEntry) bool {
		switch {
		case c.Object.Var == "":
			if !compare(e.Value, c.Op, c.Object.Value) {
				return true
			}
		case objSlot < 0:
			if !compare(e.Value, c.Op, f.vals[f.slot[c.Object.Var]]) {
				return true
			}
		}
		if subjSlot >= 0 {
			f.vals[subjSlot], f.bound[subjSlot] = Ref(e.ID.Subject), true
		}
		if objSlot >= 0 {
			f.vals[objSlot], f.bound[objSlot] = e.Value, true
		}
		f.claims = append(f.claims, e)
		err = f.solve(n + 1)
		f.claims = f.claims[:len(f.claims)-1]
		if subjSlot >= 0 {
			f.bound[subjSlot] = false
		}
		if objSlot >= 0 {
			f.bound[objSlot] = false
		}
		return err == nil
	})
	return err
}

func (f *finder) next() int {
	best, bestScore := -1, -1
	for i, c := range f.q.Where {
		if f.done[i] {
			continue
		}
		score := 0
		switch {
		case c.Predicate == "":
			if f.has(c.Subject.Var) && (c.Object.Var == "" || f.has(c.Object.Var)) {
				score = 4
			}
		case c.Subject.Var == "" || f.has(c.Subject.Var):
			score = 3
		case c.Object.Var == "" && c.Op == "=":
			score = 2 // a constant narrows the most among unbound patterns
		case c.Object.Var == "" || f.has(c.Object.Var) || c.Op == "=":
			score = 1
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	return best
}

func (f *finder) term(t Term) Value {
	if t.Var != "" {
		return f.vals[f.slot[t.Var]]
	}
	return t.Value
}

// candidates calls each with the live claims a pattern may match — one key's if the subject
// is known, else every key's of the predicate — until each returns false.
func (f *finder) candidates(c Cond, each func(*graphstore.ClaimEntry) bool) {
	subj := ""
	if c.Subject.Var == "" {
		subj = c.Subject.Value.Str
	} else if f.has(c.Subject.Var) {
		b := f.vals[f.slot[c.Subject.Var]]
		if b.Type != graphstore.Ref && b.Type != graphstore.String {
			return
		}
		subj = b.Str
	}
	if subj != "" {
		f.v.EachLive(graphstore.Key{Subject: subj, Predicate: c.Predicate}, each)
		return
	}
	stop := false
	for _, k := range f.v.KeysOfPredicate(c.Predicate) {
		f.v.EachLive(k, func(e *graphstore.ClaimEntry) bool {
			stop = !each(e)
			return !stop
		})
		if stop {
			return
		}
	}
}
