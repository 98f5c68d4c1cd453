package syntax

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/alecthomas/participle/v2/lexer"

	"github.com/mql-dev/mql/graphstore/record"
)

// convert turns a participle capture into the AST, checking what the grammar
// does not: kinds and rights by name, numeric ranges, repeated clauses, the
// shape of references. start is the position of the statement's first token.
func convert(g stmtNode, mods Mods, start Position) (Stmt, *Error) {
	var c converter
	st := c.stmt(g, mods, start)
	if c.err != nil {
		return nil, c.err
	}
	return st, nil
}

// converter keeps the first error; later checks are skipped once it is set.
type converter struct {
	err *Error
}

func (c *converter) failf(t tok, format string, args ...any) {
	c.failAt(posOf(t.Pos), format, args...)
}

func (c *converter) failAt(p Position, format string, args ...any) {
	if c.err == nil {
		c.err = errorf(p, format, args...)
	}
}

func (c *converter) ok() bool { return c.err == nil }

// once records a clause keyword and reports a repeated one.
type once map[string]bool

func (c *converter) once(seen once, name string, p lexer.Position) {
	if seen[name] {
		c.failAt(posOf(p), "repeated clause %q; each clause may be given once", name)
	}
	seen[name] = true
}

func present(t tok) bool { return t.Type != 0 }

