package mql

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/provenance"
	"github.com/mql-dev/mql/query/syntax"
)

// Reader makes reads. The zero options read the newest state as the owner; As, AsOf and AsOfTx
// narrow it. A Reader is a value: narrowing returns a new one.
type Reader struct{ reads }

// reads holds a Reader's options and has its methods, so that a DB, which embeds it, has them
// too without a second declaration of each.
type reads struct {
	db       *DB
	as       string
	asOfTx   int64
	asOfTime time.Time
	asOfSet  bool      // asOfTime is set (the zero time is a time too: before every store)
	tx       *Tx       // reads inside a transaction: its pending state (Tx.Reader)
	run      string    // ForRun: record what each read serves to this run
	mark     *readMark // set by view: what a read for a run read at
	bound    bool      // an Actor's reader (Actor.Reader, a bound Tx's): it reads as actor only
	actor    string
}

// Reader returns a reader of the newest state, as the owner.
func (db *DB) Reader() Reader { return Reader{db.reads} }

// As returns a reader that sees only what principal may see.
func (r reads) As(principal string) Reader { r.as = nfc(principal); return Reader{r} }

// AsOf returns a reader of the store as it was at time t.
func (r reads) AsOf(t time.Time) Reader {
	r.asOfTime, r.asOfSet, r.asOfTx = t, true, 0
	return Reader{r}
}

// AsOfTx returns a reader of the store as it was right after transaction id.
func (r reads) AsOfTx(id int64) Reader {
	r.asOfTx, r.asOfTime, r.asOfSet = id, time.Time{}, false
	return Reader{r}
}

// view runs fn on a consistent view: a snapshot of the newest committed state, or inside a
// transaction its writer's handle.
func (r reads) view(ctx context.Context, fn func(v *index.View) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.actErr(); err != nil {
		return err
	}
	if r.tx != nil {
		// Inside a transaction: its writer's handle, which the transaction's own goroutine
		// reads (only the writer changes it meanwhile).
		if r.tx.ended || r.tx.tx == nil {
			return ErrTxDone
		}
		return r.viewOf(r.tx.ix, r.tx.tx.Time, fn)
	}
	err := r.db.store.Read(ctx, func(ix *index.Index) error {
		if err := r.viewOf(ix, r.db.clock(), fn); err != nil {
			return viewError{err}
		}
		return nil
	})
	if ve, ok := err.(viewError); ok {
		return ve.err
	}
	if err != nil {
		return err
	}
	return nil
}

// viewError is the error of a view's function, which the store returns as it is: told from
// the store's own, it is returned unchanged.
type viewError struct{ err error }

func (e viewError) Error() string { return e.err.Error() }

func (r reads) viewOf(ix *index.Index, now time.Time, fn func(v *index.View) error) error {
	asOf := ix.Head()
	switch {
	case r.asOfTx != 0:
		if r.asOfTx < 1 || record.TxID(r.asOfTx) > ix.Head() {
			return fmt.Errorf("as of tx %d: %w: transactions run from 1 to %d", r.asOfTx, ErrNotFound, ix.Head())
		}
		asOf = record.TxID(r.asOfTx)
		now = ix.TxTime(asOf)
	case r.asOfSet:
		asOf = ix.TxAt(r.asOfTime)
		if asOf == 0 {
			return fmt.Errorf("as of %s: %w: the store was created at %s", r.asOfTime.UTC().Format(time.RFC3339), ErrNotFound, ix.TxTime(1).Format(time.RFC3339))
		}
		now = r.asOfTime
	}
	if r.mark != nil {
		r.mark.at, r.mark.owner = asOf, ix.Meta().Owner
	}
	viewer := ""
	if r.as != "" {
		if v := ix.View(asOf, now, ""); v.Principal(r.as) == nil {
			return fmt.Errorf("as %s: %w: record it with `principal %s agent` first", r.as, ErrUnknownPrincipal, r.as)
		}
		viewer = r.as
	}
	return fn(ix.View(asOf, now, viewer))
}

// MaxImpactResults bounds the artifacts one impact answer lists; the answer says when it cut.
const MaxImpactResults = 100_000

