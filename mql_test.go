package mql_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// clock is a test clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

type fixture struct {
	t   *testing.T
	db  *mql.DB
	clk *clock
	ctx context.Context
}

func open(t *testing.T, opts mql.Options) *fixture {
	t.Helper()
	return openDSN(t, "memory:", opts)
}

func openDSN(t *testing.T, dsn string, opts mql.Options) *fixture {
	t.Helper()
	clk := &clock{t: t0}
	if opts.Clock == nil {
		opts.Clock = clk.Now
	}
	db, err := mql.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &fixture{t: t, db: db, clk: clk, ctx: context.Background()}
}

// export is the store's N-Quads export.
func (f *fixture) export() string {
	f.t.Helper()
	var b strings.Builder
	if err := f.db.Export(f.ctx, &b); err != nil {
		f.t.Fatal(err)
	}
	return b.String()
}

// imported is a new in-memory store that imported nq.
func imported(t *testing.T, nq string) *fixture {
	t.Helper()
	g := open(t, mql.Options{})
	if err := g.db.Import(g.ctx, strings.NewReader(nq)); err != nil {
		t.Fatal(err)
	}
	return g
}

// team records the principals most tests use.
func (f *fixture) team() *fixture {
	f.t.Helper()
	for _, p := range []struct {
		name string
		typ  mql.PrincipalType
	}{{"alice", mql.User}, {"bob", mql.User}, {"worker-3", mql.Agent}, {"worker-7", mql.Agent}, {"orchestrator", mql.Agent}, {"architect", mql.Agent}, {"engine", mql.Tool}} {
		f.ok(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: p.name, Type: p.typ, By: "owner"}))
	}
	return f
}

func (f *fixture) ok(rc mql.Receipt, err error) mql.Receipt {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
	f.clk.Add(time.Second)
	return rc
}

func (f *fixture) assert(subj, pred string, v mql.Value, by string, src ...string) mql.Receipt {
	f.t.Helper()
	s := mql.AssertSpec{Subject: subj, Predicate: pred, Value: v, By: by}
	for _, id := range src {
		s.Sources = append(s.Sources, mql.Source{ID: id})
	}
	return f.ok(f.db.Assert(f.ctx, s))
}

func (f *fixture) state(ref string) mql.State {
	f.t.Helper()
	h, err := f.db.RevokedBy(f.ctx, ref)
	if err != nil {
		f.t.Fatal(err)
	}
	return h.Claim.State
}

