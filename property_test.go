package mql_test

// Authority and visibility, property-tested: seeded random sequences of writes by random
// principals with random grants and random seen-by, checked after every step against a simple
// model written here, independently of the implementation.
//
//	MQL_PROPERTY_SEEDS  how many seeds to run (default 2: seeds 1 and 2)
//	MQL_PROPERTY_SEED   run this one seed only
//	MQL_PROPERTY_OPS    operations per seed (default 1000)
//
// The invariants:
//   - a write succeeds exactly when the model says the principal has standing and the write is
//     valid; a write refused for lack of standing fails with ErrNoStanding;
//   - every refused write changes nothing: quad count and head are unchanged;
//   - after every write the state of every version of the key it touched (and, every 50 steps,
//     of every key) is the model's: no claim changes state through anyone without standing;
//   - a reader As(P) never receives a claim, artifact, value, source or key that P may not see,
//     from any read (Live, Find, Why, RevokedBy, Impact, History, Conflicts, Beliefs, Context,
//     Stats, Export, Names): every claim and artifact reference, value string, source id and
//     key appearing anywhere in a result (walked as JSON) or an export is checked against the
//     model; and Live, History and Stats agree with the model exactly;
//   - (twins-seedN) what a principal is told does not depend on what it may not see: two
//     stores get the same writes of a visible team, and the first also random writes of a
//     hidden team seen by the hidden team only (claims, artifacts of the same names, sources
//     of the same ids with other details, values of other types, revocations, confirmations,
//     reviews, reads for runs, decisions in runs and outcomes under the same run names); both
//     teams also read for runs; every answer a visible principal gets — to its writes, refused
//     or not, and to every read (runs, memory metrics and the runs of impact and revoked-by
//     included), as of now and as of earlier transactions — must be the same in both stores,
//     up to the version and transaction numbers docs/MODEL.md says a principal may see move.
//     MQL_PROPERTY_TWIN_OPS sets the operations per seed (default 300).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// ---- the model -------------------------------------------------------------------------------

type pmClaim struct {
	ref       string
	key       string
	ver       int
	by        string
	kind      mql.Kind
	value     string
	source    string
	seenBy    []string
	aud       string
	state     mql.State
	confirmed bool
}

type pmArtifact struct {
	ref    string
	name   string
	ver    int
	seenBy []string
	aud    string
	state  mql.State // live, or superseded by a later version of its audience
}

type pmGrant struct {
	grantee string
	right   mql.Right
	scope   string
	by      string
}

type pmModel struct {
	owner      string
	strict     bool
	principals map[string]mql.PrincipalType
	order      []string
	grants     []pmGrant
	claims     map[string]*pmClaim // by ref
	keys       map[string][]*pmClaim
	arts       map[string][]*pmArtifact
	values     map[string][]*pmClaim // value string -> claims holding it
	sources    map[string]*pmClaim
}

func newModel(strict bool) *pmModel {
	return &pmModel{owner: "owner", strict: strict, principals: map[string]mql.PrincipalType{"owner": mql.User},
		order: []string{"owner"}, claims: map[string]*pmClaim{}, keys: map[string][]*pmClaim{},
		arts: map[string][]*pmArtifact{}, values: map[string][]*pmClaim{}, sources: map[string]*pmClaim{}}
}

func pmCanSee(p string, seenBy []string, owner string) bool {
	return p == owner || len(seenBy) == 0 || slices.Contains(seenBy, p)
}

func (m *pmModel) sees(p string, seenBy []string) bool { return pmCanSee(p, seenBy, m.owner) }

// writesFor reports whether p may write something seen by seenBy: only into an audience it is
// in, unless it is the owner.
func (m *pmModel) writesFor(p string, seenBy []string) bool {
	return len(seenBy) == 0 || p == m.owner || slices.Contains(seenBy, p)
}

func pmAudience(seenBy []string) string {
	s := slices.Clone(seenBy)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// pmCoversScope is the scope rule of docs/MODEL.md, written again: a grant over scope covers
// target, a key "S.p" or a scope.
func pmCoversScope(scope, target string) bool {
	if scope == "*" || scope == target {
		return true
	}
	if target == "*" {
		return false
	}
	ts, tp, tdot := strings.Cut(target, ".")
	switch {
	case !strings.Contains(scope, "."):
		return tdot && tp == scope
	case strings.HasSuffix(scope, ".*"):
		return tdot && ts == strings.TrimSuffix(scope, ".*")
	}
	return false
}

func (m *pmModel) holds(p string, right mql.Right, target string) bool {
	if p == m.owner {
		return true
	}
	for _, g := range m.grants {
		if g.grantee == p && g.right == right && pmCoversScope(g.scope, target) {
			return true
		}
	}
	return false
}

func pmRank(k mql.Kind) int {
	switch k {
	case mql.Confirmed:
		return 3
	case mql.Observed:
		return 2
	}
	return 1
}

func (c *pmClaim) effKind() mql.Kind {
	if c.confirmed {
		return mql.Confirmed
	}
	return c.kind
}

// live is the live claim of key in audience aud, or nil.
func (m *pmModel) live(key, aud string) *pmClaim {
	for _, c := range m.keys[key] {
		if c.aud == aud && c.state == mql.Live {
			return c
		}
	}
	return nil
}

func (m *pmModel) visibleClaim(p, ref string) *pmClaim {
	c := m.claims[ref]
	if c == nil || !m.sees(p, c.seenBy) {
		return nil
	}
	return c
}

func (m *pmModel) visibleArtifact(p, ref string) *pmArtifact {
	name, ver, _ := strings.Cut(ref, "@")
	n, _ := strconv.Atoi(ver)
	as := m.arts[name]
	if n < 1 || n > len(as) || !m.sees(p, as[n-1].seenBy) {
		return nil
	}
	return as[n-1]
}

// ---- the test --------------------------------------------------------------------------------

var (
	pmSubjects   = []string{"S0", "S1", "S2"}
	pmPredicates = []string{"p0", "p1"}
	pmArtNames   = []string{"art0", "art1", "art2"}
	pmScopes     = []string{"*", "p0", "p1", "S0.*", "S1.*", "S0.p0", "S2.p1"}
	pmRights     = []mql.Right{mql.RightAssert, mql.RightRevoke, mql.RightConfirm, mql.RightGrant}
)

func pmEnv(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q", name, v)
	}
	return n
}

func TestAuthorityAndVisibilityProperties(t *testing.T) {
	ops := pmEnv(t, "MQL_PROPERTY_OPS", 1000)
	seeds := []uint64{}
	if s := pmEnv(t, "MQL_PROPERTY_SEED", 0); s != 0 {
		seeds = append(seeds, uint64(s))
	} else {
		for s := range pmEnv(t, "MQL_PROPERTY_SEEDS", 2) {
			seeds = append(seeds, uint64(s+1))
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			p := &pmRun{t: t, rng: rand.New(rand.NewPCG(seed, 99)), m: newModel(seed%2 == 0), counts: map[string]int{}}
			p.f = open(t, mql.Options{Strict: p.m.strict})
			p.setup()
			for step := range ops {
				p.step = step
				p.write()
				p.checkStates(step%50 == 0)
				p.reads(p.m.order[p.rng.IntN(len(p.m.order))], step%25 == 0)
				p.f.clk.Add(time.Second)
			}
			for _, who := range p.m.order {
				p.reads(who, true)
			}
			p.checkStates(true)
			// The store the random history left passes the integrity check, standings included.
			rep, err := p.f.db.Check(p.f.ctx)
			if err != nil || !rep.OK() {
				t.Fatalf("check: %v %v", err, rep.Problems)
			}
			t.Logf("seed %d (strict %v): %d operations; %v; %d reads as %d principals, %d result texts scanned against the model",
				seed, p.m.strict, ops, p.countLine(), p.counts["reads"], len(p.m.order), p.counts["texts"])
		})
		t.Run(fmt.Sprintf("twins-seed%d", seed), func(t *testing.T) {
			runTwins(t, seed, pmEnv(t, "MQL_PROPERTY_TWIN_OPS", 300))
		})
	}
}

