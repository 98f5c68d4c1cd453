// Command bench compares mql (memory and bbolt) with the relational peer an agent builder would
// pick instead — the same model as SQLite tables — on one seeded workload, and writes
// docs/BENCHMARKS.md. See docs/BENCHMARKS.md for what it measures and how to read it.
//
//	go run ./bench -sizes 10000,100000 -runs 5 -write-doc
//	go run ./bench -sizes 1000000 -backends bbolt,sqlite
//	go run ./bench -writers 12 -rate 1200 -duration 30s
//	go run ./bench -postgres postgres://user@host:port/postgres
//	go run ./bench -serve -rate 1200 -duration 30s
//	go run -tags sqlite_fts5 ./bench -search -sizes 100000
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mql-dev/mql"
)

type config struct {
	sizes    []int
	hubs     []int
	dag      int // artifacts of the dense derivation DAG
	runs     int
	seed     uint64
	dir      string
	jsonOut  bool
	writeDoc string
	writers  int
	rate     int
	duration time.Duration
	out      io.Writer

	backends        [3]bool // memory, bbolt, sqlite: the columns of the sizes table
	maxMemoryClaims int

	serve     bool // measure mql serve (MCP over HTTP and /v1/query) instead of the sizes
	search    bool // measure text search against SQLite FTS5 instead of the sizes
	questions int  // -search: questions asked
	// -search over a file of LoCoMo's shape instead of the generated corpus.
	locomo         string
	locomoCaptions bool
	metrics        bool // -serve: with the server's Prometheus metrics on, scraped every second

	postgres     string // server DSN; runs the PostgreSQL comparison instead of the sizes
	pgProcesses  int
	pgAssertions int

	export      string // write a generated export of each size here instead of benchmarking
	exportPerTx int

	keep         bool   // keep the stores of the sizes under -dir instead of removing them
	reuse        bool   // measure the reads of the stores kept under -dir, building nothing
	dropCaches   bool   // drop the OS page cache before each first read of a fresh process (root only)
	importCheck  bool   // measure mql export, import and check of each size's store
	writersStore string // -writers: write into this existing store instead of a new one
}

// Column order of the sizes table; engines, names and figures are indexed by it.
const (
	colMemory = iota
	colBBolt
	colSQLite
)

var backendNames = [3]string{"memory", "bbolt", "sqlite"}

// memoryBytesPerClaim is the peak resident set per claim of a benchmark process with only the
// memory store (its kv B-trees hold every record in the heap): 194.5 MiB at 100k claims (71.0
// MiB at 25k), without the DAG: enough to say why the memory column is skipped at large sizes.
// (Cayley's memstore, before the storage rewrite, took 5.5 GiB at 100k.)
const memoryBytesPerClaim = 194.5 * (1 << 20) / 100_000

