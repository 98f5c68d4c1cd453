package index

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mql-dev/mql/authority"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/lifecycle"
	"github.com/mql-dev/mql/graphstore/record"
)

// View is the store as one reader may see it: transactions up to AsOf only, judged at time Now
// (for valid-time expiry and decay), and only what Viewer may perceive. Every lookup goes
// through these three filters, so a caller holding a View cannot see past them. The zero
// Viewer (or the owner) sees every claim.
//
// A View borrows its snapshot: use it only while the snapshot is open.
type View struct {
	ix     *Index
	asOf   record.TxID
	now    time.Time
	viewer string
	all    *View // the same view without the perception filter, made on first use
}

// View returns a view as of transaction asOf (0 or beyond the head: the head), judged at now,
// for viewer ("" for the owner).
func (ix *Index) View(asOf record.TxID, now time.Time, viewer string) *View {
	if asOf <= 0 || asOf > ix.Head() {
		asOf = ix.Head()
	}
	if viewer == ix.st.owner {
		viewer = ""
	}
	return &View{ix: ix, asOf: asOf, now: now, viewer: viewer}
}

func (v *View) AsOf() record.TxID      { return v.asOf }
func (v *View) Now() time.Time         { return v.now }
func (v *View) Viewer() string         { return v.viewer }
func (v *View) Meta() record.StoreMeta { return v.ix.Meta() }
func (v *View) in(tx record.TxID) bool { return tx <= v.asOf }
func (v *View) Index() *Index          { return v.ix }
func (v *View) IsOwnerView() bool      { return v.viewer == "" }

// atHead reports whether the view is as of the snapshot's newest transaction, where the
// index's entries for the head (the live claims by value) apply as they are.
func (v *View) atHead() bool { return v.asOf == v.ix.st.head }

// All is the same view without the perception filter: what the store holds as of the view.
// Rules that are facts of the store (review state, the confidence cap) are judged on it; what
// is shown to the reader must still go through v.
func (v *View) All() *View {
	if v.viewer == "" {
		return v
	}
	if v.all == nil {
		v.all = &View{ix: v.ix, asOf: v.asOf, now: v.now}
	}
	return v.all
}

// Tx returns a transaction within the view, with every record it holds, or nil.
func (v *View) Tx(id record.TxID) *record.Tx {
	if !v.in(id) {
		return nil
	}
	return v.ix.Tx(id)
}

// TxTime is the time of a transaction (zero if outside the view).
func (v *View) TxTime(id record.TxID) time.Time {
	if id < 1 || !v.in(id) {
		return time.Time{}
	}
	return v.ix.txTime(id)
}

// CanSee reports whether the viewer may perceive something seen by seenBy (empty: everyone).
func (v *View) CanSee(seenBy []string) bool {
	return v.viewer == "" || authority.CanSee(v.ix.st.owner, v.viewer, seenBy) // "": the owner
}

// Principal returns a principal recorded within the view, or nil.
func (v *View) Principal(name string) *record.Principal {
	p := v.ix.principal(name)
	if p == nil || !v.in(p.Tx) {
		return nil
	}
	return p.Principal
}

// Principals lists the principals within the view, in the order they were recorded.
func (v *View) Principals() []*record.Principal {
	var ps []*principalEntry
	v.ix.scan(bPrincipal, nil, kv.ScanOptions{}, func(k, b []byte) bool {
		p, n, err := decodePrincipal(string(k), b)
		if err != nil {
			corrupt("principal "+string(k), err)
		}
		if v.in(p.Tx) {
			ps = append(ps, &principalEntry{p, n})
		}
		return true
	})
	slices.SortFunc(ps, func(a, b *principalEntry) int {
		return cmp.Or(cmp.Compare(a.Tx, b.Tx), cmp.Compare(a.n, b.n))
	})
	out := make([]*record.Principal, len(ps))
	for i, p := range ps {
		out[i] = p.Principal
	}
	return out
}

// Grant returns the grant recorded as id within the view, or nil.
func (v *View) Grant(id string) *record.Grant {
	if g := v.ix.grant(id); g != nil && v.in(g.Tx) {
		return g
	}
	return nil
}

// Grants returns the grants held by grantee within the view, in the order given.
func (v *View) Grants(grantee string) []*record.Grant {
	var out []*record.Grant
	prefix := encoding.AppendName(nil, grantee)
	v.ix.scan(bGrantee, prefix, kv.ScanOptions{}, func(k, id []byte) bool {
		tx, _, ok := encoding.Uint(k[len(prefix):])
		if !ok {
			corrupt("grantee "+grantee, encoding.ErrCorrupt)
		}
		if !v.in(record.TxID(tx)) {
			return false
		}
		if g := v.ix.grant(string(id)); g != nil {
			out = append(out, g)
		}
		return true
	})
	return out
}

