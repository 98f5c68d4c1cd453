package mql_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// actorStore is a store where alice and bob, two users, hold every right over everything, so
// that what an Actor allows is all a write's outcome turns on (but the owner-only tokens).
func actorStore(t *testing.T) (*mql.DB, context.Context) {
	t.Helper()
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{Clock: tick()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, p := range []string{"alice", "bob"} {
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.User, By: "owner"}); err != nil {
			t.Fatal(err)
		}
		for _, r := range []mql.Right{mql.RightAssert, mql.RightRevoke, mql.RightConfirm, mql.RightGrant} {
			if _, err := db.Grant(ctx, mql.GrantSpec{Grantee: p, Right: r, Scope: "*", By: "owner"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return db, ctx
}

// actorWrite is one kind of write through an Actor: prep readies the store for the n-th (with
// the DB's own writes), write makes it with By by, and recordedBy says who the store recorded
// made it.
type actorWrite struct {
	kind       string
	prep       func(ctx context.Context, db *mql.DB, n int) error
	write      func(w boundWrites, by string, n int) error
	recordedBy func(ctx context.Context, db *mql.DB, before int64, n int) (string, error)
	ownerOnly  bool // only the owner has standing for it, whoever writes
	txOwn      bool // in a transaction, only by the transaction's principal (see Tx.AddPrincipal)
}

// eventBy is who made the first record written after transaction before: the claim's
// asserter, or the transaction's principal (who made every other record, but in the owner's
// transactions).
func eventBy(ctx context.Context, db *mql.DB, before int64, _ int) (string, error) {
	evs, _, err := db.Events(ctx, before, "")
	if err != nil || len(evs) == 0 {
		return "", fmt.Errorf("events after tx %d: %v %v", before, evs, err)
	}
	if evs[0].Kind == mql.EventClaim {
		return evs[0].Claim.By, nil
	}
	return evs[0].By, nil
}

func claimOf(n int) mql.AssertSpec {
	return mql.AssertSpec{Subject: fmt.Sprintf("S%d", n), Predicate: "p", Value: mql.Number(float64(n)), By: "owner"}
}

func assertClaim(ctx context.Context, db *mql.DB, n int) error {
	_, err := db.Assert(ctx, claimOf(n))
	return err
}

func actorWrites() []actorWrite {
	ref := func(n int) string { return fmt.Sprintf("S%d.p@1", n) }
	return []actorWrite{
		{kind: "principal", txOwn: true, recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			_, err := w.principal(mql.PrincipalSpec{Name: fmt.Sprintf("agent-%d", n), Type: mql.Agent, By: by})
			return err
		}},
		{kind: "grant", recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			_, err := w.grant(mql.GrantSpec{Grantee: "alice", Right: mql.RightAssert, Scope: fmt.Sprintf("S%d.*", n), By: by})
			return err
		}},
		{kind: "assert", recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			s := claimOf(n)
			s.By = by
			_, err := w.assert(s)
			return err
		}},
		{kind: "assert batch", recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			s := claimOf(n)
			s.By = by
			_, err := w.batch([]mql.AssertSpec{s})
			return err
		}},
		{kind: "revoke", prep: assertClaim, recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			_, err := w.revoke(mql.RevokeSpec{Claim: ref(n), By: by, Because: "wrong"})
			return err
		}},
		{kind: "confirm", prep: assertClaim, recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			_, err := w.confirm(mql.ConfirmSpec{Claim: ref(n), By: by})
			return err
		}},
		{kind: "derive", prep: assertClaim, recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			_, err := w.derive(mql.DeriveSpec{Artifact: fmt.Sprintf("plan-%d", n), From: []string{ref(n)}, By: by})
			return err
		}},
		{kind: "review", prep: func(ctx context.Context, db *mql.DB, n int) error {
			if err := assertClaim(ctx, db, n); err != nil {
				return err
			}
			_, err := db.Derive(ctx, mql.DeriveSpec{Artifact: fmt.Sprintf("plan-%d", n), From: []string{ref(n)}, By: "owner"})
			return err
		}, recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			_, err := w.review(mql.ReviewSpec{Artifact: fmt.Sprintf("plan-%d", n), By: by})
			return err
		}},
		{kind: "decay", recordedBy: eventBy, write: func(w boundWrites, by string, n int) error {
			_, err := w.decay(mql.DecaySpec{Predicate: fmt.Sprintf("p%d", n), HalfLife: time.Hour, By: by})
			return err
		}},
		{kind: "outcome", write: func(w boundWrites, by string, n int) error {
			_, err := w.outcome(mql.OutcomeSpec{Run: fmt.Sprintf("run-%d", n), Result: mql.Succeeded, By: by})
			return err
		}, recordedBy: func(ctx context.Context, db *mql.DB, _ int64, n int) (string, error) {
			runs, err := db.Runs(ctx, "", time.Time{})
			for _, r := range runs {
				if r.Run == fmt.Sprintf("run-%d", n) {
					return r.By, err
				}
			}
			return "", fmt.Errorf("no run-%d in %+v (%v)", n, runs, err)
		}},
		{kind: "token", ownerOnly: true, write: func(w boundWrites, by string, n int) error {
			_, _, err := w.token(mql.TokenSpec{Principal: "alice", By: by})
			return err
		}, recordedBy: func(ctx context.Context, db *mql.DB, _ int64, _ int) (string, error) {
			toks, err := db.Tokens(ctx)
			if err != nil || len(toks) == 0 {
				return "", fmt.Errorf("tokens %+v %v", toks, err)
			}
			return toks[len(toks)-1].By, nil
		}},
	}
}

