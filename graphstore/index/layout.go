package index

// The layout: which bucket holds what, under which key, in which encoding. docs/FORMAT.md is
// the same thing in prose; change both together, and bump encoding.Format when stored bytes
// change meaning.
//
// Names (subjects, predicates, principals, artifacts) never hold a NUL byte, so a NUL ends a
// name inside a key. Numbers in keys are encoding.AppendUint (order-preserving). A key's
// claims are keyed by the key's number (keySeq, given when its first claim is recorded) and
// their version; an artifact's versions by the name's number (nameSeq) and their version.
// Records of the other kinds are keyed by their id.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// The buckets, in Schema order.
const (
	bMeta         kv.Bucket = iota // fixed keys: the format, and the owner and strict flag
	bTx                            // u(tx) → txHeader
	bPrincipal                     // name → principal
	bGrant                         // id → grant
	bGrantee                       // grantee NUL u(tx) u(n) → grant id
	bSource                        // id → source
	bKey                           // subject NUL predicate → keyEntry
	bKeyName                       // u(keySeq) → subject NUL predicate
	bClaim                         // u(keySeq) u(version) → storedClaim
	bPredKey                       // predicate NUL subject → ""
	bPred                          // predicate → predEntry (value types, decays)
	bLive                          // predicate NUL valueKey subject NUL u(slot) → liveEntry: live at the head
	bRevocation                    // id → revocation
	bConfirmation                  // id → confirmation
	bArt                           // name → artEntry
	bArtName                       // u(nameSeq) → name
	bArtVersion                    // u(nameSeq) u(version) → storedArtifact
	bDep                           // node u(artSeq) → u(nameSeq) u(version): what was derived from node
	bReview                        // id → review
	bDecay                         // id → decay ("d" u(tx) "." n)
	bToken                         // id → token
	bTokenRev                      // id → token revocation
	bRetrieval                     // id → retrieval
	bOutcome                       // id → outcome
	bRun                           // by NUL name → runEntry
	bServed                        // node u(tx) u(n) → retrieval id: the retrievals that served node
	bText                          // term NUL u(tx) → textBlock: the claims of tx holding term (text.go)
	bTextStats                     // audience NUL u(tx) → textStats: an audience's claims up to tx (text.go)
	nBuckets

	// subjectKeys names, in the cache only, the list of a subject's keys (the bKey entries under
	// the subject's name), which a subject's new key changes.
	subjectKeys = nBuckets
)

// Schema is the kv schema of an mql store.
var Schema = kv.Schema{Buckets: []kv.BucketDef{
	bMeta: {Name: "meta"}, bTx: {Name: "tx", Append: true}, bPrincipal: {Name: "principal"},
	bGrant: {Name: "grant"}, bGrantee: {Name: "grantee"}, bSource: {Name: "source"},
	bKey: {Name: "key"}, bKeyName: {Name: "keyname", Append: true}, bClaim: {Name: "claim", Append: true},
	bPredKey: {Name: "predkey"}, bPred: {Name: "pred"}, bLive: {Name: "live"},
	bRevocation: {Name: "revocation"}, bConfirmation: {Name: "confirmation"}, bArt: {Name: "art"},
	bArtName: {Name: "artname", Append: true}, bArtVersion: {Name: "artversion", Append: true},
	bDep: {Name: "dep"}, bReview: {Name: "review"}, bDecay: {Name: "decay"}, bToken: {Name: "token"},
	bTokenRev: {Name: "tokenrev"}, bRetrieval: {Name: "retrieval"}, bOutcome: {Name: "outcome"},
	bRun: {Name: "run"}, bServed: {Name: "served"}, bText: {Name: "text"}, bTextStats: {Name: "textstats"},
}}

// BulkBuckets are the buckets Apply writes but never reads, and a check's state never asks
// about: an import may keep their entries aside and write them in key order at its end.
var BulkBuckets = []kv.Bucket{bPredKey, bLive, bText}

// TextBuckets are the buckets of the text index, which a store of an earlier format
// (encoding.Earlier) lacks: on PostgreSQL, their tables too.
var TextBuckets = []kv.Bucket{bText, bTextStats}

// Meta keys.
var (
	metaFormat = []byte("format") // encoding.Format
	metaStore  = []byte("store")  // the genesis' owner and strict flag
)

func u(b []byte, x uint64) []byte { return encoding.AppendUint(b, x) }

func txKey(id record.TxID) []byte { return u(nil, uint64(id)) }

func keyKey(k record.Key) []byte {
	return appendKeyKey(make([]byte, 0, len(k.Subject)+len(k.Predicate)+1), k)
}

func appendKeyKey(b []byte, k record.Key) []byte {
	return append(encoding.AppendName(b, k.Subject), k.Predicate...)
}

