// Package index is the in-memory picture of a store's transactions, and the place where a
// claim's state is decided. An Index holds every transaction, with the records looked up by
// key, subject, predicate, value and node, the live claim of each key per audience, the
// dependents of every node and the runs (runs.go). A View (view.go) reads it as of one
// transaction, for one viewer: it sees only what that viewer may see, folds the events recorded
// about a claim (supersession, contest, revocation and the promotion of a replacement) and its
// valid time into its State (View.State), and gives its kind after confirmations and its
// confidence after decay.
//
// index reads no store and imports neither Cayley nor package codec: package graphstore builds
// the Index from decoded transactions and extends it on every commit, pending transactions
// first (AddPending, CommitTo, DropPending).
package index

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"github.com/mql-dev/mql/graphstore/record"
)

// Index is the in-memory picture of every committed transaction, kept so that no read has to
// scan the quad store: the live claim of a key, a subject's keys, a node's dependents are each
// one map lookup away. The quad store stays the source of truth; the index is rebuilt from it on
// open and extended by every commit. All slices are append-only and ordered by transaction, so
// an as-of read is a prefix of each.
//
// Readers hold RLock for the whole of a read; Add is called under Lock.
type Index struct {
	sync.RWMutex
	// head is the last transaction this Index shows: the committed head for the Store's index;
	// for the handle a Write's build gets, every transaction before it, pending ones included.
	head record.TxID
	*indexData
}

// indexData is what an Index holds. Transactions beyond the committed head are pending: built
// by a group commit and not yet stored. Every lookup through a View filters by transaction, so
// readers, whose views stop at Head, never see them.
type indexData struct {
	txs        []*record.Tx
	meta       record.StoreMeta
	principals map[string]*record.Principal
	grants     map[string][]*record.Grant // by grantee
	sources    map[string]*record.Source
	keys       map[record.Key]*KeyEntry
	byValue    map[valueKey]*valueSet // live claims by predicate and value, pending ones included
	keyOrder   []record.Key
	subjects   map[string][]record.Key
	subjOrder  []string
	preds      map[string][]*KeyEntry
	claims     map[record.ClaimID]*ClaimEntry
	artifacts  map[string]*ArtifactEntry
	artOrder   []string
	arts       map[record.ArtifactID]*ArtifactNode
	// claimDeps holds the artifact versions derived directly from a claim version, in
	// transaction order; an artifact version keeps its own (ArtifactNode.dependents). A map,
	// not a field of every claim: few claims have dependents.
	claimDeps map[*ClaimEntry][]*ArtifactNode
	decays    map[string][]*record.Decay
	// valueTypes holds, by predicate, the first claim of each audience, in the order they were
	// recorded: the first of them a viewer may see fixes the type of the values it may give.
	valueTypes map[string][]*ClaimEntry
	tokens     map[string]*TokenEntry // by id
	*runIndex
}

// TokenEntry is a token and, once it is revoked, its revocation.
type TokenEntry struct {
	*record.Token
	Revoked *record.TokenRevocation
}

// KeyEntry holds every version of one subject.predicate, in version order.
type KeyEntry struct {
	Key      record.Key
	Versions []*ClaimEntry
	slots    []*liveSlot // one per audience, in the order of each audience's first claim
}

// ClaimEntry is a claim with every later event that touched it, each list in transaction order.
type ClaimEntry struct {
	*record.Claim
	seq           int                    // its place among all claims, in the order they were recorded
	audience      string                 // Audience(SeenBy)
	slot          *liveSlot              // of its key and audience
	RevisedBy     []*record.Claim        // claims whose Supersedes names this one
	Revocations   []*record.Revocation   // the first one counts; later ones are refused by writers
	Promotions    []*record.Revocation   // revocations of another version that named this one as replacement
	Confirmations []*record.Confirmation // of this claim
}

// ArtifactEntry holds every version of one artifact name.
type ArtifactEntry struct {
	Name     string
	Versions []*ArtifactNode
}

