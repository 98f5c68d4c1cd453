package index

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/record"
)

// State is the state of a claim at one point in time; a claim is in exactly one.
type State string

const (
	Live       State = "live"
	Superseded State = "superseded"
	Revoked    State = "revoked"
	Expired    State = "expired"
	Contested  State = "contested"
)

// View is the store as one reader may see it: transactions up to AsOf only, judged at time Now
// (for valid-time expiry and decay), and only what Viewer may perceive. Every lookup goes
// through these three filters, so a caller holding a View cannot see past them. The zero
// Viewer (or the owner) sees every claim.
//
// A View borrows the index: hold the index's read lock for as long as the View is used.
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
	if viewer == ix.meta.Owner {
		viewer = ""
	}
	return &View{ix: ix, asOf: asOf, now: now, viewer: viewer}
}

// TxAt returns the last transaction recorded at or before t (0 if none).
func (ix *Index) TxAt(t time.Time) record.TxID {
	i, _ := slices.BinarySearchFunc(ix.Txs(), t, func(tx *record.Tx, t time.Time) int {
		if tx.Time.After(t) {
			return 1
		}
		return -1
	})
	return record.TxID(i)
}

func (v *View) AsOf() record.TxID      { return v.asOf }
func (v *View) Now() time.Time         { return v.now }
func (v *View) Viewer() string         { return v.viewer }
func (v *View) Meta() record.StoreMeta { return v.ix.meta }
func (v *View) in(tx record.TxID) bool { return tx <= v.asOf }
func (v *View) Index() *Index          { return v.ix }
func (v *View) IsOwnerView() bool      { return v.viewer == "" }

// All is the same view without the perception filter: what the store holds as of the view.
// Rules that are facts of the store (review state, the confidence cap) are judged on it; what
// is shown to the reader must still go through v. An artifact's inputs are visible to whoever
// may see it unless its deriver shared it more widely, so for such readers All adds nothing.
func (v *View) All() *View {
	if v.viewer == "" {
		return v
	}
	if v.all == nil {
		v.all = &View{ix: v.ix, asOf: v.asOf, now: v.now}
	}
	return v.all
}

// Tx returns a transaction within the view, or nil.
func (v *View) Tx(id record.TxID) *record.Tx {
	if !v.in(id) {
		return nil
	}
	return v.ix.Tx(id)
}

// TxTime is the time of a transaction (zero if outside the view).
func (v *View) TxTime(id record.TxID) time.Time {
	if tx := v.Tx(id); tx != nil {
		return tx.Time
	}
	return time.Time{}
}

// CanSee reports whether the viewer may perceive something seen by seenBy (empty: everyone).
func (v *View) CanSee(seenBy []string) bool {
	return v.viewer == "" || len(seenBy) == 0 || slices.Contains(seenBy, v.viewer)
}

// Principal returns a principal recorded within the view, or nil.
func (v *View) Principal(name string) *record.Principal {
	p := v.ix.principals[name]
	if p == nil || !v.in(p.Tx) {
		return nil
	}
	return p
}

// Principals lists the principals within the view, in the order they were recorded.
func (v *View) Principals() []*record.Principal {
	var out []*record.Principal
	for _, tx := range v.ix.txs[:v.asOf] {
		out = append(out, tx.Principals...)
	}
	return out
}

// Grants returns the grants held by grantee within the view.
func (v *View) Grants(grantee string) []*record.Grant {
	return prefix(v.ix.grants[grantee], v.asOf, func(g *record.Grant) record.TxID { return g.Tx })
}

// Source returns a source recorded within the view, or nil.
func (v *View) Source(id string) *record.Source {
	s := v.ix.sources[id]
	if s == nil || !v.in(s.Tx) {
		return nil
	}
	return s
}

// HalfLife is the half-life declared for predicate within the view (0: no decay).
func (v *View) HalfLife(predicate string) time.Duration {
	ds := prefix(v.ix.decays[predicate], v.asOf, func(d *record.Decay) record.TxID { return d.Tx })
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)-1].HalfLife
}

