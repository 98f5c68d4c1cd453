// Command bench compares mql (memory and bbolt) with the relational peer an agent builder would
// pick instead — the same model as SQLite tables — on one seeded workload, and writes
// docs/BENCHMARKS.md. See docs/BENCHMARKS.md for what it measures and how to read it.
//
//	go run ./bench -sizes 10000,100000 -runs 5 -write-doc
//	go run ./bench -writers 12 -rate 1200 -duration 30s
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
)

type config struct {
	sizes    []int
	hubs     []int
	runs     int
	seed     uint64
	dir      string
	jsonOut  bool
	writeDoc string
	writers  int
	rate     int
	duration time.Duration
	out      io.Writer
}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "-child-open" {
		childOpen(os.Args[2], os.Args[3])
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
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
	runs := fs.Int("runs", 5, "runs per measurement (the median is reported, with min–max)")
	seed := fs.Uint64("seed", 1, "workload seed")
	dir := fs.String("dir", "", "where to put the stores (a temporary folder if empty)")
	js := fs.Bool("json", false, "print JSON instead of tables")
	doc := fs.String("write-doc", "", "write the results into this Markdown file (e.g. docs/BENCHMARKS.md)")
	writers := fs.Int("writers", 0, "run only the concurrent-writers test with this many writers (bbolt)")
	rate := fs.Int("rate", 1200, "concurrent writers: total assertions per second")
	dur := fs.Duration("duration", 30*time.Second, "concurrent writers: how long")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	cfg := &config{runs: max(*runs, 1), seed: *seed, dir: *dir, jsonOut: *js, writeDoc: *doc,
		writers: *writers, rate: *rate, duration: *dur, out: os.Stdout}
	var err error
	if cfg.sizes, err = ints(*sizes); err != nil {
		return nil, err
	}
	if cfg.hubs, err = ints(*hubs); err != nil {
		return nil, err
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
}

type report struct {
	Machine string        `json:"machine"`
	Command string        `json:"command"`
	Sizes   []sizeResult  `json:"sizes,omitempty"`
	Writers *writerResult `json:"writers,omitempty"`
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
	rep := &report{Machine: machine(), Command: "go run ./bench " + strings.Join(os.Args[1:], " ")}
	if cfg.writers > 0 {
		wr, err := runWriters(ctx, cfg, dir)
		if err != nil {
			return err
		}
		rep.Writers = wr
	} else {
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
	}
	if cfg.writeDoc != "" {
		return writeDoc(cfg.writeDoc, rep)
	}
	return nil
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
	w := genWorkload(n, cfg.hubs, cfg.seed)
	sub := filepath.Join(dir, fmt.Sprintf("n%d", n))
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return nil, err
	}
	boltPath, sqlPath := filepath.Join(sub, "mql.db"), filepath.Join(sub, "peer.sqlite")
	mem, err := openMQL(ctx, "memory:")
	if err != nil {
		return nil, err
	}
	bolt, err := openMQL(ctx, boltPath)
	if err != nil {
		return nil, err
	}
	peer, err := openSQLite(sqlPath, true)
	if err != nil {
		return nil, err
	}
	if err := mem.setup(); err != nil {
		return nil, err
	}
	if err := bolt.setup(); err != nil {
		return nil, err
	}
	names := []string{"memory", "bbolt", "sqlite"}
	engines := []engine{mem, bolt, peer}
	res := &sizeResult{Claims: n}
	logf := func(format string, args ...any) {
		if !cfg.jsonOut {
			fmt.Fprintf(os.Stderr, "[%d] "+format+"\n", append([]any{n}, args...)...)
		}
	}

	// Bulk ingest, interleaved batch by batch. Each batch is one run.
	logf("bulk ingest: %d batches", len(w.batches))
	ingest := make([][]float64, 3)
	boltHead0, _ := bolt.db.Head(ctx)
	for _, b := range w.batches {
		for i, e := range engines {
			start := time.Now()
			if err := e.batch(b); err != nil {
				return nil, fmt.Errorf("%s batch: %w", names[i], err)
			}
			ingest[i] = append(ingest[i], float64(len(b))/time.Since(start).Seconds())
		}
	}
	boltHead1, _ := bolt.db.Head(ctx)
	res.Rows = append(res.Rows, rateRow("bulk ingest (claims/s, batches of 1,000)", ingest))

	// The engine's ceiling: the same quads, tx by tx, straight into Cayley.
	logf("Cayley ceiling")
	var export bytes.Buffer
	if err := bolt.db.Export(ctx, &export); err != nil {
		return nil, err
	}
	txq, err := graphstore.TxQuadsForBenchmark(&export)
	if err != nil {
		return nil, err
	}
	batchQuads := txq[boltHead0:boltHead1]
	ceiling := make([][]float64, 3)
	for i, dsn := range []string{"memory:", filepath.Join(sub, "raw.db")} {
		raw, err := graphstore.OpenRawForBenchmark(ctx, dsn, graphstore.Options{})
		if err != nil {
			return nil, err
		}
		if err := raw.Apply(ctx, slices.Concat(txq[:boltHead0]...)); err != nil {
			return nil, err
		}
		for j, q := range batchQuads {
			start := time.Now()
			if err := raw.Apply(ctx, q); err != nil {
				return nil, err
			}
			ceiling[i] = append(ceiling[i], float64(len(w.batches[j]))/time.Since(start).Seconds())
		}
		raw.Close()
		os.Remove(filepath.Join(sub, "raw.db"))
	}
	cr := rateRow("Cayley ceiling: the same quads written directly (claims/s)", ceiling)
	cr.Note = "no SQLite equivalent"
	res.Rows = append(res.Rows, cr)
	over := row{Op: "mql ingest ÷ Cayley ceiling (target ≥ 0.8)", Note: "ratio of medians"}
	over.Memory = &stat{Median: median(ingest[0]) / median(ceiling[0]), Unit: "ratio"}
	over.BBolt = &stat{Median: median(ingest[1]) / median(ceiling[1]), Unit: "ratio"}
	res.Rows = append(res.Rows, over)
	export = bytes.Buffer{}
	txq, batchQuads = nil, nil

	// The rest of the workload: revocations, revisions, the derivation DAG.
	logf("revocations, revisions, DAG")
	for _, k := range w.revoke {
		for i, e := range engines {
			if err := e.revoke(k); err != nil {
				return nil, fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	for _, c := range append(slices.Clone(w.singles), w.hubClaims...) {
		for i, e := range engines {
			if err := e.single(c); err != nil {
				return nil, fmt.Errorf("%s: %w", names[i], err)
			}
		}
	}
	for _, h := range w.hubs {
		for _, lvl := range w.levels[h] {
			for i, e := range engines {
				if err := e.deriveLevel(lvl); err != nil {
					return nil, fmt.Errorf("%s derive: %w", names[i], err)
				}
			}
		}
	}

	// Single-claim transactions: runs of 50, interleaved.
	logf("single-claim transactions")
	singles := make([][]float64, 3)
	seq := 0
	for range cfg.runs {
		for i, e := range engines {
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

	// Reads, interleaved run by run, engine by engine.
	logf("reads")
	type readOp struct {
		name string
		k    int
		want int // expected result size, -1: not checked
		fn   func(e engine) (int, error)
	}
	reads := []readOp{
		{"live lookup (one Subject.predicate)", 2000, 1, func(e engine) (int, error) { return e.live(w.liveKey) }},
		{"find: soc2 and EU, cheapest 10", 5, -1, func(e engine) (int, error) { return e.find() }},
		{"why (5 superseded versions)", 500, -1, func(e engine) (int, error) { return e.why(w.whyKey) }},
		{"context for 12 subjects", 500, 12, func(e engine) (int, error) { return e.context(w.ctxSubjs) }},
		{"history (20 versions)", 500, 20, func(e engine) (int, error) { return e.history(w.histKey) }},
	}
	for _, h := range w.hubs {
		k := max(2, 20000/h)
		reads = append(reads, readOp{fmt.Sprintf("impact (%d dependents)", h), k, h, func(e engine) (int, error) { return e.impact(fmt.Sprintf("H%d.score@1", h)) }})
	}
	times := make([][][]float64, len(reads))
	for i := range times {
		times[i] = make([][]float64, 3)
	}
	for range cfg.runs {
		for oi, op := range reads {
			for ei, e := range engines {
				var got int
				t, err := timeOp(op.k, func() error {
					var err error
					got, err = op.fn(e)
					return err
				})
				if err != nil {
					return nil, fmt.Errorf("%s %s: %w", names[ei], op.name, err)
				}
				if op.want >= 0 && got != op.want {
					return nil, fmt.Errorf("%s %s: %d results, want %d", names[ei], op.name, got, op.want)
				}
				times[oi][ei] = append(times[oi][ei], t)
			}
		}
	}
	for oi, op := range reads {
		res.Rows = append(res.Rows, timeRow(op.name, times[oi]))
	}

	// Open time, file size, RSS: in child processes, on the closed stores.
	logf("open, size, RSS")
	for _, e := range engines {
		if err := e.close(); err != nil {
			return nil, err
		}
	}
	var mqlRSS uint64
	{
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		mqlRSS = peakRSS()
	}
	opens := make([][]float64, 3)
	rss := make([][]float64, 3)
	for range cfg.runs {
		for i, kind := range []string{"", "bbolt", "sqlite"} {
			if kind == "" {
				continue
			}
			path := boltPath
			if kind == "sqlite" {
				path = sqlPath
			}
			o, r, err := spawnOpen(kind, path)
			if err != nil {
				return nil, err
			}
			opens[i] = append(opens[i], o)
			rss[i] = append(rss[i], r)
		}
	}
	res.Rows = append(res.Rows, timeRow("open an existing store (+ first live lookup)", opens))
	rr := timeRow("peak RSS of a process that opens it and reads", rss)
	rr.Memory = &stat{Median: float64(mqlRSS), Min: float64(mqlRSS), Max: float64(mqlRSS), N: 1, Unit: "bytes"}
	rr.Note = "memory column: the whole benchmark process (all three stores loaded)"
	for _, s := range []*stat{rr.BBolt, rr.SQLite} {
		s.Unit = "bytes"
	}
	res.Rows = append(res.Rows, rr)
	fb, fs := fileSize(boltPath), fileSize(sqlPath)+fileSize(sqlPath+"-wal")
	res.Rows = append(res.Rows, row{Op: "file size", BBolt: &stat{Median: fb, Min: fb, Max: fb, N: 1, Unit: "bytes"},
		SQLite: &stat{Median: fs, Min: fs, Max: fs, N: 1, Unit: "bytes"}, Ratio: fb / fs})
	os.RemoveAll(sub)
	return res, nil
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
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
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
	PeakRSS     uint64  `json:"peak_rss"`
}

// spawnOpen runs this program again to open the store at path, so that open time and RSS are
// those of a fresh process.
func spawnOpen(kind, path string) (float64, float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(exe, "-child-open", kind, path)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("opening %s in a child process: %w", path, err)
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
	case "bbolt":
		var e *mqlEngine
		if e, err = openMQL(ctx, path); err == nil {
			_, err = e.live("V2.region")
			defer e.close()
		}
	case "sqlite":
		var e *sqliteEngine
		if e, err = openSQLite(path, false); err == nil {
			_, err = e.live("V2.region")
			defer e.close()
		}
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
	Durable      bool    `json:"all_acknowledged_found_after_reopen"`
}

// runWriters drives -writers goroutines, each asserting single claims on a fixed schedule (rate
// ÷ writers per second), on a bbolt store. Latency counts from the scheduled time, so a stall
// shows up as latency rather than as fewer requests. Afterwards the store is reopened and every
// acknowledged claim must be there.
func runWriters(ctx context.Context, cfg *config, dir string) (*writerResult, error) {
	path := filepath.Join(dir, "writers.db")
	e, err := openMQL(ctx, path)
	if err != nil {
		return nil, err
	}
	if err := e.setup(); err != nil {
		return nil, err
	}
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
		Throughput: float64(len(lats)) / elapsed}
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
