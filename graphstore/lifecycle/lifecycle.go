// Package lifecycle is the rule that decides a claim's state: how a new claim relates to the
// live claim of its key and audience (it supersedes, contests or corroborates it), and which
// state the events recorded about a claim put it in as of a transaction. It is the one place
// the rule lives: the writer decides a new claim's relation with Relate, the index applies
// each event to the key's live slot with Live and folds a claim's events with Fold, and the
// checker and import judge stored claims with the same two functions.
package lifecycle

import (
	"math"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore/record"
)

// State is the state of a claim at one point in time; a claim is in exactly one.
type State string

const (
	Live       State = "live"
	Superseded State = "superseded"
	Revoked    State = "revoked"
	Expired    State = "expired"
	Contested  State = "contested"
)

// Relation is how a new claim enters its key's lifecycle, as the writer records it.
type Relation uint8

const (
	// First: its key and audience had no live claim; it becomes live.
	First Relation = iota
	// Supersedes: it ranks equal or higher than the live claim, which it replaces.
	Supersedes
	// Contests: it ranks lower and disagrees with the live claim; it is kept, never live.
	Contests
	// Corroborates: it ranks lower and agrees with the live claim; it is filed as evidence,
	// superseded from birth.
	Corroborates
)

// Relate decides how a claim of kind and value relates to the live claim of its key and
// audience (hasLive false: there is none; liveKind is its effective kind, after
// confirmations).
func Relate(hasLive bool, liveKind record.Kind, liveValue record.Value, kind record.Kind, value record.Value) Relation {
	switch {
	case !hasLive:
		return First
	case authority.Rank(kind) >= authority.Rank(liveKind):
		return Supersedes
	case liveValue.Equal(value):
		return Corroborates
	}
	return Contests
}

// RelationOf is the relation a stored claim records.
func RelationOf(c *record.Claim) Relation {
	switch {
	case c.Contests != nil:
		return Contests
	case c.Corroborates != nil:
		return Corroborates
	case c.Supersedes != nil:
		return Supersedes
	}
	return First
}

// BecomesLive reports whether a claim of that relation is its slot's live claim from its own
// transaction on.
func (r Relation) BecomesLive() bool { return r == First || r == Supersedes }

// EventKind is what a later transaction recorded about a claim.
type EventKind uint8

const (
	// Revised: a newer claim of its audience superseded it.
	Revised EventKind = iota + 1
	// Promoted: the revocation of another version named it as the replacement: live again.
	Promoted
	// Revocation: it was revoked (only the first revocation counts).
	Revocation
)

// Event is one thing recorded about a claim, in the transaction Tx.
type Event struct {
	Kind EventKind
	Tx   record.TxID
}

// Phase is a claim's state before valid time, in a byte: what the events recorded about it
// make it. (Expiry is not an event: a View applies valid time to the phase it folds.)
type Phase uint8

const (
	PhaseLive Phase = iota
	PhaseSuperseded
	PhaseContested
	PhaseRevoked
)

// State is the phase's state.
func (p Phase) State() State {
	switch p {
	case PhaseSuperseded:
		return Superseded
	case PhaseContested:
		return Contested
	case PhaseRevoked:
		return Revoked
	}
	return Live
}

// Birth is the phase a claim recorded with relation rel is in from its own transaction.
func Birth(rel Relation) Phase {
	switch rel {
	case Contests:
		return PhaseContested
	case Corroborates:
		return PhaseSuperseded
	}
	return PhaseLive
}

// Next is the phase after an event: a newer claim supersedes a live one (and leaves any
// other as it was), a promotion makes it live again, a revocation ends it for good.
func Next(p Phase, ev EventKind) Phase {
	switch {
	case p == PhaseRevoked:
		return p
	case ev == Revised && p == PhaseLive:
		return PhaseSuperseded
	case ev == Promoted:
		return PhaseLive
	case ev == Revocation:
		return PhaseRevoked
	}
	return p
}

// Fold is the state of a claim, before valid time, from its relation at birth (tx born) and
// the events recorded about it up to asOf, with the transaction that put it there. Each of
// revised, promoted and revoked is in transaction order; only the first revocation counts;
// events of one transaction apply in that order (a revision, then a promotion, then a
// revocation).
func Fold(rel Relation, born record.TxID, revised, promoted, revoked []record.TxID, asOf record.TxID) (State, record.TxID) {
	p := Birth(rel)
	since := born
	rev := record.TxID(math.MaxInt64)
	if len(revoked) > 0 && revoked[0] <= asOf {
		rev = revoked[0]
	}
	ri, pi := 0, 0
	for {
		next, kind := record.TxID(math.MaxInt64), EventKind(0)
		if ri < len(revised) && revised[ri] <= asOf && revised[ri] < next {
			next, kind = revised[ri], Revised
		}
		if pi < len(promoted) && promoted[pi] <= asOf && promoted[pi] < next {
			next, kind = promoted[pi], Promoted
		}
		if rev < next {
			next, kind = rev, Revocation
		}
		if kind == 0 {
			return p.State(), since
		}
		switch kind {
		case Revised:
			ri++
		case Promoted:
			pi++
		}
		if q := Next(p, kind); q != p || kind == Promoted {
			p, since = q, next
		}
		if p == PhaseRevoked {
			return p.State(), since
		}
	}
}
