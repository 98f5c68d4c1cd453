package index

// What a check reads of the index it replays a store (or an import file) into: graphstore's
// checker keeps no state per record, it asks the index of the transactions it applied so far.
// Every accessor reads as of a transaction asOf, the last one the check applied: that is the
// handle's head, unless an Apply failed part-way through a transaction, whose entries (stamped
// with its later id) are then not seen. They read through the handle's memo like every other
// lookup, except EachKeyVersionsAsOf, which streams.

import (
	"fmt"
	"time"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/lifecycle"
	"github.com/mql-dev/mql/graphstore/record"
)

// KeyCountAsOf is the number of keys recorded up to transaction asOf, which the index holds.
func (ix *Index) KeyCountAsOf(asOf record.TxID) int {
	if h := ix.txHeader(asOf); h != nil {
		return int(h.counts[2])
	}
	return 0
}

// KeyName is the key numbered seq (as KeyAsOf and EachKeyVersionsAsOf give it).
func (ix *Index) KeyName(seq uint64) record.Key { return ix.keyOf(seq) }

// KeyAsOf is key k's number and the number of its versions recorded up to asOf (0: none).
func (ix *Index) KeyAsOf(k record.Key, asOf record.TxID) (seq uint64, versions int) {
	ke := ix.keyEntry(k)
	if ke == nil {
		return 0, 0
	}
	n := ke.n
	if ke.lastTx > asOf {
		for n > 0 {
			if e := ix.claimAt(k, ke.seq, n); e != nil && e.Tx <= asOf {
				break
			}
			n--
		}
	}
	return ke.seq, n
}

// CheckedClaim is what a check needs of a claim version as of a transaction.
type CheckedClaim struct {
	Tx         record.TxID
	By         string
	SeenBy     []string // as recorded (Audience(SeenBy) is who may see it)
	ValidUntil time.Time
	// Phase is its state before valid time: its relation at birth and the events recorded
	// about it up to the transaction, folded by lifecycle.Fold.
	Phase lifecycle.Phase
}

// ClaimAsOf returns claim id as of asOf, if it was recorded by then.
func (ix *Index) ClaimAsOf(id record.ClaimID, asOf record.TxID) (CheckedClaim, bool) {
	ke := ix.keyEntry(id.Key)
	if ke == nil || id.Version < 1 || id.Version > ke.n {
		return CheckedClaim{}, false
	}
	e := ix.claimAt(id.Key, ke.seq, id.Version)
	if e == nil || e.Tx > asOf {
		return CheckedClaim{}, false
	}
	return checkedClaim(e.s, e.revised, asOf), true
}

func checkedClaim(s *storedClaim, revised []record.TxID, asOf record.TxID) CheckedClaim {
	c := s.c
	st, _ := lifecycle.Fold(lifecycle.RelationOf(c), c.Tx, revised, txsOf(s.promotions), txsOf(s.revocations), asOf)
	return CheckedClaim{Tx: c.Tx, By: c.By, SeenBy: c.SeenBy, ValidUntil: c.ValidUntil, Phase: phaseOf(st)}
}

func phaseOf(st State) lifecycle.Phase {
	switch st {
	case Superseded:
		return lifecycle.PhaseSuperseded
	case Contested:
		return lifecycle.PhaseContested
	case Revoked:
		return lifecycle.PhaseRevoked
	}
	return lifecycle.PhaseLive
}

// RevocationsAsOf is how many revocations of claim id were recorded up to asOf, and the first
// of them (its id and transaction).
func (ix *Index) RevocationsAsOf(id record.ClaimID, asOf record.TxID) (first string, tx record.TxID, n int) {
	ke := ix.keyEntry(id.Key)
	if ke == nil || id.Version < 1 || id.Version > ke.n {
		return "", 0, 0
	}
	e := ix.claimAt(id.Key, ke.seq, id.Version)
	if e == nil {
		return "", 0, 0
	}
	for _, r := range e.s.revocations {
		if r.tx > asOf {
			break
		}
		if n == 0 {
			first, tx = r.id, r.tx
		}
		n++
	}
	return first, tx, n
}

// ArtifactVersionsAsOf is the number of versions of artifact name recorded up to asOf.
func (ix *Index) ArtifactVersionsAsOf(name string, asOf record.TxID) int {
	ae := ix.artEntry(name)
	if ae == nil {
		return 0
	}
	n := ae.n
	if ae.lastTx > asOf {
		for n > 0 {
			if a := ix.artifactAt(name, ae.seq, n); a != nil && a.Tx <= asOf {
				break
			}
			n--
		}
	}
	return n
}