func main() {
	if runChild(os.Args[1:]) {
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if cfg.export != "" {
		if len(cfg.sizes) != 1 || cfg.exportPerTx < 1 {
			fmt.Fprintln(os.Stderr, "bench: -export takes one size (-sizes N) and a positive -export-per-tx")
			os.Exit(2)
		}
		if err := writeExport(cfg.export, cfg.sizes[0], cfg.exportPerTx, cfg.seed); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(context.Background(), cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	sizes := fs.String("sizes", "10000,100000", "claims per workload, comma-separated")
	hubs := fs.String("hubs", "10,1000,10000", "dependents of each impact hub, comma-separated")
	dag := fs.Int("dag", 5000, "artifacts of the dense derivation DAG (each from two random earlier nodes); 0: none")
	runs := fs.Int("runs", 5, "runs per measurement (the median is reported, with min–max)")
	seed := fs.Uint64("seed", 1, "workload seed")
	dir := fs.String("dir", "", "where to put the stores (a temporary folder if empty)")
	js := fs.Bool("json", false, "print JSON instead of tables")
	doc := fs.String("write-doc", "", "write the results into this Markdown file (e.g. docs/BENCHMARKS.md)")
	writers := fs.Int("writers", 0, "run only the concurrent-writers test with this many writers (bbolt)")
	rate := fs.Int("rate", 1200, "concurrent writers: total assertions per second")
	dur := fs.Duration("duration", 30*time.Second, "concurrent writers: how long")
	backends := fs.String("backends", "memory,bbolt,sqlite", "columns of the sizes table, comma-separated")
	maxMem := fs.Int("max-memory-claims", 2_000_000, "skip the memory column above this many claims (the memory store, ~2 KiB a claim in the heap, would not fit beside the others); 0: never skip")
	pg := fs.String("postgres", "", "PostgreSQL server DSN: compare mql on PostgreSQL with plain SQL on the same server instead of the sizes (default size 10000 claims)")
	pgProcs := fs.Int("pg-processes", 8, "postgres: concurrent writer processes")
	pgAsserts := fs.Int("pg-assertions", 1000, "postgres: single-claim assertions per writer process")
	search := fs.Bool("search", false, "measure text search against SQLite FTS5's bm25 on a generated corpus of conversations with known answers, at each of -sizes (default 100000 claims): recall@10, non-live rows returned, latency, ingest with and without the text index, index sizes; FTS5 needs the build tag sqlite_fts5")
	questions := fs.Int("questions", 300, "-search: questions asked")
	locomo := fs.String("locomo", "", "-search over the conversations of a file in LoCoMo's shape (its locomo10.json, or a directory of one JSON file per conversation) instead of the generated corpus: every question with evidence asked, unless -questions is given; -sizes is ignored")
	locomoCaptions := fs.Bool("locomo-captions", false, "-locomo: a turn's text holds the caption of the image it shares too")
	serve := fs.Bool("serve", false, "measure mql serve on loopback: clients (-writers, default 12) asserting at -rate for -duration over MCP and /v1/query, and the round trip of a read")
	withMetrics := fs.Bool("metrics", false, "-serve: with the server's Prometheus metrics on (as mql serve --metrics), scraped once a second")
	export := fs.String("export", "", "write an owner's export of a generated history of -sizes claims to `FILE` (no store is built) and exit: the file mql import and mql check are measured on")
	perTx := fs.Int("export-per-tx", 1000, "-export: claims per transaction")
	reuse := fs.Bool("reuse", false, "measure the reads, opens, file sizes and cold reads of the stores an earlier run with -keep left under -dir (the same -sizes, -hubs and -dag), writing nothing: the rows that write (ingest, transactions, derives, import) are left out")
	keep := fs.Bool("keep", false, "keep each size's stores and the export under -dir (DIR/nN/mql.db, DIR/nN/peer.sqlite, DIR/nN/export.nq) instead of removing them")
	drop := fs.Bool("drop-caches", true, "drop the OS page cache (echo 1 > /proc/sys/vm/drop_caches: root only) before each first read of a fresh process")
	ic := fs.Bool("import-check", true, "measure mql export, import and check of each size's store (the targets are set at 1M claims; at 10M they take hours)")
	writersStore := fs.String("writers-store", "", "-writers: write into this existing bbolt `FILE` (e.g. a store kept by -keep) instead of a new, empty one")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	cfg := &config{dag: max(*dag, 0), runs: max(*runs, 1), seed: *seed, dir: *dir, jsonOut: *js, writeDoc: *doc,
		writers: *writers, rate: *rate, duration: *dur, out: os.Stdout, maxMemoryClaims: *maxMem,
		postgres: *pg, pgProcesses: *pgProcs, pgAssertions: *pgAsserts, serve: *serve, search: *search, questions: max(*questions, 1), locomo: *locomo, locomoCaptions: *locomoCaptions, metrics: *withMetrics, export: *export, exportPerTx: *perTx,
		keep: *keep, reuse: *reuse, writersStore: *writersStore, dropCaches: *drop, importCheck: *ic}
	if cfg.reuse && (cfg.dir == "" || cfg.postgres != "" || cfg.writers > 0 || cfg.serve || cfg.export != "") {
		return nil, fmt.Errorf("-reuse measures the sizes' stores a run with -keep left: give -dir, and no -postgres, -writers, -serve or -export")
	}
	if cfg.postgres != "" && cfg.writers > 0 {
		return nil, fmt.Errorf("-postgres and -writers are separate runs; give one of them")
	}
	if cfg.postgres != "" && (cfg.pgProcesses <= 0 || cfg.pgAssertions <= 0) {
		return nil, fmt.Errorf("-pg-processes and -pg-assertions must be positive")
	}
	sizesSet, questionsSet := false, false
	fs.Visit(func(f *flag.Flag) {
		sizesSet = sizesSet || f.Name == "sizes"
		questionsSet = questionsSet || f.Name == "questions"
	})
	if cfg.locomo != "" {
		cfg.search = true
		if !sizesSet {
			*sizes = "1" // one pass: the file is the size
		}
		if !questionsSet {
			cfg.questions = 0
		}
	}
	if cfg.search && !sizesSet {
		*sizes = "100000"
	}
	if cfg.postgres != "" && !sizesSet {
		// A PostgreSQL run loads every size into two databases and times writer processes:
		// 10k claims by default (100k take a few minutes).
		*sizes = "10000"
	}
	var err error
	if cfg.sizes, err = ints(*sizes); err != nil {
		return nil, err
	}
	if cfg.hubs, err = ints(*hubs); err != nil {
		return nil, err
	}
	for _, b := range strings.Split(*backends, ",") {
		i := slices.Index(backendNames[:], strings.TrimSpace(b))
		if i < 0 {
			return nil, fmt.Errorf("bad backend %q in -backends: want memory, bbolt or sqlite", b)
		}
		cfg.backends[i] = true
	}
	return cfg, nil
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad number %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// stat is one measurement over runs: median, min and max of a value (seconds per operation, or
// claims per second, or bytes).
type stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
	Unit   string  `json:"unit"`
}

func summarize(xs []float64, unit string) *stat {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return &stat{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s), Unit: unit}
}

type row struct {
	Op     string `json:"op"`
	Memory *stat  `json:"mql_memory,omitempty"`
	BBolt  *stat  `json:"mql_bbolt,omitempty"`
	SQLite *stat  `json:"sqlite,omitempty"`
	// Ratio is mql bbolt ÷ SQLite (times: < 1 is faster than SQLite; rates: > 1 is faster).
	Ratio float64 `json:"ratio_bbolt_sqlite,omitempty"`
	Note  string  `json:"note,omitempty"`
}

type sizeResult struct {
	Claims int   `json:"claims"`
	Rows   []row `json:"rows"`
	// NotMeasured says why a column is empty, by its JSON name (mql_memory, mql_bbolt, sqlite).
	NotMeasured map[string]string `json:"not_measured,omitempty"`
}

type report struct {
	Machine  string         `json:"machine"`
	Command  string         `json:"command"`
	Sizes    []sizeResult   `json:"sizes,omitempty"`
	Writers  *writerResult  `json:"writers,omitempty"`
	Postgres *pgResult      `json:"postgres,omitempty"`
	Serve    *serveResult   `json:"serve,omitempty"`
	Search   []searchResult `json:"search,omitempty"`
}

func run(ctx context.Context, cfg *config) error {
	dir := cfg.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "mql-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	rep := &report{Machine: machine(), Command: command(os.Args[1:])}
	switch {
	case cfg.search:
		sr, err := runSearchBench(ctx, cfg, dir)
		if err != nil {
			return err
		}
		rep.Search = sr
		if len(sr) > 0 && sr[0].FTS5 == "" {
			// FTS5 was compiled in: mattn/go-sqlite3 has it only with the build tag.
			rep.Command = strings.Replace(rep.Command, "go run ./bench", "go run -tags sqlite_fts5 ./bench", 1)
		}
	case cfg.serve:
		sr, err := runServe(ctx, cfg, dir)
		if err != nil {
			return err
		}
		rep.Serve = sr
		if !cfg.jsonOut {
			renderServe(cfg.out, sr)
		}
	case cfg.writers > 0:
		wr, err := runWriters(ctx, cfg, dir)
		if err != nil {
			return err
		}
		rep.Writers = wr
	case cfg.postgres != "":
		pr, err := runPostgres(ctx, cfg)
		if err != nil {
			return err
		}
		rep.Postgres = pr
	default:
		for _, n := range cfg.sizes {
			sr, err := runSize(ctx, cfg, dir, n)
			if err != nil {
				return fmt.Errorf("%d claims: %w", n, err)
			}
			rep.Sizes = append(rep.Sizes, *sr)
			if !cfg.jsonOut {
				fmt.Fprintln(cfg.out, renderSize(sr))
			}
		}
	}
	if cfg.jsonOut {
		enc := json.NewEncoder(cfg.out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if rep.Writers != nil {
		fmt.Fprintln(cfg.out, renderWriters(rep.Writers))
	} else if rep.Postgres != nil {
		fmt.Fprintln(cfg.out, renderPostgres(rep.Postgres))
	}
	if cfg.writeDoc != "" {
		if err := writeDoc(cfg.writeDoc, rep); err != nil {
			return err
		}
	}
	// The figures are printed (and written) either way, so that a failed check can be read
	// beside them; the exit status says it failed, for CI.
	if failed := failedChecks(rep); len(failed) > 0 {
		return fmt.Errorf("%d check(s) failed: %s", len(failed), strings.Join(failed, "; "))
	}
	return nil
}

// failedChecks lists the correctness checks in rep that failed: an acknowledged claim not
// found afterwards, a key with other than one live claim, a write another process did not
// see. (The sizes' checks, result counts and the dense DAG's impact set, fail the run where
// they are made.)
func failedChecks(rep *report) []string {
	var out []string
	if w := rep.Writers; w != nil && !w.Durable {
		out = append(out, fmt.Sprintf("writers: not every one of the %d acknowledged claims was found after reopening", w.Acknowledged))
	}
	if s := rep.Serve; s != nil {
		for _, l := range s.Writes {
			if !l.Durable {
				out = append(out, fmt.Sprintf("serve, %s: not every one of the %d acknowledged claims was found", l.Path, l.Acknowledged))
			}
		}
	}
	for _, s := range rep.Search {
		for _, e := range s.Engines {
			if e.NonLive > 0 && !e.Unfiltered {
				out = append(out, fmt.Sprintf("search, %d claims: %s returned %d rows that are not live", s.Claims, e.Name, e.NonLive))
			}
		}
	}
	if p := rep.Postgres; p != nil {
		if v := p.Visibility; v != nil && v.Missed > 0 {
			out = append(out, fmt.Sprintf("postgres: %d of %d writes not seen by the other process within 5 s", v.Missed, v.Writes))
		}
		for _, w := range p.Writers {
			if w.Lost > 0 {
				out = append(out, fmt.Sprintf("postgres writers, %s: %d acknowledged claims lost", w.Store, w.Lost))
			}
			if !w.OneLivePerKey {
				out = append(out, fmt.Sprintf("postgres writers, %s: a key without exactly one live claim", w.Store))
			}
		}
	}
	return out
}

// command is the command line for the report, with any password in a DSN hidden.
func command(args []string) string {
	out := []string{"go run ./bench"}
	for _, a := range args {
		out = append(out, redactDSN(a))
	}
	return strings.Join(out, " ")
}

func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				_, v, _ := strings.Cut(l, ":")
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s/%s, %d cores (%s), %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpu, runtime.Version())
}

// timeOp runs op k times and returns seconds per op.
func timeOp(k int, op func() error) (float64, error) {
	start := time.Now()
	for range k {
		if err := op(); err != nil {
			return 0, err
		}
	}
	return time.Since(start).Seconds() / float64(k), nil
}

func runSize(ctx context.Context, cfg *config, dir string, n int) (*sizeResult, error) {
	res := &sizeResult{Claims: n}
	on := cfg.backends
	if on[colMemory] && cfg.maxMemoryClaims > 0 && n > cfg.maxMemoryClaims {
		on[colMemory] = false
		res.NotMeasured = map[string]string{"mql_memory": fmt.Sprintf(
			"not measured: the memory store holds every record in the heap, ~%.1f GiB at this size (a process with it alone peaked at 194.5 MiB at 100k claims); -max-memory-claims raises the limit",
			float64(n)*memoryBytesPerClaim/(1<<30))}
	}
	for i, name := range []string{"mql_memory", "mql_bbolt", "sqlite"} {
		if !on[i] && res.NotMeasured[name] == "" {
			if res.NotMeasured == nil {
				res.NotMeasured = map[string]string{}
			}
			res.NotMeasured[name] = "not measured: left out by -backends"
		}
	}
	w := genWorkload(n, cfg.hubs, cfg.seed)
	w.addDAG(cfg.dag, cfg.seed)
	sub := filepath.Join(dir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return nil, err
	}
	boltPath, sqlPath := filepath.Join(sub, "mql.db"), filepath.Join(sub, "peer.sqlite")
	if cfg.reuse {
		return reuseSize(ctx, cfg, res, w, boltPath, sqlPath)
	}
	// A folder kept by an earlier run (-keep) starts again: each store is built new.
	for _, f := range []string{boltPath, sqlPath, sqlPath + "-wal", sqlPath + "-shm", filepath.Join(sub, "export.nq"), filepath.Join(sub, "imported.db")} {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
	}
	// A disabled engine stays a nil interface: the loops below skip it and its figures stay
	// empty, which the table shows as "—".
	engines, err := openEngines(ctx, on, boltPath, sqlPath, true)
	if err != nil {
		return nil, err
	}
	names := backendNames[:]
	// Progress on stderr: the time since this size began, and this process's resident set
	// now and at its peak.
	began := time.Now()
	logf := func(format string, args ...any) {
		if !cfg.jsonOut {
			fmt.Fprintf(os.Stderr, "[%d] %s +%s rss %d MiB (peak %d MiB): "+format+"\n", append([]any{n, time.Now().UTC().Format("15:04:05"),
				time.Since(began).Round(time.Second), procStatus("VmRSS:") >> 20, procStatus("VmHWM:") >> 20}, args...)...)
		}
	}

	// Bulk ingest, interleaved batch by batch. Each batch is one run.
	logf("bulk ingest: %d batches", w.batches())
	ingest, err := ingestBatches(w, engines, names, logf)
	if err != nil {
		return nil, err
	}
	res.Rows = append(res.Rows, rateRow("bulk ingest (claims/s, batches of 1,000)", ingest))

	dagTimes, err := loadRestTimed(w, engines, names, logf)
	if err != nil {
		return nil, err
	}
	if len(w.dag) > 0 {
		res.Rows = append(res.Rows, timeRow(fmt.Sprintf("a Derive of the dense DAG, each its own transaction (median of %d, built interleaved; SQLite synchronous=NORMAL)", len(w.dag)), dagTimes))
	}
	if err := checkDAG(w, engines, names); err != nil {
		return nil, err
	}

	// Single-claim transactions: runs of 50, interleaved.
	logf("single-claim transactions")
	singles := make([][]float64, 3)
	seq := 0
	for range cfg.runs {
		for i, e := range engines {
			if e == nil {
				continue
			}
			const k = 50
			start := time.Now()
			for j := range k {
				c := claimOp{Subject: fmt.Sprintf("W%d", seq), Predicate: "seats", Num: float64(j), By: agents[j%3], Source: fmt.Sprintf("src:w%d", seq)}
				seq++
				if err := e.single(c); err != nil {
					return nil, fmt.Errorf("%s single: %w", names[i], err)
				}
			}
			singles[i] = append(singles[i], k/time.Since(start).Seconds())
		}
	}
	res.Rows = append(res.Rows, rateRow("single-claim transactions (claims/s)", singles))

	// The same, and one Derive each its own transaction, against SQLite with
	// synchronous=FULL: like bbolt, it syncs every commit to disk before returning.
	if on[colSQLite] && len(w.dagOthers) > 0 {
		full, err := openSQLiteSync(sqlPath, "FULL")
		if err != nil {
			return nil, err
		}
		fullEngines := slices.Clone(engines)
		fullEngines[colSQLite] = full
		logf("single-claim transactions and derives, SQLite synchronous=FULL")
		fsingles := make([][]float64, 3)
		derives := make([][]float64, 3)
		dr := rand.New(rand.NewPCG(cfg.seed, 0x64657276))
		for run := range cfg.runs {
			for i, e := range fullEngines {
				if e == nil {
					continue
				}
				const k = 50
				start := time.Now()
				for j := range k {
					c := claimOp{Subject: fmt.Sprintf("F%d", seq), Predicate: "seats", Num: float64(j), By: agents[j%3], Source: fmt.Sprintf("src:f%d", seq)}
					seq++
					if err := e.single(c); err != nil {
						return nil, fmt.Errorf("%s single: %w", names[i], err)
					}
				}
				fsingles[i] = append(fsingles[i], k/time.Since(start).Seconds())
				start = time.Now()
				for j := range k {
					d := deriveOp{Name: fmt.Sprintf("n%d:%d:%d", run, i, j), Inputs: []string{w.dagOthers[dr.IntN(len(w.dagOthers))]}}
					if o := w.dagOthers[dr.IntN(len(w.dagOthers))]; o != d.Inputs[0] {
						d.Inputs = append(d.Inputs, o)
					}
					if err := e.derive(d); err != nil {
						return nil, fmt.Errorf("%s derive: %w", names[i], err)
					}
				}
				derives[i] = append(derives[i], time.Since(start).Seconds()/k)
			}
		}
		if err := full.close(); err != nil {
			return nil, err
		}
		r := rateRow("single-claim transactions, SQLite synchronous=FULL (claims/s)", fsingles)
		r.Note = "mql columns: the same measurement, interleaved with it"
		res.Rows = append(res.Rows, r)
		r = timeRow("one Derive from two DAG artifacts, its own transaction, SQLite synchronous=FULL", derives)
		r.Note = "inputs outside the DAG root's impact set, which stays as checked"
		res.Rows = append(res.Rows, r)
	}

	if err := measureReads(ctx, cfg, on, res, w, engines, boltPath, sqlPath, logf); err != nil {
		return nil, err
	}

	// mql export, import and check, in child processes.
	if on[colBBolt] && cfg.importCheck {
		var sqlIngest *stat
		if on[colSQLite] {
			sqlIngest = summarize(ingest[colSQLite], "claims/s")
		}
		ic, err := importCheck(cfg, n, sub, boltPath, sqlPath, on, sqlIngest, logf)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, ic...)
	}
	logf("done")
	if !cfg.keep {
		os.RemoveAll(sub)
	}
	return res, nil
}

// openEngines opens the engines of the columns on, indexed by column (nil where off): new
// stores, given the workload's principals and SQLite's schema, or (fresh false) the stores
// there, as they are.
func openEngines(ctx context.Context, on [3]bool, boltPath, sqlPath string, fresh bool) ([]engine, error) {
	engines := make([]engine, 3)
	for i, path := range []string{"memory:", boltPath} {
		if !on[i] {
			continue
		}
		e, err := openMQL(ctx, path)
		if err != nil {
			return nil, err
		}
		if fresh {
			if err := e.setup(); err != nil {
				return nil, err
			}
		}
		engines[i] = e
	}
	if on[colSQLite] {
		e, err := openSQLite(sqlPath, fresh)
		if err != nil {
			return nil, err
		}
		engines[colSQLite] = e
	}
	return engines, nil
}

// reuseSize measures the reads of the stores under the size's folder that a run with -keep
// left: what runSize measures after its writes, on stores it does not build.
func reuseSize(ctx context.Context, cfg *config, res *sizeResult, w *workload, boltPath, sqlPath string) (*sizeResult, error) {
	if cfg.backends[colMemory] {
		return nil, fmt.Errorf("-reuse: the memory store keeps nothing to reuse; leave memory out of -backends")
	}
	for _, p := range []string{boltPath, sqlPath} {
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("-reuse: %w (a run with -keep -dir DIR and the same -sizes leaves it)", err)
		}
	}
	engines, err := openEngines(ctx, cfg.backends, boltPath, sqlPath, false)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	logf := func(format string, args ...any) {
		if !cfg.jsonOut {
			fmt.Fprintf(os.Stderr, "[%d] %s +%s: "+format+"\n", append([]any{res.Claims, time.Now().UTC().Format("15:04:05"), time.Since(began).Round(time.Second)}, args...)...)
		}
	}
	if err := checkDAG(w, engines, backendNames[:]); err != nil {
		return nil, fmt.Errorf("-reuse: the kept stores do not hold this workload (same -sizes, -hubs, -dag?): %w", err)
	}
	if err := measureReads(ctx, cfg, cfg.backends, res, w, engines, boltPath, sqlPath, logf); err != nil {
		return nil, err
	}
	logf("done")
	return res, nil
}