// refused checks that a write fails with want and leaves the store unchanged.
func (f *fixture) refused(want error, write func() (mql.Receipt, error)) error {
	f.t.Helper()
	before, err := f.db.QuadCount(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	head, _ := f.db.Head(f.ctx)
	_, err = write()
	if !errors.Is(err, want) {
		f.t.Fatalf("got error %v, want %v", err, want)
	}
	after, _ := f.db.QuadCount(f.ctx)
	head2, _ := f.db.Head(f.ctx)
	if after != before || head2 != head {
		f.t.Fatalf("refused write changed the store: quads %d → %d, head %d → %d", before, after, head, head2)
	}
	return err
}

// Rule 2: supersession by rank; lower rank is contested (or corroborating when it agrees).
func TestSupersessionByRank(t *testing.T) {
	tests := []struct {
		name      string
		first     mql.Kind
		confirm   bool
		second    mql.Kind
		sameValue bool
		want1     mql.State
		want2     mql.State
	}{
		{"observed replaces observed", mql.Observed, false, mql.Observed, false, mql.Superseded, mql.Live},
		{"observed replaces inferred", mql.Inferred, false, mql.Observed, false, mql.Superseded, mql.Live},
		{"inferred replaces inferred", mql.Inferred, false, mql.Inferred, false, mql.Superseded, mql.Live},
		{"inferred contests observed", mql.Observed, false, mql.Inferred, false, mql.Live, mql.Contested},
		{"observed contests confirmed", mql.Observed, true, mql.Observed, false, mql.Live, mql.Contested},
		{"inferred agreeing with observed corroborates", mql.Observed, false, mql.Inferred, true, mql.Live, mql.Superseded},
		{"same value same rank supersedes", mql.Observed, false, mql.Observed, true, mql.Superseded, mql.Live},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := open(t, mql.Options{}).team()
			f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(44), By: "worker-3", Kind: tt.first}))
			if tt.confirm {
				f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "*", By: "owner"}))
				f.ok(f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: "Klarveld.price", By: "alice"}))
			}
			v := mql.Number(89)
			if tt.sameValue {
				v = mql.Number(44)
			}
			rc := f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: v, By: "worker-7", Kind: tt.second}))
			if rc.Ref != "Klarveld.price@2" || rc.State != tt.want2 {
				t.Fatalf("receipt %+v, want Klarveld.price@2 %s", rc, tt.want2)
			}
			if got := f.state("Klarveld.price@1"); got != tt.want1 {
				t.Errorf("@1 is %s, want %s", got, tt.want1)
			}
			if got := f.state("Klarveld.price@2"); got != tt.want2 {
				t.Errorf("@2 is %s, want %s", got, tt.want2)
			}
			live, err := f.db.Live(f.ctx, "Klarveld.price")
			if err != nil || len(live) != 1 {
				t.Fatalf("live: %v %v, want exactly one", live, err)
			}
			if tt.want2 == mql.Contested {
				cs, _ := f.db.Conflicts(f.ctx)
				if len(cs) != 1 || cs[0].Live.Ref != "Klarveld.price@1" || cs[0].Contested[0].Ref != "Klarveld.price@2" {
					t.Errorf("conflicts = %+v", cs)
				}
			}
		})
	}
}

// Rule 1: writes are additive; history keeps every version.
func TestWritesAreAdditive(t *testing.T) {
	f := open(t, mql.Options{}).team()
	var quads []int64
	count := func() {
		n, err := f.db.QuadCount(f.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(quads) > 0 && n <= quads[len(quads)-1] {
			t.Fatalf("quad count did not grow: %v then %d", quads, n)
		}
		quads = append(quads, n)
	}
	count()
	f.assert("K", "price", mql.Number(44), "worker-3", "src:K:rev0")
	count()
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan:x", From: []string{"K.price"}, By: "orchestrator"}))
	count()
	f.assert("K", "price", mql.Number(89), "worker-7", "src:K:rev1")
	count()
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-3", Because: "old page"}))
	count()
	f.ok(f.db.Review(f.ctx, mql.ReviewSpec{Artifact: "plan:x", By: "alice"}))
	count()
	h, err := f.db.History(f.ctx, "K.price")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Claims) != 2 || h.Claims[0].State != mql.Revoked || h.Claims[1].State != mql.Live {
		t.Fatalf("history = %+v", h.Claims)
	}
}

