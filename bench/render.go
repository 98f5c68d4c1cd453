package main

import (
	"fmt"
	"os"
	"strings"
)

func fmtVal(v float64, unit string) string {
	switch unit {
	case "s":
		switch {
		case v >= 1:
			return fmt.Sprintf("%.2f s", v)
		case v >= 1e-3:
			return fmt.Sprintf("%.2f ms", v*1e3)
		default:
			return fmt.Sprintf("%.1f µs", v*1e6)
		}
	case "bytes":
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	case "claims/s":
		return fmt.Sprintf("%.0f", v)
	case "ratio":
		return fmt.Sprintf("%.2f×", v)
	}
	return fmt.Sprintf("%g", v)
}

func fmtStat(s *stat) string {
	if s == nil {
		return "—"
	}
	if s.N <= 1 || s.Min == s.Max {
		return fmtVal(s.Median, s.Unit)
	}
	return fmt.Sprintf("%s (%s–%s)", fmtVal(s.Median, s.Unit), fmtVal(s.Min, s.Unit), fmtVal(s.Max, s.Unit))
}

func renderSize(sr *sizeResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %d claims\n\n", sr.Claims)
	for _, col := range []struct{ key, name string }{{"mql_memory", "mql memory"}, {"mql_bbolt", "mql bbolt"}, {"sqlite", "SQLite"}} {
		if note := sr.NotMeasured[col.key]; note != "" {
			fmt.Fprintf(&b, "%s: %s.  \n", col.name, note)
		}
	}
	if len(sr.NotMeasured) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("| operation | mql memory | mql bbolt | SQLite | bbolt ÷ SQLite |\n|---|---|---|---|---|\n")
	for _, r := range sr.Rows {
		op, ratio := opCells(r.Op, r.Note, r.Ratio)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", op, fmtStat(r.Memory), fmtStat(r.BBolt), fmtStat(r.SQLite), ratio)
	}
	return b.String()
}

// opCells are a row's operation cell (with its note, if any) and its ratio cell (— for none).
func opCells(op, note string, ratio float64) (string, string) {
	if note != "" {
		op += " (" + note + ")"
	}
	if ratio == 0 {
		return op, "—"
	}
	return op, fmt.Sprintf("%.2f×", ratio)
}

func renderWriters(w *writerResult) string {
	on := "a new store"
	if w.Store != "a new store" {
		on = fmt.Sprintf("%s of %d transactions", w.Store, w.TransactionsBefore)
	}
	return fmt.Sprintf("\n### %d concurrent writers, target %d assertions/s, bbolt, on %s\n\n"+
		"| acknowledged | errors | seconds | throughput | p50 | p99 | max | all acknowledged claims found after reopen |\n|---|---|---|---|---|---|---|---|\n"+
		"| %d | %d | %.1f | %.0f /s | %s | %s | %s | %t |\n",
		w.Writers, w.TargetRate, on, w.Acknowledged, w.Errors, w.Seconds, w.Throughput,
		fmtVal(w.P50, "s"), fmtVal(w.P99, "s"), fmtVal(w.Max, "s"), w.Durable)
}

func renderPostgres(p *pgResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %d claims: mql on PostgreSQL and the same model as plain SQL, on one server\n\n", p.Claims)
	b.WriteString("| operation | mql postgres | SQL postgres | mql ÷ SQL |\n|---|---|---|---|\n")
	for _, r := range p.Rows {
		op, ratio := opCells(r.Op, r.Note, r.Ratio)
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", op, fmtStat(r.MQL), fmtStat(r.SQL), ratio)
	}
	if v := p.Visibility; v != nil {
		fmt.Fprintf(&b, "\n### A write seen by another process (which never polls): %d writes\n\n", v.Writes)
		b.WriteString("| from acknowledgement to live in the other process | p50 | p99 | max | not seen within 5 s |\n|---|---|---|---|---|\n")
		fmt.Fprintf(&b, "| mql postgres | %s | %s | %s | %d |\n", fmtVal(v.P50, "s"), fmtVal(v.P99, "s"), fmtVal(v.Max, "s"), v.Missed)
	}
	if len(p.Writers) == 0 {
		return b.String()
	}
	w0 := p.Writers[0]
	fmt.Fprintf(&b, "\n### Concurrent writers: %d processes × %d single-claim assertions, one after another\n\n", w0.Processes, w0.PerProcess)
	b.WriteString("| store | acknowledged | errors | seconds | throughput | p50 | p99 | max | lost claims | one live claim per key |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, w := range p.Writers {
		name := map[string]string{"postgres": "mql postgres", "postgres-sql": "SQL postgres"}[w.Store]
		fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.0f /s | %s | %s | %s | %d | %t |\n", name, w.Acknowledged, w.Errors, w.Seconds,
			w.Throughput, fmtVal(w.P50, "s"), fmtVal(w.P99, "s"), fmtVal(w.Max, "s"), w.Lost, w.OneLivePerKey)
	}
	if len(p.Writers) == 2 && p.Writers[1].Throughput > 0 && p.Writers[1].P50 > 0 && p.Writers[1].P99 > 0 {
		m, s := p.Writers[0], p.Writers[1]
		fmt.Fprintf(&b, "| mql ÷ SQL | | | | %.2f× | %.2f× | %.2f× | | | |\n", m.Throughput/s.Throughput, m.P50/s.P50, m.P99/s.P99)
	}
	for _, w := range p.Writers {
		if w.FirstError != "" {
			fmt.Fprintf(&b, "\nFirst error (%s): %s\n", w.Store, w.FirstError)
		}
	}
	return b.String()
}

// writeDoc puts the results between the markers of section "sizes", "writers" or "postgres" in path,
// keeping the rest of the file (the analysis) as it is. A missing file is created.
func writeDoc(path string, rep *report) error {
	var body strings.Builder
	fmt.Fprintf(&body, "Machine: %s  \nCommand: `%s`\n", rep.Machine, rep.Command)
	section := "sizes"
	if rep.Writers != nil {
		section = "writers"
		body.WriteString(renderWriters(rep.Writers))
	}
	if rep.Postgres != nil {
		section = "postgres"
		body.WriteString(renderPostgres(rep.Postgres))
	}
	if rep.Search != nil {
		section = "search"
		for i := range rep.Search {
			body.WriteString(renderSearch(&rep.Search[i]))
		}
	}
	for i := range rep.Sizes {
		body.WriteString(renderSize(&rep.Sizes[i]))
	}
	begin, end := "<!-- bench:"+section+":begin -->", "<!-- bench:"+section+":end -->"
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(old)
	block := begin + "\n" + body.String() + end
	i, j := strings.Index(text, begin), strings.Index(text, end)
	if i >= 0 && j > i {
		text = text[:i] + block + text[j+len(end):]
	} else {
		if text == "" {
			text = "# Benchmarks\n"
		}
		text += "\n" + block + "\n"
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
