package output

import (
	"strings"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// The reason of a run's outcome is quoted once, as a reason in why is: an unprintable
// character shows as its escape inside the quotes, not as a quoted string quoted again.
func TestRunReasonQuotedOnce(t *testing.T) {
	for _, tc := range []struct{ because, want string }{
		{"paid 89", `because "paid 89"`},
		{"a\x1b[31mred\nline2", `because "a\x1b[31mred\nline2"`},
		{"x\u202ey", `because "x\u202ey"`},
	} {
		r := &query.Result{Kind: "run", Statement: "run r-17", Run: []mql.RunReport{{
			Run: "r-17", By: "worker-3", Outcome: mql.Failed, Because: tc.because, OutcomeTx: 8,
		}}}
		for _, f := range []Format{FormatTable, FormatTree} {
			out, err := Render(r, Style{Format: f})
			if err != nil {
				t.Fatal(err)
			}
			head, _, _ := strings.Cut(out, "\n")
			if !strings.Contains(head, tc.want+":") {
				t.Errorf("%s: %q: head %s, want it to hold %s", f, tc.because, head, tc.want)
			}
		}
	}
}
