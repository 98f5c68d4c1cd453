package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

// serveResult is what -serve measured: agents writing through mql serve over loopback, and the
// round trip of one read.
type serveResult struct {
	Clients    int         `json:"clients"`
	Metrics    bool        `json:"metrics"` // the server's metrics on, scraped once a second
	TargetRate int         `json:"target_rate"`
	Seconds    float64     `json:"seconds"`
	Writes     []loadStats `json:"writes"` // MCP, then /v1/query
	// Reads are the live round trips: in-process, /v1/query, MCP; with the metrics on, then
	// /v1/query and MCP again, from a second server on the same store without them, each of
	// its reads paired with one of the first's (pairedReads).
	Reads []loadStats `json:"reads"`
}

type loadStats struct {
	Path         string  `json:"path"`
	Acknowledged int     `json:"acknowledged"`
	Errors       int     `json:"errors"`
	Throughput   float64 `json:"per_second"`
	P50          float64 `json:"p50_seconds"`
	P99          float64 `json:"p99_seconds"`
	Durable      bool    `json:"all_acknowledged_found"`
}

// runServe measures mql serve on a bbolt store: cfg.writers clients (12 by default) asserting
// at cfg.rate a second in all for cfg.duration, over MCP (Streamable HTTP) and then over
// /v1/query, open-loop (latency from each request's due time); then 2,000 sequential `live`
// round trips each way beside the in-process read.
func runServe(ctx context.Context, cfg *config, dir string) (*serveResult, error) {
	clients := cfg.writers
	if clients <= 0 {
		clients = 12
	}
	var metrics *server.Metrics
	var opts mql.Options
	if cfg.metrics {
		metrics = server.NewMetrics(server.MetricsOptions{})
		opts.OnCommit = metrics.ObserveCommit
	}
	db, err := mql.Open(ctx, filepath.Join(dir, "serve.db"), opts)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tokens := make([]string, clients)
	for i := range clients {
		name := fmt.Sprintf("agent-%d", i)
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: name, Type: mql.Agent, By: db.Owner()}); err != nil {
			return nil, err
		}
		if tokens[i], _, err = db.CreateToken(ctx, mql.TokenSpec{Principal: name, By: db.Owner()}); err != nil {
			return nil, err
		}
	}
	srv := server.New(db, db, server.Options{Metrics: metrics, Store: filepath.Join(dir, "serve.db")})
	defer srv.Close()
	if metrics != nil {
		stop, err := scrapeEverySecond(metrics.Handler())
		if err != nil {
			return nil, err
		}
		defer stop()
	}
	base, stopServing, err := serveOn(srv.Handler())
	if err != nil {
		return nil, err
	}
	defer stopServing()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients * 2}}

	res := &serveResult{Clients: clients, Metrics: metrics != nil, TargetRate: cfg.rate, Seconds: cfg.duration.Seconds()}

	// Writes over MCP.
	sessions := make([]*mcp.ClientSession, clients)
	for i := range clients {
		tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", DisableStandaloneSSE: true,
			HTTPClient: &http.Client{Transport: &bearer{tokens[i], hc.Transport}}}
		if sessions[i], err = mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, tr, nil); err != nil {
			return nil, err
		}
		defer sessions[i].Close()
	}
	res.Writes = append(res.Writes, openLoop(ctx, "MCP (tools/call assert)", clients, cfg.rate, cfg.duration, db, func(i int, subj string, n int) error {
		r, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: "assert", Arguments: map[string]any{"subject": subj, "predicate": "seats", "value": n, "source": "src:bench"}})
		if err == nil && r.IsError {
			err = fmt.Errorf("tool error")
		}
		return err
	}))
	// Writes over /v1/query.
	res.Writes = append(res.Writes, openLoop(ctx, "POST /v1/query", clients, cfg.rate, cfg.duration, db, func(i int, subj string, n int) error {
		return post(ctx, hc, base, tokens[i], fmt.Sprintf(`assert %s.seats = %d by agent-%d from "src:bench"`, subj, n, i))
	}))

	// Reads: one key, 2,000 sequential round trips each way.
	key := "W0_0.seats"
	viaQuery := func(base string) func() error {
		return func() error { return post(ctx, hc, base, tokens[0], "live "+key) }
	}
	viaMCP := func(cs *mcp.ClientSession) func() error {
		return func() error {
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"statement": "live " + key}})
			if err == nil && r.IsError {
				err = fmt.Errorf("tool error")
			}
			return err
		}
	}
	res.Reads = append(res.Reads, pairedReads("in-process Reader.Live", func() error { _, err := db.As("agent-0").Live(ctx, key); return err }, "", nil)...)
	if metrics == nil {
		res.Reads = append(res.Reads, pairedReads("POST /v1/query", viaQuery(base), "", nil)...)
		res.Reads = append(res.Reads, pairedReads("MCP (tools/call query)", viaMCP(sessions[0]), "", nil)...)
		return res, nil
	}
	plain := server.New(db, db, server.Options{Store: filepath.Join(dir, "serve.db")})
	defer plain.Close()
	plainBase, stopPlain, err := serveOn(plain.Handler())
	if err != nil {
		return nil, err
	}
	defer stopPlain()
	plainMCP, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: plainBase + "/mcp", DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: &bearer{tokens[0], hc.Transport}}}, nil)
	if err != nil {
		return nil, err
	}
	defer plainMCP.Close()
	q := pairedReads("POST /v1/query", viaQuery(base), "POST /v1/query, a server without metrics (paired)", viaQuery(plainBase))
	m := pairedReads("MCP (tools/call query)", viaMCP(sessions[0]), "MCP (tools/call query), a server without metrics (paired)", viaMCP(plainMCP))
	res.Reads = append(res.Reads, q[0], m[0], q[1], m[1])
	return res, nil
}