// Rule 3: standing for revoke, confirm, grant and (strict) assert.
func TestStanding(t *testing.T) {
	tests := []struct {
		name    string
		grant   *mql.GrantSpec
		write   func(f *fixture) (mql.Receipt, error)
		allowed bool
		mention string // the refusal must name principal, right and scope
	}{
		{"own claim", nil, func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-3"})
		}, true, ""},
		{"another's claim without grant", nil, func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-7"})
		}, false, "worker-7 has no revoke right on K.price"},
		{"grant on predicate", &mql.GrantSpec{Grantee: "worker-7", Right: mql.RightRevoke, Scope: "price", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-7"})
		}, true, ""},
		{"grant on subject", &mql.GrantSpec{Grantee: "worker-7", Right: mql.RightRevoke, Scope: "K.*", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-7"})
		}, true, ""},
		{"grant on other subject", &mql.GrantSpec{Grantee: "worker-7", Right: mql.RightRevoke, Scope: "J.*", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-7"})
		}, false, "worker-7 has no revoke right on K.price"},
		{"grant of the wrong right", &mql.GrantSpec{Grantee: "worker-7", Right: mql.RightAssert, Scope: "*", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-7"})
		}, false, "worker-7 has no revoke right on K.price"},
		{"owner revokes anything", nil, func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "owner"})
		}, true, ""},
		{"confirm without right", nil, func(f *fixture) (mql.Receipt, error) {
			return f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: "K.price", By: "alice"})
		}, false, "alice has no confirm right on K.price"},
		{"confirm with right", &mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "*", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: "K.price", By: "alice"})
		}, true, ""},
		{"an agent cannot confirm", &mql.GrantSpec{Grantee: "worker-7", Right: mql.RightConfirm, Scope: "*", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: "K.price", By: "worker-7"})
		}, false, "only a user can confirm"},
		{"grant without grant right", nil, func(f *fixture) (mql.Receipt, error) {
			return f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "worker-7", Right: mql.RightRevoke, Scope: "*", By: "alice"})
		}, false, "alice has no grant right on *"},
		{"grant within a granted scope", &mql.GrantSpec{Grantee: "alice", Right: mql.RightGrant, Scope: "price", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "worker-7", Right: mql.RightRevoke, Scope: "K.price", By: "alice"})
		}, true, ""},
		{"grant wider than held", &mql.GrantSpec{Grantee: "alice", Right: mql.RightGrant, Scope: "price", By: "owner"}, func(f *fixture) (mql.Receipt, error) {
			return f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "worker-7", Right: mql.RightRevoke, Scope: "*", By: "alice"})
		}, false, "alice has no grant right on *"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := open(t, mql.Options{}).team()
			f.assert("K", "price", mql.Number(44), "worker-3", "src:K:rev0")
			if tt.grant != nil {
				f.ok(f.db.Grant(f.ctx, *tt.grant))
			}
			if tt.allowed {
				f.ok(tt.write(f))
				return
			}
			err := f.refused(mql.ErrNoStanding, func() (mql.Receipt, error) { return tt.write(f) })
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not say %q", err, tt.mention)
			}
		})
	}
}

func TestStrictAssertNeedsGrant(t *testing.T) {
	f := open(t, mql.Options{Strict: true}).team()
	err := f.refused(mql.ErrNoStanding, func() (mql.Receipt, error) {
		return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(1), By: "worker-3"})
	})
	if !strings.Contains(err.Error(), "worker-3 has no assert right on K.price") {
		t.Errorf("error %q", err)
	}
	g := f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "worker-3", Right: mql.RightAssert, Scope: "price", By: "owner"}))
	f.assert("K", "price", mql.Number(1), "worker-3")
	why, err := f.db.Why(f.ctx, "K.price")
	if err != nil {
		t.Fatal(err)
	}
	if why.Claim.Grant != g.Ref || len(why.Children) == 0 || why.Children[len(why.Children)-1].Grant == nil {
		t.Fatalf("why does not show the grant %s: %+v", g.Ref, why)
	}
}

// Revocation records who, when, why, the standing used and the replacement.
func TestRevocationRecord(t *testing.T) {
	f := open(t, mql.Options{}).team()
	g := f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightRevoke, Scope: "price", By: "owner"}))
	f.assert("K", "price", mql.Number(44), "worker-3", "src:K:rev0")
	f.assert("K", "price", mql.Number(89), "worker-7", "src:K:rev1")
	f.assert("K", "price", mql.Number(88), "worker-7", "src:K:rev2")
	rc := f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@3", By: "alice", Because: "misread the page", ReplacedBy: "K.price@2"}))
	rb, err := f.db.RevokedBy(f.ctx, "K.price@3")
	if err != nil {
		t.Fatal(err)
	}
	r := rb.Revocation
	if r == nil || r.By != "alice" || r.Because != "misread the page" || r.Standing != g.Ref || r.ReplacedBy != "K.price@2" || r.Tx != rc.Tx || !r.At.Equal(rc.At) {
		t.Fatalf("revocation = %+v (receipt %+v)", r, rc)
	}
	if s := f.state("K.price@2"); s != mql.Live {
		t.Errorf("replacement is %s, want live", s)
	}
	// Not revoked: the answer carries the actual state.
	rb, _ = f.db.RevokedBy(f.ctx, "K.price@1")
	if rb.Revocation != nil || rb.Claim.State != mql.Superseded {
		t.Errorf("revoked-by @1 = %+v", rb)
	}
	// Revoking without replacement leaves the key with no live claim; superseded versions stay superseded.
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@2", By: "worker-7"}))
	if live, _ := f.db.Live(f.ctx, "K.price"); len(live) != 0 {
		t.Errorf("live after revoking the replacement = %+v", live)
	}
	f.refused(mql.ErrConflict, func() (mql.Receipt, error) {
		return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@2", By: "owner"})
	})
}