type pmRun struct {
	t      *testing.T
	f      *fixture
	rng    *rand.Rand
	m      *pmModel
	step   int
	n      int // value and source counter
	counts map[string]int
}

func (p *pmRun) countLine() string {
	var keys []string
	for k := range p.counts {
		if k != "reads" && k != "texts" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, p.counts[k])
	}
	return b.String()
}

func (p *pmRun) pick(xs []string) string { return xs[p.rng.IntN(len(xs))] }

func (p *pmRun) setup() {
	for _, pr := range []struct {
		name string
		typ  mql.PrincipalType
	}{{"alice", mql.User}, {"bob", mql.User}, {"a1", mql.Agent}, {"a2", mql.Agent}, {"a3", mql.Tool}} {
		p.f.ok(p.f.db.AddPrincipal(p.f.ctx, mql.PrincipalSpec{Name: pr.name, Type: pr.typ, By: "owner"}))
		p.m.principals[pr.name] = pr.typ
		p.m.order = append(p.m.order, pr.name)
	}
}

// expect runs a write the model predicts: want nil means it must succeed; otherwise it must
// fail with that sentinel and change nothing.
func (p *pmRun) expect(what string, want error, write func() (mql.Receipt, error)) (mql.Receipt, bool) {
	p.t.Helper()
	ctx := p.f.ctx
	q0, _ := p.f.db.QuadCount(ctx)
	h0, _ := p.f.db.Head(ctx)
	rc, err := write()
	q1, _ := p.f.db.QuadCount(ctx)
	h1, _ := p.f.db.Head(ctx)
	if want == errNoop {
		if err != nil || !rc.Unchanged || h1 != h0 || q1 != q0 {
			p.t.Fatalf("step %d: %s: the model expects a no-op, got %v %+v, head %d → %d", p.step, what, err, rc, h0, h1)
		}
		p.counts["no-op"]++
		return rc, false
	}
	if want == nil {
		if err != nil {
			p.t.Fatalf("step %d: %s: the model expects success, got %v", p.step, what, err)
		}
		if h1 != h0+1 || q1 <= q0 {
			p.t.Fatalf("step %d: %s succeeded but head %d → %d, quads %d → %d", p.step, what, h0, h1, q0, q1)
		}
		p.counts["accepted"]++
		return rc, true
	}
	if err == nil {
		p.t.Fatalf("step %d: %s succeeded; the model expects %v", p.step, what, want)
	}
	if !errors.Is(err, want) {
		p.t.Fatalf("step %d: %s: got %v, the model expects %v", p.step, what, err, want)
	}
	if q1 != q0 || h1 != h0 {
		p.t.Fatalf("step %d: refused %s changed the store: quads %d → %d, head %d → %d", p.step, what, q0, q1, h0, h1)
	}
	p.counts["refused ("+errName(want)+")"]++
	return rc, false
}

// errNoop is what the model expects of a write that finds its record there already.
var errNoop = errors.New("no-op")

func errName(err error) string {
	for _, e := range []struct {
		err  error
		name string
	}{{mql.ErrNoStanding, "no standing"}, {mql.ErrNotFound, "not found"}, {mql.ErrConflict, "conflict"}, {mql.ErrInvalid, "invalid"}, {mql.ErrBadReference, "bad reference"}, {mql.ErrValueType, "value type"}, {mql.ErrCycle, "cycle"}} {
		if errors.Is(err, e.err) {
			return e.name
		}
	}
	return err.Error()
}

func (p *pmRun) randomSeenBy(by string) []string {
	switch r := p.rng.IntN(8); {
	case r < 4:
		return nil
	case r < 6:
		return []string{by}
	case r < 7:
		return []string{by, p.pick(p.m.order)}
	default:
		return []string{p.pick(p.m.order)}
	}
}

func (p *pmRun) write() {
	m := p.m
	by := p.pick(m.order)
	if p.rng.IntN(4) == 0 {
		by = "owner"
	}
	switch r := p.rng.IntN(100); {
	case r < 8:
		p.grant(by)
	case r < 10:
		p.addPrincipal(by)
	case r < 50:
		p.assert(by)
	case r < 68:
		p.revoke(by)
	case r < 78:
		p.confirm(by)
	case r < 94:
		p.derive(by)
	default:
		p.review(by)
	}
}

func (p *pmRun) grant(by string) {
	m := p.m
	g := pmGrant{grantee: p.pick(m.order), right: pmRights[p.rng.IntN(len(pmRights))], scope: p.pick(pmScopes), by: by}
	var want error
	if !m.holds(by, mql.RightGrant, g.scope) {
		want = mql.ErrNoStanding
	} else if slices.Contains(m.grants, g) {
		want = errNoop // the same grant again records nothing
	}
	if _, ok := p.expect(fmt.Sprintf("grant %s %s on %s by %s", g.grantee, g.right, g.scope, by), want, func() (mql.Receipt, error) {
		return p.f.db.Grant(p.f.ctx, mql.GrantSpec{Grantee: g.grantee, Right: g.right, Scope: g.scope, By: by})
	}); ok {
		m.grants = append(m.grants, g)
	}
}

func (p *pmRun) addPrincipal(by string) {
	m := p.m
	name := fmt.Sprintf("n%d", p.step)
	var want error
	if !m.holds(by, mql.RightGrant, "*") {
		want = mql.ErrNoStanding
	}
	if _, ok := p.expect("principal "+name+" by "+by, want, func() (mql.Receipt, error) {
		return p.f.db.AddPrincipal(p.f.ctx, mql.PrincipalSpec{Name: name, Type: mql.Agent, By: by})
	}); ok {
		m.principals[name] = mql.Agent
		m.order = append(m.order, name)
	}
}

func (p *pmRun) assert(by string) {
	m := p.m
	key := p.pick(pmSubjects) + "." + p.pick(pmPredicates)
	subj, pred, _ := strings.Cut(key, ".")
	seen := p.randomSeenBy(by)
	aud := pmAudience(seen)
	p.n++
	value := fmt.Sprintf("val-%d", p.n)
	if l := m.live(key, aud); l != nil && p.rng.IntN(4) == 0 {
		value = l.value // agreeing with the live claim: corroborates when it ranks lower
	}
	kind := mql.Inferred
	spec := mql.AssertSpec{Subject: subj, Predicate: pred, Value: mql.String(value), By: by, SeenBy: seen}
	source := ""
	if p.rng.IntN(2) == 0 {
		kind = mql.Observed
		source = fmt.Sprintf("src-%d", p.n)
		spec.Sources = []mql.Source{{ID: source}}
	}
	var want error
	switch {
	case !m.writesFor(by, seen):
		want = mql.ErrInvalid
	case m.strict && !m.holds(by, mql.RightAssert, key):
		want = mql.ErrNoStanding
	}
	c := &pmClaim{ref: fmt.Sprintf("%s@%d", key, len(m.keys[key])+1), key: key, ver: len(m.keys[key]) + 1, by: by, kind: kind,
		value: value, source: source, seenBy: slices.Compact(slices.Clone(seen)), aud: aud, state: mql.Live}
	var wantState mql.State = mql.Live
	l := m.live(key, aud)
	switch {
	case l == nil:
	case pmRank(kind) >= pmRank(l.effKind()):
	case l.value == value:
		wantState = mql.Superseded
	default:
		wantState = mql.Contested
	}
	rc, ok := p.expect(fmt.Sprintf("assert %s = %q by %s kind %s seen by %v", key, value, by, kind, seen), want, func() (mql.Receipt, error) {
		return p.f.db.Assert(p.f.ctx, spec)
	})
	if !ok {
		return
	}
	if rc.Ref != c.ref || rc.State != wantState {
		p.t.Fatalf("step %d: assert %s by %s: receipt %s %s, the model expects %s %s", p.step, key, by, rc.Ref, rc.State, c.ref, wantState)
	}
	if wantState == mql.Live && l != nil {
		l.state = mql.Superseded
	}
	c.state = wantState
	m.claims[c.ref] = c
	m.keys[key] = append(m.keys[key], c)
	m.values[value] = append(m.values[value], c)
	if source != "" {
		m.sources[source] = c
	}
}

