package authority_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore/record"
)

// holdings is a store as a standing check sees it: its owner and mode, principals, grants.
type holdings struct {
	meta       record.StoreMeta
	principals map[string]record.PrincipalType
	grants     []*record.Grant
}

func (h holdings) Meta() record.StoreMeta { return h.meta }

func (h holdings) Principal(name string) *record.Principal {
	t, ok := h.principals[name]
	if !ok {
		return nil
	}
	return &record.Principal{Name: name, Type: t}
}

func (h holdings) Grants(grantee string) []*record.Grant {
	var out []*record.Grant
	for _, g := range h.grants {
		if g.Grantee == grantee {
			out = append(out, g)
		}
	}
	return out
}

func team(strict bool) holdings {
	return holdings{
		meta: record.StoreMeta{Owner: "alice", Strict: strict},
		principals: map[string]record.PrincipalType{
			"alice": record.User, "bob": record.User, "carol": record.User, "worker-7": record.Agent, "scraper": record.Tool,
		},
		grants: []*record.Grant{
			{ID: "g2.1", Grantee: "worker-7", Right: record.RightAssert, Scope: "price_per_seat", By: "alice"},
			{ID: "g2.2", Grantee: "worker-7", Right: record.RightRevoke, Scope: "Klarveld.*", By: "alice"},
			{ID: "g2.3", Grantee: "bob", Right: record.RightConfirm, Scope: "*", By: "alice"},
			{ID: "g2.4", Grantee: "worker-7", Right: record.RightConfirm, Scope: "*", By: "alice"},
			{ID: "g2.5", Grantee: "bob", Right: record.RightGrant, Scope: "Klarveld.*", By: "alice"},
			{ID: "g2.6", Grantee: "worker-7", Right: record.RightGrant, Scope: "price_per_seat", By: "alice"},
			{ID: "g2.7", Grantee: "carol", Right: record.RightGrant, Scope: "*", By: "alice"},
		},
	}
}

func claim(s string) record.ClaimID {
	id, err := record.ParseClaimID(s)
	if err != nil {
		panic(err)
	}
	return id
}

func TestRank(t *testing.T) {
	if !(authority.Rank(record.Confirmed) > authority.Rank(record.Observed) &&
		authority.Rank(record.Observed) > authority.Rank(record.Inferred) &&
		authority.Rank(record.Inferred) > authority.Rank("")) {
		t.Error("kinds do not rank confirmed > observed > inferred > none")
	}
}

