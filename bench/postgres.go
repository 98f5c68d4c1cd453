package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The PostgreSQL comparison: mql opened on a PostgreSQL database (its buckets as tables,
// package graphstore/kv/pgkv) against the same model as plain SQL tables in another database
// of the same server. Both databases are created for the run and dropped after it.

// pgRow is one operation: mql on PostgreSQL, plain SQL on PostgreSQL.
type pgRow struct {
	Op  string `json:"op"`
	MQL *stat  `json:"mql_postgres,omitempty"`
	SQL *stat  `json:"sql_postgres,omitempty"`
	// Ratio is mql ÷ SQL (times: < 1 is faster than SQL; rates: > 1 is faster).
	Ratio float64 `json:"ratio_mql_sql,omitempty"`
	Note  string  `json:"note,omitempty"`
}

type pgResult struct {
	Claims     int              `json:"claims"`
	Rows       []pgRow          `json:"rows"`
	Visibility *pgVisibility    `json:"visibility,omitempty"`
	Writers    []pgWriterResult `json:"writers"`
}

// pgVisibility is how long after one process's write is acknowledged another process, which
// never polls (it only waits for its store's signal that transactions arrived, then reads),
// has it live: the cross-process latency of PostgreSQL's commit announcements.
type pgVisibility struct {
	Writes int     `json:"writes"`
	Missed int     `json:"missed"` // not seen within 5 s
	P50    float64 `json:"p50_s"`
	P99    float64 `json:"p99_s"`
	Max    float64 `json:"max_s"`
}

// pgWriterResult is a concurrent-writers run: Processes OS processes, each asserting
// PerProcess single claims one after another, as fast as the store acknowledges them.
type pgWriterResult struct {
	Store        string  `json:"store"`
	Processes    int     `json:"processes"`
	PerProcess   int     `json:"assertions_per_process"`
	Acknowledged int     `json:"acknowledged"`
	Errors       int     `json:"errors"`
	FirstError   string  `json:"first_error,omitempty"`
	Seconds      float64 `json:"seconds"`
	Throughput   float64 `json:"throughput"`
	P50          float64 `json:"p50_s"`
	P99          float64 `json:"p99_s"`
	Max          float64 `json:"max_s"`
	// Lost counts acknowledged claims missing afterwards (read by a fresh connection or
	// process); OneLivePerKey says every written key has exactly one live claim.
	Lost          int  `json:"lost"`
	OneLivePerKey bool `json:"one_live_claim_per_key"`
}

// pgWriterKeys is how many keys each writer process revises in turn: most assertions
// supersede a live claim, so the SQL side runs its live-ness UPDATE as well as the INSERT.
const pgWriterKeys = 16

func runPostgres(ctx context.Context, cfg *config) (*pgResult, error) {
	if len(cfg.sizes) != 1 {
		return nil, fmt.Errorf("-postgres measures one size; give -sizes a single number")
	}
	n := cfg.sizes[0]
	logf := func(format string, args ...any) {
		if !cfg.jsonOut {
			fmt.Fprintf(os.Stderr, "[postgres %d] "+format+"\n", append([]any{n}, args...)...)
		}
	}
	mqlDSN, sqlDSN, drop, err := createDatabases(cfg.postgres)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := drop(); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}()

	m, err := openMQL(ctx, mqlDSN)
	if err != nil {
		return nil, err
	}
	defer m.close()
	if err := m.setup(); err != nil {
		return nil, err
	}
	p, err := openPostgresSQL(sqlDSN, true)
	if err != nil {
		return nil, err
	}
	defer p.close()
	engines := []engine{m, p}
	names := []string{"mql postgres", "SQL postgres"}
	res := &pgResult{Claims: n}
	pgRowOf := func(name, unit string, xs [][]float64) pgRow {
		r := pgRow{Op: name, MQL: summarize(xs[0], unit), SQL: summarize(xs[1], unit)}
		if r.MQL != nil && r.SQL != nil {
			r.Ratio = r.MQL.Median / r.SQL.Median
		}
		return r
	}

	w := genWorkload(n, cfg.hubs, cfg.seed)
	logf("bulk ingest: %d batches", w.batches())
	ingest, err := ingestBatches(w, engines, names, logf)
	if err != nil {
		return nil, err
	}
	res.Rows = append(res.Rows, pgRowOf("bulk ingest (claims/s, batches of 1,000)", "claims/s", ingest))
	if err := loadRest(w, engines, names, logf); err != nil {
		return nil, err
	}
	// Fresh statistics for both planners, as autovacuum would give them some time after a
	// bulk load.
	for i, dsn := range []string{mqlDSN, sqlDSN} {
		if err := analyze(ctx, dsn); err != nil {
			return nil, fmt.Errorf("%s: ANALYZE: %w", names[i], err)
		}
	}

	logf("reads")
	reads := readOps(w)
	times, err := timeReads(cfg.runs, reads, engines, names)
	if err != nil {
		return nil, err
	}
	for oi, op := range reads {
		res.Rows = append(res.Rows, pgRowOf(op.name, "s", times[oi]))
	}

	logf("open, RSS")
	opens, rss := make([][]float64, 2), make([][]float64, 2)
	for range cfg.runs {
		for i, c := range []struct{ kind, dsn string }{{"postgres", mqlDSN}, {"postgres-sql", sqlDSN}} {
			o, r, err := spawnOpen(c.kind, c.dsn)
			if err != nil {
				return nil, err
			}
			opens[i] = append(opens[i], o)
			rss[i] = append(rss[i], r)
		}
	}
	res.Rows = append(res.Rows, pgRowOf("open an existing store (+ first live lookup)", "s", opens))
	res.Rows = append(res.Rows, pgRowOf("peak RSS of a process that opens it and reads", "bytes", rss))

	logf("visibility in another process: %d writes", pgVisibilityWrites)
	if res.Visibility, err = runVisibility(m, mqlDSN, pgVisibilityWrites); err != nil {
		return nil, err
	}

	for _, c := range []struct{ kind, dsn string }{{"postgres", mqlDSN}, {"postgres-sql", sqlDSN}} {
		logf("concurrent writers, %s: %d processes × %d assertions", c.kind, cfg.pgProcesses, cfg.pgAssertions)
		wr, err := runPGWriters(ctx, c.kind, c.dsn, cfg.pgProcesses, cfg.pgAssertions)
		if err != nil {
			return nil, err
		}
		res.Writers = append(res.Writers, *wr)
	}
	return res, nil
}