// Filter compares a claim's value: Op is one of = != < <= > >=.
type Filter struct {
	Op    string
	Value Value
}

// pattern is a parsed "Subject", "Subject.predicate", "Subject.*", "*.predicate" or "*".
type pattern struct{ subject, predicate string } // "*" for any; predicate "" means any too

func parsePattern(s string) (pattern, error) {
	s = nfc(s)
	subj, pred, dotted := strings.Cut(s, ".")
	p := pattern{subject: subj, predicate: "*"}
	if dotted {
		p.predicate = pred
	}
	if p.subject != "*" {
		if err := checkName("subject", p.subject); err != nil {
			return p, err
		}
	}
	if p.predicate != "*" {
		if err := checkName("predicate", p.predicate); err != nil {
			return p, err
		}
	}
	return p, nil
}

// keys calls fn with each key p matches, in key order.
func (p pattern) keys(v *index.View, fn func(k record.Key)) {
	var ks []record.Key
	switch {
	case p.subject != "*" && p.predicate != "*":
		// One key: no list (a live lookup's every allocation counts).
		if k := (record.Key{Subject: p.subject, Predicate: p.predicate}); v.HasVersions(k) {
			fn(k)
		}
		return
	case p.subject != "*":
		ks = v.KeysOfSubject(p.subject)
	case p.predicate != "*":
		ks = v.KeysOfPredicate(p.predicate)
	default:
		ks = v.Keys()
	}
	for _, k := range ks {
		fn(k)
	}
}

// Live returns the live claims that match the pattern pat ("Klarveld",
// "Klarveld.price_per_seat", "Klarveld.*", "*.soc2" or "*") and every filter.
func (r reads) Live(ctx context.Context, pat string, where ...Filter) ([]Claim, error) {
	if r.run != "" {
		stmt := func() syntax.Stmt { return liveStatement(pat, where) }
		return forRun(ctx, r, stmt, func(r reads) ([]Claim, error) { return r.Live(ctx, pat, where...) }, claimRefs)
	}
	p, err := parsePattern(pat)
	if err != nil {
		return nil, err
	}
	where = append([]Filter(nil), where...)
	for i, f := range where {
		if err := checkOp(f.Op); err != nil {
			return nil, err
		}
		where[i].Value = nfcValue(f.Value)
	}
	out := []Claim{}
	err = r.view(ctx, func(v *index.View) error {
		p.keys(v, func(k record.Key) {
			for _, e := range v.LiveClaims(k) {
				if matches(e.Value, where) {
					out = append(out, claimOf(v, e))
				}
			}
		})
		return nil
	})
	return out, err
}

func checkOp(op string) error {
	switch op {
	case "=", "!=", "<", "<=", ">", ">=":
		return nil
	}
	return fmt.Errorf("operator %q: %w: use = != < <= > >=", op, ErrInvalid)
}

func matches(x Value, where []Filter) bool {
	for _, f := range where {
		if !compare(x, f.Op, f.Value) {
			return false
		}
	}
	return true
}

// compare applies op. Values of different types are never equal and never ordered.
func compare(a Value, op string, b Value) bool {
	if a.Type != b.Type {
		return op == "!="
	}
	c := cmpValues(a, b)
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	case ">=":
		return c >= 0
	}
	return false
}

// cmpValues orders values: by type name first, then within a type.
func cmpValues(a, b Value) int {
	if a.Type != b.Type {
		return cmp.Compare(a.Type, b.Type)
	}
	switch a.Type {
	case record.Number:
		return cmp.Compare(a.Num, b.Num)
	case record.Bool:
		switch {
		case a.Bool == b.Bool:
			return 0
		case !a.Bool:
			return -1
		}
		return 1
	case record.Time:
		return a.Time.Compare(b.Time)
	}
	return cmp.Compare(a.Str, b.Str)
}

// Why returns the provenance tree of a claim ("S.p" for the live one, "S.p@N") or an artifact
// ("name", "name@N"): sources, asserter and kind, the standing behind it, confirmations,
// revocation, and the versions it supersedes with their own sources; for an artifact, what it
// was derived from, down to sources.
func (r reads) Why(ctx context.Context, ref string) (*Node, error) { return r.why(ctx, textRef(ref)) }

