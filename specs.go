package mql

import (
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/lifecycle"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/provenance"
)

// Confidence returns a pointer to c, for the optional confidence fields.
func Confidence(c float64) *float64 { return &c }

// PrincipalSpec records a principal. By must be the owner or hold the grant right on "*".
type PrincipalSpec struct {
	Name string
	Type PrincipalType
	By   string
}

// GrantSpec gives Grantee a Right over Scope ("*", "predicate", "Subject.*" or
// "Subject.predicate"). By must hold the grant right over a scope that covers Scope.
type GrantSpec struct {
	Grantee string
	Right   Right
	Scope   string
	By      string
}

// AssertSpec records a claim Subject.Predicate = Value.
type AssertSpec struct {
	Subject    string
	Predicate  string
	Value      Value
	By         string
	Sources    []Source
	Confidence *float64 // nil: 1
	// Kind defaults to Observed when the claim names a source and Inferred otherwise.
	// Confirmed is not assertable: use Confirm.
	Kind       Kind
	ValidFrom  time.Time
	ValidUntil time.Time
	SeenBy     []string // empty: visible to all
	// Vector is the claim's embedding (nil: none), which a search by similarity compares
	// (SearchOptions.Vector): finite, not zero, of the store's dimension (the first vector
	// written fixes it, at most MaxVectorDim). It is stored with the claim, in the same
	// commit, and exported with it.
	Vector []float32
}

// MaxVectorDim is the most dimensions a vector may have.
const MaxVectorDim = record.MaxVectorDim

// RevokeSpec revokes one claim version ("Subject.predicate@N").
type RevokeSpec struct {
	Claim      string
	By         string
	Because    string
	ReplacedBy string // optional: a version of the same key that is live from now on
	// Ref and ReplacedByRef are Claim and ReplacedBy for a caller that holds them typed: each,
	// when it is not zero, is used and its text ignored.
	Ref           ClaimRef `json:"-"`
	ReplacedByRef ClaimRef `json:"-"`
}

// ConfirmSpec confirms the live claim of a key ("Subject.predicate", or its exact version).
type ConfirmSpec struct {
	Claim string
	By    string
	Ref   ClaimRef `json:"-"` // Claim typed: when it is not zero, it is used and Claim ignored
}

// DeriveSpec records a new version of an artifact derived from claims and artifacts. A claim
// named without @N means its live version; an artifact named without @N, its newest version.
type DeriveSpec struct {
	Artifact   string
	From       []string
	By         string
	Confidence *float64 // nil: 1 (capped by the inputs either way)
	// SeenBy defaults to the principals who can see every input, when some input is restricted.
	SeenBy []string
	// Run, when set, records the artifact as a decision of By's run of that name: its From list
	// is what the decision cites (see Reader.ForRun).
	Run string
	// FromRefs is From for a caller that holds the references typed: when it is not empty, it
	// is used and From ignored.
	FromRefs []NodeRef `json:"-"`
}

// ReviewSpec records that By reviewed an artifact ("name" for its newest version, or "name@N").
type ReviewSpec struct {
	Artifact string
	By       string
	Because  string
	Ref      ArtifactRef `json:"-"` // Artifact typed: when it is not zero, it is used and Artifact ignored
}

// DecaySpec declares a half-life for a predicate. By must be the owner or hold grant on it.
type DecaySpec struct {
	Predicate string
	HalfLife  time.Duration
	By        string
}

func unknownPrincipal(name string) error {
	return fmt.Errorf("%q: %w: record it first, e.g. `principal %s agent`", name, ErrUnknownPrincipal, name)
}

// recordID is the id of the n-th record of its kind in tx: "g6.1", "r9.2" (a transaction of
// several statements records several of a kind).
func recordID(prefix string, tx *record.Tx, n int) string {
	return prefix + strconv.FormatInt(int64(tx.ID), 10) + "." + strconv.Itoa(n)
}

