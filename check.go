package mql

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore"
)

// CheckProblem is one thing wrong with a store: its kind (graphstore.Problem* constants:
// "label", "tx-ids", "transaction", "record", "reference", "version", "revocation",
// "encoding", "live", "standing"), the transaction and record concerned, and a message.
type CheckProblem = graphstore.Problem

// CheckReport is what Check found: what the store holds, and every problem (at most
// graphstore.MaxProblems are listed; Omitted counts the rest).
type CheckReport struct {
	Quads        int            `json:"quads"`
	Transactions int            `json:"transactions"`
	Head         int64          `json:"head"`
	Principals   int            `json:"principals"`
	Claims       int            `json:"claims"`
	Keys         int            `json:"keys"`
	Revocations  int            `json:"revocations"`
	Artifacts    int            `json:"artifacts"`
	Problems     []CheckProblem `json:"problems"`
	Omitted      int            `json:"omitted,omitempty"`
}

// OK reports whether the store passed every check.
func (r CheckReport) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// Check verifies the integrity of the open store from its quads (not from the in-memory
// index): every transaction is present (ids 1..head without gaps) with its time and principal;
// every claim has its subject, predicate, value, asserter and transaction; every reference
// resolves; the versions of each key and artifact are unique and gapless; each key has at most
// one live claim per audience; every revocation names a principal, a standing and a claim, and
// every recorded standing (revocations, confirmations, strict assertions, grants, principals,
// decays) held when it was used. Writers wait while it reads. A store that passes can be
// reopened.
func (db *DB) Check(ctx context.Context) (CheckReport, error) {
	r, err := db.store.Check(ctx)
	if err != nil {
		return CheckReport{}, userError(err)
	}
	return checkReport(r), nil
}

// CheckStore checks the store named by dsn as Check does, without opening it: it reads the
// quads straight from the storage engine, so it works on a store that Open refuses, and it
// never creates or initialises a store (a missing bbolt file is an error wrapping ErrNoStore
// and fs.ErrNotExist; an empty file, or a database without mql's tables, wraps ErrNoStore). A bbolt
// file held by another process fails with ErrInUse after opts.OpenTimeout.
func CheckStore(ctx context.Context, dsn string, opts Options) (CheckReport, error) {
	r, err := graphstore.CheckDSN(ctx, dsn, graphstore.Options{Clock: opts.Clock, OpenTimeout: opts.OpenTimeout,
		WriteLockTimeout: opts.WriteLockTimeout, WriteIdleTimeout: opts.WriteIdleTimeout})
	if err != nil {
		return CheckReport{}, userError(err)
	}
	return checkReport(r), nil
}

// checkImport refuses transactions read for an import that Check would find fault with.
func checkImport(txs []*graphstore.Tx, now time.Time) error {
	rep := checkReport(graphstore.CheckTxs(txs, now))
	if rep.OK() {
		return nil
	}
	more := ""
	if n := len(rep.Problems) + rep.Omitted - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more problems)", n)
	}
	return fmt.Errorf("import: %w: %s: %s%s; nothing was imported", graphstore.ErrBadImport, rep.Problems[0].Kind, rep.Problems[0], more)
}

func checkReport(r *graphstore.Report) CheckReport {
	if r.Index != nil {
		checkStandings(r)
	}
	return CheckReport{
		Quads: r.Quads, Transactions: r.Transactions, Head: int64(r.Head), Principals: r.Principals,
		Claims: r.Claims, Keys: r.Keys, Revocations: r.Revocations, Artifacts: r.Artifacts,
		Problems: r.Problems, Omitted: r.Omitted,
	}
}

