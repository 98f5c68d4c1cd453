package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/benchknob"
	"github.com/mql-dev/mql/internal/pgtest"
)

// runOut runs the program with args and returns what it wrote.
func runOut(t *testing.T, args []string) []byte {
	t.Helper()
	cfg, err := parseFlags(args)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cfg.out = &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// runJSON runs the program with args, which ask for -json, and reads its report.
func runJSON(t *testing.T, args []string) report {
	t.Helper()
	var rep report
	if err := json.Unmarshal(runOut(t, args), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestEndToEnd runs the whole program at a tiny size, once: every operation on every engine,
// the JSON report and the document. No timing is asserted.
func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "BENCHMARKS.md")
	rep := runJSON(t, []string{"-sizes", "500", "-hubs", "3,12", "-dag", "60", "-runs", "1", "-json", "-dir", dir, "-write-doc", doc, "-drop-caches=false"})
	if len(rep.Sizes) != 1 || len(rep.Sizes[0].Rows) < 12 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.Sizes[0].Rows {
		if r.BBolt == nil {
			t.Errorf("%s: no bbolt figure", r.Op)
		}
	}
	// The first reads of fresh processes, and export, import and check in child processes:
	// with an SQLite figure beside mql's where there is one.
	for _, want := range []struct {
		prefix string
		sqlite bool
	}{
		{"first read after open, cold: live lookup", true},
		{"first read after open, cold: impact (12 dependents)", true},
		{"first read after open, cold: impact over a dense DAG", true},
		{"open, in the processes of the cold first reads", true},
		{"mql export of the store", false},
		{"mql import of that export into a new store (claims/s)", true}, // SQLite's bulk ingest
		{"peak RSS of mql import", false},
		{"mql check of the store", true}, // PRAGMA integrity_check
		{"peak RSS of mql check", true},
	} {
		i := slices.IndexFunc(rep.Sizes[0].Rows, func(r row) bool { return strings.HasPrefix(r.Op, want.prefix) })
		if i < 0 {
			t.Errorf("no row %q", want.prefix)
			continue
		}
		if r := rep.Sizes[0].Rows[i]; r.BBolt == nil || r.BBolt.Median <= 0 || (r.SQLite != nil) != want.sqlite {
			t.Errorf("%s: %+v", r.Op, r)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "n500")); !os.IsNotExist(err) {
		t.Errorf("the stores and the export were not removed without -keep: %v", err)
	}
	if b, err := os.ReadFile(doc); err != nil || !bytes.Contains(b, []byte("| live lookup")) {
		t.Fatalf("doc: %v\n%s", err, b)
	}

	rep = runJSON(t, []string{"-writers", "3", "-rate", "60", "-duration", "300ms", "-json", "-dir", dir})
	if w := rep.Writers; w == nil || w.Acknowledged == 0 || w.Errors != 0 || !w.Durable {
		t.Fatalf("writers: %+v", w)
	}
}

// TestBackends leaves columns out: by -backends, and the memory column above
// -max-memory-claims, with a note saying why.
func TestBackends(t *testing.T) {
	dir := t.TempDir()
	rep := runJSON(t, []string{"-sizes", "300", "-hubs", "3", "-dag", "60", "-runs", "1", "-json", "-dir", dir,
		"-backends", "memory,bbolt", "-max-memory-claims", "200", "-drop-caches=false"})
	if len(rep.Sizes) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	sr := rep.Sizes[0]
	if !strings.Contains(sr.NotMeasured["mql_memory"], "GiB") || !strings.Contains(sr.NotMeasured["sqlite"], "-backends") {
		t.Errorf("not measured: %v", sr.NotMeasured)
	}
	for _, r := range sr.Rows {
		if r.Memory != nil || r.SQLite != nil {
			t.Errorf("%s: a figure for a column left out: %+v", r.Op, r)
		}
	}
	if !strings.Contains(renderSize(&sr), "mql memory: not measured") {
		t.Errorf("table without the note:\n%s", renderSize(&sr))
	}
	if _, err := parseFlags([]string{"-backends", "memory,duckdb"}); err == nil {
		t.Error("an unknown backend was accepted")
	}
}

// TestPostgres runs the PostgreSQL comparison at a tiny size against the server in
// MQL_TEST_POSTGRES, with 2 writer processes of each kind, and checks no claim was lost.
func TestPostgres(t *testing.T) {
	server := pgtest.Server(t)
	before := benchDatabases(t, server)
	dir := t.TempDir()
	doc := filepath.Join(dir, "BENCHMARKS.md")
	rep := runJSON(t, []string{"-postgres", server, "-sizes", "300", "-hubs", "3,12", "-runs", "1",
		"-pg-processes", "2", "-pg-assertions", "20", "-json", "-write-doc", doc})
	p := rep.Postgres
	if p == nil || p.Claims != 300 || len(p.Rows) < 10 || len(p.Writers) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range p.Rows {
		if r.MQL == nil || r.SQL == nil || r.Ratio == 0 {
			t.Errorf("%s: missing figure: %+v", r.Op, r)
		}
	}
	// Every write is seen by the watcher process, which only waits for its store's signal.
	if v := p.Visibility; v == nil || v.Writes != pgVisibilityWrites || v.Missed != 0 {
		t.Errorf("visibility: %+v", v)
	}
	for _, w := range p.Writers {
		if w.Acknowledged != 2*20 || w.Errors != 0 || w.Lost != 0 || !w.OneLivePerKey {
			t.Errorf("writers: %+v", w)
		}
	}
	if b, err := os.ReadFile(doc); err != nil || !bytes.Contains(b, []byte("<!-- bench:postgres:begin -->")) || !bytes.Contains(b, []byte("| lost claims")) {
		t.Fatalf("doc: %v\n%s", err, b)
	}
	if after := benchDatabases(t, server); after > before {
		t.Errorf("the run left %d databases on the server", after-before)
	}
}

func benchDatabases(t *testing.T, server string) int {
	t.Helper()
	db, err := sql.Open("postgres", server)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM pg_database WHERE datname LIKE 'mqlbench\_%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRedactDSN(t *testing.T) {
	got := command([]string{"-postgres", "postgres://u:secret@h:5432/db?sslmode=disable", "-runs", "1"})
	if strings.Contains(got, "secret") || !strings.Contains(got, "-runs 1") {
		t.Errorf("command: %s", got)
	}
}

// TestMain lets the test binary stand in for the program when it measures opening, writes, or
// how soon another process sees a write, in child processes.
func TestMain(m *testing.M) {
	if runChild(os.Args[1:]) {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The generated export (-export) is a sound store: it imports, and the store checks clean.
func TestExportImports(t *testing.T) {
	dir := t.TempDir()
	nq := filepath.Join(dir, "gen.nq")
	if err := writeExport(nq, 3000, 100, 1); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(nq)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ctx := context.Background()
	db := filepath.Join(dir, "gen.db")
	sum, err := mql.ImportStore(ctx, db, f, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Claims != 3000 {
		t.Fatalf("imported %+v", sum)
	}
	rep, err := mql.CheckStore(ctx, db, mql.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v %v", err, rep.Problems)
	}
}

// A failed correctness check makes the run fail (exit 1), whatever the figures.
func TestFailedChecks(t *testing.T) {
	ok := func() *report {
		return &report{
			Writers: &writerResult{Acknowledged: 10, Durable: true},
			Serve:   &serveResult{Writes: []loadStats{{Path: "MCP", Acknowledged: 5, Durable: true}}},
			Postgres: &pgResult{Visibility: &pgVisibility{Writes: 50},
				Writers: []pgWriterResult{{Store: "postgres", OneLivePerKey: true}, {Store: "postgres-sql", OneLivePerKey: true}}},
		}
	}
	for _, tc := range []struct {
		name    string
		breakIt func(r *report)
		want    string
	}{
		{"all pass", func(*report) {}, ""},
		{"writers lost a claim", func(r *report) { r.Writers.Durable = false }, "writers: not every one"},
		{"serve lost a claim", func(r *report) { r.Serve.Writes[0].Durable = false }, "serve, MCP"},
		{"a write not seen", func(r *report) { r.Postgres.Visibility.Missed = 1 }, "not seen by the other process"},
		{"postgres lost a claim", func(r *report) { r.Postgres.Writers[1].Lost = 2 }, "postgres-sql: 2 acknowledged claims lost"},
		{"two live claims", func(r *report) { r.Postgres.Writers[0].OneLivePerKey = false }, "without exactly one live claim"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok()
			tc.breakIt(r)
			got := strings.Join(failedChecks(r), "; ")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("failedChecks = %q, want %q", got, tc.want)
			}
		})
	}
}

// -dag 0 leaves the dense DAG out, and its check and reads with it.
func TestNoDAG(t *testing.T) {
	dir := t.TempDir()
	out := runOut(t, []string{"-sizes", "300", "-hubs", "3", "-dag", "0", "-runs", "1", "-json", "-dir", dir, "-backends", "bbolt,sqlite", "-drop-caches=false", "-keep"})
	if bytes.Contains(out, []byte("dense DAG")) {
		t.Errorf("a DAG figure with -dag 0:\n%s", out)
	}
	// -keep keeps the stores and the export; the imported store goes.
	for f, kept := range map[string]bool{"mql.db": true, "peer.sqlite": true, "export.nq": true, "imported.db": false} {
		if _, err := os.Stat(filepath.Join(dir, "n300", f)); (err == nil) != kept {
			t.Errorf("-keep: %s: %v", f, err)
		}
	}
}

// TestReuse: a run with -keep leaves the stores, and -reuse measures their reads again without
// building or writing anything: the same read rows, with the figures of both engines, and
// the stores' files unchanged in size.
func TestReuse(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-sizes", "400", "-hubs", "3,12", "-dag", "40", "-runs", "1", "-json", "-dir", dir, "-drop-caches=false", "-backends", "bbolt,sqlite"}
	runOut(t, append(args, "-keep", "-import-check=false"))
	db := filepath.Join(dir, "n400", "mql.db")
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	rep := runJSON(t, append(args, "-reuse"))
	var ops []string
	for _, r := range rep.Sizes[0].Rows {
		ops = append(ops, r.Op)
		if r.BBolt == nil || r.SQLite == nil {
			t.Errorf("%s: a figure missing: %+v", r.Op, r)
		}
		if strings.Contains(r.Op, "ingest") || strings.Contains(r.Op, "transactions") || strings.Contains(r.Op, "Derive") {
			t.Errorf("-reuse measured a write: %s", r.Op)
		}
	}
	for _, want := range []string{"live lookup (one Subject.predicate)", "find: soc2 and EU, cheapest 10", "impact (12 dependents)", "file size"} {
		if !slices.Contains(ops, want) {
			t.Errorf("-reuse: no row %q in %q", want, ops)
		}
	}
	if after, err := os.Stat(db); err != nil || after.Size() != before.Size() {
		t.Errorf("the kept store changed: %v, %d -> %d bytes", err, before.Size(), after.Size())
	}
	if _, err := parseFlags([]string{"-reuse"}); err == nil {
		t.Error("-reuse without -dir was accepted")
	}
	cfg, _ := parseFlags([]string{"-reuse", "-sizes", "300", "-dir", dir, "-backends", "bbolt,sqlite"})
	cfg.out = io.Discard
	if err := run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "-keep") {
		t.Errorf("-reuse of a size never kept: %v", err)
	}
}

// TestSearch runs -search at a tiny size: both engines' recall and latencies, no row that is
// not live, and the ingest and size figures. FTS5's columns need the build tag sqlite_fts5
// (go test -tags sqlite_fts5 ./bench); without it they are left out with a note saying so.
func TestSearch(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "BENCHMARKS.md")
	rep := runJSON(t, []string{"-search", "-sizes", "2000", "-runs", "1", "-questions", "40", "-json", "-dir", dir, "-write-doc", doc})
	if len(rep.Search) != 1 {
		t.Fatalf("report: %+v", rep)
	}
	sr := rep.Search[0]
	if sr.Claims < 2000 || sr.Questions != 40 || sr.Evidence < 40 || sr.Superseded == 0 || sr.Revoked == 0 {
		t.Errorf("corpus: %+v", sr)
	}
	want := []string{"mql", "FTS5, every word ORed", "FTS5, mql's words ORed", "FTS5 alone, mql's words ORed, no live filter"}
	if sr.FTS5 != "" {
		t.Logf("FTS5 left out (%s): checking mql alone", sr.FTS5)
		want = want[:1]
	}
	if len(sr.Engines) != len(want) {
		t.Fatalf("engines: %+v", sr.Engines)
	}
	for i, e := range sr.Engines {
		if e.Name != want[i] || e.Recall <= 0 || e.Recall > 1 || e.Latency == nil || e.Latency.Median <= 0 || e.P90 < e.Latency.Median || e.Queries != 40 {
			t.Errorf("%s: %+v", want[i], e)
		}
		if e.NonLive != 0 && !e.Unfiltered {
			t.Errorf("%s returned %d rows that are not live", e.Name, e.NonLive)
		}
		if i > 0 && (e.LatencyBy <= 0 || e.P90By <= 0) {
			t.Errorf("%s: no ratio: %+v", e.Name, e)
		}
	}
	if sr.IngestMQL == nil || sr.IngestNoText == nil || sr.IngestRatio <= 0 || sr.TextIndexBytes <= 0 || sr.TextKVBytes <= 0 {
		t.Errorf("ingest and size: %+v", sr)
	}
	if (sr.FTS5 == "") != strings.Contains(rep.Command, "go run -tags sqlite_fts5 ./bench") {
		t.Errorf("command %q, FTS5 %q", rep.Command, sr.FTS5)
	}
	if (sr.FTS5 == "") != (sr.FTSIndexBytes > 0 && sr.IngestSQLite != nil) {
		t.Errorf("FTS5's ingest and size: %+v", sr)
	}
	if b, err := os.ReadFile(doc); err != nil || !bytes.Contains(b, []byte("<!-- bench:search:begin -->")) || !bytes.Contains(b, []byte("| mql | ")) {
		t.Fatalf("doc: %v\n%s", err, b)
	}
}