func (s PrincipalSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	if err := checkName("principal", s.Name); err != nil {
		return err
	}
	switch s.Type {
	case User, Agent, Tool:
	default:
		return fmt.Errorf("principal type %q: %w: use user, agent or tool", s.Type, ErrInvalid)
	}
	if _, err := authority.AddPrincipal(v, s.By); err != nil {
		return err
	}
	if p := v.Principal(s.Name); p != nil {
		if p.Type != s.Type {
			return fmt.Errorf("principal %s: %w: it is already recorded as %s (tx %d); a principal keeps its type", s.Name, ErrConflict, article(string(p.Type)), p.Tx)
		}
		// Declaring it again, the same, is a no-op: scripts can be run again.
		*rc = Receipt{Tx: int64(p.Tx), At: v.TxTime(p.Tx), Ref: s.Name, Unchanged: true, Note: "already recorded"}
		return nil
	}
	tx.Principals = append(tx.Principals, &record.Principal{Name: s.Name, Type: s.Type, Tx: tx.ID})
	rc.Ref = s.Name
	return nil
}

func (s GrantSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	if v.Principal(s.Grantee) == nil {
		return unknownPrincipal(s.Grantee)
	}
	switch s.Right {
	case RightAssert, RightRevoke, RightConfirm, RightGrant:
	default:
		return fmt.Errorf("right %q: %w: use assert, revoke, confirm or grant", s.Right, ErrInvalid)
	}
	if !authority.ValidScope(s.Scope) {
		return fmt.Errorf("scope %q: %w: use *, a predicate, Subject.* or Subject.predicate", s.Scope, ErrBadReference)
	}
	if _, err := authority.Grant(v, s.By, s.Scope); err != nil {
		return err
	}
	for _, g := range v.Grants(s.Grantee) {
		if g.Right == s.Right && g.Scope == s.Scope && g.By == s.By {
			// The same grant again is a no-op: scripts can be run again.
			*rc = Receipt{Tx: int64(g.Tx), At: v.TxTime(g.Tx), Ref: g.ID, Unchanged: true, Note: "already granted"}
			return nil
		}
	}
	id := recordID("g", tx, len(tx.Grants)+1)
	tx.Grants = append(tx.Grants, &record.Grant{ID: id, Grantee: s.Grantee, Right: s.Right, Scope: s.Scope, By: s.By, Tx: tx.ID})
	rc.Ref = id
	return nil
}

func (s AssertSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	c, liveKind, err := newPending(v).buildClaim(tx, s)
	if err != nil {
		return err
	}
	*rc = claimReceipt(c, tx)
	rc.Note = rankNote(c, liveKind, len(s.Sources) > 0)
	return nil
}

// rankNote says why a new claim did not become live, when its kind ranked below the live
// claim's (liveKind): it is contested, or filed as corroborating evidence. "" otherwise.
func rankNote(c *record.Claim, liveKind Kind, sourced bool) string {
	var note string
	switch {
	case c.Contests != nil:
		note = fmt.Sprintf("%s claim cannot supersede %s one", article(string(c.Kind)), article(string(liveKind)))
	case c.Corroborates != nil:
		return fmt.Sprintf("it agrees with the live %s claim, which ranks above %s one: filed as corroborating evidence", liveKind, article(string(c.Kind)))
	default:
		return ""
	}
	switch {
	case c.Kind == Inferred && !sourced:
		note += "; name a source"
	case liveKind == Confirmed:
		note += "; revoke the confirmed claim first, or confirm this one once it is live"
	}
	return note
}

func claimReceipt(c *record.Claim, tx *record.Tx) Receipt {
	rc := Receipt{Ref: c.ID.String(), State: Live}
	switch {
	case c.Supersedes != nil:
		rc.Supersedes = c.Supersedes.String()
	case c.Contests != nil:
		rc.State, rc.Contests = Contested, c.Contests.String()
	case c.Corroborates != nil:
		rc.State, rc.Corroborates = Superseded, c.Corroborates.String()
	}
	if !c.ValidUntil.IsZero() && !tx.Time.Before(c.ValidUntil) {
		rc.State = Expired
	}
	return rc
}

