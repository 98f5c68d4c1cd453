package output

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// CSV lists (sources, paths, derived from) are joined with this separator inside one cell.
const csvListSep = ";"

func csvInt(n int64) string { return strconv.FormatInt(n, 10) }

func csvFloat(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

var csvClaimHeader = []string{"ref", "subject", "predicate", "version", "value", "value_type", "state", "since", "kind", "confidence", "effective_confidence", "asserted_by", "sources", "recorded_at", "tx", "valid_from", "valid_until", "seen_by"}

func csvClaim(c mql.Claim) []string {
	ids := make([]string, len(c.Sources))
	for i, s := range c.Sources {
		ids[i] = s.ID
	}
	return []string{c.Ref, c.Subject, c.Predicate, strconv.Itoa(c.Version), rawValue(c.Value), string(c.Value.Type), string(c.State), fmtTime(c.Since), string(c.Kind), csvFloat(c.Confidence), csvFloat(c.Effective), c.By, strings.Join(ids, csvListSep), fmtTime(c.RecordedAt), csvInt(c.Tx), fmtTime(c.ValidFrom), fmtTime(c.ValidUntil), strings.Join(c.SeenBy, csvListSep)}
}

// csvOf returns the header and rows of r.
func csvOf(r *query.Result) (header []string, rows [][]string) {
	switch {
	case isCatalog(r):
		return catalogCSV(r)
	case isRunResult(r):
		return runCSV(r)
	case r.Receipt != nil:
		rc := r.Receipt
		return []string{"kind", "ref", "state", "tx", "at", "supersedes", "contests", "corroborates", "note"},
			[][]string{{r.Kind, rc.Ref, string(rc.State), csvInt(rc.Tx), fmtTime(rc.At), rc.Supersedes, rc.Contests, rc.Corroborates, rc.Note}}
	case r.Find != nil:
		for _, v := range r.Find.Vars {
			header = append(header, strings.TrimPrefix(v, "?"))
		}
		header = append(header, "claims")
		for _, row := range r.Find.Rows {
			var cells []string
			for _, v := range row.Values {
				cells = append(cells, rawValue(v))
			}
			rows = append(rows, append(cells, strings.Join(row.Claims, csvListSep)))
		}
		return header, rows
	case r.Why != nil:
		// Each row names the claim or artifact the tree explains (of), so that the rows of
		// several why statements can be told apart in one table.
		header = []string{"of", "depth", "relation", "node", "name", "detail"}
		of := nodeRef(r.Why)
		var walk func(n *mql.Node, depth int, parent string)
		walk = func(n *mql.Node, depth int, parent string) {
			name, detail := nodeCells(n, parent)
			if depth == 0 && n.Note != "" {
				detail += " (" + Escape(n.Note) + ")"
			}
			rows = append(rows, []string{of, strconv.Itoa(depth), n.Relation, string(n.Kind), name, detail})
			for _, c := range n.Children {
				walk(c, depth+1, nodeRef(n))
			}
		}
		walk(r.Why, 0, "")
		return header, rows
	case r.RevokedBy != nil:
		c, rv := r.RevokedBy.Claim, r.RevokedBy.Revocation
		header = []string{"claim", "value", "state", "revoked", "revoked_by", "at", "tx", "because", "standing", "replaced_by"}
		row := []string{c.Ref, rawValue(c.Value), string(c.State), "false", "", "", "", "", "", ""}
		if rv != nil {
			row = []string{c.Ref, rawValue(c.Value), string(c.State), "true", rv.By, fmtTime(rv.At), csvInt(rv.Tx), rv.Because, rv.Standing, rv.ReplacedBy}
		}
		return header, [][]string{row}
	case r.Impact != nil:
		header = []string{"artifact", "review", "state", "depth", "path"}
		for _, d := range r.Impact.Dependents {
			rows = append(rows, []string{d.Artifact.Ref, string(d.Artifact.Review), string(d.Artifact.State), strconv.Itoa(d.Depth), strings.Join(d.Path, csvListSep)})
		}
		return header, rows
	case r.Search != nil:
		header = append([]string{"score", "signals", "matched_terms"}, csvClaimHeader...)
		for _, h := range r.Search.Hits {
			rows = append(rows, append([]string{csvFloat(h.Score), strings.Join(h.Signals, csvListSep), strings.Join(h.Terms, csvListSep)}, csvClaim(h.Claim)...))
		}
		return header, rows
	case r.History != nil:
		if len(r.History.Artifacts) > 0 {
			header = []string{"ref", "name", "version", "state", "review", "confidence", "effective_confidence", "derived_by", "derived_from", "recorded_at", "tx"}
			for _, a := range r.History.Artifacts {
				rows = append(rows, []string{a.Ref, a.Name, strconv.Itoa(a.Version), string(a.State), string(a.Review), csvFloat(a.Confidence), csvFloat(a.Effective), a.By, strings.Join(a.DerivedFrom, csvListSep), fmtTime(a.RecordedAt), csvInt(a.Tx)})
			}
			return header, rows
		}
		for _, c := range r.History.Claims {
			rows = append(rows, csvClaim(c))
		}
		return csvClaimHeader, rows
	case r.Beliefs != nil:
		be := r.Beliefs
		header = []string{"subject", "ref", "value", "weight", "probability", "entropy_bits", "decision"}
		for _, c := range be.Candidates {
			rows = append(rows, []string{c.Subject, c.Claim.Ref, rawValue(c.Claim.Value), csvFloat(c.Weight), csvFloat(c.Probability), csvFloat(be.Entropy), be.Decision})
		}
		return header, rows
	case r.Context != nil:
		header = []string{"line"}
		for _, l := range r.Context.Lines {
			rows = append(rows, []string{l})
		}
		return header, rows
	case r.Stats != nil:
		st := r.Stats
		header = []string{"metric", "value"}
		rows = [][]string{
			{"transactions", strconv.Itoa(st.Transactions)},
			{"principals", strconv.Itoa(st.Principals)},
			{"sources", strconv.Itoa(st.Sources)},
			{"claims", strconv.Itoa(st.Claims)},
		}
		for _, s := range statesOf(st.ByState) {
			rows = append(rows, []string{"claims_" + string(s), strconv.Itoa(st.ByState[s])})
		}
		rows = append(rows,
			[]string{"keys", strconv.Itoa(st.Keys)},
			[]string{"artifacts", strconv.Itoa(st.Artifacts)},
			[]string{"needs_review", strconv.Itoa(st.NeedsReview)},
			[]string{"contested", strconv.Itoa(st.Contested)},
			[]string{"revocations", strconv.Itoa(st.Revocations)},
			[]string{"stale_rate", csvFloat(st.StaleRate)},
		)
		return header, append(rows, memoryCSV(st.Memory)...)
	case r.Kind == "conflicts":
		header = []string{"key", "role", "ref", "value", "state", "kind", "effective_confidence", "asserted_by"}
		for _, cf := range r.Conflicts {
			if cf.Live != nil {
				c := cf.Live
				rows = append(rows, []string{cf.Key, "live", c.Ref, rawValue(c.Value), string(c.State), string(c.Kind), csvFloat(c.Effective), c.By})
			}
			for _, c := range cf.Contested {
				rows = append(rows, []string{cf.Key, "contested", c.Ref, rawValue(c.Value), string(c.State), string(c.Kind), csvFloat(c.Effective), c.By})
			}
		}
		return header, rows
	}
	for _, c := range r.Claims {
		rows = append(rows, csvClaim(c))
	}
	return csvClaimHeader, rows
}

// writeCSV writes r as CSV. For a program (terminal false) the cells hold the exact text; on a
// terminal every unprintable rune, newlines included, is written as its escape (\x1b, \n), so
// that a cell can neither drive the terminal nor break a row.
func writeCSV(w io.Writer, r *query.Result, terminal bool) error {
	header, rows := csvOf(r)
	if terminal {
		for _, row := range rows {
			for i := range row {
				row[i] = EscapeLine(row[i])
			}
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return err
	}
	if err := cw.WriteAll(rows); err != nil {
		return err
	}
	return cw.Error()
}
