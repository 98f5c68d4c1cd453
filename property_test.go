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
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

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
