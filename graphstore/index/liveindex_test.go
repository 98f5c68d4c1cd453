package index

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore/record"
)

// The live index (each key and audience's live claim, and live claims by value) must agree with
// folding every claim's history, for every view: each transaction as of, before and after
// valid time ends, each reader, with and without a group commit's pending transactions.

var liveT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// liveTxAt is the time of transaction id in these tests: one minute apart.
func liveTxAt(id record.TxID) time.Time { return liveT0.Add(time.Duration(id) * time.Minute) }

// liveStep is one transaction of a scenario; claims and revocations get their Tx filled in.
type liveStep struct {
	claims []*record.Claim
	revs   []*record.Revocation
}

func cl(ref string, v record.Value, opts ...func(*record.Claim)) *record.Claim {
	id, err := record.ParseClaimID(ref)
	if err != nil {
		panic(err)
	}
	c := &record.Claim{ID: id, Value: v, By: "owner", Kind: record.Observed, Confidence: 1}
	for _, o := range opts {
		o(c)
	}
	return c
}

func ref(s string) *record.ClaimID {
	id, err := record.ParseClaimID(s)
	if err != nil {
		panic(err)
	}
	return &id
}

func supersedes(s string) func(*record.Claim) { return func(c *record.Claim) { c.Supersedes = ref(s) } }
func contests(s string) func(*record.Claim)   { return func(c *record.Claim) { c.Contests = ref(s) } }
func corroborates(s string) func(*record.Claim) {
	return func(c *record.Claim) { c.Corroborates = ref(s) }
}
func seenBy(p ...string) func(*record.Claim) { return func(c *record.Claim) { c.SeenBy = p } }
func until(t time.Time) func(*record.Claim)  { return func(c *record.Claim) { c.ValidUntil = t } }

func revoke(claim, replacedBy string) *record.Revocation {
	r := &record.Revocation{Claim: *ref(claim), By: "owner", Standing: "owner"}
	if replacedBy != "" {
		r.ReplacedBy = ref(replacedBy)
	}
	return r
}

func num(f float64) record.Value  { return record.Value{Type: record.Number, Num: f} }
func str(s string) record.Value   { return record.Value{Type: record.String, Str: s} }
func boolean(b bool) record.Value { return record.Value{Type: record.Bool, Bool: b} }

func (st liveStep) tx(id record.TxID) *record.Tx {
	tx := &record.Tx{ID: id, Time: liveTxAt(id), By: "owner"}
	for _, c := range st.claims {
		c.Tx = id
		tx.Claims = append(tx.Claims, c)
	}
	for i, r := range st.revs {
		r.Tx, r.ID = id, fmt.Sprintf("r%d.%d", id, i)
		tx.Revocations = append(tx.Revocations, r)
	}
	return tx
}

func genesis() *record.Tx {
	return &record.Tx{ID: 1, Time: liveTxAt(1), By: "owner", Meta: &record.StoreMeta{Owner: "owner"},
		Principals: []*record.Principal{{Name: "owner", Type: record.User, Tx: 1}, {Name: "alice", Type: record.Agent, Tx: 1}, {Name: "bob", Type: record.Agent, Tx: 1}}}
}