// Valid time: a claim expires when its valid-until passes; as-of reads see it live before.
func TestExpiry(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "region", Value: mql.String("EU"), By: "worker-3", ValidUntil: t0.Add(time.Hour)}))
	if s := f.state("K.region@1"); s != mql.Live {
		t.Fatalf("state %s before expiry", s)
	}
	f.clk.Add(2 * time.Hour)
	if s := f.state("K.region@1"); s != mql.Expired {
		t.Fatalf("state %s after expiry", s)
	}
	if live, _ := f.db.Live(f.ctx, "K"); len(live) != 0 {
		t.Errorf("an expired claim is live: %+v", live)
	}
	old, err := f.db.AsOf(t0.Add(30*time.Minute)).Live(f.ctx, "K")
	if err != nil || len(old) != 1 {
		t.Errorf("as of before expiry: %+v %v", old, err)
	}
	// A new claim after expiry becomes live whatever its rank.
	rc := f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "region", Value: mql.String("US"), By: "worker-3", Kind: mql.Inferred}))
	if rc.State != mql.Live {
		t.Errorf("claim after expiry is %s", rc.State)
	}
}

// Decay: effective confidence halves every half-life; decay never changes state.
func TestDecay(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.SetDecay(f.ctx, mql.DecaySpec{Predicate: "signal", HalfLife: 10 * time.Minute, By: "owner"}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "L1", Predicate: "signal", Value: mql.Bool(true), By: "worker-3", Confidence: mql.Confidence(0.8)}))
	rec := f.clk.Now().Add(-time.Second)
	for _, tt := range []struct {
		after time.Duration
		want  float64
	}{{0, 0.8}, {10 * time.Minute, 0.4}, {20 * time.Minute, 0.2}, {35 * time.Minute, 0.8 * math.Pow(2, -3.5)}} {
		f.clk.t = rec.Add(tt.after)
		live, err := f.db.Live(f.ctx, "L1.signal")
		if err != nil || len(live) != 1 {
			t.Fatal(live, err)
		}
		c := live[0]
		if math.Abs(c.Effective-tt.want) > 1e-9 || c.Confidence != 0.8 || c.State != mql.Live {
			t.Errorf("after %s: effective %v state %s, want %v live", tt.after, c.Effective, c.State, tt.want)
		}
	}
}

func TestDerivationCycle(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("K", "p", mql.Number(1), "worker-3")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"K.p"}, By: "orchestrator"}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "b", From: []string{"a"}, By: "orchestrator"}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "c", From: []string{"b"}, By: "orchestrator"}))
	f.refused(mql.ErrCycle, func() (mql.Receipt, error) {
		return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"c"}, By: "orchestrator"})
	})
	// A new version may fold in its own previous version.
	rc := f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"a@1", "K.p"}, By: "orchestrator"}))
	if rc.Ref != "a@2" {
		t.Fatalf("fold: %+v", rc)
	}
}

// Rule 6: an artifact is never more confident than its least confident input.
func TestArtifactConfidenceCap(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(1), By: "worker-3", Confidence: mql.Confidence(0.6)}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "J", Predicate: "p", Value: mql.Number(1), By: "worker-3", Confidence: mql.Confidence(0.9)}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"K.p", "J.p"}, By: "orchestrator"}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "b", From: []string{"a"}, By: "orchestrator", Confidence: mql.Confidence(0.95)}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "c", From: []string{"J.p"}, By: "orchestrator", Confidence: mql.Confidence(0.5)}))
	for ref, want := range map[string]float64{"a": 0.6, "b": 0.6, "c": 0.5} {
		h, err := f.db.History(f.ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Artifacts[0].Effective; got != want {
			t.Errorf("%s effective confidence %v, want %v", ref, got, want)
		}
	}
}