// anyClaim picks a recorded claim, or "" if none.
func (p *pmRun) anyClaim() *pmClaim {
	var keys []string
	for k := range p.m.keys {
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil
	}
	sort.Strings(keys)
	vs := p.m.keys[p.pick(keys)]
	return vs[p.rng.IntN(len(vs))]
}

func (p *pmRun) revoke(by string) {
	m := p.m
	c := p.anyClaim()
	if c == nil {
		return
	}
	var r *pmClaim
	if p.rng.IntN(3) == 0 {
		vs := m.keys[c.key]
		if x := vs[p.rng.IntN(len(vs))]; x != c {
			r = x
		}
	}
	var want error
	switch {
	case !m.sees(by, c.seenBy):
		want = mql.ErrNotFound
	case c.state == mql.Revoked:
		want = mql.ErrConflict
	case c.by != by && !m.holds(by, mql.RightRevoke, c.key):
		want = mql.ErrNoStanding
	case r == nil:
	case !m.sees(by, r.seenBy):
		want = mql.ErrNotFound
	case r.aud != c.aud, r.state == mql.Revoked:
		want = mql.ErrConflict
	default:
		if live := m.live(c.key, c.aud); r.state != mql.Live && live != nil && live != c {
			want = mql.ErrConflict
		}
	}
	spec := mql.RevokeSpec{Claim: c.ref, By: by, Because: "property"}
	what := "revoke " + c.ref + " by " + by
	if r != nil {
		spec.ReplacedBy = r.ref
		what += " replaced by " + r.ref
	}
	rc, ok := p.expect(what, want, func() (mql.Receipt, error) { return p.f.db.Revoke(p.f.ctx, spec) })
	if !ok {
		return
	}
	if rc.Ref != c.ref || rc.State != mql.Revoked {
		p.t.Fatalf("step %d: %s: receipt %+v", p.step, what, rc)
	}
	c.state = mql.Revoked
	if r != nil {
		r.state = mql.Live
	}
}

func (p *pmRun) confirm(by string) {
	m := p.m
	key := p.pick(pmSubjects) + "." + p.pick(pmPredicates)
	ref := key
	var target *pmClaim
	var want error
	if p.rng.IntN(2) == 0 {
		// The live claim the confirmer sees: the newest of the live claims it may see.
		for _, c := range m.keys[key] {
			if c.state == mql.Live && m.sees(by, c.seenBy) {
				target = c
			}
		}
		if target == nil {
			want = mql.ErrNotFound
		}
	} else if c := p.anyClaim(); c != nil {
		ref, key, target = c.ref, c.key, c
		switch {
		case !m.sees(by, c.seenBy):
			want = mql.ErrNotFound
		case c.state != mql.Live:
			want = mql.ErrConflict
		}
	} else {
		return
	}
	if want == nil {
		switch {
		case m.principals[by] != mql.User:
			want = mql.ErrNoStanding
		case target.confirmed:
			want = mql.ErrConflict
		case !m.holds(by, mql.RightConfirm, key):
			want = mql.ErrNoStanding
		}
	}
	rc, ok := p.expect("confirm "+ref+" by "+by, want, func() (mql.Receipt, error) {
		return p.f.db.Confirm(p.f.ctx, mql.ConfirmSpec{Claim: ref, By: by})
	})
	if !ok {
		return
	}
	if rc.Ref != target.ref {
		p.t.Fatalf("step %d: confirm %s by %s confirmed %s, the model expects %s", p.step, ref, by, rc.Ref, target.ref)
	}
	target.confirmed = true
}

func (p *pmRun) derive(by string) {
	m := p.m
	i := p.rng.IntN(len(pmArtNames))
	name := pmArtNames[i]
	var from []string
	var want error
	var restricted [][]string
	add := func(ref string, seen []string, visible bool) {
		from = append(from, ref)
		if !visible && want == nil {
			want = mql.ErrNotFound
		}
		if len(seen) > 0 {
			restricted = append(restricted, seen)
		}
	}
	for range 1 + p.rng.IntN(2) {
		if c := p.anyClaim(); c != nil {
			if slices.Contains(from, c.ref) {
				continue
			}
			add(c.ref, c.seenBy, m.sees(by, c.seenBy))
		}
	}
	if j := p.rng.IntN(len(pmArtNames)); j <= i && len(m.arts[pmArtNames[j]]) > 0 {
		// Unversioned: the newest version the deriver may see. Lower-numbered (or its own
		// earlier versions): never a cycle.
		var newest *pmArtifact
		for _, a := range m.arts[pmArtNames[j]] {
			if m.sees(by, a.seenBy) {
				newest = a
			}
		}
		if newest == nil {
			add(pmArtNames[j], nil, false)
		} else {
			add(pmArtNames[j], newest.seenBy, true)
		}
	}
	if len(from) == 0 {
		return
	}
	var explicit []string
	if p.rng.IntN(5) == 0 {
		explicit = []string{p.pick(m.order)}
	}
	seen := explicit
	if want == nil && !m.writesFor(by, explicit) {
		want = mql.ErrInvalid
	}
	if want == nil && len(seen) == 0 && len(restricted) > 0 {
		seen = slices.Clone(restricted[0])
		for _, r := range restricted[1:] {
			seen = slices.DeleteFunc(seen, func(x string) bool { return !slices.Contains(r, x) })
		}
		if len(seen) == 0 {
			want = mql.ErrInvalid
		}
	}
	ref := fmt.Sprintf("%s@%d", name, len(m.arts[name])+1)
	rc, ok := p.expect(fmt.Sprintf("derive %s from %v by %s seen by %v", name, from, by, explicit), want, func() (mql.Receipt, error) {
		return p.f.db.Derive(p.f.ctx, mql.DeriveSpec{Artifact: name, From: from, By: by, SeenBy: explicit})
	})
	if !ok {
		return
	}
	if rc.Ref != ref {
		p.t.Fatalf("step %d: derive %s: receipt %s, the model expects %s", p.step, name, rc.Ref, ref)
	}
	// A version supersedes the newest earlier version of its name and audience, and no other.
	aud := pmAudience(seen)
	prev := ""
	for _, a := range slices.Backward(m.arts[name]) {
		if a.aud == aud {
			a.state, prev = mql.Superseded, a.ref
			break
		}
	}
	if rc.Supersedes != prev {
		p.t.Fatalf("step %d: derive %s by %s seen by %v: receipt supersedes %q, the model %q", p.step, name, by, seen, rc.Supersedes, prev)
	}
	m.arts[name] = append(m.arts[name], &pmArtifact{ref: ref, name: name, ver: len(m.arts[name]) + 1, seenBy: slices.Compact(slices.Clone(seen)), aud: aud, state: mql.Live})
}

func (p *pmRun) review(by string) {
	m := p.m
	name := p.pick(pmArtNames)
	want := error(mql.ErrNotFound)
	for _, a := range m.arts[name] {
		if m.sees(by, a.seenBy) {
			want = nil
		}
	}
	p.expect("review "+name+" by "+by, want, func() (mql.Receipt, error) {
		return p.f.db.Review(p.f.ctx, mql.ReviewSpec{Artifact: name, By: by, Because: "property"})
	})
}

