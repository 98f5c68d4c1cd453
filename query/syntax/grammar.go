package syntax

import (
	"slices"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// This file holds the participle grammar: capture structs that mirror the
// syntax closely and keep every token (with its position). convert.go turns
// them into the AST of ast.go, checking what a grammar cannot say (ranges,
// repeated clauses, names of kinds and rights) with positioned errors.
//
// Optional clauses are parsed as a repetition of a clause struct, so that
// they may come in any order; convert rejects a repeated one at its keyword.
//
// Keywords are identifiers matched by value; none is reserved, so a subject
// or predicate may be called "kind" or "from" wherever that is unambiguous.
// Strings keep their quotes until convert unquotes them, so a string can
// never match a keyword.
//
// The parser uses no lookahead (UseLookahead(0)): a branch that has consumed
// a token is committed to, so an error is reported at the token where the
// input stops fitting, not where an optional group gave up. The grammar
// needs none: every alternative starts with a distinct keyword or token
// type.

type tok = lexer.Token

// stmtParser parses the tokens of one statement (without its terminator).
var stmtParser = participle.MustBuild[stmtG](
	participle.Lexer(lexDef),
	participle.UseLookahead(0),
	participle.Union[stmtNode](slices.Concat([]stmtNode{
		&principalG{}, &grantG{}, &assertG{}, &revokeG{}, &confirmG{},
		&deriveG{}, &reviewG{}, &decayG{},
		&liveG{}, &findG{}, &whyG{}, &revokedByG{}, &impactG{}, &historyG{},
		&conflictsG{}, &beliefsG{}, &contextG{}, &statsG{}, &searchG{},
	}, catalogNodes, controlNodes, runWriteNodes, runReadNodes)...),
)

// stmtG is a statement without its read modifiers, which parseTokens
// handles itself: they are a short fixed prefix, and doing them by hand gives
// precise errors where participle's branch recovery would blame the wrong
// token (in "as of tx live X" it would take "of" for a principal name).
type stmtG struct {
	Body stmtNode `parser:"@@"`
}

type stmtNode interface{ grammarStmt() }

type identG struct {
	Tok tok `parser:"@Ident"`
}

type varG struct {
	Tok tok `parser:"@Var"`
}

// refG is Ident [ "." Ident ] [ "@" Number ]: a claim key, a claim version,
// or an artifact/entity name with an optional version.
type refG struct {
	Name tok `parser:"@Ident"`
	Pred tok `parser:"( '.' @Ident )?"`
	At   tok `parser:"( @'@'"`
	Ver  tok `parser:"  @Number )?"`
}

// patternG is Subject | Subject.predicate | Subject.* | *.predicate | *.
type patternG struct {
	First  tok `parser:"( @Ident | @'*' )"`
	Dot    tok `parser:"( @'.'"`
	Second tok `parser:"  ( @Ident | @'*' ) )?"`
}

// scopeG is * | predicate | Subject.* | Subject.predicate (and, to report
// it well, *.predicate).
type scopeG struct {
	First  tok `parser:"( @'*' | @Ident )"`
	Dot    tok `parser:"( @'.'"`
	Second tok `parser:"  ( @Ident | @'*' ) )?"`
}

type valueG struct {
	Str  tok   `parser:"  @String"`
	Num  tok   `parser:"| @Number"`
	Time tok   `parser:"| @Time"`
	Bool tok   `parser:"| @( 'true' | 'false' )"`
	Ref  *refG `parser:"| @@"`
}

// ---- writes ----

type principalG struct {
	Kw   tok `parser:"@'principal'"`
	Name tok `parser:"@Ident"`
	Kind tok `parser:"@Ident"`
}

type grantG struct {
	Kw      tok    `parser:"@'grant'"`
	Grantee tok    `parser:"@Ident"`
	Right   tok    `parser:"@Ident"`
	On      tok    `parser:"@'on'"`
	Scope   scopeG `parser:"@@"`
	By      tok    `parser:"'by' @Ident"`
}

type assertG struct {
	Kw      tok              `parser:"@'assert'"`
	Key     refG             `parser:"@@"`
	Eq      tok              `parser:"@'='"`
	Value   valueG           `parser:"@@"`
	By      tok              `parser:"'by' @Ident"`
	Clauses []*assertClauseG `parser:"@@*"`
}

type assertClauseG struct {
	Pos        lexer.Position
	From       []*sourceG `parser:"(  'from' @@ ( ',' @@ )*"`
	Confidence tok        `parser:"| 'confidence' @Number"`
	Kind       tok        `parser:"| 'kind' @Ident"`
	ValidFrom  tok        `parser:"| 'valid' ( 'from' @Time"`
	ValidUntil tok        `parser:"          | 'until' @Time )"`
	SeenBy     []*identG  `parser:"| 'seen' 'by' @@ ( ',' @@ )*"`
	Vector     tok        `parser:"| 'vector' @String )"`
}

type sourceG struct {
	ID    tok            `parser:"@String"`
	Parts []*sourcePartG `parser:"@@*"`
}

type sourcePartG struct {
	Kw  tok `parser:"@( 'excerpt' | 'uri' | 'revision' )"`
	Str tok `parser:"@String"`
}

type revokeG struct {
	Kw      tok              `parser:"@'revoke'"`
	Claim   refG             `parser:"@@"`
	By      tok              `parser:"'by' @Ident"`
	Clauses []*revokeClauseG `parser:"@@*"`
}

type revokeClauseG struct {
	Pos      lexer.Position
	Because  tok   `parser:"(  'because' @String"`
	Replaced *refG `parser:"| 'replaced' 'by' @@ )"`
}

type confirmG struct {
	Kw    tok  `parser:"@'confirm'"`
	Claim refG `parser:"@@"`
	By    tok  `parser:"'by' @Ident"`
}

type deriveG struct {
	Kw       tok              `parser:"@'derive'"`
	Artifact tok              `parser:"@Ident"`
	From     []*refG          `parser:"'from' @@ ( ',' @@ )*"`
	By       tok              `parser:"'by' @Ident"`
	Clauses  []*deriveClauseG `parser:"@@*"`
}

type deriveClauseG struct {
	Pos        lexer.Position
	Confidence tok       `parser:"(  'confidence' @Number"`
	SeenBy     []*identG `parser:"| 'seen' 'by' @@ ( ',' @@ )*"`
	InRun      tok       `parser:"| 'in' 'run' @Ident )"`
}

type reviewG struct {
	Kw       tok               `parser:"@'review'"`
	Artifact refG              `parser:"@@"`
	By       tok               `parser:"'by' @Ident"`
	Clauses  []*becauseClauseG `parser:"@@*"`
}

type becauseClauseG struct {
	Kw      tok `parser:"@'because'"`
	Because tok `parser:"@String"`
}

type decayG struct {
	Kw       tok `parser:"@'decay'"`
	Pred     tok `parser:"@Ident"`
	HalfLife tok `parser:"'half-life' @Duration"`
}

// ---- reads ----

type liveG struct {
	Kw      tok            `parser:"@'live'"`
	Pattern patternG       `parser:"@@"`
	Clauses []*whereValueG `parser:"@@*"`
}

// whereValueG is live's filter: one comparison of the value, or several joined by ",", all of
// which must hold.
type whereValueG struct {
	Kw    tok           `parser:"@'where' 'value'"`
	Op    tok           `parser:"@Op"`
	Value valueG        `parser:"@@"`
	More  []*valueCondG `parser:"( ',' @@ )*"`
}

type valueCondG struct {
	Kw    tok    `parser:"@'value'"`
	Op    tok    `parser:"@Op"`
	Value valueG `parser:"@@"`
}

type findG struct {
	Kw      tok            `parser:"@'find'"`
	Vars    []*varG        `parser:"@@ ( ',' @@ )*"`
	Where   tok            `parser:"@'where'"`
	Conds   []*condG       `parser:"@@ ( ',' @@ )*"`
	Clauses []*findClauseG `parser:"@@*"`
}

type condG struct {
	LVar  tok     `parser:"( @Var"`
	LName tok     `parser:"| @Ident )"`
	Pred  tok     `parser:"( '.' @Ident )?"`
	Op    tok     `parser:"@Op"`
	RVar  tok     `parser:"( @Var"`
	RVal  *valueG `parser:"| @@ )"`
}

type findClauseG struct {
	Pos   lexer.Position
	Order []*orderKeyG `parser:"(  'order' 'by' @@ ( ',' @@ )*"`
	Limit tok          `parser:"| 'limit' @Number )"`
}

type orderKeyG struct {
	Var tok `parser:"@Var"`
	Dir tok `parser:"( @'asc' | @'desc' )?"`
}

type whyG struct {
	Kw   tok  `parser:"@'why'"`
	Node refG `parser:"@@"`
}

type revokedByG struct {
	Kw    tok  `parser:"@'revoked-by'"`
	Claim refG `parser:"@@"`
}

type impactG struct {
	Kw      tok              `parser:"@'impact'"`
	Node    refG             `parser:"@@"`
	Clauses []*numberClauseG `parser:"@@*"`
}

// numberClauseG is a clause keyword and one number: depth N, budget N.
type numberClauseG struct {
	Kw  tok `parser:"@( 'depth' | 'budget' )"`
	Num tok `parser:"@Number"`
}

// searchG is search TEXT [on PATTERN {, PATTERN}] [vector STRING] [signals NAME {, NAME}]
// [limit N] [history], clauses in any order.
type searchG struct {
	Kw      tok              `parser:"@'search'"`
	Text    tok              `parser:"@String"`
	Clauses []*searchClauseG `parser:"@@*"`
}

type searchClauseG struct {
	Pos     lexer.Position
	On      []*patternG `parser:"(  'on' @@ ( ',' @@ )*"`
	Vector  tok         `parser:"| 'vector' @String"`
	Signals []*identG   `parser:"| 'signals' @@ ( ',' @@ )*"`
	Limit   tok         `parser:"| 'limit' @Number"`
	History tok         `parser:"| @'history' )"`
}

type historyG struct {
	Kw   tok  `parser:"@'history'"`
	Node refG `parser:"@@"`
}

type conflictsG struct {
	Kw       tok       `parser:"@'conflicts'"`
	Subjects []*identG `parser:"( @@ ( ',' @@ )* )?"`
}

type beliefsG struct {
	Kw      tok            `parser:"@'beliefs'"`
	Pattern patternG       `parser:"@@"`
	Clauses []*gateClauseG `parser:"@@*"`
}

type gateClauseG struct {
	Kw   tok `parser:"@'gate'"`
	Low  tok `parser:"@Number"`
	High tok `parser:"@Number"`
}

// contextG is context (* | Subject {, Subject}) [budget N], or context for QUESTION [budget N].
// "for" is taken as a subject and the question after it checked by convert: a subject may be
// called "for", and a branch of its own would have to look past it to tell.
type contextG struct {
	Kw       tok              `parser:"@'context'"`
	All      tok              `parser:"( @'*'"`
	Subjects []*identG        `parser:"| @@ ( ',' @@ )* )"`
	Question tok              `parser:"@String?"`
	Clauses  []*numberClauseG `parser:"@@*"`
}

type statsG struct {
	Kw      tok             `parser:"@'stats'"`
	Clauses []*statsClauseG `parser:"@@*"`
}

type statsClauseG struct {
	Pos   lexer.Position
	For   tok `parser:"(  'for' @Ident"`
	Since tok `parser:"| 'since' @Time )"`
}

func (*principalG) grammarStmt() {}
func (*grantG) grammarStmt()     {}
func (*assertG) grammarStmt()    {}
func (*revokeG) grammarStmt()    {}
func (*confirmG) grammarStmt()   {}
func (*deriveG) grammarStmt()    {}
func (*reviewG) grammarStmt()    {}
func (*decayG) grammarStmt()     {}
func (*liveG) grammarStmt()      {}
func (*findG) grammarStmt()      {}
func (*whyG) grammarStmt()       {}
func (*revokedByG) grammarStmt() {}
func (*impactG) grammarStmt()    {}
func (*historyG) grammarStmt()   {}
func (*conflictsG) grammarStmt() {}
func (*beliefsG) grammarStmt()   {}
func (*searchG) grammarStmt()    {}
func (*contextG) grammarStmt()   {}
func (*statsG) grammarStmt()     {}