// Source returns a source recorded within the view, or nil.
func (v *View) Source(id string) *record.Source {
	s := v.ix.source(id)
	if s == nil || !v.in(s.Tx) {
		return nil
	}
	return s
}

// HalfLife is the half-life declared for predicate within the view (0: no decay).
func (v *View) HalfLife(predicate string) time.Duration {
	p := v.ix.pred(predicate)
	if p == nil {
		return 0
	}
	hl := time.Duration(0)
	for _, d := range p.decays {
		if !v.in(d.tx) {
			break
		}
		hl = d.halfLife
	}
	return hl
}

// ValueType is the type of the first claim of predicate that the viewer may see within the
// view, if any: the type a new claim of the viewer's must have. It consults nothing the viewer
// may not see, so being refused tells a principal nothing about claims hidden from it; the
// owner, and a principal who may see several audiences, may therefore see a predicate hold
// values of more than one type.
func (v *View) ValueType(predicate string) (record.ValueType, bool) {
	p := v.ix.pred(predicate)
	if p == nil {
		return "", false
	}
	for _, t := range p.types {
		if v.in(t.tx) && v.CanSee(t.seenBy) {
			return t.typ, true
		}
	}
	return "", false
}

// visibleClaim reports whether e exists in the view and the viewer may see it.
func (v *View) visibleClaim(e *ClaimEntry) bool {
	return e != nil && v.in(e.Tx) && v.CanSee(e.SeenBy)
}

// Claim returns a visible claim version, or nil.
func (v *View) Claim(id record.ClaimID) *ClaimEntry {
	e := v.ix.claim(id)
	if !v.visibleClaim(e) {
		return nil
	}
	return e
}

// versionsOf calls fn with each version of ke within the view, oldest first, until it returns
// false.
func (v *View) versionsOf(ke *keyEntry, fn func(*ClaimEntry) bool) {
	for ver := 1; ver <= ke.n; ver++ {
		e := v.ix.claimAt(ke.key, ke.seq, ver)
		if e == nil || !v.in(e.Tx) || !fn(e) {
			return
		}
	}
}

// Versions returns the visible versions of key, oldest first.
func (v *View) Versions(k record.Key) []*ClaimEntry {
	ke := v.ix.keyEntry(k)
	if ke == nil {
		return nil
	}
	var out []*ClaimEntry
	v.versionsOf(ke, func(e *ClaimEntry) bool {
		if v.CanSee(e.SeenBy) {
			out = append(out, e)
		}
		return true
	})
	return out
}

// HasVersions reports whether key has a version the viewer may see within the view.
func (v *View) HasVersions(k record.Key) bool {
	_, ok := v.firstSeen(v.ix.keyEntry(k))
	return ok
}

// VersionCount is the number of versions of key recorded within the view, visible or not.
// Writers use it to number the next version; readers must use Versions.
func (v *View) VersionCount(k record.Key) int {
	ke := v.ix.keyEntry(k)
	if ke == nil {
		return 0
	}
	if v.in(ke.lastTx) {
		return ke.n
	}
	n := ke.n
	for n > 0 {
		if e := v.ix.claimAt(k, ke.seq, n); e != nil && v.in(e.Tx) {
			break
		}
		n--
	}
	return n
}

