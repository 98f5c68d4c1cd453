package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/mql-dev/mql"
)

// ErrActAs is returned when a session acting as one principal runs a write `by` another. Only
// a session acting as the owner may write on others' behalf.
var ErrActAs = errors.New("cannot act as another principal")

// Session evaluates statements against one store, acting as one principal. It is what the
// REPL, the command line and the MCP server share; it calls only mql's public API.
type Session struct {
	db *mql.DB
	as string // "" or the owner: may write by anyone and read everything
}

// NewSession evaluates statements against db. as is the acting principal ("" = the owner):
// reads are made as it, and a write whose `by` names another principal is refused unless as is
// the owner.
func NewSession(db *mql.DB, as string) *Session { return &Session{db: db, as: as} }

// As is the acting principal ("" for the owner).
func (s *Session) As() string { return s.as }

// DB is the store the session evaluates against.
func (s *Session) DB() *mql.DB { return s.db }

// Export writes, as N-Quads, what the session's principal may see: the whole store for the
// owner (importable), only what it may see for another (see mql.Reader.Export). Every export of the REPL and
// the command line goes through it, so that --as holds for \export too.
func (s *Session) Export(ctx context.Context, w io.Writer) error {
	if s.as == "" || s.as == s.db.Owner() {
		// The owner's export holds every transaction, so that it can be imported.
		return s.db.Export(ctx, w)
	}
	return s.db.As(s.as).Export(ctx, w)
}

// Import loads an N-Quads export into the store (see mql.DB.Import). Only the owner imports: a
// session acting as another principal is refused with ErrActAs, and nothing is read from r.
func (s *Session) Import(ctx context.Context, r io.Reader) error {
	if s.as != "" && s.as != s.db.Owner() {
		return fmt.Errorf("%w: this session acts as %s; only the owner (%s) may import", ErrActAs, s.as, s.db.Owner())
	}
	return s.db.Import(ctx, r)
}

// Exec parses src (name is used in error positions: name:line:col) and evaluates its
// statements in order, calling emit after each; it stops at the first error, having applied
// the statements before it and nothing of the failing one. Parse errors match ErrSyntax;
// evaluation errors wrap mql's sentinels and are prefixed with the statement's position.
func (s *Session) Exec(ctx context.Context, name, src string, emit func(*Result) error) error {
	script, perr := Parse(name, src)
	var first Position
	if perr != nil {
		first = firstErrorPos(perr)
	}
	for _, st := range script.Stmts {
		if perr != nil && !before(st.Pos(), first) {
			break
		}
		res, err := s.Eval(ctx, st)
		if err != nil {
			return err
		}
		if emit != nil {
			if err := emit(res); err != nil {
				return err
			}
		}
	}
	return perr
}

func firstErrorPos(err error) Position {
	var e *Error
	var l ErrorList
	switch {
	case errors.As(err, &l) && len(l) > 0:
		return l[0].Pos
	case errors.As(err, &e):
		return e.Pos
	}
	return Position{}
}

func before(a, b Position) bool {
	return a.Line < b.Line || (a.Line == b.Line && a.Column < b.Column)
}

// EvalError is an evaluation error at a statement's position. It unwraps to the mql error, so
// errors.Is finds mql's sentinels.
type EvalError struct {
	Pos Position
	Err error
}

func (e *EvalError) Error() string { return e.Pos.String() + ": " + e.Err.Error() }
func (e *EvalError) Unwrap() error { return e.Err }

// Eval evaluates one parsed statement.
func (s *Session) Eval(ctx context.Context, st Stmt) (*Result, error) {
	res, err := s.eval(ctx, st)
	if err != nil {
		return nil, &EvalError{Pos: st.Pos(), Err: err}
	}
	res.Statement = st.String()
	return res, nil
}

// by checks that the session may write as who.
func (s *Session) by(who string) error {
	if s.as == "" || s.as == who || s.as == s.db.Owner() {
		return nil
	}
	return fmt.Errorf("%w: this session acts as %s, the statement says by %s", ErrActAs, s.as, who)
}

// actor is who makes writes that name no principal (principal, decay).
func (s *Session) actor() string {
	if s.as == "" {
		return s.db.Owner()
	}
	return s.as
}

