package graphstore

import (
	"cmp"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/lifecycle"
	"github.com/mql-dev/mql/graphstore/record"
)

// CheckState is what a check (or an import) knows of the transactions before the one it is
// checking: enough to resolve every reference, number versions, fold each claim's state and
// judge standings. Its memory does not grow with the store: what the transactions recorded is
// in the index the check applies each transaction it accepts to (index.Apply, into a scratch
// store for a check, into the store being created for an import), and the state reads it back
// from there (index/check.go). It keeps in memory only the principals and grants (few), and
// what the index does not hold:
//
//   - the overlay: the records of the transactions after the last one applied (the horizon).
//     The checker stops applying at the first transaction that does not decode or chain (or
//     that the index refuses), and registers what those record from their raw quads, as it
//     always did, so that a damaged store or a bad file is reported exactly as before. An
//     index entry that a transaction after the horizon changes (a new version of a key, an
//     event about a claim) is copied into the overlay first, which is then authoritative for
//     it. A sound store has no overlay.
//   - first: the records recorded twice (reported as such) by transactions the index holds,
//     whose entries the later one overwrote: the state still names the first.
//
// The index is read through the sink's write handle, which sees every transaction applied so
// far, the ones of the batch not yet committed included (a snapshot of the committed batches
// would lack them, and committing each transaction would cost a commit per transaction), as
// of the horizon: entries of a transaction that Apply refused part-way are not seen.
type CheckState struct {
	meta    record.StoreMeta
	hasMeta bool

	// Principals and grants, from the raw quads of every transaction (decodable or not) and
	// from the decoded ones.
	principalTx map[string]record.TxID
	grantTx     map[string]record.TxID
	principals  map[string]*record.Principal
	grants      map[string][]*record.Grant // by grantee

	sink     indexSink   // where the accepted transactions are applied
	horizon  record.TxID // the last transaction applied (0: none)
	indexing bool        // every transaction so far was applied: the overlay is empty
	first    map[quad.IRI]recordInfo

	// The overlay.
	sources  map[string]record.TxID
	events   map[quad.IRI]recordInfo // revocations, confirmations, reviews, tokens and their revocations, retrievals, outcomes
	keys     map[record.Key]*keyState
	keyOrder []*keyState
	arts     map[string]*artState
	revoked  map[record.ClaimID]*revokedBy

	// The revocations recorded so far by the transaction being registered, when it was
	// applied (the index holds them, but the checker reports them in the order of its quads).
	curRevoked map[record.ClaimID]*revokedBy

	names   []string         // principal names, by index (claimState.by)
	nameIx  map[string]int32 // and back
	auds    [][]string       // seen-by lists, by index (claimState.aud); 0 is everyone
	audName []string         // and as index.Audience gives them
	audIx   map[string]int32
	strs    map[string]string // interned subjects, predicates, artifact names

	cur       *record.Tx // the transaction being checked, for lookups of what it records itself
	curClaims map[record.ClaimID]*record.Claim
	curArts   map[record.ArtifactID]*record.Artifact
}

// indexSink is where a checker applies the transactions it accepts, in order: index.Apply into
// a kv store, a batch of transactions per kv transaction. Its write handle is the checker's
// state.
type indexSink interface {
	// add applies tx (quads are its canonical quads) after the ones added before.
	add(tx *record.Tx, quads []quad.Quad) error
	// handle is the write handle over every transaction added so far. It is replaced when a
	// batch commits: ask again rather than keep it.
	handle() (*index.Index, error)
}

type recordInfo struct {
	class quad.IRI
	tx    record.TxID
}

// keyState holds the versions of one key in the overlay, indexed by version-1. A version not
// (yet) recorded is a gap (tx 0).
type keyState struct {
	key     record.Key
	inIndex bool   // the index holds versions of it (copied into vs)
	seq     uint64 // then its number there
	vs      []claimState
}

// claimState is one claim version: 32 bytes.
type claimState struct {
	tx        record.TxID
	untilSec  int64 // valid-until, as time.Time.Unix and Nanosecond; untilNsec -1: none
	untilNsec int32
	by        int32           // index into names
	aud       int32           // index into auds
	known     bool            // its transaction decoded, and its phase is folded
	phase     lifecycle.Phase // folded over the events recorded so far (lifecycle.Next)
}