// pending is the newest state plus the claims a transaction has built so far, so that a batch
// numbers versions and decides supersession exactly as separate transactions would.
type pending struct {
	v        *index.View
	as       map[string]*index.View // v as each asserter sees it
	versions map[record.Key]int
	live     map[audKey]liveClaim
	typed    map[string][]*record.Claim // by predicate, the first claim built so far of each audience: the value types they fix
	sources  map[string]*record.Source
	lastLive Kind // the kind of the live claim the last claim built was ranked against
}

type audKey struct {
	key      record.Key
	audience string
}

type liveClaim struct {
	id    record.ClaimID
	kind  Kind
	value Value
	ok    bool // false: the key has no live claim
}

func newPending(v *index.View) *pending {
	return &pending{v: v, as: map[string]*index.View{}, versions: map[record.Key]int{}, live: map[audKey]liveClaim{},
		typed: map[string][]*record.Claim{}, sources: map[string]*record.Source{}}
}

// viewAs is the newest state as principal by may see it.
func (p *pending) viewAs(by string) *index.View {
	if v := p.as[by]; v != nil {
		return v
	}
	v := p.v.Index().View(p.v.AsOf(), p.v.Now(), by)
	p.as[by] = v
	return v
}

func (p *pending) versionCount(k record.Key) int {
	if n, ok := p.versions[k]; ok {
		return n
	}
	return p.v.VersionCount(k)
}

func (p *pending) liveOf(k record.Key, audience string) liveClaim {
	if l, ok := p.live[audKey{k, audience}]; ok {
		return l
	}
	if e := p.v.LiveIn(k, audience); e != nil {
		return liveClaim{id: e.ID, kind: p.v.EffectiveKind(e), value: e.Value, ok: true}
	}
	return liveClaim{}
}

// valueType is the type of the first claim of pred that by may see: the type by's claim must
// have. It consults only what by may see, so a refusal tells by nothing about hidden claims.
func (p *pending) valueType(by, pred string) (record.ValueType, bool) {
	mine := p.viewAs(by)
	if t, ok := mine.ValueType(pred); ok {
		return t, true
	}
	for _, c := range p.typed[pred] {
		if mine.CanSee(c.SeenBy) {
			return c.Value.Type, true
		}
	}
	return "", false
}

func (p *pending) source(id string) *record.Source {
	if s := p.sources[id]; s != nil {
		return s
	}
	return p.v.Source(id)
}

// buildClaim records the claim s asks for and returns it with the kind of the live claim it
// was ranked against (its audience's live claim of the key; "" when there was none).
func (p *pending) buildClaim(tx *record.Tx, s AssertSpec) (*record.Claim, Kind, error) {
	c, err := p.buildClaim1(tx, s)
	if err != nil {
		return nil, "", err
	}
	return c, p.lastLive, nil
}