func claimKey(keySeq uint64, version int) []byte {
	return u(u(make([]byte, 0, 8), keySeq), uint64(version))
}

func artVersionKey(nameSeq uint64, version int) []byte {
	return u(u(make([]byte, 0, 8), nameSeq), uint64(version))
}

// nodeKey names a claim ('c' keySeq version) or an artifact version ('a' nameSeq version) in
// the keys of bDep and bServed.
func nodeKey(artifact bool, seq uint64, version int) []byte {
	tag := byte('c')
	if artifact {
		tag = 'a'
	}
	return u(u(append(make([]byte, 0, 10), tag), seq), uint64(version))
}

// liveEntry is the value of a live index entry: the version that is live, its valid-until, its
// audience, its slot's listing order (the first claim's seq), and whether its value is a
// number −0 (the key holds the value as = compares it, where −0 is 0): all a find needs to
// match and order a candidate without reading the key's entry or the claim.
type liveEntry struct {
	version  int
	until    time.Time
	audience string
	listing  uint64
	negZero  bool
}

func (l liveEntry) encode() []byte {
	e := enc{}
	e.Uvarint(uint64(l.version))
	e.Time(l.until)
	e.String(l.audience)
	e.Uvarint(l.listing)
	e.Bool(l.negZero)
	return e.B
}

func decodeLiveEntry(b []byte) (liveEntry, error) {
	d := dec{encoding.NewDec(b)}
	l := liveEntry{version: d.version(), until: d.Time(), audience: d.String(), listing: d.Uvarint(), negZero: d.Bool()}
	return l, d.Done()
}

// maxKey is the longest key every backend stores.
const maxKey = kv.MaxKey

// maxNameKey is the most a name (at most 256 bytes) and its NUL take in a key.
const maxNameKey = 257

func liveKey(predicate string, v record.Value, subject string, slot int) []byte {
	b := encoding.ValueKey(encoding.AppendName(make([]byte, 0, 32), predicate), v)
	k := u(encoding.AppendName(b, subject), uint64(slot))
	if len(k) <= maxKey {
		return k
	}
	// A value too large for a key (a 40 KB text) is keyed by its digest.
	b = encoding.ValueDigestKey(encoding.AppendName(make([]byte, 0, 32), predicate), v)
	return u(encoding.AppendName(b, subject), uint64(slot))
}

// livePrefixes are the starts of the live entries of predicate with value v: the value's own
// form, unless no entry of it fits in a key, and its digest's, if some entry may not fit (which
// depends on the subject's name).
func livePrefixes(predicate string, v record.Value) (full, digest []byte) {
	p := encoding.AppendName(nil, predicate)
	vk := encoding.ValueKey(slices.Clip(p), v)
	const minRest, maxRest = 2 + 1, maxNameKey + 10 // subject NUL u(slot)
	if len(vk)+minRest <= maxKey {
		full = vk
	}
	if len(vk)+maxRest > maxKey {
		digest = encoding.ValueDigestKey(slices.Clip(p), v)
	}
	return full, digest
}

// storeState is the store as of a snapshot's newest transaction: everything a snapshot needs
// before its first lookup. The owner and strict flag are the genesis' (meta "store"); the head
// is the last transaction's id and the counts are kept in its header, so that a commit writes
// no entry of its own for them.
type storeState struct {
	head      record.TxID
	owner     string
	strict    bool
	claims    uint64 // claims recorded: the next claim's seq
	artifacts uint64 // artifact versions recorded
	keys      uint64 // keys: the next keySeq
	names     uint64 // artifact names
}

func encodeStoreMeta(owner string, strict bool) []byte {
	e := enc{}
	e.String(owner)
	e.Bool(strict)
	return e.B
}

func decodeStoreMeta(b []byte, st *storeState) error {
	d := encoding.NewDec(b)
	st.owner, st.strict = d.String(), d.Bool()
	return d.Done()
}

// Canonical ids: what mql's writers give the n-th record of a kind in transaction tx
// ("r12.1"). A transaction header lists its ids only when they are not all canonical, which
// only a store written by another tool does.
func canonicalID(prefix string, tx record.TxID, n int) string {
	return prefix + strconv.FormatInt(int64(tx), 10) + "." + strconv.Itoa(n)
}

// idList is the ids of one kind of record in a transaction: a count, or the ids themselves
// when they are not canonical.
type idList struct {
	n   int
	ids []string // nil: canonical
}

func listOf(prefix string, tx record.TxID, ids []string) idList {
	for i, id := range ids {
		if id != canonicalID(prefix, tx, i+1) {
			return idList{n: len(ids), ids: ids}
		}
	}
	return idList{n: len(ids)}
}