func TestLiveIndexAgreesWithFold(t *testing.T) {
	cases := []struct {
		name    string
		steps   []liveStep
		pending []liveStep // added after steps as a group commit's pending transactions
	}{
		{name: "supersede", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", num(1)), cl("B.p@1", num(1))}},
			{claims: []*record.Claim{cl("A.p@2", num(2), supersedes("A.p@1"))}},
			{claims: []*record.Claim{cl("A.p@3", num(1), supersedes("A.p@2"))}},
		}},
		{name: "contest, then the contested promoted", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", str("x"))}},
			{claims: []*record.Claim{cl("A.p@2", str("y"), contests("A.p@1"))}},
			{revs: []*record.Revocation{revoke("A.p@1", "A.p@2")}},
		}},
		{name: "corroborate", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", str("x"))}},
			{claims: []*record.Claim{cl("A.p@2", str("x"), corroborates("A.p@1"))}},
		}},
		{name: "revoke without replacement", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", num(1))}},
			{claims: []*record.Claim{cl("A.p@2", num(2), supersedes("A.p@1"))}},
			{revs: []*record.Revocation{revoke("A.p@2", "")}},
			{claims: []*record.Claim{cl("A.p@3", num(2))}},
		}},
		{name: "revoke with replacement", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", num(1))}},
			{claims: []*record.Claim{cl("A.p@2", num(2), supersedes("A.p@1"))}},
			{revs: []*record.Revocation{revoke("A.p@2", "A.p@1")}},
		}},
		{name: "revoke a contested claim", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", num(1))}},
			{claims: []*record.Claim{cl("A.p@2", num(2), contests("A.p@1"))}},
			{revs: []*record.Revocation{revoke("A.p@2", "")}},
		}},
		{name: "expiry by valid time", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", boolean(true), until(liveTxAt(3))), cl("B.p@1", boolean(true))}},
			{claims: []*record.Claim{cl("C.p@1", boolean(true), until(liveTxAt(2).Add(time.Second)))}},
			{claims: []*record.Claim{cl("A.p@2", boolean(false))}},
			{claims: []*record.Claim{cl("D.p@1", boolean(false))}},
		}},
		{name: "audiences", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", str("x"), seenBy("alice"))}},
			{claims: []*record.Claim{cl("A.p@2", str("x"))}},
			{claims: []*record.Claim{cl("A.p@3", str("y"), seenBy("bob", "alice"))}},
			{claims: []*record.Claim{cl("A.p@4", str("x"), seenBy("alice"), supersedes("A.p@1")), cl("B.p@1", str("x"), seenBy("bob"))}},
			{claims: []*record.Claim{cl("A.p@5", str("y"), seenBy("alice", "bob"), supersedes("A.p@3"))}},
			{revs: []*record.Revocation{revoke("A.p@2", "")}},
		}},
		{name: "values compare by type and instant", steps: []liveStep{
			{claims: []*record.Claim{
				cl("A.p@1", record.Value{Type: record.Time, Time: liveT0}),
				cl("B.p@1", record.Value{Type: record.Time, Time: liveT0.In(time.FixedZone("X", 3600))}),
				cl("A.q@1", num(0)), cl("B.q@1", record.Value{Type: record.Number, Num: negZero()}),
				cl("A.r@1", str("V1")), cl("B.r@1", record.Value{Type: record.Ref, Str: "V1"}),
			}},
		}},
		{name: "pending transactions of a group commit", steps: []liveStep{
			{claims: []*record.Claim{cl("A.p@1", num(1)), cl("B.p@1", num(1)), cl("C.p@1", num(1), seenBy("alice"))}},
			{claims: []*record.Claim{cl("A.p@2", num(2), supersedes("A.p@1"))}},
		}, pending: []liveStep{
			{claims: []*record.Claim{cl("B.p@2", num(2), supersedes("B.p@1")), cl("D.p@1", num(1))}},
			{revs: []*record.Revocation{revoke("A.p@2", "A.p@1"), revoke("C.p@1", "")}},
			{claims: []*record.Claim{cl("A.p@3", num(3), supersedes("A.p@1"))}},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix := New()
			ix.Add(genesis())
			for _, st := range tc.steps {
				ix.Add(st.tx(ix.Top() + 1))
			}
			committed := ix.Head()
			for _, st := range tc.pending {
				ix.AddPending(st.tx(ix.Top() + 1))
			}
			checkLiveIndex(t, ix)
			if len(tc.pending) > 0 {
				if ix.Head() != committed {
					t.Fatalf("pending transactions moved the head to %d", ix.Head())
				}
				// A reader must not see what is pending; a build must.
				checkLiveIndex(t, ix.BuildHandle())
				ix.CommitTo(ix.Top())
				checkLiveIndex(t, ix)
			}
			// Rebuilding after a failed group (DropPending) must leave the same index as never
			// having had the pending transactions.
			if len(tc.pending) > 0 {
				ix := New()
				ix.Add(genesis())
				for _, st := range tc.steps {
					ix.Add(st.tx(ix.Top() + 1))
				}
				for _, st := range tc.pending {
					ix.AddPending(st.tx(ix.Top() + 1))
				}
				ix.DropPending()
				checkLiveIndex(t, ix)
			}
		})
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

