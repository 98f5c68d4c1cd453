// Package output renders statement results in mql's output formats: aligned tables and
// box-drawn trees for people, JSON (a stable interface, docs/OUTPUT.md) and CSV (RFC 4180) for
// programs. The REPL, the command line, the MCP server and the HTTP server all render through
// it, so a result reads the same everywhere.
package output

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// Format is an output format: how a Printer renders statement results.
type Format string

// The output formats.
const (
	// FormatTable prints aligned columns for a person, one table per result, and one line per
	// write.
	FormatTable Format = "table"
	// FormatTree prints why and impact as box-drawn trees, and everything else as FormatTable.
	FormatTree Format = "tree"
	// FormatJSON prints one JSON object per result, one per line; docs/OUTPUT.md gives the
	// schema of every kind.
	FormatJSON Format = "json"
	// FormatCSV prints a header and rows per result (RFC 4180), stacked: a result with the same
	// header as the one before continues its table, another starts a new one after a blank line.
	FormatCSV Format = "csv"
	// FormatDOT prints why and impact as Graphviz digraphs (for `dot -Tsvg`), writes as
	// comment lines, and refuses other reads with ErrNoGraph.
	FormatDOT Format = "dot"
)

// Formats lists the output formats.
var Formats = []Format{FormatTable, FormatTree, FormatJSON, FormatCSV, FormatDOT}

// ParseFormat returns the format named s.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == strings.ToLower(strings.TrimSpace(s)) {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown format %q: want table, tree, json, csv or dot", s)
}

// Printer renders statement results to a writer in one format. It separates consecutive
// results as the format needs (a blank line between tables), so use one Printer for a run.
type Printer struct {
	w      io.Writer
	format Format
	header string // CSV: the header of the table being printed
	n      int    // results printed
	multi  bool   // the last result printed more than one line
	prompt string // print each statement after this prompt before its result ("": don't)
	term   bool   // w is a terminal: CSV cells are escaped too
}

// NewPrinter returns a printer writing to w in format f.
func NewPrinter(w io.Writer, f Format) *Printer {
	if f == "" {
		f = FormatTable
	}
	return &Printer{w: w, format: f}
}

// SetEcho makes the printer write each statement, after prompt, before its result, as in a
// session transcript (table and tree formats only); "" turns it off.
func (p *Printer) SetEcho(prompt string) { p.prompt = prompt }

// SetTerminal says whether the printer writes to a terminal. Table and tree output is always
// escaped for a person; CSV keeps the exact text for programs unless it goes to a terminal.
func (p *Printer) SetTerminal(on bool) { p.term = on }

// Comment writes a line of narration, set off from the previous result by a blank line, with
// the next result following it directly.
func (p *Printer) Comment(text string) error {
	if p.format == FormatJSON || p.format == FormatCSV || p.format == FormatDOT {
		return nil
	}
	if p.n > 0 {
		text = "\n" + text
	}
	p.n, p.multi = 0, false
	_, err := io.WriteString(p.w, text+"\n")
	return err
}

// SetWriter sends the results printed from now on to w.
func (p *Printer) SetWriter(w io.Writer) { p.w = w }

// Format returns the printer's format.
func (p *Printer) Format() Format { return p.format }

// SetFormat changes the format of the results printed from now on.
func (p *Printer) SetFormat(f Format) { p.format = f }

// Style is how results are rendered: the format, and whether the output goes to a terminal.
type Style struct {
	Format Format
	// Terminal escapes CSV cells as table cells are. Agent-written text is always escaped in
	// table and tree output, which are for people; CSV keeps the exact text for programs
	// unless it goes to a terminal (docs/OUTPUT.md).
	Terminal bool
	// Expanded prints the rows of table results one field per line (\x), as psql does.
	Expanded bool
}

// Style is the printer's style.
func (p *Printer) Style() Style { return Style{Format: p.format, Terminal: p.term} }

// Render renders one statement result in a style, on its own: without the separation from
// other results that a Printer adds.
func Render(r *query.Result, st Style) (string, error) {
	var b strings.Builder
	var err error
	f := st.Format
	switch f {
	case FormatJSON:
		err = writeJSON(&b, r)
	case FormatCSV:
		err = writeCSV(&b, r, st.Terminal)
	case FormatDOT:
		err = writeDot(&b, r)
	case FormatTree:
		switch {
		case r.Why != nil:
			writeWhyTree(&b, r.Why)
		case r.Impact != nil:
			writeImpactTree(&b, r.Impact)
			writeRunUses(&b, r.Impact.Runs)
		default:
			writeTable(&b, r, st.Expanded)
		}
	default:
		writeTable(&b, r, st.Expanded)
	}
	out := b.String()
	if f == FormatJSON {
		out = EscapeJSON(out) // encoding/json leaves DEL, C1 and bidi controls raw
	}
	return out, err
}