func (c *converter) stmt(g stmtNode, mods Mods, start Position) Stmt {
	switch g := g.(type) {
	case *principalG:
		kind := PrincipalKind(g.Kind.Value)
		switch kind {
		case User, Agent, Tool:
		default:
			c.failf(g.Kind, "unknown principal kind %q; expected user, agent or tool", g.Kind.Value)
		}
		return &Principal{Start: start, Name: g.Name.Value, Kind: kind}

	case *grantG:
		right := Right(g.Right.Value)
		switch right {
		case RightAssert, RightRevoke, RightConfirm, RightGrant:
		default:
			c.failf(g.Right, "unknown right %q; expected assert, revoke, confirm or grant", g.Right.Value)
		}
		return &Grant{Start: start, Grantee: g.Grantee.Value, Right: right, Scope: c.scope(g.Scope), By: g.By.Value}

	case *assertG:
		s := &Assert{Start: start, Key: c.key(g.Key, "assert"), Value: c.value(g.Value), By: g.By.Value}
		seen := once{}
		var untilTok tok
		for _, cl := range g.Clauses {
			switch {
			case cl.From != nil:
				c.once(seen, "from", cl.Pos)
				for _, src := range cl.From {
					s.Sources = append(s.Sources, c.source(src))
				}
			case present(cl.Confidence):
				c.once(seen, "confidence", cl.Pos)
				s.Confidence = c.confidence(cl.Confidence)
			case present(cl.Kind):
				c.once(seen, "kind", cl.Pos)
				s.Kind = ClaimKind(cl.Kind.Value)
				switch s.Kind {
				case Observed, Inferred:
				case Confirmed:
					c.failf(cl.Kind, "a claim cannot be asserted as confirmed: it becomes confirmed when a user confirms it; assert it (kind observed), then `confirm %s by USER`", s.Key)
				default:
					c.failf(cl.Kind, "unknown claim kind %q; expected observed or inferred", cl.Kind.Value)
				}
			case present(cl.ValidFrom):
				c.once(seen, "valid from", cl.Pos)
				t := c.time(cl.ValidFrom)
				s.ValidFrom = &t
			case present(cl.ValidUntil):
				c.once(seen, "valid until", cl.Pos)
				untilTok = cl.ValidUntil
				t := c.time(cl.ValidUntil)
				s.ValidUntil = &t
			case cl.SeenBy != nil:
				c.once(seen, "seen by", cl.Pos)
				s.SeenBy = names(cl.SeenBy)
			case present(cl.Vector):
				c.once(seen, "vector", cl.Pos)
				s.Vector = c.vector(cl.Vector)
			}
		}
		if c.ok() && s.ValidFrom != nil && s.ValidUntil != nil && !s.ValidFrom.Before(*s.ValidUntil) {
			c.failf(untilTok, "valid until %s is not after valid from %s", formatTime(*s.ValidUntil), formatTime(*s.ValidFrom))
		}
		return s

	case *revokeG:
		s := &Revoke{Start: start, Claim: c.version(g.Claim, "revoke"), By: g.By.Value}
		seen := once{}
		for _, cl := range g.Clauses {
			switch {
			case present(cl.Because):
				c.once(seen, "because", cl.Pos)
				s.Because = c.str(cl.Because)
			case cl.Replaced != nil:
				c.once(seen, "replaced by", cl.Pos)
				r := c.version(*cl.Replaced, "replaced by")
				s.ReplacedBy = &r
			}
		}
		return s

	case *confirmG:
		r := c.ref(g.Claim)
		if c.ok() && !r.IsClaim() {
			c.failf(g.Claim.lastTok(), "confirm takes a claim (Subject.predicate[@N]), not %q", r.String())
		}
		return &Confirm{Start: start, Claim: r, By: g.By.Value}

	case *deriveG:
		s := &Derive{Start: start, Artifact: g.Artifact.Value, By: g.By.Value}
		for _, r := range g.From {
			s.From = append(s.From, c.ref(*r))
		}
		seen := once{}
		for _, cl := range g.Clauses {
			switch {
			case present(cl.Confidence):
				c.once(seen, "confidence", cl.Pos)
				s.Confidence = c.confidence(cl.Confidence)
			case cl.SeenBy != nil:
				c.once(seen, "seen by", cl.Pos)
				s.SeenBy = names(cl.SeenBy)
			case present(cl.InRun):
				c.once(seen, "in run", cl.Pos)
				s.Run = cl.InRun.Value
			}
		}
		return s

	case *reviewG:
		r := c.ref(g.Artifact)
		if c.ok() && r.IsClaim() {
			c.failf(g.Artifact.lastTok(), "review takes an artifact name, not the claim %s", r.String())
		}
		s := &Review{Start: start, Artifact: r, By: g.By.Value}
		seen := once{}
		for _, cl := range g.Clauses {
			c.once(seen, "because", cl.Kw.Pos)
			s.Because = c.str(cl.Because)
		}
		return s

	case *decayG:
		d, err := parseDuration(g.HalfLife.Value)
		if err != nil {
			c.failf(g.HalfLife, "invalid duration %q: %v; use a number and a unit (ns, us, ms, s, m, h, d) such as 10m, 1h30m or 2d", g.HalfLife.Value, err)
		} else if d <= 0 {
			c.failf(g.HalfLife, "half-life must be positive")
		}
		return &Decay{Start: start, Predicate: g.Pred.Value, HalfLife: d}

	case *liveG:
		s := &Live{Start: start, Mods: mods, Pattern: c.pattern(g.Pattern)}
		seen := once{}
		for _, cl := range g.Clauses {
			c.once(seen, "where", cl.Kw.Pos)
			s.Where = []Filter{{Pos: posOf(cl.Kw.Pos), Op: Op(cl.Op.Value), Value: c.value(cl.Value)}}
			for _, m := range cl.More {
				s.Where = append(s.Where, Filter{Pos: posOf(m.Kw.Pos), Op: Op(m.Op.Value), Value: c.value(m.Value)})
			}
		}
		return s

	case *findG:
		return c.find(g, mods, start)

	case *whyG:
		return &Why{Start: start, Mods: mods, Node: c.ref(g.Node)}

	case *revokedByG:
		return &RevokedBy{Start: start, Mods: mods, Claim: c.version(g.Claim, "revoked-by")}

	case *impactG:
		s := &Impact{Start: start, Mods: mods, Node: c.ref(g.Node)}
		seen := once{}
		for _, cl := range g.Clauses {
			if cl.Kw.Value != "depth" {
				c.failf(cl.Kw, `unexpected %q; expected "depth" or end of statement`, cl.Kw.Value)
				continue
			}
			c.once(seen, "depth", cl.Kw.Pos)
			d := int(c.integer(cl.Num, "depth", 0))
			s.Depth = &d
		}
		return s

	case *historyG:
		r := c.ref(g.Node)
		if c.ok() && present(g.Node.At) {
			c.failf(g.Node.Ver, "history takes a claim key or an artifact name, without @N")
		}
		return &History{Start: start, Mods: mods, Node: r}

	case *conflictsG:
		return &Conflicts{Start: start, Mods: mods, Subjects: names(g.Subjects)}

	case *searchG:
		s := &Search{Start: start, Mods: mods, Text: c.str(g.Text)}
		seen := once{}
		for _, cl := range g.Clauses {
			switch {
			case cl.On != nil:
				c.once(seen, "on", cl.Pos)
				for _, p := range cl.On {
					s.On = append(s.On, c.pattern(*p))
				}
			case present(cl.Vector):
				c.once(seen, "vector", cl.Pos)
				s.Vector = c.vector(cl.Vector)
			case cl.Signals != nil:
				c.once(seen, "signals", cl.Pos)
				s.Signals = names(cl.Signals)
			case present(cl.Limit):
				c.once(seen, "limit", cl.Pos)
				s.Limit = int(c.integer(cl.Limit, "limit", 1))
			case present(cl.History):
				c.once(seen, "history", cl.Pos)
				s.History = true
			}
		}
		return s

	case *beliefsG:
		s := &Beliefs{Start: start, Mods: mods, Pattern: c.pattern(g.Pattern)}
		seen := once{}
		for _, cl := range g.Clauses {
			c.once(seen, "gate", cl.Kw.Pos)
			low, high := c.number(cl.Low), c.number(cl.High)
			switch {
			case !c.ok():
			case low < 0:
				c.failf(cl.Low, "gate thresholds must not be negative")
			case high < low:
				c.failf(cl.High, "gate thresholds must be in order: gate LOW HIGH with LOW <= HIGH")
			}
			s.Gate = &Gate{Pos: posOf(cl.Kw.Pos), Low: low, High: high}
		}
		return s

	case *contextG:
		s := &Context{Start: start, Mods: mods, All: present(g.All), Subjects: names(g.Subjects)}
		if present(g.Question) {
			switch {
			case len(g.Subjects) == 1 && g.Subjects[0].Tok.Value != "for":
				c.failf(g.Subjects[0].Tok, `unexpected %q; expected "for" before the question: context for "QUESTION"`, g.Subjects[0].Tok.Value)
			case len(g.Subjects) != 1:
				c.failf(g.Question, `unexpected string; a question is asked alone: context for "QUESTION"`)
			}
			q := c.str(g.Question)
			s.Subjects, s.Question = nil, &q
		}
		seen := once{}
		for _, cl := range g.Clauses {
			if cl.Kw.Value != "budget" {
				c.failf(cl.Kw, `unexpected %q; expected "budget" or end of statement`, cl.Kw.Value)
				continue
			}
			c.once(seen, "budget", cl.Kw.Pos)
			s.Budget = int(c.integer(cl.Num, "budget", 1))
		}
		return s

	case *statsG:
		s := &Stats{Start: start, Mods: mods}
		seen := once{}
		for _, cl := range g.Clauses {
			switch {
			case present(cl.For):
				c.once(seen, "for", cl.Pos)
				s.For = cl.For.Value
			case present(cl.Since):
				c.once(seen, "since", cl.Pos)
				t := c.time(cl.Since)
				s.Since = &t
			}
		}
		return s
	}
	if st := c.catalog(g, mods, start); st != nil {
		return st
	}
	if st := c.runs(g, mods, start); st != nil {
		return st
	}
	panic(fmt.Sprintf("syntax: unhandled statement %T", g))
}

