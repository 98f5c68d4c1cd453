package mql

import (
	"context"
	"errors"
	"fmt"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// ErrTxDone is returned by a Tx's methods, and by its Reader, once the transaction has ended.
var ErrTxDone = errors.New("the transaction has ended")

// Tx is a transaction in progress (see DB.Tx): its writes are recorded as one mql
// transaction, with one id and one commit, all of them or none.
type Tx struct {
	db    *DB
	by    string       // who makes the transaction
	ix    *index.Index // the writer's handle: committed and pending transactions, this one's staged records
	tx    *record.Tx
	stage func() error
	ended bool
	wrote bool // something was recorded
	bound bool // an Actor's (Actor.Tx): its writes are bound to its principal as the Actor's are
}

// Tx runs fn in one transaction made by principal by: every write fn makes through tx (its
// AddPrincipal, Grant, Assert, Revoke, Confirm, Derive, Review and SetDecay) is checked as the
// same write on its own would be, against the store as the writes before it in the
// transaction left it (a claim asserted earlier can be revoked or derived from, a grant given
// earlier gives standing), and they are committed together, as one transaction, when fn
// returns nil. If fn returns an error, or the commit fails, nothing of it is written.
//
// A refused write returns its error and records nothing; fn may go on (the transaction holds
// what was accepted) or return the error to abandon everything. Receipts carry the
// transaction's id and time, which hold once Tx returns without error. Reads through
// tx.Reader() see the store with the transaction's writes so far; nothing outside the
// transaction sees them before it commits.
//
// fn runs while the store's writers wait, possibly on another goroutine: keep it short, and do
// not call db's other methods from it: its writes would wait for the transaction to end, which
// waits for fn (so would its reads, on PostgreSQL). Read through tx.Reader(). On
// PostgreSQL a transaction that runs longer than Options.WriteIdleTimeout loses the writer
// lock and fails. Tx returns the id of the transaction it committed, or 0 when fn wrote
// nothing (a transaction of no-ops commits nothing).
func (db *DB) Tx(ctx context.Context, by string, fn func(tx *Tx) error) (int64, error) {
	return db.tx(ctx, by, false, fn)
}

// tx is Tx, bound to by as an Actor is when bound is set.
func (db *DB) tx(ctx context.Context, by string, bound bool, fn func(tx *Tx) error) (int64, error) {
	by = nfc(by)
	t := &Tx{db: db, by: by, bound: bound}
	gtx, err := db.store.WriteStaged(ctx, by, func(ix *index.Index, tx *record.Tx, stage func() error) error {
		t.ix, t.tx, t.stage = ix, tx, stage
		defer func() { t.ended = true }()
		if err := checkWriter(ix.View(0, tx.Time, ""), by); err != nil {
			return err
		}
		if err := fn(t); err != nil {
			return err
		}
		if !t.wrote {
			return errUnchanged
		}
		return nil
	})
	t.ended = true
	switch {
	case errors.Is(err, errUnchanged):
		return 0, nil
	case err != nil:
		return 0, err
	}
	return int64(gtx.ID), nil
}

// ID is the id the transaction will have when it commits.
func (t *Tx) ID() int64 {
	if t.tx == nil {
		return 0
	}
	return int64(t.tx.ID)
}

// write runs one write's build in the transaction and stages what it recorded, so that the
// writes after it see it. A refused write leaves the transaction as it was.
func (t *Tx) write(by string, build func(v *index.View, tx *record.Tx, rc *Receipt) error) (Receipt, error) {
	if t.ended || t.tx == nil {
		return Receipt{}, ErrTxDone
	}
	v := t.ix.View(0, t.tx.Time, "")
	before := lensOf(t.tx)
	var rc Receipt
	err := checkWriter(v, by)
	if owner := v.Meta().Owner; err == nil && by != t.by && t.by != owner {
		// What a transaction records is made by its principal (the owner's, by anyone):
		// mql check holds every store to that.
		err = fmt.Errorf("%w: a transaction made by %s records only its own writes, not %s's; only the owner's transactions write by others", ErrInvalid, t.by, by)
	}
	if err == nil {
		err = build(v, t.tx, &rc)
	}
	if err == nil && !rc.Unchanged {
		err = t.stage()
	}
	if err != nil {
		before.truncate(t.tx)
		return Receipt{}, err
	}
	if !rc.Unchanged {
		rc.Tx, rc.At = int64(t.tx.ID), t.tx.Time
		t.wrote = true
	}
	return rc, nil
}

// Reader reads the store as the transaction's writes so far left it, as the owner (in an
// Actor's transaction, as its principal, as Actor.Reader does); narrow it with As as any
// Reader. Its reads judge time (expiry, decay) at the transaction's time, and fail with
// ErrTxDone once the transaction has ended.
func (t *Tx) Reader() Reader {
	r := reads{db: t.db, tx: t}
	if t.bound {
		return r.boundTo(t.by)
	}
	return Reader{r}
}

// bind binds a write's By in an Actor's transaction (see Actor); in another it leaves it.
func (t *Tx) bind(by *string) error {
	if !t.bound {
		return nil
	}
	return bindBy(t.by, t.db.Owner(), by)
}

// txLens are the lengths of a transaction's record lists, to take back a refused write's.
type txLens struct {
	principals, grants, sources, claims, revocations, confirmations, artifacts, reviews, decays, tokens, tokenRevocations int
	outcomes                                                                                                              int
}

func lensOf(tx *record.Tx) txLens {
	return txLens{len(tx.Principals), len(tx.Grants), len(tx.Sources), len(tx.Claims), len(tx.Revocations), len(tx.Confirmations),
		len(tx.Artifacts), len(tx.Reviews), len(tx.Decays), len(tx.Tokens), len(tx.TokenRevocations), len(tx.Outcomes)}
}

// truncate takes back what was appended to tx since l.
func (l txLens) truncate(tx *record.Tx) {
	tx.Principals = tx.Principals[:l.principals]
	tx.Grants = tx.Grants[:l.grants]
	tx.Sources = tx.Sources[:l.sources]
	tx.Claims = tx.Claims[:l.claims]
	tx.Revocations = tx.Revocations[:l.revocations]
	tx.Confirmations = tx.Confirmations[:l.confirmations]
	tx.Artifacts = tx.Artifacts[:l.artifacts]
	tx.Reviews = tx.Reviews[:l.reviews]
	tx.Decays = tx.Decays[:l.decays]
	tx.Tokens = tx.Tokens[:l.tokens]
	tx.TokenRevocations = tx.TokenRevocations[:l.tokenRevocations]
	tx.Outcomes = tx.Outcomes[:l.outcomes]
}

// AddPrincipal in a transaction (see DB.Tx). A principal's record names no writer of its own:
// the transaction's, so s.By must be the principal that makes the transaction.
func (t *Tx) AddPrincipal(s PrincipalSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	if s.By != t.by {
		return Receipt{}, fmt.Errorf("principal %s by %s: %w: in a transaction made by %s, principals are recorded by %s", s.Name, s.By, ErrInvalid, t.by, t.by)
	}
	return t.write(s.By, s.build)
}

// Grant in a transaction (see DB.Tx).
func (t *Tx) Grant(s GrantSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}

// Assert in a transaction (see DB.Tx).
func (t *Tx) Assert(s AssertSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}

// Revoke in a transaction (see DB.Tx).
func (t *Tx) Revoke(s RevokeSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}

// Confirm in a transaction (see DB.Tx).
func (t *Tx) Confirm(s ConfirmSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}

// Derive in a transaction (see DB.Tx).
func (t *Tx) Derive(s DeriveSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}

// Review in a transaction (see DB.Tx).
func (t *Tx) Review(s ReviewSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}

// SetDecay in a transaction (see DB.Tx).
func (t *Tx) SetDecay(s DecaySpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}

// Outcome in a transaction (see DB.Tx).
func (t *Tx) Outcome(s OutcomeSpec) (Receipt, error) {
	if err := t.bind(&s.By); err != nil {
		return Receipt{}, err
	}
	s = s.norm()
	return t.write(s.By, s.build)
}
