package mql

import (
	"context"
	"fmt"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/record"
)

// CheckProblem is one thing wrong with a store: its kind (graphstore.Problem* constants:
// "label", "tx-ids", "transaction", "record", "reference", "version", "revocation",
// "encoding", "author", "live", "standing", "index", "file"), the transaction and record concerned,
// and a message.
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

// Check verifies the integrity of the open store from its records, decoded and written as the
// quads an export holds (not from the index the reads use), one transaction at a time: every transaction is present (ids 1..head without gaps)
// with its time, never before an earlier one's, and its principal; every claim has its
// subject, predicate, value, asserter and transaction; every reference resolves to a record
// recorded no later (seen-by principals too); the versions of each key and artifact are unique
// and gapless; each key has at most one live claim per audience; every revocation names a
// principal, a standing and a claim; the genesis is made by its owner and every record but a
// claim by its transaction's principal; and every recorded standing (revocations,
// confirmations, strict assertions, grants, principals, decays) held when it was used. Writers
// wait while it reads. A store that passes can be reopened.
func (db *DB) Check(ctx context.Context) (CheckReport, error) {
	r, err := db.store.Check(ctx, graphstore.CheckOptions{Rules: modelRules})
	if err != nil {
		return CheckReport{}, err
	}
	return checkReport(r), nil
}

// CheckStore checks the store named by dsn as Check does, without opening it: it reads the
// records and index straight from the storage engine, so it works on a store that Open refuses, and it
// never creates or initialises a store (a missing bbolt file is an error wrapping ErrNoStore
// and fs.ErrNotExist; an empty file, or a database without mql's tables, wraps ErrNoStore). A bbolt
// file held by another process fails with ErrInUse after opts.OpenTimeout. Its memory grows
// with neither: it holds one transaction at a time, and its state is an index in a scratch
// file.
func CheckStore(ctx context.Context, dsn string, opts Options) (CheckReport, error) {
	r, err := graphstore.CheckDSN(ctx, dsn, graphstore.Options{Clock: opts.Clock, OpenTimeout: opts.OpenTimeout,
		WriteLockTimeout: opts.WriteLockTimeout, WriteIdleTimeout: opts.WriteIdleTimeout},
		graphstore.CheckOptions{Rules: modelRules})
	if err != nil {
		return CheckReport{}, err
	}
	return checkReport(r), nil
}

func checkReport(r *graphstore.Report) CheckReport {
	return CheckReport{
		Quads: r.Quads, Transactions: r.Transactions, Head: int64(r.Head), Principals: r.Principals,
		Claims: r.Claims, Keys: r.Keys, Revocations: r.Revocations, Artifacts: r.Artifacts,
		Problems: r.Problems, Omitted: r.Omitted,
	}
}

// modelRules are the rules of the model that the storage layer does not know: who made each
// record, and the standing each one needed. st is the store just before tx (its claims and
// artifacts: up to and including tx).
func modelRules(st *graphstore.CheckState, tx *record.Tx, add func(graphstore.Problem)) {
	if name, ok := notNFC(tx); ok {
		add(graphstore.Problem{Kind: graphstore.ProblemRecord, Tx: tx.ID,
			Msg: fmt.Sprintf("the name %q is not in Unicode normalization form C (NFC), as mql writes every name", name)})
	}
	if err := badName(tx); err != nil {
		add(graphstore.Problem{Kind: graphstore.ProblemRecord, Tx: tx.ID, Msg: err.Error()})
	}
	checkAuthors(tx, st.Meta().Owner, add)
	if tx.ID != 1 {
		checkStandings(st, tx, add)
	}
}

