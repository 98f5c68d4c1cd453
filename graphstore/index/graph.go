package index

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// What a quad store over the index (package graphstore/cayleygraph) needs besides the View's
// reads: records by their id, and each record's place among the records of its kind in its
// transaction, which the quad vocabulary writes as urn:mql:ord. Everything here reads as of
// the view's transaction and ignores the perception filter: it is for the owner's graph.

// Kind is a kind of record found by its id.
type Kind int

const (
	KindPrincipal Kind = iota
	KindGrant
	KindSource
	KindRevocation
	KindConfirmation
	KindReview
	KindToken
	KindTokenRevocation
	KindRetrieval
	KindOutcome
)

// Placed is a record with its place among the records of its kind in its transaction.
type Placed struct {
	Rec any // *record.Principal, *record.Grant, *record.Revocation, …
	Ord int
}

// Record returns the record of kind k and id recorded within the view (a principal's id is its
// name, a source's its key, SourceKey), with its place in its transaction; nil when the view
// holds none.
func (v *View) Record(k Kind, id string) (any, int) {
	ix := v.ix
	var rec any
	var tx record.TxID
	switch k {
	case KindPrincipal:
		p := ix.principal(id)
		if p == nil || !v.in(p.Tx) {
			return nil, 0
		}
		return p.Principal, p.n
	case KindSource:
		s := ix.source(id)
		if s == nil || !v.in(s.Tx) {
			return nil, 0
		}
		h := ix.txHeader(s.Tx)
		for i, x := range h.sources {
			if x == id {
				return s, i
			}
		}
		return nil, 0
	case KindToken:
		t := ix.token(id)
		if t == nil || !v.in(t.t.Tx) {
			return nil, 0
		}
		return t.t, t.n
	case KindGrant:
		if g := ix.grant(id); g != nil {
			rec, tx = g, g.Tx
		}
	case KindRevocation:
		if r := ix.revocation(id); r != nil {
			rec, tx = r, r.Tx
		}
	case KindConfirmation:
		if c := ix.confirmation(id); c != nil {
			rec, tx = c, c.Tx
		}
	case KindReview:
		if r := ix.review(id); r != nil {
			rec, tx = r, r.Tx
		}
	case KindTokenRevocation:
		if r := ix.tokenRev(id); r != nil {
			rec, tx = r, r.Tx
		}
	case KindRetrieval:
		if q := ix.retrieval(id); q != nil {
			rec, tx = q, q.Tx
		}
	case KindOutcome:
		if o := ix.outcome(id); o != nil {
			rec, tx = o, o.Tx
		}
	}
	if rec == nil || !v.in(tx) {
		return nil, 0
	}
	h := ix.txHeader(tx)
	if h == nil {
		return nil, 0
	}
	var l idList
	var prefix string
	switch k {
	case KindGrant:
		l, prefix = h.grants, prefGrant
	case KindRevocation:
		l, prefix = h.revocations, prefRevocation
	case KindConfirmation:
		l, prefix = h.confirmations, prefConfirmation
	case KindReview:
		l, prefix = h.reviews, prefReview
	case KindTokenRevocation:
		l, prefix = h.tokenRevs, prefTokenRev
	case KindRetrieval:
		l, prefix = h.retrievals, prefRetrieval
	case KindOutcome:
		l, prefix = h.outcomes, prefOutcome
	}
	if i := l.place(prefix, tx, id); i >= 0 {
		return rec, i
	}
	return nil, 0
}

// place is the place of id in the list, -1 if it holds none.
func (l idList) place(prefix string, tx record.TxID, id string) int {
	if l.ids != nil {
		for i, x := range l.ids {
			if x == id {
				return i
			}
		}
		return -1
	}
	head := prefix + strconv.FormatInt(int64(tx), 10) + "."
	rest, ok := strings.CutPrefix(id, head)
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 1 || n > l.n || canonicalID(prefix, tx, n) != id {
		return -1
	}
	return n - 1
}

// Decay is the i-th decay declared by transaction tx (from 0), if the view holds it.
func (v *View) Decay(tx record.TxID, i int) *record.Decay {
	if !v.in(tx) || tx < 1 {
		return nil
	}
	h := v.ix.txHeader(tx)
	if h == nil || i < 0 || i >= h.decays.n {
		return nil
	}
	return v.ix.decay(h.decays.id(prefDecay, tx, i))
}

// ClaimOrd is the place of a claim among the claims of its transaction.
func (v *View) ClaimOrd(e *ClaimEntry) int {
	if h := v.ix.txHeader(e.Tx); h != nil {
		for i, r := range h.claims {
			if r.seq == e.keySeq && r.version == e.ID.Version {
				return i
			}
		}
	}
	corrupt("claim "+e.ID.String(), errNotInTx)
	return 0
}

// ArtifactOrd is the place of an artifact version among the artifact versions of its
// transaction.
func (v *View) ArtifactOrd(n *ArtifactNode) int {
	if h := v.ix.txHeader(n.Tx); h != nil {
		for i, r := range h.artifacts {
			if r.seq == n.nameSeq && r.version == n.ID.Version {
				return i
			}
		}
	}
	corrupt("artifact "+n.ref, errNotInTx)
	return 0
}

// Revocations lists every revocation of a claim within the view, in the order recorded (the
// first is the one that counts; Revocation gives it).
func (v *View) Revocations(e *ClaimEntry) []Placed {
	return v.placedEvents(KindRevocation, e.s.revocations)
}

// Confirmations lists every confirmation of a claim within the view, in the order recorded.
func (v *View) Confirmations(e *ClaimEntry) []Placed {
	return v.placedEvents(KindConfirmation, e.s.confirmations)
}

func (v *View) placedEvents(k Kind, evs []event) []Placed {
	var out []Placed
	for _, x := range evs {
		if !v.in(x.tx) {
			break
		}
		if rec, ord := v.Record(k, x.id); rec != nil {
			out = append(out, Placed{rec, ord})
		}
	}
	return out
}

// TokenRevocations lists every revocation of token id within the view (a token keeps only
// the first; the store holds every one recorded). It reads every token revocation.
func (v *View) TokenRevocations(id string) []Placed {
	var out []Placed
	v.ix.scan(bTokenRev, nil, kv.ScanOptions{}, func(k, b []byte) bool {
		r, err := decodeTokenRev(string(k), b)
		if err != nil {
			corrupt("token revocation "+string(k), err)
		}
		if r.Token == id && v.in(r.Tx) {
			if rec, ord := v.Record(KindTokenRevocation, r.ID); rec != nil {
				out = append(out, Placed{rec, ord})
			}
		}
		return true
	})
	return out
}

// errNotInTx: a record is not listed by the transaction it names.
var errNotInTx = fmt.Errorf("%w: not listed by its transaction", encoding.ErrCorrupt)

// DecaysOf lists the decays declared for predicate within the view, in the order declared,
// each with its place among the decays of its transaction.
func (v *View) DecaysOf(predicate string) []Placed {
	p := v.ix.pred(predicate)
	if p == nil {
		return nil
	}
	var out []Placed
	var last record.TxID
	for _, d := range p.decays {
		if !v.in(d.tx) {
			break
		}
		if d.tx == last {
			continue // a transaction that declared several: all found the first time
		}
		last = d.tx
		h := v.ix.txHeader(d.tx)
		if h == nil {
			continue
		}
		for i := range h.decays.n {
			if x := v.ix.decay(h.decays.id(prefDecay, d.tx, i)); x != nil && x.Predicate == predicate {
				out = append(out, Placed{x, i})
			}
		}
	}
	return out
}