// serveOn serves h on a loopback port of its own and returns its base URL.
func serveOn(h http.Handler) (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	hs := &http.Server{Handler: h}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String(), func() { hs.Close() }, nil
}

// pairedReads times 2,000 sequential round trips of a, and with b, 2,000 of b too, each
// paired with one of a's, the two in turn first: what the metrics add to a read (a on the
// server with them, b on one without, on the same store in the same process) is then the
// difference of two series run at the same moments, free of what separate runs differ by
// (the garbage collection the writes left behind, other work on the machine), which is many
// times that (docs/BENCHMARKS.md, "With --metrics").
func pairedReads(pathA string, a func() error, pathB string, b func() error) []loadStats {
	const reads = 2000
	type series struct {
		lats []float64
		errs int
	}
	var sa, sb series
	time1 := func(s *series, f func() error) {
		t := time.Now()
		if err := f(); err != nil {
			s.errs++
			return
		}
		s.lats = append(s.lats, time.Since(t).Seconds())
	}
	for i := range reads {
		if b == nil {
			time1(&sa, a)
			continue
		}
		if i%2 == 0 {
			time1(&sa, a)
			time1(&sb, b)
		} else {
			time1(&sb, b)
			time1(&sa, a)
		}
	}
	out := []loadStats{stats(pathA, sa.lats, sa.errs, 0)}
	if b != nil {
		out = append(out, stats(pathB, sb.lats, sb.errs, 0))
	}
	return out
}

// scrapeEverySecond serves h (the metrics) on loopback and GETs /metrics once a second, as a
// Prometheus would (more often than its usual 15 s), until stop is called.
func scrapeEverySecond(h http.Handler) (stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	ms := &http.Server{Handler: h}
	go ms.Serve(ln)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			if resp, err := http.Get("http://" + ln.Addr().String() + "/metrics"); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	})
	return func() { close(done); wg.Wait(); ms.Close() }, nil
}

// openLoop runs clients that each send rate/clients requests a second for d, due at fixed
// times, and checks afterwards that every acknowledged assertion is in the store.
func openLoop(ctx context.Context, path string, clients, rate int, d time.Duration, db *mql.DB, do func(i int, subj string, n int) error) loadStats {
	interval := time.Duration(float64(time.Second) * float64(clients) / float64(rate))
	var mu sync.Mutex
	var lats []float64
	var acked []string
	errs := 0
	prefix := strings.NewReplacer(" ", "", "(", "", ")", "", "/", "").Replace(path)[:4]
	start := time.Now().Add(10 * time.Millisecond)
	end := start.Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			offset := time.Duration(c) * interval / time.Duration(clients)
			for n := 0; ; n++ {
				at := start.Add(offset + time.Duration(n)*interval)
				if at.After(end) {
					return
				}
				time.Sleep(time.Until(at))
				subj := fmt.Sprintf("%s%d_%d", prefix, c, n)
				err := do(c, subj, n)
				lat := time.Since(at).Seconds()
				mu.Lock()
				if err != nil {
					errs++
				} else {
					lats = append(lats, lat)
					acked = append(acked, subj)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	found := 0
	for _, s := range acked {
		if c, err := db.Live(ctx, s+".seats"); err == nil && len(c) == 1 {
			found++
		}
	}
	st := stats(path, lats, errs, elapsed)
	st.Durable = found == len(acked)
	return st
}

func stats(path string, lats []float64, errs int, elapsed float64) loadStats {
	slices.Sort(lats)
	st := loadStats{Path: path, Acknowledged: len(lats), Errors: errs}
	if elapsed > 0 {
		st.Throughput = float64(len(lats)) / elapsed
	}
	if len(lats) > 0 {
		st.P50, st.P99 = lats[len(lats)/2], lats[min(len(lats)-1, len(lats)*99/100)]
	}
	return st
}

func post(ctx context.Context, hc *http.Client, base, token, script string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/query", strings.NewReader(script))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s", resp.Status, b)
	}
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// renderServe writes the -serve tables.
func renderServe(w io.Writer, r *serveResult) {
	metrics := ""
	if r.Metrics {
		metrics = ", metrics on (scraped once a second)"
	}
	fmt.Fprintf(w, "%d clients through mql serve on loopback (bbolt%s), asking for %d assertions/s in all for %.0f s, open loop:\n\n", r.Clients, metrics, r.TargetRate, r.Seconds)
	fmt.Fprintln(w, "| path | acknowledged | errors | per second | p50 | p99 | all acknowledged found |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, s := range r.Writes {
		fmt.Fprintf(w, "| %s | %d | %d | %.0f | %s | %s | %v |\n", s.Path, s.Acknowledged, s.Errors, s.Throughput, dur(s.P50), dur(s.P99), s.Durable)
	}
	fmt.Fprintln(w, "\n`live` of one key, 2,000 sequential round trips:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| path | p50 | p99 | errors |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range r.Reads {
		fmt.Fprintf(w, "| %s | %s | %s | %d |\n", s.Path, dur(s.P50), dur(s.P99), s.Errors)
	}
}

func dur(s float64) string {
	d := time.Duration(s * float64(time.Second))
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond))
}
