package authority

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mql-dev/mql/graphstore/record"
)

// The rules below are each written once: the writer asks for the standing a write needs
// (Assert, Revoke, Confirm, AddPrincipal, Grant, Decay), and the checker, replaying a store,
// asks whether it held when the record was written (VerifyAssert, VerifyRevoke,
// VerifyConfirm, VerifyPrincipal, VerifyGrant, VerifyDecay). Both read the store as it was
// just before the write, through Holdings.

// NotUserError says that a principal who is not a user tried to confirm: only a user
// confirms. It unwraps to ErrNoStanding.
type NotUserError struct {
	Principal string
	Type      record.PrincipalType // "" when the principal is not recorded at all
}

func (e *NotUserError) Error() string {
	if e.Type == "" {
		return e.Principal + " is not a recorded principal; only a user can confirm"
	}
	article := "a"
	if strings.ContainsRune("aeiou", rune(e.Type[0])) {
		article = "an"
	}
	return fmt.Sprintf("%s is %s %s; only a user can confirm", e.Principal, article, e.Type)
}

func (e *NotUserError) Unwrap() error { return ErrNoStanding }

// CanSee reports whether principal may see a record whose audience is seenBy, in a store
// owned by owner: the owner sees everything, an empty audience is everyone's, and otherwise
// only the principals it names.
func CanSee(owner, principal string, seenBy []string) bool {
	return principal == owner || len(seenBy) == 0 || slices.Contains(seenBy, principal)
}

// Assert is the standing an assertion by principal on key records: none in an open store; in
// a strict one the owner's, or a grant of the assert right that covers key.
func Assert(h Holdings, principal string, key record.Key) (string, error) {
	if !h.Meta().Strict {
		return "", nil
	}
	return Standing(h, principal, record.RightAssert, key.String())
}

// Revoke is the standing by which principal revokes a claim that author asserted: a
// principal may revoke its own claims; another's needs the revoke right on the claim's key.
func Revoke(h Holdings, principal, author string, claim record.ClaimID) (string, error) {
	if principal == author {
		return StandingOwnClaim, nil
	}
	return Standing(h, principal, record.RightRevoke, claim.Key.String())
}

// MayConfirm reports whether principal is one who may confirm at all: a user. The error
// names what it is instead.
func MayConfirm(h Holdings, principal string) error {
	p := h.Principal(principal)
	if p == nil {
		return &NotUserError{Principal: principal}
	}
	if p.Type != record.User {
		return &NotUserError{Principal: principal, Type: p.Type}
	}
	return nil
}

// Confirm is the standing by which principal confirms a claim: a user (MayConfirm) holding
// the confirm right on its key, or the owner.
func Confirm(h Holdings, principal string, claim record.ClaimID) (string, error) {
	if err := MayConfirm(h, principal); err != nil {
		return "", err
	}
	return Standing(h, principal, record.RightConfirm, claim.Key.String())
}

// AddPrincipal is the standing by which principal records another: a principal is recorded
// for the whole store, so it takes the grant right over all of it ("*").
func AddPrincipal(h Holdings, principal string) (string, error) {
	return Standing(h, principal, record.RightGrant, "*")
}

// Grant is the standing by which principal gives a grant over scope: no one passes on a right
// it does not hold, so it takes the grant right on a scope covering it.
func Grant(h Holdings, principal, scope string) (string, error) {
	return Standing(h, principal, record.RightGrant, scope)
}

// Decay is the standing by which principal declares a half-life for predicate: the decay
// weighs every claim of the predicate, so it takes the grant right on the predicate, the
// scope that covers them all.
func Decay(h Holdings, principal, predicate string) (string, error) {
	return Standing(h, principal, record.RightGrant, predicate)
}

// InTx is the store just before transaction tx (before) with the principals and grants tx
// records: in a transaction of several writes (DB.Tx) a later write rests on the earlier
// ones, a principal recorded may confirm, a grant given is standing. A transaction keeps its
// records by kind, not in the order they were written, so a record of another kind is judged
// against all of tx's grants; grants among themselves are ordered (see VerifyGrant).
func InTx(before Holdings, tx *record.Tx) Holdings {
	return inTx{before, tx.Principals, tx.Grants}
}

type inTx struct {
	Holdings
	principals []*record.Principal
	grants     []*record.Grant
}

