package syntax

import "time"

// Stmt is one statement of the language. Every statement type of this
// package implements it; Pos is the position of the statement's first token
// (the first read modifier, if any, else the statement keyword), and String
// prints canonical source that parses back to the same AST.
type Stmt interface {
	Pos() Position
	String() string
	stmtNode()
}

// ReadStmt is implemented by the statements that read and so may carry
// modifiers: Live, Find, Why, RevokedBy, Impact, History, Conflicts, Beliefs,
// Context, Stats, Search, Run, Runs and the catalog reads (Principals, Grants,
// Subjects, Predicates, Artifacts, Sources, Describe).
type ReadStmt interface {
	Stmt
	Modifiers() Mods
}

// Script is a parsed sequence of statements, in source order.
type Script struct {
	Stmts []Stmt
}

// Mods are the modifiers that may prefix a read: as of TIME, as of tx N and
// as NAME. AsOfTime and AsOfTx are never both set.
type Mods struct {
	AsOfTime *time.Time // as of TIME: read the store as it was at that time (UTC)
	AsOfTx   *int64     // as of tx N: read the store as it was after transaction N
	As       string     // as NAME: read as that principal sees the store; "" when absent
	// ForRun is the run of "for run NAME", written after the read: the read also records what
	// it served to that run. "" when absent.
	ForRun string
}

// IsZero reports whether no modifier is set.
func (m Mods) IsZero() bool {
	return m.AsOfTime == nil && m.AsOfTx == nil && m.As == "" && m.ForRun == ""
}

// PrincipalKind is the kind of an actor.
type PrincipalKind string

// The principal kinds.
const (
	User  PrincipalKind = "user"
	Agent PrincipalKind = "agent"
	Tool  PrincipalKind = "tool"
)

// Right is what a grant allows.
type Right string

// The rights.
const (
	RightAssert  Right = "assert"
	RightRevoke  Right = "revoke"
	RightConfirm Right = "confirm"
	RightGrant   Right = "grant"
)

// ClaimKind is how a claim was obtained, ranked Confirmed > Observed > Inferred.
type ClaimKind string

// The claim kinds.
const (
	Confirmed ClaimKind = "confirmed"
	Observed  ClaimKind = "observed"
	Inferred  ClaimKind = "inferred"
)

// Op is a comparison operator.
type Op string

// The comparison operators.
const (
	OpEq Op = "="
	OpNe Op = "!="
	OpLt Op = "<"
	OpLe Op = "<="
	OpGt Op = ">"
	OpGe Op = ">="
)

// ValueKind says which field of a Value holds it.
type ValueKind int

// The value kinds.
const (
	KindString ValueKind = iota + 1 // Value.Str
	KindNumber                      // Value.Num
	KindBool                        // Value.Bool
	KindTime                        // Value.Time
	KindRef                         // Value.Ref
)

func (k ValueKind) String() string {
	switch k {
	case KindString:
		return "string"
	case KindNumber:
		return "number"
	case KindBool:
		return "bool"
	case KindTime:
		return "time"
	case KindRef:
		return "ref"
	}
	return "invalid"
}

// Value is a literal: a string, a number, true or false, a time, or a
// reference (an entity or artifact name, a claim key, or a claim version).
type Value struct {
	Pos  Position
	Kind ValueKind
	Str  string
	Num  float64
	Bool bool
	Time time.Time // UTC
	Ref  Ref
}

// Ref names a claim or an artifact (or, as a value, an entity).
//
// Subject.predicate gives Subject and Predicate; Subject.predicate@N also
// Version. A bare name (plan:pick-vendor, Brimsole) gives Subject only, with
// Predicate empty; name@N adds Version.
type Ref struct {
	Pos       Position
	Subject   string // the subject of a claim, or the artifact or entity name
	Predicate string // "" when the reference names an artifact or entity
	Version   int    // the N of @N (>= 1); 0 when absent: the live claim or latest artifact
}

// IsClaim reports whether r names a claim (Subject.predicate) rather than an
// artifact or entity.
func (r Ref) IsClaim() bool { return r.Predicate != "" }

// Pattern selects claims by subject and predicate; an empty field matches
// any (it was written "*"). "Klarveld" and "Klarveld.*" are the same pattern.
type Pattern struct {
	Pos       Position
	Subject   string // "" for any subject
	Predicate string // "" for any predicate
}

// Scope is what a grant covers: every claim (both fields empty, written *),
// a predicate of any subject (Subject empty), every predicate of a subject
// (Predicate empty, written Subject.*) or one claim key.
type Scope struct {
	Pos       Position
	Subject   string
	Predicate string
}

// Source is the evidence a claim was read from.
type Source struct {
	Pos      Position
	ID       string // never empty
	Excerpt  string // "" when absent
	URI      string // "" when absent
	Revision string // "" when absent
}

// Filter is the where clause of live: where value OP LITERAL.
type Filter struct {
	Pos   Position
	Op    Op
	Value Value
}