func (l idList) id(prefix string, tx record.TxID, i int) string {
	if l.ids != nil {
		return l.ids[i]
	}
	return canonicalID(prefix, tx, i+1)
}

func (e *enc) idList(l idList) {
	if l.ids == nil {
		e.Uvarint(uint64(l.n) << 1)
		return
	}
	e.Uvarint(uint64(l.n)<<1 | 1)
	for _, id := range l.ids {
		e.String(id)
	}
}

func (d *dec) idList() idList {
	x := d.Uvarint()
	l := idList{n: int(x >> 1)}
	if x>>1 > uint64(len(d.B))+1<<20 {
		d.fail("list too long")
		return idList{}
	}
	if x&1 == 1 {
		if l.n > len(d.B) {
			d.fail("list beyond the record")
			return idList{}
		}
		l.ids = make([]string, l.n)
		for i := range l.ids {
			l.ids[i] = d.String()
		}
	}
	return l
}

type enc struct{ encoding.Enc }
type dec struct{ *encoding.Dec }

func (d dec) fail(msg string) {
	if d.Err == nil {
		d.Err = fmt.Errorf("%w: %s", encoding.ErrCorrupt, msg)
	}
	d.B = nil
}

// Record id prefixes.
const (
	prefGrant        = "g"
	prefRevocation   = "r"
	prefConfirmation = "c"
	prefReview       = "v"
	prefToken        = "t"
	prefTokenRev     = "k"
	prefRetrieval    = "q"
	prefOutcome      = "o"
	prefDecay        = "d"
)

// ref is a claim or artifact version as stored: the key's or name's number and a version.
type ref struct {
	seq     uint64
	version int
}

func (e *enc) ref(r ref) { e.Uvarint(r.seq); e.Uvarint(uint64(r.version)) }
func (d *dec) ref() ref  { return ref{seq: d.Uvarint(), version: d.version()} }

func (d *dec) version() int {
	v := d.Uvarint()
	if v < 1 || v > 1<<31 {
		d.fail("bad version")
		return 1
	}
	return int(v)
}

// txHeader is one transaction: its time, author, the genesis' store meta, and which records it
// holds, in order (the records themselves are under their own keys).
type txHeader struct {
	id         record.TxID
	time       time.Time
	by         string
	counts     [4]uint64 // claims, artifact versions, keys and artifact names after it
	meta       *record.StoreMeta
	principals []string
	sources    []string
	claims     []ref
	artifacts  []ref
	tokens     []string

	grants, revocations, confirmations, reviews, decays, tokenRevs, retrievals, outcomes idList
}

func (h *txHeader) encode() []byte {
	e := enc{}
	e.Time(h.time)
	e.String(h.by)
	for _, c := range h.counts {
		e.Uvarint(c)
	}
	if h.meta != nil {
		e.Byte(1)
		e.String(h.meta.Owner)
		e.Bool(h.meta.Strict)
	} else {
		e.Byte(0)
	}
	e.Strings(h.principals)
	e.Strings(h.sources)
	e.Uvarint(uint64(len(h.claims)))
	for _, r := range h.claims {
		e.ref(r)
	}
	e.Uvarint(uint64(len(h.artifacts)))
	for _, r := range h.artifacts {
		e.ref(r)
	}
	e.Strings(h.tokens)
	for _, l := range []idList{h.grants, h.revocations, h.confirmations, h.reviews, h.decays, h.tokenRevs, h.retrievals, h.outcomes} {
		e.idList(l)
	}
	return e.B
}

func decodeTxHeader(id record.TxID, b []byte) (*txHeader, error) {
	d := dec{encoding.NewDec(b)}
	h := &txHeader{id: id, time: d.Time(), by: d.String()}
	for i := range h.counts {
		h.counts[i] = d.Uvarint()
	}
	switch d.Byte() {
	case 0:
	case 1:
		h.meta = &record.StoreMeta{Owner: d.String(), Strict: d.Bool()}
	default:
		d.fail("bad store meta")
	}
	h.principals = d.Strings()
	h.sources = d.Strings()
	if n := d.Len(); n > 0 {
		h.claims = make([]ref, n)
		for i := range h.claims {
			h.claims[i] = d.ref()
		}
	}
	if n := d.Len(); n > 0 {
		h.artifacts = make([]ref, n)
		for i := range h.artifacts {
			h.artifacts[i] = d.ref()
		}
	}
	h.tokens = d.Strings()
	for _, l := range []*idList{&h.grants, &h.revocations, &h.confirmations, &h.reviews, &h.decays, &h.tokenRevs, &h.retrievals, &h.outcomes} {
		*l = d.idList()
	}
	return h, d.Done()
}