// checkStates compares the owner's history of keys and artifacts with the model: every key
// when all, else a random one.
func (p *pmRun) checkStates(all bool) {
	if all {
		for _, name := range sortedKeys(p.m.arts) {
			h, err := p.f.db.History(p.f.ctx, name)
			if err != nil {
				p.t.Fatalf("step %d: history %s: %v", p.step, name, err)
			}
			var got, want []string
			for _, a := range h.Artifacts {
				got = append(got, a.Ref+" "+string(a.State))
			}
			for _, a := range p.m.arts[name] {
				want = append(want, a.ref+" "+string(a.state))
			}
			if !slices.Equal(got, want) {
				p.t.Fatalf("step %d: history %s: %v, the model says %v", p.step, name, got, want)
			}
		}
	}
	var keys []string
	for k := range p.m.keys {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if !all && len(keys) > 0 {
		keys = []string{p.pick(keys)}
	}
	for _, key := range keys {
		h, err := p.f.db.History(p.f.ctx, key)
		if err != nil {
			p.t.Fatalf("step %d: history %s: %v", p.step, key, err)
		}
		mc := p.m.keys[key]
		if len(h.Claims) != len(mc) {
			p.t.Fatalf("step %d: %s has %d versions, the model %d", p.step, key, len(h.Claims), len(mc))
		}
		for i, c := range h.Claims {
			if c.Ref != mc[i].ref || c.State != mc[i].state || c.By != mc[i].by || c.Value.Str != mc[i].value || (c.Kind == mql.Confirmed) != mc[i].confirmed {
				p.t.Fatalf("step %d: %s is %s %s by %s = %q (kind %s); the model has %s by %s = %q (confirmed %v)",
					p.step, c.Ref, c.State, c.Ref, c.By, c.Value.Str, c.Kind, mc[i].state, mc[i].by, mc[i].value, mc[i].confirmed)
			}
		}
	}
}

// ---- reads and the leak check -----------------------------------------------------------------

// pmScan calls f with every token of s that starts with prefix at a word boundary, is followed
// by what rest accepts, and returns the token. rest returns the length it accepts (0: none).
func pmScan(s, prefix string, rest func(string) int, f func(tok string)) {
	for i := 0; ; {
		j := strings.Index(s[i:], prefix)
		if j < 0 {
			return
		}
		j += i
		i = j + len(prefix)
		if j > 0 && pmWord(s[j-1]) {
			continue
		}
		if n := rest(s[i:]); n > 0 {
			f(s[j : i+n])
			i += n
		}
	}
}

func pmWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func pmDigits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// pmRefRest accepts "D.pD" then optionally "@N" (after "S"): a key or a claim reference.
func pmRefRest(s string) int {
	if len(s) < 4 || pmDigits(s[:1]) != 1 || s[1] != '.' || s[2] != 'p' || pmDigits(s[3:4]) != 1 || (len(s) > 4 && pmWord(s[4])) {
		return 0
	}
	if len(s) > 5 && s[4] == '@' {
		if d := pmDigits(s[5:]); d > 0 {
			return 5 + d
		}
	}
	return 4
}

// pmArtRest accepts "D@N" (after "art").
func pmArtRest(s string) int {
	if len(s) < 3 || pmDigits(s[:1]) != 1 || s[1] != '@' || pmDigits(s[2:]) == 0 {
		return 0
	}
	return 2 + pmDigits(s[2:])
}

// leaks checks every string of a result against what who may see.
func (p *pmRun) leaks(who, read string, strs []string) {
	m := p.m
	fail := func(format string, args ...any) {
		p.t.Helper()
		p.t.Fatalf("step %d: %s as %s: %s", p.step, read, who, fmt.Sprintf(format, args...))
	}
	for _, s := range strs {
		p.counts["texts"]++
		if read == "export" && strings.Contains(s, "<urn:mql:scope>") {
			continue // grants are not secret, and their scopes may name keys
		}
		pmScan(s, "S", pmRefRest, func(tok string) {
			if key, _, versioned := strings.Cut(tok, "@"); !versioned {
				visible := false
				for _, c := range m.keys[key] {
					if m.sees(who, c.seenBy) {
						visible = true
					}
				}
				if !visible {
					fail("it received key %s, of which it may see no claim (in %.200q)", key, s)
				}
			} else if m.visibleClaim(who, tok) == nil {
				fail("it received %s, which it may not see (in %.200q)", tok, s)
			}
		})
		pmScan(s, "art", pmArtRest, func(tok string) {
			if m.visibleArtifact(who, tok) == nil {
				fail("it received %s, which it may not see (in %.200q)", tok, s)
			}
		})
		pmScan(s, "val-", pmDigits, func(v string) {
			for _, c := range m.values[v] {
				if m.sees(who, c.seenBy) {
					return
				}
			}
			fail("it received the value %s, held only by claims it may not see (in %.200q)", v, s)
		})
		if who != m.owner {
			for _, other := range m.order {
				if other != who && (strings.Contains(s, "run-"+other+"-x") || strings.Contains(s, "because-"+other+"-x")) {
					fail("it received a record of %s's run (in %.200q)", other, s)
				}
			}
		}
		pmScan(s, "src-", pmDigits, func(id string) {
			if c := m.sources[id]; c == nil || !m.sees(who, c.seenBy) {
				fail("it received source %s, cited only by a claim it may not see (in %.200q)", id, s)
			}
		})
	}
}

// pmStrings renders a result as JSON: every string in it, keys included, appears in the text
// (the references, values and ids checked need no escaping).
func pmStrings(t *testing.T, v any) []string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return []string{string(b)}
}