// Cond is one condition of find. It is either a pattern
//
//	TERM.predicate OP TERM2     (Predicate != "")
//
// matching live claims whose subject is SubjectVar (bound or binding) or the
// subject named Subject, and whose value compares with ObjectVar or Object;
// or a filter
//
//	?var OP TERM2               (Predicate == "", SubjectVar set)
//
// comparing a variable bound elsewhere with a literal or another variable.
type Cond struct {
	Pos        Position
	SubjectVar string // left variable without '?', or ""
	Subject    string // left subject name when SubjectVar is ""
	Predicate  string // "" for a filter
	Op         Op
	ObjectVar  string // right variable without '?', or ""
	Object     Value  // right literal when ObjectVar is ""
}

// IsFilter reports whether c compares a variable instead of matching claims.
func (c Cond) IsFilter() bool { return c.Predicate == "" }

// OrderKey is one key of find's order by.
type OrderKey struct {
	Pos  Position
	Var  string // without '?'
	Desc bool
}

// Gate holds the two entropy thresholds (in bits) of beliefs ... gate LOW
// HIGH, with 0 <= Low <= High.
type Gate struct {
	Pos  Position
	Low  float64
	High float64
}

// ---- writes ----

// Principal declares an actor: principal NAME (user|agent|tool).
type Principal struct {
	Start Position
	Name  string
	Kind  PrincipalKind
}

// Grant gives a right over a scope: grant NAME RIGHT on SCOPE by NAME.
type Grant struct {
	Start   Position
	Grantee string
	Right   Right
	Scope   Scope
	By      string
}

// Assert records a claim: assert Subject.predicate = VALUE by NAME, then the
// optional clauses from, confidence, kind, valid from, valid until, seen by, vector.
type Assert struct {
	Start      Position
	Key        Ref // Subject.predicate, no version
	Value      Value
	By         string
	Sources    []Source   // from SRC {, SRC}; nil when absent
	Confidence *float64   // in [0,1]; nil when absent
	Kind       ClaimKind  // "" when absent
	ValidFrom  *time.Time // UTC; nil when absent
	ValidUntil *time.Time // UTC; nil when absent
	SeenBy     []string   // nil when absent
	Vector     []float32  // vector STRING (record.ParseVector); nil when absent
}

// Revoke revokes a claim version: revoke Subject.predicate@N by NAME
// [because STRING] [replaced by Subject.predicate@N].
type Revoke struct {
	Start      Position
	Claim      Ref // with Predicate and Version
	By         string
	Because    string // "" when absent
	ReplacedBy *Ref   // with Predicate and Version; nil when absent
}

// Confirm confirms a claim: confirm Subject.predicate[@N] by NAME.
type Confirm struct {
	Start Position
	Claim Ref // with Predicate; Version 0 for the live claim
	By    string
}

// Derive records an artifact derived from claims and artifacts:
// derive ARTIFACT from NODE {, NODE} by NAME [confidence NUM] [seen by NAME {, NAME}].
type Derive struct {
	Start      Position
	Artifact   string
	From       []Ref
	By         string
	Confidence *float64 // in [0,1]; nil when absent
	SeenBy     []string // nil when absent
	Run        string   // in run NAME: the decision of that run; "" when absent
}

// Outcome records how a run ended:
// outcome run NAME (succeeded | failed | declined) [by NAME] [because STRING].
type Outcome struct {
	Start   Position
	Run     string
	Result  string // succeeded, failed or declined
	By      string // "" when absent: the session's principal
	Because string // "" when absent
}

// Review records that an artifact was reviewed:
// review ARTIFACT[@N] by NAME [because STRING].
type Review struct {
	Start    Position
	Artifact Ref // Predicate empty; Version 0 for the latest
	By       string
	Because  string // "" when absent
}

// Decay declares a predicate's half-life: decay PREDICATE half-life DURATION.
type Decay struct {
	Start     Position
	Predicate string
	HalfLife  time.Duration // > 0
}

// ---- reads ----

// Live lists live claims: live PATTERN [where value OP LITERAL {, value OP LITERAL}].
type Live struct {
	Start   Position
	Mods    Mods
	Pattern Pattern
	Where   []Filter // all must hold; none when absent
}

// Find matches conjunctive patterns over live claims:
// find ?a {, ?b} where COND {, COND} [order by ?x [asc|desc] {, ...}] [limit N].
type Find struct {
	Start   Position
	Mods    Mods
	Vars    []string // without '?'
	Where   []Cond
	OrderBy []OrderKey // nil when absent
	Limit   int        // >= 1; 0 when absent
}

// Why explains a claim or an artifact: why NODE.
type Why struct {
	Start Position
	Mods  Mods
	Node  Ref
}

// RevokedBy tells who revoked a claim version: revoked-by Subject.predicate@N.
type RevokedBy struct {
	Start Position
	Mods  Mods
	Claim Ref // with Predicate and Version
}