// Rule 5: seen-by claims are visible only to those principals (and the owner), through every read.
func TestSeenBy(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("patient"), By: "architect", Kind: mql.Inferred, SeenBy: []string{"architect"}}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "hp", Value: mql.Number(3), By: "engine", SeenBy: []string{"engine"}}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "summary:Player7", From: []string{"Player7.style"}, By: "architect"}))
	arch := f.db.As("architect")
	live, _ := arch.Live(f.ctx, "*")
	if len(live) != 1 || live[0].Ref != "Player7.style@1" {
		t.Fatalf("architect sees %+v", live)
	}
	if _, err := arch.Why(f.ctx, "Player7.hp"); !errors.Is(err, mql.ErrNotFound) {
		t.Errorf("why of an engine-only claim as architect: %v", err)
	}
	if _, err := arch.History(f.ctx, "Player7.hp"); !errors.Is(err, mql.ErrNotFound) {
		t.Errorf("history of an engine-only claim as architect: %v", err)
	}
	ctxt, _ := arch.Context(f.ctx, []string{"Player7"}, 0)
	if strings.Contains(ctxt.Text, "hp") {
		t.Errorf("architect context leaks: %q", ctxt.Text)
	}
	st, _ := arch.Stats(f.ctx)
	if st.Claims != 1 {
		t.Errorf("architect stats count %d claims", st.Claims)
	}
	all, _ := f.db.Live(f.ctx, "*")
	if len(all) != 2 {
		t.Errorf("owner sees %d claims", len(all))
	}
	// The summary inherits its input's audience.
	if _, err := f.db.As("worker-3").Why(f.ctx, "summary:Player7"); !errors.Is(err, mql.ErrNotFound) {
		t.Errorf("worker-3 reads the architect's summary: %v", err)
	}
	if _, err := f.db.As("nobody").Live(f.ctx, "*"); !errors.Is(err, mql.ErrUnknownPrincipal) {
		t.Errorf("reading as an unknown principal: %v", err)
	}
}

// Reads as of a transaction or a time see exactly the state then.
func TestAsOf(t *testing.T) {
	f := open(t, mql.Options{}).team()
	rc1 := f.assert("K", "price", mql.Number(44), "worker-3")
	rc2 := f.assert("K", "price", mql.Number(89), "worker-7")
	for _, tt := range []struct {
		r    mql.Reader
		want float64
	}{
		{f.db.AsOfTx(rc1.Tx), 44}, {f.db.AsOfTx(rc2.Tx), 89},
		{f.db.AsOf(rc1.At), 44}, {f.db.AsOf(rc2.At.Add(-time.Millisecond)), 44}, {f.db.AsOf(rc2.At), 89},
		{f.db.Reader(), 89},
	} {
		live, err := tt.r.Live(f.ctx, "K.price")
		if err != nil || len(live) != 1 || live[0].Value.Num != tt.want {
			t.Errorf("got %+v %v, want %v", live, err, tt.want)
		}
	}
	if _, err := f.db.AsOfTx(999).Live(f.ctx, "*"); !errors.Is(err, mql.ErrNotFound) {
		t.Errorf("as of a future tx: %v", err)
	}
}

