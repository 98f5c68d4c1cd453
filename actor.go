package mql

import (
	"context"
	"fmt"
	"io"
	"slices"
)

// Actor writes and reads as one principal, so that a program can hand a part of itself (an
// agent's tools, a request handler) a memory it cannot use to speak for anyone else. Its writes
// take the specs a DB's do; a spec's By may be left empty, and is then the Actor's principal. A
// By naming another principal is refused with an *ActAsError (ErrActAs) and writes nothing,
// unless the Actor acts as the owner, who may write on others' behalf. Its reads see what its
// principal may see, and its Reader cannot be narrowed to another principal (but the owner's).
//
// An Actor is a value and holds no resources: make one per principal with DB.ActAs. What the
// principal may write is still judged by the write itself (ErrNoStanding, ErrUnknownPrincipal):
// the Actor only fixes who writes.
type Actor struct {
	db *DB
	as string
}

// ActAs returns an Actor for principal. The principal is not looked up here: a write or read
// through an Actor of a principal the store does not know fails with ErrUnknownPrincipal (a
// malformed name, with ErrBadReference). The empty name is no one, not the owner: everything
// through its Actor fails with ErrBadReference.
func (db *DB) ActAs(principal string) Actor { return Actor{db: db, as: nfc(principal)} }

// Principal is the principal the Actor acts as.
func (a Actor) Principal() string { return a.as }

// Reader reads what the Actor's principal may see, of the newest state; AsOf, AsOfTx and
// ForRun narrow it as any Reader. As narrows it only to the principal itself, unless the Actor
// acts as the owner: a read as another fails with an *ActAsError (ErrActAs).
func (a Actor) Reader() Reader { return a.db.reads.boundTo(a.as) }

// boundTo is r reading as principal and bound to it (see Actor.Reader).
func (r reads) boundTo(principal string) Reader {
	if principal != r.db.Owner() {
		// The owner reads unrestricted, as a DB does; anyone else as itself.
		r.as = principal
	}
	r.actor, r.bound = principal, true
	return Reader{r}
}

// ActAsError is the refusal, with ErrActAs, of an Actor's write by another principal, of a read
// as another through its Reader, or of its import: what only the owner's Actor does. It holds
// the names, so that a surface can say it in its own words.
type ActAsError struct {
	Acting string // the principal the Actor acts as
	Other  string // the principal the write names or the read is as; "" for an import
	Owner  string // the store's owner
	Read   bool   // a read as Other, not a write by Other
	Import bool   // an import
}

func (e *ActAsError) Error() string {
	switch {
	case e.Import:
		return fmt.Sprintf("%v: acting as %s; only the owner (%s) may import", ErrActAs, e.Acting, e.Owner)
	case e.Read:
		return fmt.Sprintf("%v: acting as %s, cannot read as %s; only the owner (%s) reads as others", ErrActAs, e.Acting, e.Other, e.Owner)
	}
	return fmt.Sprintf("%v: acting as %s, cannot write by %s; only the owner (%s) writes on others' behalf", ErrActAs, e.Acting, e.Other, e.Owner)
}

func (e *ActAsError) Unwrap() error { return ErrActAs }

// bindBy makes *by the principal a write made acting as as is by: as when *by is empty, *by
// when it names as or as is the owner; otherwise it refuses the write.
func bindBy(as, owner string, by *string) error {
	if err := someone(as); err != nil {
		return err
	}
	switch name := nfc(*by); {
	case name == "":
		*by = as
	case name != as && as != owner:
		return &ActAsError{Acting: as, Other: name, Owner: owner}
	}
	return nil
}

// someone refuses an Actor of the empty name: it acts as no one, not as the owner, whom an
// empty name means to As.
func someone(principal string) error {
	if principal == "" {
		return checkName("principal", principal)
	}
	return nil
}

// actErr is why reads through r are refused: r came from an Actor (or a transaction it runs)
// and was narrowed to another principal than the Actor's, which only the owner's may.
func (r reads) actErr() error {
	if !r.bound {
		return nil
	}
	if err := someone(r.actor); err != nil {
		return err
	}
	if owner := r.db.Owner(); r.as != r.actor && r.actor != owner {
		other := r.as
		if other == "" {
			// As("") is the owner's view.
			other = owner
		}
		return &ActAsError{Acting: r.actor, Other: other, Owner: owner, Read: true}
	}
	return nil
}