// ValueType is the type of the first claim of predicate that the viewer may see within the
// view, if any: the type a new claim of the viewer's must have. It consults nothing the viewer
// may not see, so being refused tells a principal nothing about claims hidden from it; the
// owner, and a principal who may see several audiences, may therefore see a predicate hold
// values of more than one type.
func (v *View) ValueType(predicate string) (record.ValueType, bool) {
	for _, e := range v.ix.valueTypes[predicate] {
		if v.visibleClaim(e) {
			return e.Value.Type, true
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
	e := v.ix.claims[id]
	if !v.visibleClaim(e) {
		return nil
	}
	return e
}

// Versions returns the visible versions of key, oldest first.
func (v *View) Versions(k record.Key) []*ClaimEntry {
	ke := v.ix.keys[k]
	if ke == nil {
		return nil
	}
	var out []*ClaimEntry
	for _, e := range ke.Versions {
		if !v.in(e.Tx) {
			break
		}
		if v.CanSee(e.SeenBy) {
			out = append(out, e)
		}
	}
	return out
}

// VersionCount is the number of versions of key recorded within the view, visible or not.
// Writers use it to number the next version; readers must use Versions.
func (v *View) VersionCount(k record.Key) int {
	ke := v.ix.keys[k]
	if ke == nil {
		return 0
	}
	n, _ := slices.BinarySearchFunc(ke.Versions, v.asOf, func(e *ClaimEntry, t record.TxID) int {
		if e.Tx > t {
			return 1
		}
		return -1
	})
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
// in the order each audience first claimed it) until fn returns false. It allocates nothing.
func (v *View) EachLive(k record.Key, fn func(*ClaimEntry) bool) {
	if ke := v.ix.keys[k]; ke != nil {
		v.eachLiveOfKey(ke, fn)
	}
}

func (v *View) eachLiveOfKey(ke *KeyEntry, fn func(*ClaimEntry) bool) bool {
	for _, s := range ke.slots {
		if e := v.liveInSlot(s); v.visibleClaim(e) && !fn(e) {
			return false
		}
	}
	return true
}

// EachLiveOf calls fn with each live claim of predicate the viewer may see, key by key, until
// fn returns false. Sort with CompareListing for an order that nothing hidden can change.
func (v *View) EachLiveOf(predicate string, fn func(*ClaimEntry) bool) {
	for _, ke := range v.ix.preds[predicate] {
		if !v.eachLiveOfKey(ke, fn) {
			return
		}
	}
}

// EachLiveWithValue calls fn with each live claim of predicate whose value equals val (as
// Value.Equal, with a Time equal by instant) that the viewer may see, in no particular order,
// until fn returns false. It starts from the claims live with that value at the newest
// transaction indexed, skips those whose key and audience changed after the view, and judges
// those from history instead; when that would cost more than a scan of the predicate, it scans.
func (v *View) EachLiveWithValue(predicate string, val record.Value, fn func(*ClaimEntry) bool) {
	want := keyOfValue(predicate, val)
	changed, ok := v.changedSince(predicate)
	if !ok {
		v.EachLiveOf(predicate, func(e *ClaimEntry) bool {
			return keyOfValue(predicate, e.Value) != want || fn(e)
		})
		return
	}
	if set := v.ix.byValue[want]; set != nil {
		for _, s := range set.slots {
			if s.tx <= v.asOf && v.visibleClaim(s.e) && v.isLive(s.e) && !fn(s.e) {
				return
			}
		}
	}
	for _, s := range changed {
		if e := v.liveInSlot(s); v.visibleClaim(e) && keyOfValue(predicate, e.Value) == want && !fn(e) {
			return
		}
	}
}

// CountLiveWithValue is how many claims of predicate are live with value val at the newest
// transaction indexed, whoever may see them and before valid time: an estimate of what
// EachLiveWithValue yields, for choosing where a find starts.
func (v *View) CountLiveWithValue(predicate string, val record.Value) int {
	if set := v.ix.byValue[keyOfValue(predicate, val)]; set != nil {
		return len(set.slots)
	}
	return 0
}

// changedSince lists the slots of predicate changed by transactions after the view (later
// ones for an as-of view; a group commit's pending ones for any view), whose live claim the
// index's byValue may not show as the view sees it. ok is false when finding them would cost
// more than scanning every key of the predicate.
func (v *View) changedSince(predicate string) (slots []*liveSlot, ok bool) {
	budget := len(v.ix.preds[predicate])
	var seen map[*liveSlot]bool
	add := func(id record.ClaimID) {
		if id.Predicate != predicate {
			return
		}
		s := v.ix.claims[id].slot
		if seen == nil {
			seen = map[*liveSlot]bool{}
		}
		if !seen[s] {
			seen[s] = true
			slots = append(slots, s)
		}
	}
	for _, tx := range v.ix.txs[v.asOf:] {
		if budget -= len(tx.Claims) + len(tx.Revocations); budget < 0 {
			return nil, false
		}
		for _, c := range tx.Claims {
			add(c.ID)
		}
		for _, r := range tx.Revocations {
			add(r.Claim)
		}
	}
	return slots, true
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
	if ke := v.ix.keys[k]; ke != nil {
		if s := ke.slotOf(audience); s != nil {
			return v.liveInSlot(s)
		}
	}
	return nil
}

// liveInSlot takes the live claim from the slot when nothing changed it after the view's
// transaction; otherwise it walks backwards, the newest versions being the likeliest live.
func (v *View) liveInSlot(s *liveSlot) *ClaimEntry {
	if s.tx <= v.asOf {
		if s.e != nil && v.isLive(s.e) {
			return s.e
		}
		return nil
	}
	vs := s.key.Versions
	for i := len(vs) - 1; i >= 0; i-- {
		if e := vs[i]; e.slot == s && v.in(e.Tx) && v.isLive(e) {
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
func (v *View) Keys() []record.Key { return v.filterKeys(v.ix.keyOrder) }

// KeysOfSubject lists the keys of a subject with at least one visible version, in the order of
// their first visible versions.
func (v *View) KeysOfSubject(subject string) []record.Key {
	return v.filterKeys(v.ix.subjects[subject])
}

// KeysOfPredicate lists the keys of a predicate with at least one visible version, in the order
// of their first visible versions.
func (v *View) KeysOfPredicate(predicate string) []record.Key {
	kes := v.ix.preds[predicate]
	out := make([]record.Key, 0, len(kes))
	first := make([]int, 0, len(kes))
	for _, ke := range kes {
		if e := v.firstSeen(ke); e != nil {
			out = append(out, ke.Key)
			first = append(first, e.seq)
		}
	}
	return sortBy(out, first)
}

// Subjects lists the subjects with at least one visible claim, in the order of their first
// visible claims.
func (v *View) Subjects() []string {
	var out []string
	var first []int
	for _, s := range v.ix.subjOrder {
		seq := -1
		for _, k := range v.ix.subjects[s] {
			if e := v.firstSeen(v.ix.keys[k]); e != nil && (seq < 0 || e.seq < seq) {
				seq = e.seq
			}
		}
		if seq >= 0 {
			out = append(out, s)
			first = append(first, seq)
		}
	}
	return sortBy(out, first)
}

func (v *View) filterKeys(keys []record.Key) []record.Key {
	out := make([]record.Key, 0, len(keys))
	first := make([]int, 0, len(keys))
	for _, k := range keys {
		if e := v.firstSeen(v.ix.keys[k]); e != nil {
			out = append(out, k)
			first = append(first, e.seq)
		}
	}
	return sortBy(out, first)
}

// sortBy orders xs by the matching ranks, which are usually in order already: the lists are
// kept in the order of the very first version, which for the owner, and for anyone in a store
// whose first versions are public, is the order of the first visible one.
func sortBy[T any](xs []T, ranks []int) []T {
	if slices.IsSorted(ranks) {
		return xs
	}
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return ranks[a] - ranks[b] })
	out := make([]T, len(xs))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

// firstSeen is the first version of a key the viewer may see within the view, or nil. It is
// the first claim of the first audience the viewer belongs to: the key's audiences are kept
// in the order of their first claims.
func (v *View) firstSeen(ke *KeyEntry) *ClaimEntry {
	if ke == nil {
		return nil
	}
	for _, s := range ke.slots {
		if !v.in(s.first.Tx) {
			return nil
		}
		if v.CanSee(s.first.SeenBy) {
			return s.first
		}
	}
	return nil
}

// Revocation returns the revocation of a claim within the view, or nil.
func (v *View) Revocation(e *ClaimEntry) *record.Revocation {
	if len(e.Revocations) > 0 && v.in(e.Revocations[0].Tx) {
		return e.Revocations[0]
	}
	return nil
}

// Confirmation returns the first confirmation of a claim within the view, or nil.
func (v *View) Confirmation(e *ClaimEntry) *record.Confirmation {
	if len(e.Confirmations) > 0 && v.in(e.Confirmations[0].Tx) {
		return e.Confirmations[0]
	}
	return nil
}

// EffectiveKind is the claim's kind, or Confirmed from the transaction that confirmed it.
func (v *View) EffectiveKind(e *ClaimEntry) record.Kind {
	if v.Confirmation(e) != nil {
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
	return st, v.ix.Tx(tx).Time
}

func (v *View) isLive(e *ClaimEntry) bool {
	st, _ := v.fold(e)
	return st == Live && !v.expired(e, st)
}

func (v *View) expired(e *ClaimEntry, st State) bool {
	return (st == Live || st == Contested) && !e.ValidUntil.IsZero() && !v.now.Before(e.ValidUntil)
}

// fold is the state of a claim from the events up to the view's transaction, before valid
// time, and the transaction that put it there. It reads no transaction record, which keeps
// the live test of a find's candidates to the claim's own entry.
func (v *View) fold(e *ClaimEntry) (State, record.TxID) {
	st := Live
	if e.Contests != nil {
		st = Contested
	} else if e.Corroborates != nil {
		st = Superseded
	}
	since := e.Tx
	// Events come from three lists, each in tx order; merge them by tx.
	ri, pi := 0, 0
	rev := v.Revocation(e)
	for {
		var next record.TxID = math.MaxInt64
		kind := 0
		if ri < len(e.RevisedBy) && v.in(e.RevisedBy[ri].Tx) && e.RevisedBy[ri].Tx < next {
			next, kind = e.RevisedBy[ri].Tx, 1
		}
		if pi < len(e.Promotions) && v.in(e.Promotions[pi].Tx) && e.Promotions[pi].Tx < next {
			next, kind = e.Promotions[pi].Tx, 2
		}
		if rev != nil && rev.Tx < next {
			next, kind = rev.Tx, 3
		}
		if kind == 0 {
			return st, since
		}
		switch kind {
		case 1:
			ri++
			if st == Live {
				st, since = Superseded, next
			}
		case 2:
			pi++
			st, since = Live, next
		case 3:
			return Revoked, next
		}
	}
}

// SupersededBy returns the visible claim that superseded e within the view, if any.
func (v *View) SupersededBy(e *ClaimEntry) *ClaimEntry {
	for _, c := range e.RevisedBy {
		if !v.in(c.Tx) {
			break
		}
		if r := v.Claim(c.ID); r != nil {
			return r
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
	age := v.now.Sub(v.ix.Tx(e.Tx).Time)
	if age <= 0 {
		return e.Confidence
	}
	return e.Confidence * math.Exp2(-float64(age)/float64(hl))
}

// Artifact returns a visible artifact version, or nil.
func (v *View) Artifact(id record.ArtifactID) *ArtifactNode {
	n := v.ix.arts[id]
	if n == nil || !v.in(n.Tx) || !v.CanSee(n.SeenBy) {
		return nil
	}
	return n
}

// ArtifactVersions returns the visible versions of an artifact, oldest first.
func (v *View) ArtifactVersions(name string) []*ArtifactNode {
	ae := v.ix.artifacts[name]
	if ae == nil {
		return nil
	}
	var out []*ArtifactNode
	for _, n := range ae.Versions {
		if !v.in(n.Tx) {
			break
		}
		if v.CanSee(n.SeenBy) {
			out = append(out, n)
		}
	}
	return out
}

// ArtifactVersionCount is the number of versions of name within the view, visible or not:
// versions are numbered per name across audiences. Writers use it to number the next version.
func (v *View) ArtifactVersionCount(name string) int {
	ae := v.ix.artifacts[name]
	if ae == nil {
		return 0
	}
	n, _ := slices.BinarySearchFunc(ae.Versions, v.asOf, func(a *ArtifactNode, t record.TxID) int {
		if a.Tx > t {
			return 1
		}
		return -1
	})
	return n
}

// ArtifactNames lists artifacts with at least one visible version, in the order of their first
// visible versions.
func (v *View) ArtifactNames() []string {
	var out []string
	var first []int
	for _, name := range v.ix.artOrder {
		for _, n := range v.ix.artifacts[name].Versions {
			if !v.in(n.Tx) {
				break
			}
			if v.CanSee(n.SeenBy) {
				out = append(out, name)
				first = append(first, n.seq)
				break
			}
		}
	}
	return sortBy(out, first)
}

// LatestArtifact is the newest version of name the viewer may see within the view, or nil: what
// an artifact named without @N means. (The owner, or a principal in several audiences, may see
// more than one live version of a name: one per audience.)
func (v *View) LatestArtifact(name string) *ArtifactNode {
	vs := v.ArtifactVersions(name)
	if len(vs) == 0 {
		return nil
	}
	return vs[len(vs)-1]
}

// LatestArtifactIn is the newest version of name within one audience, visible to the viewer or
// not. Writers need it to decide what a new version supersedes.
func (v *View) LatestArtifactIn(name, audience string) *ArtifactNode {
	ae := v.ix.artifacts[name]
	if ae == nil {
		return nil
	}
	for i := len(ae.Versions) - 1; i >= 0; i-- {
		if n := ae.Versions[i]; v.in(n.Tx) && n.audience == audience {
			return n
		}
	}
	return nil
}

// ArtifactSupersededBy is the version that superseded n within the view (one of its own
// audience, as recorded), or nil while n is live.
func (v *View) ArtifactSupersededBy(n *ArtifactNode) *ArtifactNode {
	if len(n.RevisedBy) > 0 && v.in(n.RevisedBy[0].Tx) {
		return n.RevisedBy[0]
	}
	return nil
}

// ArtifactSupersededAt is the time artifact n was superseded, or zero while it is live.
func (v *View) ArtifactSupersededAt(n *ArtifactNode) time.Time {
	if next := v.ArtifactSupersededBy(n); next != nil {
		return v.ix.Tx(next.Tx).Time
	}
	return time.Time{}
}

// Reviews returns an artifact version's reviews within the view.
func (v *View) Reviews(n *ArtifactNode) []*record.Review {
	return prefix(n.Reviews, v.asOf, func(r *record.Review) record.TxID { return r.Tx })
}

// Dependents returns the visible artifact versions derived directly from node.
func (v *View) Dependents(node record.NodeRef) []*ArtifactNode {
	var xs []*ArtifactNode
	switch {
	case node.Claim != nil:
		if e := v.ix.claims[*node.Claim]; e != nil {
			xs = v.ix.claimDeps[e]
		}
	case node.Artifact != nil:
		if n := v.ix.arts[*node.Artifact]; n != nil {
			xs = n.dependents
		}
	}
	if xs = v.visibleArts(xs); len(xs) > 0 {
		return slices.Clone(xs)
	}
	return nil
}

// Input returns n's i-th input (DerivedFrom[i]) if the viewer may see it within the view: the
// artifact version or the claim version it names, the other nil.
func (v *View) Input(n *ArtifactNode, i int) (*ArtifactNode, *ClaimEntry) {
	in := n.inputs[i]
	switch {
	case in.art != nil && v.in(in.art.Tx) && v.CanSee(in.art.SeenBy):
		return in.art, nil
	case in.claim != nil && v.visibleClaim(in.claim):
		return nil, in.claim
	}
	return nil, nil
}

// ArtifactDependents returns the visible artifact versions derived directly from artifact
// version n: Dependents without the lookup by reference and the copy. The slice may be the
// index's own: read it, do not write to it.
func (v *View) ArtifactDependents(n *ArtifactNode) []*ArtifactNode {
	return v.visibleArts(n.dependents)
}

func (v *View) visibleArts(xs []*ArtifactNode) []*ArtifactNode {
	xs = prefix(xs, v.asOf, func(n *ArtifactNode) record.TxID { return n.Tx })
	if v.viewer == "" {
		return xs
	}
	for i, n := range xs {
		if !v.CanSee(n.SeenBy) {
			out := slices.Clone(xs[:i])
			for _, m := range xs[i+1:] {
				if v.CanSee(m.SeenBy) {
					out = append(out, m)
				}
			}
			return out
		}
	}
	return xs
}

func prefix[T any](xs []T, asOf record.TxID, tx func(T) record.TxID) []T {
	n := len(xs)
	for n > 0 && tx(xs[n-1]) > asOf {
		n--
	}
	return xs[:n]
}

// Token returns a token by id, as of the view: for the owner's view only (tokens are the
// owner's to see). Its revocation is reported only if it happened within the view.
func (v *View) Token(id string) (*record.Token, *record.TokenRevocation) {
	k := v.ix.tokens[id]
	if !v.IsOwnerView() || k == nil || !v.in(k.Tx) {
		return nil, nil
	}
	if k.Revoked != nil && v.in(k.Revoked.Tx) {
		return k.Token, k.Revoked
	}
	return k.Token, nil
}

// Tokens lists the tokens recorded within the view, oldest first: for the owner's view only.
func (v *View) Tokens() []*record.Token {
	if !v.IsOwnerView() {
		return nil
	}
	var out []*record.Token
	for _, tx := range v.ix.txs[:v.asOf] {
		out = append(out, tx.Tokens...)
	}
	return out
}