// Audience names who may perceive a claim: its seen-by principals, sorted and joined by ",";
// "" for everyone. Claims of one key with different audiences are separate memories — the
// architect's impression of a player and the engine's record of it — so supersession and
// contest relate only claims of the same key and audience, and each audience has at most one
// live claim per key. That keeps what one audience cannot see from changing what it can.
func Audience(seenBy []string) string {
	if len(seenBy) == 0 {
		return ""
	}
	s := slices.Clone(seenBy)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// EachLive calls fn with each live claim of key the viewer may see (at most one per audience,
// in the order each audience first claimed it) until fn returns false.
func (v *View) EachLive(k record.Key, fn func(*ClaimEntry) bool) {
	if ke := v.ix.keyEntry(k); ke != nil {
		for i := range ke.slots {
			if e := v.liveInSlot(ke, i); v.visibleClaim(e) && !fn(e) {
				return
			}
		}
	}
}

// LiveRef is a live claim as its key's entry knows it, without its record: enough to match it,
// order it as a find lists it (CompareLive) and name it. Reading it needs no claim record
// when the value is small; a find reads thousands.
type LiveRef struct {
	ID      record.ClaimID
	Value   record.Value
	listing uint64
}

// CompareLive orders live claims as a find lists them: by the first claim of their key and
// audience, in the order recorded. It looks at nothing but the claims' own audiences, so a
// reader who may see both gets them in the same order whatever else the store holds (ordering
// keys by their very first claim would let a claim the reader may not see move a key ahead).
func CompareLive(a, b LiveRef) int { return cmp.Compare(a.listing, b.listing) }

func liveOf(e *ClaimEntry) LiveRef { return LiveRef{ID: e.ID, Value: e.Value, listing: e.listing} }

// EachLiveRef calls fn with each live claim of key the viewer may see, as EachLive does.
func (v *View) EachLiveRef(k record.Key, fn func(LiveRef) bool) {
	if ke := v.ix.keyEntry(k); ke != nil {
		v.eachLiveRefOfKey(ke, fn)
	}
}

func (v *View) eachLiveRefOfKey(ke *keyEntry, fn func(LiveRef) bool) bool {
	for i := range ke.slots {
		s := &ke.slots[i]
		if !v.in(s.firstTx) || !v.CanSee(s.seenBy) {
			continue
		}
		if v.in(s.tx) && (s.live == 0 || s.inline) {
			// The slot's live claim is live by the fold as of any transaction from s.tx on;
			// only valid time is left to judge.
			if s.live == 0 || !s.until.IsZero() && !v.now.Before(s.until) {
				continue
			}
			if !fn(LiveRef{ID: record.ClaimID{Key: ke.key, Version: s.live}, Value: s.value, listing: s.firstSeq}) {
				return false
			}
			continue
		}
		if e := v.liveInSlot(ke, i); v.visibleClaim(e) && !fn(liveOf(e)) {
			return false
		}
	}
	return true
}

// EachLiveRefOf calls fn with each live claim of predicate the viewer may see, key by key,
// until fn returns false. Sort with CompareLive for an order that nothing hidden can change.
func (v *View) EachLiveRefOf(predicate string, fn func(LiveRef) bool) {
	prefix := encoding.AppendName(nil, predicate)
	v.ix.scan(bPredKey, prefix, kv.ScanOptions{}, func(k, _ []byte) bool {
		ke := v.ix.keyEntry(record.Key{Subject: string(k[len(prefix):]), Predicate: predicate})
		return ke == nil || v.eachLiveRefOfKey(ke, fn)
	})
}

// EachLiveRefWithValue calls fn with each live claim of predicate whose value equals val (as
// Value.Equal, with a Time equal by instant) that the viewer may see, in no particular order,
// until fn returns false. At the snapshot's head it reads the index of live claims by value
// alone; a view of an earlier transaction judges every key of the predicate instead.
func (v *View) EachLiveRefWithValue(predicate string, val record.Value, fn func(LiveRef) bool) {
	if !v.atHead() {
		want := encoding.ValueKey(nil, val)
		v.EachLiveRefOf(predicate, func(l LiveRef) bool {
			return string(encoding.ValueKey(nil, l.Value)) != string(want) || fn(l)
		})
		return
	}
	prefix := encoding.AppendName(nil, predicate)
	full, digest := livePrefixes(predicate, val)
	more := true
	if full != nil {
		more = v.eachLiveEntry(predicate, full, func(k []byte) (record.Value, []byte, error) {
			return encoding.ValueFromKey(k[len(prefix):])
		}, fn)
	}
	if more && digest != nil {
		v.eachLiveEntry(predicate, digest, func(k []byte) (record.Value, []byte, error) {
			return val, k[len(digest):], nil // the digest is val's: the value is the one asked for
		}, fn)
	}
}

// eachLiveEntry calls fn with the live entries under vk (a predicate's, with one value)
// that the viewer may see, reading each one's value and the rest of its key with value, until
// fn returns false; it reports whether fn never did.
func (v *View) eachLiveEntry(predicate string, vk []byte, value func(k []byte) (record.Value, []byte, error), fn func(LiveRef) bool) bool {
	more := true
	v.ix.scan(bLive, vk, kv.ScanOptions{}, func(k, b []byte) bool {
		if l, ok := v.liveEntryRef(predicate, k, b, value); ok {
			more = fn(l)
		}
		return more
	})
	return more
}

// liveEntryRef decodes the live entry k, b of predicate (value reads the claim's value and the
// rest of the key from k), and reports whether the viewer may see it and it is still valid.
func (v *View) liveEntryRef(predicate string, k, b []byte, value func(k []byte) (record.Value, []byte, error)) (LiveRef, bool) {
	bad := func() { corrupt("live claims of "+predicate, encoding.ErrCorrupt) }
	val, rest, err := value(k)
	if err != nil {
		bad()
	}
	i := slices.Index(rest, 0)
	if i < 0 {
		bad()
	}
	_, _, ok := encoding.Uint(rest[i+1:])
	l, err := decodeLiveEntry(b)
	if !ok || err != nil {
		bad()
	}
	if !v.CanSee(splitAudience(l.audience)) || !l.until.IsZero() && !v.now.Before(l.until) {
		return LiveRef{}, false
	}
	if l.negZero {
		val.Num = math.Copysign(0, -1)
	}
	return LiveRef{ID: record.ClaimID{Key: record.Key{Subject: string(rest[:i]), Predicate: predicate}, Version: l.version}, Value: val, listing: l.listing}, true
}

// CountLiveWithValue is how many claims of predicate are live with value val at the snapshot's
// newest transaction, whoever may see them and before valid time, counted up to limit (it
// returns limit when there are more): an estimate of what EachLiveRefWithValue yields, for
// choosing where a find starts. No count is kept: a commit writes no entry for it, and a
// find only needs to know which conditions are small.
func (v *View) CountLiveWithValue(predicate string, val record.Value, limit int) int {
	n := 0
	full, digest := livePrefixes(predicate, val)
	for _, p := range [][]byte{full, digest} {
		if p != nil && n < limit {
			v.ix.scanKeys(bLive, p, func([]byte) bool {
				n++
				return n < limit
			})
		}
	}
	return n
}

// LiveClaims returns the live claims of key the viewer may see, at most one per audience,
// oldest first.
func (v *View) LiveClaims(k record.Key) []*ClaimEntry {
	var out []*ClaimEntry
	v.EachLive(k, func(e *ClaimEntry) bool {
		out = append(out, e)
		return true
	})
	if len(out) > 1 {
		slices.SortFunc(out, func(a, b *ClaimEntry) int { return a.ID.Version - b.ID.Version })
	}
	return out
}

// LiveClaim returns the newest live claim of key the viewer may see, or nil. A reader who may
// see several audiences' claims for one key (the owner, or someone in a shared and a private
// audience) gets the newest; LiveClaims gives them all.
func (v *View) LiveClaim(k record.Key) *ClaimEntry {
	ls := v.LiveClaims(k)
	if len(ls) == 0 {
		return nil
	}
	return ls[len(ls)-1]
}

// LiveIn returns the live claim of key within one audience, visible to the viewer or not.
// Writers need it to decide supersession, which is a fact of the store, not of one reader.
func (v *View) LiveIn(k record.Key, audience string) *ClaimEntry {
	if ke := v.ix.keyEntry(k); ke != nil {
		if i := ke.slotOf(audience); i >= 0 {
			return v.liveInSlot(ke, i)
		}
	}
	return nil
}

// liveInSlot takes the live claim from the slot when nothing changed it after the view's
// transaction; otherwise it walks backwards, the newest versions being the likeliest live.
func (v *View) liveInSlot(ke *keyEntry, i int) *ClaimEntry {
	s := &ke.slots[i]
	if !v.in(s.firstTx) {
		return nil
	}
	if v.in(s.tx) {
		if s.live == 0 {
			return nil
		}
		if e := v.ix.claimAt(ke.key, ke.seq, s.live); e != nil && v.isLive(e) {
			return e
		}
		return nil
	}
	for ver := ke.n; ver >= s.first; ver-- {
		if e := v.ix.claimAt(ke.key, ke.seq, ver); e != nil && e.slot == i && v.in(e.Tx) && v.isLive(e) {
			return e
		}
	}
	return nil
}

// Listings of keys, subjects and artifact names come in the order of the first version the
// viewer may see. The order of the very first version would let a claim the viewer may not see
// move a key ahead of another, and so tell it that something it may not see was recorded.

// Keys lists every key with at least one visible version, in the order of its first visible
// version.
func (v *View) Keys() []record.Key { return keyNames(v.keyEntriesUnder(nil)) }

// KeysOfSubject lists the keys of a subject with at least one visible version, in the order of
// their first visible versions.
func (v *View) KeysOfSubject(subject string) []record.Key {
	return keyNames(v.subjectKeyEntries(subject))
}

func keyNames(kes []*keyEntry) []record.Key {
	out := make([]record.Key, len(kes))
	for i, ke := range kes {
		out[i] = ke.key
	}
	return out
}

// keyEntriesUnder is the entries of the keys under prefix with a visible version, in the order
// of their first visible versions.
func (v *View) keyEntriesUnder(prefix []byte) []*keyEntry {
	var out []*keyEntry
	var first []uint64
	v.eachKeyEntry(prefix, func(ke *keyEntry) {
		if seq, ok := v.firstSeen(ke); ok {
			out = append(out, ke)
			first = append(first, seq)
		}
	})
	return sortBy(out, first)
}

// subjectKeyEntries is keyEntriesUnder for one subject's keys, read through the subject's
// cached list of keys rather than a scan.
func (v *View) subjectKeyEntries(subject string) []*keyEntry {
	var out []*keyEntry
	var first []uint64
	for _, k := range v.ix.keysOf(subject).keys {
		// A key the list names may be newer than the view (a list kept by the cache, an older
		// snapshot reading it): firstSeen leaves it out.
		ke := v.ix.keyEntry(k)
		if seq, ok := v.firstSeen(ke); ok {
			out = append(out, ke)
			first = append(first, seq)
		}
	}
	return sortBy(out, first)
}

// EachLiveOfSubject calls fn with each key of subject that has a visible version, in the order
// of KeysOfSubject, and its live claims the viewer may see, as LiveClaims gives them: a context
// line reads a subject's keys once.
func (v *View) EachLiveOfSubject(subject string, fn func(k record.Key, live []*ClaimEntry)) {
	var live []*ClaimEntry
	for _, ke := range v.subjectKeyEntries(subject) {
		live = live[:0]
		for i := range ke.slots {
			if e := v.liveInSlot(ke, i); v.visibleClaim(e) {
				live = append(live, e)
			}
		}
		if len(live) > 1 {
			slices.SortFunc(live, func(a, b *ClaimEntry) int { return a.ID.Version - b.ID.Version })
		}
		fn(ke.key, live)
	}
}

// eachKeyEntry calls fn with every key entry under prefix, in key order.
func (v *View) eachKeyEntry(prefix []byte, fn func(*keyEntry)) {
	v.ix.scan(bKey, prefix, kv.ScanOptions{}, func(k, b []byte) bool {
		i := slices.Index(k, 0)
		if i < 0 {
			corrupt("key "+string(k), encoding.ErrCorrupt)
		}
		key := record.Key{Subject: string(k[:i]), Predicate: string(k[i+1:])}
		ke := loadRaw(v.ix, bKey, k, b, func() string { return "key " + key.String() },
			func(b []byte) (*keyEntry, error) { return decodeKeyEntry(key, b) })
		fn(ke)
		return true
	})
}

// KeysOfPredicate lists the keys of a predicate with at least one visible version, in the order
// of their first visible versions.
func (v *View) KeysOfPredicate(predicate string) []record.Key {
	var out []record.Key
	var first []uint64
	prefix := encoding.AppendName(nil, predicate)
	v.ix.scan(bPredKey, prefix, kv.ScanOptions{}, func(k, _ []byte) bool {
		ke := v.ix.keyEntry(record.Key{Subject: string(k[len(prefix):]), Predicate: predicate})
		if seq, ok := v.firstSeen(ke); ok {
			out = append(out, ke.key)
			first = append(first, seq)
		}
		return true
	})
	return sortBy(out, first)
}

// Subjects lists the subjects with at least one visible claim, in the order of their first
// visible claims.
func (v *View) Subjects() []string {
	var out []string
	var first []uint64
	v.eachKeyEntry(nil, func(ke *keyEntry) {
		seq, ok := v.firstSeen(ke)
		if !ok {
			return
		}
		if n := len(out); n > 0 && out[n-1] == ke.key.Subject {
			first[n-1] = min(first[n-1], seq)
			return
		}
		out = append(out, ke.key.Subject)
		first = append(first, seq)
	})
	return sortBy(out, first)
}

// sortBy orders xs by the matching ranks.
func sortBy[T any](xs []T, ranks []uint64) []T {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(ranks[a], ranks[b]) })
	out := make([]T, len(xs))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

