package syntax

import (
	"strconv"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/record"
)

// The printer writes canonical source: lowercase keywords, single spaces,
// modifiers in the order "as of", "as", clauses in the order of the syntax
// summary in docs/LANGUAGE.md, strings quoted with Go escapes, numbers in
// their shortest form, times in UTC (a date alone for midnight), durations
// in days when whole, else in h/m/s/ms/us/ns. Parsing the output gives back
// the same AST, positions aside.

// String prints the script, one statement per line.
func (s *Script) String() string {
	var b strings.Builder
	for _, st := range s.Stmts {
		b.WriteString(st.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// String prints the modifiers, each followed by a space.
func (m Mods) String() string {
	var b strings.Builder
	if m.AsOfTime != nil {
		b.WriteString("as of " + formatTime(*m.AsOfTime) + " ")
	}
	if m.AsOfTx != nil {
		b.WriteString("as of tx " + strconv.FormatInt(*m.AsOfTx, 10) + " ")
	}
	if m.As != "" {
		b.WriteString("as " + m.As + " ")
	}
	return b.String()
}

// String prints Subject.predicate@N, Subject.predicate, name@N or name: as the library writes
// its ClaimRef and ArtifactRef.
func (r Ref) String() string {
	out := r.Subject
	if r.IsClaim() {
		out += "." + r.Predicate
	}
	if r.Version != 0 {
		out += "@" + strconv.Itoa(r.Version)
	}
	return out
}

func (p Pattern) String() string {
	subj := p.Subject
	if subj == "" {
		subj = "*"
	}
	switch {
	case p.Predicate != "":
		return subj + "." + p.Predicate
	case p.Subject == "":
		return "*"
	}
	return subj
}

func (s Scope) String() string {
	switch {
	case s.Subject == "" && s.Predicate == "":
		return "*"
	case s.Subject == "":
		return s.Predicate
	case s.Predicate == "":
		return s.Subject + ".*"
	}
	return s.Subject + "." + s.Predicate
}

func (v Value) String() string {
	switch v.Kind {
	case KindString:
		return strconv.Quote(v.Str)
	case KindNumber:
		return formatNum(v.Num)
	case KindBool:
		return strconv.FormatBool(v.Bool)
	case KindTime:
		return formatTime(v.Time)
	case KindRef:
		return v.Ref.String()
	}
	return "<invalid value>"
}

func (s Source) String() string {
	out := strconv.Quote(s.ID)
	if s.Excerpt != "" {
		out += " excerpt " + strconv.Quote(s.Excerpt)
	}
	if s.URI != "" {
		out += " uri " + strconv.Quote(s.URI)
	}
	if s.Revision != "" {
		out += " revision " + strconv.Quote(s.Revision)
	}
	return out
}

func (c Cond) String() string {
	var b strings.Builder
	if c.SubjectVar != "" {
		b.WriteString("?" + c.SubjectVar)
	} else {
		b.WriteString(c.Subject)
	}
	if c.Predicate != "" {
		b.WriteString("." + c.Predicate)
	}
	b.WriteString(" " + string(c.Op) + " ")
	if c.ObjectVar != "" {
		b.WriteString("?" + c.ObjectVar)
	} else {
		b.WriteString(c.Object.String())
	}
	return b.String()
}

func (k OrderKey) String() string {
	if k.Desc {
		return "?" + k.Var + " desc"
	}
	return "?" + k.Var
}

func (s *Principal) String() string {
	return "principal " + s.Name + " " + string(s.Kind)
}

func (s *Grant) String() string {
	return "grant " + s.Grantee + " " + string(s.Right) + " on " + s.Scope.String() + " by " + s.By
}

func (s *Assert) String() string {
	var b strings.Builder
	b.WriteString("assert " + s.Key.String() + " = " + s.Value.String() + " by " + s.By)
	if len(s.Sources) > 0 {
		b.WriteString(" from ")
		for i, src := range s.Sources {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(src.String())
		}
	}
	if s.Confidence != nil {
		b.WriteString(" confidence " + formatNum(*s.Confidence))
	}
	if s.Kind != "" {
		b.WriteString(" kind " + string(s.Kind))
	}
	if s.ValidFrom != nil {
		b.WriteString(" valid from " + formatTime(*s.ValidFrom))
	}
	if s.ValidUntil != nil {
		b.WriteString(" valid until " + formatTime(*s.ValidUntil))
	}
	if len(s.SeenBy) > 0 {
		b.WriteString(" seen by " + strings.Join(s.SeenBy, ", "))
	}
	if s.Vector != nil {
		b.WriteString(" vector " + strconv.Quote(record.FormatVector(s.Vector)))
	}
	return b.String()
}

func (s *Revoke) String() string {
	out := "revoke " + s.Claim.String() + " by " + s.By
	if s.Because != "" {
		out += " because " + strconv.Quote(s.Because)
	}
	if s.ReplacedBy != nil {
		out += " replaced by " + s.ReplacedBy.String()
	}
	return out
}

func (s *Confirm) String() string {
	return "confirm " + s.Claim.String() + " by " + s.By
}

func (s *Derive) String() string {
	var b strings.Builder
	b.WriteString("derive " + s.Artifact + " from ")
	for i, r := range s.From {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.String())
	}
	b.WriteString(" by " + s.By)
	if s.Confidence != nil {
		b.WriteString(" confidence " + formatNum(*s.Confidence))
	}
	if len(s.SeenBy) > 0 {
		b.WriteString(" seen by " + strings.Join(s.SeenBy, ", "))
	}
	if s.Run != "" {
		b.WriteString(" in run " + s.Run)
	}
	return b.String()
}

func (s *Outcome) String() string {
	out := "outcome run " + s.Run + " " + string(s.Result)
	if s.By != "" {
		out += " by " + s.By
	}
	if s.Because != "" {
		out += " because " + strconv.Quote(s.Because)
	}
	return out
}

func (s *Review) String() string {
	out := "review " + s.Artifact.String() + " by " + s.By
	if s.Because != "" {
		out += " because " + strconv.Quote(s.Because)
	}
	return out
}

func (s *Decay) String() string {
	return "decay " + s.Predicate + " half-life " + formatDuration(s.HalfLife)
}

func (s *Live) String() string {
	out := s.Mods.String() + "live " + s.Pattern.String()
	for i, f := range s.Where {
		if i == 0 {
			out += " where"
		} else {
			out += ","
		}
		out += " value " + string(f.Op) + " " + f.Value.String()
	}
	return out + s.Mods.runSuffix()
}

func (s *Find) String() string {
	var b strings.Builder
	b.WriteString(s.Mods.String() + "find ")
	for i, v := range s.Vars {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("?" + v)
	}
	b.WriteString(" where ")
	for i, c := range s.Where {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.String())
	}
	if len(s.OrderBy) > 0 {
		b.WriteString(" order by ")
		for i, k := range s.OrderBy {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(k.String())
		}
	}
	if s.Limit > 0 {
		b.WriteString(" limit " + strconv.Itoa(s.Limit))
	}
	return b.String() + s.Mods.runSuffix()
}

func (s *Why) String() string { return s.Mods.String() + "why " + s.Node.String() + s.Mods.runSuffix() }

func (s *RevokedBy) String() string {
	return s.Mods.String() + "revoked-by " + s.Claim.String() + s.Mods.runSuffix()
}

func (s *Impact) String() string {
	out := s.Mods.String() + "impact " + s.Node.String()
	if s.Depth != nil {
		out += " depth " + strconv.Itoa(*s.Depth)
	}
	return out + s.Mods.runSuffix()
}

func (s *History) String() string {
	return s.Mods.String() + "history " + s.Node.String() + s.Mods.runSuffix()
}

func (s *Conflicts) String() string {
	out := s.Mods.String() + "conflicts"
	if len(s.Subjects) > 0 {
		out += " " + strings.Join(s.Subjects, ", ")
	}
	return out + s.Mods.runSuffix()
}

func (s *Beliefs) String() string {
	out := s.Mods.String() + "beliefs " + s.Pattern.String()
	if s.Gate != nil {
		out += " gate " + formatNum(s.Gate.Low) + " " + formatNum(s.Gate.High)
	}
	return out + s.Mods.runSuffix()
}

func (s *Search) String() string {
	out := s.Mods.String() + "search " + strconv.Quote(s.Text)
	for i, p := range s.On {
		out += map[bool]string{true: " on ", false: ", "}[i == 0] + p.String()
	}
	if s.Vector != nil {
		out += " vector " + strconv.Quote(record.FormatVector(s.Vector))
	}
	if len(s.Signals) > 0 {
		out += " signals " + strings.Join(s.Signals, ", ")
	}
	if s.Limit > 0 {
		out += " limit " + strconv.Itoa(s.Limit)
	}
	if s.History {
		out += " history"
	}
	return out + s.Mods.runSuffix()
}

func (s *Context) String() string {
	out := s.Mods.String() + "context "
	switch {
	case s.Question != nil:
		out += "for " + strconv.Quote(*s.Question)
	case s.All:
		out += "*"
	default:
		out += strings.Join(s.Subjects, ", ")
	}
	if s.Budget > 0 {
		out += " budget " + strconv.Itoa(s.Budget)
	}
	return out + s.Mods.runSuffix()
}

func (s *Stats) String() string {
	out := s.Mods.String() + "stats"
	if s.For != "" {
		out += " for " + s.For
	}
	if s.Since != nil {
		out += " since " + formatTime(*s.Since)
	}
	return out
}

func formatNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// formatTime prints t in UTC: a date alone at midnight, else RFC 3339.
func formatTime(t time.Time) string {
	t = t.UTC()
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format("2006-01-02")
	}
	return t.Format(time.RFC3339Nano)
}

// formatDuration prints d in whole days when it is a multiple of 24h, else
// as hours, minutes, seconds and sub-second units, leaving out zero parts.
func formatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		if d == time.Duration(-1<<63) {
			return "-2562047h47m16s854ms775us808ns"
		}
		d = -d
	}
	const day = 24 * time.Hour
	if d%day == 0 {
		b.WriteString(strconv.FormatInt(int64(d/day), 10) + "d")
		return b.String()
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}, {time.Nanosecond, "ns"}} {
		if n := d / u.unit; n > 0 {
			b.WriteString(strconv.FormatInt(int64(n), 10) + u.name)
			d -= n * u.unit
		}
	}
	return b.String()
}

// FormatDuration prints a duration as the language writes it: "14d", "1h30m", "500ms".
func FormatDuration(d time.Duration) string { return formatDuration(d) }
