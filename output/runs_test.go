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

// The stale line of stats counts, like the stale-memory rate, only the runs that reached a
// decision point; it says so, so that its figure is not read as every version served live.
func TestStaleLineNamesItsRuns(t *testing.T) {
	r := &query.Result{Kind: "stats", Statement: "stats", Stats: &mql.Stats{
		Memory: &mql.MemoryStats{Runs: 9, Retrievals: 9, Served: 11, LiveServed: 4, StaleAtDecision: 2, StaleMemoryRate: 0.5}}}
	out, err := Render(r, Style{Format: FormatTable})
	if err != nil {
		t.Fatal(err)
	}
	if want := "stale at decision  2 of 4 live when served, in the runs that reached a decision"; !strings.Contains(out, want) {
		t.Errorf("stats:\n%s\nwant a line %q", out, want)
	}
}
