package index

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/lifecycle"
	"github.com/mql-dev/mql/graphstore/record"
)

// The write side: Apply stores a transaction's records and changes the index entries they
// touch, in the write transaction of a write handle. A handle shows what it applied at once
// (its head moves to the transaction), so a group commit's later writers build on the earlier
// ones; nothing of it reaches another snapshot before the kv transaction commits.

// ErrInvalid is wrapped by Apply's errors: the transaction does not follow from the store (a
// reference that does not resolve, a version out of order). Writers check transactions
// (codec.Chain) before they apply them, so it means a bug or a damaged store.
var ErrInvalid = errors.New("transaction does not apply")

// Mark counts the records of a transaction that are applied already: a staged build (see
// graphstore.Store.WriteStaged) applies its transaction in parts.
type Mark struct {
	principals, grants, sources, decays, claims, revocations, confirmations, artifacts, tokens, tokenRevocations, reviews int
	retrievals, outcomes                                                                                                  int
}

// MarkOf is the mark after every record of tx.
func MarkOf(tx *record.Tx) Mark {
	return Mark{len(tx.Principals), len(tx.Grants), len(tx.Sources), len(tx.Decays), len(tx.Claims), len(tx.Revocations),
		len(tx.Confirmations), len(tx.Artifacts), len(tx.Tokens), len(tx.TokenRevocations), len(tx.Reviews),
		len(tx.Retrievals), len(tx.Outcomes)}
}

// Since is a transaction with tx's id, time and author holding only the records after m.
func Since(tx *record.Tx, m Mark) *record.Tx {
	return &record.Tx{ID: tx.ID, Time: tx.Time, By: tx.By,
		Principals: tx.Principals[m.principals:], Grants: tx.Grants[m.grants:], Sources: tx.Sources[m.sources:],
		Decays: tx.Decays[m.decays:], Claims: tx.Claims[m.claims:], Revocations: tx.Revocations[m.revocations:],
		Confirmations: tx.Confirmations[m.confirmations:], Artifacts: tx.Artifacts[m.artifacts:], Tokens: tx.Tokens[m.tokens:],
		TokenRevocations: tx.TokenRevocations[m.tokenRevocations:], Reviews: tx.Reviews[m.reviews:],
		Retrievals: tx.Retrievals[m.retrievals:], Outcomes: tx.Outcomes[m.outcomes:]}
}

// Writer returns a write handle over w: a snapshot of what w holds that Apply extends. cache,
// if not nil, is the process's: the handle reads entries it has not changed from it.
func Writer(w kv.Writer, cache *Cache) (*Index, error) {
	ix, err := Open(w, cache)
	if err != nil {
		return nil, err
	}
	return ix.writer(w), nil
}

// WriterEarlier is Writer, without a cache, over a store of this format or an earlier one
// (OpenEarlier): the replay that a check of a store of an earlier format compares it with,
// which writes what that format holds, and so no text index.
func WriterEarlier(w kv.Writer) (*Index, error) {
	ix, err := OpenEarlier(w)
	if err != nil {
		return nil, err
	}
	f, err := Format(w)
	if err != nil {
		return nil, err
	}
	ix.earlier = encoding.Earlier(f)
	return ix.writer(w), nil
}

func (ix *Index) writer(w kv.Writer) *Index {
	ix.w = w
	ix.insert = false
	if ix.cache != nil {
		// What a cache must not serve, and must drop once committed. A handle without one (an
		// import's, a check's replay) keeps neither: its maps were a tenth of an import's
		// allocations.
		ix.dirty = map[string]bool{}
		ix.touched = map[string]bool{}
	}
	return ix
}

// applying is what a write handle knows of the transaction it is applying.
type applying struct {
	hdr     *txHeader
	tx      *record.Tx
	newRuns int // runs first recorded by it so far
}