// ArtifactNode is one artifact version with the versions that superseded it and its reviews.
type ArtifactNode struct {
	*record.Artifact
	seq      int    // its place among all artifact versions, in the order they were recorded
	audience string // Audience(SeenBy)
	// ref is ID.String(), and inRefs and inputs are DerivedFrom spelled out and resolved to
	// index entries: an impact or why over thousands of artifacts reads them for each one, and
	// formatting references and looking inputs up by id was most of its time.
	ref        string
	inRefs     []string
	inputs     []input
	dependents []*ArtifactNode // versions derived directly from this one, in transaction order
	RevisedBy  []*ArtifactNode // versions whose Supersedes names this one; the first counts
	Reviews    []*record.Review
}

// New returns an empty index.
func New() *Index {
	return &Index{indexData: newIndexData()}
}

func newIndexData() *indexData {
	return &indexData{
		principals: map[string]*record.Principal{},
		grants:     map[string][]*record.Grant{},
		sources:    map[string]*record.Source{},
		keys:       map[record.Key]*KeyEntry{},
		byValue:    map[valueKey]*valueSet{},
		subjects:   map[string][]record.Key{},
		preds:      map[string][]*KeyEntry{},
		claims:     map[record.ClaimID]*ClaimEntry{},
		artifacts:  map[string]*ArtifactEntry{},
		arts:       map[record.ArtifactID]*ArtifactNode{},
		claimDeps:  map[*ClaimEntry][]*ArtifactNode{},
		decays:     map[string][]*record.Decay{},
		valueTypes: map[string][]*ClaimEntry{},
		tokens:     map[string]*TokenEntry{},
		runIndex:   newRunIndex(),
	}
}

// Reserve sizes an empty index for the transactions about to be added, so that loading a
// large store does not grow (and copy) its biggest maps many times over.
func (ix *Index) Reserve(txs []*record.Tx) {
	if len(ix.txs) > 0 {
		return
	}
	claims, arts := 0, 0
	for _, tx := range txs {
		claims += len(tx.Claims)
		arts += len(tx.Artifacts)
	}
	ix.txs = make([]*record.Tx, 0, len(txs))
	ix.claims = make(map[record.ClaimID]*ClaimEntry, claims)
	ix.arts = make(map[record.ArtifactID]*ArtifactNode, arts)
}

// Head is the id of the last transaction, 0 when the index is empty.
func (ix *Index) Head() record.TxID { return ix.head }

// Top is the id of the last transaction indexed, committed or pending in a group commit.
func (ix *Index) Top() record.TxID { return record.TxID(len(ix.txs)) }

// Tx returns transaction id, or nil.
func (ix *Index) Tx(id record.TxID) *record.Tx {
	if id < 1 || id > ix.head {
		return nil
	}
	return ix.txs[id-1]
}

// Txs returns every transaction in id order. The slice must not be modified.
func (ix *Index) Txs() []*record.Tx { return ix.txs[:ix.head] }

// BuildHandle returns an Index over the same data that shows every transaction indexed,
// pending ones included: what a Write's build sees. Caller holds ix's read lock while the
// handle is used.
func (ix *Index) BuildHandle() *Index { return &Index{head: ix.Top(), indexData: ix.indexData} }

// Meta is what the genesis transaction recorded.
func (ix *Index) Meta() record.StoreMeta { return ix.meta }

// Add applies a committed transaction. Transactions must arrive in id order without gaps, and
// every reference in them must already resolve: writers validate before committing, so a
// violation here is a bug and panics rather than corrupting the index.
func (ix *Index) Add(tx *record.Tx) {
	ix.AddPending(tx)
	ix.head = tx.ID
}

// AddPending indexes tx without making it visible to readers: a View as of the head (or any
// committed transaction) filters it out, while a writer's View as of it sees it. Group commit
// uses it so that each writer in a group builds on the ones before it; CommitTo then publishes
// them, or resetTo drops them.
func (ix *Index) AddPending(tx *record.Tx) {
	if tx.ID != ix.Top()+1 {
		panic(fmt.Sprintf("graphstore: index at tx %d cannot add tx %d", ix.Top(), tx.ID))
	}
	ix.txs = append(ix.txs, tx)
	ix.AddRecords(tx, Mark{})
}

// Mark counts the records of a transaction that are indexed already: a staged build (see
// Store.WriteStaged) indexes its transaction in parts.
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

// AppendStaged appends tx, none of its records indexed yet, and moves the build handle h
// (see BuildHandle) to it: a staged build indexes its records in parts (see AddRecords).
func (ix *Index) AppendStaged(h *Index, tx *record.Tx) {
	ix.txs = append(ix.txs, tx)
	h.head = tx.ID
}