// WhyRef is Why of a reference held typed.
func (r reads) WhyRef(ctx context.Context, ref NodeRef) (*Node, error) {
	return r.why(ctx, typedRef(ref))
}

func (r reads) why(ctx context.Context, ref refArg) (*Node, error) {
	if r.run != "" {
		return forRun(ctx, r, func() syntax.Stmt { return &syntax.Why{Node: ref.stmtRef()} }, func(r reads) (*Node, error) { return r.why(ctx, ref) }, nodeRefs)
	}
	var out *Node
	err := r.view(ctx, func(v *index.View) error {
		node, err := ref.node()
		if err != nil {
			return err
		}
		// A key whose live claim was revoked or expired (or that has none any more) is
		// explained by its newest version: what it said, and what happened to it.
		if c, ok := node.(ClaimRef); ok && c.Version == 0 {
			if key := c.id().Key; v.LiveClaim(key) == nil {
				if vs := v.Versions(key); len(vs) > 0 {
					e := vs[len(vs)-1]
					out = whyNode(v, nil, provenance.WhyOfClaim(v, e, true), nil)
					st, _ := v.State(e)
					out.Note = fmt.Sprintf("%s has no live claim: %s, its newest version, is %s", key, e.ID, st)
					return nil
				}
			}
		}
		n, err := resolveNode(v, node)
		if err != nil {
			return err
		}
		if n.Claim != nil {
			out = whyNode(v, nil, provenance.WhyOfClaim(v, v.Claim(*n.Claim), true), nil)
		} else {
			out = whyNode(v, provenance.NewCache(v), provenance.WhyOfArtifact(v, v.Artifact(*n.Artifact)), nil)
		}
		return nil
	})
	return out, err
}

// whyNode renders a why tree for v's reader. parent is the claim a source node belongs to,
// as rendered.
func whyNode(v *index.View, pc *provenance.Cache, w *provenance.WhyNode, parent *Claim) *Node {
	n := &Node{Relation: w.Relation}
	switch w.Kind {
	case provenance.WhyClaim:
		c := claimOf(v, w.Claim)
		n.Kind, n.Claim, parent = NodeClaim, &c, &c
	case provenance.WhyArtifact:
		a := artifactOf(v, pc, w.Artifact)
		n.Kind, n.Artifact = NodeArtifact, &a
	case provenance.WhySource:
		s := parent.Sources[w.Source]
		n.Kind, n.Source = NodeSource, &s
	case provenance.WhyGrant:
		g := grantInfo(v, w.Grant)
		n.Kind, n.Grant = NodeGrant, &g
	case provenance.WhyConfirmation:
		cf := w.Confirmation
		n.Kind, n.By, n.At, n.Standing, n.StandingGrant = NodeConfirmation, cf.By, v.TxTime(cf.Tx), cf.Standing, standingGrant(v, cf.Standing)
	case provenance.WhyRevocation:
		r := revocationOf(v, w.Revocation)
		n.Kind, n.Revocation = NodeRevocation, &r
	case provenance.WhyReview:
		r := reviewOf(v, w.Review)
		n.Kind, n.Review = NodeReview, &r
	}
	for _, c := range w.Children {
		n.Children = append(n.Children, whyNode(v, pc, c, parent))
	}
	return n
}

// RevokedBy says who revoked a claim version, when, why, with which standing and what replaced
// it; if it was not revoked, the result has no Revocation and the claim carries its state.
func (r reads) RevokedBy(ctx context.Context, ref string) (RevokedByResult, error) {
	return r.revokedBy(ctx, textRef(ref))
}

// RevokedByRef is RevokedBy of a reference held typed.
func (r reads) RevokedByRef(ctx context.Context, ref ClaimRef) (RevokedByResult, error) {
	return r.revokedBy(ctx, typedRef(ref))
}