// measureReads adds the rows of the reads, opens, RSS, file sizes and cold first reads of the
// stores, interleaved; it closes the engines.
func measureReads(ctx context.Context, cfg *config, on [3]bool, res *sizeResult, w *workload, engines []engine, boltPath, sqlPath string, logf func(string, ...any)) error {
	names := backendNames[:]
	logf("reads")
	reads := readOps(w)
	times, err := timeReads(cfg.runs, reads, engines, names)
	if err != nil {
		return err
	}
	for oi, op := range reads {
		res.Rows = append(res.Rows, timeRow(op.name, times[oi]))
	}

	// Open time, file size, RSS: in child processes, on the closed stores.
	logf("open, size, RSS")
	for _, e := range engines {
		if e == nil {
			continue
		}
		if err := e.close(); err != nil {
			return err
		}
	}
	var mqlRSS uint64
	{
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mqlRSS = peakRSS()
	}
	// The children below each load a whole store; at 1M claims this process's freed heap
	// and theirs would not fit in memory together.
	debug.FreeOSMemory()
	opens := make([][]float64, 3)
	rss := make([][]float64, 3)
	for range cfg.runs {
		for i, kind := range []string{"", "bbolt", "sqlite"} {
			if kind == "" || !on[i] {
				continue
			}
			path := boltPath
			if kind == "sqlite" {
				path = sqlPath
			}
			o, r, err := spawnOpen(kind, path)
			if err != nil {
				return err
			}
			opens[i] = append(opens[i], o)
			rss[i] = append(rss[i], r)
		}
	}
	res.Rows = append(res.Rows, timeRow("open an existing store (+ first live lookup)", opens))
	rr := timeRow("peak RSS of a process that opens it and reads", rss)
	if on[colMemory] {
		rr.Memory = &stat{Median: float64(mqlRSS), Min: float64(mqlRSS), Max: float64(mqlRSS), N: 1, Unit: "bytes"}
		rr.Note = "memory column: the whole benchmark process (all three stores loaded)"
		if !on[colBBolt] || !on[colSQLite] {
			rr.Note = "memory column: the whole benchmark process (all measured stores loaded)"
		}
	}
	for _, s := range []*stat{rr.BBolt, rr.SQLite} {
		if s != nil {
			s.Unit = "bytes"
		}
	}
	res.Rows = append(res.Rows, rr)
	size := row{Op: "file size"}
	if on[colBBolt] {
		fb := fileSize(boltPath)
		size.BBolt = &stat{Median: fb, Min: fb, Max: fb, N: 1, Unit: "bytes"}
	}
	if on[colSQLite] {
		fs := fileSize(sqlPath) + fileSize(sqlPath+"-wal")
		size.SQLite = &stat{Median: fs, Min: fs, Max: fs, N: 1, Unit: "bytes"}
	}
	if size.BBolt != nil && size.SQLite != nil {
		size.Ratio = size.BBolt.Median / size.SQLite.Median
	}
	res.Rows = append(res.Rows, size)

	// The reads again, each the first of a new process that opens the store.
	cold, err := coldReads(cfg, reads, on, [3]string{"", "bbolt", "sqlite"}, [3]string{"", boltPath, sqlPath}, logf)
	if err != nil {
		return err
	}
	res.Rows = append(res.Rows, cold...)

	return nil
}