// firstSeen is the seq of the first version of a key the viewer may see within the view. It is
// the first claim of the first audience the viewer belongs to: the key's audiences are kept in
// the order of their first claims.
func (v *View) firstSeen(ke *keyEntry) (uint64, bool) {
	if ke == nil {
		return 0, false
	}
	for _, s := range ke.slots {
		if !v.in(s.firstTx) {
			return 0, false
		}
		if v.CanSee(s.seenBy) {
			return s.firstSeq, true
		}
	}
	return 0, false
}

// Revocation returns the revocation of a claim within the view, or nil.
func (v *View) Revocation(e *ClaimEntry) *record.Revocation {
	if r := e.s.revocations; len(r) > 0 && v.in(r[0].tx) {
		return v.ix.revocation(r[0].id)
	}
	return nil
}

// Confirmation returns the first confirmation of a claim within the view, or nil.
func (v *View) Confirmation(e *ClaimEntry) *record.Confirmation {
	if c := e.s.confirmations; len(c) > 0 && v.in(c[0].tx) {
		return v.ix.confirmation(c[0].id)
	}
	return nil
}

func (v *View) confirmed(e *ClaimEntry) bool {
	c := e.s.confirmations
	return len(c) > 0 && v.in(c[0].tx)
}

// EffectiveKind is the claim's kind, or Confirmed from the transaction that confirmed it.
func (v *View) EffectiveKind(e *ClaimEntry) record.Kind {
	if v.confirmed(e) {
		return record.Confirmed
	}
	return e.Kind
}

