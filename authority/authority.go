// Package authority decides who may do what: kind ranking, grant scopes and standing checks.
// It reads the store through an index.View and writes nothing.
package authority

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mql-dev/mql/graphstore/record"
)

// ErrNoStanding is returned when a principal lacks the right a write needs. The write changed
// nothing.
var ErrNoStanding = errors.New("no standing")

// Standing values recorded when no grant was needed.
const (
	StandingOwner    = "owner"
	StandingOwnClaim = "own claim"
)

// Rank orders kinds: confirmed > observed > inferred.
func Rank(k record.Kind) int {
	switch k {
	case record.Confirmed:
		return 3
	case record.Observed:
		return 2
	case record.Inferred:
		return 1
	}
	return 0
}

// ValidScope reports whether s is "*", "predicate", "Subject.*" or "Subject.predicate".
func ValidScope(s string) bool {
	if s == "*" {
		return true
	}
	subj, pred, dotted := strings.Cut(s, ".")
	if !dotted {
		return s != "" && !strings.ContainsAny(s, "*@")
	}
	return subj != "" && subj != "*" && !strings.ContainsAny(subj, "*@") &&
		(pred == "*" || (pred != "" && !strings.ContainsAny(pred, "*@.")))
}

// Covers reports whether a grant over scope applies to target, which is itself a scope (a key
// "S.p" is the narrowest). "*" covers everything; "p" covers "p" and every "S.p"; "S.*" covers
// "S.*" and every "S.p"; "S.p" covers only itself.
func Covers(scope, target string) bool {
	if scope == "*" || scope == target {
		return true
	}
	ts, tp, tdot := strings.Cut(target, ".")
	ss, sp, sdot := strings.Cut(scope, ".")
	switch {
	case !sdot: // predicate scope
		return tdot && tp == scope
	case sp == "*":
		return tdot && ts == ss
	}
	return false
}

// Holdings is what standing is judged on: the store's owner and mode, its principals and the
// grants each holds. A *index.View is one (as of its transaction), and so is the state a check
// has reached (*graphstore.CheckState).
type Holdings interface {
	Meta() record.StoreMeta
	Principal(name string) *record.Principal
	Grants(grantee string) []*record.Grant
}

// Standing returns the standing by which principal holds right over target: "owner" for the
// store owner, else the id of a grant that covers it. It fails with ErrNoStanding, naming the
// principal, the right and the scope.
func Standing(v Holdings, principal string, right record.Right, target string) (string, error) {
	if principal == v.Meta().Owner {
		return StandingOwner, nil
	}
	for _, g := range v.Grants(principal) {
		if g.Right == right && Covers(g.Scope, target) {
			return g.ID, nil
		}
	}
	return "", &NoStandingError{Principal: principal, Right: right, Scope: target}
}

// NoStandingError names who lacked which right where. It unwraps to ErrNoStanding.
type NoStandingError struct {
	Principal string
	Right     record.Right
	Scope     string
}

func (e *NoStandingError) Error() string {
	return fmt.Sprintf("%s has no %s right on %s: ask the owner or a principal holding grant there to run `grant %s %s on %s by …`",
		e.Principal, e.Right, e.Scope, e.Principal, e.Right, e.Scope)
}

func (e *NoStandingError) Unwrap() error { return ErrNoStanding }
