package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mql-dev/mql"
)

// ErrActAs is returned when a session acting as one principal runs a write `by` another, reads
// `as` another or imports. Only a session acting as the owner may act on others' behalf. It is
// mql.ErrActAs: the rule is the library's (mql.Actor).
var ErrActAs = mql.ErrActAs

// Session evaluates statements against one store, acting as one principal. It is what the
// REPL, the command line and the MCP server share; it calls only mql's public API.
type Session struct {
	db    *mql.DB
	as    string              // "" or the owner: may write by anyone and read everything
	act   mql.Actor           // as, or the owner for "": every write and read goes through it
	hold  func(*Result) error // judges each result a transaction holds until it commits
	embed Embedder            // nil: none
}

// Embedder gives the vectors of texts, in their order (package embedder's Client is one).
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// EmbedWith makes the session embed, with e, the claims it asserts without a vector (before
// the write, so that the claim and its vector are committed together, and a failure of e
// fails the write: nothing is written) and the text of each search that may rank by vector
// and gives none.
func (s *Session) EmbedWith(e Embedder) { s.embed = e }

// NewSession evaluates statements against db. as is the acting principal ("" = the owner):
// reads are made as it, and a write whose `by` names another principal is refused unless as is
// the owner.
func NewSession(db *mql.DB, as string) *Session {
	actor := as
	if actor == "" {
		actor = db.Owner()
	}
	return &Session{db: db, as: as, act: db.ActAs(actor)}
}

// HoldWith makes check judge each result of a transaction's statements as it is evaluated.
// A transaction holds its results until it commits (see ExecBlock); an error from check rolls it
// back there, so that a caller can bound what a transaction may hold.
func (s *Session) HoldWith(check func(*Result) error) { s.hold = check }

// As is the acting principal ("" for the owner).
func (s *Session) As() string { return s.as }

// Reader reads as the session's principal.
func (s *Session) Reader() (mql.Reader, error) { return s.reader(s.act.Reader(), Mods{}) }

// DB is the store the session evaluates against.
func (s *Session) DB() *mql.DB { return s.db }

// Export writes, as N-Quads, what the session's principal may see: the whole store for the
// owner (importable), only what it may see for another (see mql.Reader.Export). Every export of the REPL and
// the command line goes through it, so that --as holds for \export too.
func (s *Session) Export(ctx context.Context, w io.Writer) error { return s.act.Export(ctx, w) }

// Import loads an N-Quads export into the store (see mql.DB.Import). Only the owner imports: a
// session acting as another principal is refused with ErrActAs, and nothing is read from r.
func (s *Session) Import(ctx context.Context, r io.Reader) error {
	return inWords(s.act.Import(ctx, r))
}

// Exec parses src (name is used in error positions: name:line:col) and evaluates its
// statements in order, calling emit after each; it stops at the first error, having applied
// the statements before it and nothing of the failing one. Parse errors match ErrSyntax;
// evaluation errors wrap mql's sentinels and are prefixed with the statement's position.
//
// The statements from a begin to its commit are one transaction (see ExecBlock): they are
// evaluated, and their results emitted, only at the commit, all of them or none. A rollback
// discards the statements since its begin without evaluating them. A script that ends inside
// a transaction, a begin or a read for a run inside one, and a commit or rollback outside one
// are errors (see TxBlock).
func (s *Session) Exec(ctx context.Context, name, src string, emit func(*Result) error) error {
	return s.ExecAt(ctx, name, src, 1, 1, emit)
}

// ExecAt is Exec for src that starts at line and column of the script name (see ParseAt).
func (s *Session) ExecAt(ctx context.Context, name, src string, line, column int, emit func(*Result) error) error {
	script, perr := ParseAt(name, src, line, column)
	return s.ExecParsed(ctx, script, perr, emit)
}

