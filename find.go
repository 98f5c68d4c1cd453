package mql

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
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
func (r reads) Find(ctx context.Context, q FindQuery) (FindResult, error) {
	if r.run != "" {
		return forRun(ctx, r, q.statement, func(r reads) (FindResult, error) { return r.Find(ctx, q) },
			func(x FindResult) []string {
				var refs []string
				for _, row := range x.Rows {
					refs = append(refs, row.Claims...)
				}
				return refs
			})
	}
	out := FindResult{Vars: q.Select, Rows: []Row{}}
	q.Where = append([]Cond(nil), q.Where...)
	for i := range q.Where {
		c := &q.Where[i]
		c.Predicate, c.Subject.Value, c.Object.Value = nfc(c.Predicate), nfcValue(c.Subject.Value), nfcValue(c.Object.Value)
	}
	if err := checkFind(q); err != nil {
		return out, err
	}
	err := r.view(ctx, func(v *index.View) error {
		f := newFinder(ctx, v, q)
		if err := f.solve(0); err != nil {
			return err
		}
		rows := f.best()
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
		} else if c.Subject.Value.Type != record.Ref && c.Subject.Value.Type != record.String {
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
	vals   []Value         // by variable slot
	claims []index.LiveRef // by pattern, in f.listed order
}

// finder solves a conjunctive query by backtracking. Variables live in numbered slots so that
// binding and unbinding cost nothing; a row is copied only when every condition holds.
type finder struct {
	ctx    context.Context
	v      *index.View
	q      FindQuery
	slot   map[string]int
	vals   []Value
	bound  []bool
	plan   []int           // conditions in the order they run
	listed []int           // the patterns in the order a row lists their claims
	claims []index.LiveRef // by condition
	rows   []binding
	found  int   // rows found, including those cut
	order  []int // the variable slot of each OrderBy
	steps  int
	// Conditions of a constant value met for bound subjects: how often each was looked up key
	// by key, and, once that was often, every live claim of it by subject (see joined).
	lookups []int
	joined  []map[string][]index.LiveRef
	// The conditions ?v.p = constant on the variable the first condition binds, the first
	// among them (see intersect), and, while the lists are walked, each one's claims of the
	// subject at hand.
	group  []int
	merged [][]index.LiveRef
	inStep bool
}

func newFinder(ctx context.Context, v *index.View, q FindQuery) *finder {
	f := &finder{ctx: ctx, v: v, q: q, slot: map[string]int{}, claims: make([]index.LiveRef, len(q.Where)),
		lookups: make([]int, len(q.Where)), joined: make([]map[string][]index.LiveRef, len(q.Where))}
	for _, c := range q.Where {
		for _, t := range []Term{c.Subject, c.Object} {
			if _, ok := f.slot[t.Var]; t.Var != "" && !ok {
				f.slot[t.Var] = len(f.slot)
			}
		}
	}
	f.vals = make([]Value, len(f.slot))
	f.bound = make([]bool, len(f.slot))
	for _, o := range q.OrderBy {
		f.order = append(f.order, f.slot[o.Var])
	}
	// Rows list their claims in the order the conditions would run if ties were not broken
	// by size, which is the order Find has always used.
	for _, i := range planFind(q, nil) {
		if q.Where[i].Predicate != "" {
			f.listed = append(f.listed, i)
		}
	}
	f.plan = planFind(q, func(c Cond) int { return v.CountLiveWithValue(c.Predicate, c.Object.Value, planCount) })
	f.group = intersected(q, f.plan)
	f.merged = make([][]index.LiveRef, len(q.Where))
	return f
}

// intersected returns the conditions that start a find by intersecting lists: when the first
// condition to run is ?v.p = constant, every condition ?v.q = constant on the same variable,
// the first one first. It returns nil when there is one such condition or none.
func intersected(q FindQuery, plan []int) []int {
	isConst := func(c Cond) bool {
		return c.Predicate != "" && c.Subject.Var != "" && c.Object.Var == "" && c.Op == "="
	}
	first := q.Where[plan[0]]
	if !isConst(first) {
		return nil
	}
	group := []int{plan[0]}
	for _, i := range plan[1:] {
		if c := q.Where[i]; isConst(c) && c.Subject.Var == first.Subject.Var {
			group = append(group, i)
		}
	}
	if len(group) < 2 {
		return nil
	}
	return group
}

func (f *finder) has(name string) bool { return f.bound[f.slot[name]] }

// planFind orders the conditions: at each step a comparison whose sides are bound first, then
// a pattern with a bound subject, then one with a constant =, then one whose object is known;
// ties go to the constant = with the fewest candidates (by size, when given), then to the
// condition written first. Which variables are bound depends only on which conditions ran, so
// the order can be fixed before any claim is read.
func planFind(q FindQuery, size func(Cond) int) []int {
	bound := map[string]bool{}
	has := func(t Term) bool { return bound[t.Var] }
	done := make([]bool, len(q.Where))
	plan := make([]int, 0, len(q.Where))
	for range q.Where {
		best, bestScore, bestSize := -1, -1, 0
		for i, c := range q.Where {
			if done[i] {
				continue
			}
			score, n := 0, 0
			switch {
			case c.Predicate == "":
				if has(c.Subject) && (c.Object.Var == "" || has(c.Object)) {
					score = 4
				}
			case c.Subject.Var == "" || has(c.Subject):
				score = 3
			case c.Object.Var == "" && c.Op == "=":
				score = 2 // a constant narrows the most among unbound patterns
				if size != nil {
					n = size(c)
				}
			case c.Object.Var == "" || has(c.Object) || c.Op == "=":
				score = 1
			}
			if score > bestScore || score == bestScore && n < bestSize {
				best, bestScore, bestSize = i, score, n
			}
		}
		done[best] = true
		plan = append(plan, best)
		if c := q.Where[best]; c.Predicate != "" {
			for _, t := range []Term{c.Subject, c.Object} {
				if t.Var != "" {
					bound[t.Var] = true
				}
			}
		}
	}
	return plan
}

// solve runs condition f.plan[n] for each binding the earlier ones made, and records a row
// when every condition holds.
func (f *finder) solve(n int) error {
	if n == len(f.plan) {
		if f.found >= MaxFindRows {
			return fmt.Errorf("find: %w: more than %d rows before limit; narrow the conditions", ErrInvalid, MaxFindRows)
		}
		f.found++
		f.addRow()
		return nil
	}
	if f.steps++; f.steps%1024 == 0 {
		if err := f.ctx.Err(); err != nil {
			return err
		}
	}
	i := f.plan[n]
	c := &f.q.Where[i]
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
	f.candidates(i, c, func(e index.LiveRef) bool {
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
		f.claims[i] = e
		err = f.solve(n + 1)
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

// addRow records the current binding. Under a limit, the rows are cut back to the best
// whenever they reach twice the limit, so a find holds at most that many and, from then on,
// copies each row into the storage of one it cut instead of allocating.
func (f *finder) addRow() {
	if limit := f.q.Limit; limit > 0 && len(f.rows) == 2*limit {
		slices.SortFunc(f.rows, f.compareRows)
		f.rows = f.rows[:limit]
	}
	n := len(f.rows)
	if n < cap(f.rows) {
		f.rows = f.rows[:n+1]
	} else {
		f.rows = append(f.rows, binding{})
	}
	b := &f.rows[n]
	if b.vals == nil {
		b.vals = make([]Value, len(f.vals))
		b.claims = make([]index.LiveRef, len(f.listed))
	}
	copy(b.vals, f.vals)
	for j, i := range f.listed {
		b.claims[j] = f.claims[i]
	}
}

// best returns the rows in the order asked, cut to the limit.
func (f *finder) best() []binding {
	slices.SortFunc(f.rows, f.compareRows)
	if f.q.Limit > 0 && len(f.rows) > f.q.Limit {
		return f.rows[:f.q.Limit]
	}
	return f.rows
}

// compareRows orders rows by the variables asked for, then as a nested scan in the query's
// own order would have found them (f.listed): candidates come in whatever order was cheapest,
// and rows that tie on the order asked for must still come out the same every time.
func (f *finder) compareRows(a, b binding) int {
	for i, o := range f.q.OrderBy {
		c := cmpValues(a.vals[f.order[i]], b.vals[f.order[i]])
		if o.Desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	for i := range a.claims {
		if c := index.CompareLive(a.claims[i], b.claims[i]); c != 0 {
			return c
		}
	}
	return 0
}

func (f *finder) term(t Term) Value {
	if t.Var != "" {
		return f.vals[f.slot[t.Var]]
	}
	return t.Value
}

// Joining: a condition ?v.p = constant that runs for each binding of ?v reads one key per
// binding. Once it has done that joinAfter times, and p has at most joinMax claims live with
// the constant, it reads them all once instead, by subject: thousands of lookups of keys become
// a scan of the value's live claims (a hash join).
var joinAfter = 1024 // a variable so that a test can make every such condition join

// planCount is how far a find counts the claims live with a constant before it starts: enough
// to tell a small condition from a large one, which is all the plan needs (a large condition
// met for many subjects is joined anyway).
const planCount = 4096

const joinMax = 250_000

// candidates calls each with the live claims condition i (c) may match — one key's if the
// subject is known, those with the value if an = compares with a known one, else every key's
// of the predicate — until each returns false.
func (f *finder) candidates(i int, c *Cond, each func(index.LiveRef) bool) {
	subj := ""
	if c.Subject.Var == "" {
		subj = c.Subject.Value.Str
	} else if f.has(c.Subject.Var) {
		b := f.vals[f.slot[c.Subject.Var]]
		if b.Type != record.Ref && b.Type != record.String {
			return
		}
		subj = b.Str
	}
	if subj == "" && f.group != nil && i == f.group[0] && f.intersect(each) {
		return
	}
	if f.inStep && f.merged[i] != nil {
		for _, e := range f.merged[i] {
			if !each(e) {
				return
			}
		}
		return
	}
	switch {
	case subj != "" && c.Subject.Var != "" && c.Object.Var == "" && c.Op == "=":
		if f.joined[i] == nil {
			if f.lookups[i]++; f.lookups[i] > joinAfter {
				m, n := map[string][]index.LiveRef{}, 0
				f.v.EachLiveRefWithValue(c.Predicate, c.Object.Value, func(e index.LiveRef) bool {
					m[e.ID.Subject] = append(m[e.ID.Subject], e)
					n++
					return n <= joinMax
				})
				if n <= joinMax {
					f.joined[i] = m
				} else {
					f.lookups[i] = math.MinInt // too many to hold: look keys up
				}
			}
			if f.joined[i] == nil {
				f.v.EachLiveRef(record.Key{Subject: subj, Predicate: c.Predicate}, each)
				return
			}
		}
		// A key's live claims come one per audience, in the order of its slots, either way.
		for _, e := range f.joined[i][subj] {
			if !each(e) {
				return
			}
		}
	case subj != "":
		f.v.EachLiveRef(record.Key{Subject: subj, Predicate: c.Predicate}, each)
	case c.Op == "=" && (c.Object.Var == "" || f.has(c.Object.Var)):
		f.v.EachLiveRefWithValue(c.Predicate, f.term(c.Object), each)
	default:
		f.v.EachLiveRefOf(c.Predicate, each)
	}
}

// intersect yields the candidates of the find's first condition by walking the lists of every
// condition of f.group side by side (View.EachLiveRefsWithValues): only the subjects in all of
// them, each with its claims of the other conditions at hand for when they run. Where a large
// value list meets another, this reads the two lists once instead of looking a key up for each
// entry of one. It reports false, having yielded nothing, where the lists cannot be walked so.
func (f *finder) intersect(each func(index.LiveRef) bool) bool {
	conds := make([]index.PredicateValue, len(f.group))
	for j, i := range f.group {
		conds[j] = index.PredicateValue{Predicate: f.q.Where[i].Predicate, Value: f.q.Where[i].Object.Value}
	}
	f.inStep = true
	defer func() {
		f.inStep = false
		clear(f.merged)
	}()
	return f.v.EachLiveRefsWithValues(conds, func(refs [][]index.LiveRef) bool {
		for j, i := range f.group[1:] {
			f.merged[i] = refs[j+1]
		}
		for _, e := range refs[0] {
			if !each(e) {
				return false
			}
		}
		return true
	})
}