// reads runs every read as who and checks what comes back.
func (p *pmRun) reads(who string, full bool) {
	m := p.m
	ctx := p.f.ctx
	r := p.f.db.As(who)
	asOf := false
	if p.rng.IntN(8) == 0 {
		if head, _ := p.f.db.Head(ctx); head > 1 {
			r, asOf = r.AsOfTx(1+p.rng.Int64N(head)), true
		}
	}
	check := func(read string, res any, err error, mayFail bool) {
		p.t.Helper()
		p.counts["reads"]++
		if err != nil {
			if !mayFail && !(asOf && errors.Is(err, mql.ErrUnknownPrincipal)) {
				p.t.Fatalf("step %d: %s as %s: %v", p.step, read, who, err)
			}
			return
		}
		p.leaks(who, read, pmStrings(p.t, res))
	}
	// Every read, as who.
	live, err := r.Live(ctx, "*")
	check("live *", live, err, false)
	if err == nil && !asOf {
		var want []string
		for _, key := range sortedKeys(m.keys) {
			for _, c := range m.keys[key] {
				if c.state == mql.Live && m.sees(who, c.seenBy) {
					want = append(want, c.ref)
				}
			}
		}
		var got []string
		for _, c := range live {
			got = append(got, c.Ref)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			p.t.Fatalf("step %d: live * as %s: %v, the model says %v", p.step, who, got, want)
		}
	}
	find, err := r.Find(ctx, mql.FindQuery{Select: []string{"?s", "?v"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: p.pick(pmPredicates), Op: "=", Object: mql.Var("v")}}})
	check("find", find, err, false)
	c := p.anyClaim()
	if c != nil {
		visible := m.sees(who, c.seenBy)
		why, err := r.Why(ctx, c.ref)
		check("why "+c.ref, why, err, true)
		if (err == nil) != visible && !asOf {
			p.t.Fatalf("step %d: why %s as %s: error %v, visible %v", p.step, c.ref, who, err, visible)
		}
		rb, err := r.RevokedBy(ctx, c.ref)
		check("revoked-by "+c.ref, rb, err, true)
		imp, err := r.Impact(ctx, c.ref, 0)
		check("impact "+c.ref, imp, err, true)
		imp, err = r.Impact(ctx, c.key, 0)
		check("impact "+c.key, imp, err, true)
		why, err = r.Why(ctx, c.key)
		check("why "+c.key, why, err, true)
	}
	art := p.pick(pmArtNames)
	why, err := r.Why(ctx, art)
	check("why "+art, why, err, true)
	imp, err := r.Impact(ctx, art, 0)
	check("impact "+art, imp, err, true)
	hist, err := r.History(ctx, art)
	check("history "+art, hist, err, true)
	for _, key := range sortedKeys(m.keys) {
		if !full && p.rng.IntN(3) != 0 {
			continue
		}
		h, err := r.History(ctx, key)
		check("history "+key, h, err, true)
		if !asOf {
			var want []string
			for _, c := range m.keys[key] {
				if m.sees(who, c.seenBy) {
					want = append(want, c.ref+" "+string(c.state))
				}
			}
			var got []string
			for _, c := range h.Claims {
				got = append(got, c.Ref+" "+string(c.State))
			}
			if !slices.Equal(got, want) {
				p.t.Fatalf("step %d: history %s as %s: %v, the model says %v", p.step, key, who, got, want)
			}
		}
	}
	cf, err := r.Conflicts(ctx)
	check("conflicts", cf, err, false)
	bl, err := r.Beliefs(ctx, "*."+p.pick(pmPredicates), nil)
	check("beliefs", bl, err, false)
	// Reads for a run record what they served: the run's name carries its principal, so that
	// no other principal's answer may name it (leaks checks).
	run := "run-" + who + "-x"
	cr := r
	if p.rng.IntN(3) == 0 {
		cr = r.ForRun(run)
	}
	cx, err := cr.Context(ctx, []string{"*"}, 0)
	check("context * for run", cx, err, false)
	if c != nil && p.rng.IntN(2) == 0 {
		rb, err := r.ForRun(run).RevokedBy(ctx, c.ref)
		check("revoked-by for run "+c.ref, rb, err, true)
	}
	if p.rng.IntN(4) == 0 {
		if _, err := p.f.db.Outcome(ctx, mql.OutcomeSpec{Run: run, Result: mql.Failed, Because: "because-" + who + "-x", By: who}); err != nil {
			p.t.Fatalf("step %d: outcome as %s: %v", p.step, who, err)
		}
	}
	runs, err := r.Runs(ctx, "", time.Time{})
	check("runs", runs, err, false)
	rep, err := r.Run(ctx, run)
	check("run "+run, rep, err, true)
	ms, err := r.MemoryStats(ctx, "", time.Time{})
	check("memory stats", ms, err, false)
	st, err := r.Stats(ctx)
	check("stats", st, err, false)
	if err == nil && !asOf {
		want := map[mql.State]int{}
		n := 0
		for _, c := range m.claims {
			if m.sees(who, c.seenBy) {
				want[c.state]++
				n++
			}
		}
		if st.Claims != n {
			p.t.Fatalf("step %d: stats as %s: %d claims, the model says %d", p.step, who, st.Claims, n)
		}
		for _, s := range []mql.State{mql.Live, mql.Superseded, mql.Revoked, mql.Contested} {
			if st.ByState[s] != want[s] {
				p.t.Fatalf("step %d: stats as %s: %d %s, the model says %d", p.step, who, st.ByState[s], s, want[s])
			}
		}
	}
	names, err := r.Names(ctx)
	check("names", names, err, false)
	if full {
		var b bytes.Buffer
		err := r.Export(ctx, &b)
		p.counts["reads"]++
		if err != nil && !(asOf && errors.Is(err, mql.ErrUnknownPrincipal)) {
			p.t.Fatalf("step %d: export as %s: %v", p.step, who, err)
		}
		p.leaks(who, "export", strings.Split(b.String(), "\n"))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ---- twins: the same visible history with and without hidden records --------------------------
//
// The strongest form of the visibility rule: a principal's every answer (receipt, error, read)
// is the same whether or not the store also holds records it may not see. Two stores get the
// same principals and the same visible writes; only the first gets the hidden ones. What may
// differ is named in docs/MODEL.md ("What a principal can infer"): version and transaction
// numbers count hidden records too, so references and transaction ids are compared through
// labels given to the records both stores made (a read for a run is labelled like a write, and
// the transaction a run's read was made at by the last labelled one at or before it); and the
// transaction count of stats. Nothing else is normalised, so a hidden record that changes a
// message, a state, an order or a count fails the comparison.

type twins struct {
	t      *testing.T
	f      [2]*fixture
	refs   [2]map[string]string // reference → label
	txs    [2]map[int64]string  // transaction id → label
	probes [][2]string          // references a write or read names, to a hidden record in the first store and to none in the second
	runs   []string             // run names any principal read, decided or recorded an outcome for, in either store
	labels int
	// compared counts the answers compared: writes' and reads'.
	compared int
}

func newTwins(t *testing.T, opts mql.Options) *twins {
	tw := &twins{t: t}
	for i := range tw.f {
		tw.f[i] = open(t, opts)
		tw.refs[i], tw.txs[i] = map[string]string{}, map[int64]string{}
	}
	return tw
}

// setup runs a write on both stores before any hidden record exists; it must succeed, and
// both stores give it the same transaction id.
func (tw *twins) setup(write func(f *fixture) (mql.Receipt, error)) {
	tw.t.Helper()
	for i, f := range tw.f {
		rc, err := write(f)
		if err != nil {
			tw.t.Fatalf("setup: %v", err)
		}
		tw.txs[i][rc.Tx] = strconv.FormatInt(rc.Tx, 10)
		f.clk.Add(time.Second)
	}
}

// visible runs a write on both stores and fails unless both answer alike. It returns each
// store's answer, and labels what it recorded.
func (tw *twins) visible(what string, write func(f *fixture) (mql.Receipt, error)) (rcs [2]mql.Receipt, errs [2]error) {
	tw.t.Helper()
	for i, f := range tw.f {
		f.clk.Add(time.Second)
		rcs[i], errs[i] = write(f)
	}
	if errs[0] == nil && errs[1] == nil {
		tw.labels++
		for i := range tw.f {
			if rcs[i].Ref != "" && strings.Contains(rcs[i].Ref, "@") {
				tw.refs[i][rcs[i].Ref] = fmt.Sprintf("#%d", tw.labels)
			}
			tw.txs[i][rcs[i].Tx] = fmt.Sprintf("T%d", tw.labels)
		}
	}
	tw.same(what, tw.answer(0, rcs[0], errs[0]), tw.answer(1, rcs[1], errs[1]))
	return rcs, errs
}

// hidden runs a write on the first store only, at the time of the last visible write.
func (tw *twins) hidden(write func(f *fixture) (mql.Receipt, error)) (mql.Receipt, error) {
	return write(tw.f[0])
}

// noteRun adds run to the names every read asks about.
func (tw *twins) noteRun(run string) {
	if run != "" && !slices.Contains(tw.runs, run) {
		tw.runs = append(tw.runs, run)
		slices.Sort(tw.runs)
	}
}

// forRun makes a read for run as who on both stores and fails unless both answer alike. A read
// for a run is a write: the retrieval each store recorded is labelled like a visible write's
// transaction.
func (tw *twins) forRun(what, who, run string, read func(f *fixture, r mql.Reader) (any, error)) {
	tw.t.Helper()
	tw.noteRun(run)
	var got [2]string
	var errs [2]error
	var heads [2]int64
	for i, f := range tw.f {
		f.clk.Add(time.Second)
		res, err := read(f, f.db.As(who).ForRun(run))
		got[i], errs[i] = tw.read(i, res, err), err
		st, err := f.db.Stats(f.ctx)
		if err != nil {
			tw.t.Fatal(err)
		}
		heads[i] = int64(st.Transactions)
	}
	if errs[0] == nil && errs[1] == nil {
		tw.labels++
		for i := range tw.f {
			tw.txs[i][heads[i]] = fmt.Sprintf("T%d", tw.labels)
		}
	}
	tw.same(what, got[0], got[1])
}

// hiddenForRun makes a read for run as who on the first store only.
func (tw *twins) hiddenForRun(who, run string, read func(f *fixture, r mql.Reader) (any, error)) error {
	tw.noteRun(run)
	_, err := read(tw.f[0], tw.f[0].db.As(who).ForRun(run))
	return err
}

// atTx labels the transaction a read was made at: a hidden transaction changes nothing a
// visible principal sees, so a read at it is a read at the last labelled transaction before it.
func (tw *twins) atTx(side int, n int64) (string, bool) {
	best := int64(-1)
	for tx := range tw.txs[side] {
		if tx <= n && tx > best {
			best = tx
		}
	}
	if best < 0 {
		return "", false
	}
	return "at " + tw.txs[side][best], true
}

func (tw *twins) same(what, a, b string) {
	tw.t.Helper()
	tw.compared++
	if a != b {
		tw.t.Fatalf("%s answers differently when hidden records exist:\n  with:    %s\n  without: %s", what, a, b)
	}
}

// answer is a write's answer, normalised.
func (tw *twins) answer(side int, rc mql.Receipt, err error) string {
	if err != nil {
		return "error: " + tw.text(side, err.Error())
	}
	return tw.json(side, rc)
}

// read renders a read's answer (or error) as side's reader got it, normalised.
func (tw *twins) read(side int, res any, err error) string {
	if err != nil {
		return "error: " + tw.text(side, err.Error())
	}
	if cx, ok := res.(mql.ContextResult); ok {
		// A context line gives a claim's version alone ("price=89 @2"): spell out the reference.
		i := 0
		spell := func(s string) string {
			return twVersionRE.ReplaceAllStringFunc(s, func(m string) string {
				if i < len(cx.Refs) {
					m = " " + cx.Refs[i]
				}
				i++
				return m
			})
		}
		cx.Text = spell(cx.Text)
		cx.Tokens = 0 // counts the digits of version numbers
		i = 0
		cx.Lines = slices.Clone(cx.Lines)
		for j := range cx.Lines {
			cx.Lines[j] = spell(cx.Lines[j])
		}
		res = cx
	}
	if names, ok := res.([]string); ok {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = tw.text(side, n)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	return tw.json(side, res)
}

var (
	twRefRE     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_:/-]*(\.[A-Za-z0-9_:/-]+)?@[0-9]+`)
	twTxRE      = regexp.MustCompile(`(\btx |urn:mql:tx:|urn:mql:(?:revocation|confirmation|review|grant|retrieval|outcome):[rcvgqo])([0-9]+)`)
	twReadAtRE  = regexp.MustCompile(`(<urn:mql:readAtTx> ")([0-9]+)`)
	twVersionRE = regexp.MustCompile(` @[0-9]+`)
)

// text normalises references and transaction ids in a message or an export line.
func (tw *twins) text(side int, s string) string {
	s = strings.ReplaceAll(s, "urn:mql:claim:", "urn:mql:claim: ")
	s = strings.ReplaceAll(s, "urn:mql:artifact:", "urn:mql:artifact: ")
	s = twRefRE.ReplaceAllStringFunc(s, func(ref string) string {
		for i, p := range tw.probes {
			if p[side] == ref {
				return fmt.Sprintf("<probe %d>", i)
			}
		}
		if l, ok := tw.refs[side][ref]; ok {
			return l
		}
		return ref
	})
	s = twReadAtRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := twReadAtRE.FindStringSubmatch(m)
		n, _ := strconv.ParseInt(sub[2], 10, 64)
		if l, ok := tw.atTx(side, n); ok {
			return sub[1] + l
		}
		return m
	})
	return twTxRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := twTxRE.FindStringSubmatch(m)
		n, _ := strconv.ParseInt(sub[2], 10, 64)
		if l, ok := tw.txs[side][n]; ok {
			return sub[1] + l
		}
		return m
	})
}