// decodeCounts reads only the counts near the start of a header.
func decodeCounts(b []byte, st *storeState) error {
	d := encoding.NewDec(b)
	d.Time()
	_ = d.String()
	st.claims, st.artifacts, st.keys, st.names = d.Uvarint(), d.Uvarint(), d.Uvarint(), d.Uvarint()
	return d.Err
}

// Principals.

func encodePrincipal(p *record.Principal, n int) []byte {
	e := enc{}
	e.String(string(p.Type))
	e.Tx(p.Tx)
	e.Int(n)
	return e.B
}

func decodePrincipal(name string, b []byte) (*record.Principal, int, error) {
	d := encoding.NewDec(b)
	p := &record.Principal{Name: name, Type: record.PrincipalType(d.String()), Tx: d.Tx()}
	n := d.Int()
	return p, n, d.Done()
}

// Grants.

func encodeGrant(g *record.Grant) []byte {
	e := enc{}
	e.String(g.Grantee)
	e.String(string(g.Right))
	e.String(g.Scope)
	e.String(g.By)
	e.Tx(g.Tx)
	return e.B
}

func decodeGrant(id string, b []byte) (*record.Grant, error) {
	d := encoding.NewDec(b)
	g := &record.Grant{ID: id, Grantee: d.String(), Right: record.Right(d.String()), Scope: d.String(), By: d.String(), Tx: d.Tx()}
	return g, d.Done()
}

func granteeKey(grantee string, tx record.TxID, n int) []byte {
	return u(u(encoding.AppendName(nil, grantee), uint64(tx)), uint64(n))
}

// Sources.

func encodeSource(s *record.Source) []byte {
	e := enc{}
	e.String(s.Excerpt)
	e.String(s.URI)
	e.String(s.Revision)
	e.Tx(s.Tx)
	return e.B
}

func decodeSource(id string, b []byte) (*record.Source, error) {
	d := encoding.NewDec(b)
	s := &record.Source{ID: id, Excerpt: d.String(), URI: d.String(), Revision: d.String(), Tx: d.Tx()}
	return s, d.Done()
}

// Keys.

// keyEntry is one subject.predicate: its number, its versions, and one live slot per
// audience (in the order of each audience's first claim).
type keyEntry struct {
	key    record.Key
	seq    uint64
	n      int         // versions recorded
	lastTx record.TxID // the transaction of version n
	slots  []slotEntry
}

// slotEntry is the lifecycle of one key within one audience: its first claim, its live claim
// after the last transaction that changed it, and that transaction.
type slotEntry struct {
	audience string   // Audience(seenBy)
	seenBy   []string // the audience's principals, sorted (nil: everyone)
	first    int      // version of its first claim
	firstSeq uint64   // that claim's place among all claims
	firstTx  record.TxID
	live     int // the live version after tx; 0: none
	tx       record.TxID
	// What the live claim is, for reads that need no more (a find's matching): its valid-until
	// and, when its value is small (inline), its value.
	until  time.Time
	inline bool
	value  record.Value
}

// maxInline bounds the encoded values a key entry repeats for its live claims.
const maxInline = 64

func (k *keyEntry) encode() []byte {
	e := enc{}
	e.Uvarint(k.seq)
	e.Uvarint(uint64(k.n))
	e.Tx(k.lastTx)
	e.Uvarint(uint64(len(k.slots)))
	for _, s := range k.slots {
		e.String(s.audience)
		e.Uvarint(uint64(s.first))
		e.Uvarint(s.firstSeq)
		e.Tx(s.firstTx)
		e.Uvarint(uint64(s.live))
		e.Tx(s.tx)
		if s.live != 0 {
			e.Time(s.until)
			e.Bool(s.inline)
			if s.inline {
				e.Value(s.value)
			}
		}
	}
	return e.B
}

func decodeKeyEntry(k record.Key, b []byte) (*keyEntry, error) {
	d := dec{encoding.NewDec(b)}
	ke := &keyEntry{key: k, seq: d.Uvarint(), n: int(d.Uvarint()), lastTx: d.Tx()}
	n := d.Len()
	ke.slots = make([]slotEntry, n)
	for i := range ke.slots {
		s := &ke.slots[i]
		s.audience = d.String()
		s.seenBy = splitAudience(s.audience)
		s.first = d.version()
		s.firstSeq = d.Uvarint()
		s.firstTx = d.Tx()
		s.live = int(d.Uvarint())
		s.tx = d.Tx()
		if s.live != 0 {
			s.until = d.Time()
			if s.inline = d.Bool(); s.inline {
				s.value = d.Value()
			}
		}
	}
	return ke, d.Done()
}