func (c *converter) find(g *findG, mods Mods, start Position) Stmt {
	s := &Find{Start: start, Mods: mods}
	listed := map[string]bool{}
	for _, v := range g.Vars {
		name := v.Tok.Value[1:]
		if listed[name] {
			c.failf(v.Tok, "variable %s is listed twice", v.Tok.Value)
		}
		listed[name] = true
		s.Vars = append(s.Vars, name)
	}
	// A pattern binds its subject variable, and its object variable when it
	// compares with "=". Every other use of a variable needs a binding.
	bound := map[string]bool{}
	for _, cg := range g.Conds {
		cond := Cond{Op: Op(cg.Op.Value)}
		if present(cg.LVar) {
			cond.Pos = posOf(cg.LVar.Pos)
			cond.SubjectVar = cg.LVar.Value[1:]
		} else {
			cond.Pos = posOf(cg.LName.Pos)
			cond.Subject = cg.LName.Value
		}
		if present(cg.Pred) {
			cond.Predicate = cg.Pred.Value
		} else if !present(cg.LVar) {
			c.failf(cg.LName, "a condition on subject %q needs a predicate: %s.predicate OP value", cg.LName.Value, cg.LName.Value)
		}
		if present(cg.RVar) {
			cond.ObjectVar = cg.RVar.Value[1:]
		} else {
			cond.Object = c.value(*cg.RVal)
		}
		if !cond.IsFilter() {
			if cond.SubjectVar != "" {
				bound[cond.SubjectVar] = true
			}
			if cond.ObjectVar != "" && cond.Op == OpEq {
				bound[cond.ObjectVar] = true
			}
		}
		s.Where = append(s.Where, cond)
	}
	need := func(t tok) {
		if !bound[t.Value[1:]] {
			c.failf(t, "variable %s is not bound by any condition; bind it with ?s.predicate = %s or use it as a subject", t.Value, t.Value)
		}
	}
	for _, v := range g.Vars {
		need(v.Tok)
	}
	for _, cg := range g.Conds {
		if present(cg.LVar) && !present(cg.Pred) {
			need(cg.LVar)
		}
		if present(cg.RVar) && (!present(cg.Pred) || cg.Op.Value != "=") {
			need(cg.RVar)
		}
	}
	seen := once{}
	for _, cl := range g.Clauses {
		switch {
		case cl.Order != nil:
			c.once(seen, "order by", cl.Pos)
			for _, k := range cl.Order {
				need(k.Var)
				s.OrderBy = append(s.OrderBy, OrderKey{Pos: posOf(k.Var.Pos), Var: k.Var.Value[1:], Desc: k.Dir.Value == "desc"})
			}
		case present(cl.Limit):
			c.once(seen, "limit", cl.Pos)
			s.Limit = int(c.integer(cl.Limit, "limit", 1))
		}
	}
	return s
}