// Err is the error every read through r fails with, nil if none: a Reader of an Actor narrowed
// to another principal (see Actor.Reader). A caller that must refuse such a read before doing
// anything else for it asks here first.
func (r Reader) Err() error { return r.actErr() }

func (a Actor) bind(by *string) error { return bindBy(a.as, a.db.Owner(), by) }

// AddPrincipal records a principal, by the Actor's principal (see DB.AddPrincipal).
func (a Actor) AddPrincipal(ctx context.Context, s PrincipalSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.AddPrincipal(ctx, s)
}

// Grant gives a right over a scope, by the Actor's principal (see DB.Grant).
func (a Actor) Grant(ctx context.Context, s GrantSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.Grant(ctx, s)
}

// Assert records a claim by the Actor's principal (see DB.Assert).
func (a Actor) Assert(ctx context.Context, s AssertSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.Assert(ctx, s)
}

// AssertBatch records many claims in one transaction made by the Actor's principal, all of them
// or none (see DB.AssertBatch); every spec is bound as Assert binds it.
func (a Actor) AssertBatch(ctx context.Context, specs []AssertSpec) ([]Receipt, error) {
	specs = slices.Clone(specs)
	for i := range specs {
		if err := a.bind(&specs[i].By); err != nil {
			return nil, fmt.Errorf("claim %d: %w", i+1, err)
		}
	}
	return a.db.AssertBatch(ctx, a.as, specs)
}

// Revoke revokes a claim version, by the Actor's principal (see DB.Revoke).
func (a Actor) Revoke(ctx context.Context, s RevokeSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.Revoke(ctx, s)
}

// Confirm confirms a key's live claim, by the Actor's principal (see DB.Confirm).
func (a Actor) Confirm(ctx context.Context, s ConfirmSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.Confirm(ctx, s)
}

// Derive records an artifact version, by the Actor's principal (see DB.Derive).
func (a Actor) Derive(ctx context.Context, s DeriveSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.Derive(ctx, s)
}

// Review records a review of an artifact, by the Actor's principal (see DB.Review).
func (a Actor) Review(ctx context.Context, s ReviewSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.Review(ctx, s)
}

// SetDecay declares a predicate's half-life, by the Actor's principal (see DB.SetDecay).
func (a Actor) SetDecay(ctx context.Context, s DecaySpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.SetDecay(ctx, s)
}

// Outcome records how a run of the Actor's principal ended (see DB.Outcome).
func (a Actor) Outcome(ctx context.Context, s OutcomeSpec) (Receipt, error) {
	if err := a.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	return a.db.Outcome(ctx, s)
}

// CreateToken issues a token (see DB.CreateToken): only the owner's Actor does.
func (a Actor) CreateToken(ctx context.Context, s TokenSpec) (string, Token, error) {
	if err := a.bind(&s.By); err != nil {
		return "", Token{}, err
	}
	return a.db.CreateToken(ctx, s)
}

// RevokeToken ends a token (see DB.RevokeToken): only the owner's Actor does.
func (a Actor) RevokeToken(ctx context.Context, id string) (Receipt, error) {
	return a.db.RevokeToken(ctx, id, a.as)
}

// Tx runs fn in one transaction made by the Actor's principal (see DB.Tx). The transaction is
// bound as the Actor is: each write's By, empty, is the principal, and naming another is
// refused unless the principal is the owner; tx.Reader() reads as the principal.
func (a Actor) Tx(ctx context.Context, fn func(tx *Tx) error) (int64, error) {
	return a.db.tx(ctx, a.as, true, fn)
}

// Export writes, as N-Quads, what the Actor's principal may see: for the owner the whole store,
// which can be imported; for another principal its own view, for reading (see Reader.Export).
func (a Actor) Export(ctx context.Context, w io.Writer) error { return a.Reader().Export(ctx, w) }

// Import loads an export into a new memory: store (see DB.Import). Only the owner's Actor
// imports: another's is refused with an *ActAsError (ErrActAs), and nothing is read from r.
func (a Actor) Import(ctx context.Context, r io.Reader) error {
	if err := someone(a.as); err != nil {
		return err
	}
	if owner := a.db.Owner(); a.as != owner {
		return &ActAsError{Acting: a.as, Owner: owner, Import: true}
	}
	return a.db.Import(ctx, r)
}