// A row that is not its key's live version counts against the engine, and an evidence turn
// counts only as its live version.
func TestSearchScore(t *testing.T) {
	truth := searchTruth{live: map[string]int{"A.s1_t1": 2, "A.s1_t3": 0, "B.s1_t2": 1}}
	q := question{Text: "q", Evidence: []string{"A.s1_t1", "B.s1_t2"}}
	var r searchEngineResult
	score(&r, q, []hitKey{{"A.s1_t1", 1}, {"A.s1_t3", 1}, {"B.s1_t2", 1}}, truth)
	if r.NonLive != 2 || r.Found != 1 || r.Recall != 0.5 {
		t.Errorf("superseded and revoked rows: %+v", r)
	}
	r = searchEngineResult{}
	score(&r, q, []hitKey{{"B.s1_t2", 1}, {"A.s1_t1", 2}}, truth)
	if r.NonLive != 0 || r.Found != 2 || r.Recall != 1 {
		t.Errorf("live rows: %+v", r)
	}
	failed := failedChecks(&report{Search: []searchResult{{Claims: 10, Engines: []searchEngineResult{{Name: "mql", NonLive: 1}}}}})
	if len(failed) != 1 || !strings.Contains(failed[0], "not live") {
		t.Errorf("failedChecks = %q", failed)
	}
}