// checkLiveIndex compares, for every view of ix, what the live index yields with a fold of
// every claim in the index: the claims whose State is Live and the viewer may see.
func checkLiveIndex(t *testing.T, ix *Index) {
	t.Helper()
	var all []*ClaimEntry
	for _, tx := range ix.txs {
		for _, c := range tx.Claims {
			all = append(all, ix.claims[c.ID])
		}
	}
	var nows []time.Time
	for id := range ix.Top() + 2 {
		nows = append(nows, liveTxAt(id), liveTxAt(id).Add(30*time.Second))
	}
	for asOf := record.TxID(1); asOf <= ix.Head(); asOf++ {
		for _, now := range nows {
			if now.Before(liveTxAt(asOf)) {
				continue
			}
			for _, viewer := range []string{"", "alice", "bob", "carol"} {
				v := ix.View(asOf, now, viewer)
				name := fmt.Sprintf("as of %d (head %d, top %d) at %s as %q", asOf, ix.Head(), ix.Top(), now.Sub(liveT0), viewer)
				checkView(t, name, v, all)
			}
		}
	}
}

func checkView(t *testing.T, name string, v *View, all []*ClaimEntry) {
	t.Helper()
	want := map[string][]*ClaimEntry{} // by predicate
	for _, e := range all {
		if v.visibleClaim(e) && firstState(v, e) == Live {
			want[e.ID.Predicate] = append(want[e.ID.Predicate], e)
		}
	}
	for _, pred := range []string{"p", "q", "r"} {
		var got []*ClaimEntry
		v.EachLiveOf(pred, func(e *ClaimEntry) bool {
			got = append(got, e)
			return true
		})
		// A find sorts its rows by CompareListing; it must tell any two live claims apart.
		for i := range got {
			for j := range i {
				if CompareListing(got[i], got[j]) == 0 {
					t.Errorf("%s: CompareListing does not tell %s from %s", name, got[i].ID, got[j].ID)
				}
			}
		}
		sameClaims(t, fmt.Sprintf("%s: EachLiveOf(%s)", name, pred), got, want[pred])
		var values []record.Value
		for _, e := range all {
			if e.ID.Predicate == pred {
				values = append(values, e.Value)
			}
		}
		for _, val := range values {
			var got, wantVal []*ClaimEntry
			v.EachLiveWithValue(pred, val, func(e *ClaimEntry) bool {
				got = append(got, e)
				return true
			})
			for _, e := range want[pred] {
				if keyOfValue(pred, e.Value) == keyOfValue(pred, val) {
					wantVal = append(wantVal, e)
				}
			}
			sameClaims(t, fmt.Sprintf("%s: EachLiveWithValue(%s, %s)", name, pred, val), got, wantVal)
		}
	}
	for _, e := range all {
		var got, wantKey []*ClaimEntry
		v.EachLive(e.ID.Key, func(e *ClaimEntry) bool {
			got = append(got, e)
			return true
		})
		for _, w := range want[e.ID.Predicate] {
			if w.ID.Key == e.ID.Key {
				wantKey = append(wantKey, w)
			}
		}
		sameClaims(t, fmt.Sprintf("%s: EachLive(%s)", name, e.ID.Key), got, wantKey)
		if l, st := v.LiveIn(e.ID.Key, e.audience), firstState(v, e); (l == e) != (st == Live) {
			t.Errorf("%s: LiveIn(%s, %q) = %v, but %s is %s", name, e.ID.Key, e.audience, l, e.ID, st)
		}
	}
}

func firstState(v *View, e *ClaimEntry) State {
	if !v.in(e.Tx) {
		return ""
	}
	st, _ := v.State(e)
	return st
}

func sameClaims(t *testing.T, what string, got, want []*ClaimEntry) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.SortFunc(got, CompareListing)
	slices.SortFunc(want, CompareListing)
	if !slices.Equal(got, want) {
		t.Errorf("%s = %s, the fold says %s", what, ids(got), ids(want))
	}
}

func ids(es []*ClaimEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID.String())
	}
	return out
}

// TestLiveIndexSlotsAfterTheView: an as-of view long before the head cannot use the index of
// values (too much changed since) and scans instead, with the same answer.
func TestLiveIndexSlotsAfterTheView(t *testing.T) {
	ix := New()
	ix.Add(genesis())
	ix.Add(liveStep{claims: []*record.Claim{cl("A.p@1", num(1)), cl("B.p@1", num(1))}}.tx(2))
	for i := range 10 {
		ix.Add(liveStep{claims: []*record.Claim{cl(fmt.Sprintf("A.p@%d", i+2), num(float64(i%2)), supersedes(fmt.Sprintf("A.p@%d", i+1)))}}.tx(ix.Top() + 1))
	}
	v := ix.View(2, liveTxAt(2), "")
	if _, ok := v.changedSince("p"); ok {
		t.Error("changedSince at tx 2 did not give up on 10 later changes to 2 keys")
	}
	checkLiveIndex(t, ix)
}