// State folds the events of a claim up to the view's transaction, then applies valid time at
// the view's Now. It returns the state and the time the claim entered it (for expiry, its
// valid-until).
func (v *View) State(e *ClaimEntry) (State, time.Time) {
	st, tx := v.fold(e)
	if v.expired(e, st) {
		return Expired, e.ValidUntil
	}
	return st, v.ix.txTime(tx)
}

func (v *View) isLive(e *ClaimEntry) bool {
	st, _ := v.fold(e)
	return st == Live && !v.expired(e, st)
}

func (v *View) expired(e *ClaimEntry, st State) bool {
	return (st == Live || st == Contested) && !e.ValidUntil.IsZero() && !v.now.Before(e.ValidUntil)
}

// fold is the state of a claim from the events up to the view's transaction, before valid
// time, and the transaction that put it there (package lifecycle's rule).
func (v *View) fold(e *ClaimEntry) (State, record.TxID) {
	return lifecycle.Fold(e.rel, e.Tx, e.revised, txsOf(e.s.promotions), txsOf(e.s.revocations), v.asOf)
}

// SupersededBy returns the visible claim that superseded e within the view, if any.
func (v *View) SupersededBy(e *ClaimEntry) *ClaimEntry {
	for _, r := range e.s.revisedBy {
		if !v.in(r.tx) {
			break
		}
		if c := v.Claim(record.ClaimID{Key: e.ID.Key, Version: r.version}); c != nil {
			return c
		}
	}
	return nil
}