// checkStandings replays the authority rules over the decoded store: every standing a
// transaction recorded (or needed) held in the store as it was just before it.
func checkStandings(r *graphstore.Report) {
	ix := r.Index
	owner := ix.Meta().Owner
	strict := ix.Meta().Strict
	bad := func(tx graphstore.TxID, node, format string, args ...any) {
		r.Add(graphstore.Problem{Kind: graphstore.ProblemStanding, Tx: tx, Node: node, Msg: fmt.Sprintf(format, args...)})
	}
	// A transaction of several statements (DB.Tx) may rest on its own earlier records: a
	// grant it gives is standing for its other records, a principal it records may confirm.
	// Grants are checked against the grants given before them in their transaction only, so
	// that no grant is its own standing.
	// grant finds grant id held by who with right over target, in v.
	grant := func(v *graphstore.View, id, who string, right graphstore.Right, target string) error {
		for _, g := range v.Grants(who) {
			if g.ID != id {
				continue
			}
			if g.Right != right || !authority.Covers(g.Scope, target) {
				return fmt.Errorf("grant %s gives %s %s on %s, not %s on %s", id, g.Grantee, g.Right, g.Scope, right, target)
			}
			return nil
		}
		return fmt.Errorf("%s held no grant %s", who, id)
	}
	holds := func(v *graphstore.View, who string, right graphstore.Right, target string) bool {
		_, err := authority.Standing(v, who, right, target)
		return err == nil
	}
	canSee := func(who string, seenBy []string) bool {
		return who == owner || len(seenBy) == 0 || slices.Contains(seenBy, who)
	}
	ix.RLock()
	defer ix.RUnlock()
	for _, tx := range ix.Txs() {
		if tx.ID == 1 {
			continue
		}
		before := ix.View(tx.ID-1, tx.Time, "")
		v := ix.View(tx.ID, tx.Time, "")
		for _, p := range tx.Principals {
			if !holds(v, tx.By, graphstore.RightGrant, "*") {
				bad(tx.ID, "urn:mql:principal:"+p.Name, "recorded by %s, who held no grant right on *", tx.By)
			}
		}
		for i, g := range tx.Grants {
			if holds(before, g.By, graphstore.RightGrant, g.Scope) {
				continue
			}
			// The first grant that covers it, in order: one given earlier in this transaction.
			st, err := authority.Standing(v, g.By, graphstore.RightGrant, g.Scope)
			if err != nil || !slices.ContainsFunc(tx.Grants[:i], func(e *graphstore.Grant) bool { return e.ID == st }) {
				bad(tx.ID, "urn:mql:grant:"+g.ID, "given by %s, who held no grant right on %s", g.By, g.Scope)
			}
		}
		for _, d := range tx.Decays {
			if !holds(v, d.By, graphstore.RightGrant, d.Predicate) {
				bad(tx.ID, "", "decay of %s declared by %s, who held no grant right on it", d.Predicate, d.By)
			}
		}
		for _, c := range tx.Claims {
			node := "urn:mql:claim:" + c.ID.String()
			switch {
			case !strict && c.Grant != "":
				bad(tx.ID, node, "records standing %q, but the store is not strict", c.Grant)
			case !strict:
			case c.Grant == authority.StandingOwner:
				if c.By != owner {
					bad(tx.ID, node, "asserted by %s on the owner's standing", c.By)
				}
			case c.Grant == "":
				bad(tx.ID, node, "asserted by %s in a strict store without a standing", c.By)
			default:
				if err := grant(v, c.Grant, c.By, graphstore.RightAssert, c.ID.Key.String()); err != nil {
					bad(tx.ID, node, "its standing does not hold: %v", err)
				}
			}
		}
		for _, rv := range tx.Revocations {
			node := "urn:mql:revocation:" + rv.ID
			e := ix.View(0, tx.Time, "").Claim(rv.Claim)
			if e == nil {
				continue // graphstore reported it
			}
			switch rv.Standing {
			case authority.StandingOwnClaim:
				if e.By != rv.By {
					bad(tx.ID, node, "%s revoked %s as its own claim, but %s asserted it", rv.By, rv.Claim, e.By)
				}
			case authority.StandingOwner:
				if rv.By != owner {
					bad(tx.ID, node, "%s revoked %s on the owner's standing", rv.By, rv.Claim)
				}
			default:
				if err := grant(v, rv.Standing, rv.By, graphstore.RightRevoke, rv.Claim.Key.String()); err != nil {
					bad(tx.ID, node, "%s revoked %s without standing: %v", rv.By, rv.Claim, err)
				}
			}
			if !canSee(rv.By, e.SeenBy) {
				bad(tx.ID, node, "%s revoked %s, which it may not see", rv.By, rv.Claim)
			}
		}
		for _, cf := range tx.Confirmations {
			node := "urn:mql:confirmation:" + cf.ID
			if p := v.Principal(cf.By); p == nil || p.Type != graphstore.User {
				bad(tx.ID, node, "confirmed by %s, who is not a user", cf.By)
			}
			switch cf.Standing {
			case authority.StandingOwner:
				if cf.By != owner {
					bad(tx.ID, node, "%s confirmed %s on the owner's standing", cf.By, cf.Claim)
				}
			default:
				if err := grant(v, cf.Standing, cf.By, graphstore.RightConfirm, cf.Claim.Key.String()); err != nil {
					bad(tx.ID, node, "%s confirmed %s without standing: %v", cf.By, cf.Claim, err)
				}
			}
			if e := ix.View(0, tx.Time, "").Claim(cf.Claim); e != nil && !canSee(cf.By, e.SeenBy) {
				bad(tx.ID, node, "%s confirmed %s, which it may not see", cf.By, cf.Claim)
			}
		}
		for _, a := range tx.Artifacts {
			all := ix.View(0, tx.Time, "")
			for _, in := range a.DerivedFrom {
				var seen []string
				switch {
				case in.Claim != nil:
					if e := all.Claim(*in.Claim); e != nil {
						seen = e.SeenBy
					}
				case in.Artifact != nil:
					if n := all.Artifact(*in.Artifact); n != nil {
						seen = n.SeenBy
					}
				}
				if !canSee(a.By, seen) {
					bad(tx.ID, "urn:mql:artifact:"+a.ID.String(), "derived by %s from %s, which it may not see", a.By, in)
				}
			}
		}
	}
}