// ingestBatches writes the workload's bulk batches into every engine, interleaved batch by
// batch, and returns each engine's rate per batch (claims/s). It logs its progress every tenth
// of the batches (of 100 or more).
func ingestBatches(w *workload, engines []engine, names []string, logf func(string, ...any)) ([][]float64, error) {
	rates := make([][]float64, len(engines))
	for bi := range w.batches() {
		if nb := w.batches(); nb >= 100 && bi > 0 && bi%(nb/10) == 0 {
			var med []string
			for i, r := range rates {
				if len(r) > 0 {
					med = append(med, fmt.Sprintf("%s %.0f/s", names[i], median(r[len(r)-nb/10:])))
				}
			}
			logf("bulk ingest: %d of %d batches; the last tenth's median: %s", bi, nb, strings.Join(med, ", "))
		}
		b := w.batch(bi)
		for i, e := range engines {
			if e == nil {
				continue
			}
			start := time.Now()
			if err := e.batch(b); err != nil {
				return nil, fmt.Errorf("%s batch: %w", names[i], err)
			}
			rates[i] = append(rates[i], float64(len(b))/time.Since(start).Seconds())
		}
	}
	return rates, nil
}

// loadRest writes the rest of the workload into every engine: revocations, revisions, the
// derivation DAG.
func loadRest(w *workload, engines []engine, names []string, logf func(string, ...any)) error {
	_, err := loadRestTimed(w, engines, names, logf)
	return err
}