func (p *pending) buildClaim1(tx *record.Tx, s AssertSpec) (*record.Claim, error) {
	v := p.v
	if err := checkName("subject", s.Subject); err != nil {
		return nil, err
	}
	if err := checkName("predicate", s.Predicate); err != nil {
		return nil, err
	}
	key := record.Key{Subject: s.Subject, Predicate: s.Predicate}
	if err := checkValue(key, s.Value); err != nil {
		return nil, err
	}
	if t, ok := p.valueType(s.By, s.Predicate); ok && t != s.Value.Type {
		return nil, fmt.Errorf("%s = %s: %w: %s holds %s values (fixed by the first of its claims that %s may see); give a %s", key, s.Value, ErrValueType, s.Predicate, t, s.By, t)
	}
	conf := 1.0
	if s.Confidence != nil {
		conf = *s.Confidence
	}
	if !(conf >= 0 && conf <= 1) {
		return nil, fmt.Errorf("confidence %g: %w: confidence must be between 0 and 1", conf, ErrInvalid)
	}
	kind := s.Kind
	switch kind {
	case "":
		kind = Inferred
		if len(s.Sources) > 0 {
			kind = Observed
		}
	case Observed, Inferred:
	case Confirmed:
		return nil, fmt.Errorf("kind confirmed: %w: a claim becomes confirmed when a user confirms it; assert it as observed, then `confirm %s by USER`", ErrInvalid, key)
	default:
		return nil, fmt.Errorf("kind %q: %w: use observed or inferred", kind, ErrInvalid)
	}
	if !s.ValidFrom.IsZero() && !s.ValidUntil.IsZero() && !s.ValidUntil.After(s.ValidFrom) {
		return nil, fmt.Errorf("valid until %s is not after valid from %s: %w", s.ValidUntil.Format(time.RFC3339), s.ValidFrom.Format(time.RFC3339), ErrInvalid)
	}
	seen, err := checkPrincipals(v, s.SeenBy)
	if err != nil {
		return nil, err
	}
	if err := checkAudience(v, s.By, seen); err != nil {
		return nil, err
	}
	if err := checkClaimVector(v, tx, key, s.Vector); err != nil {
		return nil, err
	}
	aud := index.Audience(seen)
	grant, err := authority.Assert(v, s.By, key)
	if err != nil {
		return nil, err
	}
	var srcIDs, excerpts []string
	quotes := false
	for _, src := range s.Sources {
		if err := checkSource(src); err != nil {
			return nil, err
		}
		// The claim cites its own audience's record of the source: one recorded by a claim
		// that every principal who may see this one may see too, and no other. What it quotes
		// from it is its own: the citation's, not the source's.
		sk := record.SourceKey(src.ID, aud)
		if i := slices.Index(srcIDs, sk); i >= 0 {
			switch {
			case src.Excerpt == "" || src.Excerpt == excerpts[i]:
			case excerpts[i] == "":
				excerpts[i], quotes = src.Excerpt, true
			default:
				return nil, fmt.Errorf("source %q: %w: the claim cites it twice with two excerpts; cite it once, or give the other page its own id", src.ID, ErrInvalid)
			}
			continue
		}
		srcIDs, excerpts = append(srcIDs, sk), append(excerpts, src.Excerpt)
		quotes = quotes || src.Excerpt != ""
		if old := p.source(sk); old != nil {
			if (src.URI != "" && src.URI != old.URI) || (src.Revision != "" && src.Revision != old.Revision) {
				return nil, fmt.Errorf("source %q: %w: it is already recorded with another URI or revision; give it a new id (e.g. with its revision)", src.ID, ErrConflict)
			}
			continue
		}
		ns := &record.Source{ID: sk, URI: src.URI, Revision: src.Revision, Tx: tx.ID}
		tx.Sources = append(tx.Sources, ns)
		p.sources[sk] = ns
	}
	if !quotes {
		excerpts = nil
	}
	c := &record.Claim{
		ID:         record.ClaimID{Key: key, Version: p.versionCount(key) + 1},
		Value:      normValue(s.Value),
		By:         s.By,
		Sources:    srcIDs,
		Excerpts:   excerpts,
		Kind:       kind,
		Confidence: conf,
		ValidFrom:  utc(s.ValidFrom),
		ValidUntil: utc(s.ValidUntil),
		SeenBy:     seen,
		Grant:      grant,
		Vector:     slices.Clone(s.Vector),
		Tx:         tx.ID,
	}
	live := p.liveOf(key, aud)
	p.lastLive = live.kind
	id := live.id
	switch lifecycle.Relate(live.ok, live.kind, live.value, kind, c.Value) {
	case lifecycle.Supersedes:
		c.Supersedes = &id
	case lifecycle.Corroborates:
		c.Corroborates = &id
	case lifecycle.Contests:
		c.Contests = &id
	}
	tx.Claims = append(tx.Claims, c)
	p.versions[key] = c.ID.Version
	if firsts := p.typed[s.Predicate]; !slices.ContainsFunc(firsts, func(f *record.Claim) bool { return index.Audience(f.SeenBy) == aud }) {
		p.typed[s.Predicate] = append(firsts, c)
	}
	if c.Contests == nil && c.Corroborates == nil {
		p.live[audKey{key, aud}] = liveClaim{id: c.ID, kind: kind, value: c.Value, ok: c.ValidUntil.IsZero() || tx.Time.Before(c.ValidUntil)}
	}
	return c, nil
}

