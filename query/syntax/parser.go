package syntax

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// Parse parses a script: statements separated by ";" or newlines (see
// Complete for when a newline ends a statement). name is used in positions
// and error messages only.
//
// On error it returns the statements that did parse, in order, together
// with an error that errors.Is matches with ErrSyntax: an *Error, or an
// ErrorList when several statements are wrong (at most 10 errors are
// reported). A statement with an error is left out of the script, so a
// caller that executes scripts must not run one that came with an error, or
// run only the statements before the first error's position.
func Parse(name, src string) (*Script, error) {
	r := parseScript(name, src, maxErrors)
	return &Script{Stmts: r.stmts}, r.errs.Err()
}

// ParseAt is Parse for src that starts at line and column (both from 1) of the script name:
// positions in the statements and errors are the script's. A reader that takes a script one
// statement at a time (repl.Scanner) parses each where it starts.
func ParseAt(name, src string, line, column int) (*Script, error) {
	r := parseScriptAt(lexer.Position{Filename: name, Line: max(line, 1), Column: max(column, 1)}, src, maxErrors)
	return &Script{Stmts: r.stmts}, r.errs.Err()
}

// ParseStmt parses exactly one statement; a trailing ";", comments and blank
// lines are allowed around it.
func ParseStmt(name, src string) (Stmt, error) {
	r := parseScript(name, src, maxErrors)
	if err := r.errs.Err(); err != nil {
		return nil, err
	}
	switch len(r.stmts) {
	case 0:
		return nil, errorf(r.end, "expected a statement, found end of input")
	case 1:
		return r.stmts[0], nil
	}
	return nil, errorf(r.stmts[1].Pos(), "expected one statement, found more")
}

// Complete reports whether src is a sequence of complete statements: false
// when it ends inside a statement (such as "assert K.p =" or
// "derive plan:x from A.b,") or inside a string literal, and true otherwise,
// including when src has errors that more input cannot fix. A REPL reads
// more lines while Complete is false.
//
// A newline ends a statement when what precedes it on its line is a complete
// statement; otherwise the statement continues on the next line. A ";"
// always ends a statement.
func Complete(src string) bool {
	return !parseScript("", src, maxErrors).incomplete
}

// ParseComplete parses src, which starts at line and column of the script name, and reports
// whether it is complete (see Complete): one pass where Complete followed by ParseAt would
// parse twice. A reader that takes a script a statement at a time uses it to find where each
// statement ends and to parse it at once.
func ParseComplete(name, src string, line, column int) (script *Script, err error, complete bool) {
	r := parseScriptAt(lexer.Position{Filename: name, Line: max(line, 1), Column: max(column, 1)}, src, maxErrors)
	return &Script{Stmts: r.stmts}, r.errs.Err(), !r.incomplete
}

// scriptResult is what parseScript found.
type scriptResult struct {
	stmts      []Stmt
	errs       ErrorList
	incomplete bool     // the input ends inside a statement or a string
	end        Position // end of input
}

// parseScript splits the tokens of src into statements and parses each.
// It stops after maxErrs errors (no limit when maxErrs <= 0).
func parseScript(name, src string, maxErrs int) (r scriptResult) {
	return parseScriptAt(lexer.Position{Filename: name, Line: 1, Column: 1}, src, maxErrs)
}