// ArtifactAsOf returns artifact version id's transaction and who may see it (as recorded), if
// it was recorded by asOf.
func (ix *Index) ArtifactAsOf(id record.ArtifactID, asOf record.TxID) (tx record.TxID, seenBy []string, ok bool) {
	n := ix.artifact(id)
	if n == nil || n.Tx > asOf {
		return 0, nil, false
	}
	return n.Tx, n.SeenBy, true
}

// RecordTxAsOf is the transaction that recorded the record of kind k and id (KindSource,
// KindRevocation, KindConfirmation, KindReview, KindToken, KindTokenRevocation, KindRetrieval,
// KindOutcome), if one did by asOf. A record recorded again under the same id by a later
// transaction is found as that one.
func (ix *Index) RecordTxAsOf(k Kind, id string, asOf record.TxID) (record.TxID, bool) {
	var tx record.TxID
	switch k {
	case KindSource:
		if s := ix.source(id); s != nil {
			tx = s.Tx
		}
	case KindRevocation:
		if r := ix.revocation(id); r != nil {
			tx = r.Tx
		}
	case KindConfirmation:
		if c := ix.confirmation(id); c != nil {
			tx = c.Tx
		}
	case KindReview:
		if r := ix.review(id); r != nil {
			tx = r.Tx
		}
	case KindToken:
		if t := ix.token(id); t != nil {
			tx = t.t.Tx
		}
	case KindTokenRevocation:
		if r := ix.tokenRev(id); r != nil {
			tx = r.Tx
		}
	case KindRetrieval:
		if q := ix.retrieval(id); q != nil {
			tx = q.Tx
		}
	case KindOutcome:
		if o := ix.outcome(id); o != nil {
			tx = o.Tx
		}
	default:
		panic(fmt.Sprintf("index: RecordTxAsOf of kind %d", k))
	}
	if tx == 0 || tx > asOf {
		return 0, false
	}
	return tx, true
}

// EachKeyVersionsAsOf calls fn with every key that has at least two versions recorded up to
// asOf — its number and its versions, vs[i] being version i+1 — in the order of the keys'
// numbers (the order their first claims were recorded), until fn returns false. It reads the
// claims in one scan, keeps none of them (vs is reused after fn returns), and decodes only the
// claims of keys with more than one version: a key of one version cannot have two live claims.
func (ix *Index) EachKeyVersionsAsOf(asOf record.TxID, fn func(seq uint64, vs []CheckedClaim) bool) {
	var (
		cur   uint64
		raws  [][]byte
		vs    []CheckedClaim
		going = true
	)
	flush := func() {
		if len(raws) < 2 {
			return
		}
		vs = vs[:0]
		for i, b := range raws {
			s, err := decodeClaim(record.ClaimID{Version: i + 1}, b)
			if err != nil {
				corrupt(fmt.Sprintf("claim number %d@%d", cur, i+1), err)
			}
			if s.c.Tx > asOf {
				break
			}
			var revised []record.TxID
			for _, r := range s.revisedBy {
				revised = append(revised, r.tx)
			}
			vs = append(vs, checkedClaim(s, revised, asOf))
		}
		if len(vs) >= 2 {
			going = fn(cur, vs)
		}
	}
	ix.scan(bClaim, nil, kv.ScanOptions{}, func(k, b []byte) bool {
		seq, rest, ok1 := encoding.Uint(k)
		ver, rest, ok2 := encoding.Uint(rest)
		if !ok1 || !ok2 || len(rest) > 0 || ver < 1 {
			corrupt(fmt.Sprintf("claim %q", k), fmt.Errorf("%w: bad key", encoding.ErrCorrupt))
		}
		if seq != cur || len(raws) == 0 {
			flush()
			if !going {
				return false
			}
			cur, raws = seq, raws[:0]
		}
		if int(ver) != len(raws)+1 {
			corrupt(fmt.Sprintf("claim number %d@%d", seq, ver), fmt.Errorf("%w: after version %d", encoding.ErrCorrupt, len(raws)))
		}
		raws = append(raws, b)
		return true
	})
	if going {
		flush()
	}
}