// Replace makes ix show what o shows: an import into a memory store swaps in the index it built.
// Caller holds ix's write lock.
func (ix *Index) Replace(o *Index) {
	ix.head = o.head
	*ix.indexData = *o.indexData
}

// HasClaim, HasArtifact, HasToken and HasSource say whether the index (pending
// transactions included) holds the record; KeyVersion and ArtifactVersion give the last
// version of a key or an artifact, 0 for none. A chain check asks them.
func (ix *Index) HasClaim(id record.ClaimID) bool       { return ix.claims[id] != nil }
func (ix *Index) HasArtifact(id record.ArtifactID) bool { return ix.arts[id] != nil }
func (ix *Index) HasToken(id string) bool               { return ix.tokens[id] != nil }

func (ix *Index) HasSource(id string) bool {
	_, ok := ix.sources[id]
	return ok
}

func (ix *Index) KeyVersion(k record.Key) int {
	if ke := ix.keys[k]; ke != nil {
		return len(ke.Versions)
	}
	return 0
}

func (ix *Index) ArtifactVersion(name string) int {
	if ae := ix.artifacts[name]; ae != nil {
		return len(ae.Versions)
	}
	return 0
}

// AddRecords indexes the records of tx after mark m; tx is in ix.txs already.
func (ix *Index) AddRecords(tx *record.Tx, m Mark) {
	if m == (Mark{}) && tx.Meta != nil {
		ix.meta = *tx.Meta
	}
	for _, p := range tx.Principals[m.principals:] {
		ix.principals[p.Name] = p
	}
	for _, g := range tx.Grants[m.grants:] {
		ix.grants[g.Grantee] = append(ix.grants[g.Grantee], g)
	}
	for _, s := range tx.Sources[m.sources:] {
		if _, ok := ix.sources[s.ID]; !ok {
			ix.sources[s.ID] = s
		}
	}
	for _, d := range tx.Decays[m.decays:] {
		ix.decays[d.Predicate] = append(ix.decays[d.Predicate], d)
	}
	for _, c := range tx.Claims[m.claims:] {
		ix.addClaim(c)
	}
	for _, r := range tx.Revocations[m.revocations:] {
		revoked := ix.mustClaim(r.Claim)
		revoked.Revocations = append(revoked.Revocations, r)
		revoked.slot.tx = tx.ID
		if revoked.slot.e == revoked {
			ix.setLive(revoked.slot, nil)
		}
		if r.ReplacedBy != nil {
			e := ix.mustClaim(*r.ReplacedBy)
			e.Promotions = append(e.Promotions, r)
			e.slot.tx = tx.ID
			ix.setLive(e.slot, e)
		}
	}
	for _, c := range tx.Confirmations[m.confirmations:] {
		e := ix.mustClaim(c.Claim)
		e.Confirmations = append(e.Confirmations, c)
	}
	for _, a := range tx.Artifacts[m.artifacts:] {
		ix.addArtifact(a)
	}
	for _, k := range tx.Tokens[m.tokens:] {
		ix.tokens[k.ID] = &TokenEntry{Token: k}
	}
	for _, r := range tx.TokenRevocations[m.tokenRevocations:] {
		if k := ix.tokens[r.Token]; k != nil && k.Revoked == nil {
			k.Revoked = r
		}
	}
	for _, r := range tx.Reviews[m.reviews:] {
		n := ix.arts[r.Artifact]
		if n == nil {
			panic(fmt.Sprintf("graphstore: review of unknown artifact %s", r.Artifact))
		}
		n.Reviews = append(n.Reviews, r)
	}
	ix.addRunRecords(tx, m)
}

func (ix *Index) mustClaim(id record.ClaimID) *ClaimEntry {
	e := ix.claims[id]
	if e == nil {
		panic(fmt.Sprintf("graphstore: reference to unknown claim %s", id))
	}
	return e
}