// createDatabases creates two databases of their own on the server for one run, and returns
// their DSNs and a function that drops them.
func createDatabases(server string) (mqlDSN, sqlDSN string, drop func() error, err error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", "", nil, fmt.Errorf("-postgres wants a URL like postgres://user@host:port/postgres?sslmode=disable, not %q", redactDSN(server))
	}
	db, err := sql.Open("postgres", server)
	if err == nil {
		err = db.Ping()
	}
	if err != nil {
		return "", "", nil, fmt.Errorf("connecting to %s: %w", redactDSN(server), err)
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	base := "mqlbench_" + hex.EncodeToString(rnd[:])
	names := []string{base + "_mql", base + "_sql"}
	drop = func() error {
		defer db.Close()
		var errs []string
		for _, name := range names {
			// WITH (FORCE): a writer process that failed may still hold a connection.
			if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
				errs = append(errs, fmt.Sprintf("dropping database %s: %v", name, err))
			}
		}
		if errs != nil {
			return fmt.Errorf("%s", strings.Join(errs, "; "))
		}
		return nil
	}
	dsns := make([]string, len(names))
	for i, name := range names {
		if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
			drop()
			return "", "", nil, fmt.Errorf("creating database %s: %w", name, err)
		}
		v := *u
		v.Path = "/" + name
		dsns[i] = v.String()
	}
	return dsns[0], dsns[1], drop, nil
}

func analyze(ctx context.Context, dsn string) error {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, "ANALYZE")
	return err
}

// redactDSN hides the password of a URL-shaped DSN, for reports and error messages.
func redactDSN(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		return u.Redacted()
	}
	return s
}

// childWriteResult is what a writer process reports.
type childWriteResult struct {
	Latencies  []float64 `json:"latencies"` // seconds, one per acknowledged assertion
	Acked      []int     `json:"acked"`     // acknowledged assertions per key
	Errors     int       `json:"errors"`
	FirstError string    `json:"first_error,omitempty"`
	Finished   int64     `json:"finished_unix_nano"`
}

func writerKey(proc, k int) string { return fmt.Sprintf("P%d_%d", proc, k) }