// loadRestTimed is loadRest, returning each engine's time for each derivation of the dense DAG.
func loadRestTimed(w *workload, engines []engine, names []string, logf func(string, ...any)) ([][]float64, error) {
	dagTimes := make([][]float64, len(engines))
	logf("revocations (%d), revisions (%d), hub and DAG claims", len(w.revoke), len(w.singles))
	for _, k := range w.revoke {
		for i, e := range engines {
			if e == nil {
				continue
			}
			if err := e.revoke(k); err != nil {
				return nil, fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	for _, c := range append(append(slices.Clone(w.singles), w.hubClaims...), w.dagClaims...) {
		for i, e := range engines {
			if e == nil {
				continue
			}
			if err := e.single(c); err != nil {
				return nil, fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	for _, h := range w.hubs {
		logf("impact hub of %d dependents", h)
		for _, lvl := range w.levels[h] {
			for i, e := range engines {
				if e == nil {
					continue
				}
				if err := e.deriveLevel(lvl); err != nil {
					return nil, fmt.Errorf("%s derive: %w", names[i], err)
				}
			}
		}
	}
	// The dense DAG, one derivation at a time: each may rest on the one before.
	logf("dense DAG: %d derivations", len(w.dag))
	for _, d := range w.dag {
		for i, e := range engines {
			if e == nil {
				continue
			}
			t := time.Now()
			if err := e.derive(d); err != nil {
				return nil, fmt.Errorf("%s derive %s: %w", names[i], d.Name, err)
			}
			dagTimes[i] = append(dagTimes[i], time.Since(t).Seconds())
		}
	}
	return dagTimes, nil
}

// checkDAG checks that every engine finds the same impact set for the dense DAG's root, the
// one the workload worked out.
func checkDAG(w *workload, engines []engine, names []string) error {
	if len(w.dag) == 0 {
		return nil // -dag 0: no DAG to check
	}
	for i, e := range engines {
		if e == nil {
			continue
		}
		got, err := e.impactNames(w.dagRoot)
		if err != nil {
			return fmt.Errorf("%s impact %s: %w", names[i], w.dagRoot, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, w.dagImpact) {
			return fmt.Errorf("%s: impact of %s over the dense DAG: %d artifacts, want the workload's %d", names[i], w.dagRoot, len(got), len(w.dagImpact))
		}
	}
	return nil
}

type readOp struct {
	name string
	k    int // calls per run
	spec readSpec
	cold bool // also timed as the first read of a fresh process
}

// readOps is the read set every comparison times.
func readOps(w *workload) []readOp {
	reads := []readOp{
		{"live lookup (one Subject.predicate)", 2000, readSpec{Op: "live", Key: w.liveKey, Want: 1}, true},
		{"find: soc2 and EU, cheapest 10", 5, readSpec{Op: "find", Want: -1}, true},
		{"why (5 superseded versions)", 500, readSpec{Op: "why", Key: w.whyKey, Want: -1}, true},
		{"context for 12 subjects", 500, readSpec{Op: "context", Subjects: w.ctxSubjs, Want: 12}, true},
		{"history (20 versions)", 500, readSpec{Op: "history", Key: w.histKey, Want: 20}, true},
	}
	for _, h := range w.hubs {
		k := max(2, 20000/h)
		reads = append(reads, readOp{fmt.Sprintf("impact (%d dependents)", h), k, readSpec{Op: "impact", Key: fmt.Sprintf("H%d.score@1", h), Want: h}, true})
	}
	if len(w.dag) > 0 {
		reads = append(reads, readOp{fmt.Sprintf("impact over a dense DAG (%d of %d artifacts, two random inputs each)", len(w.dagImpact), len(w.dag)), 10,
			readSpec{Op: "impact", Key: w.dagRoot, Want: len(w.dagImpact)}, true})
		reads = append(reads, readOp{"the same, SQLite's CTE keeping no depths (a set of ids; mql as above)", 10,
			readSpec{Op: "impact-set", Key: w.dagRoot, Want: len(w.dagImpact)}, false})
	}
	return reads
}

// timeReads times every read on every engine, interleaved run by run, engine by engine, and
// returns seconds per call: [read][engine][run].
func timeReads(runs int, reads []readOp, engines []engine, names []string) ([][][]float64, error) {
	times := make([][][]float64, len(reads))
	for i := range times {
		times[i] = make([][]float64, len(engines))
	}
	for range runs {
		for oi, op := range reads {
			for ei, e := range engines {
				if e == nil {
					continue
				}
				var got int
				t, err := timeOp(op.k, func() error {
					var err error
					got, err = op.spec.run(e)
					return err
				})
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", names[ei], op.name, err)
				}
				if op.spec.Want >= 0 && got != op.spec.Want {
					return nil, fmt.Errorf("%s %s: %d results, want %d", names[ei], op.name, got, op.spec.Want)
				}
				times[oi][ei] = append(times[oi][ei], t)
			}
		}
	}
	return times, nil
}

func median(xs []float64) float64 {
	if s := summarize(xs, ""); s != nil {
		return s.Median
	}
	return 0
}

func rateRow(name string, xs [][]float64) row {
	r := row{Op: name, Memory: summarize(xs[0], "claims/s"), BBolt: summarize(xs[1], "claims/s"), SQLite: summarize(xs[2], "claims/s")}
	if r.BBolt != nil && r.SQLite != nil {
		r.Ratio = r.BBolt.Median / r.SQLite.Median
	}
	return r
}

func timeRow(name string, xs [][]float64) row {
	r := row{Op: name, Memory: summarize(xs[0], "s"), BBolt: summarize(xs[1], "s"), SQLite: summarize(xs[2], "s")}
	if r.BBolt != nil && r.SQLite != nil {
		r.Ratio = r.BBolt.Median / r.SQLite.Median
	}
	return r
}

func fileSize(p string) float64 {
	st, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return float64(st.Size())
}

// peakRSS is this process's peak resident set (VmHWM), in bytes.
func peakRSS() uint64 { return procStatus("VmHWM:") }

// procStatus is a figure in kB of /proc/self/status (VmHWM:, VmRSS:), in bytes.
func procStatus(field string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, field) {
			f := strings.Fields(l)
			if len(f) >= 2 {
				kb, _ := strconv.ParseUint(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

type childResult struct {
	OpenSeconds float64 `json:"open_s"`
	ReadSeconds float64 `json:"read_s,omitempty"` // -child-read: the read after the open
	PeakRSS     uint64  `json:"peak_rss"`
}

// spawnOpen runs this program again to open the store at path (a file, or a PostgreSQL DSN
// for kinds postgres and postgres-sql), so that open time and RSS are those of a fresh process.
func spawnOpen(kind, path string) (float64, float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(exe, "-child-open", kind, path)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("opening %s in a child process: %w", redactDSN(path), err)
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, 0, err
	}
	return r.OpenSeconds, float64(r.PeakRSS), nil
}

func childOpen(kind, path string) {
	ctx := context.Background()
	start := time.Now()
	var err error
	switch kind {
	case "bbolt", "postgres":
		var e *mqlEngine
		if e, err = openMQL(ctx, path); err == nil {
			_, err = e.live("V2.region")
			defer e.close()
		}
	case "sqlite", "postgres-sql":
		var e *sqlEngine
		if kind == "sqlite" {
			e, err = openSQLite(path, false)
		} else {
			e, err = openPostgresSQL(path, false)
		}
		if err == nil {
			_, err = e.live("V2.region")
			defer e.close()
		}
	default:
		err = fmt.Errorf("unknown store kind %q", kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(childResult{OpenSeconds: time.Since(start).Seconds(), PeakRSS: peakRSS()})
}

// ---- concurrent writers ------------------------------------------------------------------------

type writerResult struct {
	Writers      int     `json:"writers"`
	TargetRate   int     `json:"target_rate"`
	Seconds      float64 `json:"seconds"`
	Acknowledged int     `json:"acknowledged"`
	Errors       int     `json:"errors"`
	Throughput   float64 `json:"throughput"`
	P50          float64 `json:"p50_s"`
	P99          float64 `json:"p99_s"`
	Max          float64 `json:"max_s"`
	Transactions int64   `json:"transactions_after_reopen"`
	// TransactionsBefore is the store's head before the writers started: 0 but for the
	// setup on a new store, the existing store's size with -writers-store.
	TransactionsBefore int64  `json:"transactions_before"`
	Store              string `json:"store"`
	Durable            bool   `json:"all_acknowledged_found_after_reopen"`
}

// runWriters drives -writers goroutines, each asserting single claims on a fixed schedule (rate
// ÷ writers per second), on a bbolt store. Latency counts from the scheduled time, so a stall
// shows up as latency rather than as fewer requests. Afterwards the store is reopened and every
// acknowledged claim must be there.
func runWriters(ctx context.Context, cfg *config, dir string) (*writerResult, error) {
	path := cfg.writersStore
	if path == "" {
		path = filepath.Join(dir, "writers.db")
	}
	e, err := openMQL(ctx, path)
	if err != nil {
		return nil, err
	}
	if cfg.writersStore == "" {
		if err := e.setup(); err != nil {
			return nil, err
		}
	}
	head0, _ := e.db.Head(ctx)
	interval := time.Duration(float64(time.Second) * float64(cfg.writers) / float64(cfg.rate))
	var mu sync.Mutex
	var lats []float64
	acked := map[string]bool{}
	errs := 0
	start := time.Now().Add(10 * time.Millisecond)
	end := start.Add(cfg.duration)
	var wg sync.WaitGroup
	for wi := range cfg.writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := time.Duration(wi) * interval / time.Duration(cfg.writers)
			for i := 0; ; i++ {
				at := start.Add(offset + time.Duration(i)*interval)
				if at.After(end) {
					return
				}
				time.Sleep(time.Until(at))
				subj := fmt.Sprintf("W%d_%d", wi, i)
				_, err := e.db.Assert(ctx, mql.AssertSpec{Subject: subj, Predicate: "seats", Value: mql.Number(float64(i)), By: agents[wi%3]})
				lat := time.Since(at).Seconds()
				mu.Lock()
				if err != nil {
					errs++
				} else {
					lats = append(lats, lat)
					acked[subj] = true
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	if err := e.close(); err != nil {
		return nil, err
	}
	r := &writerResult{Writers: cfg.writers, TargetRate: cfg.rate, Seconds: elapsed, Acknowledged: len(lats), Errors: errs,
		Throughput: float64(len(lats)) / elapsed, TransactionsBefore: head0, Store: "a new store"}
	if cfg.writersStore != "" {
		r.Store = "an existing store"
	}
	slices.Sort(lats)
	if len(lats) > 0 {
		r.P50, r.P99, r.Max = lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*99/100)], lats[len(lats)-1]
	}
	e, err = openMQL(ctx, path)
	if err != nil {
		return nil, err
	}
	defer e.close()
	r.Transactions, _ = e.db.Head(ctx)
	found := 0
	for subj := range acked {
		if c, err := e.db.Live(ctx, subj+".seats"); err == nil && len(c) == 1 {
			found++
		}
	}
	r.Durable = found == len(acked)
	return r, nil
}