func TestValidScope(t *testing.T) {
	for _, tc := range []struct {
		scope string
		want  bool
	}{
		{"*", true}, {"price", true}, {"Klarveld.*", true}, {"Klarveld.price", true},
		{"", false}, {"*.price", false}, {"Klarveld.", false}, {".price", false},
		{"Klar*", false}, {"Klarveld.pr*", false}, {"Klarveld.price@1", false}, {"a.b.c", false},
	} {
		if got := authority.ValidScope(tc.scope); got != tc.want {
			t.Errorf("ValidScope(%q) = %v, want %v", tc.scope, got, tc.want)
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		scope, target string
		want          bool
	}{
		{"*", "Klarveld.price", true},
		{"*", "price", true},
		{"price", "Klarveld.price", true},
		{"price", "price", true},
		{"price", "Klarveld.region", false},
		{"Klarveld.*", "Klarveld.price", true},
		{"Klarveld.*", "Brimsole.price", false},
		{"Klarveld.*", "price", false},
		{"Klarveld.price", "Klarveld.price", true},
		{"Klarveld.price", "Klarveld.region", false},
		{"Klarveld.price", "price", false}, // a narrower grant never covers a wider scope
	} {
		if got := authority.Covers(tc.scope, tc.target); got != tc.want {
			t.Errorf("Covers(%q, %q) = %v, want %v", tc.scope, tc.target, got, tc.want)
		}
	}
}

func TestCanSee(t *testing.T) {
	for _, tc := range []struct {
		who    string
		seenBy []string
		want   bool
	}{
		{"worker-7", nil, true},
		{"worker-7", []string{"worker-7", "bob"}, true},
		{"worker-7", []string{"bob"}, false},
		{"alice", []string{"bob"}, true}, // the owner sees everything
	} {
		if got := authority.CanSee("alice", tc.who, tc.seenBy); got != tc.want {
			t.Errorf("CanSee(alice, %s, %v) = %v, want %v", tc.who, tc.seenBy, got, tc.want)
		}
	}
}

func TestAssert(t *testing.T) {
	for _, tc := range []struct {
		strict    bool
		principal string
		key       string
		want      string // the standing, or the error's text
		denied    bool
	}{
		{false, "worker-7", "Brimsole.region", "", false}, // an open store records none
		{true, "alice", "Brimsole.region", authority.StandingOwner, false},
		{true, "worker-7", "Klarveld.price_per_seat", "g2.1", false},
		{true, "worker-7", "Klarveld.region", "worker-7 has no assert right on Klarveld.region", true},
		{true, "bob", "Klarveld.price_per_seat", "bob has no assert right on Klarveld.price_per_seat", true},
	} {
		key := claim(tc.key + "@1").Key
		got, err := authority.Assert(team(tc.strict), tc.principal, key)
		checkStanding(t, fmt.Sprintf("Assert(strict %v, %s, %s)", tc.strict, tc.principal, tc.key), got, err, tc.want, tc.denied)
		if err == nil {
			if verr := authority.VerifyAssert(team(tc.strict), got, tc.principal, key); verr != nil {
				t.Errorf("the standing Assert gave %s does not verify: %v", tc.principal, verr)
			}
		}
	}
}

func TestRevoke(t *testing.T) {
	for _, tc := range []struct {
		principal, author, claim string
		want                     string
		denied                   bool
	}{
		{"scraper", "scraper", "Brimsole.region@1", authority.StandingOwnClaim, false}, // its own claim needs no grant
		{"alice", "alice", "Brimsole.region@1", authority.StandingOwnClaim, false},
		{"alice", "worker-7", "Brimsole.region@1", authority.StandingOwner, false},
		{"worker-7", "bob", "Klarveld.price@2", "g2.2", false},
		{"worker-7", "bob", "Brimsole.price@2", "worker-7 has no revoke right on Brimsole.price", true},
		{"bob", "worker-7", "Klarveld.price@2", "bob has no revoke right on Klarveld.price", true},
	} {
		id := claim(tc.claim)
		got, err := authority.Revoke(team(false), tc.principal, tc.author, id)
		checkStanding(t, fmt.Sprintf("Revoke(%s, by %s, %s)", tc.principal, tc.author, tc.claim), got, err, tc.want, tc.denied)
		if err == nil {
			if verr := authority.VerifyRevoke(team(false), got, tc.principal, tc.author, id); verr != nil {
				t.Errorf("the standing Revoke gave %s does not verify: %v", tc.principal, verr)
			}
		}
	}
}

func TestConfirm(t *testing.T) {
	for _, tc := range []struct {
		principal string
		want      string
		denied    bool
	}{
		{"alice", authority.StandingOwner, false},
		{"bob", "g2.3", false},
		{"worker-7", "worker-7 is an agent; only a user can confirm", true}, // a confirm grant does not make an agent a user
		{"scraper", "scraper is a tool; only a user can confirm", true},
		{"mallory", "mallory is not a recorded principal; only a user can confirm", true},
	} {
		id := claim("Klarveld.price@4")
		got, err := authority.Confirm(team(false), tc.principal, id)
		checkStanding(t, "Confirm("+tc.principal+")", got, err, tc.want, tc.denied)
		if err == nil {
			if errs := authority.VerifyConfirm(team(false), got, tc.principal, id); len(errs) > 0 {
				t.Errorf("the standing Confirm gave %s does not verify: %v", tc.principal, errs)
			}
		}
	}
	var nu *authority.NotUserError
	_, err := authority.Confirm(team(false), "worker-7", claim("Klarveld.price@4"))
	if !errors.As(err, &nu) || nu.Type != record.Agent {
		t.Errorf("an agent's confirm: %v, want a *NotUserError naming an agent", err)
	}
}

func checkStanding(t *testing.T, what, got string, err error, want string, denied bool) {
	t.Helper()
	switch {
	case denied && err == nil:
		t.Errorf("%s = %q, want it refused: %s", what, got, want)
	case denied && (!errors.Is(err, authority.ErrNoStanding) || !strings.HasPrefix(err.Error(), want)):
		t.Errorf("%s: %v, want ErrNoStanding saying %q", what, err, want)
	case !denied && err != nil:
		t.Errorf("%s: %v, want standing %q", what, err, want)
	case !denied && got != want:
		t.Errorf("%s = %q, want %q", what, got, want)
	}
}

// The checker's side: a record whose standing did not hold when it was written is named, with
// what was wrong, however it was forged.
func TestVerify(t *testing.T) {
	strict, open := team(true), team(false)
	key := claim("Klarveld.region@1").Key
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"an open store's claim with a standing", authority.VerifyAssert(open, "g2.1", "worker-7", key), `records standing "g2.1", but the store is not strict`},
		{"a strict store's claim with none", authority.VerifyAssert(strict, "", "worker-7", key), "asserted by worker-7 in a strict store without a standing"},
		{"a claim on the owner's standing by another", authority.VerifyAssert(strict, authority.StandingOwner, "worker-7", key), "asserted by worker-7 on the owner's standing"},
		{"a grant that does not cover the key", authority.VerifyAssert(strict, "g2.1", "worker-7", key), "its standing does not hold: grant g2.1 gives worker-7 assert on price_per_seat, not assert on Klarveld.region"},
		{"another's grant", authority.VerifyAssert(strict, "g2.3", "worker-7", key), "its standing does not hold: worker-7 held no grant g2.3"},
		{"a grant of another right", authority.VerifyRevoke(open, "g2.1", "worker-7", "bob", claim("Klarveld.price_per_seat@1")), "worker-7 revoked Klarveld.price_per_seat@1 without standing: grant g2.1 gives worker-7 assert on price_per_seat, not revoke on Klarveld.price_per_seat"},
		{"another's claim as its own", authority.VerifyRevoke(open, authority.StandingOwnClaim, "worker-7", "bob", claim("Klarveld.price@1")), "worker-7 revoked Klarveld.price@1 as its own claim, but bob asserted it"},
		{"a revocation on the owner's standing by another", authority.VerifyRevoke(open, authority.StandingOwner, "bob", "worker-7", claim("Klarveld.price@1")), "bob revoked Klarveld.price@1 on the owner's standing"},
		{"an agent's confirmation", errors.Join(authority.VerifyConfirm(open, "g2.4", "worker-7", claim("Klarveld.price@4"))...), "confirmed by worker-7, who is not a user"},
		{"an agent's confirmation on the owner's standing", errors.Join(authority.VerifyConfirm(open, authority.StandingOwner, "worker-7", claim("Klarveld.price@4"))...), "confirmed by worker-7, who is not a user\nworker-7 confirmed Klarveld.price@4 on the owner's standing"},
	} {
		if tc.err == nil {
			t.Errorf("%s: verified, want %q", tc.name, tc.want)
			continue
		}
		if tc.err.Error() != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.err, tc.want)
		}
		if !errors.Is(tc.err, authority.ErrStandingDidNotHold) {
			t.Errorf("%s: %v does not wrap ErrStandingDidNotHold", tc.name, tc.err)
		}
	}
}

// A principal other than the owner holds a right on a target only through a grant that covers
// it; the standing names that grant.
func ExampleStanding() {
	h := team(true)
	standing, err := authority.Standing(h, "worker-7", record.RightAssert, "Klarveld.price_per_seat")
	fmt.Println(standing, err)
	_, err = authority.Standing(h, "worker-7", record.RightAssert, "Klarveld.region")
	fmt.Println(err)
	// Output:
	// g2.1 <nil>
	// worker-7 has no assert right on Klarveld.region: ask the owner or a principal holding grant there to run `grant worker-7 assert on Klarveld.region by …`
}

// A principal revokes its own claim on no grant; another's needs the revoke right on its key.
func ExampleRevoke() {
	h := team(false)
	own, _ := authority.Revoke(h, "scraper", "scraper", claim("Brimsole.region@1"))
	fmt.Println(own)
	_, err := authority.Revoke(h, "bob", "worker-7", claim("Klarveld.price@2"))
	fmt.Println(errors.Is(err, authority.ErrNoStanding))
	// Output:
	// own claim
	// true
}