func splitAudience(a string) []string {
	if a == "" {
		return nil
	}
	return strings.Split(a, ",")
}

func (k *keyEntry) slotOf(audience string) int {
	for i := range k.slots {
		if k.slots[i].audience == audience {
			return i
		}
	}
	return -1
}

// Claims.

// storedClaim is a claim as stored: the record without its key (the bucket key holds the
// key's number and the version), its place among all claims, the first claim of its slot (for
// listings), and the events later transactions recorded about it.
type storedClaim struct {
	c             *record.Claim
	seq           uint64
	slot          int
	listing       uint64 // firstSeq of its slot
	revisedBy     []revision
	revocations   []event // the first counts
	promotions    []event
	confirmations []event
}

// revision is a newer version of the same key that superseded the claim.
type revision struct {
	version int
	tx      record.TxID
}

// event is a record about a claim or artifact version: its id and transaction.
type event struct {
	id string
	tx record.TxID
}

const (
	relFirst = iota
	relSupersedes
	relContests
	relCorroborates
)

// Flags of a stored claim, saying which optional fields follow.
const (
	cfConfidence = 1 << iota // confidence is not 1
	cfValidFrom
	cfValidUntil
	cfSeenBy
	cfGrant
	cfEvents
	cfExcerpts // what the claim quotes from its sources (mql-kv/2)
)

func (s *storedClaim) encode() []byte {
	c := s.c
	e := enc{}
	flags := byte(0)
	if c.Confidence != 1 {
		flags |= cfConfidence
	}
	if !c.ValidFrom.IsZero() {
		flags |= cfValidFrom
	}
	if !c.ValidUntil.IsZero() {
		flags |= cfValidUntil
	}
	if len(c.SeenBy) > 0 {
		flags |= cfSeenBy
	}
	if c.Grant != "" {
		flags |= cfGrant
	}
	if len(s.revisedBy)+len(s.revocations)+len(s.promotions)+len(s.confirmations) > 0 {
		flags |= cfEvents
	}
	if len(c.Excerpts) > 0 {
		flags |= cfExcerpts
	}
	e.Byte(flags)
	e.Uvarint(s.seq)
	e.Tx(c.Tx)
	e.Uvarint(uint64(s.slot))
	e.Uvarint(s.listing)
	e.Value(c.Value)
	e.String(c.By)
	e.Strings(c.Sources)
	e.String(string(c.Kind))
	rel, ver := relFirst, 0
	switch {
	case c.Supersedes != nil:
		rel, ver = relSupersedes, c.Supersedes.Version
	case c.Contests != nil:
		rel, ver = relContests, c.Contests.Version
	case c.Corroborates != nil:
		rel, ver = relCorroborates, c.Corroborates.Version
	}
	e.Byte(byte(rel))
	if rel != relFirst {
		e.Uvarint(uint64(ver))
	}
	if flags&cfConfidence != 0 {
		e.Float(c.Confidence)
	}
	if flags&cfValidFrom != 0 {
		e.Time(c.ValidFrom)
	}
	if flags&cfValidUntil != 0 {
		e.Time(c.ValidUntil)
	}
	if flags&cfSeenBy != 0 {
		e.Strings(c.SeenBy)
	}
	if flags&cfGrant != 0 {
		e.String(c.Grant)
	}
	if flags&cfExcerpts != 0 {
		e.Strings(c.Excerpts)
	}
	if flags&cfEvents != 0 {
		e.Uvarint(uint64(len(s.revisedBy)))
		for _, r := range s.revisedBy {
			e.Uvarint(uint64(r.version))
			e.Tx(r.tx)
		}
		for _, l := range [][]event{s.revocations, s.promotions, s.confirmations} {
			e.events(l)
		}
	}
	return e.B
}

func (e *enc) events(l []event) {
	e.Uvarint(uint64(len(l)))
	for _, x := range l {
		e.String(x.id)
		e.Tx(x.tx)
	}
}

func (d *dec) events() []event {
	n := d.Len()
	if n == 0 {
		return nil
	}
	out := make([]event, n)
	for i := range out {
		out[i] = event{id: d.String(), tx: d.Tx()}
	}
	return out
}

