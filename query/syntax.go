package query

import (
	"fmt"
	"time"

	"github.com/mql-dev/mql/query/syntax"
)

// The language's syntax (lexer, grammar, parser, AST, printer, positions and syntax errors) is
// package syntax's, which does not import the library, so that the library records the
// statements it serves to runs with the same printer. Package query names it here, for the
// sessions and for the packages that have always called it query.

// Statements and their parts.
type (
	Stmt          = syntax.Stmt
	ReadStmt      = syntax.ReadStmt
	Script        = syntax.Script
	Mods          = syntax.Mods
	PrincipalKind = syntax.PrincipalKind
	Right         = syntax.Right
	ClaimKind     = syntax.ClaimKind
	Op            = syntax.Op
	ValueKind     = syntax.ValueKind
	Value         = syntax.Value
	Ref           = syntax.Ref
	Pattern       = syntax.Pattern
	Scope         = syntax.Scope
	Source        = syntax.Source
	Filter        = syntax.Filter
	Cond          = syntax.Cond
	OrderKey      = syntax.OrderKey
	Gate          = syntax.Gate

	Principal = syntax.Principal
	Grant     = syntax.Grant
	Assert    = syntax.Assert
	Revoke    = syntax.Revoke
	Confirm   = syntax.Confirm
	Derive    = syntax.Derive
	Outcome   = syntax.Outcome
	Review    = syntax.Review
	Decay     = syntax.Decay

	Live      = syntax.Live
	Find      = syntax.Find
	Why       = syntax.Why
	RevokedBy = syntax.RevokedBy
	Impact    = syntax.Impact
	History   = syntax.History
	Conflicts = syntax.Conflicts
	Beliefs   = syntax.Beliefs
	Search    = syntax.Search
	Context   = syntax.Context
	Stats     = syntax.Stats
	Run       = syntax.Run
	Runs      = syntax.Runs

	Principals = syntax.Principals
	Grants     = syntax.Grants
	Subjects   = syntax.Subjects
	Predicates = syntax.Predicates
	Artifacts  = syntax.Artifacts
	Sources    = syntax.Sources
	Describe   = syntax.Describe

	Begin    = syntax.Begin
	Commit   = syntax.Commit
	Rollback = syntax.Rollback
)

// Positions and syntax errors.
type (
	Position  = syntax.Position
	Error     = syntax.Error
	ErrorList = syntax.ErrorList
)

// ErrSyntax is matched by every error the parsing functions return.
var ErrSyntax = syntax.ErrSyntax

// The limits on the input.
const (
	MaxStmtBytes   = syntax.MaxStmtBytes
	MaxStringBytes = syntax.MaxStringBytes
	MaxStmtTokens  = syntax.MaxStmtTokens
)

// The principal kinds.
const (
	User  = syntax.User
	Agent = syntax.Agent
	Tool  = syntax.Tool
)

// The rights.
const (
	RightAssert  = syntax.RightAssert
	RightRevoke  = syntax.RightRevoke
	RightConfirm = syntax.RightConfirm
	RightGrant   = syntax.RightGrant
)

// The claim kinds.
const (
	Confirmed = syntax.Confirmed
	Observed  = syntax.Observed
	Inferred  = syntax.Inferred
)

// The comparison operators.
const (
	OpEq = syntax.OpEq
	OpNe = syntax.OpNe
	OpLt = syntax.OpLt
	OpLe = syntax.OpLe
	OpGt = syntax.OpGt
	OpGe = syntax.OpGe
)

// The value kinds.
const (
	KindString = syntax.KindString
	KindNumber = syntax.KindNumber
	KindBool   = syntax.KindBool
	KindTime   = syntax.KindTime
	KindRef    = syntax.KindRef
)

// Parse is syntax.Parse: it parses a script.
func Parse(name, src string) (*Script, error) { return syntax.Parse(name, src) }

// ParseAt is syntax.ParseAt: Parse for src that starts at line and column of the script name.
func ParseAt(name, src string, line, column int) (*Script, error) {
	return syntax.ParseAt(name, src, line, column)
}

// ParseStmt is syntax.ParseStmt: it parses exactly one statement.
func ParseStmt(name, src string) (Stmt, error) { return syntax.ParseStmt(name, src) }

// ParseComplete is syntax.ParseComplete: ParseAt, and Complete of the same src.
func ParseComplete(name, src string, line, column int) (script *Script, err error, complete bool) {
	return syntax.ParseComplete(name, src, line, column)
}

// Complete is syntax.Complete: whether src ends between statements.
func Complete(src string) bool { return syntax.Complete(src) }

// IsClauseKeyword is syntax.IsClauseKeyword.
func IsClauseKeyword(word string) bool { return syntax.IsClauseKeyword(word) }

// EditDistance is syntax.EditDistance.
func EditDistance(a, b string) int { return syntax.EditDistance(a, b) }

// FormatDuration is syntax.FormatDuration: a duration as the language writes it.
func FormatDuration(d time.Duration) string { return syntax.FormatDuration(d) }

// KindOf is syntax.KindOf: a statement's kind, as results and logs name it.
func KindOf(st Stmt) string { return syntax.KindOf(st) }

// IsRead is syntax.IsRead: whether a statement only reads, and so records nothing.
func IsRead(st Stmt) bool { return syntax.IsRead(st) }

// ReadFor is syntax.ReadFor: whether a statement is a read, and the run it is made for.
func ReadFor(st Stmt) (run string, ok bool) { return syntax.ReadFor(st) }

// IsControl is syntax.IsControl: whether a statement starts or ends a transaction.
func IsControl(st Stmt) bool { return syntax.IsControl(st) }

// ForRun is syntax.ForRun: it makes a read that serves claims a read for the run.
func ForRun(st Stmt, run string) bool { return syntax.ForRun(st, run) }

// errorf is a syntax error at pos: what a session reports, at the statement, about a
// transaction's begin and end, as the parser reports what is wrong in a statement.
func errorf(pos Position, format string, args ...any) *Error {
	return &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
}