func names(ids []*identG) []string {
	if ids == nil {
		return nil
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.Tok.Value
	}
	return out
}

// lastTok is the last token of a reference: errors about the shape of a
// reference point there, where a missing "@N" or ".predicate" would go.
func (g refG) lastTok() tok {
	switch {
	case present(g.Ver):
		return g.Ver
	case present(g.Pred):
		return g.Pred
	}
	return g.Name
}

func (c *converter) ref(g refG) Ref {
	r := Ref{Pos: posOf(g.Name.Pos), Subject: g.Name.Value, Predicate: g.Pred.Value}
	if present(g.Ver) {
		r.Version = int(c.integer(g.Ver, "version number", 1))
	}
	return r
}

// key checks that g is Subject.predicate without a version.
func (c *converter) key(g refG, stmt string) Ref {
	r := c.ref(g)
	switch {
	case !c.ok():
	case !r.IsClaim():
		c.failf(g.lastTok(), "%s takes a claim key Subject.predicate, not %q", stmt, g.Name.Value)
	case present(g.At):
		c.failf(g.Ver, "%s takes a claim key without @N: each assert records a new version", stmt)
	}
	return r
}

// version checks that g is Subject.predicate@N.
func (c *converter) version(g refG, stmt string) Ref {
	r := c.ref(g)
	switch {
	case !c.ok():
	case !r.IsClaim():
		c.failf(g.lastTok(), "%s takes a claim version Subject.predicate@N, not %q", stmt, r.String())
	case r.Version == 0:
		c.failf(g.lastTok(), "%s takes a claim version: add @N to %s.%s", stmt, r.Subject, r.Predicate)
	}
	return r
}

func (c *converter) pattern(g patternG) Pattern {
	p := Pattern{Pos: posOf(g.First.Pos)}
	if g.First.Value != "*" {
		p.Subject = g.First.Value
	}
	if present(g.Second) && g.Second.Value != "*" {
		p.Predicate = g.Second.Value
	}
	return p
}

func (c *converter) scope(g scopeG) Scope {
	s := Scope{Pos: posOf(g.First.Pos)}
	switch {
	case g.First.Value == "*" && present(g.Second):
		if g.Second.Value == "*" {
			c.failf(g.Second, `invalid scope "*.*"; write * for every claim`)
		} else {
			c.failf(g.Second, "invalid scope \"*.%s\"; write the predicate alone (on %s) for every subject", g.Second.Value, g.Second.Value)
		}
	case g.First.Value == "*":
	case !present(g.Second):
		s.Predicate = g.First.Value // a predicate of any subject
	default:
		s.Subject = g.First.Value
		if g.Second.Value != "*" {
			s.Predicate = g.Second.Value
		}
	}
	return s
}

