package authority_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore/record"
)

// Each table below runs the writer's rule and then the checker's on the same store, so the
// two cannot drift apart: what the writer allows verifies, what it refuses does not.

func TestAddPrincipal(t *testing.T) {
	for _, tc := range []struct {
		principal string
		want      string
		denied    bool
	}{
		{"alice", authority.StandingOwner, false},
		{"carol", "g2.7", false},
		{"bob", "bob has no grant right on *", true}, // a grant on Klarveld.* is not one on the store
		{"scraper", "scraper has no grant right on *", true},
	} {
		h := team(false)
		got, err := authority.AddPrincipal(h, tc.principal)
		checkStanding(t, "AddPrincipal("+tc.principal+")", got, err, tc.want, tc.denied)
		verr := authority.VerifyPrincipal(h, tc.principal)
		checkVerified(t, "VerifyPrincipal("+tc.principal+")", verr, tc.denied, "recorded by "+tc.principal+", who held no grant right on *")
	}
}

func TestGrant(t *testing.T) {
	for _, tc := range []struct {
		principal, scope string
		want             string
		denied           bool
	}{
		{"alice", "*", authority.StandingOwner, false},
		{"carol", "Brimsole.region", "g2.7", false},
		{"bob", "Klarveld.*", "g2.5", false},
		{"bob", "Klarveld.price", "g2.5", false},
		{"worker-7", "Klarveld.price_per_seat", "g2.6", false},
		{"bob", "Brimsole.price", "bob has no grant right on Brimsole.price", true},
		{"bob", "price", "bob has no grant right on price", true}, // Klarveld.* covers no other subject's price
		{"worker-7", "*", "worker-7 has no grant right on *", true},
		{"scraper", "price", "scraper has no grant right on price", true},
	} {
		h := team(false)
		what := fmt.Sprintf("Grant(%s, %s)", tc.principal, tc.scope)
		got, err := authority.Grant(h, tc.principal, tc.scope)
		checkStanding(t, what, got, err, tc.want, tc.denied)
		tx := &record.Tx{ID: 9, Grants: []*record.Grant{
			{ID: "g9.1", Grantee: "scraper", Right: record.RightAssert, Scope: tc.scope, By: tc.principal},
		}}
		verr := authority.VerifyGrant(h, tx, 0)
		checkVerified(t, "Verify"+what, verr, tc.denied, fmt.Sprintf("given by %s, who held no grant right on %s", tc.principal, tc.scope))
	}
}

func TestDecay(t *testing.T) {
	for _, tc := range []struct {
		principal, predicate string
		want                 string
		denied               bool
	}{
		{"alice", "price", authority.StandingOwner, false},
		{"carol", "price", "g2.7", false},
		{"worker-7", "price_per_seat", "g2.6", false},
		{"worker-7", "region", "worker-7 has no grant right on region", true},
		{"bob", "price", "bob has no grant right on price", true}, // Klarveld.* holds on one subject, a decay on all
		{"scraper", "price", "scraper has no grant right on price", true},
	} {
		h := team(false)
		what := fmt.Sprintf("Decay(%s, %s)", tc.principal, tc.predicate)
		got, err := authority.Decay(h, tc.principal, tc.predicate)
		checkStanding(t, what, got, err, tc.want, tc.denied)
		verr := authority.VerifyDecay(h, &record.Decay{Predicate: tc.predicate, By: tc.principal})
		checkVerified(t, "Verify"+what, verr, tc.denied, fmt.Sprintf("decay of %s declared by %s, who held no grant right on it", tc.predicate, tc.principal))
	}
}

// A transaction of several writes rests on its own grants. Among its grants the order is
// recorded, and only an earlier one counts, so no grant is its own standing; a principal or a
// decay is judged against all the transaction's grants, since its place among them is not
// recorded.
func TestStandingWithinATransaction(t *testing.T) {
	toScraper := &record.Grant{ID: "g9.1", Grantee: "scraper", Right: record.RightGrant, Scope: "price", By: "alice"}
	byScraper := &record.Grant{ID: "g9.2", Grantee: "bob", Right: record.RightAssert, Scope: "Klarveld.price", By: "scraper"}
	itself := &record.Grant{ID: "g9.1", Grantee: "scraper", Right: record.RightGrant, Scope: "*", By: "scraper"}
	storeWide := &record.Grant{ID: "g9.1", Grantee: "scraper", Right: record.RightGrant, Scope: "*", By: "alice"}
	decay := &record.Decay{Predicate: "price", By: "scraper"}
	const refused = "given by scraper, who held no grant right on Klarveld.price"
	for _, tc := range []struct {
		name string
		err  error
		want string // "" when it verifies
	}{
		{"a grant resting on one given earlier", authority.VerifyGrant(team(false), &record.Tx{Grants: []*record.Grant{toScraper, byScraper}}, 1), ""},
		{"a grant resting on one given later", authority.VerifyGrant(team(false), &record.Tx{Grants: []*record.Grant{byScraper, toScraper}}, 0), refused},
		{"a grant resting on itself", authority.VerifyGrant(team(false), &record.Tx{Grants: []*record.Grant{itself}}, 0), "given by scraper, who held no grant right on *"},
		{"a decay resting on the transaction's grant", authority.VerifyDecay(authority.InTx(team(false), &record.Tx{Grants: []*record.Grant{toScraper}}), decay), ""},
		{"a decay resting on no grant", authority.VerifyDecay(authority.InTx(team(false), &record.Tx{Grants: []*record.Grant{byScraper}}), decay), "decay of price declared by scraper, who held no grant right on it"},
		{"a principal recorded on the transaction's grant", authority.VerifyPrincipal(authority.InTx(team(false), &record.Tx{Grants: []*record.Grant{storeWide}}), "scraper"), ""},
		{"a principal recorded on no grant", authority.VerifyPrincipal(authority.InTx(team(false), &record.Tx{Grants: []*record.Grant{toScraper}}), "scraper"), "recorded by scraper, who held no grant right on *"},
	} {
		checkVerified(t, tc.name, tc.err, tc.want != "", tc.want)
	}
	// A principal the transaction records is one for the rest of it.
	h := authority.InTx(team(false), &record.Tx{Principals: []*record.Principal{{Name: "dave", Type: record.User}}})
	if err := authority.MayConfirm(h, "dave"); err != nil {
		t.Errorf("a user recorded in the transaction may not confirm in it: %v", err)
	}
}

// checkVerified checks a Verify function's answer: nil when the standing held, else an error
// wrapping ErrStandingDidNotHold that says want.
func checkVerified(t *testing.T, what string, err error, denied bool, want string) {
	t.Helper()
	switch {
	case !denied && err != nil:
		t.Errorf("%s: %v, want it verified", what, err)
	case denied && err == nil:
		t.Errorf("%s verified, want %q", what, want)
	case denied && (!errors.Is(err, authority.ErrStandingDidNotHold) || err.Error() != want):
		t.Errorf("%s:\n got %v\nwant ErrStandingDidNotHold saying %s", what, err, want)
	}
}