func parseScriptAt(start lexer.Position, src string, maxErrs int) (r scriptResult) {
	toks, lexErrs, unterminated := scanAt(start, src, false, maxErrs)
	r.errs = append(r.errs, lexErrs...)
	r.incomplete = unterminated
	r.end = posOf(toks[len(toks)-1].Pos)
	nLex := 0 // lexical errors before the current token

	var (
		cur    []tok
		broken bool // a lexical error was reported in cur: skip to the line end
		long   bool // cur was too long: skip to where it seems to end
		viable bool // cur was found to be the start of a statement at a line end
		last   tok  // the last token skipped while long
	)
	// full reports that more than maxErrs errors were found before t, so
	// that the first maxErrs errors of the input are known.
	full := func(t tok) bool {
		for nLex < len(lexErrs) && lexErrs[nLex].Pos.Offset <= t.Pos.Offset {
			nLex++
		}
		return maxErrs > 0 && len(r.errs)-len(lexErrs)+nLex > maxErrs
	}
	reset := func() { cur, broken, long, viable = cur[:0], false, false, false }
	record := func(st Stmt, err *Error) {
		if err != nil {
			r.errs = append(r.errs, err)
		} else if st != nil {
			r.stmts = append(r.stmts, st)
		}
		reset()
	}
	ahead := 0 // index of the first token after the current run of newlines
	for i, t := range toks {
		if full(t) {
			break
		}
		switch {
		case t.Type == tokBad:
			broken = true
		case t.Type == tokNewline:
			if ahead <= i {
				for ahead = i + 1; toks[ahead].Type == tokNewline; ahead++ {
				}
			}
			// A line that begins with a clause keyword continues the statement: ending it
			// here would run a write without the clauses that follow.
			clause := toks[ahead].Type == tokIdent && clauseWords[toks[ahead].Value]
			switch {
			case long:
				if !endsOpen(last) && !clause {
					reset()
				}
			case broken:
				if !clause {
					reset()
				}
			case len(cur) == 0:
			case clause:
			case viable && endsOpen(cur[len(cur)-1]):
				// Known to be a good start, and more must follow: no need
				// to parse again (this keeps long multi-line lists linear).
			case len(cur) > maxExactTokens && endsOpen(cur[len(cur)-1]):
			default:
				st, err, incomplete := parseTokens(cur, t)
				if incomplete && len(cur) <= maxExactTokens {
					viable = true // the statement goes on on the next line
					continue
				}
				record(st, err)
			}
		case t.Type == tokEOF || (t.Type == tokPunct && t.Value == ";"):
			if broken || long || len(cur) == 0 {
				reset()
				continue
			}
			st, err, incomplete := parseTokens(cur, t)
			if incomplete && t.Type == tokEOF {
				r.incomplete = true
			}
			record(st, err)
		case broken:
		case long:
			last = t
		default:
			if len(cur) > 0 && t.Pos.Offset+len(t.Value)-cur[0].Pos.Offset > MaxStmtBytes {
				r.errs.add(posOf(cur[0].Pos), "statement is longer than 1 MiB")
				cur, long, last = cur[:0], true, t
				continue
			}
			if len(cur) >= MaxStmtTokens {
				r.errs.add(posOf(cur[0].Pos), tooManyTokens)
				cur, long, last = cur[:0], true, t
				continue
			}
			cur = append(cur, t)
		}
	}
	r.errs.sort()
	if maxErrs > 0 && len(r.errs) > maxErrs {
		r.errs = append(r.errs[:maxErrs], errorf(r.errs[maxErrs].Pos, "too many errors"))
	}
	return r
}

// maxExactTokens bounds the statements that are parsed at each line end to
// learn whether they go on, which costs time quadratic in the number of
// lines. A longer statement goes on past a line end only when the line ends
// with ",", ".", "@" or an operator.
const maxExactTokens = 512

// endsOpen reports whether a statement whose last token is t certainly goes
// on: t is a separator or an operator. It saves parsing at every line end of
// a long multi-line list.
func endsOpen(t tok) bool {
	return t.Type == tokOp || (t.Type == tokPunct && (t.Value == "," || t.Value == "." || t.Value == "@"))
}

// sliceLexer feeds a statement's tokens to participle.
type sliceLexer struct {
	toks []tok
	i    int
}

func (s *sliceLexer) Next() (lexer.Token, error) {
	t := s.toks[s.i]
	if s.i < len(s.toks)-1 {
		s.i++
	}
	return t, nil
}