func decodeClaim(id record.ClaimID, b []byte) (*storedClaim, error) {
	d := dec{encoding.NewDec(b)}
	flags := d.Byte()
	s := &storedClaim{c: &record.Claim{ID: id, Confidence: 1}}
	c := s.c
	s.seq = d.Uvarint()
	c.Tx = d.Tx()
	s.slot = int(d.Uvarint())
	s.listing = d.Uvarint()
	c.Value = d.Value()
	c.By = d.String()
	c.Sources = d.Strings()
	c.Kind = record.Kind(d.String())
	rel := d.Byte()
	if rel != relFirst {
		other := &record.ClaimID{Key: id.Key, Version: d.version()}
		switch rel {
		case relSupersedes:
			c.Supersedes = other
		case relContests:
			c.Contests = other
		case relCorroborates:
			c.Corroborates = other
		default:
			d.fail("bad relation")
		}
	}
	if flags&cfConfidence != 0 {
		c.Confidence = d.Float()
	}
	if flags&cfValidFrom != 0 {
		c.ValidFrom = d.Time()
	}
	if flags&cfValidUntil != 0 {
		c.ValidUntil = d.Time()
	}
	if flags&cfSeenBy != 0 {
		c.SeenBy = d.Strings()
	}
	if flags&cfGrant != 0 {
		c.Grant = d.String()
	}
	if flags&cfExcerpts != 0 {
		if c.Excerpts = d.Strings(); len(c.Excerpts) != len(c.Sources) {
			d.fail("excerpts do not match sources")
		}
	}
	if flags&cfEvents != 0 {
		n := d.Len()
		s.revisedBy = make([]revision, n)
		for i := range s.revisedBy {
			s.revisedBy[i] = revision{version: d.version(), tx: d.Tx()}
		}
		s.revocations = d.events()
		s.promotions = d.events()
		s.confirmations = d.events()
	}
	return s, d.Done()
}

// Predicates.

// predEntry is what is kept per predicate: the first claim of each audience (the value type it
// fixes for that audience, in the order recorded) and the half-lives declared for it.
type predEntry struct {
	types  []valueTypeOf
	decays []decayOf
}

type valueTypeOf struct {
	seenBy []string
	tx     record.TxID
	typ    record.ValueType
}

type decayOf struct {
	tx       record.TxID
	halfLife time.Duration
}

func (p *predEntry) encode() []byte {
	e := enc{}
	e.Uvarint(uint64(len(p.types)))
	for _, t := range p.types {
		e.Strings(t.seenBy)
		e.Tx(t.tx)
		e.String(string(t.typ))
	}
	e.Uvarint(uint64(len(p.decays)))
	for _, x := range p.decays {
		e.Tx(x.tx)
		e.Varint(int64(x.halfLife))
	}
	return e.B
}

func decodePred(b []byte) (*predEntry, error) {
	d := encoding.NewDec(b)
	p := &predEntry{}
	p.types = make([]valueTypeOf, d.Len())
	for i := range p.types {
		p.types[i] = valueTypeOf{seenBy: d.Strings(), tx: d.Tx(), typ: record.ValueType(d.String())}
	}
	p.decays = make([]decayOf, d.Len())
	for i := range p.decays {
		p.decays[i] = decayOf{tx: d.Tx(), halfLife: time.Duration(d.Varint())}
	}
	return p, d.Done()
}

// Revocations, confirmations, reviews, decays.

func encodeRevocation(r *record.Revocation, claim uint64) []byte {
	e := enc{}
	e.Uvarint(claim)
	e.Uvarint(uint64(r.Claim.Version))
	e.String(r.By)
	e.String(r.Because)
	e.String(r.Standing)
	if r.ReplacedBy != nil {
		e.Uvarint(uint64(r.ReplacedBy.Version))
	} else {
		e.Uvarint(0)
	}
	e.Tx(r.Tx)
	return e.B
}

type storedRevocation struct {
	r       *record.Revocation
	keySeq  uint64
	version int
}

func decodeRevocation(id string, b []byte, keyOf func(uint64) record.Key) (*storedRevocation, error) {
	d := dec{encoding.NewDec(b)}
	s := &storedRevocation{keySeq: d.Uvarint(), version: d.version()}
	r := &record.Revocation{ID: id}
	r.By, r.Because, r.Standing = d.String(), d.String(), d.String()
	repl := d.Uvarint()
	r.Tx = d.Tx()
	if d.Err != nil {
		return nil, d.Err
	}
	k := keyOf(s.keySeq)
	r.Claim = record.ClaimID{Key: k, Version: s.version}
	if repl > 0 {
		r.ReplacedBy = &record.ClaimID{Key: k, Version: int(repl)}
	}
	s.r = r
	return s, d.Done()
}

func encodeConfirmation(c *record.Confirmation, claim uint64) []byte {
	e := enc{}
	e.Uvarint(claim)
	e.Uvarint(uint64(c.Claim.Version))
	e.String(c.By)
	e.String(c.Standing)
	e.Tx(c.Tx)
	return e.B
}