func (s *Session) reader(m Mods) (mql.Reader, error) {
	r := s.db.Reader()
	if s.as != "" {
		r = r.As(s.as)
	}
	if m.As != "" {
		if s.as != "" && s.as != s.db.Owner() && m.As != s.as {
			return r, fmt.Errorf("%w: this session acts as %s and cannot read as %s", ErrActAs, s.as, m.As)
		}
		r = r.As(m.As)
	}
	switch {
	case m.AsOfTx != nil:
		r = r.AsOfTx(*m.AsOfTx)
	case m.AsOfTime != nil:
		r = r.AsOf(*m.AsOfTime)
	}
	return r, nil
}

func (s *Session) write(who string, kind string, f func() (mql.Receipt, error)) (*Result, error) {
	if err := s.by(who); err != nil {
		return nil, err
	}
	rc, err := f()
	if err != nil {
		return nil, err
	}
	return &Result{Kind: kind, Receipt: &rc}, nil
}

func (s *Session) eval(ctx context.Context, st Stmt) (*Result, error) {
	switch st := st.(type) {
	case *Principal:
		return s.write(s.actor(), "principal", func() (mql.Receipt, error) {
			return s.db.AddPrincipal(ctx, mql.PrincipalSpec{Name: st.Name, Type: mql.PrincipalType(st.Kind), By: s.actor()})
		})
	case *Grant:
		return s.write(st.By, "grant", func() (mql.Receipt, error) {
			return s.db.Grant(ctx, mql.GrantSpec{Grantee: st.Grantee, Right: mql.Right(st.Right), Scope: st.Scope.String(), By: st.By})
		})
	case *Assert:
		spec := mql.AssertSpec{
			Subject: st.Key.Subject, Predicate: st.Key.Predicate, Value: value(st.Value), By: st.By,
			Confidence: st.Confidence, Kind: mql.Kind(st.Kind), SeenBy: st.SeenBy,
		}
		for _, src := range st.Sources {
			spec.Sources = append(spec.Sources, mql.Source{ID: src.ID, Excerpt: src.Excerpt, URI: src.URI, Revision: src.Revision})
		}
		if st.ValidFrom != nil {
			spec.ValidFrom = *st.ValidFrom
		}
		if st.ValidUntil != nil {
			spec.ValidUntil = *st.ValidUntil
		}
		return s.write(st.By, "assert", func() (mql.Receipt, error) { return s.db.Assert(ctx, spec) })
	case *Revoke:
		spec := mql.RevokeSpec{Claim: st.Claim.String(), By: st.By, Because: st.Because}
		if st.ReplacedBy != nil {
			spec.ReplacedBy = st.ReplacedBy.String()
		}
		return s.write(st.By, "revoke", func() (mql.Receipt, error) { return s.db.Revoke(ctx, spec) })
	case *Confirm:
		return s.write(st.By, "confirm", func() (mql.Receipt, error) {
			return s.db.Confirm(ctx, mql.ConfirmSpec{Claim: st.Claim.String(), By: st.By})
		})
	case *Derive:
		spec := mql.DeriveSpec{Artifact: st.Artifact, By: st.By, Confidence: st.Confidence, SeenBy: st.SeenBy}
		for _, r := range st.From {
			spec.From = append(spec.From, r.String())
		}
		return s.write(st.By, "derive", func() (mql.Receipt, error) { return s.db.Derive(ctx, spec) })
	case *Review:
		return s.write(st.By, "review", func() (mql.Receipt, error) {
			return s.db.Review(ctx, mql.ReviewSpec{Artifact: st.Artifact.String(), By: st.By, Because: st.Because})
		})
	case *Decay:
		return s.write(s.actor(), "decay", func() (mql.Receipt, error) {
			return s.db.SetDecay(ctx, mql.DecaySpec{Predicate: st.Predicate, HalfLife: st.HalfLife, By: s.actor()})
		})
	case ReadStmt:
		r, err := s.reader(st.Modifiers())
		if err != nil {
			return nil, err
		}
		return s.read(ctx, r, st)
	}
	return nil, fmt.Errorf("statement %T cannot be evaluated", st)
}

