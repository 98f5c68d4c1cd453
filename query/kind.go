package query

// KindOf names a statement's kind as results and logs do: "assert", "live", "revoked-by", …
func KindOf(st Stmt) string {
	switch st.(type) {
	case *Principal:
		return "principal"
	case *Grant:
		return "grant"
	case *Assert:
		return "assert"
	case *Revoke:
		return "revoke"
	case *Confirm:
		return "confirm"
	case *Derive:
		return "derive"
	case *Review:
		return "review"
	case *Outcome:
		return "outcome"
	case *Run:
		return "run"
	case *Runs:
		return "runs"
	case *Decay:
		return "decay"
	case *Live:
		return "live"
	case *Find:
		return "find"
	case *Why:
		return "why"
	case *RevokedBy:
		return "revoked-by"
	case *Impact:
		return "impact"
	case *History:
		return "history"
	case *Conflicts:
		return "conflicts"
	case *Beliefs:
		return "beliefs"
	case *Context:
		return "context"
	case *Search:
		return "search"
	case *Stats:
		return "stats"
	case *Principals:
		return "principals"
	case *Grants:
		return "grants"
	case *Subjects:
		return "subjects"
	case *Predicates:
		return "predicates"
	case *Artifacts:
		return "artifacts"
	case *Sources:
		return "sources"
	case *Describe:
		return "describe"
	case *Begin:
		return "begin"
	case *Commit:
		return "commit"
	case *Rollback:
		return "rollback"
	}
	return "unknown"
}

// IsRead reports whether a statement only reads: a read made "for run NAME" also records
// what it served, and so is not.
func IsRead(st Stmt) bool {
	r, ok := st.(ReadStmt)
	return ok && r.Modifiers().ForRun == ""
}

// IsControl reports whether a statement starts or ends a transaction: begin, commit, rollback.
func IsControl(st Stmt) bool {
	switch st.(type) {
	case *Begin, *Commit, *Rollback:
		return true
	}
	return false
}