// runPGWriters starts procs writer processes (this program again), waits until every one has
// opened its store, lets them all go at once, and then checks with a fresh reader that every
// acknowledged claim is there.
func runPGWriters(ctx context.Context, kind, dsn string, procs, per int) (*pgWriterResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var children []child
	defer func() {
		for _, c := range children {
			c.stdin.Close()
			if c.cmd.ProcessState == nil {
				c.cmd.Process.Kill()
				c.cmd.Wait()
			}
		}
	}()
	for i := range procs {
		cmd := exec.Command(exe, "-child-write", kind, dsn, strconv.Itoa(i), strconv.Itoa(per))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("starting writer process: %w", err)
		}
		children = append(children, child{cmd, stdin, bufio.NewReader(stdout)})
	}
	for i, c := range children {
		if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
			return nil, fmt.Errorf("writer process %d did not open %s: %q %v", i, kind, line, err)
		}
	}
	start := time.Now()
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			return nil, err
		}
	}
	r := &pgWriterResult{Store: kind, Processes: procs, PerProcess: per}
	var lats []float64
	var finished int64
	acked := map[string]int{}
	for i, c := range children {
		var cr childWriteResult
		if err := json.NewDecoder(c.out).Decode(&cr); err != nil {
			return nil, fmt.Errorf("writer process %d: %w", i, err)
		}
		if err := c.cmd.Wait(); err != nil {
			return nil, fmt.Errorf("writer process %d: %w", i, err)
		}
		lats = append(lats, cr.Latencies...)
		r.Errors += cr.Errors
		if r.FirstError == "" {
			r.FirstError = cr.FirstError
		}
		finished = max(finished, cr.Finished)
		for k, a := range cr.Acked {
			acked[writerKey(i, k)] = a
		}
	}
	r.Seconds = time.Unix(0, finished).Sub(start).Seconds()
	r.Acknowledged = len(lats)
	r.Throughput = float64(len(lats)) / r.Seconds
	slices.Sort(lats)
	if len(lats) > 0 {
		r.P50, r.P99, r.Max = lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*99/100)], lats[len(lats)-1]
	}
	stored, live, err := storedVersions(ctx, kind, dsn, acked)
	if err != nil {
		return nil, fmt.Errorf("checking the %s writers' claims: %w", kind, err)
	}
	r.OneLivePerKey = true
	for key, a := range acked {
		r.Lost += max(0, a-stored[key])
		if a > 0 && live[key] != 1 {
			r.OneLivePerKey = false
		}
	}
	return r, nil
}

// storedVersions counts, for every key, the versions stored and the live claims, as a fresh
// reader sees them: mql reopened, or a new SQL connection.
func storedVersions(ctx context.Context, kind, dsn string, keys map[string]int) (stored, live map[string]int, err error) {
	stored, live = map[string]int{}, map[string]int{}
	if kind == "postgres" {
		e, err := openMQL(ctx, dsn)
		if err != nil {
			return nil, nil, err
		}
		defer e.close()
		for subj := range keys {
			h, err := e.db.History(ctx, subj+".seats")
			if err != nil {
				return nil, nil, err
			}
			c, err := e.db.Live(ctx, subj+".seats")
			if err != nil {
				return nil, nil, err
			}
			stored[subj], live[subj] = len(h.Claims), len(c)
		}
		return stored, live, nil
	}
	e, err := openPostgresSQL(dsn, false)
	if err != nil {
		return nil, nil, err
	}
	defer e.close()
	rows, err := e.db.QueryContext(ctx, `SELECT subject, count(*), sum(live) FROM claims WHERE subject LIKE 'P%' AND predicate = 'seats' GROUP BY subject`)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var subj string
		var n, l int
		if err := rows.Scan(&subj, &n, &l); err != nil {
			return nil, nil, err
		}
		stored[subj], live[subj] = n, l
	}
	return stored, live, rows.Err()
}