func (s *Session) read(ctx context.Context, r mql.Reader, st ReadStmt) (*Result, error) {
	switch st := st.(type) {
	case *Live:
		var where []mql.Filter
		if st.Where != nil {
			where = append(where, mql.Filter{Op: string(st.Where.Op), Value: value(st.Where.Value)})
		}
		claims, err := r.Live(ctx, pattern(st.Pattern), where...)
		return &Result{Kind: "live", Claims: claims}, err
	case *Find:
		q := mql.FindQuery{Limit: st.Limit}
		for _, v := range st.Vars {
			q.Select = append(q.Select, "?"+v)
		}
		for _, c := range st.Where {
			cond := mql.Cond{Predicate: c.Predicate, Op: string(c.Op)}
			if c.SubjectVar != "" {
				cond.Subject = mql.Var(c.SubjectVar)
			} else {
				cond.Subject = mql.Const(mql.Ref(c.Subject))
			}
			if c.ObjectVar != "" {
				cond.Object = mql.Var(c.ObjectVar)
			} else {
				cond.Object = mql.Const(value(c.Object))
			}
			q.Where = append(q.Where, cond)
		}
		for _, o := range st.OrderBy {
			q.OrderBy = append(q.OrderBy, mql.Order{Var: "?" + o.Var, Desc: o.Desc})
		}
		res, err := r.Find(ctx, q)
		return &Result{Kind: "find", Find: &res}, err
	case *Why:
		n, err := r.Why(ctx, st.Node.String())
		return &Result{Kind: "why", Why: n}, err
	case *RevokedBy:
		rb, err := r.RevokedBy(ctx, st.Claim.String())
		return &Result{Kind: "revoked-by", RevokedBy: &rb}, err
	case *Impact:
		depth := 0
		if st.Depth != nil {
			depth = *st.Depth
		}
		imp, err := r.Impact(ctx, st.Node.String(), depth)
		return &Result{Kind: "impact", Impact: &imp}, err
	case *History:
		h, err := r.History(ctx, st.Node.String())
		return &Result{Kind: "history", History: &h}, err
	case *Conflicts:
		cs, err := r.Conflicts(ctx, st.Subjects...)
		return &Result{Kind: "conflicts", Conflicts: cs}, err
	case *Beliefs:
		var gate *[2]float64
		if st.Gate != nil {
			gate = &[2]float64{st.Gate.Low, st.Gate.High}
		}
		b, err := r.Beliefs(ctx, pattern(st.Pattern), gate)
		return &Result{Kind: "beliefs", Beliefs: &b}, err
	case *Context:
		subjects := st.Subjects
		if st.All {
			subjects = []string{"*"}
		}
		c, err := r.Context(ctx, subjects, st.Budget)
		return &Result{Kind: "context", Context: &c}, err
	case *Stats:
		stats, err := r.Stats(ctx)
		return &Result{Kind: "stats", Stats: &stats}, err
	}
	return nil, fmt.Errorf("statement %T cannot be evaluated", st)
}

func pattern(p Pattern) string {
	subj, pred := p.Subject, p.Predicate
	if subj == "" {
		subj = "*"
	}
	if pred == "" {
		pred = "*"
	}
	return subj + "." + pred
}

func value(v Value) mql.Value {
	switch v.Kind {
	case KindString:
		return mql.String(v.Str)
	case KindNumber:
		return mql.Number(v.Num)
	case KindBool:
		return mql.Bool(v.Bool)
	case KindTime:
		return mql.Time(v.Time)
	case KindRef:
		return mql.Ref(v.Ref.String())
	}
	return mql.Value{}
}

// Keywords lists the language's keywords, for completion.
func Keywords() []string {
	return []string{
		"principal", "grant", "assert", "revoke", "confirm", "derive", "review", "decay",
		"live", "find", "why", "revoked-by", "impact", "history", "conflicts", "beliefs", "context", "stats",
		"as", "of", "tx", "by", "from", "on", "confidence", "kind", "valid", "until", "seen", "because",
		"replaced", "half-life", "where", "value", "order", "asc", "desc", "limit", "depth", "gate", "budget",
		"excerpt", "uri", "revision", "user", "agent", "tool", "confirmed", "observed", "inferred",
		"true", "false",
	}
}

// Names returns completion candidates from the store as the session sees it: principals,
// subjects, predicates, claim keys and references, and artifact names.
func (s *Session) Names(ctx context.Context) ([]string, error) {
	r, err := s.reader(Mods{})
	if err != nil {
		return nil, err
	}
	names, err := r.Names(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// Prefixed returns the candidates among names and keywords that start with prefix.
func Prefixed(candidates []string, prefix string) []string {
	var out []string
	for _, c := range candidates {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}