// checkAuthors checks that the transaction's principal made what it records, as every write
// does (db.write commits each statement as one transaction made by its principal): the genesis
// is made by the owner it records, and every grant, revocation, confirmation, artifact, review
// and decay names the transaction's principal, unless the owner made the transaction (the
// owner may write by anyone, and DB.Tx records several principals' writes in one transaction
// made by the owner). Claims are the exception the API makes everywhere:
// AssertBatch records the claims of several asserters in one transaction made by one
// principal, so a claim's asserter may be any recorded principal (whose standing, in a strict
// store, checkStandings judges).
func checkAuthors(tx *record.Tx, owner string, add func(graphstore.Problem)) {
	lie := func(node, what, by string) {
		add(graphstore.Problem{Kind: graphstore.ProblemAuthor, Tx: tx.ID, Node: node,
			Msg: fmt.Sprintf("%s %s in a transaction made by %s: every record but a claim is made by its transaction's principal (or in the owner's)", what, by, tx.By)})
	}
	if tx.Meta != nil && tx.By != tx.Meta.Owner {
		lie("urn:mql:tx:1", "the genesis records owner "+tx.Meta.Owner+" and is made by", tx.By)
	}
	if owner != "" && tx.By == owner {
		return // the owner writes on anyone's behalf, several principals' records in one DB.Tx too
	}
	for _, g := range tx.Grants {
		if g.By != tx.By {
			lie("urn:mql:grant:"+g.ID, "given by", g.By)
		}
	}
	for _, r := range tx.Revocations {
		if r.By != tx.By {
			lie("urn:mql:revocation:"+r.ID, "made by", r.By)
		}
	}
	for _, c := range tx.Confirmations {
		if c.By != tx.By {
			lie("urn:mql:confirmation:"+c.ID, "made by", c.By)
		}
	}
	for _, a := range tx.Artifacts {
		if a.By != tx.By {
			lie("urn:mql:artifact:"+a.ID.String(), "derived by", a.By)
		}
	}
	for _, r := range tx.Reviews {
		if r.By != tx.By {
			lie("urn:mql:review:"+r.ID, "made by", r.By)
		}
	}
	for _, d := range tx.Decays {
		if d.By != tx.By {
			lie("", "the decay of "+d.Predicate+" declared by", d.By)
		}
	}
	for _, r := range tx.Retrievals {
		if r.By != tx.By {
			lie("urn:mql:retrieval:"+r.ID, "read by", r.By)
		}
	}
	for _, o := range tx.Outcomes {
		if o.By != tx.By {
			lie("urn:mql:outcome:"+o.ID, "recorded by", o.By)
		}
	}
}

// checkStandings replays the authority rules: every standing tx recorded (or needed) held in
// the store as it was just before it.
func checkStandings(st *graphstore.CheckState, tx *record.Tx, add func(graphstore.Problem)) {
	owner := st.Meta().Owner
	bad := func(node, format string, args ...any) {
		add(graphstore.Problem{Kind: graphstore.ProblemStanding, Tx: tx.ID, Node: node, Msg: fmt.Sprintf(format, args...)})
	}
	v := authority.InTx(st, tx)
	canSee := func(who string, seenBy []string) bool { return authority.CanSee(owner, who, seenBy) }
	for _, p := range tx.Principals {
		if err := authority.VerifyPrincipal(v, tx.By); err != nil {
			bad("urn:mql:principal:"+p.Name, "%v", err)
		}
	}
	for i, g := range tx.Grants {
		if err := authority.VerifyGrant(st, tx, i); err != nil {
			bad("urn:mql:grant:"+g.ID, "%v", err)
		}
	}
	for _, d := range tx.Decays {
		if err := authority.VerifyDecay(v, d); err != nil {
			bad("", "%v", err)
		}
	}
	for _, c := range tx.Claims {
		if err := authority.VerifyAssert(v, c.Grant, c.By, c.ID.Key); err != nil {
			bad("urn:mql:claim:"+c.ID.String(), "%v", err)
		}
	}
	for _, rv := range tx.Revocations {
		node := "urn:mql:revocation:" + rv.ID
		e, ok := st.Claim(rv.Claim)
		if !ok {
			continue // graphstore reported it
		}
		if err := authority.VerifyRevoke(v, rv.Standing, rv.By, e.By, rv.Claim); err != nil {
			bad(node, "%v", err)
		}
		if !canSee(rv.By, e.SeenBy) {
			bad(node, "%s revoked %s, which it may not see", rv.By, rv.Claim)
		}
	}
	for _, cf := range tx.Confirmations {
		node := "urn:mql:confirmation:" + cf.ID
		for _, err := range authority.VerifyConfirm(v, cf.Standing, cf.By, cf.Claim) {
			bad(node, "%v", err)
		}
		if e, ok := st.Claim(cf.Claim); ok && !canSee(cf.By, e.SeenBy) {
			bad(node, "%s confirmed %s, which it may not see", cf.By, cf.Claim)
		}
	}
	for _, a := range tx.Artifacts {
		for _, in := range a.DerivedFrom {
			var seen []string
			switch {
			case in.Claim != nil:
				if e, ok := st.Claim(*in.Claim); ok {
					seen = e.SeenBy
				}
			case in.Artifact != nil:
				seen, _ = st.Artifact(*in.Artifact)
			}
			if !canSee(a.By, seen) {
				bad("urn:mql:artifact:"+a.ID.String(), "derived by %s from %s, which it may not see", a.By, in)
			}
		}
	}
	// A read serves only what its reader may see, so its record names nothing else.
	for _, r := range tx.Retrievals {
		for _, id := range r.Claims {
			if e, ok := st.Claim(id); ok && !canSee(r.By, e.SeenBy) {
				bad("urn:mql:retrieval:"+r.ID, "served %s to %s, who may not see it", id, r.By)
			}
		}
		for _, id := range r.Artifacts {
			if seen, ok := st.Artifact(id); ok && !canSee(r.By, seen) {
				bad("urn:mql:retrieval:"+r.ID, "served %s to %s, who may not see it", id, r.By)
			}
		}
	}
}