// EffectiveConfidence is the claim's confidence halved every half-life of its predicate since
// it was recorded, judged at the view's Now.
func (v *View) EffectiveConfidence(e *ClaimEntry) float64 {
	hl := v.HalfLife(e.ID.Predicate)
	if hl <= 0 {
		return e.Confidence
	}
	age := v.now.Sub(v.ix.txTime(e.Tx))
	if age <= 0 {
		return e.Confidence
	}
	return e.Confidence * math.Exp2(-float64(age)/float64(hl))
}

func (v *View) visibleArt(n *ArtifactNode) bool {
	return n != nil && v.in(n.Tx) && v.CanSee(n.SeenBy)
}

// Artifact returns a visible artifact version, or nil.
func (v *View) Artifact(id record.ArtifactID) *ArtifactNode {
	n := v.ix.artifact(id)
	if !v.visibleArt(n) {
		return nil
	}
	return n
}

func (v *View) artVersionsOf(ae *artEntry, fn func(*ArtifactNode) bool) {
	for ver := 1; ver <= ae.n; ver++ {
		n := v.ix.artifactAt(ae.name, ae.seq, ver)
		if n == nil || !v.in(n.Tx) || !fn(n) {
			return
		}
	}
}

// ArtifactVersions returns the visible versions of an artifact, oldest first.
func (v *View) ArtifactVersions(name string) []*ArtifactNode {
	ae := v.ix.artEntry(name)
	if ae == nil {
		return nil
	}
	var out []*ArtifactNode
	v.artVersionsOf(ae, func(n *ArtifactNode) bool {
		if v.CanSee(n.SeenBy) {
			out = append(out, n)
		}
		return true
	})
	return out
}

// ArtifactVersionCount is the number of versions of name within the view, visible or not:
// versions are numbered per name across audiences. Writers use it to number the next version.
func (v *View) ArtifactVersionCount(name string) int {
	ae := v.ix.artEntry(name)
	if ae == nil {
		return 0
	}
	if v.in(ae.lastTx) {
		return ae.n
	}
	n := ae.n
	for n > 0 {
		if a := v.ix.artifactAt(name, ae.seq, n); a != nil && v.in(a.Tx) {
			break
		}
		n--
	}
	return n
}