// Impact lists what depends on a claim or artifact: impact NODE [depth N].
type Impact struct {
	Start Position
	Mods  Mods
	Node  Ref
	Depth *int // >= 0; nil when absent
}

// History lists every version of a claim key or artifact: history NODE.
type History struct {
	Start Position
	Mods  Mods
	Node  Ref // Version always 0
}

// Conflicts lists contested claims: conflicts [Subject {, Subject}].
type Conflicts struct {
	Start    Position
	Mods     Mods
	Subjects []string // nil for every subject
}

// Beliefs gives the distribution of effective confidence over the claims a
// pattern selects: beliefs PATTERN [gate LOW HIGH].
type Beliefs struct {
	Start   Position
	Mods    Mods
	Pattern Pattern
	Gate    *Gate // nil when absent
}

// Search finds the claims whose text best matches Text, or whose vector is most similar to
// Vector, or both (mql.Reader.Search), best first: search TEXT [on PATTERN {, PATTERN}]
// [vector STRING] [signals NAME {, NAME}] [limit N] [history]. TEXT "" searches by the vector
// alone.
type Search struct {
	Start   Position
	Mods    Mods
	Text    string    // "": none (a search by vector)
	On      []Pattern // nil: every key
	Vector  []float32 // nil when absent
	Signals []string  // nil when absent: each signal the search has the input of
	Limit   int       // >= 1; 0 when absent
	History bool      // every matching version, each with its state
}

// Context renders the working context for a model:
// context Subject {, Subject} [budget N], context * [budget N], or
// context for QUESTION [budget N].
type Context struct {
	Start    Position
	Mods     Mods
	All      bool     // context *: every subject
	Subjects []string // nil when All or Question
	// Question is the text of context for QUESTION: the live claims that best match it, as
	// search finds them. nil otherwise.
	Question *string
	Budget   int // token budget, >= 1; 0 when absent
}

// Stats summarises the store, with the memory metrics of the runs:
// stats [for NAME] [since TIME] (for and since narrow the runs the metrics are over).
type Stats struct {
	Start Position
	Mods  Mods
	For   string     // "" when absent
	Since *time.Time // UTC; nil when absent
}

func (s *Principal) Pos() Position { return s.Start }
func (s *Grant) Pos() Position     { return s.Start }
func (s *Assert) Pos() Position    { return s.Start }
func (s *Revoke) Pos() Position    { return s.Start }
func (s *Confirm) Pos() Position   { return s.Start }
func (s *Derive) Pos() Position    { return s.Start }
func (s *Review) Pos() Position    { return s.Start }
func (s *Decay) Pos() Position     { return s.Start }
func (s *Live) Pos() Position      { return s.Start }
func (s *Find) Pos() Position      { return s.Start }
func (s *Why) Pos() Position       { return s.Start }
func (s *RevokedBy) Pos() Position { return s.Start }
func (s *Impact) Pos() Position    { return s.Start }
func (s *History) Pos() Position   { return s.Start }
func (s *Conflicts) Pos() Position { return s.Start }
func (s *Beliefs) Pos() Position   { return s.Start }
func (s *Context) Pos() Position   { return s.Start }
func (s *Search) Pos() Position    { return s.Start }
func (s *Stats) Pos() Position     { return s.Start }

func (*Principal) stmtNode() {}
func (*Grant) stmtNode()     {}
func (*Assert) stmtNode()    {}
func (*Revoke) stmtNode()    {}
func (*Confirm) stmtNode()   {}
func (*Derive) stmtNode()    {}
func (*Review) stmtNode()    {}
func (*Decay) stmtNode()     {}
func (*Live) stmtNode()      {}
func (*Find) stmtNode()      {}
func (*Why) stmtNode()       {}
func (*RevokedBy) stmtNode() {}
func (*Impact) stmtNode()    {}
func (*History) stmtNode()   {}
func (*Conflicts) stmtNode() {}
func (*Beliefs) stmtNode()   {}
func (*Context) stmtNode()   {}
func (*Search) stmtNode()    {}
func (*Stats) stmtNode()     {}

func (s *Live) Modifiers() Mods      { return s.Mods }
func (s *Find) Modifiers() Mods      { return s.Mods }
func (s *Why) Modifiers() Mods       { return s.Mods }
func (s *RevokedBy) Modifiers() Mods { return s.Mods }
func (s *Impact) Modifiers() Mods    { return s.Mods }
func (s *History) Modifiers() Mods   { return s.Mods }
func (s *Conflicts) Modifiers() Mods { return s.Mods }
func (s *Beliefs) Modifiers() Mods   { return s.Mods }
func (s *Context) Modifiers() Mods   { return s.Mods }
func (s *Search) Modifiers() Mods    { return s.Mods }
func (s *Stats) Modifiers() Mods     { return s.Mods }
