package graphstore

import (
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
// judge standings, and no more. It keeps a few words per record — never the quads or the
// decoded transactions — so that checking or importing a store streams: its memory grows with
// the number of claims, keys and principals, not with the quads.
type CheckState struct {
	meta    record.StoreMeta
	hasMeta bool

	// Existence and the transaction that recorded each record, filled from the raw quads of
	// every transaction (decodable or not), so that references resolve.
	principalTx map[string]record.TxID
	grantTx     map[string]record.TxID
	sources     map[string]record.TxID
	events      map[quad.IRI]recordInfo // revocations, confirmations, reviews, tokens and their revocations
	keys        map[record.Key]*keyState
	keyOrder    []*keyState
	arts        map[string]*artState

	// Facts from the decoded transactions (filled only while every transaction decodes).
	principals map[string]*record.Principal
	grants     map[string][]*record.Grant // by grantee
	revoked    map[record.ClaimID]*revokedBy

	names  []string         // principal names, by index (claimState.by)
	nameIx map[string]int32 // and back
	auds   [][]string       // seen-by lists, by index (claimState.aud); 0 is everyone
	audIx  map[string]int32
	strs   map[string]string // interned subjects, predicates, artifact names

	cur       *record.Tx // the transaction being checked, for lookups of what it records itself
	curClaims map[record.ClaimID]*record.Claim
	curArts   map[record.ArtifactID]*record.Artifact
}

type recordInfo struct {
	class quad.IRI
	tx    record.TxID
}

// keyState holds the versions of one key, indexed by version-1. A version not (yet) recorded
// is a gap (tx 0).
type keyState struct {
	key record.Key
	vs  []claimState
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

func newCheckState() *CheckState {
	return &CheckState{
		principalTx: map[string]record.TxID{},
		grantTx:     map[string]record.TxID{},
		sources:     map[string]record.TxID{},
		events:      map[quad.IRI]recordInfo{},
		keys:        map[record.Key]*keyState{},
		arts:        map[string]*artState{},
		principals:  map[string]*record.Principal{},
		grants:      map[string][]*record.Grant{},
		revoked:     map[record.ClaimID]*revokedBy{},
		nameIx:      map[string]int32{},
		auds:        [][]string{nil},
		audIx:       map[string]int32{"": 0},
		strs:        map[string]string{},
	}
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
	if ks := s.keys[id.Key]; ks != nil && id.Version >= 1 && id.Version <= len(ks.vs) {
		if c := ks.vs[id.Version-1]; c.tx != 0 && c.known {
			return ClaimFacts{By: s.names[c.by], SeenBy: s.auds[c.aud]}, true
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
	if as := s.arts[id.Name]; as != nil && id.Version >= 1 && id.Version <= len(as.vs) {
		if a := as.vs[id.Version-1]; a.tx != 0 {
			return s.auds[a.aud], true
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
	a := index.Audience(seenBy)
	if i, ok := s.audIx[a]; ok {
		return i
	}
	i := int32(len(s.auds))
	var list []string
	if a != "" {
		list = strings.Split(strings.Clone(a), ",")
	}
	s.auds = append(s.auds, list)
	s.audIx[a] = i
	return i
}

// key returns the state of k, creating it.
func (s *CheckState) key(k record.Key) *keyState {
	ks := s.keys[k]
	if ks == nil {
		k = record.Key{Subject: s.intern(k.Subject), Predicate: s.intern(k.Predicate)}
		ks = &keyState{key: k}
		s.keys[k] = ks
		s.keyOrder = append(s.keyOrder, ks)
	}
	return ks
}

func (s *CheckState) claim(id record.ClaimID) *claimState {
	if ks := s.keys[id.Key]; ks != nil && id.Version >= 1 && id.Version <= len(ks.vs) && ks.vs[id.Version-1].tx != 0 {
		return &ks.vs[id.Version-1]
	}
	return nil
}

func (s *CheckState) artifact(id record.ArtifactID) *artVersion {
	if as := s.arts[id.Name]; as != nil && id.Version >= 1 && id.Version <= len(as.vs) && as.vs[id.Version-1].tx != 0 {
		return &as.vs[id.Version-1]
	}
	return nil
}

func (s *CheckState) art(name string) *artState {
	as := s.arts[name]
	if as == nil {
		as = &artState{name: s.intern(name)}
		s.arts[as.name] = as
	}
	return as
}

// lookup finds the record an IRI names among those recorded before the transaction being
// checked: its mql class and transaction.
func (s *CheckState) lookup(iri quad.IRI) (recordInfo, bool) {
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
			if tx, ok := s.sources[id]; ok {
				return recordInfo{codec.MQLSource, tx}, true
			}
		}
	case strings.HasPrefix(str, codec.PrefClaim):
		if id, err := codec.ParseClaimIRI(iri); err == nil {
			if c := s.claim(id); c != nil {
				return recordInfo{codec.MQLClaim, c.tx}, true
			}
		}
	case strings.HasPrefix(str, codec.PrefArtifact):
		if id, err := codec.ParseArtifactIRI(iri); err == nil {
			if a := s.artifact(id); a != nil {
				return recordInfo{codec.MQLArtifact, a.tx}, true
			}
		}
	case iri == codec.IRIStore:
		if s.hasMeta {
			return recordInfo{codec.MQLStore, 1}, true
		}
	default:
		if r, ok := s.events[iri]; ok {
			return r, true
		}
	}
	return recordInfo{}, false
}

// stateRecords adapts the state to the chain check Open runs on every transaction (contiguous
// ids, versions that follow on, references to what was recorded), so that a check and an
// import refuse exactly what Open would. The checker runs it only while every transaction so
// far has chained, so the versions it holds have no gaps.
type stateRecords struct {
	s    *CheckState
	head record.TxID
}

func (r *stateRecords) Top() record.TxID                      { return r.head }
func (r *stateRecords) Add(tx *record.Tx)                     { r.head = tx.ID }
func (r *stateRecords) HasClaim(id record.ClaimID) bool       { return r.s.claim(id) != nil }
func (r *stateRecords) HasArtifact(id record.ArtifactID) bool { return r.s.artifact(id) != nil }

func (r *stateRecords) KeyVersion(k record.Key) int {
	if ks := r.s.keys[k]; ks != nil {
		return len(ks.vs)
	}
	return 0
}

func (r *stateRecords) ArtifactVersion(name string) int {
	if as := r.s.arts[name]; as != nil {
		return len(as.vs)
	}
	return 0
}

func (r *stateRecords) HasSource(id string) bool {
	_, ok := r.s.sources[id]
	return ok
}

func (r *stateRecords) HasToken(id string) bool {
	rec, ok := r.s.events[codec.TokenIRI(id)]
	return ok && rec.class == codec.MQLToken
}