// An Actor writes as its principal: a spec's By, empty, is the principal; naming the principal
// is the same; naming another is refused with ErrActAs, writing nothing, unless the Actor is
// the owner's, which writes on others' behalf. Every write kind, through an Actor and through a
// transaction it runs.
func TestActorBindsEveryWrite(t *testing.T) {
	for _, via := range []string{"actor", "tx"} {
		for _, kind := range actorWrites() {
			for _, as := range []string{"owner", "alice"} {
				for _, by := range []string{"", as, "bob"} {
					name := fmt.Sprintf("%s/%s/as %s/by %q", via, kind.kind, as, by)
					t.Run(name, func(t *testing.T) {
						if via == "tx" && (kind.kind == "assert batch" || kind.kind == "token") {
							t.Skip("no such write in a transaction")
						}
						db, ctx := actorStore(t)
						if kind.prep != nil {
							if err := kind.prep(ctx, db, 1); err != nil {
								t.Fatal(err)
							}
						}
						before, _ := db.Head(ctx)
						a := db.ActAs(as)
						var err error
						if via == "tx" {
							_, err = a.Tx(ctx, func(tx *mql.Tx) error { return kind.write(txBound(tx), by, 1) })
						} else {
							err = kind.write(actorBound(ctx, a), by, 1)
						}
						head, _ := db.Head(ctx)
						want := by
						if want == "" {
							want = as
						}
						switch {
						case want != as && as != "owner":
							var ae *mql.ActAsError
							if !errors.Is(err, mql.ErrActAs) || !errors.As(err, &ae) || ae.Acting != as || ae.Other != want || ae.Owner != "owner" || ae.Read {
								t.Fatalf("error %v (%+v), want ErrActAs naming %s and %s", err, ae, as, want)
							}
							if !strings.Contains(err.Error(), "only the owner (owner) writes on others' behalf") {
								t.Errorf("error %q does not say who may", err)
							}
						case kind.txOwn && via == "tx" && want != as:
							if !errors.Is(err, mql.ErrInvalid) {
								t.Fatalf("error %v, want ErrInvalid", err)
							}
						case kind.ownerOnly && want != "owner":
							if !errors.Is(err, mql.ErrNoStanding) {
								t.Fatalf("error %v, want ErrNoStanding", err)
							}
						default:
							if err != nil {
								t.Fatal(err)
							}
							if via == "tx" && want != as {
								// The owner's transaction records others' writes: what it records of
								// them is DB.Tx's (TestTxIsLikeSeparateWrites), not the Actor's.
								return
							}
							got, err := kind.recordedBy(ctx, db, before, 1)
							if err != nil || got != want {
								t.Fatalf("recorded by %q (%v), want %q", got, err, want)
							}
							return
						}
						if head != before {
							t.Errorf("a refused write moved the head from %d to %d", before, head)
						}
					})
				}
			}
		}
	}
}