// The questions become FTS5 queries as documented: the words, quoted, ORed; the second form
// keeps only the words mql's analyzer keeps.
func TestFTSQueries(t *testing.T) {
	q := "What did Caroline Reyes name the puppy they adopted?"
	if got, want := ftsQueryAll(q), `"What" OR "did" OR "Caroline" OR "Reyes" OR "name" OR "the" OR "puppy" OR "they" OR "adopted"`; got != want {
		t.Errorf("all words: %s, want %s", got, want)
	}
	if got, want := ftsQueryKept(q), `"Caroline" OR "Reyes" OR "name" OR "puppy" OR "adopted"`; got != want {
		t.Errorf("mql's words: %s, want %s", got, want)
	}
}

// BenchmarkSearchIngest writes the -search corpus of 20,000 claims into a new store, with the
// text index and without it (benchknob.NoTextIndex): the profile of where the index's cost
// goes (go test -run XXX -bench SearchIngest -benchtime 2x -cpuprofile cpu.out ./bench).
func BenchmarkSearchIngest(b *testing.B) {
	sc := newSearchCorpus(20_000, 1)
	convs := make([]conversation, sc.conversations)
	for i := range convs {
		convs[i] = sc.conversation(i)
	}
	for _, noText := range []bool{false, true} {
		name := "text"
		if noText {
			name = "notext"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				e, err := openSearchMQL(context.Background(), filepath.Join(b.TempDir(), "s.db"), sc)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				benchknob.NoTextIndex.Store(noText)
				versions := map[string]int{}
				for _, c := range convs {
					vers := make([]int, len(c.ops))
					for j, op := range c.ops {
						if !op.Revoke {
							versions[op.key()]++
						}
						vers[j] = versions[op.key()]
					}
					if err := e.ingest(c.ops, vers); err != nil {
						b.Fatal(err)
					}
				}
				benchknob.NoTextIndex.Store(false)
				b.StopTimer()
				e.db.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(sc.claims*b.N)/b.Elapsed().Seconds(), "claims/s")
		})
	}
}

