package mql

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/provenance"
)

// Value is a typed claim value: a string, number, bool, time or a reference by name.
type Value = record.Value

// ValueType names a value's type.
type ValueType = record.ValueType

// Value types.
const (
	TypeString = record.String
	TypeNumber = record.Number
	TypeBool   = record.Bool
	TypeTime   = record.Time
	TypeRef    = record.Ref
)

// String returns a string value.
func String(s string) Value { return Value{Type: record.String, Str: s} }

// Number returns a number value.
func Number(n float64) Value { return Value{Type: record.Number, Num: n} }

// Bool returns a bool value.
func Bool(b bool) Value { return Value{Type: record.Bool, Bool: b} }

// Time returns a time value.
func Time(t time.Time) Value { return Value{Type: record.Time, Time: t.UTC()} }

// Ref returns a reference value naming a subject, artifact or claim.
func Ref(name string) Value { return Value{Type: record.Ref, Str: name} }

// State is the state of a claim or artifact.
type State = index.State

// Claim states. Artifacts are Live or Superseded.
const (
	Live       = index.Live
	Superseded = index.Superseded
	Revoked    = index.Revoked
	Expired    = index.Expired
	Contested  = index.Contested
)

// Kind is how a claim was obtained, ranked Confirmed > Observed > Inferred.
type Kind = record.Kind

// Kinds.
const (
	Confirmed = record.Confirmed
	Observed  = record.Observed
	Inferred  = record.Inferred
)

// PrincipalType is user, agent or tool.
type PrincipalType = record.PrincipalType

// Principal types.
const (
	User  = record.User
	Agent = record.Agent
	Tool  = record.Tool
)

// Right is what a grant allows.
type Right = record.Right

// Rights.
const (
	RightAssert  = record.RightAssert
	RightRevoke  = record.RightRevoke
	RightConfirm = record.RightConfirm
	RightGrant   = record.RightGrant
)