// childWrite is a writer process: -child-write KIND DSN PROC N. It opens the store, says
// "ready", waits for "go" on stdin, asserts N single claims one after another, revising its
// own keys in turn, and prints a childWriteResult.
func childWrite(args []string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "writer process:", err)
		os.Exit(1)
	}
	if len(args) != 4 {
		fail(fmt.Errorf("want KIND DSN PROC N, got %q", args))
	}
	kind, dsn := args[0], args[1]
	proc, err1 := strconv.Atoi(args[2])
	per, err2 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil {
		fail(fmt.Errorf("bad PROC or N in %q", args))
	}
	var e engine
	var err error
	switch kind {
	case "postgres":
		e, err = openMQL(context.Background(), dsn)
	case "postgres-sql":
		e, err = openPostgresSQL(dsn, false)
	default:
		err = fmt.Errorf("unknown store kind %q", kind)
	}
	if err != nil {
		fail(err)
	}
	defer e.close()
	fmt.Println("ready")
	if line, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil || line != "go\n" {
		fail(fmt.Errorf("waiting for go: %q %v", line, err))
	}
	res := childWriteResult{Acked: make([]int, pgWriterKeys)}
	for i := range per {
		k := i % pgWriterKeys
		op := claimOp{Subject: writerKey(proc, k), Predicate: "seats", Num: float64(i), By: agents[proc%len(agents)]}
		start := time.Now()
		if err := e.single(op); err != nil {
			res.Errors++
			if res.FirstError == "" {
				res.FirstError = err.Error()
			}
			continue
		}
		res.Latencies = append(res.Latencies, time.Since(start).Seconds())
		res.Acked[k]++
	}
	res.Finished = time.Now().UnixNano()
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		fail(err)
	}
}

// pgVisibilityWrites is how many writes the visibility run times.
const pgVisibilityWrites = 50

// runVisibility starts a watcher process (this program again) on dsn and asserts n versions
// of one key through m, 20–70 ms apart; the watcher reports when each version became live for
// it, and the latency is that time minus the time the write was acknowledged (0 when the
// watcher saw it first: the announcement can beat the acknowledgement).
func runVisibility(m *mqlEngine, dsn string, n int) (*pgVisibility, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	const key = "Watched"
	cmd := exec.Command(exe, "-child-watch", dsn, key+".seats", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	out := bufio.NewReader(stdout)
	if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
		return nil, fmt.Errorf("watcher process did not open the store: %q %v", line, err)
	}
	seen := make(chan [2]int64, n)
	go func() {
		defer close(seen)
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				return
			}
			var v, at int64
			if _, err := fmt.Sscanf(line, "seen %d %d", &v, &at); err == nil {
				seen <- [2]int64{v, at}
			}
		}
	}()
	r := &pgVisibility{Writes: n}
	var lats []float64
	for i := 1; i <= n; i++ {
		time.Sleep(time.Duration(20+mrand.IntN(50)) * time.Millisecond)
		if err := m.single(claimOp{Subject: key, Predicate: "seats", Num: float64(i), By: agents[0]}); err != nil {
			return nil, err
		}
		acked := time.Now().UnixNano()
		timeout := time.After(5 * time.Second)
	wait:
		for {
			select {
			case s, ok := <-seen:
				if !ok {
					return nil, fmt.Errorf("the watcher process ended")
				}
				if s[0] >= int64(i) {
					lats = append(lats, max(0, float64(s[1]-acked)/1e9))
					break wait
				}
			case <-timeout:
				r.Missed++
				break wait
			}
		}
	}
	slices.Sort(lats)
	if len(lats) > 0 {
		r.P50, r.P99, r.Max = lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*99/100)], lats[len(lats)-1]
	}
	return r, nil
}

// childWatch is the watcher process: -child-watch DSN KEY N. It opens the store, says "ready",
// and each time its store signals that transactions arrived, reads KEY and prints
// "seen VERSION UNIXNANO" for a new live version, until it has seen version N.
func childWatch(args []string) {
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "watcher process:", err)
		os.Exit(1)
	}
	if len(args) != 3 {
		fail(fmt.Errorf("want DSN KEY N, got %q", args))
	}
	n, err := strconv.Atoi(args[2])
	if err != nil {
		fail(err)
	}
	ctx := context.Background()
	e, err := openMQL(ctx, args[0])
	if err != nil {
		fail(err)
	}
	defer e.close()
	sub, stop := e.db.Subscribe()
	defer stop()
	fmt.Println("ready")
	last := 0
	for range sub {
		at := time.Now().UnixNano()
		cs, err := e.db.Live(ctx, args[1])
		if err != nil {
			fail(err)
		}
		for _, c := range cs {
			i := strings.LastIndexByte(c.Ref, '@')
			v, err := strconv.Atoi(c.Ref[i+1:])
			if err == nil && v > last {
				last = v
				fmt.Printf("seen %d %d\n", v, at)
			}
		}
		if last >= n {
			return
		}
	}
}
