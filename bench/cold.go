package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/streammem"
)

// This file: the reads that are the first of a fresh process (cold pages), and mql export,
// import and check of a store, each in a child process of this program (-child-* modes).

// readSpec is one read of the read set, as a child process is given it (JSON on its command
// line): the operation, its arguments and the number of results it must return (-1: not
// checked).
type readSpec struct {
	Op       string   `json:"op"` // live, find, why, context, history, impact, impact-set
	Key      string   `json:"key,omitempty"`
	Subjects []string `json:"subjects,omitempty"`
	Want     int      `json:"want"`
}

func (s readSpec) run(e engine) (int, error) {
	switch s.Op {
	case "live":
		return e.live(s.Key)
	case "find":
		return e.find()
	case "why":
		return e.why(s.Key)
	case "context":
		return e.context(s.Subjects)
	case "history":
		return e.history(s.Key)
	case "impact":
		return e.impact(s.Key)
	case "impact-set":
		// SQLite's CTE without depths; mql has one impact.
		if q, ok := e.(*sqlEngine); ok {
			return q.impactSet(s.Key)
		}
		return e.impact(s.Key)
	}
	return 0, fmt.Errorf("unknown read %q", s.Op)
}

// runChild runs the child mode named by args[0], if it is one, and reports whether it did.
// main and the test binary's TestMain both start here, so that the test binary can stand in
// for the program.
func runChild(args []string) bool {
	if len(args) == 0 {
		return false
	}
	switch {
	case args[0] == "-child-open" && len(args) > 2:
		childOpen(args[1], args[2])
	case args[0] == "-child-watch":
		childWatch(args[1:])
	case args[0] == "-child-write":
		childWrite(args[1:])
	case args[0] == "-child-read" && len(args) > 3:
		childRead(args[1], args[2], args[3])
	case args[0] == "-child-export" && len(args) > 2:
		childExport(args[1], args[2])
	case args[0] == "-child-import" && len(args) > 2:
		streammem.Bound()
		childImport(args[1], args[2])
	case args[0] == "-child-check" && len(args) > 1:
		streammem.Bound()
		childCheck(args[1])
	case args[0] == "-child-sqlite-check" && len(args) > 1:
		childSQLiteCheck(args[1])
	default:
		return false
	}
	return true
}

func childFail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// openEngine opens an existing store of kind (bbolt, sqlite, postgres, postgres-sql) at path.
// For SQLite it also connects and reads the schema, which sql.Open leaves to the first
// statement: what mql's Open does before it returns.
func openEngine(ctx context.Context, kind, path string) (engine, error) {
	switch kind {
	case "bbolt", "postgres":
		return openMQL(ctx, path)
	case "sqlite":
		e, err := openSQLite(path, false)
		if err != nil {
			return nil, err
		}
		var n int
		if err := e.db.QueryRow(`SELECT count(*) FROM sqlite_master`).Scan(&n); err != nil {
			e.close()
			return nil, err
		}
		return e, nil
	case "postgres-sql":
		return openPostgresSQL(path, false)
	}
	return nil, fmt.Errorf("unknown store kind %q", kind)
}

// childRead opens the store and makes one read, its first: open and read timed apart.
func childRead(kind, path, specJSON string) {
	var s readSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		childFail(err)
	}
	start := time.Now()
	e, err := openEngine(context.Background(), kind, path)
	if err != nil {
		childFail(err)
	}
	open := time.Since(start).Seconds()
	start = time.Now()
	got, err := s.run(e)
	read := time.Since(start).Seconds()
	if err == nil && s.Want >= 0 && got != s.Want {
		err = fmt.Errorf("%s %s: %d results, want %d", kind, s.Op, got, s.Want)
	}
	if err != nil {
		childFail(err)
	}
	if err := e.close(); err != nil {
		childFail(err)
	}
	json.NewEncoder(os.Stdout).Encode(childResult{OpenSeconds: open, ReadSeconds: read, PeakRSS: peakRSS()})
}

// childJob is what an export, import or check child reports.
type childJob struct {
	Seconds float64 `json:"s"`
	Claims  int     `json:"claims,omitempty"`
	Bytes   int64   `json:"bytes,omitempty"`
	// PeakRSS is the child's own VmHWM, read by the child as it ends: its rusage's ru_maxrss
	// also counts the memory of the parent it was started from (Linux carries the
	// pre-exec address space's high-water mark into it; os/exec starts children with
	// vfork, sharing the parent's).
	PeakRSS float64 `json:"rss"`
}