func (h inTx) Principal(name string) *record.Principal {
	if p := h.Holdings.Principal(name); p != nil {
		return p
	}
	for _, p := range h.principals {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func (h inTx) Grants(grantee string) []*record.Grant {
	gs := h.Holdings.Grants(grantee)
	for _, g := range h.grants {
		if g.Grantee == grantee {
			gs = append(slices.Clip(gs), g)
		}
	}
	return gs
}

// Held reports whether grant id, as h holds it, gives principal right over target: the check
// of a standing recorded by id.
func Held(h Holdings, id, principal string, right record.Right, target string) error {
	for _, g := range h.Grants(principal) {
		if g.ID != id {
			continue
		}
		if g.Right != right || !Covers(g.Scope, target) {
			return fmt.Errorf("grant %s gives %s %s on %s, not %s on %s", id, g.Grantee, g.Right, g.Scope, right, target)
		}
		return nil
	}
	return fmt.Errorf("%s held no grant %s", principal, id)
}

// ErrStandingDidNotHold is what the Verify functions' errors wrap: a record carries a
// standing that did not hold when it was written.
var ErrStandingDidNotHold = errors.New("the standing it records did not hold")

func didNotHold(format string, args ...any) error {
	return &violation{msg: fmt.Sprintf(format, args...)}
}

type violation struct{ msg string }

func (v *violation) Error() string { return v.msg }
func (v *violation) Unwrap() error { return ErrStandingDidNotHold }

// VerifyAssert reports whether the standing recorded by principal's assertion on key held:
// none in an open store; in a strict one the owner's (principal is the owner) or a grant that
// covers key.
func VerifyAssert(h Holdings, recorded, principal string, key record.Key) error {
	strict := h.Meta().Strict
	switch {
	case !strict && recorded != "":
		return didNotHold("records standing %q, but the store is not strict", recorded)
	case !strict:
		return nil
	case recorded == StandingOwner:
		if principal != h.Meta().Owner {
			return didNotHold("asserted by %s on the owner's standing", principal)
		}
	case recorded == "":
		return didNotHold("asserted by %s in a strict store without a standing", principal)
	default:
		if err := Held(h, recorded, principal, record.RightAssert, key.String()); err != nil {
			return didNotHold("its standing does not hold: %v", err)
		}
	}
	return nil
}

// VerifyRevoke reports whether the standing recorded by principal's revocation of claim,
// asserted by author, held (see Revoke).
func VerifyRevoke(h Holdings, recorded, principal, author string, claim record.ClaimID) error {
	switch recorded {
	case StandingOwnClaim:
		if author != principal {
			return didNotHold("%s revoked %s as its own claim, but %s asserted it", principal, claim, author)
		}
	case StandingOwner:
		if principal != h.Meta().Owner {
			return didNotHold("%s revoked %s on the owner's standing", principal, claim)
		}
	default:
		if err := Held(h, recorded, principal, record.RightRevoke, claim.Key.String()); err != nil {
			return didNotHold("%s revoked %s without standing: %v", principal, claim, err)
		}
	}
	return nil
}

// VerifyConfirm reports whether principal's confirmation of claim held (see Confirm): every
// failure, the principal not being a user and the standing not holding, in that order.
func VerifyConfirm(h Holdings, recorded, principal string, claim record.ClaimID) []error {
	var errs []error
	if MayConfirm(h, principal) != nil {
		errs = append(errs, didNotHold("confirmed by %s, who is not a user", principal))
	}
	switch recorded {
	case StandingOwner:
		if principal != h.Meta().Owner {
			errs = append(errs, didNotHold("%s confirmed %s on the owner's standing", principal, claim))
		}
	default:
		if err := Held(h, recorded, principal, record.RightConfirm, claim.Key.String()); err != nil {
			errs = append(errs, didNotHold("%s confirmed %s without standing: %v", principal, claim, err))
		}
	}
	return errs
}

// VerifyPrincipal reports whether by, the principal of the transaction that recorded a
// principal (whose record names no writer of its own), held the right to (see AddPrincipal).
// h is the store as InTx gives it.
func VerifyPrincipal(h Holdings, by string) error {
	if _, err := AddPrincipal(h, by); err != nil {
		return didNotHold("recorded by %s, who held no grant right on *", by)
	}
	return nil
}

// VerifyGrant reports whether tx.Grants[i] was given with standing (see Grant): in before, the
// store just before tx, or by a grant given earlier in tx, never by itself or a later one, so
// that no grant is its own standing. The writer needs no such rule: each write of a
// transaction is built on a view that holds the writes before it, and the grant it builds is
// not yet among them.
func VerifyGrant(before Holdings, tx *record.Tx, i int) error {
	g := tx.Grants[i]
	if _, err := Grant(inTx{Holdings: before, grants: tx.Grants[:i]}, g.By, g.Scope); err != nil {
		return didNotHold("given by %s, who held no grant right on %s", g.By, g.Scope)
	}
	return nil
}

// VerifyDecay reports whether d's declarer held the right to declare it (see Decay). h is the
// store as InTx gives it.
func VerifyDecay(h Holdings, d *record.Decay) error {
	if _, err := Decay(h, d.By, d.Predicate); err != nil {
		return didNotHold("decay of %s declared by %s, who held no grant right on it", d.Predicate, d.By)
	}
	return nil
}