// boundWrites are the writes of an Actor, or of a transaction it runs (which has no batch and
// no tokens: nil), so that one table drives both.
type boundWrites struct {
	writes
	outcome func(mql.OutcomeSpec) (mql.Receipt, error)
	batch   func([]mql.AssertSpec) ([]mql.Receipt, error)
	token   func(mql.TokenSpec) (string, mql.Token, error)
}

func actorBound(ctx context.Context, a mql.Actor) boundWrites {
	return boundWrites{
		writes: writes{
			principal: func(s mql.PrincipalSpec) (mql.Receipt, error) { return a.AddPrincipal(ctx, s) },
			grant:     func(s mql.GrantSpec) (mql.Receipt, error) { return a.Grant(ctx, s) },
			assert:    func(s mql.AssertSpec) (mql.Receipt, error) { return a.Assert(ctx, s) },
			revoke:    func(s mql.RevokeSpec) (mql.Receipt, error) { return a.Revoke(ctx, s) },
			confirm:   func(s mql.ConfirmSpec) (mql.Receipt, error) { return a.Confirm(ctx, s) },
			derive:    func(s mql.DeriveSpec) (mql.Receipt, error) { return a.Derive(ctx, s) },
			review:    func(s mql.ReviewSpec) (mql.Receipt, error) { return a.Review(ctx, s) },
			decay:     func(s mql.DecaySpec) (mql.Receipt, error) { return a.SetDecay(ctx, s) },
		},
		outcome: func(s mql.OutcomeSpec) (mql.Receipt, error) { return a.Outcome(ctx, s) },
		batch:   func(ss []mql.AssertSpec) ([]mql.Receipt, error) { return a.AssertBatch(ctx, ss) },
		token:   func(s mql.TokenSpec) (string, mql.Token, error) { return a.CreateToken(ctx, s) },
	}
}

func txBound(tx *mql.Tx) boundWrites {
	return boundWrites{writes: txWrites(tx), outcome: tx.Outcome}
}

// An Actor's reads see what its principal may see, and its Reader (or its transaction's) reads
// as no one else, but the owner's, which reads as anyone.
func TestActorReadsAsItsPrincipal(t *testing.T) {
	db, ctx := actorStore(t)
	if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "K", Predicate: "secret", Value: mql.Number(1), By: "bob", SeenBy: []string{"bob"}}); err != nil {
		t.Fatal(err)
	}
	alice, owner := db.ActAs("alice"), db.ActAs("owner")
	seen := func(r mql.Reader) (int, error) {
		live, err := r.Live(ctx, "K.secret")
		return len(live), err
	}
	for _, tt := range []struct {
		name    string
		r       func(r mql.Reader) mql.Reader
		act     mql.Actor
		want    int
		refused bool
	}{
		{"alice", func(r mql.Reader) mql.Reader { return r }, alice, 0, false},
		{"alice as alice", func(r mql.Reader) mql.Reader { return r.As("alice") }, alice, 0, false},
		{"alice as bob", func(r mql.Reader) mql.Reader { return r.As("bob") }, alice, 0, true},
		{"alice as the owner", func(r mql.Reader) mql.Reader { return r.As("owner") }, alice, 0, true},
		{"alice as no one (the owner's view)", func(r mql.Reader) mql.Reader { return r.As("") }, alice, 0, true},
		{"alice as of tx 1 as bob", func(r mql.Reader) mql.Reader { return r.AsOfTx(1).As("bob") }, alice, 0, true},
		{"owner", func(r mql.Reader) mql.Reader { return r }, owner, 1, false},
		{"owner as bob", func(r mql.Reader) mql.Reader { return r.As("bob") }, owner, 1, false},
		{"owner as alice", func(r mql.Reader) mql.Reader { return r.As("alice") }, owner, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var inTx int
			var txErr error
			if _, err := tt.act.Tx(ctx, func(tx *mql.Tx) error {
				inTx, txErr = seen(tt.r(tx.Reader()))
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			r := tt.r(tt.act.Reader())
			n, err := seen(r)
			if tt.refused {
				var ae *mql.ActAsError
				if !errors.As(err, &ae) || !ae.Read || ae.Acting != "alice" || ae.Other == "" || !errors.Is(r.Err(), mql.ErrActAs) || !errors.Is(txErr, mql.ErrActAs) {
					t.Fatalf("read: %v (Err %v; in a transaction %v), want ErrActAs", err, r.Err(), txErr)
				}
				return
			}
			if err != nil || txErr != nil || r.Err() != nil || n != tt.want || inTx != tt.want {
				t.Fatalf("saw %d (%v), in a transaction %d (%v), want %d", n, err, inTx, txErr, tt.want)
			}
		})
	}
}