// checkClaimVector checks the vector of a claim of key being built into tx: nil, or one
// record.CheckVector accepts of the store's dimension, which the store's first vector fixed,
// or else the first one of tx.
func checkClaimVector(v *index.View, tx *record.Tx, key record.Key, vec []float32) error {
	if vec == nil {
		return nil
	}
	if err := record.CheckVector(vec); err != nil {
		return fmt.Errorf("vector of %s: %w: %w", key, ErrInvalid, err)
	}
	dim := codec.VectorDimAfter(v.Index().VectorDim(), tx)
	if dim != 0 && len(vec) != dim {
		return fmt.Errorf("vector of %s: %w: %w: %d dimensions, and the store's vectors have %d (fixed by its first); embed with the model the store's vectors came from", key, ErrInvalid, ErrVector, len(vec), dim)
	}
	return nil
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}

func normValue(x Value) Value {
	if x.Type == record.Time {
		x.Time = x.Time.UTC()
	}
	return x
}

// maxLiteral bounds a string value or excerpt, so no single claim can exhaust memory.
const maxLiteral = 1 << 20

func checkValue(key record.Key, x Value) error {
	switch x.Type {
	case record.String:
		if len(x.Str) > maxLiteral {
			return fmt.Errorf("%s: %w: string values are at most 1 MiB", key, ErrInvalid)
		}
	case record.Number:
		if x.Num != x.Num || x.Num > 1e308 || x.Num < -1e308 {
			return fmt.Errorf("%s: %w: number %v is not finite", key, ErrInvalid, x.Num)
		}
	case record.Bool:
	case record.Time:
		if x.Time.IsZero() {
			return fmt.Errorf("%s: %w: time value is zero", key, ErrInvalid)
		}
	case record.Ref:
		if err := checkRefValue(x.Str); err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
	default:
		return fmt.Errorf("%s: %w: the value has no type; use mql.String, Number, Bool, Time or Ref", key, ErrValueType)
	}
	return nil
}

func checkSource(s Source) error {
	if s.ID == "" || len(s.ID) > 1024 {
		return fmt.Errorf("source id %.40q: %w: a source needs an id of 1 to 1024 bytes", s.ID, ErrInvalid)
	}
	if strings.IndexByte(s.ID, 0) >= 0 {
		return fmt.Errorf("source id %.40q: %w: a source id may not contain a NUL byte", s.ID, ErrInvalid)
	}
	if len(s.Excerpt) > maxLiteral {
		return fmt.Errorf("source %q: %w: excerpts are at most 1 MiB", s.ID, ErrInvalid)
	}
	return nil
}

// checkAudience refuses a claim or artifact that its writer would not itself see: only the
// owner writes for others. Writing into an audience one is not in would let a principal
// supersede or contest what it may not read, and learn from the receipt what it holds.
func checkAudience(v *index.View, by string, seen []string) error {
	if authority.CanSee(v.Meta().Owner, by, seen) {
		return nil
	}
	return fmt.Errorf("seen by %s: %w: %s would not see what it writes; add %s to seen by (only the owner writes for others)", strings.Join(seen, ", "), ErrInvalid, by, by)
}