// json renders v as JSON with references and transaction ids normalised, version fields (the
// reference carries them) and the transaction count of stats left out.
func (tw *twins) json(side int, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		tw.t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		tw.t.Fatal(err)
	}
	var walk func(x any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, val := range x {
				switch k {
				case "version", "transactions":
					delete(x, k)
				case "tx", "decision_tx", "outcome_tx", "served_tx":
					// A record's own transaction: a visible write's, or a visible read's for a run.
					if n, ok := val.(float64); ok {
						if l, ok := tw.txs[side][int64(n)]; ok {
							x[k] = l
						}
					}
				case "read_at_tx":
					if n, ok := val.(float64); ok {
						if l, ok := tw.atTx(side, int64(n)); ok {
							x[k] = l
						}
					}
				default:
					x[k] = walk(val)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case string:
			return tw.text(side, x)
		}
		return x
	}
	out, err := json.Marshal(walk(x))
	if err != nil {
		tw.t.Fatal(err)
	}
	return string(out)
}

// reads runs every read as who on both stores and fails unless both answer alike. keys and
// arts name what to ask about, besides every labelled record and the probes.
func (tw *twins) reads(who string, keys, arts []string, asOf int) {
	tw.t.Helper()
	var got [2][]string
	for side, f := range tw.f {
		ctx := f.ctx
		r := f.db.As(who)
		if asOf > 0 {
			// The same visible write, in each store: the asOf-th label.
			want := fmt.Sprintf("T%d", asOf)
			for tx, l := range tw.txs[side] {
				if l == want {
					r = r.AsOfTx(tx)
				}
			}
		}
		add := func(res any, err error) { got[side] = append(got[side], tw.read(side, res, err)) }
		add(r.Live(ctx, "*"))
		for _, p := range pmPredicates {
			add(r.Find(ctx, mql.FindQuery{Select: []string{"?s", "?v"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: p, Op: "=", Object: mql.Var("v")}}}))
			add(r.Find(ctx, mql.FindQuery{Select: []string{"?s"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: p, Op: "=", Object: mql.Var("v")}}, OrderBy: []mql.Order{{Var: "?v", Desc: true}}, Limit: 2}))
			add(r.Live(ctx, "*."+p, mql.Filter{Op: ">=", Value: mql.Number(2)}))
			add(r.Beliefs(ctx, "*."+p, nil))
		}
		for _, k := range keys {
			add(r.History(ctx, k))
			add(r.Why(ctx, k))
			add(r.Impact(ctx, k, 0))
		}
		for _, a := range arts {
			add(r.History(ctx, a))
			add(r.Why(ctx, a))
			add(r.Impact(ctx, a, 0))
		}
		labels := make([]string, 0, len(tw.refs[side]))
		for ref := range tw.refs[side] {
			labels = append(labels, ref)
		}
		slices.SortFunc(labels, func(x, y string) int { return strings.Compare(tw.refs[side][x], tw.refs[side][y]) })
		for _, ref := range labels {
			add(r.Why(ctx, ref))
			if strings.Contains(ref, ".") {
				add(r.RevokedBy(ctx, ref))
			}
			add(r.Impact(ctx, ref, 1))
		}
		for _, p := range tw.probes {
			add(r.Why(ctx, p[side]))
			add(r.Impact(ctx, p[side], 0))
		}
		// Runs: every name any principal used, in either store (a hidden principal's run of the
		// same name as a visible one's is another run), and the runs of a hidden principal.
		for _, run := range tw.runs {
			add(r.Run(ctx, run))
		}
		add(r.Runs(ctx, "", time.Time{}))
		add(r.Runs(ctx, who, time.Time{}))
		add(r.MemoryStats(ctx, "", time.Time{}))
		for _, h := range []string{"worker-7", "h1"} {
			add(r.Runs(ctx, h, time.Time{}))
			add(r.MemoryStats(ctx, h, time.Time{}))
		}
		add(r.Conflicts(ctx))
		// (Not with a token budget: where it cuts depends on how many digits the version
		// numbers in the text have, and those may differ.)
		add(r.Context(ctx, []string{"*"}, 0))
		add(r.Stats(ctx))
		add(r.Names(ctx))
		// The catalogue: what the store holds, counted from what the reader may see.
		add(r.Principals(ctx, ""))
		add(r.Grants(ctx, ""))
		add(r.Subjects(ctx, ""))
		add(r.Predicates(ctx, ""))
		add(r.Artifacts(ctx, ""))
		add(r.Sources(ctx, ""))
		for _, k := range keys {
			subj, pred, _ := strings.Cut(k, ".")
			add(r.Describe(ctx, subj))
			add(r.Describe(ctx, pred))
		}
		for _, a := range arts {
			add(r.Describe(ctx, a))
		}
		var b bytes.Buffer
		err := r.Export(ctx, &b)
		var lines []string
		for _, l := range strings.Split(b.String(), "\n") {
			if !strings.Contains(l, "<urn:mql:version>") {
				lines = append(lines, l)
			}
		}
		add(strings.Join(lines, "\n"), err)
	}
	for i := range got[0] {
		tw.same(fmt.Sprintf("read %d as %s (as of %d)", i, who, asOf), got[0][i], got[1][i])
	}
}

// ---- twins, randomly --------------------------------------------------------------------------

// twRec is a record a visible write made, known to both stores by its label.
type twRec struct {
	refs   [2]string
	key    string // Subject.predicate, or the artifact's name
	claim  bool
	seenBy []string
}

type twRun struct {
	t      *testing.T
	tw     *twins
	rng    *rand.Rand
	vis    []twRec
	hid    []twRec // refs[0] only
	counts map[string]int
}