// Bad input: each error matches its sentinel and the store is unchanged.
func TestBadInput(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("K", "price", mql.Number(44), "worker-3")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"K.price"}, By: "orchestrator"}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "b", From: []string{"a"}, By: "orchestrator"}))
	tests := []struct {
		name  string
		want  error
		write func() (mql.Receipt, error)
	}{
		{"unknown principal", mql.ErrUnknownPrincipal, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(1), By: "ghost"})
		}},
		{"unknown seen-by principal", mql.ErrUnknownPrincipal, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(1), By: "worker-3", SeenBy: []string{"ghost"}})
		}},
		{"malformed reference", mql.ErrBadReference, func() (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@x", By: "owner"})
		}},
		{"malformed subject", mql.ErrBadReference, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K price", Predicate: "p", Value: mql.Number(1), By: "worker-3"})
		}},
		{"version that does not exist", mql.ErrNotFound, func() (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@7", By: "owner"})
		}},
		{"wrong value type", mql.ErrValueType, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "J", Predicate: "price", Value: mql.String("44"), By: "worker-3"})
		}},
		{"untyped value", mql.ErrValueType, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "J", Predicate: "q", By: "worker-3"})
		}},
		{"confidence out of range", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(1), By: "worker-3", Confidence: mql.Confidence(1.5)})
		}},
		{"derivation cycle", mql.ErrCycle, func() (mql.Receipt, error) {
			return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"b"}, By: "orchestrator"})
		}},
		{"revoke without standing", mql.ErrNoStanding, func() (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.price@1", By: "worker-7"})
		}},
		{"principal twice, of another type", mql.ErrConflict, func() (mql.Receipt, error) {
			return f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "alice", Type: mql.Agent, By: "owner"})
		}},
		{"bad principal type", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "carol", Type: "robot", By: "owner"})
		}},
		{"bad scope", mql.ErrBadReference, func() (mql.Receipt, error) {
			return f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightRevoke, Scope: "*.price", By: "owner"})
		}},
		{"derive from nothing known", mql.ErrNotFound, func() (mql.Receipt, error) {
			return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "c", From: []string{"Nope.price"}, By: "orchestrator"})
		}},
		{"negative half-life", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.SetDecay(f.ctx, mql.DecaySpec{Predicate: "price", HalfLife: -time.Minute, By: "owner"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := f.refused(tt.want, tt.write)
			if len(err.Error()) < 20 {
				t.Errorf("message %q says too little", err)
			}
		})
	}
}

// References stay unique when many goroutines write the same key at once, and exactly one
// claim per key is live.
func TestConcurrentVersions(t *testing.T) {
	f := open(t, mql.Options{}).team()
	const writers, each = 16, 20
	var wg sync.WaitGroup
	refs := make(chan string, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				rc, err := f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(float64(w*1000 + i)), By: "worker-3", Sources: []mql.Source{{ID: fmt.Sprintf("src:%d:%d", w, i)}}})
				if err != nil {
					t.Error(err)
					return
				}
				refs <- rc.Ref
			}
		}()
	}
	wg.Wait()
	close(refs)
	seen := map[string]bool{}
	for r := range refs {
		if seen[r] {
			t.Fatalf("reference %s handed out twice", r)
		}
		seen[r] = true
	}
	h, _ := f.db.History(f.ctx, "K.price")
	live := 0
	for i, c := range h.Claims {
		if c.Version != i+1 {
			t.Fatalf("versions not gapless: %d at %d", c.Version, i)
		}
		if c.State == mql.Live {
			live++
		}
	}
	if len(h.Claims) != writers*each || live != 1 {
		t.Fatalf("%d versions, %d live", len(h.Claims), live)
	}
}