// Apply stores tx (the records after m; m zero for all of it) and the index entries it
// changes. tx must be the transaction after the handle's head, or, with m not zero, the one
// being applied in parts. On an error the kv transaction holds a part of it: roll it back.
func (ix *Index) Apply(tx *record.Tx, m Mark) (err error) {
	if ix.w == nil {
		return errors.New("index: Apply needs a write handle")
	}
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*Fault)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	first := m == (Mark{})
	switch {
	case first && tx.ID != ix.st.head+1:
		return fmt.Errorf("%w: tx %d after tx %d", ErrInvalid, tx.ID, ix.st.head)
	case !first && (ix.cur == nil || ix.cur.tx != tx):
		return fmt.Errorf("%w: tx %d is not the one being applied", ErrInvalid, tx.ID)
	}
	if first {
		ix.toFile = ix.toFile[:0] // what a failed Apply left
		ix.cur = &applying{tx: tx, hdr: &txHeader{id: tx.ID, time: tx.Time, by: tx.By, meta: tx.Meta}}
		ix.st.head, ix.head = tx.ID, tx.ID
		if tx.Meta != nil {
			ix.st.owner, ix.st.strict = tx.Meta.Owner, tx.Meta.Strict
			ix.put(bMeta, slices.Clone(metaStore), encodeStoreMeta(tx.Meta.Owner, tx.Meta.Strict))
		}
	}
	a := ix.cur
	h := a.hdr
	part := Since(tx, m)
	for i, p := range part.Principals {
		ix.put(bPrincipal, []byte(p.Name), encodePrincipal(p, m.principals+i))
		h.principals = append(h.principals, p.Name)
	}
	for i, g := range part.Grants {
		ix.put(bGrant, []byte(g.ID), encodeGrant(g))
		ix.put(bGrantee, granteeKey(g.Grantee, tx.ID, m.grants+i), []byte(g.ID))
	}
	for _, s := range part.Sources {
		if ix.get(bSource, []byte(s.ID)) == nil {
			ix.put(bSource, []byte(s.ID), encodeSource(s))
		}
		h.sources = append(h.sources, s.ID)
	}
	for i, d := range part.Decays {
		id := canonicalID(prefDecay, tx.ID, m.decays+i+1)
		ix.put(bDecay, []byte(id), encodeDecay(d))
		p := ix.predCopy(d.Predicate)
		p.decays = append(p.decays, decayOf{tx: d.Tx, halfLife: d.HalfLife})
		ix.putPred(d.Predicate, p)
	}
	for _, c := range part.Claims {
		if err := ix.addClaim(c, h); err != nil {
			return err
		}
	}
	for _, r := range part.Revocations {
		if err := ix.addRevocation(tx, r); err != nil {
			return err
		}
	}
	for _, c := range part.Confirmations {
		e := ix.claim(c.Claim)
		if e == nil {
			return fmt.Errorf("%w: confirmation %s of unknown claim %s", ErrInvalid, c.ID, c.Claim)
		}
		s := e.copyStored()
		s.confirmations = append(s.confirmations, event{c.ID, c.Tx})
		ix.putClaim(e.keySeq, s)
		ix.put(bConfirmation, []byte(c.ID), encodeConfirmation(c, e.keySeq))
	}
	for _, x := range part.Artifacts {
		if err := ix.addArtifact(x, h); err != nil {
			return err
		}
	}
	for i, k := range part.Tokens {
		ix.put(bToken, []byte(k.ID), (&storedToken{t: k, n: m.tokens + i}).encode())
		h.tokens = append(h.tokens, k.ID)
	}
	for _, r := range part.TokenRevocations {
		t := ix.token(r.Token)
		if t == nil {
			return fmt.Errorf("%w: revocation %s of unknown token %s", ErrInvalid, r.ID, r.Token)
		}
		if t.revoked == nil {
			c := *t
			c.revoked = &event{r.ID, r.Tx}
			ix.put(bToken, []byte(r.Token), c.encode())
		}
		ix.put(bTokenRev, []byte(r.ID), encodeTokenRev(r))
	}
	for _, r := range part.Reviews {
		n := ix.artifact(r.Artifact)
		if n == nil {
			return fmt.Errorf("%w: review %s of unknown artifact %s", ErrInvalid, r.ID, r.Artifact)
		}
		s := n.copyStored()
		s.reviews = append(s.reviews, event{r.ID, r.Tx})
		ix.putArtifact(n.nameSeq, s)
		ix.put(bReview, []byte(r.ID), encodeReview(r, n.nameSeq))
	}
	if err := ix.addRunRecords(tx, part, m); err != nil {
		return err
	}
	all := MarkOf(tx)
	h.grants = listOf(prefGrant, tx.ID, idsOf(tx.Grants[:all.grants], func(g *record.Grant) string { return g.ID }))
	h.revocations = listOf(prefRevocation, tx.ID, idsOf(tx.Revocations, func(r *record.Revocation) string { return r.ID }))
	h.confirmations = listOf(prefConfirmation, tx.ID, idsOf(tx.Confirmations, func(c *record.Confirmation) string { return c.ID }))
	h.reviews = listOf(prefReview, tx.ID, idsOf(tx.Reviews, func(r *record.Review) string { return r.ID }))
	h.decays = idList{n: len(tx.Decays)}
	h.tokenRevs = listOf(prefTokenRev, tx.ID, idsOf(tx.TokenRevocations, func(r *record.TokenRevocation) string { return r.ID }))
	h.retrievals = listOf(prefRetrieval, tx.ID, idsOf(tx.Retrievals, func(r *record.Retrieval) string { return r.ID }))
	h.outcomes = listOf(prefOutcome, tx.ID, idsOf(tx.Outcomes, func(o *record.Outcome) string { return o.ID }))
	ix.flushText()
	ix.flushVectors(tx.ID)
	h.counts = [4]uint64{ix.st.claims, ix.st.artifacts, ix.st.keys, ix.st.names}
	ix.put(bTx, txKey(tx.ID), h.encode())
	return nil
}