func (c *converter) value(g valueG) Value {
	switch {
	case present(g.Str):
		return Value{Pos: posOf(g.Str.Pos), Kind: KindString, Str: c.str(g.Str)}
	case present(g.Num):
		return Value{Pos: posOf(g.Num.Pos), Kind: KindNumber, Num: c.number(g.Num)}
	case present(g.Time):
		return Value{Pos: posOf(g.Time.Pos), Kind: KindTime, Time: c.time(g.Time)}
	case present(g.Bool):
		return Value{Pos: posOf(g.Bool.Pos), Kind: KindBool, Bool: g.Bool.Value == "true"}
	case g.Ref != nil:
		r := c.ref(*g.Ref)
		if r.Predicate == "" && r.Version == 0 && notANumber(r.Subject) {
			// NaN and Inf look like numbers to a reader; mql stores only finite numbers, and a
			// reference to an entity named NaN is more likely a mistake than meant.
			c.failf(g.Ref.Name, "%s is not a number mql stores (numbers are finite); write %q for the string, or name an entity other than %s", r.Subject, r.Subject, r.Subject)
		}
		return Value{Pos: r.Pos, Kind: KindRef, Ref: r}
	}
	panic("syntax: empty value")
}

func (c *converter) source(g *sourceG) Source {
	s := Source{Pos: posOf(g.ID.Pos), ID: c.str(g.ID)}
	if c.ok() && s.ID == "" {
		c.failf(g.ID, "source id must not be empty")
	}
	seen := once{}
	for _, p := range g.Parts {
		c.once(seen, p.Kw.Value, p.Kw.Pos)
		v := c.str(p.Str)
		switch p.Kw.Value {
		case "excerpt":
			s.Excerpt = v
		case "uri":
			s.URI = v
		case "revision":
			s.Revision = v
		}
	}
	return s
}

func (c *converter) confidence(t tok) *float64 {
	f := c.number(t)
	if c.ok() && (f < 0 || f > 1) {
		c.failf(t, "confidence must be between 0 and 1")
	}
	return &f
}

func (c *converter) number(t tok) float64 {
	f, err := strconv.ParseFloat(t.Value, 64)
	if err != nil || math.IsInf(f, 0) {
		c.failf(t, "number %s is out of range", shorten(t.Value))
		return 0
	}
	if f == 0 && strings.ContainsAny(t.Value, "123456789") {
		c.failf(t, "number %s is too small to store: it would be 0", shorten(t.Value))
		return 0
	}
	return f
}

// notANumber reports whether a bare name spells one of the floating-point values that are not
// numbers mql stores: NaN, Inf, Infinity, in any case.
func notANumber(name string) bool {
	switch strings.ToLower(name) {
	case "nan", "inf", "infinity":
		return true
	}
	return false
}

func (c *converter) integer(t tok, what string, min int64) int64 {
	v, err := parseInt(t, what, min)
	if err != nil {
		c.failAt(err.Pos, "%s", err.Msg)
	}
	return v
}

// parseInt parses a whole number no smaller than min and no larger than
// 2^31-1 (so that it fits an int everywhere), or 2^63-1 for transaction
// numbers.
func parseInt(t tok, what string, min int64) (int64, *Error) {
	if strings.Contains(t.Value, ".") {
		return 0, errorf(posOf(t.Pos), "%s must be a whole number", what)
	}
	limit := int64(math.MaxInt32)
	if what == "transaction number" {
		limit = math.MaxInt64
	}
	v, err := strconv.ParseInt(t.Value, 10, 64)
	if err != nil || v > limit {
		if strings.HasPrefix(t.Value, "-") {
			return 0, errorf(posOf(t.Pos), "%s must be at least %d", what, min)
		}
		return 0, errorf(posOf(t.Pos), "%s %s is too large", what, shorten(t.Value))
	}
	if v < min {
		return 0, errorf(posOf(t.Pos), "%s must be at least %d", what, min)
	}
	return v, nil
}

func (c *converter) time(t tok) time.Time {
	v, err := parseTime(t)
	if err != nil {
		c.failAt(err.Pos, "%s", err.Msg)
	}
	return v
}