var (
	twVisible = []string{"v1", "v2", "v3"}
	twHidden  = []string{"h1", "h2"}
	twSources = []string{"src-1", "src-2", "src-3", "src-4"}
	twRuns    = []string{"run-a", "run-b"} // both teams use the same names: another principal's run-a is another run
)

func runTwins(t *testing.T, seed uint64, ops int) {
	r := &twRun{t: t, rng: rand.New(rand.NewPCG(seed, 7)), counts: map[string]int{}}
	r.tw = newTwins(t, mql.Options{Strict: seed%2 == 0})
	for _, p := range []struct {
		name string
		typ  mql.PrincipalType
	}{{"v1", mql.User}, {"v2", mql.Agent}, {"v3", mql.Agent}, {"h1", mql.User}, {"h2", mql.Agent}} {
		r.tw.setup(func(f *fixture) (mql.Receipt, error) {
			return f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: p.name, Type: p.typ, By: "owner"})
		})
		for _, right := range []mql.Right{mql.RightAssert, mql.RightRevoke, mql.RightConfirm} {
			if p.name == "v3" && right != mql.RightAssert {
				continue // v3 is refused revocations of others' claims
			}
			r.tw.setup(func(f *fixture) (mql.Receipt, error) {
				return f.db.Grant(f.ctx, mql.GrantSpec{Grantee: p.name, Right: right, Scope: "*", By: "owner"})
			})
		}
	}
	for step := range ops {
		if r.rng.IntN(10) < 4 {
			r.hiddenWrite()
		} else {
			r.visibleWrite(step)
		}
		if r.rng.IntN(4) == 0 {
			r.runStep(step)
		}
		if step%20 == 0 {
			r.reads(r.pick(twVisible), step)
		}
	}
	for _, who := range twVisible {
		r.reads(who, ops)
	}
	for i := range r.tw.f {
		if rep, err := r.tw.f[i].db.Check(r.tw.f[i].ctx); err != nil || !rep.OK() {
			t.Fatalf("check: %v %v", err, rep.Problems)
		}
	}
	var refused []string
	for _, k := range sortedKeys(r.counts) {
		if why, ok := strings.CutPrefix(k, "refused "); ok {
			refused = append(refused, fmt.Sprintf("%s %d", why, r.counts[k]))
		}
	}
	t.Logf("seed %d (strict %v): %d operations: visible writes %d accepted, %d refused (%s); hidden writes %d recorded, %d refused; reads for runs %d visible, %d hidden; outcomes %d visible, %d hidden; %d answers compared",
		seed, seed%2 == 0, ops, r.counts["visible"], r.counts["visible refused"], strings.Join(refused, ", "),
		r.counts["hidden"], r.counts["hidden refused"], r.counts["reads for runs"], r.counts["hidden reads for runs"], r.counts["visible outcomes"], r.counts["hidden outcomes"], r.tw.compared)
}

func (r *twRun) pick(xs []string) string { return xs[r.rng.IntN(len(xs))] }

func (r *twRun) key() string {
	return r.pick(pmSubjects) + "." + r.pick(pmPredicates)
}

// value is a value for pred: the visible team mostly keeps p0 to strings and p1 to numbers;
// the hidden team writes any type anywhere, which must never refuse the visible team's.
func (r *twRun) value(pred string, hidden bool) mql.Value {
	x := r.rng.IntN(20)
	switch {
	case hidden && x < 7 || !hidden && x == 0:
		return mql.Bool(r.rng.IntN(2) == 0)
	case hidden && x < 14 || !hidden && x == 1 || !hidden && pred == "p1" && x > 2:
		return mql.Number(float64(r.rng.IntN(4)))
	}
	return mql.String(fmt.Sprintf("val-%d", r.rng.IntN(6)))
}

// sources names none, one or two sources (perhaps the same one twice) from a small pool.
func (r *twRun) sources() []mql.Source {
	var out []mql.Source
	for range r.rng.IntN(3) {
		out = append(out, mql.Source{ID: r.pick(twSources), Excerpt: []string{"", "e1", "e2"}[r.rng.IntN(3)]})
	}
	return out
}

// hiddenWrite records something seen by hidden principals only, in the first store. It may be
// refused; then nothing happened.
func (r *twRun) hiddenWrite() {
	f := r.tw.f[0]
	by := r.pick(twHidden)
	seen := []string{by}
	if r.rng.IntN(3) == 0 {
		seen = twHidden
	}
	var rc mql.Receipt
	var err error
	kind := ""
	switch x := r.rng.IntN(10); {
	case x < 5:
		kind = "assert"
		k := r.key()
		subj, pred, _ := strings.Cut(k, ".")
		spec := mql.AssertSpec{Subject: subj, Predicate: pred, Value: r.value(pred, true), By: by, SeenBy: seen, Sources: r.sources()}
		rc, err = f.db.Assert(f.ctx, spec)
		// Refused for its type: the hidden team keeps to its own types, then.
		for _, v := range []mql.Value{mql.String("val-0"), mql.Number(1), mql.Bool(true)} {
			if errors.Is(err, mql.ErrValueType) {
				spec.Value = v
				rc, err = f.db.Assert(f.ctx, spec)
			}
		}
		if err == nil {
			r.hid = append(r.hid, twRec{refs: [2]string{rc.Ref}, key: k, claim: true, seenBy: seen})
		}
	case x < 8:
		kind = "derive"
		name := r.pick(pmArtNames)
		var from []string
		for range 1 + r.rng.IntN(2) {
			switch y := r.rng.IntN(4); {
			case y == 0 && len(r.hid) > 0:
				from = append(from, r.hid[r.rng.IntN(len(r.hid))].refs[0])
			case y == 1 && len(r.vis) > 0:
				from = append(from, r.vis[r.rng.IntN(len(r.vis))].refs[0])
			case y == 2:
				from = append(from, r.pick(pmArtNames))
			default:
				from = append(from, r.key())
			}
		}
		spec := mql.DeriveSpec{Artifact: name, From: from, By: by, SeenBy: seen}
		if r.rng.IntN(3) == 0 {
			spec.Run = r.pick(twRuns)
			r.tw.noteRun(spec.Run)
		}
		rc, err = f.db.Derive(f.ctx, spec)
		if err == nil {
			r.hid = append(r.hid, twRec{refs: [2]string{rc.Ref}, key: name, seenBy: seen})
		}
	default:
		if len(r.hid) == 0 {
			return
		}
		h := r.hid[r.rng.IntN(len(r.hid))]
		switch {
		case !h.claim:
			kind = "review"
			rc, err = f.db.Review(f.ctx, mql.ReviewSpec{Artifact: h.refs[0], By: by})
		case r.rng.IntN(2) == 0:
			kind = "confirm"
			rc, err = f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: h.refs[0], By: "h1"})
		default:
			kind = "revoke"
			spec := mql.RevokeSpec{Claim: h.refs[0], By: by}
			if o := r.hid[r.rng.IntN(len(r.hid))]; o.claim && o.key == h.key && r.rng.IntN(2) == 0 {
				spec.ReplacedBy = o.refs[0]
			}
			rc, err = f.db.Revoke(f.ctx, spec)
		}
	}
	_, _ = rc, kind
	if err == nil {
		r.counts["hidden"]++
	} else {
		r.counts["hidden refused"]++
	}
}

