package output

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/mql-dev/mql"
)

// PrintEvent prints one event of the change feed (\watch): a line for a person in table and
// tree formats, the event's JSON (as /v1/watch sends it) in json, a CSV row in csv.
func (p *Printer) PrintEvent(e mql.Event) error {
	var out string
	switch p.format {
	case FormatJSON:
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		out = EscapeJSON(string(b) + "\n")
	case FormatCSV:
		var b strings.Builder
		w := csv.NewWriter(&b)
		row := []string{strconv.FormatInt(e.Tx, 10), fmtTime(e.At), e.By, e.Kind, e.Ref, eventDetail(e)}
		if p.term {
			for i := range row {
				row[i] = Escape(row[i])
			}
		}
		w.Write(row)
		w.Flush()
		out = b.String()
	default:
		out = fmt.Sprintf("tx %d  %s  %-12s  %s  %s\n", e.Tx, Escape(e.By), e.Kind, Escape(e.Ref), EscapeLine(eventDetail(e)))
	}
	_, err := io.WriteString(p.w, out)
	return err
}

// eventDetail says in a few words what an event did.
func eventDetail(e mql.Event) string {
	var parts []string
	switch {
	case e.Claim != nil && e.Kind == mql.EventClaim:
		parts = append(parts, "= "+e.Claim.Value.String(), string(e.Claim.State))
	case e.Revocation != nil:
		parts = append(parts, "by "+e.Revocation.By)
		if e.Revocation.Because != "" {
			parts = append(parts, "because "+strconv.Quote(e.Revocation.Because))
		}
		if e.Revocation.ReplacedBy != "" {
			parts = append(parts, "replaced by "+e.Revocation.ReplacedBy)
		}
	case e.Artifact != nil && e.Kind == mql.EventNeedsReview:
		parts = append(parts, "stale: "+strings.Join(e.Because, ", "))
	case e.Artifact != nil:
		parts = append(parts, string(e.Artifact.Review))
	}
	if e.Supersedes != "" {
		parts = append(parts, "supersedes "+e.Supersedes)
	}
	if e.Contests != "" {
		parts = append(parts, "contests "+e.Contests)
	}
	return strings.Join(parts, ", ")
}