// statement keywords, in the order error messages list them.
var (
	writeKeywords = slices.Concat([]string{"principal", "grant", "assert", "revoke", "confirm", "derive", "review", "decay"}, runWriteKeywords)
	readKeywords  = slices.Concat([]string{"live", "find", "why", "revoked-by", "impact", "history", "conflicts", "beliefs", "context", "stats", "search"}, catalogKeywords, runReadKeywords)
	keywordList   = strings.Join(slices.Concat(writeKeywords, readKeywords, controlKeywords), ", ")
	// clauseWords begin the clauses that may follow a complete statement; none begins a
	// statement, so a line that begins with one can only continue the statement above it.
	clauseWords = map[string]bool{
		"by": true, "from": true, "confidence": true, "kind": true, "valid": true, "seen": true,
		"excerpt": true, "uri": true, "revision": true, "because": true, "replaced": true,
		"where": true, "order": true, "limit": true, "depth": true, "gate": true, "budget": true,
		"for": true, "since": true, "in": true,
	}
)

// IsClauseKeyword reports whether word begins a clause of a statement (by, from, confidence,
// where, …): a line that begins with one continues the statement before it, even one that was
// complete at the end of its line. A reader that splits a script into statements (see
// Scanner in package repl) looks at the next line's first word with it before it ends a
// statement at a newline.
func IsClauseKeyword(word string) bool { return clauseWords[word] }

