// Package record defines what mql records: a transaction (Tx) and the records it holds
// (principals, grants, sources, claims, revocations, confirmations, artifacts, reviews,
// decays, tokens, and runs' retrievals and outcomes), with their ids (TxID, Key, ClaimID,
// ArtifactID, NodeRef) and claim values (Value). Records are plain values, immutable once
// committed.
//
// It holds no rule about them beyond their own syntax: how records are stored as quads is
// package codec's, how they are indexed and what state a claim is in is package index's, and
// both import this package; record imports neither, nor Cayley.
package record

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// TxID identifies a transaction. Ids start at 1 (the store's genesis) and grow by one per
// committed write; they are never reused.
type TxID int64

// Tx is one committed write: everything it recorded, in the order the writer gave it. A Tx
// is immutable once committed; the index and every backend treat it as a value.
type Tx struct {
	ID   TxID
	Time time.Time // transaction time, UTC
	By   string    // principal that made the write

	Meta          *StoreMeta // only in the genesis transaction
	Principals    []*Principal
	Grants        []*Grant
	Sources       []*Source
	Claims        []*Claim
	Revocations   []*Revocation
	Confirmations []*Confirmation
	Artifacts     []*Artifact
	Reviews       []*Review
	Decays        []*Decay

	Tokens           []*Token
	TokenRevocations []*TokenRevocation

	Retrievals []*Retrieval
	Outcomes   []*Outcome
}

// StoreMeta is recorded once, by the genesis transaction.
type StoreMeta struct {
	Owner  string // name of the owner principal
	Strict bool   // asserting needs the assert right
}

// PrincipalType is user, agent or tool.
type PrincipalType string

const (
	User  PrincipalType = "user"
	Agent PrincipalType = "agent"
	Tool  PrincipalType = "tool"
)

type Principal struct {
	Name string
	Type PrincipalType
	Tx   TxID
}

// Right is what a grant allows.
type Right string

const (
	RightAssert  Right = "assert"
	RightRevoke  Right = "revoke"
	RightConfirm Right = "confirm"
	RightGrant   Right = "grant"
)

// Grant gives Grantee a Right over Scope. Scope is "*", a predicate "p", "Subject.*" or
// "Subject.p".
type Grant struct {
	ID      string // "g<tx>.<n>", unique
	Grantee string
	Right   Right
	Scope   string
	By      string
	Tx      TxID
}

// Source is the evidence a claim was read from: where it is (URI) and which revision.
// Sources are recorded the first time they are named; later claims refer to them by ID. Each
// audience keeps its own record of a source (see SourceKey), so that what a claim seen by some
// principals says of its evidence is never checked against, nor shown to, anyone else. What a
// claim quotes from its source is the claim's (Claim.Excerpts): one page supports many claims.
type Source struct {
	ID string
	// Excerpt is the excerpt of a source recorded before excerpts were the citation's (format
	// mql-kv/1, and exports written then): the excerpt of every citation of it that quotes
	// none of its own. mql records none now.
	Excerpt  string
	URI      string
	Revision string
	Tx       TxID
}

// SourceKey is the ID under which the source a user named id is recorded for the claims of
// one audience: id itself for claims everyone may see, id, a NUL byte and the audience
// otherwise. Users cannot name a source with a NUL byte, so the keys of two audiences never
// meet.
func SourceKey(id, audience string) string {
	if audience == "" {
		return id
	}
	return id + "\x00" + audience
}

// SourceName is the id a user gave a source recorded under key: key without its audience.
func SourceName(key string) string {
	name, _, _ := strings.Cut(key, "\x00")
	return name
}

// Kind is how a claim was obtained.
type Kind string

const (
	Confirmed Kind = "confirmed"
	Observed  Kind = "observed"
	Inferred  Kind = "inferred"
)

// ValueType is the type of a claim's value.
type ValueType string

const (
	String ValueType = "string"
	Number ValueType = "number"
	Bool   ValueType = "bool"
	Time   ValueType = "time"
	Ref    ValueType = "ref" // a reference to a subject, artifact or claim, by name
)

// Value is a typed claim value. Exactly the field that Type names is meaningful.
type Value struct {
	Type ValueType
	Str  string // String and Ref
	Num  float64
	Bool bool
	Time time.Time
}

func (v Value) String() string {
	switch v.Type {
	case String:
		return strconv.Quote(v.Str)
	case Number:
		return strconv.FormatFloat(v.Num, 'g', -1, 64)
	case Bool:
		return strconv.FormatBool(v.Bool)
	case Time:
		return v.Time.UTC().Format(time.RFC3339Nano)
	case Ref:
		return v.Str
	}
	return "<invalid>"
}