// ArtifactNames lists artifacts with at least one visible version, in the order of their first
// visible versions.
func (v *View) ArtifactNames() []string {
	var out []string
	var first []uint64
	v.ix.scan(bArt, nil, kv.ScanOptions{}, func(k, b []byte) bool {
		name := string(k)
		ae := loadRaw(v.ix, bArt, k, b, func() string { return "artifact " + name },
			func(b []byte) (*artEntry, error) { return decodeArtEntry(name, b) })
		v.artVersionsOf(ae, func(n *ArtifactNode) bool {
			if v.CanSee(n.SeenBy) {
				out = append(out, name)
				first = append(first, n.seq)
				return false
			}
			return true
		})
		return true
	})
	return sortBy(out, first)
}

// LatestArtifact is the newest version of name the viewer may see within the view, or nil: what
// an artifact named without @N means.
func (v *View) LatestArtifact(name string) *ArtifactNode {
	ae := v.ix.artEntry(name)
	if ae == nil {
		return nil
	}
	for ver := ae.n; ver >= 1; ver-- {
		if n := v.ix.artifactAt(name, ae.seq, ver); v.visibleArt(n) {
			return n
		}
	}
	return nil
}

// LatestArtifactIn is the newest version of name within one audience, visible to the viewer or
// not. Writers need it to decide what a new version supersedes.
func (v *View) LatestArtifactIn(name, audience string) *ArtifactNode {
	ae := v.ix.artEntry(name)
	if ae == nil {
		return nil
	}
	for ver := ae.n; ver >= 1; ver-- {
		if n := v.ix.artifactAt(name, ae.seq, ver); n != nil && v.in(n.Tx) && n.audience == audience {
			return n
		}
	}
	return nil
}

// ArtifactSupersededBy is the version that superseded n within the view (one of its own
// audience, as recorded), or nil while n is live.
func (v *View) ArtifactSupersededBy(n *ArtifactNode) *ArtifactNode {
	if r := n.s.revisedBy; len(r) > 0 && v.in(r[0].tx) {
		return v.ix.artifactAt(n.ID.Name, n.nameSeq, r[0].version)
	}
	return nil
}

// ArtifactSupersededAt is the time artifact n was superseded, or zero while it is live.
func (v *View) ArtifactSupersededAt(n *ArtifactNode) time.Time {
	if r := n.s.revisedBy; len(r) > 0 && v.in(r[0].tx) {
		return v.ix.txTime(r[0].tx)
	}
	return time.Time{}
}