func (c *claimState) setUntil(t time.Time) {
	if t.IsZero() {
		c.untilSec, c.untilNsec = 0, -1
		return
	}
	c.untilSec, c.untilNsec = t.Unix(), int32(t.Nanosecond())
}

// expired reports whether the claim's valid time has ended at now.
func (c *claimState) expired(now time.Time) bool {
	return c.untilNsec >= 0 && !now.Before(time.Unix(c.untilSec, int64(c.untilNsec)))
}

type artState struct {
	name string
	vs   []artVersion
}

type artVersion struct {
	tx  record.TxID // 0: a gap
	aud int32
}

type revokedBy struct {
	first quad.IRI
	tx    record.TxID
	n     int
}

func newCheckState(sink indexSink) *CheckState {
	return &CheckState{
		principalTx: map[string]record.TxID{},
		grantTx:     map[string]record.TxID{},
		principals:  map[string]*record.Principal{},
		grants:      map[string][]*record.Grant{},
		sink:        sink,
		indexing:    true,
		first:       map[quad.IRI]recordInfo{},
		sources:     map[string]record.TxID{},
		events:      map[quad.IRI]recordInfo{},
		keys:        map[record.Key]*keyState{},
		arts:        map[string]*artState{},
		revoked:     map[record.ClaimID]*revokedBy{},
		curRevoked:  map[record.ClaimID]*revokedBy{},
		nameIx:      map[string]int32{},
		auds:        [][]string{nil},
		audName:     []string{""},
		audIx:       map[string]int32{"": 0},
		strs:        map[string]string{},
	}
}

// ix is the index of the transactions up to the horizon, nil while there are none. A failure
// to reach it panics with an *index.Fault, which the checker turns into its error.
func (s *CheckState) ix() *index.Index {
	if s.horizon == 0 {
		return nil
	}
	h, err := s.sink.handle()
	if err != nil {
		panic(&index.Fault{Err: err})
	}
	return h
}

// Meta is what the genesis recorded.
func (s *CheckState) Meta() record.StoreMeta { return s.meta }

// Principal returns a principal recorded before the transaction being checked, or nil.
func (s *CheckState) Principal(name string) *record.Principal { return s.principals[name] }

// Grants returns the grants given to grantee before the transaction being checked.
func (s *CheckState) Grants(grantee string) []*record.Grant { return s.grants[grantee] }

// ClaimFacts are what a standing check needs of a claim.
type ClaimFacts struct {
	By     string   // the asserter
	SeenBy []string // who may see it (sorted); empty: everyone
}

// Claim returns the facts of a claim recorded up to and including the transaction being
// checked.
func (s *CheckState) Claim(id record.ClaimID) (ClaimFacts, bool) {
	if ks := s.keys[id.Key]; ks != nil {
		if id.Version >= 1 && id.Version <= len(ks.vs) {
			if c := ks.vs[id.Version-1]; c.tx != 0 && c.known {
				return ClaimFacts{By: s.names[c.by], SeenBy: s.auds[c.aud]}, true
			}
		}
	} else if ix := s.ix(); ix != nil {
		if c, ok := ix.ClaimAsOf(id, s.horizon); ok {
			return ClaimFacts{By: c.By, SeenBy: s.auds[s.audience(c.SeenBy)]}, true
		}
	}
	if c := s.curClaim(id); c != nil {
		return ClaimFacts{By: c.By, SeenBy: s.auds[s.audience(c.SeenBy)]}, true
	}
	return ClaimFacts{}, false
}

// curClaim finds a claim of the transaction being checked (indexing them on first use, so
// that a transaction of many claims and of events about them is not checked in quadratic
// time).
func (s *CheckState) curClaim(id record.ClaimID) *record.Claim {
	if s.cur == nil {
		return nil
	}
	if s.curClaims == nil {
		s.curClaims = make(map[record.ClaimID]*record.Claim, len(s.cur.Claims))
		for _, c := range s.cur.Claims {
			s.curClaims[c.ID] = c
		}
	}
	return s.curClaims[id]
}

// setCur sets the transaction being checked (nil: none).
func (s *CheckState) setCur(tx *record.Tx) { s.cur, s.curClaims, s.curArts = tx, nil, nil }