func (r reads) revokedBy(ctx context.Context, ref refArg) (RevokedByResult, error) {
	if r.run != "" {
		return forRun(ctx, r, func() syntax.Stmt { return &syntax.RevokedBy{Claim: ref.stmtRef()} }, func(r reads) (RevokedByResult, error) { return r.revokedBy(ctx, ref) },
			func(x RevokedByResult) []string { return []string{x.Claim.Ref} })
	}
	var out RevokedByResult
	err := r.view(ctx, func(v *index.View) error {
		c, err := ref.claim()
		if err != nil {
			return err
		}
		e, err := resolveClaim(v, c.id())
		if err != nil {
			return err
		}
		out.Claim = claimOf(v, e)
		if rv := v.Revocation(e); rv != nil {
			x := revocationOf(v, rv)
			out.Revocation = &x
		}
		cid := e.ID
		out.Runs = servedRuns(v, []record.NodeRef{{Claim: &cid}})
		return nil
	})
	return out, err
}

// Impact lists every artifact that depends, transitively, on a claim or artifact, each with the
// path that links them and its review state. A reference without @N means every version of the
// key or artifact. depth bounds the hops (0: no bound). Paths share storage with each other:
// read them, do not write to them.
func (r reads) Impact(ctx context.Context, ref string, depth int) (ImpactResult, error) {
	return r.impact(ctx, textRef(ref), depth)
}

// ImpactRef is Impact of a reference held typed.
func (r reads) ImpactRef(ctx context.Context, ref NodeRef, depth int) (ImpactResult, error) {
	return r.impact(ctx, typedRef(ref), depth)
}

func (r reads) impact(ctx context.Context, ref refArg, depth int) (ImpactResult, error) {
	if r.run != "" {
		stmt := func() syntax.Stmt {
			s := &syntax.Impact{Node: ref.stmtRef()}
			if depth > 0 {
				s.Depth = &depth
			}
			return s
		}
		return forRun(ctx, r, stmt, func(r reads) (ImpactResult, error) { return r.impact(ctx, ref, depth) },
			func(x ImpactResult) []string {
				var refs []string
				for _, d := range x.Dependents {
					refs = append(refs, d.Artifact.Ref)
				}
				return refs
			})
	}
	out := ImpactResult{Dependents: []Dependent{}}
	if depth < 0 {
		return out, fmt.Errorf("depth %d: %w: depth is 0 (unbounded) or more", depth, ErrInvalid)
	}
	err := r.view(ctx, func(v *index.View) error {
		start, err := startNodes(v, ref)
		if err != nil {
			return err
		}
		for _, s := range start {
			out.Of = append(out.Of, s.String())
			out.Changes = append(out.Changes, changeOf(v, s))
		}
		reached, truncated := provenance.Impact(v, start, depth, MaxImpactResults)
		out.Truncated = truncated
		pc := provenance.NewCache(v)
		// The paths of the start nodes, then those of the dependents.
		paths := make([]impactPath, len(start)+len(reached))
		for i, s := range start {
			paths[i].path = []string{s.String()}
		}
		out.Dependents = make([]Dependent, 0, len(reached))
		for i, d := range reached {
			dep := Dependent{Artifact: artifactOf(v, pc, d.Artifact), Depth: d.Depth}
			from := d.From
			if d.Depth > 1 {
				from += len(start)
			}
			p := paths[from].extend(dep.Artifact.Ref)
			paths[len(start)+i] = p
			dep.Path = slices.Clip(p.path)
			out.Dependents = append(out.Dependents, dep)
		}
		out.Runs = servedRuns(v, start)
		return nil
	})
	return out, err
}

// impactPath is a path of an impact answer while the answer is spelled out. A dependent's path
// is the path of the node it was reached from plus itself: the first extension of a path
// appends to its array in place, later ones copy it, so a chain of n artifacts costs n strings
// rather than n²/2. The paths handed out share arrays but are clipped to their length, so an
// append by the caller copies rather than overwriting another path.
type impactPath struct {
	path     []string
	extended bool // the array slot after path is taken by the path that extended it
}