// Source is the evidence a claim was read from.
type Source struct {
	ID       string `json:"id"`
	Excerpt  string `json:"excerpt,omitempty"`
	URI      string `json:"uri,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// Claim is one claim version as a reader sees it.
type Claim struct {
	Ref        string    `json:"ref"` // Subject.predicate@N
	Subject    string    `json:"subject"`
	Predicate  string    `json:"predicate"`
	Version    int       `json:"version"`
	Value      Value     `json:"value"`
	ValueType  ValueType `json:"value_type"`
	State      State     `json:"state"`
	Since      time.Time `json:"since"` // when it entered State
	Kind       Kind      `json:"kind"`  // effective: confirmed once confirmed
	Confidence float64   `json:"confidence"`
	Effective  float64   `json:"effective_confidence"` // after decay, at the read's time
	By         string    `json:"asserted_by"`
	Sources    []Source  `json:"sources"`
	Tx         int64     `json:"tx"`
	RecordedAt time.Time `json:"recorded_at"`
	ValidFrom  time.Time `json:"valid_from,omitzero"`
	ValidUntil time.Time `json:"valid_until,omitzero"`
	SeenBy     []string  `json:"seen_by,omitempty"`
	Grant      string    `json:"grant,omitempty"` // standing behind the assertion, if one was needed
	// References to neighbours in the key's history; empty when none or not visible.
	Supersedes   string `json:"supersedes,omitempty"`
	SupersededBy string `json:"superseded_by,omitempty"`
	Contests     string `json:"contests,omitempty"`
	Corroborates string `json:"corroborates,omitempty"`
}

// ReviewState says whether an artifact must be looked at again.
type ReviewState string

// Review states.
const (
	ReviewOK    ReviewState = "ok"
	NeedsReview ReviewState = "needs review"
	ReviewStale ReviewState = "superseded" // an old artifact version: its review no longer matters
)

// Artifact is one artifact version as a reader sees it.
type Artifact struct {
	Ref         string      `json:"ref"` // name@N
	Name        string      `json:"name"`
	Version     int         `json:"version"`
	State       State       `json:"state"` // live or superseded
	Review      ReviewState `json:"review"`
	Stale       []string    `json:"stale,omitempty"` // inputs (transitive) that make it need review (rule 4, docs/MODEL.md)
	By          string      `json:"derived_by"`
	Run         string      `json:"run,omitempty"` // the run it was decided in, when the reader may see the deriver's runs
	DerivedFrom []string    `json:"derived_from"`
	Confidence  float64     `json:"confidence"`
	Effective   float64     `json:"effective_confidence"` // capped by its inputs (rule 6)
	Tx          int64       `json:"tx"`
	RecordedAt  time.Time   `json:"recorded_at"`
	SeenBy      []string    `json:"seen_by,omitempty"`
	LastReview  *Review     `json:"last_review,omitempty"`
}

// Review records that a principal looked at an artifact again.
type Review struct {
	Artifact string    `json:"artifact"`
	By       string    `json:"by"`
	Because  string    `json:"because,omitempty"`
	Tx       int64     `json:"tx"`
	At       time.Time `json:"at"`
}

// Revocation is a hard invalidation of a claim, with who, when, why, the standing used and
// what replaced it.
type Revocation struct {
	Claim      string    `json:"claim"`
	By         string    `json:"by"`
	At         time.Time `json:"at"`
	Tx         int64     `json:"tx"`
	Because    string    `json:"because,omitempty"`
	Standing   string    `json:"standing"` // a grant id, "owner" or "own claim"
	ReplacedBy string    `json:"replaced_by,omitempty"`
	// StandingGrant is the grant Standing names, when it names one.
	StandingGrant *Grant `json:"standing_grant,omitempty"`
}

// Grant is a right held over a scope.
type Grant struct {
	ID      string    `json:"id"`
	Grantee string    `json:"grantee"`
	Right   Right     `json:"right"`
	Scope   string    `json:"scope"`
	By      string    `json:"by"`
	Tx      int64     `json:"tx"`
	At      time.Time `json:"at"`
}

// Receipt is what a write returns.
type Receipt struct {
	Tx  int64     `json:"tx"`
	At  time.Time `json:"at"`
	Ref string    `json:"ref,omitempty"` // what was written: a claim or artifact reference, a principal, a grant id
	// State of the written claim or artifact.
	State      State  `json:"state,omitempty"`
	Supersedes string `json:"supersedes,omitempty"`
	Contests   string `json:"contests,omitempty"`
	// Corroborates names the live claim a lower-ranked, agreeing claim was filed under.
	Corroborates string `json:"corroborates,omitempty"`
	// Unchanged says that the write found its record there already (a principal declared again
	// with the same type, a grant given again) and wrote nothing; Tx and At are the transaction
	// that recorded it.
	Unchanged bool `json:"unchanged,omitempty"`
	// Note explains a state a writer may not expect, e.g. why a claim is contested.
	Note string `json:"note,omitempty"`
}

// NodeKind says what a provenance tree node holds.
type NodeKind string

// Node kinds.
const (
	NodeClaim        NodeKind = "claim"
	NodeArtifact     NodeKind = "artifact"
	NodeSource       NodeKind = "source"
	NodeGrant        NodeKind = "grant"
	NodeRevocation   NodeKind = "revocation"
	NodeConfirmation NodeKind = "confirmation"
	NodeReview       NodeKind = "review"
)

// Node is one node of a provenance tree. Exactly the field named by Kind is set. Relation
// says how the node relates to its parent: "from" (source), "supersedes", "standing",
// "revoked", "confirmed", "derived from", "reviewed", "contests".
type Node struct {
	Kind     NodeKind  `json:"kind"`
	Relation string    `json:"relation,omitempty"`
	Claim    *Claim    `json:"claim,omitempty"`
	Artifact *Artifact `json:"artifact,omitempty"`
	Source   *Source   `json:"source,omitempty"`
	Grant    *Grant    `json:"grant,omitempty"`
	Standing string    `json:"standing,omitempty"` // for a grant-less standing ("owner", "open"), and a confirmation's
	// StandingGrant is the grant a confirmation's Standing names, when it names one.
	StandingGrant *Grant      `json:"standing_grant,omitempty"`
	Revocation    *Revocation `json:"revocation,omitempty"`
	Review        *Review     `json:"review,omitempty"`
	By            string      `json:"by,omitempty"` // confirmation
	At            time.Time   `json:"at,omitzero"`
	// Note, on a tree's root, says what the reader may not expect: that a key has no live claim
	// and its newest version is shown.
	Note     string  `json:"note,omitempty"`
	Children []*Node `json:"children,omitempty"`
}

// RevokedByResult answers revoked-by: the claim, and its revocation if it was revoked.
type RevokedByResult struct {
	Claim      Claim       `json:"claim"`
	Revocation *Revocation `json:"revocation,omitempty"`
	// Runs are the runs the reader may see that were served the claim version.
	Runs []RunUse `json:"runs,omitempty"`
}

// Dependent is an artifact reached by an impact walk, with the path from the starting node.
type Dependent struct {
	Artifact Artifact `json:"artifact"`
	// Path holds the references from the changed node to the artifact. Paths of one result
	// share their common prefixes (a chain of n artifacts costs n strings, not n²/2): read
	// them, copy one before changing it (appending is safe: each is cut to its length).
	Path  []string `json:"path"`
	Depth int      `json:"depth"`
}

// Change is the state of a node an impact walk started from, and what replaced it.
type Change struct {
	Ref        string `json:"ref"`
	State      State  `json:"state"`
	ReplacedBy string `json:"replaced_by,omitempty"` // the version that superseded or replaced it, if visible
}

// ImpactResult is everything that depends on a node.
type ImpactResult struct {
	Of      []string `json:"of"`
	Changes []Change `json:"changes"` // one per node in Of

	Dependents []Dependent `json:"dependents"`
	// Truncated is set when the depth limit stopped the walk before it ran out of dependents.
	Truncated bool `json:"truncated,omitempty"`
	// Runs are the runs the reader may see that were served a node in Of.
	Runs []RunUse `json:"runs,omitempty"`
}

// HistoryResult is every version of a key or artifact, oldest first.
type HistoryResult struct {
	Of        string     `json:"of"`
	Claims    []Claim    `json:"claims,omitempty"`
	Artifacts []Artifact `json:"artifacts,omitempty"`
}

// Conflict is a live claim with the lower-ranked claims that dispute it.
type Conflict struct {
	Key       string  `json:"key"`
	Live      *Claim  `json:"live,omitempty"` // nil if the key has no live claim now
	Contested []Claim `json:"contested"`
}

// Belief is one candidate in a belief distribution.
type Belief struct {
	Subject     string  `json:"subject"`
	Claim       Claim   `json:"claim"`
	Weight      float64 `json:"weight"`      // effective confidence
	Probability float64 `json:"probability"` // weight normalised over candidates
}

// Gate decisions.
const (
	Act      = "act"
	Retrieve = "retrieve"
	Decline  = "decline"
)

// BeliefsResult is a distribution over candidates, its entropy and the gate's decision.
type BeliefsResult struct {
	Pattern    string     `json:"pattern"`
	Candidates []Belief   `json:"candidates"`   // most probable first
	Entropy    float64    `json:"entropy_bits"` // 0 when there are no candidates
	Gate       [2]float64 `json:"gate"`
	Decision   string     `json:"decision"` // act, retrieve or decline
	Top        string     `json:"top,omitempty"`
}

// ContextResult is compact working-context text for a model.
type ContextResult struct {
	// Question is what a context for a question (ContextFor) was asked; "" for one of subjects.
	Question string   `json:"question,omitempty"`
	Text     string   `json:"text"`
	Lines    []string `json:"lines"`
	Tokens   int      `json:"tokens"`            // estimated: see EstimateTokens
	Budget   int      `json:"budget"`            // 0: no budget
	Omitted  []string `json:"omitted,omitempty"` // subjects left out for the budget (for a question: that matched)
	// Empty lists the subjects asked for by name of which the reader may see no live claim:
	// the text says so rather than nothing.
	Empty []string `json:"empty,omitempty"`
	Refs  []string `json:"refs"` // every claim reference included
}

// Stats summarises a store as a reader sees it.
type Stats struct {
	Transactions int           `json:"transactions"`
	Principals   int           `json:"principals"`
	Sources      int           `json:"sources"`
	Claims       int           `json:"claims"`
	ByState      map[State]int `json:"by_state"`
	Keys         int           `json:"keys"`
	Artifacts    int           `json:"artifacts"` // live artifact versions
	NeedsReview  int           `json:"needs_review"`
	Contested    int           `json:"contested"`
	Revocations  int           `json:"revocations"`
	// StaleRate is the share of live artifacts resting on claims or artifacts that are no
	// longer live (NeedsReview / Artifacts), 0 when there are none.
	StaleRate float64 `json:"stale_rate"`
	// Memory holds the memory metrics over the runs the reader may see; nil when it may see
	// none (see MemoryStats).
	Memory *MemoryStats `json:"memory,omitempty"`
}

// Row is one answer of Find: a value per selected variable, and the claims that matched.
type Row struct {
	Values []Value  `json:"values"`
	Claims []string `json:"claims"`
}

// FindResult is the answer of Find.
type FindResult struct {
	Vars []string `json:"vars"`
	Rows []Row    `json:"rows"`
}

// UnmarshalJSON reads a claim as MarshalJSON-ed values write it: the value as a plain JSON
// value, typed by value_type beside it.
func (c *Claim) UnmarshalJSON(b []byte) error {
	type plain Claim // without this method
	var aux struct {
		plain
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*c = Claim(aux.plain)
	v, err := valueFromJSON(aux.Value, aux.ValueType)
	if err != nil {
		return fmt.Errorf("claim %s: %w", c.Ref, err)
	}
	c.Value = v
	return nil
}

// valueFromJSON reads a value written by Value.MarshalJSON, given its type.
func valueFromJSON(b json.RawMessage, t ValueType) (Value, error) {
	v := Value{Type: t}
	var err error
	switch t {
	case TypeString, TypeRef:
		err = json.Unmarshal(b, &v.Str)
	case TypeNumber:
		err = json.Unmarshal(b, &v.Num)
	case TypeBool:
		err = json.Unmarshal(b, &v.Bool)
	case TypeTime:
		var s string
		if err = json.Unmarshal(b, &s); err == nil {
			v.Time, err = time.Parse(time.RFC3339Nano, s)
		}
	default:
		return Value{}, fmt.Errorf("value type %q: %w", t, ErrValueType)
	}
	return v, err
}

// claimOf renders a claim as v's reader sees it. References to claims the reader may not see
// are left out.
func claimOf(v *index.View, e *index.ClaimEntry) Claim {
	st, since := v.State(e)
	c := Claim{
		Ref:        e.ID.String(),
		Subject:    e.ID.Subject,
		Predicate:  e.ID.Predicate,
		Version:    e.ID.Version,
		Value:      e.Value,
		ValueType:  e.Value.Type,
		State:      st,
		Since:      since,
		Kind:       v.EffectiveKind(e),
		Confidence: e.Confidence,
		Effective:  v.EffectiveConfidence(e),
		By:         e.By,
		Tx:         int64(e.Tx),
		RecordedAt: v.ClaimTime(e),
		ValidFrom:  e.ValidFrom,
		ValidUntil: e.ValidUntil,
		SeenBy:     slices.Clone(e.SeenBy),
		Grant:      e.Grant,
		Sources:    make([]Source, 0, len(e.Sources)),
	}
	for i, id := range e.Sources {
		src := sourceOf(v, id)
		if i < len(e.Excerpts) && e.Excerpts[i] != "" {
			src.Excerpt = e.Excerpts[i]
		}
		c.Sources = append(c.Sources, src)
	}
	c.Supersedes = visibleRef(v, e.Supersedes)
	c.Contests = visibleRef(v, e.Contests)
	c.Corroborates = visibleRef(v, e.Corroborates)
	if n := v.SupersededBy(e); n != nil {
		c.SupersededBy = n.ID.String()
	}
	return c
}

func visibleRef(v *index.View, id *record.ClaimID) string {
	if id == nil || v.Claim(*id) == nil {
		return ""
	}
	return id.String()
}

// sourceOf renders the source a claim cites by key: its audience's record, under the id the
// writer gave it, with the excerpt recorded with the source by an earlier mql (which a
// citation's own excerpt replaces).
func sourceOf(v *index.View, key string) Source {
	s := v.Source(key)
	if s == nil {
		return Source{ID: record.SourceName(key)}
	}
	return Source{ID: record.SourceName(s.ID), Excerpt: s.Excerpt, URI: s.URI, Revision: s.Revision}
}

func artifactOf(v *index.View, pc *provenance.Cache, a *index.ArtifactNode) Artifact {
	out := Artifact{
		Ref:         a.Ref(),
		Name:        a.ID.Name,
		Version:     a.ID.Version,
		State:       Live,
		By:          a.By,
		Confidence:  a.Confidence,
		Effective:   pc.Confidence(a),
		Tx:          int64(a.Tx),
		RecordedAt:  v.ArtifactTime(a),
		SeenBy:      slices.Clone(a.SeenBy),
		DerivedFrom: make([]string, 0, len(a.DerivedFrom)),
	}
	for i := range a.DerivedFrom {
		if an, e := v.Input(a, i); an != nil || e != nil {
			out.DerivedFrom = append(out.DerivedFrom, a.InputRef(i))
		}
	}
	if v.SeesRunsOf(a.By) {
		out.Run = a.Run // a run is its principal's (and the owner's) to see, as in export
	}
	if v.ArtifactSupersededBy(a) != nil {
		out.State = Superseded
	}
	rs := pc.ReviewState(a)
	switch {
	case out.State == Superseded:
		out.Review = ReviewStale
	case rs.Needs:
		out.Review = NeedsReview
	default:
		out.Review = ReviewOK
	}
	for _, s := range rs.Stale {
		if nodeVisible(v, s) {
			out.Stale = append(out.Stale, s.String())
		}
	}
	if rs.Last != nil {
		r := reviewOf(v, rs.Last)
		out.LastReview = &r
	}
	return out
}

func reviewOf(v *index.View, r *record.Review) Review {
	return Review{Artifact: r.Artifact.String(), By: r.By, Because: r.Because, Tx: int64(r.Tx), At: v.TxTime(r.Tx)}
}

func nodeVisible(v *index.View, n record.NodeRef) bool {
	if n.Claim != nil {
		return v.Claim(*n.Claim) != nil
	}
	return n.Artifact != nil && v.Artifact(*n.Artifact) != nil
}

func revocationOf(v *index.View, r *record.Revocation) Revocation {
	out := Revocation{Claim: r.Claim.String(), By: r.By, At: v.TxTime(r.Tx), Tx: int64(r.Tx), Because: r.Because, Standing: r.Standing, StandingGrant: standingGrant(v, r.Standing)}
	out.ReplacedBy = visibleRef(v, r.ReplacedBy)
	return out
}

func grantOf(v *index.View, id string) *Grant {
	if g := v.Grant(id); g != nil {
		gi := grantInfo(v, g)
		return &gi
	}
	return nil
}

// standingGrant is the grant a recorded standing names, or nil for "owner", "own claim" and
// the like.
func standingGrant(v *index.View, standing string) *Grant {
	if len(standing) < 2 || standing[0] != 'g' || standing[1] < '0' || standing[1] > '9' {
		return nil
	}
	return grantOf(v, standing)
}
