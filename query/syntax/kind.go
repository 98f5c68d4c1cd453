package syntax

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

// IsRead reports whether a statement only reads, and so records nothing: what a surface that
// must not change the store may run (the HTTP server under a session's token), and what the
// REPL may answer at once inside a transaction instead of holding it for the commit. A read
// made "for run NAME" also records what it served, a write by the reading principal, and so
// is not: ReadFor tells it from the other reads.
func IsRead(st Stmt) bool {
	run, ok := ReadFor(st)
	return ok && run == ""
}

// ReadFor reports whether a statement is a read, and the run it is made for ("" when none).
// The MCP query tool gates on this rather than IsRead: recording what its reads served, for
// the agent's run, is what the tool is for. No transaction may hold a read for a run, because
// mql's reads inside a transaction record nothing.
func ReadFor(st Stmt) (run string, ok bool) {
	r, ok := st.(ReadStmt)
	if !ok {
		return "", false
	}
	return r.Modifiers().ForRun, true
}

// IsControl reports whether a statement starts or ends a transaction: begin, commit, rollback.
func IsControl(st Stmt) bool {
	switch st.(type) {
	case *Begin, *Commit, *Rollback:
		return true
	}
	return false
}