// Equal reports whether two values are the same typed value.
func (v Value) Equal(o Value) bool {
	if v.Type != o.Type {
		return false
	}
	switch v.Type {
	case String, Ref:
		return v.Str == o.Str
	case Number:
		return v.Num == o.Num
	case Bool:
		return v.Bool == o.Bool
	case Time:
		return v.Time.Equal(o.Time)
	}
	return false
}

// Key is a subject.predicate pair.
type Key struct {
	Subject   string
	Predicate string
}

func (k Key) String() string { return k.Subject + "." + k.Predicate }

// ClaimID names one version of a key: Subject.predicate@N.
type ClaimID struct {
	Key
	Version int
}

func (c ClaimID) String() string { return c.Key.String() + "@" + strconv.Itoa(c.Version) }

// ParseClaimID parses "Subject.predicate@N".
func ParseClaimID(s string) (ClaimID, error) {
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return ClaimID{}, fmt.Errorf("claim reference %q has no @version", s)
	}
	n, err := strconv.Atoi(s[at+1:])
	if err != nil || n < 1 {
		return ClaimID{}, fmt.Errorf("claim reference %q: version must be a positive integer", s)
	}
	dot := strings.IndexByte(s[:at], '.')
	if dot <= 0 || dot == at-1 {
		return ClaimID{}, fmt.Errorf("claim reference %q is not Subject.predicate@N", s)
	}
	return ClaimID{Key: Key{Subject: s[:dot], Predicate: s[dot+1 : at]}, Version: n}, nil
}

// Claim is one recorded version of a key. How it entered the key's lifecycle is decided by the
// writer and recorded: it either supersedes the live claim (Supersedes), contests it
// (Contests), or neither (the key had no live claim).
type Claim struct {
	ID      ClaimID
	Value   Value
	By      string
	Sources []string // source ids
	// Excerpts, nil when the claim quotes nothing, holds what it quotes from each of its
	// Sources, in their order ("" for a source it quotes nothing from).
	Excerpts   []string
	Kind       Kind
	Confidence float64
	ValidFrom  time.Time // zero: from the transaction time
	ValidUntil time.Time // zero: no end
	SeenBy     []string  // empty: visible to all
	Supersedes *ClaimID  // prov:wasRevisionOf
	Contests   *ClaimID
	// Corroborates is set on a lower-ranked claim that agrees with the live claim: it is kept as
	// evidence and is superseded from birth, never live.
	Corroborates *ClaimID
	Grant        string // grant id that gave the asserter standing, "" when none was needed
	// Vector is the embedding its writer gave the claim (nil: none): what a search by
	// similarity compares. A store's vectors all have one dimension.
	Vector []float32
	Tx     TxID
}

// MaxVectorDim is the most dimensions a claim's vector may have: more than embedding models
// give (OpenAI's largest gives 3072), few enough that a vector stays a small entry.
const MaxVectorDim = 8192

// ErrVector is wrapped by CheckVector's and ParseVector's errors.
var ErrVector = errors.New("invalid vector")

// ErrInvalid is wrapped, with ErrVector, by ParseVector's errors: the library's ErrInvalid is
// this error, declared here so that a vector's text is read by one function, below both the
// library and the language's syntax.
var ErrInvalid = errors.New("invalid input")

// FormatVector writes a vector as the language and the export do: each component in the
// shortest decimal form that reads back to the same float32, separated by spaces.
func FormatVector(v []float32) string {
	b := make([]byte, 0, 12*len(v))
	for i, f := range v {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return string(b)
}

// ParseVector reads a vector written as FormatVector writes it, or with other decimal forms
// of its components, separated by spaces or commas ("0.25 -1 3.5e-05", "0.25, -1, 3.5e-05").
// It checks only the syntax: CheckVector, at the write or the search, the rest.
func ParseVector(s string) ([]float32, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(fields) == 0 {
		return nil, fmt.Errorf("vector %q: %w: %w: it is empty", s, ErrInvalid, ErrVector)
	}
	if len(fields) > MaxVectorDim {
		return nil, fmt.Errorf("vector of %d components: %w: %w: at most %d", len(fields), ErrInvalid, ErrVector, MaxVectorDim)
	}
	out := make([]float32, len(fields))
	for i, f := range fields {
		x, err := strconv.ParseFloat(f, 32)
		if err != nil {
			return nil, fmt.Errorf("vector: %w: %w: component %d, %.40q, is not a number (components are separated by spaces or commas)", ErrInvalid, ErrVector, i, f)
		}
		out[i] = float32(x)
	}
	return out, nil
}

// CheckVector reports what makes v unfit as a claim's or a search's vector: empty, more than
// MaxVectorDim dimensions, a component that is NaN or infinite, or every component zero (a
// zero vector has no direction, so no similarity).
func CheckVector(v []float32) error {
	switch {
	case len(v) == 0:
		return fmt.Errorf("%w: it is empty", ErrVector)
	case len(v) > MaxVectorDim:
		return fmt.Errorf("%w: %d dimensions, at most %d", ErrVector, len(v), MaxVectorDim)
	}
	zero := true
	for i, f := range v {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Errorf("%w: component %d is %v; every component must be a finite number", ErrVector, i, f)
		}
		zero = zero && f == 0
	}
	if zero {
		return fmt.Errorf("%w: every component is 0, so it has no direction", ErrVector)
	}
	return nil
}