// An Actor of no principal is no one: not the owner, whom an empty name means to a DB's
// Reader. Everything through it fails, and nothing is written.
func TestActorOfNoOne(t *testing.T) {
	db, ctx := actorStore(t)
	before, _ := db.Head(ctx)
	a := db.ActAs("")
	if _, err := a.Reader().Live(ctx, "*"); !errors.Is(err, mql.ErrBadReference) {
		t.Errorf("read: %v", err)
	}
	if _, err := a.Assert(ctx, claimOf(1)); !errors.Is(err, mql.ErrBadReference) {
		t.Errorf("write by owner: %v", err)
	}
	if _, err := a.Tx(ctx, func(*mql.Tx) error { return nil }); !errors.Is(err, mql.ErrBadReference) {
		t.Errorf("transaction: %v", err)
	}
	if err := a.Import(ctx, strings.NewReader("")); !errors.Is(err, mql.ErrBadReference) {
		t.Errorf("import: %v", err)
	}
	if head, _ := db.Head(ctx); head != before {
		t.Errorf("head moved from %d to %d", before, head)
	}
}

// Export and import are as the language's sessions have them: an Actor exports what its
// principal may see (the owner's, the whole store); only the owner's imports. Tokens are the
// owner's to revoke.
func TestActorExportImportTokens(t *testing.T) {
	db, ctx := actorStore(t)
	export := func(f func(w *strings.Builder) error) string {
		var b strings.Builder
		if err := f(&b); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	if export(func(w *strings.Builder) error { return db.ActAs("owner").Export(ctx, w) }) != export(func(w *strings.Builder) error { return db.Export(ctx, w) }) {
		t.Error("the owner's Actor exports other than the store's export")
	}
	if export(func(w *strings.Builder) error { return db.ActAs("alice").Export(ctx, w) }) != export(func(w *strings.Builder) error { return db.As("alice").Export(ctx, w) }) {
		t.Error("alice's Actor exports other than alice's reader")
	}
	err := db.ActAs("alice").Import(ctx, strings.NewReader("not read"))
	var ae *mql.ActAsError
	if !errors.As(err, &ae) || !ae.Import || !strings.Contains(err.Error(), "only the owner (owner) may import") {
		t.Errorf("alice's import: %v", err)
	}
	_, tok, err := db.ActAs("owner").CreateToken(ctx, mql.TokenSpec{Principal: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ActAs("alice").RevokeToken(ctx, tok.ID); !errors.Is(err, mql.ErrNoStanding) {
		t.Errorf("alice revoking a token: %v", err)
	}
	if _, err := db.ActAs("owner").RevokeToken(ctx, tok.ID); err != nil {
		t.Errorf("the owner revoking a token: %v", err)
	}
}

// A batch's specs are bound in a copy: the caller's slice keeps its empty By.
func TestActorAssertBatchLeavesSpecs(t *testing.T) {
	db, ctx := actorStore(t)
	specs := []mql.AssertSpec{claimOf(1), claimOf(2)}
	specs[0].By, specs[1].By = "", ""
	if _, err := db.ActAs("alice").AssertBatch(ctx, specs); err != nil {
		t.Fatal(err)
	}
	if specs[0].By != "" || specs[1].By != "" {
		t.Errorf("specs changed: %+v", specs)
	}
	specs[1].By = "bob"
	if _, err := db.ActAs("alice").AssertBatch(ctx, specs); !errors.Is(err, mql.ErrActAs) || !strings.HasPrefix(err.Error(), "claim 2: ") {
		t.Errorf("a batch with a claim by bob: %v", err)
	}
}