func idsOf[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

// put writes an entry and drops what the handle's memo held for it.
func (ix *Index) put(b kv.Bucket, key, value []byte) {
	if err := ix.w.Put(b, key, encoding.Seal(value)); err != nil {
		fault(err)
	}
	ix.puts++
	ix.counted()
	ix.forget(b, key)
	if mutable[b] && ix.touched != nil {
		ix.touched[string(append([]byte{byte(b)}, key...))] = true
	}
}

// mutable are the buckets whose entries a later transaction rewrites: the ones a cache must
// drop when they change. Every other record is written once.
var mutable = [nBuckets]bool{bKey: true, bClaim: true, bPred: true, bArt: true, bArtVersion: true, bToken: true, bRun: true}

// changed says that what is cached under key in b (a list read by prefix) changed.
func (ix *Index) changed(b kv.Bucket, key []byte) {
	ix.forget(b, key)
	if ix.touched != nil {
		ix.touched[string(append([]byte{byte(b)}, key...))] = true
	}
}

func (ix *Index) del(b kv.Bucket, key []byte) {
	if err := ix.w.Delete(b, key); err != nil {
		fault(err)
	}
	ix.forget(b, key)
}

func (ix *Index) putKey(ke *keyEntry) { ix.put(bKey, keyKey(ke.key), ke.encode()) }

func (ix *Index) putClaim(keySeq uint64, s *storedClaim) {
	ix.put(bClaim, claimKey(keySeq, s.c.ID.Version), s.encode())
}

func (ix *Index) putArtifact(nameSeq uint64, s *storedArtifact) {
	ix.put(bArtVersion, artVersionKey(nameSeq, s.a.ID.Version), s.encode())
}

func (ix *Index) putPred(p string, e *predEntry) { ix.put(bPred, []byte(p), e.encode()) }

// copyStored is a copy of the claim's stored form that the writer may change: entries a
// handle reads may be shared with the cache and other snapshots.
func (e *ClaimEntry) copyStored() *storedClaim {
	s := *e.s
	s.revisedBy = slices.Clip(s.revisedBy)
	s.revocations = slices.Clip(s.revocations)
	s.promotions = slices.Clip(s.promotions)
	s.confirmations = slices.Clip(s.confirmations)
	return &s
}

func (n *ArtifactNode) copyStored() *storedArtifact {
	s := *n.s
	s.revisedBy = slices.Clip(s.revisedBy)
	s.reviews = slices.Clip(s.reviews)
	return &s
}

func (ix *Index) keyCopy(k record.Key) *keyEntry {
	ke := ix.keyEntry(k)
	if ke == nil {
		return nil
	}
	c := *ke
	c.slots = slices.Clone(ke.slots)
	return &c
}

func (ix *Index) predCopy(p string) *predEntry {
	e := ix.pred(p)
	if e == nil {
		return &predEntry{}
	}
	return &predEntry{types: slices.Clip(e.types), decays: slices.Clip(e.decays)}
}

func (ix *Index) addClaim(c *record.Claim, h *txHeader) error {
	ke := ix.keyCopy(c.ID.Key)
	if ke == nil {
		ke = &keyEntry{key: c.ID.Key, seq: ix.st.keys}
		ix.st.keys++
		ix.put(bKeyName, u(nil, ke.seq), keyKey(c.ID.Key))
		ix.put(bPredKey, append(encoding.AppendName(nil, c.ID.Predicate), c.ID.Subject...), nil)
		ix.changed(subjectKeys, encoding.AppendName(nil, c.ID.Subject))
	}
	if c.ID.Version != ke.n+1 {
		return fmt.Errorf("%w: %s recorded after version %d", ErrInvalid, c.ID, ke.n)
	}
	aud := Audience(c.SeenBy)
	i := ke.slotOf(aud)
	if i < 0 {
		i = len(ke.slots)
		ke.slots = append(ke.slots, slotEntry{audience: aud, seenBy: splitAudience(aud), first: c.ID.Version, firstSeq: ix.st.claims, firstTx: c.Tx})
	}
	if ix.judge {
		if err := ix.judgeRelation(ke, i, c); err != nil {
			return err
		}
	}
	s := &storedClaim{c: c, seq: ix.st.claims, slot: i, listing: ke.slots[i].firstSeq}
	ix.st.claims++
	ke.n, ke.lastTx = c.ID.Version, c.Tx
	ke.slots[i].tx = c.Tx
	if c.Supersedes != nil {
		old := ix.claimAt(c.ID.Key, ke.seq, c.Supersedes.Version)
		if old == nil {
			return fmt.Errorf("%w: %s supersedes unknown claim %s", ErrInvalid, c.ID, c.Supersedes)
		}
		os := old.copyStored()
		os.revisedBy = append(os.revisedBy, revision{c.ID.Version, c.Tx})
		ix.putClaim(ke.seq, os)
	}
	ix.putClaim(ke.seq, s)
	ix.addText(c, ke.seq, s.seq)
	if err := ix.addVector(c, ke.seq, s.seq); err != nil {
		return err
	}
	if lifecycle.RelationOf(c).BecomesLive() {
		ix.setLive(ke, i, c)
	}
	ix.putKey(ke)
	if p := ix.pred(c.ID.Predicate); p == nil || !slices.ContainsFunc(p.types, func(t valueTypeOf) bool { return Audience(t.seenBy) == aud }) {
		np := ix.predCopy(c.ID.Predicate)
		np.types = append(np.types, valueTypeOf{seenBy: c.SeenBy, tx: c.Tx, typ: c.Value.Type})
		ix.putPred(c.ID.Predicate, np)
	}
	h.claims = append(h.claims, ref{ke.seq, c.ID.Version})
	return nil
}

// JudgeRelations makes the handle refuse a claim whose recorded relation is not the one
// lifecycle.Relate gives against its slot's live claim: what the Store's writers get, so that
// no write through the graphstore API can leave two live claims in one slot. (An import judges
// the file with the checker instead, which names the line.)
func (ix *Index) JudgeRelations() { ix.judge = true }

func (ix *Index) judgeRelation(ke *keyEntry, i int, c *record.Claim) error {
	tx := ix.cur.tx
	var live *ClaimEntry
	if v := ke.slots[i].live; v != 0 {
		live = ix.claimAt(ke.key, ke.seq, v)
		if live != nil && !live.ValidUntil.IsZero() && !tx.Time.Before(live.ValidUntil) {
			live = nil // expired: the key has no live claim
		}
	}
	var kind record.Kind
	var value record.Value
	if live != nil {
		kind, value = live.Kind, live.Value
		if cs := live.s.confirmations; len(cs) > 0 {
			kind = record.Confirmed
		}
	}
	want := lifecycle.Relate(live != nil, kind, value, c.Kind, c.Value)
	got := lifecycle.RelationOf(c)
	named := 0
	for _, r := range []*record.ClaimID{c.Supersedes, c.Contests, c.Corroborates} {
		if r != nil {
			named = r.Version
		}
	}
	switch {
	case got != want:
		return fmt.Errorf("%w: %s is recorded as a claim that %s, where the rule says it %s", ErrInvalid, c.ID, relationWord(got), relationWord(want))
	case live != nil && named != live.ID.Version:
		return fmt.Errorf("%w: %s names %s@%d, but %s is live", ErrInvalid, c.ID, ke.key, named, live.ID)
	}
	return nil
}

func relationWord(r lifecycle.Relation) string {
	switch r {
	case lifecycle.Supersedes:
		return "supersedes the live claim"
	case lifecycle.Contests:
		return "contests the live claim"
	case lifecycle.Corroborates:
		return "corroborates the live claim"
	}
	return "is live with no live claim before it"
}

// setLive makes c (nil: none) the live claim of slot i of ke and files it under its value in
// the live index. The caller writes ke.
func (ix *Index) setLive(ke *keyEntry, i int, c *record.Claim) {
	s := &ke.slots[i]
	version := 0
	if c != nil {
		version = c.ID.Version
	}
	if s.live == version {
		return
	}
	if s.live != 0 {
		old := ix.claimAt(ke.key, ke.seq, s.live)
		if old == nil {
			fault(fmt.Errorf("%w: the live claim %s@%d is missing", encoding.ErrCorrupt, ke.key, s.live))
		}
		ix.del(bLive, liveKey(ke.key.Predicate, old.Value, ke.key.Subject, i))
	}
	s.live, s.until, s.inline, s.value = version, time.Time{}, false, record.Value{}
	if c != nil {
		s.until = c.ValidUntil
		e := enc{}
		e.Value(c.Value)
		if len(e.B) <= maxInline {
			s.inline, s.value = true, c.Value
		}
		negZero := c.Value.Type == record.Number && c.Value.Num == 0 && math.Signbit(c.Value.Num)
		ix.put(bLive, liveKey(ke.key.Predicate, c.Value, ke.key.Subject, i),
			liveEntry{version: version, until: c.ValidUntil, audience: s.audience, listing: s.firstSeq, negZero: negZero}.encode())
	}
}

func (ix *Index) addRevocation(tx *record.Tx, r *record.Revocation) error {
	ke := ix.keyCopy(r.Claim.Key)
	if ke == nil || r.Claim.Version > ke.n {
		return fmt.Errorf("%w: revocation %s of unknown claim %s", ErrInvalid, r.ID, r.Claim)
	}
	e := ix.claimAt(ke.key, ke.seq, r.Claim.Version)
	if e == nil {
		return fmt.Errorf("%w: revocation %s of %s, which the store lacks", ErrInvalid, r.ID, r.Claim)
	}
	s := e.copyStored()
	s.revocations = append(s.revocations, event{r.ID, r.Tx})
	ix.putClaim(ke.seq, s)
	ke.slots[e.slot].tx = tx.ID
	if ke.slots[e.slot].live == e.ID.Version {
		ix.setLive(ke, e.slot, nil)
	}
	if r.ReplacedBy != nil {
		if r.ReplacedBy.Key != r.Claim.Key || r.ReplacedBy.Version > ke.n {
			return fmt.Errorf("%w: revocation %s names unknown replacement %s", ErrInvalid, r.ID, r.ReplacedBy)
		}
		re := ix.claimAt(ke.key, ke.seq, r.ReplacedBy.Version)
		if re == nil {
			return fmt.Errorf("%w: revocation %s names %s, which the store lacks", ErrInvalid, r.ID, r.ReplacedBy)
		}
		rs := re.copyStored()
		rs.promotions = append(rs.promotions, event{r.ID, r.Tx})
		ix.putClaim(ke.seq, rs)
		ke.slots[re.slot].tx = tx.ID
		ix.setLive(ke, re.slot, re.Claim)
	}
	ix.putKey(ke)
	ix.put(bRevocation, []byte(r.ID), encodeRevocation(r, ke.seq))
	return nil
}

func (ix *Index) addArtifact(a *record.Artifact, h *txHeader) error {
	ae := ix.artEntry(a.ID.Name)
	var ne artEntry
	if ae == nil {
		ne = artEntry{name: a.ID.Name, seq: ix.st.names}
		ix.st.names++
		ix.put(bArtName, u(nil, ne.seq), []byte(a.ID.Name))
	} else {
		ne = *ae
	}
	if a.ID.Version != ne.n+1 {
		return fmt.Errorf("%w: %s recorded after version %d", ErrInvalid, a.ID, ne.n)
	}
	s := &storedArtifact{a: a, seq: ix.st.artifacts, inputs: make([]storedInput, len(a.DerivedFrom))}
	ix.st.artifacts++
	var deps [][]byte
	for i, in := range a.DerivedFrom {
		switch {
		case in.Claim != nil:
			ke := ix.keyEntry(in.Claim.Key)
			if ke == nil || in.Claim.Version < 1 || in.Claim.Version > ke.n {
				return fmt.Errorf("%w: %s derived from unknown claim %s", ErrInvalid, a.ID, in.Claim)
			}
			s.inputs[i] = storedInput{ref: ref{ke.seq, in.Claim.Version}}
			deps = append(deps, nodeKey(false, ke.seq, in.Claim.Version))
		case in.Artifact != nil:
			var seq uint64
			var n int
			if in.Artifact.Name == a.ID.Name {
				seq, n = ne.seq, ne.n
			} else if pe := ix.artEntry(in.Artifact.Name); pe != nil {
				seq, n = pe.seq, pe.n
			} else {
				return fmt.Errorf("%w: %s derived from unknown artifact %s", ErrInvalid, a.ID, in.Artifact)
			}
			if in.Artifact.Version < 1 || in.Artifact.Version > n {
				return fmt.Errorf("%w: %s derived from unknown artifact %s", ErrInvalid, a.ID, in.Artifact)
			}
			s.inputs[i] = storedInput{artifact: true, ref: ref{seq, in.Artifact.Version}}
			deps = append(deps, nodeKey(true, seq, in.Artifact.Version))
		default:
			return fmt.Errorf("%w: %s has an input that is neither a claim nor an artifact", ErrInvalid, a.ID)
		}
	}
	if a.Supersedes != nil {
		if a.Supersedes.Name != a.ID.Name || a.Supersedes.Version > ne.n {
			return fmt.Errorf("%w: %s supersedes unknown artifact %s", ErrInvalid, a.ID, a.Supersedes)
		}
		old := ix.artifactAt(a.ID.Name, ne.seq, a.Supersedes.Version)
		if old == nil {
			return fmt.Errorf("%w: %s supersedes %s, which the store lacks", ErrInvalid, a.ID, a.Supersedes)
		}
		os := old.copyStored()
		os.revisedBy = append(os.revisedBy, revision{a.ID.Version, a.Tx})
		ix.putArtifact(ne.seq, os)
	}
	ne.n, ne.lastTx = a.ID.Version, a.Tx
	ix.putArtifact(ne.seq, s)
	ix.put(bArt, []byte(a.ID.Name), ne.encode())
	val := enc{}
	val.ref(ref{ne.seq, a.ID.Version})
	for _, d := range deps {
		ix.put(bDep, u(d, s.seq), slices.Clone(val.B))
		ix.changed(bDep, d)
	}
	h.artifacts = append(h.artifacts, ref{ne.seq, a.ID.Version})
	return nil
}

// runCopy is the run k as stored, or a new one first recorded now, to be changed and written.
func (ix *Index) runCopy(k RunKey, tx record.TxID) *runEntry {
	if r := ix.runEntry(k); r != nil {
		c := *r
		c.retrievals, c.decisions, c.outcomes = slices.Clip(r.retrievals), slices.Clip(r.decisions), slices.Clip(r.outcomes)
		return &c
	}
	r := &runEntry{firstTx: tx, firstN: ix.cur.newRuns}
	ix.cur.newRuns++
	return r
}

func (ix *Index) putRun(k RunKey, r *runEntry) { ix.put(bRun, runKey(k.By, k.Name), r.encode()) }

// addRunRecords indexes the run decisions, retrievals and outcomes of part (tx after m).
func (ix *Index) addRunRecords(tx, part *record.Tx, m Mark) error {
	for _, a := range part.Artifacts {
		if a.Run == "" {
			continue
		}
		k := RunKey{a.By, a.Run}
		r := ix.runCopy(k, tx.ID)
		ae := ix.artEntry(a.ID.Name)
		if ae == nil {
			return fmt.Errorf("%w: run decision %s, which the store lacks", ErrInvalid, a.ID)
		}
		r.decisions = append(r.decisions, ref{ae.seq, a.ID.Version})
		ix.putRun(k, r)
	}
	for i, q := range part.Retrievals {
		claims := make([]ref, len(q.Claims))
		for j, c := range q.Claims {
			ke := ix.keyEntry(c.Key)
			if ke == nil || c.Version < 1 || c.Version > ke.n {
				return fmt.Errorf("%w: retrieval %s served unknown claim %s", ErrInvalid, q.ID, c)
			}
			claims[j] = ref{ke.seq, c.Version}
			ix.put(bServed, servedKey(nodeKey(false, ke.seq, c.Version), tx.ID, m.retrievals+i), []byte(q.ID))
		}
		arts := make([]ref, len(q.Artifacts))
		for j, a := range q.Artifacts {
			ae := ix.artEntry(a.Name)
			if ae == nil || a.Version < 1 || a.Version > ae.n {
				return fmt.Errorf("%w: retrieval %s served unknown artifact %s", ErrInvalid, q.ID, a)
			}
			arts[j] = ref{ae.seq, a.Version}
			ix.put(bServed, servedKey(nodeKey(true, ae.seq, a.Version), tx.ID, m.retrievals+i), []byte(q.ID))
		}
		ix.put(bRetrieval, []byte(q.ID), encodeRetrieval(q, claims, arts))
		k := RunKey{q.By, q.Run}
		r := ix.runCopy(k, tx.ID)
		r.retrievals = append(r.retrievals, event{q.ID, q.Tx})
		ix.putRun(k, r)
	}
	for _, o := range part.Outcomes {
		ix.put(bOutcome, []byte(o.ID), encodeOutcome(o))
		k := RunKey{o.By, o.Run}
		r := ix.runCopy(k, tx.ID)
		r.outcomes = append(r.outcomes, event{o.ID, o.Tx})
		ix.putRun(k, r)
	}
	return nil
}

// Puts is the number of entries the handle wrote.
func (ix *Index) Puts() int { return ix.puts }

// entriesPerCall is how often the Index calls the function Every gave it.
const entriesPerCall = 256

// Every has the Index call fn every few hundred entries it reads from its kv store or writes
// to it, in the middle of reading or applying a transaction: a bulk reader or writer (an
// import, a check) bounds there what the lookups of one large transaction map of a bbolt file
// (each page read maps the 64 KiB around it).
func (ix *Index) Every(fn func()) { ix.every = fn }

func (ix *Index) counted() {
	if ix.every != nil {
		if ix.entries++; ix.entries%entriesPerCall == 0 {
			ix.every()
		}
	}
}

// Touched lists the cache keys of the entries the handle changed since it was made (or since
// the last call), for Cache.Advance once its transaction committed.
func (ix *Index) Touched() []string {
	out := make([]string, 0, len(ix.touched))
	for k := range ix.touched {
		out = append(out, k)
	}
	clear(ix.touched)
	return out
}