func (p *impactPath) extend(ref string) impactPath {
	path := p.path
	if p.extended {
		path = slices.Clip(path)
	}
	p.extended = true
	return impactPath{path: append(path, ref)}
}

func startNodes(v *index.View, ref refArg) ([]record.NodeRef, error) {
	node, err := ref.node()
	if err != nil {
		return nil, err
	}
	var out []record.NodeRef
	switch n := node.(type) {
	case ClaimRef:
		if n.Version != 0 {
			break
		}
		for _, e := range v.Versions(n.id().Key) {
			cid := e.ID
			out = append(out, record.NodeRef{Claim: &cid})
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("%s: %w: no claim was ever recorded for it", ref, ErrNotFound)
		}
		return out, nil
	case ArtifactRef:
		if n.Version != 0 {
			break
		}
		for _, a := range v.ArtifactVersions(n.Name) {
			aid := a.ID
			out = append(out, record.NodeRef{Artifact: &aid})
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("artifact %s: %w: derive it first", ref, ErrNotFound)
		}
		return out, nil
	}
	n, err := resolveNode(v, node)
	if err != nil {
		return nil, err
	}
	return []record.NodeRef{n}, nil
}

// History lists every version of a key ("S.p") or artifact ("name"), oldest first, with state,
// who, when and source.
func (r reads) History(ctx context.Context, ref string) (HistoryResult, error) {
	return r.history(ctx, textRef(ref))
}

// HistoryRef is History of a reference held typed, which names no version.
func (r reads) HistoryRef(ctx context.Context, ref NodeRef) (HistoryResult, error) {
	return r.history(ctx, typedRef(ref))
}

func (r reads) history(ctx context.Context, ref refArg) (HistoryResult, error) {
	if r.run != "" {
		return forRun(ctx, r, func() syntax.Stmt { return &syntax.History{Node: ref.stmtRef()} }, func(r reads) (HistoryResult, error) { return r.history(ctx, ref) },
			func(x HistoryResult) []string {
				refs := claimRefs(x.Claims)
				for _, a := range x.Artifacts {
					refs = append(refs, a.Ref)
				}
				return refs
			})
	}
	out := HistoryResult{Of: ref.text}
	err := r.view(ctx, func(v *index.View) error {
		if strings.Contains(ref.text, "@") {
			return fmt.Errorf("history %s: %w: name the key or artifact without @N", ref, ErrBadReference)
		}
		node, err := ref.node()
		if err != nil {
			return err
		}
		if c, ok := node.(ClaimRef); ok {
			vs := v.Versions(c.id().Key)
			out.Claims = make([]Claim, 0, len(vs))
			for _, e := range vs {
				out.Claims = append(out.Claims, claimOf(v, e))
			}
			if len(out.Claims) == 0 {
				return fmt.Errorf("%s: %w: no claim was ever recorded for it", ref, ErrNotFound)
			}
			return nil
		}
		pc := provenance.NewCache(v)
		for _, a := range v.ArtifactVersions(node.(ArtifactRef).Name) {
			out.Artifacts = append(out.Artifacts, artifactOf(v, pc, a))
		}
		if len(out.Artifacts) == 0 {
			return fmt.Errorf("artifact %s: %w: derive it first", ref, ErrNotFound)
		}
		return nil
	})
	return out, err
}