func childExport(store, out string) {
	ctx := context.Background()
	start := time.Now()
	db, err := mql.Open(ctx, store, mql.Options{})
	if err != nil {
		childFail(err)
	}
	f, err := os.Create(out)
	if err != nil {
		childFail(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := db.Export(ctx, w); err != nil {
		childFail(err)
	}
	if err := w.Flush(); err != nil {
		childFail(err)
	}
	if err := f.Close(); err != nil {
		childFail(err)
	}
	if err := db.Close(); err != nil {
		childFail(err)
	}
	secs := time.Since(start).Seconds()
	st, err := os.Stat(out)
	if err != nil {
		childFail(err)
	}
	json.NewEncoder(os.Stdout).Encode(childJob{Seconds: secs, Bytes: st.Size(), PeakRSS: float64(peakRSS())})
}

// childImport is `mql import FILE NEWDB` through the library: mql.ImportStore.
func childImport(file, store string) {
	start := time.Now()
	f, err := os.Open(file)
	if err != nil {
		childFail(err)
	}
	defer f.Close()
	sum, err := mql.ImportStore(context.Background(), store, bufio.NewReaderSize(f, 1<<20), mql.Options{})
	if err != nil {
		childFail(err)
	}
	json.NewEncoder(os.Stdout).Encode(childJob{Seconds: time.Since(start).Seconds(), Claims: sum.Claims, PeakRSS: float64(peakRSS())})
}

// childCheck is `mql check DB` through the library: mql.CheckStore. A problem fails it.
func childCheck(store string) {
	start := time.Now()
	rep, err := mql.CheckStore(context.Background(), store, mql.Options{})
	if err != nil {
		childFail(err)
	}
	secs := time.Since(start).Seconds()
	if !rep.OK() {
		childFail(fmt.Errorf("mql check %s: %d problem(s) (%d omitted), the first: %+v", store, len(rep.Problems), rep.Omitted, rep.Problems[0]))
	}
	json.NewEncoder(os.Stdout).Encode(childJob{Seconds: secs, Claims: rep.Claims, PeakRSS: float64(peakRSS())})
}

// childSQLiteCheck is SQLite's own check of a whole database: PRAGMA integrity_check.
func childSQLiteCheck(path string) {
	start := time.Now()
	e, err := openSQLite(path, false)
	if err != nil {
		childFail(err)
	}
	var res string
	if err := e.db.QueryRow(`PRAGMA integrity_check`).Scan(&res); err != nil {
		childFail(err)
	}
	if res != "ok" {
		childFail(fmt.Errorf("PRAGMA integrity_check of %s: %s", path, res))
	}
	if err := e.close(); err != nil {
		childFail(err)
	}
	json.NewEncoder(os.Stdout).Encode(childJob{Seconds: time.Since(start).Seconds(), PeakRSS: float64(peakRSS())})
}

// spawnJob runs this program in a child mode and returns what it reported, its peak RSS
// included.
func spawnJob(args ...string) (childJob, error) {
	exe, err := os.Executable()
	if err != nil {
		return childJob{}, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return childJob{}, fmt.Errorf("%s in a child process: %w", args[0], err)
	}
	var j childJob
	if err := json.Unmarshal(out, &j); err != nil {
		return childJob{}, fmt.Errorf("%s in a child process: %w", args[0], err)
	}
	return j, nil
}

// spawnRead runs one read as the first of a fresh process and returns its open and read times.
func spawnRead(kind, path string, s readSpec) (open, read float64, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	spec, err := json.Marshal(s)
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.Command(exe, "-child-read", kind, path, string(spec))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, 0, fmt.Errorf("%s as a first read of %s in a child process: %w", s.Op, kind, err)
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, 0, err
	}
	return r.OpenSeconds, r.ReadSeconds, nil
}

// dropCaches writes the dirty pages out and drops the OS page cache (root only), so that the
// next process reads its store from the disk. It returns why not if it could not.
func dropCaches() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0)
}

// coldReads times each read of reads marked cold as the first read of a fresh process that
// opens the store (kinds[i] at paths[i] for each engine column i that is on), run by run, read
// by read, engine by engine, the OS page cache dropped before each process when cfg.dropCaches
// and this process may. It returns one row per read, then a row of the open times of those
// processes.
func coldReads(cfg *config, reads []readOp, on [3]bool, kinds, paths [3]string, logf func(string, ...any)) ([]row, error) {
	drop := cfg.dropCaches
	why := "-drop-caches=false"
	if drop {
		if err := dropCaches(); err != nil {
			drop, why = false, fmt.Sprintf("%v", err)
		}
	}
	note := "a new process each; OS page cache dropped before each"
	if !drop {
		note = "a new process each; OS page cache not dropped: " + why
	}
	var cold []readOp
	for _, op := range reads {
		if op.cold {
			cold = append(cold, op)
		}
	}
	times := make([][][]float64, len(cold))
	for i := range times {
		times[i] = make([][]float64, 3)
	}
	opens := make([][]float64, 3)
	for run := range cfg.runs {
		logf("first reads after open: run %d of %d, %d reads, OS page cache dropped: %t", run+1, cfg.runs, len(cold), drop)
		for oi, op := range cold {
			for i := range 3 {
				if !on[i] || kinds[i] == "" {
					continue
				}
				if drop {
					if err := dropCaches(); err != nil {
						return nil, fmt.Errorf("dropping the page cache: %w", err)
					}
				}
				o, r, err := spawnRead(kinds[i], paths[i], op.spec)
				if err != nil {
					return nil, err
				}
				times[oi][i] = append(times[oi][i], r)
				opens[i] = append(opens[i], o)
			}
		}
	}
	var rows []row
	for oi, op := range cold {
		r := timeRow("first read after open, cold: "+op.name, times[oi])
		r.Note = note
		rows = append(rows, r)
	}
	r := timeRow("open, in the processes of the cold first reads above", opens)
	r.Note = "the open alone"
	return append(rows, r), nil
}