func (ix *Index) addClaim(c *record.Claim) {
	ke := ix.keys[c.ID.Key]
	if ke == nil {
		ke = &KeyEntry{Key: c.ID.Key}
		ix.keys[c.ID.Key] = ke
		ix.keyOrder = append(ix.keyOrder, c.ID.Key)
		if _, ok := ix.subjects[c.ID.Subject]; !ok {
			ix.subjOrder = append(ix.subjOrder, c.ID.Subject)
		}
		ix.subjects[c.ID.Subject] = append(ix.subjects[c.ID.Subject], c.ID.Key)
		ix.preds[c.ID.Predicate] = append(ix.preds[c.ID.Predicate], ke)
	}
	if c.ID.Version != len(ke.Versions)+1 {
		panic(fmt.Sprintf("graphstore: %s recorded after version %d", c.ID, len(ke.Versions)))
	}
	e := &ClaimEntry{Claim: c, seq: len(ix.claims), audience: Audience(c.SeenBy)}
	e.slot = ke.slotOf(e.audience)
	if e.slot == nil {
		e.slot = &liveSlot{key: ke, audience: e.audience, first: e}
		ke.slots = append(ke.slots, e.slot)
	}
	e.slot.tx = c.Tx
	ke.Versions = append(ke.Versions, e)
	ix.claims[c.ID] = e
	if c.Supersedes != nil {
		old := ix.mustClaim(*c.Supersedes)
		old.RevisedBy = append(old.RevisedBy, c)
	}
	if c.Contests == nil && c.Corroborates == nil {
		ix.setLive(e.slot, e)
	}
	firsts := ix.valueTypes[c.ID.Predicate]
	if !slices.ContainsFunc(firsts, func(f *ClaimEntry) bool { return f.audience == e.audience }) {
		ix.valueTypes[c.ID.Predicate] = append(firsts, e)
	}
}

func (ix *Index) addArtifact(a *record.Artifact) {
	ae := ix.artifacts[a.ID.Name]
	if ae == nil {
		ae = &ArtifactEntry{Name: a.ID.Name}
		ix.artifacts[a.ID.Name] = ae
		ix.artOrder = append(ix.artOrder, a.ID.Name)
	}
	if a.ID.Version != len(ae.Versions)+1 {
		panic(fmt.Sprintf("graphstore: %s recorded after version %d", a.ID, len(ae.Versions)))
	}
	n := &ArtifactNode{Artifact: a, seq: len(ix.arts), audience: Audience(a.SeenBy), ref: a.ID.String(),
		inRefs: make([]string, len(a.DerivedFrom)), inputs: make([]input, len(a.DerivedFrom))}
	if a.Supersedes != nil {
		old := ix.arts[*a.Supersedes]
		if old == nil {
			panic(fmt.Sprintf("graphstore: %s supersedes unknown artifact %s", a.ID, a.Supersedes))
		}
		old.RevisedBy = append(old.RevisedBy, n)
	}
	ae.Versions = append(ae.Versions, n)
	ix.arts[a.ID] = n
	for i, in := range a.DerivedFrom {
		n.inRefs[i] = in.String()
		switch {
		case in.Claim != nil:
			if e := ix.claims[*in.Claim]; e != nil {
				n.inputs[i].claim = e
				ix.claimDeps[e] = append(ix.claimDeps[e], n)
			}
		case in.Artifact != nil:
			if p := ix.arts[*in.Artifact]; p != nil {
				n.inputs[i].art = p
				p.dependents = append(p.dependents, n)
			}
		}
	}
}

// input is an artifact's input resolved to its index entry: one of the two is set, or neither
// when the index does not hold it (a store written by another tool; the check reports it).
type input struct {
	claim *ClaimEntry
	art   *ArtifactNode
}

// Seq is the version's place among every artifact version the index holds, from 0 in the
// order they were recorded: a dense number, below ArtifactCount, for tables indexed by it.
func (n *ArtifactNode) Seq() int { return n.seq }

// ArtifactCount is the number of artifact versions the index holds, pending ones included.
func (ix *Index) ArtifactCount() int { return len(ix.arts) }

// Ref is the version's reference, ID.String().
func (n *ArtifactNode) Ref() string { return n.ref }

// InputRef is the reference of its i-th input, DerivedFrom[i].String().
func (n *ArtifactNode) InputRef(i int) string { return n.inRefs[i] }

// Audience is who may perceive the claim: Audience(SeenBy).
func (e *ClaimEntry) Audience() string { return e.audience }

// Audience is who may perceive the artifact version: Audience(SeenBy).
func (n *ArtifactNode) Audience() string { return n.audience }

