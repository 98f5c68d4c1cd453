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

// A run that was served nothing still has its row in CSV: its decisions and outcome are
// facts of the run, and a run whose rows are its served versions would vanish.
func TestRunCSVKeepsARunServedNothing(t *testing.T) {
	r := &query.Result{Kind: "run", Statement: "run r-9", Run: []mql.RunReport{
		{Run: "r-9", By: "worker-3", Decisions: []string{"pick@1"}, Outcome: mql.Failed, Because: "no quote", OutcomeTx: 8},
		{Run: "r-9", By: "worker-7", Served: []mql.Served{{Ref: "K.p@1", ReadAt: 4, WhenServed: mql.Live, Now: mql.Live}}},
	}}
	out, err := Render(r, Style{Format: FormatCSV})
	if err != nil {
		t.Fatal(err)
	}
	want := "run,by,served,read_at_tx,when_served,at_decision,now,stale,revoked_later,cited,decisions,outcome,because\n" +
		"r-9,worker-3,,,,,,,,,pick@1,failed,no quote\n" +
		"r-9,worker-7,K.p@1,4,live,,live,,false,false,,,\n"
	if out != want {
		t.Errorf("csv:\n%s\nwant:\n%s", out, want)
	}
}

// A version revoked since it was served, that was not live when served (a past version from
// history), says "revoked since" alone in the stale column, not "-, revoked since".
func TestRevokedSinceAlone(t *testing.T) {
	r := &query.Result{Kind: "run", Statement: "run r1", Run: []mql.RunReport{{Run: "r1", By: "w", Served: []mql.Served{
		{Ref: "A.x@1", WhenServed: mql.Superseded, AtDecision: mql.Revoked, Now: mql.Revoked, RevokedLater: true},
		{Ref: "A.x@2", WhenServed: mql.Live, AtDecision: mql.Live, Now: mql.Revoked, Stale: "later", RevokedLater: true},
	}}}}
	out, err := Render(r, Style{Format: FormatTable})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "-, revoked since") || !strings.Contains(out, "revoked  revoked since ") || !strings.Contains(out, "later, revoked since") {
		t.Errorf("run:\n%s\nwant \"revoked since\" alone for A.x@1, \"later, revoked since\" for A.x@2", out)
	}
}