// parseTime parses a Time token: YYYY-MM-DD (midnight UTC) or RFC 3339. The
// result is in UTC.
func parseTime(t tok) (time.Time, *Error) {
	s := strings.ToUpper(t.Value)
	layout := time.RFC3339Nano
	if len(s) == len("2006-01-02") {
		layout = "2006-01-02"
	}
	v, err := time.Parse(layout, s)
	if err != nil {
		var pe *time.ParseError
		if errors.As(err, &pe) && pe.Message != "" {
			return time.Time{}, errorf(posOf(t.Pos), "invalid time %q: %s", shorten(t.Value), strings.TrimPrefix(pe.Message, ": "))
		}
		return time.Time{}, errorf(posOf(t.Pos), "invalid time %q; expected YYYY-MM-DD or RFC 3339 such as 2026-11-29T10:00:00Z", shorten(t.Value))
	}
	v = v.UTC()
	if v.Year() < 0 || v.Year() > 9999 {
		return time.Time{}, errorf(posOf(t.Pos), "time %q is out of range: its year in UTC must be 0000 to 9999", t.Value)
	}
	return v, nil
}

// parseDuration parses a Go duration that may also use d for days of 24h.
func parseDuration(s string) (time.Duration, error) {
	neg := strings.HasPrefix(s, "-")
	rest := strings.TrimPrefix(s, "-")
	if rest == "" {
		return 0, errors.New("empty")
	}
	var total time.Duration
	for rest != "" {
		i := 0
		for i < len(rest) && (rest[i] >= '0' && rest[i] <= '9' || rest[i] == '.') {
			i++
		}
		if i == 0 {
			return 0, fmt.Errorf("missing number before %q", shorten(rest))
		}
		num := rest[:i]
		rest = rest[i:]
		j := 0
		for j < len(rest) && !(rest[j] >= '0' && rest[j] <= '9' || rest[j] == '.') {
			j++
		}
		unit := rest[:j]
		rest = rest[j:]
		var d time.Duration
		var err error
		switch unit {
		case "d":
			d, err = time.ParseDuration(num + "h")
			if err == nil {
				if d > math.MaxInt64/24 {
					return 0, errors.New("too large")
				}
				d *= 24
			}
		case "ns", "us", "µs", "μs", "ms", "s", "m", "h":
			d, err = time.ParseDuration(num + unit)
		case "":
			return 0, fmt.Errorf("missing unit after %s", num)
		default:
			return 0, fmt.Errorf("unknown unit %q", shorten(unit))
		}
		if err != nil {
			return 0, errors.New("too large")
		}
		if total > math.MaxInt64-d {
			return 0, errors.New("too large")
		}
		total += d
	}
	if neg {
		total = -total
	}
	return total, nil
}

// vector reads a vector STRING clause (record.ParseVector's syntax); what makes a vector fit for
// a claim or a search (finite, not zero, the store's dimension) the write or the search checks.
func (c *converter) vector(t tok) []float32 {
	v, err := record.ParseVector(c.str(t))
	if err != nil {
		c.failf(t, "%v", err)
		return nil
	}
	return v
}

func (c *converter) str(t tok) string {
	s, err := unquote(t)
	if err != nil {
		c.failAt(err.Pos, "%s", err.Msg)
	}
	return s
}

// unquote decodes a String token: Go escapes, and raw newlines allowed. The
// result must be valid UTF-8 without NUL, since it is stored as text.
func unquote(t tok) (string, *Error) {
	raw := t.Value
	body := raw[1 : len(raw)-1]
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			r, n := utf8.DecodeRuneInString(body[i:])
			if r == utf8.RuneError && n == 1 {
				return "", errorf(posOf(advance(t.Pos, raw[:i+1])), "invalid UTF-8 in string")
			}
			b.WriteString(body[i : i+n])
			i += n
			continue
		}
		value, multibyte, tail, err := strconv.UnquoteChar(body[i:], '"')
		if err != nil {
			end := min(i+2, len(body))
			return "", errorf(posOf(advance(t.Pos, raw[:i+1])), "invalid escape sequence %s in string", strconv.Quote(body[i:end]))
		}
		if value < utf8.RuneSelf || !multibyte {
			b.WriteByte(byte(value))
		} else {
			b.WriteRune(value)
		}
		i = len(body) - len(tail)
	}
	s := b.String()
	if strings.IndexByte(s, 0) >= 0 {
		return "", errorf(posOf(t.Pos), "string contains a NUL character")
	}
	if !utf8.ValidString(s) {
		return "", errorf(posOf(t.Pos), "string is not valid UTF-8 after its escapes")
	}
	return s, nil
}

func shorten(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		return string([]rune(s)[:36]) + "..."
	}
	return s
}