func checkPrincipals(v *index.View, names []string) ([]string, error) {
	var out []string
	for _, n := range names {
		if v.Principal(n) == nil {
			return nil, unknownPrincipal(n)
		}
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// resolveClaim finds a claim version visible in v; version 0 means the live claim. What it
// says when there is none is built from what v's reader may see only, so it reads the same
// whether a version the reader may not see exists or never did.
func resolveClaim(v *index.View, id record.ClaimID) (*index.ClaimEntry, error) {
	if id.Version == 0 {
		if e := v.LiveClaim(id.Key); e != nil {
			return e, nil
		}
		if vs := v.Versions(id.Key); len(vs) > 0 {
			return nil, fmt.Errorf("%s: %w: it has no live claim; name a version (the newest is %s)", id.Key, ErrNotFound, vs[len(vs)-1].ID)
		}
		return nil, fmt.Errorf("%s: %w: no claim was ever recorded for it", id.Key, ErrNotFound)
	}
	if e := v.Claim(id); e != nil {
		return e, nil
	}
	if vs := v.Versions(id.Key); len(vs) > 0 {
		return nil, fmt.Errorf("%s: %w: no such version; the newest is %s", id, ErrNotFound, vs[len(vs)-1].ID)
	}
	return nil, fmt.Errorf("%s: %w: no claim was ever recorded for %s", id, ErrNotFound, id.Key)
}

func (s RevokeSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	c, err := claimRef(s.Ref, s.Claim)
	if err != nil {
		return err
	}
	if c.Version == 0 {
		return fmt.Errorf("revoke %s: %w: name the exact version, e.g. %s@1", c, ErrBadReference, c)
	}
	id := c.id()
	// The revoker must be able to see what it revokes; otherwise it does not exist for it.
	mine := v.Index().View(v.AsOf(), v.Now(), s.By)
	e, err := resolveClaim(mine, id)
	if err != nil {
		return err
	}
	if r := v.Revocation(e); r != nil {
		return fmt.Errorf("%s: %w: already revoked by %s in tx %d", id, ErrConflict, r.By, r.Tx)
	}
	standing, err := authority.Revoke(v, s.By, e.By, id)
	if err != nil {
		return err
	}
	rev := &record.Revocation{ID: recordID("r", tx, len(tx.Revocations)+1), Claim: id, By: s.By, Because: s.Because, Standing: standing, Tx: tx.ID}
	if s.ReplacedBy != "" || s.ReplacedByRef != (ClaimRef{}) {
		r, err := claimRef(s.ReplacedByRef, s.ReplacedBy)
		if err != nil {
			return err
		}
		if r.Version == 0 {
			return fmt.Errorf("replaced by %s: %w: name the exact version", r, ErrBadReference)
		}
		rid := r.id()
		if rid.Key != id.Key || rid.Version == id.Version {
			return fmt.Errorf("replaced by %s: %w: the replacement must be another version of %s", rid, ErrBadReference, id.Key)
		}
		re, err := resolveClaim(mine, rid)
		if err != nil {
			return err
		}
		if re.Audience() != e.Audience() {
			return fmt.Errorf("replaced by %s: %w: it is seen by %q and %s by %q; a replacement must have the same audience", rid, ErrConflict, re.Audience(), id, e.Audience())
		}
		if v.Revocation(re) != nil {
			return fmt.Errorf("replaced by %s: %w: it is revoked", rid, ErrConflict)
		}
		st, _ := v.State(re)
		if live := v.LiveIn(id.Key, e.Audience()); st != Live && live != nil && live != e {
			return fmt.Errorf("replaced by %s: %w: %s is live; revoke or supersede it instead", rid, ErrConflict, live.ID)
		}
		if st == Expired {
			return fmt.Errorf("replaced by %s: %w: it has expired", rid, ErrConflict)
		}
		rev.ReplacedBy = &rid
	}
	tx.Revocations = append(tx.Revocations, rev)
	rc.Ref, rc.State = id.String(), Revoked
	return nil
}

func (s ConfirmSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	c, err := claimRef(s.Ref, s.Claim)
	if err != nil {
		return err
	}
	mine := v.Index().View(v.AsOf(), v.Now(), s.By)
	e, err := resolveClaim(mine, c.id())
	if err != nil {
		return err
	}
	if st, _ := v.State(e); st != Live {
		return fmt.Errorf("confirm %s: %w: it is %s; only the live claim can be confirmed", e.ID, ErrConflict, st)
	}
	if err := authority.MayConfirm(v, s.By); err != nil { // before a conflict: an agent never may
		return fmt.Errorf("confirm %s: %w", e.ID, err)
	}
	if c := v.Confirmation(e); c != nil {
		return fmt.Errorf("confirm %s: %w: already confirmed by %s in tx %d", e.ID, ErrConflict, c.By, c.Tx)
	}
	standing, err := authority.Confirm(v, s.By, e.ID)
	if err != nil {
		return fmt.Errorf("confirm %s: %w", e.ID, err)
	}
	tx.Confirmations = append(tx.Confirmations, &record.Confirmation{ID: recordID("c", tx, len(tx.Confirmations)+1), Claim: e.ID, By: s.By, Standing: standing, Tx: tx.ID})
	rc.Ref, rc.State = e.ID.String(), Live
	return nil
}

// resolveArtifact finds an artifact version visible in v; version 0 means the newest visible.
// Like resolveClaim, what it says when there is none depends on nothing v's reader may not see.
func resolveArtifact(v *index.View, id record.ArtifactID) (*index.ArtifactNode, error) {
	latest := v.LatestArtifact(id.Name)
	if latest == nil {
		return nil, fmt.Errorf("artifact %s: %w: derive it first", id.Name, ErrNotFound)
	}
	if id.Version == 0 {
		return latest, nil
	}
	if n := v.Artifact(id); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("%s: %w: no such version; the newest is %s", id, ErrNotFound, latest.ID)
}

// resolveNode resolves a claim or artifact reference in v.
func resolveNode(v *index.View, ref NodeRef) (record.NodeRef, error) {
	if c, ok := ref.(ClaimRef); ok {
		e, err := resolveClaim(v, c.id())
		if err != nil {
			return record.NodeRef{}, err
		}
		cid := e.ID
		return record.NodeRef{Claim: &cid}, nil
	}
	n, err := resolveArtifact(v, ref.(ArtifactRef).id())
	if err != nil {
		return record.NodeRef{}, err
	}
	aid := n.ID
	return record.NodeRef{Artifact: &aid}, nil
}

func (s DeriveSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	if err := checkName("artifact", s.Artifact); err != nil {
		return err
	}
	if len(s.From) == 0 && len(s.FromRefs) == 0 {
		return fmt.Errorf("derive %s: %w: name what it is derived from", s.Artifact, ErrInvalid)
	}
	conf := 1.0
	if s.Confidence != nil {
		conf = *s.Confidence
	}
	if !(conf >= 0 && conf <= 1) {
		return fmt.Errorf("confidence %g: %w: confidence must be between 0 and 1", conf, ErrInvalid)
	}
	mine := v.Index().View(v.AsOf(), v.Now(), s.By)
	var inputs []record.NodeRef
	var restricted [][]string
	for ref, err := range s.inputs() {
		if err != nil {
			return err
		}
		n, err := resolveNode(mine, ref)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(inputs, func(o record.NodeRef) bool { return o.String() == n.String() }) {
			continue
		}
		// Deriving a version from the artifact's own earlier version folds it forward; any
		// other input that rests on the artifact would close a cycle.
		if n.Artifact != nil && n.Artifact.Name != s.Artifact && provenance.DependsOn(mine, v, n, s.Artifact) {
			return fmt.Errorf("derive %s from %s: %w: %s already rests on %s", s.Artifact, n, ErrCycle, n, s.Artifact)
		}
		if seen := seenByOf(v, n); len(seen) > 0 {
			restricted = append(restricted, seen)
		}
		inputs = append(inputs, n)
	}
	seen, err := checkPrincipals(v, s.SeenBy)
	if err != nil {
		return err
	}
	if len(seen) == 0 && len(restricted) > 0 {
		seen = restricted[0]
		for _, r := range restricted[1:] {
			seen = slices.DeleteFunc(slices.Clone(seen), func(p string) bool { return !slices.Contains(r, p) })
		}
		if len(seen) == 0 {
			return fmt.Errorf("derive %s: %w: its inputs are seen by disjoint principals; say who may see it with `seen by`", s.Artifact, ErrInvalid)
		}
	}
	if err := checkAudience(v, s.By, seen); err != nil {
		return err
	}
	if s.Run != "" {
		if err := checkName("run", s.Run); err != nil {
			return err
		}
	}
	a := &record.Artifact{
		Run:         s.Run,
		ID:          record.ArtifactID{Name: s.Artifact, Version: v.ArtifactVersionCount(s.Artifact) + 1},
		DerivedFrom: inputs,
		By:          s.By,
		Confidence:  conf,
		SeenBy:      seen,
		Tx:          tx.ID,
	}
	// Like a claim, a version supersedes only within its own audience: versions seen by
	// different principals are separate memories, and one never changes the other.
	if prev := v.LatestArtifactIn(s.Artifact, index.Audience(seen)); prev != nil {
		id := prev.ID
		a.Supersedes = &id
		rc.Supersedes = id.String()
	}
	tx.Artifacts = append(tx.Artifacts, a)
	rc.Ref, rc.State = a.ID.String(), Live
	return nil
}

func seenByOf(v *index.View, n record.NodeRef) []string {
	if n.Claim != nil {
		return v.Claim(*n.Claim).SeenBy
	}
	return v.Artifact(*n.Artifact).SeenBy
}

// inputs yields what s is derived from, each judged as it comes, so that an error names the
// first input at fault whichever way the inputs were given.
func (s DeriveSpec) inputs() iter.Seq2[NodeRef, error] {
	return func(yield func(NodeRef, error) bool) {
		if len(s.FromRefs) > 0 {
			for _, n := range s.FromRefs {
				if !yield(n, checkNode(n)) {
					return
				}
			}
			return
		}
		for _, f := range s.From {
			if !yield(ParseNodeRef(f)) {
				return
			}
		}
	}
}

func (s ReviewSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	a, err := artifactRef(s.Ref, s.Artifact)
	if err != nil {
		return err
	}
	n, err := resolveArtifact(v.Index().View(v.AsOf(), v.Now(), s.By), a.id())
	if err != nil {
		return err
	}
	if len(s.Because) > maxLiteral {
		return fmt.Errorf("review %s: %w: the reason is over 1 MiB", n.ID, ErrInvalid)
	}
	tx.Reviews = append(tx.Reviews, &record.Review{ID: recordID("v", tx, len(tx.Reviews)+1), Artifact: n.ID, By: s.By, Because: s.Because, Tx: tx.ID})
	rc.Ref, rc.State = n.ID.String(), Live
	if v.ArtifactSupersededBy(n) != nil {
		rc.State = Superseded
	}
	return nil
}

func (s DecaySpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	if err := checkName("predicate", s.Predicate); err != nil {
		return err
	}
	if s.HalfLife <= 0 {
		return fmt.Errorf("half-life %s: %w: it must be positive", s.HalfLife, ErrInvalid)
	}
	if _, err := authority.Decay(v, s.By, s.Predicate); err != nil {
		return err
	}
	tx.Decays = append(tx.Decays, &record.Decay{Predicate: s.Predicate, HalfLife: s.HalfLife, By: s.By, Tx: tx.ID})
	rc.Ref = s.Predicate
	return nil
}

// article is "a user", "an agent".
func article(noun string) string {
	if noun != "" && strings.ContainsRune("aeiou", rune(noun[0])) {
		return "an " + noun
	}
	return "a " + noun
}