// Conflicts lists contested claims beside the live claim they dispute, for the given subjects
// (every subject if none).
func (r reads) Conflicts(ctx context.Context, subjects ...string) ([]Conflict, error) {
	if r.run != "" {
		return forRun(ctx, r, func() syntax.Stmt { return &syntax.Conflicts{Subjects: subjects} },
			func(r reads) ([]Conflict, error) { return r.Conflicts(ctx, subjects...) },
			func(cs []Conflict) []string {
				var refs []string
				for _, c := range cs {
					if c.Live != nil {
						refs = append(refs, c.Live.Ref)
					}
					refs = append(refs, claimRefs(c.Contested)...)
				}
				return refs
			})
	}
	subjects = nfcAll(subjects)
	for _, s := range subjects {
		if err := checkName("subject", s); err != nil {
			return nil, err
		}
	}
	out := []Conflict{}
	err := r.view(ctx, func(v *index.View) error {
		var keys []record.Key
		if len(subjects) == 0 {
			keys = v.Keys()
		}
		for _, s := range subjects {
			keys = append(keys, v.KeysOfSubject(s)...)
		}
		for _, k := range keys {
			// Contested claims dispute the live claim of their own audience.
			byAudience := map[string]*Conflict{}
			var order []string
			for _, e := range v.Versions(k) {
				if st, _ := v.State(e); st != Contested {
					continue
				}
				cf := byAudience[e.Audience()]
				if cf == nil {
					cf = &Conflict{Key: k.String()}
					if l := v.LiveIn(k, e.Audience()); l != nil && v.Claim(l.ID) != nil {
						c := claimOf(v, l)
						cf.Live = &c
					}
					byAudience[e.Audience()] = cf
					order = append(order, e.Audience())
				}
				cf.Contested = append(cf.Contested, claimOf(v, e))
			}
			for _, a := range order {
				out = append(out, *byAudience[a])
			}
		}
		return nil
	})
	return out, err
}

// DefaultGate is the entropy gate, in bits, used when none is given: at or below the first
// bound the decision is act, at or below the second retrieve, above it decline.
var DefaultGate = [2]float64{1.0, 2.5}

// Beliefs returns the distribution of effective confidence over the live claims matching the
// pattern pat (claims whose value is false are evidence against and are left out), its entropy in
// bits, and the gate's decision. gate nil means DefaultGate.
func (r reads) Beliefs(ctx context.Context, pat string, gate *[2]float64) (BeliefsResult, error) {
	if r.run != "" {
		stmt := func() syntax.Stmt {
			s := &syntax.Beliefs{Pattern: syntaxPattern(pat)}
			if gate != nil {
				s.Gate = &syntax.Gate{Low: gate[0], High: gate[1]}
			}
			return s
		}
		return forRun(ctx, r, stmt, func(r reads) (BeliefsResult, error) { return r.Beliefs(ctx, pat, gate) },
			func(x BeliefsResult) []string {
				var refs []string
				for _, b := range x.Candidates {
					refs = append(refs, b.Claim.Ref)
				}
				return refs
			})
	}
	g := DefaultGate
	if gate != nil {
		g = *gate
	}
	out := BeliefsResult{Pattern: pat, Gate: g, Candidates: []Belief{}}
	if !(g[0] >= 0 && g[1] >= g[0]) {
		return out, fmt.Errorf("gate %g %g: %w: give two bounds in bits, low ≤ high", g[0], g[1], ErrInvalid)
	}
	p, err := parsePattern(pat)
	if err != nil {
		return out, err
	}
	err = r.view(ctx, func(v *index.View) error {
		total := 0.0
		p.keys(v, func(k record.Key) {
			for _, e := range v.LiveClaims(k) {
				if e.Value.Type == record.Bool && !e.Value.Bool {
					continue
				}
				b := Belief{Subject: k.Subject, Claim: claimOf(v, e)}
				b.Weight = b.Claim.Effective
				total += b.Weight
				out.Candidates = append(out.Candidates, b)
			}
		})
		// With nothing to believe there is no distribution: the gate declines, and the entropy
		// is reported as 0 rather than an infinity that JSON cannot carry.
		out.Decision = Decline
		if total <= 0 {
			return nil
		}
		h := 0.0
		for i := range out.Candidates {
			pr := out.Candidates[i].Weight / total
			out.Candidates[i].Probability = pr
			if pr > 0 {
				h -= pr * math.Log2(pr)
			}
		}
		out.Entropy = h
		slices.SortStableFunc(out.Candidates, func(a, b Belief) int { return cmp.Compare(b.Probability, a.Probability) })
		out.Top = out.Candidates[0].Subject
		switch {
		case h <= g[0]:
			out.Decision = Act
		case h <= g[1]:
			out.Decision = Retrieve
		}
		return nil
	})
	return out, err
}