// CommitTo makes the pending transactions up to id visible to readers.
func (ix *Index) CommitTo(id record.TxID) {
	if id < ix.head || id > ix.Top() {
		panic(fmt.Sprintf("graphstore: index at tx %d (pending to %d) cannot commit to %d", ix.head, ix.Top(), id))
	}
	ix.head = id
}

// DropPending rebuilds the index from its committed transactions, forgetting pending ones
// (after a failed group apply). Caller holds the write lock. It costs a rebuild from memory,
// not a store scan, and only runs after a failure.
func (ix *Index) DropPending() { ix.DropFrom(ix.head + 1) }

// DropFrom rebuilds the index without transaction id and the pending ones after it, keeping
// the committed transactions and the pending ones before id (a group commit's writers that
// built before a staged build that failed). Caller holds the write lock.
func (ix *Index) DropFrom(id record.TxID) {
	if id > ix.Top() {
		return
	}
	fresh := New()
	for _, tx := range ix.txs[:ix.head] {
		fresh.Add(tx)
	}
	for _, tx := range ix.txs[ix.head : id-1] {
		fresh.AddPending(tx)
	}
	*ix.indexData = *fresh.indexData
}

// liveSlot remembers the live claim of one key and audience after every transaction indexed
// (nil: none), and the last transaction that could have changed it. A view whose transaction
// is at or after that one can take the claim from here instead of folding the key's history;
// it still applies valid time, which passes without transactions.
type liveSlot struct {
	key      *KeyEntry
	audience string
	first    *ClaimEntry // the audience's first claim of the key
	e        *ClaimEntry
	tx       record.TxID
	set      *valueSet // where e is filed in byValue
	at       int       // e's place in set
}

func (ke *KeyEntry) slotOf(audience string) *liveSlot {
	for _, s := range ke.slots {
		if s.audience == audience {
			return s
		}
	}
	return nil
}

// valueKey is a predicate and a value, equal exactly when the values compare equal: a Time by
// its instant, whatever its location.
type valueKey struct {
	predicate string
	typ       record.ValueType
	str       string
	num       float64
	b         bool
	sec       int64
	nsec      int
}

func keyOfValue(predicate string, v record.Value) valueKey {
	k := valueKey{predicate: predicate, typ: v.Type}
	switch v.Type {
	case record.Number:
		k.num = v.Num
	case record.Bool:
		k.b = v.Bool
	case record.Time:
		k.sec, k.nsec = v.Time.Unix(), v.Time.Nanosecond()
	default:
		k.str = v.Str
	}
	return k
}

// valueSet holds the slots whose live claim, as of the newest transaction indexed (pending ones
// included), has one predicate and value. It is what lets a find start from the claims with
// the value it asks for instead of every key of the predicate; views before that transaction
// correct it with the slots changed since (View.changedSince).
type valueSet struct {
	slots []*liveSlot
}

// setLive makes e (nil: none) the live claim of slot s and files s under e's value.
func (ix *Index) setLive(s *liveSlot, e *ClaimEntry) {
	if s.e == e {
		return
	}
	if s.e != nil {
		set := s.set
		last := set.slots[len(set.slots)-1]
		set.slots[s.at], last.at = last, s.at
		set.slots[len(set.slots)-1] = nil
		set.slots = set.slots[:len(set.slots)-1]
		if len(set.slots) == 0 {
			delete(ix.byValue, keyOfValue(s.key.Key.Predicate, s.e.Value))
		}
		s.set = nil
	}
	s.e = e
	if e != nil {
		k := keyOfValue(e.ID.Predicate, e.Value)
		set := ix.byValue[k]
		if set == nil {
			set = &valueSet{}
			ix.byValue[k] = set
		}
		s.set, s.at = set, len(set.slots)
		set.slots = append(set.slots, s)
	}
}

// CompareListing orders live claims as a find lists them: by the first claim of their key and
// audience, in the order recorded. It looks at nothing but the claims' own audiences, so a
// reader who may see both gets them in the same order whatever else the store holds (ordering
// keys by their very first claim would let a claim the reader may not see move a key ahead).
func CompareListing(a, b *ClaimEntry) int {
	return cmp.Compare(a.slot.first.seq, b.slot.first.seq)
}