func isRead(kw string) bool    { return contains(readKeywords, kw) }
func isWrite(kw string) bool   { return contains(writeKeywords, kw) }
func isControl(kw string) bool { return contains(controlKeywords, kw) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// parseTokens parses one statement from its tokens (at least one; the
// terminator excluded). incomplete reports that the error is at the end of
// the statement, so that more tokens might complete it.
func parseTokens(toks []tok, term tok) (st Stmt, err *Error, incomplete bool) {
	// Where an error at the end of the statement is reported: at a ";", or
	// just after the last token when the statement ends at a newline or at
	// the end of the input.
	endPos := posOf(term.Pos)
	if term.Type != tokPunct {
		last := toks[len(toks)-1]
		endPos = posOf(advance(last.Pos, last.Value))
	}
	found := func(i int) string {
		if i >= len(toks) {
			if term.Type == tokPunct {
				return `";"`
			}
			return "end of " + map[bool]string{true: "input", false: "line"}[term.Type == tokEOF]
		}
		return describe(toks[i])
	}
	at := func(i int) Position {
		if i >= len(toks) {
			return endPos
		}
		return posOf(toks[i].Pos)
	}

	mods, k, merr := parseMods(toks, at, found)
	if merr != nil {
		return nil, merr.err, merr.i >= len(toks)
	}
	if k >= len(toks) {
		return nil, errorf(endPos, "expected a read statement after the modifiers, found %s", found(k)), true
	}
	kw := toks[k]
	if kw.Type != tokIdent {
		return nil, errorf(at(k), "expected a statement (%s), found %s", keywordList, found(k)), false
	}
	if i, ok := badForRun(toks, k); ok {
		// Without this, the parser reports "for" itself as unexpected, which hides that only
		// the run's name is wrong.
		if i > 0 && i < len(toks) && toks[i-1].Type == tokIdent && toks[i-1].Value != "run" {
			return nil, errorf(at(i), `"for run NAME" ends the statement; found %s after the run's name`, found(i)), false
		}
		return nil, errorf(at(i), `"for run" takes a run's name (letters, digits, "-", "_", ":"), found %s`, found(i)), i >= len(toks)
	}
	if cut, run, i := cutForRun(toks); run != "" && i > k {
		if !servesClaims(kw.Value) {
			return nil, errorf(at(i), `"for run" applies to the reads that serve claims (live, find, why, revoked-by, impact, history, conflicts, beliefs, context, search); %q does not`, kw.Value), false
		}
		mods.ForRun = run
		toks = cut
	}
	if !isRead(kw.Value) && !isWrite(kw.Value) && !isControl(kw.Value) {
		msg := fmt.Sprintf("unknown statement %q; expected one of %s", kw.Value, keywordList)
		if clauseWords[kw.Value] {
			msg += fmt.Sprintf(` (%q begins a clause, and no statement is open here for it to continue)`, kw.Value)
		} else if s := suggest(kw.Value); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		return nil, errorf(at(k), "%s", msg), false
	}

	feed := make([]tok, 0, len(toks)-k+1)
	feed = append(feed, toks[k:]...)
	feed = append(feed, lexer.Token{Type: lexer.EOF, Pos: term.Pos})
	pl, lerr := lexer.Upgrade(&sliceLexer{toks: feed})
	if lerr != nil { // sliceLexer never fails
		return nil, errorf(at(k), "%v", lerr), false
	}
	g, perr := stmtParser.ParseFromLexer(pl)
	if perr != nil {
		i, msg := translate(perr, kw.Value, toks, k, found)
		return nil, errorf(at(i), "%s", msg), i >= len(toks)
	}
	if k > 0 && isWrite(kw.Value) {
		return nil, errorf(at(k), "modifiers (as of, as) apply only to reads; %q is a write", kw.Value), false
	}
	if k > 0 && isControl(kw.Value) {
		return nil, errorf(at(k), "modifiers (as of, as) apply only to reads; %q ends or starts a transaction", kw.Value), false
	}
	st, cerr := convert(g.Body, mods, posOf(toks[0].Pos))
	if cerr != nil {
		return nil, cerr, false
	}
	return st, nil, false
}

type modError struct {
	err *Error
	i   int // index of the offending token
}

// parseMods parses the read modifiers that prefix a statement and returns
// the index of the statement keyword.
func parseMods(toks []tok, at func(int) Position, found func(int) string) (m Mods, k int, err *modError) {
	fail := func(i int, format string, args ...any) (Mods, int, *modError) {
		return m, i, &modError{errorf(at(i), format, args...), i}
	}
	get := func(i int) tok {
		if i < len(toks) {
			return toks[i]
		}
		return tok{Type: lexer.EOF}
	}
	var seenAsOf, seenAs bool
	i := 0
	for get(i).Type == tokIdent && get(i).Value == "as" {
		start := i
		next := get(i + 1)
		switch {
		case next.Type == tokIdent && next.Value == "of":
			if seenAsOf {
				return fail(start, `repeated modifier "as of"; give one time or one transaction`)
			}
			seenAsOf = true
			what := get(i + 2)
			switch {
			case what.Type == tokTime:
				t, e := parseTime(what)
				if e != nil {
					return m, i + 2, &modError{e, i + 2}
				}
				m.AsOfTime = &t
				i += 3
			case what.Type == tokIdent && what.Value == "tx":
				n := get(i + 3)
				if n.Type != tokNumber {
					return fail(i+3, `expected transaction number after "as of tx", found %s`, found(i+3))
				}
				v, e := parseInt(n, "transaction number", 0)
				if e != nil {
					return m, i + 3, &modError{e, i + 3}
				}
				m.AsOfTx = &v
				i += 4
			default:
				return fail(i+2, `expected a time or "tx N" after "as of", found %s`, found(i+2))
			}
		case next.Type == tokIdent:
			if seenAs {
				return fail(start, `repeated modifier "as"`)
			}
			seenAs = true
			m.As = next.Value
			i += 2
		default:
			return fail(i+1, `expected "of" or a principal name after "as", found %s`, found(i+1))
		}
	}
	return m, i, nil
}

// suggest returns the statement keyword closest to s, if it is close.
func suggest(s string) string {
	return closest(s, slices.Concat(writeKeywords, readKeywords, controlKeywords))
}

// closest returns the word of list closest to s, if it is close; keywords are lowercase, so
// "BEGIN" is close to "begin".
func closest(s string, list []string) string {
	s = strings.ToLower(s)
	best, bestD := "", 3
	if len(s) <= 3 {
		bestD = 2
	}
	for _, kw := range list {
		if d := EditDistance(s, kw); d < bestD {
			best, bestD = kw, d
		}
	}
	return best
}

// clauses lists the clause keywords of each statement, for "did you mean".
var clauses = map[string][]string{
	"assert":  {"from", "confidence", "kind", "valid", "seen", "excerpt", "uri", "revision", "vector"},
	"revoke":  {"because", "replaced"},
	"derive":  {"confidence", "seen"},
	"review":  {"because"},
	"live":    {"where"},
	"find":    {"order", "limit"},
	"impact":  {"depth"},
	"beliefs": {"gate"},
	"context": {"budget"},
	"search":  {"on", "vector", "signals", "limit", "history"},
}

// EditDistance is the Levenshtein distance between a and b, in bytes (99 when either is longer
// than 32 bytes: no word that long is a typo of a keyword), for "did you mean".
func EditDistance(a, b string) int {
	if len(a) > 32 || len(b) > 32 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// translate turns a participle error into our wording. It returns the
// index of the offending token in toks (len(toks) for the end of the
// statement) and the message.
func translate(err error, kind string, toks []tok, k int, found func(int) string) (int, string) {
	var ute *participle.UnexpectedTokenError
	if !errors.As(err, &ute) {
		var perr participle.Error
		if errors.As(err, &perr) {
			for i := k; i < len(toks); i++ {
				if toks[i].Pos.Offset >= perr.Position().Offset {
					return i, perr.Message()
				}
			}
			return len(toks), perr.Message()
		}
		return k, err.Error()
	}
	i := len(toks)
	if !ute.Unexpected.EOF() {
		for j := k; j < len(toks); j++ {
			if toks[j].Pos.Offset == ute.Unexpected.Pos.Offset {
				i = j
				break
			}
		}
	}
	if exp := expectAfter(kind, toks, k, i); exp != "" {
		return i, fmt.Sprintf("expected %s, found %s", exp, found(i))
	}
	if exp := participleExpect(ute.Message()); exp != "" {
		switch {
		case exp == `"by"`:
			exp = `"by" and a principal name`
		case exp == `"="` && kind == "assert":
			exp = `"=" and a value after the claim key`
		case exp == `"where"` && kind == "find":
			exp = `"," or "where" after the variables`
		}
		return i, fmt.Sprintf("expected %s, found %s", exp, found(i))
	}
	msg := fmt.Sprintf("unexpected %s; expected %s", found(i), trailing[kind])
	if i < len(toks) && toks[i].Value == "as" && slices.Contains(readKeywords, kind) {
		// SQL puts AS OF after the table; here it leads the read.
		return i, msg + fmt.Sprintf(`: "as of" and "as NAME" go before the read, e.g. "as of tx 5 %s …"`, kind)
	}
	if i < len(toks) && toks[i].Type == tokIdent {
		if s := closest(toks[i].Value, clauses[kind]); s != "" && s != toks[i].Value {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	}
	return i, msg
}

// trailing lists what may follow a complete statement of each kind.
var trailing = map[string]string{
	"assert":  "a clause (from, confidence, kind, valid from, valid until, seen by, vector) or end of statement",
	"revoke":  "a clause (because, replaced by) or end of statement",
	"derive":  "a clause (confidence, seen by) or end of statement",
	"review":  `"because" or end of statement`,
	"live":    `"where" or end of statement`,
	"find":    `",", "order by", "limit" or end of statement`,
	"impact":  `"depth" or end of statement`,
	"beliefs": `"gate" or end of statement`,
	"context": `"budget" or end of statement`,
	"search":  `a clause (on, vector, signals, limit, history) or end of statement`,
}

func init() {
	for _, kw := range slices.Concat(writeKeywords, readKeywords, controlKeywords) {
		if _, ok := trailing[kw]; !ok {
			trailing[kw] = "end of statement"
		}
	}
}

const (
	patternHelp = "a pattern (Subject, Subject.predicate, Subject.*, *.predicate or *)"
	claimHelp   = "a claim key (Subject.predicate)"
	versionHelp = "a claim version (Subject.predicate@N)"
	nodeHelp    = "a claim (Subject.predicate[@N]) or an artifact name"
)

// head says what must follow each statement keyword.
var head = map[string]string{
	"principal":  "a principal name",
	"grant":      "a principal name",
	"assert":     claimHelp,
	"revoke":     versionHelp,
	"confirm":    "a claim (Subject.predicate[@N])",
	"derive":     "an artifact name",
	"review":     "an artifact name",
	"decay":      "a predicate name",
	"live":       patternHelp,
	"find":       "a ?variable",
	"why":        nodeHelp,
	"revoked-by": versionHelp,
	"impact":     nodeHelp,
	"history":    "a claim key (Subject.predicate) or an artifact name",
	"conflicts":  "a subject name",
	"beliefs":    patternHelp,
	"context":    `a subject name, "*", or "for" and a question`,
	"search":     "the text to search for, as a string",
	"describe":   "a principal, subject, predicate or artifact name",
	"run":        "a run's name",
}

// expectAfter says what was expected at toks[i], judging by the tokens
// before it, or "" to fall back on participle's expectation.
func expectAfter(kind string, toks []tok, k, i int) string {
	if i <= k {
		return ""
	}
	prev := toks[i-1]
	if i-1 == k {
		if h := head[kind]; h != "" {
			return fmt.Sprintf("%s after %q", h, kind)
		}
		return ""
	}
	var prev2 tok
	if i-2 > k {
		prev2 = toks[i-2]
	}
	p := prev.Value
	if prev.Type == tokOp {
		switch kind {
		case "assert":
			return fmt.Sprintf("a value after %q", p)
		case "live":
			return fmt.Sprintf("a value after %q", p)
		case "find":
			return fmt.Sprintf("a ?variable or a value after %q", p)
		}
		return ""
	}
	if prev.Type == tokPunct {
		switch p {
		case "@":
			return `version number after "@"`
		case ".":
			switch kind {
			case "live", "beliefs", "grant":
				return `a predicate name or "*" after "."`
			}
			return `a predicate name after "."`
		case ",":
			return listExpect(kind, toks, k, i-1)
		}
		return ""
	}
	if prev.Type == tokNumber && prev2.Value == "gate" && kind == "beliefs" {
		return `a second number after "gate" (gate LOW HIGH)`
	}
	if prev.Type != tokIdent {
		return ""
	}
	switch kind {
	case "principal":
		if i-1 == k+1 {
			return "a principal kind (user, agent or tool)"
		}
	case "grant":
		switch {
		case i-1 == k+1:
			return "a right (assert, revoke, confirm or grant)"
		case p == "on" && i-1 == k+3:
			return `a scope (*, predicate, Subject.* or Subject.predicate) after "on"`
		}
	case "assert":
		switch p {
		case "from":
			if prev2.Value == "valid" {
				return `a time after "valid from"`
			}
			return `a source string after "from"`
		case "until":
			return `a time after "valid until"`
		case "valid":
			return `"from" or "until" after "valid"`
		case "kind":
			return `a claim kind (observed or inferred) after "kind"`
		case "excerpt", "uri", "revision":
			return fmt.Sprintf("a string after %q", p)
		}
	case "derive":
		if p == "from" {
			return `a claim or an artifact after "from"`
		}
	case "revoke":
		switch p {
		case "replaced":
			return `"by" after "replaced"`
		case "by":
			if prev2.Value == "replaced" {
				return versionHelp + ` after "replaced by"`
			}
		}
	case "decay":
		switch {
		case p == "half-life":
			return `a duration after "half-life", such as 10m, 1h30m or 2d`
		case i-1 == k+1:
			return `"half-life" after the predicate`
		}
	case "live":
		switch p {
		case "where":
			return `"value" after "where" (where value OP LITERAL)`
		case "value":
			if prev2.Value == "where" || prev2.Value == "," {
				return `a comparison operator (=, !=, <, <=, >, >=) after "value"`
			}
		}
	case "find":
		switch p {
		case "where":
			return `a condition after "where", such as ?v.predicate = value`
		case "order":
			return `"by" after "order"`
		case "by":
			if prev2.Value == "order" {
				return `a ?variable after "order by"`
			}
		case "limit":
			return `a number after "limit"`
		}
	case "impact":
		if p == "depth" {
			return `a number after "depth"`
		}
	case "context":
		if p == "budget" {
			return `a number after "budget"`
		}
	case "search":
		switch p {
		case "on":
			return patternHelp + ` after "on"`
		case "limit":
			return `a number after "limit"`
		}
	case "beliefs":
		if p == "gate" {
			return `two numbers after "gate" (gate LOW HIGH)`
		}
	case "outcome":
		switch {
		case p == "run" && i-1 == k+1:
			return `a run's name after "run"`
		case i-1 == k+2:
			return "the run's result (succeeded, failed or declined) after its name"
		}
	}
	switch p {
	case "confidence":
		if kind == "assert" || kind == "derive" {
			return `a number after "confidence"`
		}
	case "seen":
		if kind == "assert" || kind == "derive" {
			return `"by" after "seen"`
		}
	case "because":
		if kind == "revoke" || kind == "review" || kind == "outcome" {
			return `a string after "because"`
		}
	case "by":
		if isWrite(kind) {
			return `a principal name after "by"`
		}
	}
	return ""
}

// listExpect says what must follow the comma at toks[c], by finding the
// keyword that started the list.
func listExpect(kind string, toks []tok, k, c int) string {
	for j := c - 1; j > k; j-- {
		t := toks[j]
		if t.Type != tokIdent {
			continue
		}
		switch kind {
		case "assert", "derive":
			if t.Value == "by" && j-1 > k && toks[j-1].Value == "seen" {
				return `a principal name after ","`
			}
			if t.Value == "from" {
				if kind == "assert" {
					return `a source string after ","`
				}
				return `a claim or an artifact after ","`
			}
		case "find":
			switch t.Value {
			case "order":
				return `a ?variable after ","`
			case "where":
				return `a condition after ","`
			}
		}
	}
	switch kind {
	case "live":
		return `"value" after "," (where value OP LITERAL, value OP LITERAL)`
	case "find":
		return `a ?variable after ","`
	case "conflicts", "context":
		return `a subject name after ","`
	}
	return ""
}

// participleExpect turns the "(expected ...)" part of a participle message
// into words, keeping only what the next token could have been.
func participleExpect(msg string) string {
	i := strings.Index(msg, "(expected ")
	if i < 0 || !strings.HasSuffix(msg, ")") {
		return ""
	}
	return describeExpect(strings.TrimSpace(msg[i+len("(expected ") : len(msg)-1]))
}

func describeExpect(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "(") {
		// The first group: alternatives, each described by its first element.
		depth, end := 0, -1
		for j, r := range s {
			switch r {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 && end < 0 {
					end = j
				}
			}
			if end >= 0 {
				break
			}
		}
		if end < 0 {
			return ""
		}
		var alts []string
		for _, alt := range splitTop(s[1:end]) {
			if d := describeExpect(alt); d != "" && !contains(alts, d) {
				alts = append(alts, d)
			}
		}
		switch len(alts) {
		case 0:
			return ""
		case 1:
			return alts[0]
		}
		return strings.Join(alts[:len(alts)-1], ", ") + " or " + alts[len(alts)-1]
	}
	first := s
	if j := strings.IndexAny(s, " ("); j >= 0 {
		first = s[:j]
	}
	first = strings.TrimRight(first, "*?+")
	if d, ok := expectWords[first]; ok {
		return d
	}
	if strings.HasPrefix(first, `"`) {
		return first
	}
	return ""
}

// splitTop splits s at the "|" that are not inside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for j, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case '|':
			if depth == 0 {
				out = append(out, s[start:j])
				start = j + 1
			}
		}
	}
	return append(out, s[start:])
}

var expectWords = map[string]string{
	"<ident>":        "a name",
	"<number>":       "a number",
	"<string>":       "a string",
	"<time>":         "a time",
	"<duration>":     "a duration",
	"<var>":          "a ?variable",
	"<op>":           "a comparison operator",
	"RefG":           "a claim or an artifact",
	"ValueG":         "a value",
	"SourceG":        "a source string",
	"SourcePartG":    `"excerpt", "uri" or "revision"`,
	"ScopeG":         "a scope",
	"PatternG":       "a pattern",
	"IdentG":         "a name",
	"VarG":           "a ?variable",
	"CondG":          "a condition",
	"OrderKeyG":      "a ?variable",
	"StmtNode":       "a statement",
	"AssertClauseG":  trailing["assert"],
	"RevokeClauseG":  "because or replaced by",
	"DeriveClauseG":  "confidence or seen by",
	"BecauseClauseG": `"because"`,
	"WhereValueG":    `"where"`,
	"FindClauseG":    `"order by" or "limit"`,
	"NumberClauseG":  `"depth" or "budget"`,
	"GateClauseG":    `"gate"`,
	"<eof>":          "end of statement",
	`"by"`:           `"by"`,
}
