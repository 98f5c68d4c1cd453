package output

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// Rendering of the run reads (run, runs), of the runs impact and revoked-by name, and of the
// memory metrics of stats.

func isRunResult(r *query.Result) bool { return r.Kind == "run" || r.Kind == "runs" }

func outcomeText(o mql.OutcomeResult) string {
	if o == "" {
		return "no outcome"
	}
	return string(o)
}

func stateOrDash(s mql.State) string {
	if s == "" {
		return "-"
	}
	return string(s)
}

// runUseText is one run that was served a version: "r1 (worker-3): served Klarveld.region@1,
// decided pick@1, failed".
func runUseText(u mql.RunUse) string {
	decided := "no decision"
	if len(u.Decisions) > 0 {
		decided = "decided " + escapeJoin(u.Decisions, ", ")
	}
	return fmt.Sprintf("%s (%s): served %s, %s, %s", Escape(u.Run), Escape(u.By), escapeJoin(u.Served, ", "), decided, outcomeText(u.Outcome))
}

// writeRunUses lists the runs of an impact or revoked-by answer, after it.
func writeRunUses(b *strings.Builder, runs []mql.RunUse) {
	if len(runs) == 0 {
		return
	}
	b.WriteString("served to runs:\n")
	for _, u := range runs {
		b.WriteString("  " + runUseText(u) + "\n")
	}
}

// memoryPairs are the memory metrics of stats, for a person.
func memoryPairs(m *mql.MemoryStats) [][2]string {
	if m == nil {
		return nil
	}
	return [][2]string{
		{"runs", strconv.Itoa(m.Runs)},
		{"  retrievals", strconv.Itoa(m.Retrievals)},
		{"  served", strconv.Itoa(m.Served)},
		{"  stale at decision", fmt.Sprintf("%d of %d live when served, in the runs that reached a decision", m.StaleAtDecision, m.LiveServed)},
		{"stale-memory rate", fmtNum(m.StaleMemoryRate)},
		{"context utilization", fmtNum(m.ContextUtilization)},
		{"retrieval diversity", fmtNum(m.RetrievalDiversity)},
		{"outcomes", fmt.Sprintf("%d: %d succeeded, %d failed, %d declined", m.Outcomes, m.Succeeded, m.Failed, m.Declined)},
		{"decline rate", fmtNum(m.DeclineRate)},
		{"failures", fmt.Sprintf("%d memory, %d downstream", m.MemoryFailures, m.DownstreamFailures)},
	}
}

// memoryCSV are the memory metrics of stats as metric/value rows.
func memoryCSV(m *mql.MemoryStats) [][]string {
	if m == nil {
		return nil
	}
	return [][]string{
		{"runs", strconv.Itoa(m.Runs)},
		{"retrievals", strconv.Itoa(m.Retrievals)},
		{"served", strconv.Itoa(m.Served)},
		{"live_served", strconv.Itoa(m.LiveServed)},
		{"stale_at_decision", strconv.Itoa(m.StaleAtDecision)},
		{"stale_memory_rate", csvFloat(m.StaleMemoryRate)},
		{"cited", strconv.Itoa(m.Cited)},
		{"context_utilization", csvFloat(m.ContextUtilization)},
		{"retrieval_diversity", csvFloat(m.RetrievalDiversity)},
		{"outcomes", strconv.Itoa(m.Outcomes)},
		{"succeeded", strconv.Itoa(m.Succeeded)},
		{"failed", strconv.Itoa(m.Failed)},
		{"declined", strconv.Itoa(m.Declined)},
		{"decline_rate", csvFloat(m.DeclineRate)},
		{"memory_failures", strconv.Itoa(m.MemoryFailures)},
		{"downstream_failures", strconv.Itoa(m.DownstreamFailures)},
	}
}