// importCheck exports the bbolt store (its owner's export, in the store's folder), imports
// the export into a new store and checks the store, each as a child process, run by run with
// SQLite's PRAGMA integrity_check of its peer interleaved; sqlIngest is SQLite's bulk ingest,
// the rate the import's target is set against. The export is removed afterwards unless keep;
// the imported store always is.
func importCheck(cfg *config, n int, sub, boltPath, sqlPath string, on [3]bool, sqlIngest *stat, logf func(string, ...any)) ([]row, error) {
	export := sub + "/export.nq"
	imported := sub + "/imported.db"
	os.Remove(imported)
	logf("mql export")
	ex, err := spawnJob("-child-export", boltPath, export)
	if err != nil {
		return nil, err
	}
	logf("mql export: %.1f s, %.1f MiB, peak RSS %.1f MiB", ex.Seconds, float64(ex.Bytes)/(1<<20), ex.PeakRSS/(1<<20))
	if !cfg.keep {
		defer os.Remove(export)
	}
	one := func(v float64, unit string) *stat { return &stat{Median: v, Min: v, Max: v, N: 1, Unit: unit} }
	rows := []row{
		{Op: "mql export of the store (wall time)", BBolt: one(ex.Seconds, "s"),
			Note: fmt.Sprintf("once, a child process: the owner's N-Quads, %.1f MiB", float64(ex.Bytes)/(1<<20))},
		{Op: "peak RSS of mql export", BBolt: one(ex.PeakRSS, "bytes"), Note: "the child's VmHWM"},
	}
	var rate, wall, rss, chk, chkRSS [3][]float64
	for run := range cfg.runs {
		logf("mql import, mql check, PRAGMA integrity_check: run %d of %d", run+1, cfg.runs)
		im, err := spawnJob("-child-import", export, imported)
		if err != nil {
			return nil, err
		}
		logf("mql import: %.1f s, %d claims, peak RSS %.1f MiB", im.Seconds, im.Claims, im.PeakRSS/(1<<20))
		os.Remove(imported)
		c, err := spawnJob("-child-check", boltPath)
		if err != nil {
			return nil, err
		}
		logf("mql check: %.1f s, peak RSS %.1f MiB", c.Seconds, c.PeakRSS/(1<<20))
		if im.Claims != c.Claims {
			return nil, fmt.Errorf("mql import of the store's export made %d claims; mql check counts %d in the store", im.Claims, c.Claims)
		}
		rate[colBBolt] = append(rate[colBBolt], float64(im.Claims)/im.Seconds)
		wall[colBBolt] = append(wall[colBBolt], im.Seconds)
		rss[colBBolt] = append(rss[colBBolt], im.PeakRSS)
		chk[colBBolt] = append(chk[colBBolt], c.Seconds)
		chkRSS[colBBolt] = append(chkRSS[colBBolt], c.PeakRSS)
		if on[colSQLite] {
			s, err := spawnJob("-child-sqlite-check", sqlPath)
			if err != nil {
				return nil, err
			}
			logf("PRAGMA integrity_check: %.1f s, peak RSS %.1f MiB", s.Seconds, s.PeakRSS/(1<<20))
			chk[colSQLite] = append(chk[colSQLite], s.Seconds)
			chkRSS[colSQLite] = append(chkRSS[colSQLite], s.PeakRSS)
		}
	}
	r := rateRow("mql import of that export into a new store (claims/s)", rate[:])
	r.Note = "a child process, mql.ImportStore; target ≥ 0.5× SQLite's bulk ingest"
	if sqlIngest != nil {
		r.SQLite = sqlIngest
		r.Ratio = r.BBolt.Median / sqlIngest.Median
		r.Note += ", its column here (the bulk ingest row's)"
	}
	rows = append(rows, r)
	r = timeRow("mql import: wall time", wall[:])
	rows = append(rows, r)
	r = timeRow("peak RSS of mql import", rss[:])
	r.Note = "the child's VmHWM; target ≤ 256 MiB at 1M claims"
	r.BBolt.Unit = "bytes"
	rows = append(rows, r)
	r = timeRow("mql check of the store (wall time)", chk[:])
	r.Note = "a child process, mql.CheckStore; SQLite: PRAGMA integrity_check"
	rows = append(rows, r)
	r = timeRow("peak RSS of mql check", chkRSS[:])
	r.Note = "the child's VmHWM; SQLite: PRAGMA integrity_check; target ≤ 256 MiB at 1M claims"
	for _, s := range []*stat{r.BBolt, r.SQLite} {
		if s != nil {
			s.Unit = "bytes"
		}
	}
	rows = append(rows, r)
	return rows, nil
}