// Artifact returns who may see an artifact version recorded up to and including the
// transaction being checked.
func (s *CheckState) Artifact(id record.ArtifactID) (seenBy []string, ok bool) {
	if as := s.arts[id.Name]; as != nil {
		if id.Version >= 1 && id.Version <= len(as.vs) {
			if a := as.vs[id.Version-1]; a.tx != 0 {
				return s.auds[a.aud], true
			}
		}
	} else if ix := s.ix(); ix != nil {
		if _, seen, ok := ix.ArtifactAsOf(id, s.horizon); ok {
			return s.auds[s.audience(seen)], true
		}
	}
	if s.cur != nil {
		if s.curArts == nil {
			s.curArts = make(map[record.ArtifactID]*record.Artifact, len(s.cur.Artifacts))
			for _, a := range s.cur.Artifacts {
				s.curArts[a.ID] = a
			}
		}
		if a := s.curArts[id]; a != nil {
			return s.auds[s.audience(a.SeenBy)], true
		}
	}
	return nil, false
}

func (s *CheckState) intern(v string) string {
	if x, ok := s.strs[v]; ok {
		return x
	}
	v = strings.Clone(v) // never keep a quad's (or a line's) backing array alive
	s.strs[v] = v
	return v
}

func (s *CheckState) name(n string) int32 {
	if i, ok := s.nameIx[n]; ok {
		return i
	}
	n = strings.Clone(n)
	i := int32(len(s.names))
	s.names = append(s.names, n)
	s.nameIx[n] = i
	return i
}

func (s *CheckState) audience(seenBy []string) int32 {
	if len(seenBy) == 0 {
		return 0
	}
	a := index.Audience(seenBy)
	if i, ok := s.audIx[a]; ok {
		return i
	}
	i := int32(len(s.auds))
	a = strings.Clone(a)
	s.auds = append(s.auds, strings.Split(a, ","))
	s.audName = append(s.audName, a)
	s.audIx[a] = i
	return i
}

// key returns the overlay's state of k, creating it (with the versions the index holds).
func (s *CheckState) key(k record.Key) *keyState {
	ks := s.keys[k]
	if ks == nil {
		k = record.Key{Subject: s.intern(k.Subject), Predicate: s.intern(k.Predicate)}
		ks = &keyState{key: k}
		if ix := s.ix(); ix != nil {
			if seq, n := ix.KeyAsOf(k, s.horizon); n > 0 {
				ks.inIndex, ks.seq = true, seq
				ks.vs = make([]claimState, n)
				for v := 1; v <= n; v++ {
					c, ok := ix.ClaimAsOf(record.ClaimID{Key: k, Version: v}, s.horizon)
					if !ok {
						continue // (the index holds every version up to n)
					}
					cs := claimState{tx: c.Tx, by: s.name(c.By), aud: s.audience(c.SeenBy), known: true, phase: c.Phase}
					cs.setUntil(c.ValidUntil)
					ks.vs[v-1] = cs
				}
			}
		}
		s.keys[k] = ks
		s.keyOrder = append(s.keyOrder, ks)
	}
	return ks
}

// claimTx is the transaction that recorded claim id, if one did before the transaction being
// checked (its raw quads, decoded or not).
func (s *CheckState) claimTx(id record.ClaimID) (record.TxID, bool) {
	if ks := s.keys[id.Key]; ks != nil {
		if id.Version >= 1 && id.Version <= len(ks.vs) && ks.vs[id.Version-1].tx != 0 {
			return ks.vs[id.Version-1].tx, true
		}
		return 0, false
	}
	if ix := s.ix(); ix != nil {
		if c, ok := ix.ClaimAsOf(id, s.horizon); ok {
			return c.Tx, true
		}
	}
	return 0, false
}

// claim is claim id's state in the overlay, copying its key there from the index if needed;
// nil if it was never recorded.
func (s *CheckState) claim(id record.ClaimID) *claimState {
	ks := s.keys[id.Key]
	if ks == nil {
		if _, ok := s.claimTx(id); !ok {
			return nil
		}
		ks = s.key(id.Key)
	}
	if id.Version >= 1 && id.Version <= len(ks.vs) && ks.vs[id.Version-1].tx != 0 {
		return &ks.vs[id.Version-1]
	}
	return nil
}

// keyVersions is the number of versions of k known before the transaction being checked,
// gaps included.
func (s *CheckState) keyVersions(k record.Key) int {
	if ks := s.keys[k]; ks != nil {
		return len(ks.vs)
	}
	if ix := s.ix(); ix != nil {
		_, n := ix.KeyAsOf(k, s.horizon)
		return n
	}
	return 0
}