// writeRunTable renders run and runs for a person.
func writeRunTable(b *strings.Builder, r *query.Result, ex bool) {
	if r.Kind == "runs" {
		g := &grid{header: []string{"run", "by", "first", "retrievals", "served", "cited", "stale", "decisions", "outcome"}}
		for _, s := range r.Runs {
			g.add(Escape(s.Run), Escape(s.By), fmtTime(s.First), strconv.Itoa(s.Retrievals), strconv.Itoa(s.Served),
				strconv.Itoa(s.Cited), strconv.Itoa(s.Stale), strconv.Itoa(s.Decisions), outcomeText(s.Outcome))
		}
		g.render(b, ex)
		return
	}
	for i, rep := range r.Run {
		if i > 0 {
			b.WriteString("\n")
		}
		head := fmt.Sprintf("run %s by %s: %s", Escape(rep.Run), Escape(rep.By), outcomeText(rep.Outcome))
		if rep.Outcome != "" {
			head += " (tx " + strconv.FormatInt(rep.OutcomeTx, 10) + ")"
		}
		if rep.Because != "" {
			head += " because " + strconv.Quote(rep.Because)
		}
		if rep.Outcome == mql.Failed {
			if rep.MemoryFailure {
				head += ": a memory failure"
			} else {
				head += ": downstream of the memory"
			}
		}
		b.WriteString(head + "\n")
		for _, q := range rep.Retrievals {
			fmt.Fprintf(b, "read at tx %d (tx %d, %s): %s\n", q.ReadAt, q.Tx, fmtTime(q.At), Escape(orDash(q.Statement)))
		}
		decisions := "none"
		if len(rep.Decisions) > 0 {
			decisions = escapeJoin(rep.Decisions, ", ")
		}
		if rep.DecisionTx != 0 {
			decisions += " (decision at tx " + strconv.FormatInt(rep.DecisionTx, 10) + ")"
		}
		b.WriteString("decisions: " + decisions + "\n")
		g := &grid{header: []string{"served", "when served", "at decision", "now", "stale", "cited"}}
		for _, s := range rep.Served {
			stale := orDash(s.Stale)
			switch {
			case s.RevokedLater && s.Stale == "":
				stale = "revoked since" // a past version, served as such
			case s.RevokedLater:
				stale += ", revoked since"
			}
			g.add(Escape(s.Ref), stateOrDash(s.WhenServed), stateOrDash(s.AtDecision), stateOrDash(s.Now), stale, strconv.FormatBool(s.Cited))
		}
		g.render(b, ex)
	}
}

type retrievalJSON struct {
	mql.Retrieval
	At stamp `json:"at"`
}

type runReportJSON struct {
	mql.RunReport
	Retrievals []retrievalJSON `json:"retrievals"`
}

type runSummaryJSON struct {
	mql.RunSummary
	First stamp `json:"first"`
}

// runJSON fills the rows of run and runs.
func runJSON(out *resultJSON, r *query.Result) {
	if r.Kind == "runs" {
		for _, s := range r.Runs {
			out.Rows = append(out.Rows, runSummaryJSON{RunSummary: s, First: stamp(s.First)})
		}
		return
	}
	for _, rep := range r.Run {
		rj := runReportJSON{RunReport: rep, Retrievals: []retrievalJSON{}}
		for _, q := range rep.Retrievals {
			rj.Retrievals = append(rj.Retrievals, retrievalJSON{Retrieval: q, At: stamp(q.At)})
		}
		out.Rows = append(out.Rows, rj)
	}
}

// runCSV returns the header and rows of run (one row per served version) and runs.
func runCSV(r *query.Result) (header []string, rows [][]string) {
	if r.Kind == "runs" {
		header = []string{"run", "by", "first", "retrievals", "served", "cited", "stale_at_decision", "decisions", "outcome"}
		for _, s := range r.Runs {
			rows = append(rows, []string{s.Run, s.By, fmtTime(s.First), strconv.Itoa(s.Retrievals), strconv.Itoa(s.Served),
				strconv.Itoa(s.Cited), strconv.Itoa(s.Stale), strconv.Itoa(s.Decisions), string(s.Outcome)})
		}
		return header, rows
	}
	header = []string{"run", "by", "served", "read_at_tx", "when_served", "at_decision", "now", "stale", "revoked_later", "cited", "decisions", "outcome", "because"}
	for _, rep := range r.Run {
		if len(rep.Served) == 0 {
			// A run served nothing keeps one row, its served columns empty: it still decided
			// and ended.
			rows = append(rows, []string{rep.Run, rep.By, "", "", "", "", "", "", "", "", strings.Join(rep.Decisions, csvListSep), string(rep.Outcome), rep.Because})
			continue
		}
		for _, s := range rep.Served {
			rows = append(rows, []string{rep.Run, rep.By, s.Ref, csvInt(s.ReadAt), string(s.WhenServed), string(s.AtDecision), string(s.Now),
				s.Stale, strconv.FormatBool(s.RevokedLater), strconv.FormatBool(s.Cited), strings.Join(rep.Decisions, csvListSep), string(rep.Outcome), rep.Because})
		}
	}
	return header, rows
}