// -locomo reads conversations in LoCoMo's shape: a list of samples with their "conversation"
// (its locomo10.json) or one conversation an object (a file per conversation); every turn a
// claim by its speaker, valid from its session's date; every question with evidence asked.
func TestLoadLocomo(t *testing.T) {
	lc, err := loadLocomo("testdata/locomo", true)
	if err != nil {
		t.Fatal(err)
	}
	if n, claims := lc.size(); n != 2 || claims != 10 {
		t.Errorf("size: %d conversations, %d claims; want 2 and 10", n, claims)
	}
	if got := lc.principals(); !slices.Equal(got, []string{"Cleo", "Dev", "Ada", "Ben_Okafor"}) {
		t.Errorf("principals %q", got)
	}
	c := lc.conversation(1)
	first := c.ops[0]
	if first.key() != "Ada.c2_d1_1" || first.Text != "Hi Ben! I just bought a used Subaru Outback." || !first.ValidFrom.Equal(time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)) {
		t.Errorf("first turn %+v", first)
	}
	if got := c.ops[2].Text; got != "Oscar is a lovely name. [a photo of a small brown dog]" {
		t.Errorf("a turn with its caption: %q", got)
	}
	qs := lc.questions(0)
	if len(qs) != 6 { // three of each conversation: the one without evidence is not asked
		t.Fatalf("questions %+v", qs)
	}
	if q := qs[5]; q.Text != "Where did the children go?" || !slices.Equal(q.Evidence, []string{"Ben_Okafor.c2_d2_1"}) {
		t.Errorf("a question whose evidence names a turn the file lacks: %+v", q)
	}
	if _, err := loadLocomo("testdata/nothing-here", false); err == nil {
		t.Error("a missing path: no error")
	}

	// The search bench over it: mql finds what the questions ask, and nothing not live.
	cfg := &config{runs: 1, sizes: []int{1}, locomo: "testdata/locomo", out: io.Discard, jsonOut: true}
	srs, err := runSearchBench(context.Background(), cfg, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(srs) != 1 || srs[0].Claims != 10 || srs[0].Questions != 6 || srs[0].Corpus != "LoCoMo (locomo)" {
		t.Fatalf("results %+v", srs)
	}
	if e := srs[0].Engines[0]; e.Name != "mql" || e.Recall != 1 || e.NonLive != 0 {
		t.Errorf("mql on the sample: %+v", e)
	}
}