// Stats summarises the store as the reader sees it.
func (r reads) Stats(ctx context.Context) (Stats, error) {
	out := Stats{ByState: map[State]int{Live: 0, Superseded: 0, Revoked: 0, Expired: 0, Contested: 0}}
	err := r.view(ctx, func(v *index.View) error {
		out.Transactions = int(v.AsOf())
		out.Principals = len(v.Principals())
		srcs := map[string]bool{}
		for _, k := range v.Keys() {
			out.Keys++
			for _, e := range v.Versions(k) {
				out.Claims++
				st, _ := v.State(e)
				out.ByState[st]++
				if v.Revocation(e) != nil {
					out.Revocations++
				}
				for _, s := range e.Sources {
					srcs[record.SourceName(s)] = true
				}
			}
		}
		out.Sources = len(srcs)
		out.Contested = out.ByState[Contested]
		pc := provenance.NewCache(v)
		for _, name := range v.ArtifactNames() {
			for _, a := range v.ArtifactVersions(name) {
				if v.ArtifactSupersededBy(a) != nil {
					continue
				}
				out.Artifacts++
				if pc.ReviewState(a).Needs {
					out.NeedsReview++
				}
			}
		}
		if out.Artifacts > 0 {
			out.StaleRate = float64(out.NeedsReview) / float64(out.Artifacts)
		}
		if m := memoryStats(v, "", time.Time{}); m.Runs > 0 {
			out.Memory = &m
		}
		return nil
	})
	return out, err
}

// Names lists what the reader can name, for completion: principals, subjects, predicates,
// claim keys with every version reference, and artifact names. Unordered, may repeat.
func (r reads) Names(ctx context.Context) ([]string, error) {
	var out []string
	err := r.view(ctx, func(v *index.View) error {
		for _, p := range v.Principals() {
			out = append(out, p.Name)
		}
		for _, k := range v.Keys() {
			out = append(out, k.Subject, k.Predicate, k.String())
			for _, e := range v.Versions(k) {
				out = append(out, e.ID.String())
			}
		}
		out = append(out, v.ArtifactNames()...)
		return nil
	})
	return out, err
}

// Catalog is what a reader can name, by kind, for a search box: each list sorted, without
// repeats.
type Catalog struct {
	Principals []string `json:"principals"`
	Subjects   []string `json:"subjects"`
	Predicates []string `json:"predicates"`
	Keys       []string `json:"keys"`
	Artifacts  []string `json:"artifacts"`
}

// Catalog lists the principals, subjects, predicates, claim keys and artifact names the reader
// may see.
func (r reads) Catalog(ctx context.Context) (Catalog, error) {
	var c Catalog
	err := r.view(ctx, func(v *index.View) error {
		for _, p := range v.Principals() {
			c.Principals = append(c.Principals, p.Name)
		}
		for _, k := range v.Keys() {
			c.Subjects = append(c.Subjects, k.Subject)
			c.Predicates = append(c.Predicates, k.Predicate)
			c.Keys = append(c.Keys, k.String())
		}
		c.Artifacts = append(c.Artifacts, v.ArtifactNames()...)
		return nil
	})
	for _, l := range []*[]string{&c.Principals, &c.Subjects, &c.Predicates, &c.Keys, &c.Artifacts} {
		if *l == nil {
			*l = []string{}
		}
		slices.Sort(*l)
		*l = slices.Compact(*l)
	}
	return c, err
}

func changeOf(v *index.View, n record.NodeRef) Change {
	ch := Change{Ref: n.String(), State: Live}
	if n.Claim != nil {
		e := v.Claim(*n.Claim)
		ch.State, _ = v.State(e)
		if next := v.SupersededBy(e); next != nil {
			ch.ReplacedBy = next.ID.String()
		}
		if rv := v.Revocation(e); rv != nil {
			ch.ReplacedBy = visibleRef(v, rv.ReplacedBy)
		}
		return ch
	}
	a := v.Artifact(*n.Artifact)
	if next := v.ArtifactSupersededBy(a); next != nil {
		ch.State = Superseded
		if v.Artifact(next.ID) != nil {
			ch.ReplacedBy = next.ID.String()
		}
	}
	return ch
}