// ExecParsed is Exec for a script parsed already: the statements Parse returned and its error,
// of which only the statements before the error run.
func (s *Session) ExecParsed(ctx context.Context, script *Script, perr error, emit func(*Result) error) error {
	var first Position
	if perr != nil {
		first = firstErrorPos(perr)
	}
	var tx TxBlock
	var block []Stmt // statements of an open transaction, its begin first
	for _, st := range script.Stmts {
		if perr != nil && !before(st.Pos(), first) {
			break
		}
		step, err := tx.Next(st)
		if err != nil {
			return rolledBack(block, err)
		}
		switch step {
		case TxBegin:
			block = []Stmt{st}
		case TxGather:
			block = append(block, st)
		case TxCommit, TxRollback:
			if err := s.ExecBlock(ctx, append(block, st), emit); err != nil {
				return err
			}
			block = nil
		case TxRun:
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
	}
	if perr != nil {
		return perr
	}
	return tx.End()
}

// rolledBack is err, the error TxBlock.Next gave a statement of the script, said as the open
// transaction's (block, its begin first) when the statement was one it would hold: the script
// stops there, and nothing of the transaction is written.
func rolledBack(block []Stmt, err error) error {
	var ee *EvalError
	if len(block) > 0 && errors.As(err, &ee) {
		return &TxError{Begin: block[0].Pos(), Err: ee}
	}
	return err
}

// ExecBlock runs a transaction: stmts is begin, the statements, and commit or rollback. On
// commit the statements are evaluated in one mql transaction (mql.DB.Tx), each write checked
// against what the ones before it wrote, each read seeing them too; if one fails, nothing is
// written and the error, at that statement, says the transaction was rolled back. Results are
// emitted only when the transaction has committed, in order, followed by the commit's own
// result (its transaction id). On rollback nothing is evaluated, and the result says how many
// statements were discarded.
func (s *Session) ExecBlock(ctx context.Context, stmts []Stmt, emit func(*Result) error) error {
	if len(stmts) < 2 {
		return fmt.Errorf("a transaction block needs a begin and a commit or rollback")
	}
	begin, end, body := stmts[0], stmts[len(stmts)-1], stmts[1:len(stmts)-1]
	if err := inBlock(begin, body); err != nil {
		return err
	}
	if _, ok := end.(*Rollback); ok {
		if emit == nil {
			return nil
		}
		return emit(&Result{Kind: "rollback", Statement: end.String(), Control: &Control{Statements: len(body)}})
	}
	// The statements as written are what the results echo: an embedded vector is the store's.
	embedded, ee := s.embedBlock(ctx, body)
	if ee != nil {
		return &TxError{Begin: begin.Pos(), Err: ee}
	}
	var results []*Result
	id, err := s.act.Tx(ctx, func(tx *mql.Tx) error {
		results = results[:0]
		for i, st := range embedded {
			res, err := s.eval(ctx, st, txWriter{tx}, tx.Reader())
			if err != nil {
				return &EvalError{Pos: st.Pos(), Err: err}
			}
			res.Statement = body[i].String()
			if s.hold != nil {
				if err := s.hold(res); err != nil {
					return &EvalError{Pos: st.Pos(), Err: err}
				}
			}
			results = append(results, res)
		}
		return nil
	})
	if err != nil {
		var ee *EvalError
		if errors.As(err, &ee) {
			return &TxError{Begin: begin.Pos(), Err: ee}
		}
		return &TxError{Begin: begin.Pos(), Err: &EvalError{Pos: end.Pos(), Err: err}}
	}
	if emit == nil {
		return nil
	}
	for _, res := range results {
		if err := emit(res); err != nil {
			return err
		}
	}
	c := &Control{Statements: len(body), Tx: id}
	for _, res := range results {
		if res.Receipt != nil && res.Receipt.Tx == id {
			c.At = res.Receipt.At
		}
	}
	return emit(&Result{Kind: "commit", Statement: end.String(), Control: c})
}

// ExecTx runs the statements of src, which starts at line and column of the script name, as
// one transaction begun at begin (see ExecBlock): all of them or none, results emitted at the
// end. src may not begin, commit or roll back a transaction of its own. It is how a script runs
// with -1 (--single-transaction), and how a client sends the statements of a begin … commit
// block it has gathered: a begin whose position's file name is "-1" is the whole script.
func (s *Session) ExecTx(ctx context.Context, name, src string, line, column int, begin Position, emit func(*Result) error) error {
	script, err := ParseAt(name, src, line, column)
	if err != nil {
		return err
	}
	stmts := make([]Stmt, 0, len(script.Stmts)+2)
	stmts = append(stmts, &Begin{Start: begin})
	stmts = append(stmts, script.Stmts...)
	return s.ExecBlock(ctx, append(stmts, &Commit{Start: begin}), emit)
}

// ExecStmts runs parsed statements as one transaction begun at begin: ExecTx for a caller that
// parsed them itself, a statement at a time.
func (s *Session) ExecStmts(ctx context.Context, begin Position, stmts []Stmt, emit func(*Result) error) error {
	all := make([]Stmt, 0, len(stmts)+2)
	all = append(all, &Begin{Start: begin})
	all = append(all, stmts...)
	return s.ExecBlock(ctx, append(all, &Commit{Start: begin}), emit)
}

// inBlock refuses what a transaction cannot hold, before anything of it is done: a statement
// that starts or ends one, and what inTx refuses (which rolls the transaction begun at begin
// back).
func inBlock(begin Stmt, body []Stmt) error {
	for _, st := range body {
		if IsControl(st) {
			return errorf(st.Pos(), "%s inside a transaction: a transaction holds reads and writes only", st.String())
		}
		if err := inTx(st); err != nil {
			return &TxError{Begin: begin.Pos(), Err: err}
		}
	}
	return nil
}

// TxError is an error that rolled a transaction back: nothing of it was written. It unwraps to
// the statement's error.
type TxError struct {
	Begin Position // where the transaction began
	Err   *EvalError
}

func (e *TxError) Error() string {
	if e.Begin.Filename == "-1" {
		return e.Err.Error() + "; the script ran as one transaction (-1), which was rolled back: nothing of it was written"
	}
	at := fmt.Sprintf("%d:%d", e.Begin.Line, e.Begin.Column)
	if e.Begin.Filename != e.Err.Pos.Filename {
		at = e.Begin.String()
	}
	return fmt.Sprintf("%s; the transaction begun at %s was rolled back: nothing of it was written", e.Err.Error(), at)
}

func (e *TxError) Unwrap() error { return e.Err }

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

// Eval evaluates one parsed statement. A begin, commit or rollback cannot be evaluated on its
// own: see Exec and ExecBlock.
func (s *Session) Eval(ctx context.Context, st Stmt) (*Result, error) {
	if IsControl(st) {
		return nil, errorf(st.Pos(), "%s: transactions run through Exec or ExecBlock", st.String())
	}
	res, err := s.eval(ctx, st, actorWriter{ctx, s.act}, s.act.Reader())
	if err != nil {
		return nil, &EvalError{Pos: st.Pos(), Err: err}
	}
	res.Statement = st.String()
	return res, nil
}

// inWords says an *mql.ActAsError as a session always has: in terms of the session and its
// statements, which are what its user wrote.
func inWords(err error) error {
	var e *mql.ActAsError
	switch {
	case !errors.As(err, &e):
		return err
	case e.Import:
		return fmt.Errorf("%w: this session acts as %s; only the owner (%s) may import", ErrActAs, e.Acting, e.Owner)
	case e.Read:
		return fmt.Errorf("%w: this session acts as %s and cannot read as %s", ErrActAs, e.Acting, e.Other)
	}
	return fmt.Errorf("%w: this session acts as %s, the statement says by %s", ErrActAs, e.Acting, e.Other)
}

// reader narrows base, a reader of the session's actor, by a statement's modifiers.
func (s *Session) reader(base mql.Reader, m Mods) (mql.Reader, error) {
	r := base
	if m.As != "" {
		r = r.As(m.As)
		// Refused before anything is done for the read (an embedding, a run's record).
		if err := r.Err(); err != nil {
			return r, inWords(err)
		}
	}
	switch {
	case m.AsOfTx != nil:
		r = r.AsOfTx(*m.AsOfTx)
	case m.AsOfTime != nil:
		r = r.AsOf(*m.AsOfTime)
	}
	if m.ForRun != "" {
		r = r.ForRun(m.ForRun)
	}
	return r, nil
}

func (s *Session) write(kind string, f func() (mql.Receipt, error)) (*Result, error) {
	rc, err := f()
	if err != nil {
		return nil, inWords(err)
	}
	return &Result{Kind: kind, Receipt: &rc}, nil
}

// writer makes the writes of a statement: on the store, or in a transaction.
type writer interface {
	AddPrincipal(mql.PrincipalSpec) (mql.Receipt, error)
	Grant(mql.GrantSpec) (mql.Receipt, error)
	Assert(mql.AssertSpec) (mql.Receipt, error)
	Revoke(mql.RevokeSpec) (mql.Receipt, error)
	Confirm(mql.ConfirmSpec) (mql.Receipt, error)
	Derive(mql.DeriveSpec) (mql.Receipt, error)
	Review(mql.ReviewSpec) (mql.Receipt, error)
	SetDecay(mql.DecaySpec) (mql.Receipt, error)
	Outcome(mql.OutcomeSpec) (mql.Receipt, error)
}

// actorWriter makes a statement's writes outside a transaction, each one of its own.
type actorWriter struct {
	ctx context.Context
	act mql.Actor
}

func (w actorWriter) AddPrincipal(s mql.PrincipalSpec) (mql.Receipt, error) {
	return w.act.AddPrincipal(w.ctx, s)
}
func (w actorWriter) Grant(s mql.GrantSpec) (mql.Receipt, error)     { return w.act.Grant(w.ctx, s) }
func (w actorWriter) Assert(s mql.AssertSpec) (mql.Receipt, error)   { return w.act.Assert(w.ctx, s) }
func (w actorWriter) Revoke(s mql.RevokeSpec) (mql.Receipt, error)   { return w.act.Revoke(w.ctx, s) }
func (w actorWriter) Confirm(s mql.ConfirmSpec) (mql.Receipt, error) { return w.act.Confirm(w.ctx, s) }
func (w actorWriter) Derive(s mql.DeriveSpec) (mql.Receipt, error)   { return w.act.Derive(w.ctx, s) }
func (w actorWriter) Review(s mql.ReviewSpec) (mql.Receipt, error)   { return w.act.Review(w.ctx, s) }
func (w actorWriter) SetDecay(s mql.DecaySpec) (mql.Receipt, error)  { return w.act.SetDecay(w.ctx, s) }
func (w actorWriter) Outcome(s mql.OutcomeSpec) (mql.Receipt, error) { return w.act.Outcome(w.ctx, s) }

type txWriter struct{ *mql.Tx }

func (s *Session) eval(ctx context.Context, st Stmt, w writer, base mql.Reader) (*Result, error) {
	switch st := st.(type) {
	case *Principal:
		return s.write("principal", func() (mql.Receipt, error) {
			return w.AddPrincipal(mql.PrincipalSpec{Name: st.Name, Type: mql.PrincipalType(st.Kind)})
		})
	case *Grant:
		return s.write("grant", func() (mql.Receipt, error) {
			return w.Grant(mql.GrantSpec{Grantee: st.Grantee, Right: mql.Right(st.Right), Scope: st.Scope.String(), By: st.By})
		})
	case *Assert:
		spec, err := EmbedClaim(ctx, s.embed, assertSpec(st))
		if err != nil {
			return nil, err
		}
		return s.write("assert", func() (mql.Receipt, error) { return w.Assert(spec) })
	case *Revoke:
		spec := mql.RevokeSpec{Ref: ClaimRefOf(st.Claim), By: st.By, Because: st.Because}
		if st.ReplacedBy != nil {
			spec.ReplacedByRef = ClaimRefOf(*st.ReplacedBy)
		}
		return s.write("revoke", func() (mql.Receipt, error) { return w.Revoke(spec) })
	case *Confirm:
		return s.write("confirm", func() (mql.Receipt, error) {
			return w.Confirm(mql.ConfirmSpec{Ref: ClaimRefOf(st.Claim), By: st.By})
		})
	case *Derive:
		spec := mql.DeriveSpec{Artifact: st.Artifact, By: st.By, Confidence: st.Confidence, SeenBy: st.SeenBy, Run: st.Run}
		for _, r := range st.From {
			spec.FromRefs = append(spec.FromRefs, NodeRefOf(r))
		}
		return s.write("derive", func() (mql.Receipt, error) { return w.Derive(spec) })
	case *Review:
		return s.write("review", func() (mql.Receipt, error) {
			return w.Review(mql.ReviewSpec{Ref: ArtifactRefOf(st.Artifact), By: st.By, Because: st.Because})
		})
	case *Outcome:
		return s.write("outcome", func() (mql.Receipt, error) {
			return w.Outcome(mql.OutcomeSpec{Run: st.Run, Result: mql.OutcomeResult(st.Result), Because: st.Because, By: st.By})
		})
	case *Decay:
		return s.write("decay", func() (mql.Receipt, error) {
			return w.SetDecay(mql.DecaySpec{Predicate: st.Predicate, HalfLife: st.HalfLife})
		})
	case ReadStmt:
		r, err := s.reader(base, st.Modifiers())
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
		for _, f := range st.Where {
			where = append(where, mql.Filter{Op: string(f.Op), Value: value(f.Value)})
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
		n, err := r.WhyRef(ctx, NodeRefOf(st.Node))
		return &Result{Kind: "why", Why: n}, err
	case *RevokedBy:
		rb, err := r.RevokedByRef(ctx, ClaimRefOf(st.Claim))
		return &Result{Kind: "revoked-by", RevokedBy: &rb}, err
	case *Impact:
		depth := 0
		if st.Depth != nil {
			depth = *st.Depth
		}
		imp, err := r.ImpactRef(ctx, NodeRefOf(st.Node), depth)
		return &Result{Kind: "impact", Impact: &imp}, err
	case *History:
		h, err := r.HistoryRef(ctx, NodeRefOf(st.Node))
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
	case *Search:
		opts := mql.SearchOptions{Limit: st.Limit, History: st.History, Vector: st.Vector, Signals: st.Signals}
		for _, p := range st.On {
			opts.On = append(opts.On, pattern(p))
		}
		opts, err := EmbedSearch(ctx, s.embed, st.Text, opts)
		if err != nil {
			return nil, err
		}
		res, err := r.Search(ctx, st.Text, opts)
		return &Result{Kind: "search", Search: &res}, err
	case *Context:
		if st.Question != nil {
			c, err := r.ContextFor(ctx, *st.Question, st.Budget)
			return &Result{Kind: "context", Context: &c}, err
		}
		subjects := st.Subjects
		if st.All {
			subjects = []string{"*"}
		}
		c, err := r.Context(ctx, subjects, st.Budget)
		return &Result{Kind: "context", Context: &c}, err
	case *Stats:
		stats, err := r.Stats(ctx)
		if err == nil && (st.For != "" || st.Since != nil) {
			var since time.Time
			if st.Since != nil {
				since = *st.Since
			}
			var m mql.MemoryStats
			m, err = r.MemoryStats(ctx, st.For, since)
			stats.Memory = &m
		}
		return &Result{Kind: "stats", Stats: &stats}, err
	case *Run:
		reps, err := r.Run(ctx, st.Name)
		return &Result{Kind: "run", Run: reps}, err
	case *Runs:
		var since time.Time
		if st.Since != nil {
			since = *st.Since
		}
		rs, err := r.Runs(ctx, st.By, since)
		return &Result{Kind: "runs", Runs: rs}, err
	case *Principals:
		ps, err := r.Principals(ctx, st.Pattern)
		return &Result{Kind: "principals", Principals: ps}, err
	case *Grants:
		gs, err := r.Grants(ctx, st.Grantee)
		return &Result{Kind: "grants", Grants: gs}, err
	case *Subjects:
		ss, err := r.Subjects(ctx, st.Pattern)
		return &Result{Kind: "subjects", Subjects: ss}, err
	case *Predicates:
		ps, err := r.Predicates(ctx, st.Pattern)
		return &Result{Kind: "predicates", Predicates: ps}, err
	case *Artifacts:
		as, err := r.Artifacts(ctx, st.Pattern)
		return &Result{Kind: "artifacts", Artifacts: as}, err
	case *Sources:
		ss, err := r.Sources(ctx, st.Pattern)
		return &Result{Kind: "sources", Sources: ss}, err
	case *Describe:
		d, err := r.Describe(ctx, st.Name)
		return &Result{Kind: "describe", Describe: &d}, err
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

// Names returns completion candidates from the store as the session sees it: principals,
// subjects, predicates, claim keys and references, and artifact names.
func (s *Session) Names(ctx context.Context) ([]string, error) {
	r, err := s.reader(s.act.Reader(), Mods{})
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

// assertSpec is the library's form of st.
func assertSpec(st *Assert) mql.AssertSpec {
	spec := mql.AssertSpec{
		Subject: st.Key.Subject, Predicate: st.Key.Predicate, Value: value(st.Value), By: st.By,
		Confidence: st.Confidence, Kind: mql.Kind(st.Kind), SeenBy: st.SeenBy, Vector: st.Vector,
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
	return spec
}

// embedsSearch reports whether a session with an embedder embeds the text of search st: it
// has text, no vector, and may rank by vector.
func embedsSearch(st *Search) bool {
	return st.Vector == nil && strings.TrimSpace(st.Text) != "" && (st.Signals == nil || slices.Contains(st.Signals, mql.SignalVector))
}

// embedBlock is body with the vectors the session's embedder gives its asserts without one
// and its searches that embed their text, asked for in one request before the transaction
// begins: a transaction holds the store's writer, which must not wait on the embedder.
func (s *Session) embedBlock(ctx context.Context, body []Stmt) ([]Stmt, *EvalError) {
	if s.embed == nil {
		return body, nil
	}
	var texts []string
	var at []int
	for i, st := range body {
		switch st := st.(type) {
		case *Assert:
			if st.Vector == nil {
				texts, at = append(texts, claimText(assertSpec(st))), append(at, i)
			}
		case *Search:
			if embedsSearch(st) {
				texts, at = append(texts, st.Text), append(at, i)
			}
		}
	}
	if len(texts) == 0 {
		return body, nil
	}
	vs, err := s.embed.Embed(ctx, texts)
	if err == nil && len(vs) != len(texts) {
		err = fmt.Errorf("the embedder gave %d vectors for %d texts", len(vs), len(texts))
	}
	if err != nil {
		st := body[at[0]]
		return nil, &EvalError{Pos: st.Pos(), Err: fmt.Errorf("embedding the transaction's claims and searches: %w; nothing was written", err)}
	}
	out := slices.Clone(body)
	for j, i := range at {
		switch st := out[i].(type) {
		case *Assert:
			c := *st
			c.Vector = vs[j]
			out[i] = &c
		case *Search:
			c := *st
			c.Vector = vs[j]
			out[i] = &c
		}
	}
	return out, nil
}

// claimText is what the session embeds of a claim: what its text index reads of it (its key,
// its value, what it quotes from its sources), one line each.
func claimText(spec mql.AssertSpec) string {
	lines := []string{spec.Subject + " " + spec.Predicate}
	if spec.Value.Type == mql.TypeString {
		lines = append(lines, spec.Value.Str)
	} else {
		lines = append(lines, spec.Value.String())
	}
	for _, src := range spec.Sources {
		if src.Excerpt != "" {
			lines = append(lines, src.Excerpt)
		}
	}
	return strings.Join(lines, "\n")
}
