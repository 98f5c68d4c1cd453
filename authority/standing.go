package authority

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mql-dev/mql/graphstore/record"
)

// The rules below are each written once: the writer asks for the standing a write records
// (Assert, Revoke, Confirm), and the checker, replaying a store, asks whether the standing a
// record carries held when it was written (VerifyAssert, VerifyRevoke, VerifyConfirm). Both
// read the store as it was just before the write, through Holdings.

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