func (s *CheckState) artifactTx(id record.ArtifactID) (record.TxID, bool) {
	if as := s.arts[id.Name]; as != nil {
		if id.Version >= 1 && id.Version <= len(as.vs) && as.vs[id.Version-1].tx != 0 {
			return as.vs[id.Version-1].tx, true
		}
		return 0, false
	}
	if ix := s.ix(); ix != nil {
		if tx, _, ok := ix.ArtifactAsOf(id, s.horizon); ok {
			return tx, true
		}
	}
	return 0, false
}

func (s *CheckState) artifact(id record.ArtifactID) *artVersion {
	if as := s.arts[id.Name]; as != nil && id.Version >= 1 && id.Version <= len(as.vs) && as.vs[id.Version-1].tx != 0 {
		return &as.vs[id.Version-1]
	}
	return nil
}

func (s *CheckState) artVersions(name string) int {
	if as := s.arts[name]; as != nil {
		return len(as.vs)
	}
	if ix := s.ix(); ix != nil {
		return ix.ArtifactVersionsAsOf(name, s.horizon)
	}
	return 0
}

// art returns the overlay's state of artifact name, creating it (with the versions the index
// holds).
func (s *CheckState) art(name string) *artState {
	as := s.arts[name]
	if as == nil {
		as = &artState{name: s.intern(name)}
		if ix := s.ix(); ix != nil {
			if n := ix.ArtifactVersionsAsOf(name, s.horizon); n > 0 {
				as.vs = make([]artVersion, n)
				for v := 1; v <= n; v++ {
					if tx, seen, ok := ix.ArtifactAsOf(record.ArtifactID{Name: name, Version: v}, s.horizon); ok {
						as.vs[v-1] = artVersion{tx: tx, aud: s.audience(seen)}
					}
				}
			}
		}
		s.arts[as.name] = as
	}
	return as
}

func (s *CheckState) sourceTx(id string) (record.TxID, bool) {
	if tx, ok := s.sources[id]; ok {
		return tx, true
	}
	if ix := s.ix(); ix != nil {
		return ix.RecordTxAsOf(index.KindSource, id, s.horizon)
	}
	return 0, false
}

// eventKinds are the records the state knows by their IRI alone: the prefix of their IRIs,
// their class, and where the index keeps them.
var eventKinds = []struct {
	prefix, what string
	class        quad.IRI
	kind         index.Kind
}{
	{codec.PrefRevocation, "revocation", codec.MQLRevocation, index.KindRevocation},
	{codec.PrefConfirmation, "confirmation", codec.MQLConfirmation, index.KindConfirmation},
	{codec.PrefReview, "review", codec.MQLReview, index.KindReview},
	{codec.PrefTokenRevoke, "token revocation", codec.MQLTokenRevoke, index.KindTokenRevocation},
	{codec.PrefToken, "token", codec.MQLToken, index.KindToken},
	{codec.PrefRetrieval, "retrieval", codec.MQLRetrieval, index.KindRetrieval},
	{codec.PrefOutcome, "outcome", codec.MQLOutcome, index.KindOutcome},
}

// event finds a revocation, confirmation, review, token, token revocation, retrieval or
// outcome by its IRI.
func (s *CheckState) event(iri quad.IRI) (recordInfo, bool) {
	if r, ok := s.events[iri]; ok {
		return r, true
	}
	ix := s.ix()
	if ix == nil {
		return recordInfo{}, false
	}
	for _, k := range eventKinds {
		if !strings.HasPrefix(string(iri), k.prefix) {
			continue
		}
		// Records the index holds were decoded: their IRIs are canonical.
		if id, err := codec.ParseNamed(k.prefix, k.what, iri); err == nil {
			if tx, ok := ix.RecordTxAsOf(k.kind, id, s.horizon); ok {
				return recordInfo{k.class, tx}, true
			}
		}
		break
	}
	return recordInfo{}, false
}