func decodeConfirmation(id string, b []byte, keyOf func(uint64) record.Key) (*record.Confirmation, error) {
	d := dec{encoding.NewDec(b)}
	seq, ver := d.Uvarint(), d.version()
	c := &record.Confirmation{ID: id, By: d.String(), Standing: d.String(), Tx: d.Tx()}
	if d.Err != nil {
		return nil, d.Err
	}
	c.Claim = record.ClaimID{Key: keyOf(seq), Version: ver}
	return c, d.Done()
}

func encodeReview(r *record.Review, name uint64) []byte {
	e := enc{}
	e.Uvarint(name)
	e.Uvarint(uint64(r.Artifact.Version))
	e.String(r.By)
	e.String(r.Because)
	e.Tx(r.Tx)
	return e.B
}

func decodeReview(id string, b []byte, nameOf func(uint64) string) (*record.Review, error) {
	d := dec{encoding.NewDec(b)}
	seq, ver := d.Uvarint(), d.version()
	r := &record.Review{ID: id, By: d.String(), Because: d.String(), Tx: d.Tx()}
	if d.Err != nil {
		return nil, d.Err
	}
	r.Artifact = record.ArtifactID{Name: nameOf(seq), Version: ver}
	return r, d.Done()
}

func encodeDecay(x *record.Decay) []byte {
	e := enc{}
	e.String(x.Predicate)
	e.Varint(int64(x.HalfLife))
	e.String(x.By)
	e.Tx(x.Tx)
	return e.B
}

func decodeDecay(b []byte) (*record.Decay, error) {
	d := encoding.NewDec(b)
	x := &record.Decay{Predicate: d.String(), HalfLife: time.Duration(d.Varint()), By: d.String(), Tx: d.Tx()}
	return x, d.Done()
}

// Artifacts.

// artEntry is one artifact name: its number and how many versions it has.
type artEntry struct {
	name   string
	seq    uint64
	n      int
	lastTx record.TxID
}

func (a *artEntry) encode() []byte {
	e := enc{}
	e.Uvarint(a.seq)
	e.Uvarint(uint64(a.n))
	e.Tx(a.lastTx)
	return e.B
}

func decodeArtEntry(name string, b []byte) (*artEntry, error) {
	d := encoding.NewDec(b)
	a := &artEntry{name: name, seq: d.Uvarint(), n: int(d.Uvarint()), lastTx: d.Tx()}
	return a, d.Done()
}

// storedInput is an input of an artifact version: a claim version (key's number) or an
// artifact version (name's number).
type storedInput struct {
	artifact bool
	ref      ref
}

// storedArtifact is an artifact version as stored: the record with its inputs as numbers, its
// place among all versions, and the versions and reviews later transactions recorded about it.
type storedArtifact struct {
	a         *record.Artifact
	seq       uint64
	inputs    []storedInput
	revisedBy []revision
	reviews   []event
}

func (s *storedArtifact) encode() []byte {
	a := s.a
	e := enc{}
	e.Uvarint(s.seq)
	e.Tx(a.Tx)
	e.Uvarint(uint64(len(s.inputs)))
	for _, in := range s.inputs {
		e.Bool(in.artifact)
		e.ref(in.ref)
	}
	e.String(a.By)
	e.Float(a.Confidence)
	e.Strings(a.SeenBy)
	if a.Supersedes != nil {
		e.Uvarint(uint64(a.Supersedes.Version))
	} else {
		e.Uvarint(0)
	}
	e.String(a.Run)
	e.Uvarint(uint64(len(s.revisedBy)))
	for _, r := range s.revisedBy {
		e.Uvarint(uint64(r.version))
		e.Tx(r.tx)
	}
	e.events(s.reviews)
	return e.B
}

func decodeArtifact(id record.ArtifactID, b []byte) (*storedArtifact, error) {
	d := dec{encoding.NewDec(b)}
	s := &storedArtifact{a: &record.Artifact{ID: id}}
	a := s.a
	s.seq = d.Uvarint()
	a.Tx = d.Tx()
	s.inputs = make([]storedInput, d.Len())
	for i := range s.inputs {
		s.inputs[i] = storedInput{artifact: d.Bool(), ref: d.ref()}
	}
	a.By = d.String()
	a.Confidence = d.Float()
	a.SeenBy = d.Strings()
	if v := d.Uvarint(); v > 0 {
		a.Supersedes = &record.ArtifactID{Name: id.Name, Version: int(v)}
	}
	a.Run = d.String()
	s.revisedBy = make([]revision, d.Len())
	for i := range s.revisedBy {
		s.revisedBy[i] = revision{version: d.version(), tx: d.Tx()}
	}
	s.reviews = d.events()
	return s, d.Done()
}

// Tokens.

type storedToken struct {
	t       *record.Token
	n       int
	revoked *event
}

