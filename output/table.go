package output

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// grid is a table of strings: a header and rows of the same width.
type grid struct {
	header []string
	rows   [][]string
}

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }

// render writes the grid with columns aligned and separated by two spaces, a rule under the
// header, and "(0 rows)" when it is empty. Trailing spaces are trimmed; the last column is
// never padded.
//
// Expanded (\x), each row is written as a record of field/value lines under a "-[ N ]-" rule,
// as psql does, for rows too wide for a terminal.
func (g *grid) render(b *strings.Builder, expanded bool) {
	if expanded {
		g.renderExpanded(b)
		return
	}
	width := make([]int, len(g.header))
	measure := func(row []string) {
		for i, c := range row {
			if n := displayWidth(c); n > width[i] {
				width[i] = n
			}
		}
	}
	measure(g.header)
	for _, r := range g.rows {
		measure(r)
	}
	line := func(row []string) {
		var l strings.Builder
		for i, c := range row {
			if i > 0 {
				l.WriteString("  ")
			}
			l.WriteString(c)
			if i < len(row)-1 {
				l.WriteString(strings.Repeat(" ", width[i]-displayWidth(c)))
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	line(g.header)
	rule := make([]string, len(width))
	for i, w := range width {
		rule[i] = strings.Repeat("-", w)
	}
	line(rule)
	for _, r := range g.rows {
		line(r)
	}
	if len(g.rows) == 0 {
		b.WriteString("(0 rows)\n")
	}
}

func (g *grid) renderExpanded(b *strings.Builder) {
	if len(g.rows) == 0 {
		b.WriteString("(0 rows)\n")
		return
	}
	for i, r := range g.rows {
		fmt.Fprintf(b, "-[ %d ]%s\n", i+1, strings.Repeat("-", 20))
		pairs := make([][2]string, len(g.header))
		for j, h := range g.header {
			pairs[j] = [2]string{h, r[j]}
		}
		vertical(b, pairs)
	}
}

// vertical writes field/value pairs, one per line, with the values aligned.
func vertical(b *strings.Builder, pairs [][2]string) {
	w := 0
	for _, p := range pairs {
		if n := displayWidth(p[0]); n > w {
			w = n
		}
	}
	for _, p := range pairs {
		fmt.Fprintf(b, "%s%s  %s", p[0], strings.Repeat(" ", w-displayWidth(p[0])), p[1])
		b.WriteString("\n")
	}
}

// writeLine is the one-line table form of a write's receipt:
//
//	Klarveld.price_per_seat@2  live  (supersedes @1, tx 5)
//	principal alice  recorded  (tx 2)
func writeLine(r *query.Result) string {
	rc := r.Receipt
	var notes []string
	if rc.Supersedes != "" {
		notes = append(notes, "supersedes "+Escape(shortRef(rc.Supersedes, rc.Ref)))
	}
	if rc.Contests != "" {
		notes = append(notes, "contests "+Escape(shortRef(rc.Contests, rc.Ref)))
	}
	if rc.Corroborates != "" {
		notes = append(notes, "corroborates "+Escape(shortRef(rc.Corroborates, rc.Ref)))
	}
	notes = append(notes, "tx "+strconv.FormatInt(rc.Tx, 10))
	var head, verb string
	ref := Escape(rc.Ref)
	switch {
	case rc.Unchanged:
		return r.Kind + " " + ref + "  " + Escape(rc.Note) + "  (tx " + strconv.FormatInt(rc.Tx, 10) + ")\n"
	}
	switch r.Kind {
	case "principal":
		head, verb = "principal "+ref, "recorded"
	case "grant":
		head, verb = "grant "+ref, "granted"
	case "decay":
		head, verb = "decay "+ref, "half-life set"
	case "revoke":
		head, verb = ref, "revoked"
	case "confirm":
		head, verb = ref, "confirmed"
	case "outcome":
		head, verb = "run "+ref, "outcome recorded"
	case "review":
		head, verb = ref, "reviewed"
		if rc.State != "" && rc.State != mql.Live {
			verb += ", " + string(rc.State)
		}
	default:
		head, verb = ref, string(rc.State)
	}
	if head == "" {
		head = r.Kind
	}
	if verb == "" {
		verb = "ok"
	}
	if rc.Note != "" {
		verb += ": " + Escape(rc.Note)
	}
	return head + "  " + verb + "  (" + strings.Join(notes, ", ") + ")\n"
}

// claimGrid is the table of claims shared by live and history.
// fmtScore is a search score as a person reads it: enough digits to tell the rows apart.
func fmtScore(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

func claimGrid(claims []mql.Claim) *grid {
	g := &grid{header: []string{"ref", "value", "state", "confidence", "kind", "asserted by", "sources"}}
	for _, c := range claims {
		g.add(Escape(c.Ref), valueText(c.Value), string(c.State), fmtConf(c.Effective), string(c.Kind), Escape(c.By), sourceIDs(c.Sources))
	}
	return g
}

func artifactGrid(arts []mql.Artifact) *grid {
	g := &grid{header: []string{"ref", "state", "review", "confidence", "derived by", "recorded", "derived from"}}
	for _, a := range arts {
		g.add(Escape(a.Ref), string(a.State), string(a.Review), fmtConf(a.Effective), Escape(a.By), fmtTime(a.RecordedAt), escapeJoin(a.DerivedFrom, ", "))
	}
	return g
}

// writeTable renders r for a person.
func writeTable(b *strings.Builder, r *query.Result, ex bool) {
	switch {
	case isCatalog(r):
		writeCatalogTable(b, r, ex)
	case isRunResult(r):
		writeRunTable(b, r, ex)
	case r.Receipt != nil:
		b.WriteString(writeLine(r))
	case r.Kind == "live":
		claimGrid(r.Claims).render(b, ex)
	case r.Find != nil:
		g := &grid{}
		for _, v := range r.Find.Vars {
			g.header = append(g.header, strings.TrimPrefix(v, "?"))
		}
		g.header = append(g.header, "claims")
		for _, row := range r.Find.Rows {
			var cells []string
			for _, v := range row.Values {
				cells = append(cells, valueText(v))
			}
			g.add(append(cells, escapeJoin(row.Claims, ", "))...)
		}
		g.render(b, ex)
	case r.Why != nil:
		g := &grid{header: []string{"relation", "node", "detail"}}
		var walk func(n *mql.Node, depth int, parent string)
		walk = func(n *mql.Node, depth int, parent string) {
			name, detail := nodeCells(n, parent)
			g.add(strings.Repeat("  ", depth)+relationOf(n, depth), name, detail)
			self := nodeRef(n)
			for _, c := range n.Children {
				walk(c, depth+1, self)
			}
		}
		walk(r.Why, 0, "")
		g.render(b, ex)
		if r.Why.Note != "" {
			b.WriteString("(" + Escape(r.Why.Note) + ")\n")
		}
	case r.RevokedBy != nil:
		c, rv := r.RevokedBy.Claim, r.RevokedBy.Revocation
		pairs := [][2]string{{"claim", Escape(c.Ref) + " = " + valueText(c.Value)}, {"state", string(c.State)}}
		if rv == nil {
			pairs = append(pairs, [2]string{"revoked", "no"})
		} else {
			pairs = append(pairs,
				[2]string{"revoked by", Escape(rv.By)},
				[2]string{"at", fmtTime(rv.At) + " (tx " + strconv.FormatInt(rv.Tx, 10) + ")"},
				[2]string{"because", Escape(rv.Because)},
				[2]string{"standing", standingText(rv.Standing, rv.StandingGrant)},
				[2]string{"replaced by", orDash(Escape(rv.ReplacedBy))})
		}
		vertical(b, pairs)
		writeRunUses(b, r.RevokedBy.Runs)
	case r.Impact != nil:
		g := &grid{header: []string{"artifact", "review", "state", "depth", "path"}}
		for _, d := range r.Impact.Dependents {
			g.add(Escape(d.Artifact.Ref), string(d.Artifact.Review), string(d.Artifact.State), strconv.Itoa(d.Depth), escapeJoin(d.Path, " → "))
		}
		g.render(b, ex)
		if r.Impact.Truncated {
			b.WriteString("(depth limit reached: more dependents lie beyond it)\n")
		}
		writeRunUses(b, r.Impact.Runs)
	case r.Search != nil:
		g := &grid{header: []string{"score", "ref", "value", "state", "confidence", "asserted by", "matched"}}
		for _, h := range r.Search.Hits {
			g.add(fmtScore(h.Score), Escape(h.Ref), valueText(h.Value), string(h.State), fmtConf(h.Effective), Escape(h.By), escapeJoin(h.Terms, " "))
		}
		g.render(b, ex)
	case r.History != nil:
		if len(r.History.Artifacts) > 0 {
			artifactGrid(r.History.Artifacts).render(b, ex)
			return
		}
		g := &grid{header: []string{"ref", "value", "state", "since", "confidence", "kind", "asserted by", "recorded", "sources"}}
		for _, c := range r.History.Claims {
			g.add(Escape(c.Ref), valueText(c.Value), string(c.State), fmtTime(c.Since), fmtConf(c.Effective), string(c.Kind), Escape(c.By), fmtTime(c.RecordedAt), sourceIDs(c.Sources))
		}
		g.render(b, ex)
	case r.Kind == "conflicts":
		g := &grid{header: []string{"key", "role", "ref", "value", "confidence", "kind", "asserted by"}}
		for _, cf := range r.Conflicts {
			key := Escape(cf.Key)
			if cf.Live != nil {
				g.add(key, "live", Escape(cf.Live.Ref), valueText(cf.Live.Value), fmtConf(cf.Live.Effective), string(cf.Live.Kind), Escape(cf.Live.By))
			} else {
				g.add(key, "live", "-", "", "", "", "")
			}
			for _, c := range cf.Contested {
				g.add(key, "contested", Escape(c.Ref), valueText(c.Value), fmtConf(c.Effective), string(c.Kind), Escape(c.By))
			}
		}
		g.render(b, ex)
	case r.Beliefs != nil:
		be := r.Beliefs
		g := &grid{header: []string{"subject", "value", "ref", "weight", "probability"}}
		for _, c := range be.Candidates {
			g.add(Escape(c.Subject), valueText(c.Claim.Value), Escape(c.Claim.Ref), fmtConf(c.Weight), fmtNum(c.Probability))
		}
		g.render(b, ex)
		fmt.Fprintf(b, "entropy %s bits, gate [%s, %s]: %s", fmtNum(be.Entropy), fmtNum(be.Gate[0]), fmtNum(be.Gate[1]), be.Decision)
		if be.Top != "" && be.Decision == mql.Act {
			fmt.Fprintf(b, " on %s", Escape(be.Top))
		}
		b.WriteString("\n")
	case r.Context != nil:
		cx := r.Context
		text := EscapeText(cx.Text)
		b.WriteString(text)
		if text != "" && !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
		b.WriteString(contextFooter(cx) + "\n")
	case r.Stats != nil:
		st := r.Stats
		pairs := [][2]string{
			{"transactions", strconv.Itoa(st.Transactions)},
			{"principals", strconv.Itoa(st.Principals)},
			{"sources", strconv.Itoa(st.Sources)},
			{"claims", strconv.Itoa(st.Claims)},
		}
		for _, s := range statesOf(st.ByState) {
			pairs = append(pairs, [2]string{"  " + string(s), strconv.Itoa(st.ByState[s])})
		}
		pairs = append(pairs,
			[2]string{"keys", strconv.Itoa(st.Keys)},
			[2]string{"artifacts", strconv.Itoa(st.Artifacts)},
			[2]string{"needs review", strconv.Itoa(st.NeedsReview)},
			[2]string{"revocations", strconv.Itoa(st.Revocations)},
			[2]string{"stale rate", fmtNum(st.StaleRate)},
		)
		vertical(b, append(pairs, memoryPairs(st.Memory)...))
	case r.Kind == "live" || r.Claims != nil:
		claimGrid(r.Claims).render(b, ex)
	default:
		fmt.Fprintf(b, "%s: ok\n", r.Kind)
	}
}

// stateOrder is the order in which states are listed.
var stateOrder = []mql.State{mql.Live, mql.Superseded, mql.Revoked, mql.Expired, mql.Contested}

// statesOf lists the states of m in stateOrder, then any others sorted.
func statesOf(m map[mql.State]int) []mql.State {
	var out []mql.State
	seen := map[mql.State]bool{}
	for _, s := range stateOrder {
		out = append(out, s)
		seen[s] = true
	}
	var rest []mql.State
	for s := range m {
		if !seen[s] {
			rest = append(rest, s)
		}
	}
	sort.Slice(rest, func(i, j int) bool { return rest[i] < rest[j] })
	return append(out, rest...)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// relationOf is the relation column of a why row.
func relationOf(n *mql.Node, depth int) string {
	if n.Relation == "" && depth == 0 {
		return string(n.Kind)
	}
	return n.Relation
}

// contextFooter is the line under a context's text: its size and its budget.
func contextFooter(cx *mql.ContextResult) string {
	switch {
	case cx.Budget == 0:
		return fmt.Sprintf("(~%d tokens, no budget)", cx.Tokens)
	case cx.Tokens > cx.Budget:
		return fmt.Sprintf("(~%d tokens, over the budget of %d: the line saying what was left out does not fit in it)", cx.Tokens, cx.Budget)
	case len(cx.Omitted) > 0:
		return fmt.Sprintf("(~%d tokens, budget %d, the line saying what was left out included)", cx.Tokens, cx.Budget)
	}
	return fmt.Sprintf("(~%d tokens, budget %d)", cx.Tokens, cx.Budget)
}

// displayWidth is how many columns s takes on a terminal: East Asian wide and fullwidth
// characters take two, combining marks and zero-width characters none, others one.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch {
	case r == 0x200B || r == 0x200C || r == 0x200D || r == 0xFEFF || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r):
		return 0
	case r >= 0x1100 && r <= 0x115F, r >= 0x2E80 && r <= 0x303E, r >= 0x3041 && r <= 0x33FF,
		r >= 0x3400 && r <= 0x4DBF, r >= 0x4E00 && r <= 0x9FFF, r >= 0xA000 && r <= 0xA4CF,
		r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6, r >= 0x1F300 && r <= 0x1F64F,
		r >= 0x1F900 && r <= 0x1F9FF, r >= 0x20000 && r <= 0x3FFFD:
		return 2
	}
	return 1
}