// lookup finds the record an IRI names among those recorded before the transaction being
// checked: its mql class and transaction.
func (s *CheckState) lookup(iri quad.IRI) (recordInfo, bool) {
	if r, ok := s.first[iri]; ok {
		return r, true
	}
	str := string(iri)
	switch {
	case strings.HasPrefix(str, codec.PrefPrincipal):
		if name, err := codec.ParseNamed(codec.PrefPrincipal, "principal", iri); err == nil {
			if tx, ok := s.principalTx[name]; ok {
				return recordInfo{codec.MQLPrincipal, tx}, true
			}
		}
	case strings.HasPrefix(str, codec.PrefGrant):
		if id, err := codec.ParseNamed(codec.PrefGrant, "grant", iri); err == nil {
			if tx, ok := s.grantTx[id]; ok {
				return recordInfo{codec.MQLGrant, tx}, true
			}
		}
	case strings.HasPrefix(str, codec.PrefSource):
		if id, err := codec.ParseNamed(codec.PrefSource, "source", iri); err == nil {
			if tx, ok := s.sourceTx(id); ok {
				return recordInfo{codec.MQLSource, tx}, true
			}
		}
	case strings.HasPrefix(str, codec.PrefClaim):
		if id, err := codec.ParseClaimIRI(iri); err == nil {
			if tx, ok := s.claimTx(id); ok {
				return recordInfo{codec.MQLClaim, tx}, true
			}
		}
	case strings.HasPrefix(str, codec.PrefArtifact):
		if id, err := codec.ParseArtifactIRI(iri); err == nil {
			if tx, ok := s.artifactTx(id); ok {
				return recordInfo{codec.MQLArtifact, tx}, true
			}
		}
	case iri == codec.IRIStore:
		if s.hasMeta {
			return recordInfo{codec.MQLStore, 1}, true
		}
	default:
		return s.event(iri)
	}
	return recordInfo{}, false
}

// revocations is what is known of the revocations of claim id: in m (the overlay's, or those
// of the transaction being registered), else in the index as of asOf (nil: none).
func (s *CheckState) revocations(id record.ClaimID, m map[record.ClaimID]*revokedBy, asOf record.TxID) *revokedBy {
	if r := m[id]; r != nil {
		return r
	}
	if asOf == 0 || s.horizon == 0 {
		return nil
	}
	first, tx, n := s.ix().RevocationsAsOf(id, asOf)
	if n == 0 {
		return nil
	}
	// The IRI of a revocation the index holds (codec's: the prefix and the escaped id).
	r := &revokedBy{first: quad.IRI(codec.PrefRevocation + url.PathEscape(first)), tx: tx, n: n}
	m[id] = r
	return r
}

// keyCount is the number of keys recorded.
func (s *CheckState) keyCount() int {
	n := 0
	if ix := s.ix(); ix != nil {
		n = ix.KeyCountAsOf(s.horizon)
	}
	for _, ks := range s.keyOrder {
		if !ks.inIndex {
			n++
		}
	}
	return n
}

// overlayKeys is the overlay's keys in the order their first claims were recorded: those the
// index holds by their numbers there, then the others as they came.
func (s *CheckState) overlayKeys() []*keyState {
	ks := slices.Clone(s.keyOrder)
	slices.SortStableFunc(ks, func(a, b *keyState) int {
		switch {
		case a.inIndex && b.inIndex:
			return cmp.Compare(a.seq, b.seq)
		case a.inIndex:
			return -1
		case b.inIndex:
			return 1
		}
		return 0
	})
	return ks
}

// stateRecords adapts the state to the chain check Open runs on every transaction (contiguous
// ids, versions that follow on, references to what was recorded), so that a check and an
// import refuse exactly what Open would. The checker runs it only while every transaction so
// far has chained, so the versions it holds have no gaps.
type stateRecords struct {
	s    *CheckState
	head record.TxID
	dim  int
}

func (r *stateRecords) Top() record.TxID  { return r.head }
func (r *stateRecords) Add(tx *record.Tx) { r.head, r.dim = tx.ID, codec.VectorDimAfter(r.dim, tx) }
func (r *stateRecords) VectorDim() int    { return r.dim }
func (r *stateRecords) HasClaim(id record.ClaimID) bool {
	_, ok := r.s.claimTx(id)
	return ok
}
func (r *stateRecords) HasArtifact(id record.ArtifactID) bool {
	_, ok := r.s.artifactTx(id)
	return ok
}
func (r *stateRecords) KeyVersion(k record.Key) int     { return r.s.keyVersions(k) }
func (r *stateRecords) ArtifactVersion(name string) int { return r.s.artVersions(name) }
func (r *stateRecords) HasSource(id string) bool        { _, ok := r.s.sourceTx(id); return ok }
func (r *stateRecords) HasToken(id string) bool {
	rec, ok := r.s.lookup(codec.TokenIRI(id))
	return ok && rec.class == codec.MQLToken
}