// Revocation hard-invalidates a claim.
type Revocation struct {
	ID         string // "r<tx>.<n>"
	Claim      ClaimID
	By         string
	Because    string
	Standing   string   // grant id, or "owner", or "own claim"
	ReplacedBy *ClaimID // becomes live from this transaction on
	Tx         TxID
}

// Confirmation records that a user confirmed a claim; it ranks Confirmed from Tx on.
type Confirmation struct {
	ID       string // "c<tx>.<n>"
	Claim    ClaimID
	By       string
	Standing string
	Tx       TxID
}

// ArtifactID names one version of an artifact: name@N.
type ArtifactID struct {
	Name    string
	Version int
}

func (a ArtifactID) String() string { return a.Name + "@" + strconv.Itoa(a.Version) }

// NodeRef points at what an artifact was derived from: exactly one of Claim or Artifact.
type NodeRef struct {
	Claim    *ClaimID
	Artifact *ArtifactID
}

func (n NodeRef) String() string {
	if n.Claim != nil {
		return n.Claim.String()
	}
	if n.Artifact != nil {
		return n.Artifact.String()
	}
	return "<nil>"
}

// Artifact is one version of something derived from claims or other artifacts. Versions are
// numbered per name across audiences, so that name@N names one version for every reader;
// a version supersedes only the newest earlier version of the same name and audience
// (Supersedes, decided by the writer and recorded, as for claims), so that versions seen by
// different principals are separate memories.
type Artifact struct {
	ID          ArtifactID
	DerivedFrom []NodeRef
	By          string
	Confidence  float64 // its own confidence before the cap of rule 6; 1 unless given
	SeenBy      []string
	Supersedes  *ArtifactID // prov:wasRevisionOf; nil for the first version of its audience
	Run         string      // the run whose decision it records ("derive … in run NAME"); "" when none
	Tx          TxID
}

// Review records that a principal reviewed an artifact version.
type Review struct {
	ID       string // "v<tx>.<n>"
	Artifact ArtifactID
	By       string
	Because  string
	Tx       TxID
}

// Decay declares a half-life for a predicate, from Tx on.
type Decay struct {
	Predicate string
	HalfLife  time.Duration
	By        string
	Tx        TxID
}

// Token is a bearer credential for `mql serve`, issued to one principal. The store keeps only
// the SHA-256 of its secret, so neither the store nor an export holds a usable token.
type Token struct {
	ID        string    // "t<tx>.<n>", unique; also the first part of the token itself
	Principal string    // whom a request bearing the token is served as
	Hash      string    // hex SHA-256 of the token's secret
	By        string    // who issued it (the owner)
	Expires   time.Time // zero: never
	Tx        TxID
}

// TokenRevocation ends a token from its transaction on.
type TokenRevocation struct {
	ID    string // "k<tx>.<n>"
	Token string // the token's id
	By    string
	Tx    TxID
}

// Retrieval records what one read made for a run served: the claim versions and artifact
// versions in its answer, the transaction it read at, and the statement. A run is named by the
// principal that reads for it; runs of the same name by different principals are different runs.
type Retrieval struct {
	ID        string // "q<tx>.<n>"
	Run       string
	By        string // the reading principal
	ReadAt    TxID   // the last transaction the read saw
	Statement string // the read, as text; "" when the library made it
	Claims    []ClaimID
	Artifacts []ArtifactID
	Tx        TxID
}

// OutcomeResult is how a run ended.
type OutcomeResult string

const (
	Succeeded OutcomeResult = "succeeded"
	Failed    OutcomeResult = "failed"
	Declined  OutcomeResult = "declined" // the agent said it lacked the evidence to act
)

// Outcome records how a run ended, by the principal whose run it is.
type Outcome struct {
	ID      string // "o<tx>.<n>"
	Run     string
	Result  OutcomeResult
	Because string
	By      string
	Tx      TxID
}

// MarshalJSON writes the value as a plain JSON value: a string, number or bool; a time as an
// RFC 3339 string; a reference as its name. Its type travels beside it where it matters
// (a claim's value_type).
func (v Value) MarshalJSON() ([]byte, error) {
	switch v.Type {
	case String, Ref:
		return json.Marshal(v.Str)
	case Number:
		return json.Marshal(v.Num)
	case Bool:
		return json.Marshal(v.Bool)
	case Time:
		return json.Marshal(v.Time.UTC().Format(time.RFC3339Nano))
	}
	return []byte("null"), nil
}