// Print renders one statement result.
func (p *Printer) Print(r *query.Result) error {
	if r == nil {
		return nil
	}
	out, err := Render(r, p.Style())
	if err != nil {
		return err
	}
	return p.PrintRendered(r.Statement, out)
}

// PrintRendered prints a result that Render rendered in the printer's format (the command
// line attached to a server gets its results rendered so), separating it from the results
// before it. statement is echoed before it when SetEcho asked for that.
//
// CSV results are stacked: a result whose header is the same as the one before it (writes'
// receipts, one why after another) continues its table, without the header; any other starts
// a new table, after a blank line.
func (p *Printer) PrintRendered(statement, out string) error {
	multi := strings.Count(out, "\n") > 1
	if p.prompt != "" && p.format != FormatJSON && p.format != FormatCSV && p.format != FormatDOT {
		out = p.prompt + statement + "\n" + out
	}
	if p.format == FormatCSV {
		header, rest, _ := strings.Cut(out, "\n")
		switch {
		case p.n > 0 && header == p.header:
			out, multi = rest, true
		case p.n > 0:
			out = "\n" + out
		}
		p.header = header
		p.n++
		p.multi = multi
		_, err := io.WriteString(p.w, out)
		return err
	}
	if p.n > 0 && p.format != FormatJSON && (multi || p.multi) {
		out = "\n" + out
	}
	p.n++
	p.multi = multi
	_, err := io.WriteString(p.w, out)
	return err
}

// StartInput makes the next result print without a separator before it (it follows the
// prompt), and EndInput ends the results of one input: after a multi-line one it prints a
// blank line, so that the next prompt stands apart.
func (p *Printer) StartInput() { p.n, p.multi = 0, false }

// EndInput ends the results of one input (see StartInput).
func (p *Printer) EndInput() {
	if p.multi && p.format != FormatJSON {
		io.WriteString(p.w, "\n")
	}
	p.n, p.multi = 0, false
}

// Note is called after something was printed between results (meta command output,
// timing): it resets the separation so that the next table starts after a blank line.
func (p *Printer) Note() { p.multi = true }

// ---- value formatting shared by the formats ----

// fmtConf formats a confidence with at most three decimals and at least one: 1.0, 0.9, 0.225.
func fmtConf(c float64) string {
	c = math.Round(c*1000) / 1000
	s := strconv.FormatFloat(c, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// fmtNum formats a plain number (entropy, probability) with at most three decimals.
func fmtNum(f float64) string {
	f = math.Round(f*1000) / 1000
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// fmtTime formats a time in UTC, RFC 3339; the zero time is "".
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// rawValue is a value without quotes, for CSV.
func rawValue(v mql.Value) string {
	switch v.Type {
	case mql.TypeString, mql.TypeRef:
		return v.Str
	}
	return v.String()
}

// sourceIDs joins the ids of sources, each escaped, for a person.
func sourceIDs(ss []mql.Source) string {
	ids := make([]string, len(ss))
	for i, s := range ss {
		ids[i] = Escape(s.ID)
	}
	return strings.Join(ids, ", ")
}

// escapeJoin joins list with sep, each element escaped, for a person.
func escapeJoin(list []string, sep string) string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = Escape(s)
	}
	return strings.Join(out, sep)
}

// valueText is a value for a person: as the language writes it (strings quoted), with a
// reference escaped like any other name.
func valueText(v mql.Value) string {
	if v.Type == mql.TypeRef {
		return Escape(v.Str)
	}
	return v.String()
}

// keyOf is the part of a reference before "@".
func keyOf(ref string) string {
	if i := strings.LastIndexByte(ref, '@'); i >= 0 {
		return ref[:i]
	}
	return ref
}

// shortRef writes ref as "@N" when it names another version of base's key or artifact.
func shortRef(ref, base string) string {
	if ref == "" || base == "" {
		return ref
	}
	if i := strings.LastIndexByte(ref, '@'); i >= 0 && ref[:i] == keyOf(base) {
		return ref[i:]
	}
	return ref
}