// target picks what a visible write names: a record both stores hold (by label), or a probe
// naming a hidden record in the first store and a version that never existed in the second.
// A probe stays with the twins, so that later reads ask about it too.
func (r *twRun) target(claim bool) (refs [2]string, ok bool) {
	if r.rng.IntN(5) == 0 {
		var hs []twRec
		for _, h := range r.hid {
			if h.claim == claim {
				hs = append(hs, h)
			}
		}
		if len(hs) > 0 {
			h := hs[r.rng.IntN(len(hs))]
			for _, p := range r.tw.probes {
				if p[0] == h.refs[0] {
					return p, true
				}
			}
			refs = [2]string{h.refs[0], fmt.Sprintf("%s@%d", h.key, 1000+len(r.tw.probes))}
			r.tw.probes = append(r.tw.probes, refs)
			return refs, true
		}
	}
	var vs []twRec
	for _, v := range r.vis {
		if v.claim == claim {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return refs, false
	}
	return vs[r.rng.IntN(len(vs))].refs, true
}

func (r *twRun) visibleWrite(step int) {
	by := r.pick(twVisible)
	var what string
	var w [2]func(f *fixture) (mql.Receipt, error)
	same := func(fn func(f *fixture) (mql.Receipt, error)) {
		w = [2]func(f *fixture) (mql.Receipt, error){fn, fn}
	}
	var rec *twRec
	switch x := r.rng.IntN(100); {
	case x < 40:
		k := r.key()
		subj, pred, _ := strings.Cut(k, ".")
		var seen []string
		switch r.rng.IntN(6) {
		case 0, 1:
			seen = []string{by}
		case 2:
			seen = []string{by, r.pick(twVisible)}
		case 3:
			seen = []string{by, r.pick(twHidden)}
		case 4:
			seen = []string{r.pick(twVisible)} // refused unless by is in it
		}
		spec := mql.AssertSpec{Subject: subj, Predicate: pred, Value: r.value(pred, false), By: by, SeenBy: seen, Sources: r.sources()}
		if r.rng.IntN(3) == 0 {
			spec.Kind = mql.Inferred
		}
		what = fmt.Sprintf("assert %s = %s by %s seen by %v from %v", k, spec.Value, by, seen, spec.Sources)
		same(func(f *fixture) (mql.Receipt, error) { return f.db.Assert(f.ctx, spec) })
		rec = &twRec{key: k, claim: true, seenBy: seen}
	case x < 55:
		refs, ok := r.target(true)
		if !ok {
			return
		}
		var repl [2]string
		if r.rng.IntN(3) == 0 {
			if o, ok := r.target(true); ok {
				repl = o
			}
		}
		what = fmt.Sprintf("revoke %v by %s replaced by %v", refs, by, repl)
		for i := range w {
			spec := mql.RevokeSpec{Claim: refs[i], By: by, ReplacedBy: repl[i]}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Revoke(f.ctx, spec) }
		}
	case x < 65:
		refs, ok := r.target(true)
		if !ok {
			return
		}
		if k, _, _ := strings.Cut(refs[0], "@"); r.rng.IntN(3) == 0 {
			refs = [2]string{k, k} // the live claim the confirmer sees
		}
		what = fmt.Sprintf("confirm %v by %s", refs, by)
		for i := range w {
			spec := mql.ConfirmSpec{Claim: refs[i], By: by}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Confirm(f.ctx, spec) }
		}
	case x < 88:
		name := r.pick(pmArtNames)
		var from [2][]string
		for range 1 + r.rng.IntN(2) {
			var refs [2]string
			switch y := r.rng.IntN(6); {
			case y < 4:
				var ok bool
				if refs, ok = r.target(y < 2); !ok {
					continue
				}
			case y == 4:
				a := r.pick(pmArtNames)
				refs = [2]string{a, a}
			default:
				k := r.key()
				refs = [2]string{k, k}
			}
			from[0], from[1] = append(from[0], refs[0]), append(from[1], refs[1])
		}
		if len(from[0]) == 0 {
			return
		}
		var seen []string
		switch r.rng.IntN(5) {
		case 0:
			seen = []string{by}
		case 1:
			seen = []string{by, r.pick(twVisible)}
		}
		run := ""
		if r.rng.IntN(3) == 0 {
			run = r.pick(twRuns)
			r.tw.noteRun(run)
		}
		what = fmt.Sprintf("derive %s from %v by %s seen by %v in run %q", name, from, by, seen, run)
		for i := range w {
			spec := mql.DeriveSpec{Artifact: name, From: from[i], By: by, SeenBy: seen, Run: run}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Derive(f.ctx, spec) }
		}
		rec = &twRec{key: name, seenBy: seen}
	default:
		refs, ok := r.target(false)
		if !ok {
			return
		}
		if a, _, _ := strings.Cut(refs[0], "@"); r.rng.IntN(3) == 0 {
			refs = [2]string{a, a}
		}
		what = fmt.Sprintf("review %v by %s", refs, by)
		for i := range w {
			spec := mql.ReviewSpec{Artifact: refs[i], By: by}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Review(f.ctx, spec) }
		}
	}
	i := 0
	rcs, errs := r.tw.visible(fmt.Sprintf("step %d: %s", step, what), func(f *fixture) (mql.Receipt, error) {
		defer func() { i++ }()
		return w[i](f)
	})
	if errs[0] != nil {
		r.counts["visible refused"]++
		r.counts["refused "+errName(errs[0])]++
		return
	}
	r.counts["visible"]++
	if rec != nil {
		rec.refs = [2]string{rcs[0].Ref, rcs[1].Ref}
		r.vis = append(r.vis, *rec)
	}
}

// runStep reads for a run, or records a run's outcome: as a visible principal in both stores, or
// as a hidden one in the first. A hidden run is served what its principal sees, visible claims
// included, under the same names as the visible runs.
func (r *twRun) runStep(step int) {
	run := r.pick(twRuns)
	hidden := r.rng.IntN(10) < 4
	who := r.pick(twVisible)
	if hidden {
		who = r.pick(twHidden)
	}
	if r.rng.IntN(4) == 0 {
		result := []mql.OutcomeResult{mql.Succeeded, mql.Failed, mql.Declined}[r.rng.IntN(3)]
		r.tw.noteRun(run)
		out := func(f *fixture) (mql.Receipt, error) {
			return f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: run, Result: result, By: who})
		}
		if hidden {
			if _, err := r.tw.hidden(out); err != nil {
				r.t.Fatalf("step %d: hidden outcome: %v", step, err)
			}
			r.counts["hidden outcomes"]++
			return
		}
		r.tw.visible(fmt.Sprintf("step %d: outcome run %s %s by %s", step, run, result, who), out)
		r.counts["visible outcomes"]++
		return
	}
	// What to read: a claim or artifact the reader may or may not see (by label, or a probe).
	var refs [2]string
	if hidden && len(r.hid) > 0 && r.rng.IntN(2) == 0 {
		refs[0] = r.hid[r.rng.IntN(len(r.hid))].refs[0]
	} else if t, ok := r.target(r.rng.IntN(2) == 0); ok {
		refs = t
	}
	var what string
	var read func(side int) func(f *fixture, rd mql.Reader) (any, error)
	switch x := r.rng.IntN(5); {
	case x == 0 || refs[0] == "":
		what = "context *"
		read = func(int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Context(f.ctx, []string{"*"}, 0) }
		}
	case x == 1:
		what = "live *"
		read = func(int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Live(f.ctx, "*") }
		}
	case x == 2:
		what = "beliefs *.p1"
		read = func(int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Beliefs(f.ctx, "*.p1", nil) }
		}
	case x == 3 && strings.Contains(refs[0], "."):
		what = fmt.Sprintf("revoked-by %v", refs)
		read = func(side int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.RevokedBy(f.ctx, refs[side]) }
		}
	default:
		what = fmt.Sprintf("why %v", refs)
		read = func(side int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Why(f.ctx, refs[side]) }
		}
	}
	if hidden {
		// Refused or not, a hidden read changes nothing a visible principal sees.
		_ = r.tw.hiddenForRun(who, run, read(0))
		r.counts["hidden reads for runs"]++
		return
	}
	side := 0
	r.tw.forRun(fmt.Sprintf("step %d: %s for run %s as %s", step, what, run, who), who, run, func(f *fixture, rd mql.Reader) (any, error) {
		defer func() { side++ }()
		return read(side)(f, rd)
	})
	r.counts["reads for runs"]++
}

func (r *twRun) reads(who string, step int) {
	r.t.Helper()
	var keys []string
	for _, s := range pmSubjects {
		for _, p := range pmPredicates {
			keys = append(keys, s+"."+p)
		}
	}
	asOf := 0
	if r.tw.labels > 0 && r.rng.IntN(3) == 0 {
		asOf = 1 + r.rng.IntN(r.tw.labels)
	}
	r.tw.reads(who, keys, pmArtNames, asOf)
}