func (s *storedToken) encode() []byte {
	t := s.t
	e := enc{}
	e.String(t.Principal)
	e.String(t.Hash)
	e.String(t.By)
	e.Time(t.Expires)
	e.Tx(t.Tx)
	e.Int(s.n)
	if s.revoked != nil {
		e.Byte(1)
		e.String(s.revoked.id)
		e.Tx(s.revoked.tx)
	} else {
		e.Byte(0)
	}
	return e.B
}

func decodeToken(id string, b []byte) (*storedToken, error) {
	d := dec{encoding.NewDec(b)}
	t := &record.Token{ID: id, Principal: d.String(), Hash: d.String(), By: d.String(), Expires: d.Time(), Tx: d.Tx()}
	s := &storedToken{t: t, n: d.Int()}
	if d.Bool() {
		s.revoked = &event{id: d.String(), tx: d.Tx()}
	}
	return s, d.Done()
}

func encodeTokenRev(r *record.TokenRevocation) []byte {
	e := enc{}
	e.String(r.Token)
	e.String(r.By)
	e.Tx(r.Tx)
	return e.B
}

func decodeTokenRev(id string, b []byte) (*record.TokenRevocation, error) {
	d := encoding.NewDec(b)
	r := &record.TokenRevocation{ID: id, Token: d.String(), By: d.String(), Tx: d.Tx()}
	return r, d.Done()
}

// Runs.

func encodeRetrieval(q *record.Retrieval, claims, arts []ref) []byte {
	e := enc{}
	e.String(q.Run)
	e.String(q.By)
	e.Tx(q.ReadAt)
	e.String(q.Statement)
	e.Uvarint(uint64(len(claims)))
	for _, r := range claims {
		e.ref(r)
	}
	e.Uvarint(uint64(len(arts)))
	for _, r := range arts {
		e.ref(r)
	}
	e.Tx(q.Tx)
	return e.B
}

func decodeRetrieval(id string, b []byte, keyOf func(uint64) record.Key, nameOf func(uint64) string) (*record.Retrieval, error) {
	d := dec{encoding.NewDec(b)}
	q := &record.Retrieval{ID: id, Run: d.String(), By: d.String(), ReadAt: d.Tx(), Statement: d.String()}
	claims := make([]ref, d.Len())
	for i := range claims {
		claims[i] = d.ref()
	}
	arts := make([]ref, d.Len())
	for i := range arts {
		arts[i] = d.ref()
	}
	q.Tx = d.Tx()
	if err := d.Done(); err != nil {
		return nil, err
	}
	for _, r := range claims {
		q.Claims = append(q.Claims, record.ClaimID{Key: keyOf(r.seq), Version: r.version})
	}
	for _, r := range arts {
		q.Artifacts = append(q.Artifacts, record.ArtifactID{Name: nameOf(r.seq), Version: r.version})
	}
	return q, nil
}

func encodeOutcome(o *record.Outcome) []byte {
	e := enc{}
	e.String(o.Run)
	e.String(string(o.Result))
	e.String(o.Because)
	e.String(o.By)
	e.Tx(o.Tx)
	return e.B
}

func decodeOutcome(id string, b []byte) (*record.Outcome, error) {
	d := encoding.NewDec(b)
	o := &record.Outcome{ID: id, Run: d.String(), Result: record.OutcomeResult(d.String()), Because: d.String(), By: d.String(), Tx: d.Tx()}
	return o, d.Done()
}

// runEntry is one principal's run of one name: when it was first recorded, and its records.
type runEntry struct {
	firstTx    record.TxID
	firstN     int // order among the runs first recorded by firstTx
	retrievals []event
	decisions  []ref // artifact versions (nameSeq, version)
	outcomes   []event
}

func (r *runEntry) encode() []byte {
	e := enc{}
	e.Tx(r.firstTx)
	e.Int(r.firstN)
	e.events(r.retrievals)
	e.Uvarint(uint64(len(r.decisions)))
	for _, x := range r.decisions {
		e.ref(x)
	}
	e.events(r.outcomes)
	return e.B
}

func decodeRun(b []byte) (*runEntry, error) {
	d := dec{encoding.NewDec(b)}
	r := &runEntry{firstTx: d.Tx(), firstN: d.Int(), retrievals: d.events()}
	r.decisions = make([]ref, d.Len())
	for i := range r.decisions {
		r.decisions[i] = d.ref()
	}
	r.outcomes = d.events()
	return r, d.Done()
}

func runKey(by, name string) []byte { return append(encoding.AppendName(nil, by), name...) }

func servedKey(node []byte, tx record.TxID, n int) []byte {
	return u(u(append([]byte(nil), node...), uint64(tx)), uint64(n))
}
