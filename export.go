package mql

import (
	"context"
	"io"
	"slices"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// Export writes the store as N-Quads, in the vocabulary of docs/VOCABULARY.md, as of the
// reader's view and limited to what the reader may see. The owner's export of the newest state
// holds every transaction and can be imported into a new store; another reader's export leaves
// out the transactions that recorded nothing it may see, and is for reading, not importing.
//
// It streams: the head is fixed first, then the transactions are read and written a chunk at a
// time, each chunk on a snapshot of its own read as of that head (every entry of the store is
// transaction-stamped, so any later snapshot answers exactly as of it), so that an export of a
// large store holds one chunk in memory and no snapshot stays open while a slow consumer reads.
func (r reads) Export(ctx context.Context, w io.Writer) error {
	var head record.TxID
	var cited map[string]bool
	err := r.view(ctx, func(v *index.View) error {
		head = v.AsOf()
		if !v.IsOwnerView() {
			cited = citedSources(v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	at := r
	if r.tx == nil && r.asOfTx == 0 && !r.asOfSet {
		at = r.AsOfTx(int64(head)).reads
	}
	// A chunk is at most 256 transactions and about exportChunkRecords records: a bulk load's
	// transactions hold a thousand claims each.
	const chunk = 256
	for from := record.TxID(1); from <= head; {
		var txs []*record.Tx
		next := from
		err := at.view(ctx, func(v *index.View) error {
			v.Index().Pass()
			txs, next = txs[:0], from
			records := 0
			for ; next <= head && len(txs) < chunk && records < exportChunkRecords; next++ {
				tx := v.Tx(next)
				records += len(tx.Claims) + len(tx.Artifacts) + len(tx.Sources) + 1
				if !v.IsOwnerView() {
					// A transaction that recorded nothing the reader may see is left out
					// whole: even its time and author would say that something happened.
					if tx = visibleTx(v, tx, cited); tx == nil {
						continue
					}
				}
				txs = append(txs, tx)
			}
			return nil
		})
		if err != nil {
			return err
		}
		from = next
		if err := codec.WriteNQuads(w, txs); err != nil {
			return err
		}
		r.db.store.ReleaseMapped()
	}
	return nil
}

// exportChunkRecords bounds the records an export holds in memory at once.
const exportChunkRecords = 4096

// visibleTx copies tx without what v's reader may not see: claims and artifacts outside its
// perception, events about them, references to them, and sources only they cite.
func visibleTx(v *index.View, tx *record.Tx, cited map[string]bool) *record.Tx {
	out := &record.Tx{ID: tx.ID, Time: tx.Time, By: tx.By, Meta: tx.Meta, Principals: tx.Principals, Grants: tx.Grants, Decays: tx.Decays}
	for _, s := range tx.Sources {
		if cited[s.ID] {
			out.Sources = append(out.Sources, s)
		}
	}
	hide := func(id *record.ClaimID) *record.ClaimID {
		if id == nil || v.Claim(*id) == nil {
			return nil
		}
		return id
	}
	for _, c := range tx.Claims {
		if v.Claim(c.ID) == nil {
			continue
		}
		cc := *c
		cc.Supersedes, cc.Contests, cc.Corroborates = hide(c.Supersedes), hide(c.Contests), hide(c.Corroborates)
		out.Claims = append(out.Claims, &cc)
	}
	for _, r := range tx.Revocations {
		if v.Claim(r.Claim) == nil {
			continue
		}
		rr := *r
		rr.ReplacedBy = hide(r.ReplacedBy)
		out.Revocations = append(out.Revocations, &rr)
	}
	for _, c := range tx.Confirmations {
		if v.Claim(c.Claim) != nil {
			out.Confirmations = append(out.Confirmations, c)
		}
	}
	for _, a := range tx.Artifacts {
		if v.Artifact(a.ID) == nil {
			continue
		}
		aa := *a
		aa.DerivedFrom = slices.DeleteFunc(slices.Clone(a.DerivedFrom), func(n record.NodeRef) bool { return !nodeVisible(v, n) })
		if a.Supersedes != nil && v.Artifact(*a.Supersedes) == nil {
			aa.Supersedes = nil // a store written before versions kept to their audience
		}
		if !v.SeesRunsOf(a.By) {
			aa.Run = "" // a run is its principal's (and the owner's) to see
		}
		out.Artifacts = append(out.Artifacts, &aa)
	}
	for _, r := range tx.Reviews {
		if v.Artifact(r.Artifact) != nil {
			out.Reviews = append(out.Reviews, r)
		}
	}
	for _, r := range tx.Retrievals {
		if v.SeesRunsOf(r.By) {
			out.Retrievals = append(out.Retrievals, r)
		}
	}
	for _, o := range tx.Outcomes {
		if v.SeesRunsOf(o.By) {
			out.Outcomes = append(out.Outcomes, o)
		}
	}
	if out.Meta == nil && len(out.Principals)+len(out.Grants)+len(out.Decays)+len(out.Sources)+len(out.Claims)+
		len(out.Revocations)+len(out.Confirmations)+len(out.Artifacts)+len(out.Reviews)+len(out.Retrievals)+len(out.Outcomes) == 0 {
		return nil
	}
	return out
}

// ImportSummary says what an import created: how many transactions, claims and quads.
type ImportSummary = graphstore.ImportSummary

// ImportError is an import refused for what the file holds, with the line (and column, when
// the parser gives one) of the first problem. It wraps graphstore.ErrBadImport.
type ImportError = graphstore.ImportError

// ImportStore creates the store named by dsn from an N-Quads export (an owner's export, which
// holds every transaction), exactly: the genesis — owner, strict flag and time — and every
// transaction keep their ids and times, so an export of the new store is byte-identical to the
// file, and a reader as of any time or transaction sees what it saw in the original. opts.Owner
// and opts.Strict are not used: the file says them.
//
// An import creates a store and never adds to one: a bbolt file must not exist, a PostgreSQL
// database must hold no store (ErrNotEmpty otherwise). The file is read, checked and written one
// transaction at a time, with every check Check runs — the transactions' quads in order and
// together, their times never going backwards, every reference resolving to what came before,
// authors and standings that hold, at most one live claim per key and audience — and nothing
// is visible until all of it was: a refused or interrupted import leaves no store behind. A
// refusal is an *ImportError naming the line of the first problem.
func ImportStore(ctx context.Context, dsn string, r io.Reader, opts Options) (ImportSummary, error) {
	return graphstore.ImportStore(ctx, dsn, r, graphstore.Options{Clock: opts.Clock, OpenTimeout: opts.OpenTimeout},
		graphstore.CheckOptions{Rules: modelRules})
}

// Import loads an N-Quads export into this store, which must be a new memory: store (holding
// only its genesis): the store becomes exactly the exported one, its genesis included, checked
// as ImportStore checks it. A store on a file or in a database is created from an export with
// ImportStore (`mql import FILE NEWDB`) instead, and Import refuses it with ErrNotEmpty. A
// refused import changes nothing.
func (db *DB) Import(ctx context.Context, r io.Reader) error {
	_, err := db.store.Import(ctx, r, graphstore.CheckOptions{Now: db.clock(), Rules: modelRules})
	return err
}

// citedSources are the sources cited by some claim the view's reader may see.
func citedSources(v *index.View) map[string]bool {
	cited := map[string]bool{}
	for _, k := range v.Keys() {
		for _, e := range v.Versions(k) {
			for _, s := range e.Sources {
				cited[s] = true
			}
		}
	}
	return cited
}