// Reviews returns an artifact version's reviews within the view.
func (v *View) Reviews(n *ArtifactNode) []*record.Review {
	var out []*record.Review
	for _, x := range n.s.reviews {
		if !v.in(x.tx) {
			break
		}
		if r := v.ix.review(x.id); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// ReviewedBy returns the time of the last review of n recorded in transaction tx or earlier,
// within the view, and whether there is one. It reads no review record: provenance asks it for
// every artifact input it walks through.
func (v *View) ReviewedBy(n *ArtifactNode, tx record.TxID) (time.Time, bool) {
	var last record.TxID
	for _, x := range n.s.reviews {
		if x.tx > tx || !v.in(x.tx) {
			break
		}
		last = x.tx
	}
	if last == 0 {
		return time.Time{}, false
	}
	return v.ix.txTime(last), true
}

// nodeKeyOf is the stored form of node, or nil when the store holds no such record.
func (v *View) nodeKeyOf(node record.NodeRef) []byte {
	switch {
	case node.Claim != nil:
		if ke := v.ix.keyEntry(node.Claim.Key); ke != nil && node.Claim.Version <= ke.n {
			return nodeKey(false, ke.seq, node.Claim.Version)
		}
	case node.Artifact != nil:
		if ae := v.ix.artEntry(node.Artifact.Name); ae != nil && node.Artifact.Version <= ae.n {
			return nodeKey(true, ae.seq, node.Artifact.Version)
		}
	}
	return nil
}

// dependents calls fn with the artifact versions derived directly from the node stored as key,
// in transaction order, within the view.
func (v *View) dependents(key []byte, fn func(*ArtifactNode)) {
	v.eachDep(v.ix.depsOf(key), fn)
}

func (v *View) eachDep(l *depList, fn func(*ArtifactNode)) {
	for _, n := range v.ix.depNodes(l) {
		if !v.in(n.Tx) {
			return
		}
		fn(n)
	}
}

// Dependents returns the visible artifact versions derived directly from node.
func (v *View) Dependents(node record.NodeRef) []*ArtifactNode {
	key := v.nodeKeyOf(node)
	if key == nil {
		return nil
	}
	var out []*ArtifactNode
	v.dependents(key, func(n *ArtifactNode) {
		if v.CanSee(n.SeenBy) {
			out = append(out, n)
		}
	})
	return out
}

// Input returns n's i-th input (DerivedFrom[i]) if the viewer may see it within the view: the
// artifact version or the claim version it names, the other nil.
func (v *View) Input(n *ArtifactNode, i int) (*ArtifactNode, *ClaimEntry) {
	in := n.s.inputs[i]
	if in.artifact {
		a := follow(v.ix, n.inArt[i].Load())
		if a == nil {
			a = v.ix.artifactAt(n.DerivedFrom[i].Artifact.Name, in.ref.seq, in.ref.version)
			if a != nil && isShared(n) && isShared(a) {
				n.inArt[i].Store(a)
			}
		}
		if v.visibleArt(a) {
			return a, nil
		}
		return nil, nil
	}
	e := follow(v.ix, n.inClaim[i].Load())
	if e == nil {
		e = v.ix.claimAt(n.DerivedFrom[i].Claim.Key, in.ref.seq, in.ref.version)
		if e != nil && isShared(n) && isShared(e) {
			n.inClaim[i].Store(e)
		}
	}
	if v.visibleClaim(e) {
		return nil, e
	}
	return nil, nil
}

// ArtifactTime is the time artifact version n was recorded.
func (v *View) ArtifactTime(n *ArtifactNode) time.Time {
	if t := n.time.Load(); t != nil {
		return *t
	}
	t := v.ix.txTime(n.Tx)
	n.time.Store(&t) // a fact that never changes: kept whatever the cache does
	return t
}

// ClaimTime is the time claim version e was recorded.
func (v *View) ClaimTime(e *ClaimEntry) time.Time {
	if t := e.time.Load(); t != nil {
		return *t
	}
	t := v.ix.txTime(e.Tx)
	e.time.Store(&t)
	return t
}

// ArtifactDependents returns the visible artifact versions derived directly from artifact
// version n.
func (v *View) ArtifactDependents(n *ArtifactNode) []*ArtifactNode {
	l := follow(v.ix, n.deps.Load())
	if l == nil {
		l = v.ix.depsOf(nodeKey(true, n.nameSeq, n.ID.Version))
		if isShared(n) && isShared(l) {
			n.deps.Store(l)
		}
	}
	var out []*ArtifactNode
	v.eachDep(l, func(d *ArtifactNode) {
		if v.CanSee(d.SeenBy) {
			out = append(out, d)
		}
	})
	return out
}

// Token returns a token by id, as of the view: for the owner's view only (tokens are the
// owner's to see). Its revocation is reported only if it happened within the view.
func (v *View) Token(id string) (*record.Token, *record.TokenRevocation) {
	k := v.ix.token(id)
	if !v.IsOwnerView() || k == nil || !v.in(k.t.Tx) {
		return nil, nil
	}
	if k.revoked != nil && v.in(k.revoked.tx) {
		return k.t, v.ix.tokenRev(k.revoked.id)
	}
	return k.t, nil
}

// Tokens lists the tokens recorded within the view, oldest first: for the owner's view only.
func (v *View) Tokens() []*record.Token {
	if !v.IsOwnerView() {
		return nil
	}
	var ts []*storedToken
	v.ix.scan(bToken, nil, kv.ScanOptions{}, func(k, b []byte) bool {
		s, err := decodeToken(string(k), b)
		if err != nil {
			corrupt("token "+string(k), err)
		}
		if v.in(s.t.Tx) {
			ts = append(ts, s)
		}
		return true
	})
	slices.SortFunc(ts, func(a, b *storedToken) int { return cmp.Or(cmp.Compare(a.t.Tx, b.t.Tx), cmp.Compare(a.n, b.n)) })
	out := make([]*record.Token, len(ts))
	for i, s := range ts {
		out[i] = s.t
	}
	return out
}

// loadRaw is load for an entry whose stored bytes a scan already read.
func loadRaw[T any](ix *Index, b kv.Bucket, key, raw []byte, what func() string, decode func([]byte) (T, error)) T {
	return cached(ix, b, key, func() (T, int, bool) {
		x, err := decode(raw)
		if err != nil {
			corrupt(what(), err)
		}
		return x, len(raw), true
	})
}