// Context stays within its budget and says what it left out.
func TestContextBudget(t *testing.T) {
	f := open(t, mql.Options{}).team()
	for i := range 12 {
		s := fmt.Sprintf("Vendor%02d", i)
		f.assert(s, "price_per_seat", mql.Number(float64(40+i)), "worker-3", "src:"+s)
		f.assert(s, "region", mql.String("EU"), "worker-3", "src:"+s)
	}
	all, err := f.db.Context(f.ctx, []string{"*"}, 0)
	if err != nil || len(all.Lines) != 12 || len(all.Omitted) != 0 {
		t.Fatalf("no budget: %+v %v", all, err)
	}
	for _, budget := range []int{15, 20, 40, 60, 100, 1000} {
		c, err := f.db.Context(f.ctx, []string{"*"}, budget)
		if err != nil {
			t.Fatal(err)
		}
		if c.Tokens > budget || mql.EstimateTokens(c.Text) != c.Tokens {
			t.Errorf("budget %d: %d tokens", budget, c.Tokens)
		}
		if len(c.Lines)+len(c.Omitted) != 12 {
			t.Errorf("budget %d: %d lines + %d omitted", budget, len(c.Lines), len(c.Omitted))
		}
		if len(c.Omitted) > 0 && !strings.Contains(c.Text, "left out") {
			t.Errorf("budget %d: the text does not say what it left out: %q", budget, c.Text)
		}
	}
	// Revisions do not grow the context: one line per subject, live claims only.
	f.assert("Vendor00", "price_per_seat", mql.Number(89), "worker-7", "src:Vendor00:rev1")
	after, _ := f.db.Context(f.ctx, []string{"*"}, 0)
	if len(after.Text) != len(all.Text) || !strings.Contains(after.Text, "price_per_seat=89 @2") {
		t.Errorf("after a revision: %q", after.Text)
	}
}

// Claims of one key seen by different audiences are separate memories: what the architect
// cannot see never changes the state of what it can, nor shows up in its receipts.
func TestAudiencesDoNotLeak(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("patient"), By: "architect", Kind: mql.Inferred, SeenBy: []string{"architect"}}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("reckless"), By: "engine", SeenBy: []string{"engine"}, Sources: []mql.Source{{ID: "engine:log"}}}))
	arch := f.db.As("architect")
	h, err := arch.History(f.ctx, "Player7.style")
	if err != nil || len(h.Claims) != 1 || h.Claims[0].State != mql.Live {
		t.Fatalf("architect history = %+v %v", h, err)
	}
	rc := f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("bold"), By: "architect", Kind: mql.Inferred, SeenBy: []string{"architect"}}))
	if rc.State != mql.Live || rc.Supersedes != "Player7.style@1" || rc.Contests != "" {
		t.Fatalf("architect's revision: %+v", rc)
	}
	if cs, _ := arch.Conflicts(f.ctx); len(cs) != 0 {
		t.Errorf("architect conflicts = %+v", cs)
	}
	// The owner sees one live claim per audience.
	live, _ := f.db.Live(f.ctx, "Player7.style")
	if len(live) != 2 || live[0].Ref != "Player7.style@2" || live[1].Ref != "Player7.style@3" {
		t.Errorf("owner live = %+v", live)
	}
	mine, _ := arch.Live(f.ctx, "Player7.style")
	if len(mine) != 1 || mine[0].Ref != "Player7.style@3" {
		t.Errorf("architect live = %+v", mine)
	}
}

// TestRedeclaringIsNoop: declaring a principal again with the same type, or giving a grant
// again, writes nothing and says so, with the transaction that recorded it; scripts can be
// run again.
func TestRedeclaringIsNoop(t *testing.T) {
	f := open(t, mql.Options{}).team()
	g := f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightRevoke, Scope: "price", By: "owner"}))
	head, _ := f.db.Head(f.ctx)
	rc, err := f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "alice", Type: mql.User, By: "owner"})
	if err != nil || !rc.Unchanged || rc.Tx != 2 || rc.Ref != "alice" {
		t.Fatalf("principal again: %+v %v", rc, err)
	}
	rc, err = f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightRevoke, Scope: "price", By: "owner"})
	if err != nil || !rc.Unchanged || rc.Tx != g.Tx || rc.Ref != g.Ref {
		t.Fatalf("grant again: %+v %v (first %+v)", rc, err, g)
	}
	if h, _ := f.db.Head(f.ctx); h != head {
		t.Fatalf("head %d → %d", head, h)
	}
	// Another giver, or a standing the writer lacks, is not the same grant.
	if _, err := f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightRevoke, Scope: "price", By: "bob"}); !errors.Is(err, mql.ErrNoStanding) {
		t.Fatalf("grant by bob: %v", err)
	}
	if _, err := f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "alice", Type: mql.User, By: "bob"}); !errors.Is(err, mql.ErrNoStanding) {
		t.Fatalf("principal by bob: %v", err)
	}
}
