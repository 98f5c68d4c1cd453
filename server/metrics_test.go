package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/pgtest"
	"github.com/mql-dev/mql/server"
)

// scrape GETs /metrics and parses the exposition format.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("the exposition does not parse: %v\n%s", err, body)
	}
	return fams, string(body)
}

// scrapeUntil scrapes until ready says the requests made so far are counted, or 5 s pass: a
// request is counted once its handler returns, which may be after its client has the answer.
func scrapeUntil(t *testing.T, url string, ready func(map[string]*dto.MetricFamily) bool) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		fams, body := scrape(t, url)
		if ready(fams) || time.Now().After(deadline) {
			return fams, body
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// value is the sum of the samples of family name whose labels include want (a histogram's:
// its count), and whether there is one.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
	sum, found := 0.0, false
next:
	for _, m := range f.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		found = true
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, found
}

// A scrape after requests on each surface parses, counts them by surface, operation and
// outcome, reports commits and the memory's health, and holds no token, claim value or
// principal's name; the health gauges are not recomputed within their interval.
func TestMetricsScrape(t *testing.T) {
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dsn := filepath.Join(t.TempDir(), "team.db")
			if backend == "postgres" {
				dsn = pgtest.Database(t)
			}
			testMetricsScrape(t, dsn)
		})
	}
}

func testMetricsScrape(t *testing.T, dsn string) {
	ctx := context.Background()
	metrics := server.NewMetrics(server.MetricsOptions{HealthInterval: time.Hour})
	db, err := mql.Open(ctx, dsn, mql.Options{OnCommit: metrics.ObserveCommit})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-secretname", Type: mql.Agent, By: "owner"}); err != nil {
		t.Fatal(err)
	}
	tok, _, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-secretname", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(db, db, server.Options{Metrics: metrics, Store: dsn})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	local := httptest.NewServer(srv.LocalHandler())
	defer local.Close()
	ms := httptest.NewServer(metrics.Handler())
	defer ms.Close()

	post := func(base, token, script string) int {
		// 200, or the status and what the server said
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/query", strings.NewReader(script))
		resp := do(t, req, token)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 401 {
			t.Logf("%s: %d %s", script, resp.StatusCode, b)
		}
		return resp.StatusCode
	}
	if code := post(hs.URL, tok, `assert Vendorsecret.price = "value-44-secret" by worker-secretname`); code != 200 {
		t.Fatalf("query: %d", code)
	}
	if code := post(hs.URL, "wrong-"+tok, "stats"); code != 401 {
		t.Fatalf("a bad token: %d", code)
	}
	if code := post(local.URL, "", "derive plan:secretplan from Vendorsecret.price by owner\nassert Vendorsecret.price = \"value-45-secret\" by owner"); code != 200 {
		t.Fatalf("socket query: %d", code)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: hs.URL + "/mcp", HTTPClient: &http.Client{Transport: &bearerTransport{token: tok}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "why", Arguments: map[string]any{"ref": "Vendorsecret.price"}}); err != nil || res.IsError {
		t.Fatalf("why: %v %+v", err, res)
	}
	cs.Close()

	fams, body := scrapeUntil(t, ms.URL, func(f map[string]*dto.MetricFamily) bool {
		n, _ := value(f, "mql_requests_total", nil)
		return n >= 6 // the queries, the bad token, and at least MCP's initialize and tool call
	})
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64 // -1: present, any value
	}{
		{"mql_requests_total", map[string]string{"surface": "http", "op": "/v1/query", "outcome": "ok"}, 1},
		{"mql_requests_total", map[string]string{"surface": "http", "op": "/v1/query", "outcome": "unauthorized"}, 1},
		{"mql_requests_total", map[string]string{"surface": "socket", "op": "/v1/query", "outcome": "ok"}, 1},
		{"mql_requests_total", map[string]string{"surface": "mcp", "op": "why", "outcome": "ok"}, 1},
		{"mql_requests_total", map[string]string{"surface": "mcp", "op": "initialize"}, -1},
		{"mql_request_duration_seconds", map[string]string{"surface": "mcp", "op": "why"}, 1},
		{"mql_request_duration_seconds", map[string]string{"surface": "http", "op": "/v1/query"}, 2},
		// The genesis, the principal, the token, the assert, the derive and the last assert,
		// one after the other: a commit each.
		{"mql_commits_total", map[string]string{"outcome": "ok"}, 6},
		{"mql_transactions_committed_total", nil, 6},
		{"mql_commit_group_size", nil, 6},
		{"mql_commit_duration_seconds", nil, 6},
		{"mql_commit_lock_wait_seconds", nil, 6},
		{"mql_claims", map[string]string{"state": "live"}, 1},
		{"mql_claims", map[string]string{"state": "superseded"}, 1},
		{"mql_keys", nil, 1},
		{"mql_principals", nil, 2},
		{"mql_artifacts", nil, 1},
		{"mql_artifacts_needing_review", nil, 1},
		{"mql_stale_rate", nil, 1},
		{"mql_review_backlog_oldest_seconds", nil, -1},
		{"mql_recent_runs", nil, 0},
		{"mql_stale_memory_rate", nil, 0},
		{"mql_context_utilization", nil, 0},
		{"mql_store_head_transaction", nil, -1},
		{"go_goroutines", nil, -1},
	} {
		got, ok := value(fams, tc.name, tc.labels)
		if !ok || (tc.want >= 0 && got != tc.want) {
			t.Errorf("%s%v = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	// The store's size on either backend: at least the bbolt file (its log may add to it), or
	// PostgreSQL's tables, each a page or more with its index.
	atLeast := float64(32 << 10)
	if fi, err := os.Stat(dsn); err == nil {
		atLeast = float64(fi.Size())
	}
	if n, ok := value(fams, "mql_store_bytes", nil); !ok || n < atLeast {
		t.Errorf("mql_store_bytes = %v (present %v) on %s, want at least %v", n, ok, db.Backend(), atLeast)
	}
	for _, leak := range []string{tok, "value-44", "secret", "Vendorsecret", "worker-"} {
		if strings.Contains(body, leak) {
			t.Errorf("the metrics hold %q", leak)
		}
	}
	// Within the interval a scrape does not scan again: the gauges stand, though the store moved.
	at, _ := value(fams, "mql_health_computed_timestamp_seconds", nil)
	post(local.URL, "", "assert Other.thing = 1 by owner")
	fams, _ = scrape(t, ms.URL)
	if again, _ := value(fams, "mql_health_computed_timestamp_seconds", nil); again != at {
		t.Errorf("the health gauges were recomputed within their interval: %v then %v", at, again)
	}
	if n, _ := value(fams, "mql_keys", nil); n != 1 {
		t.Errorf("mql_keys after a scrape within the interval: %v, want the last computed 1", n)
	}
}

// A client cannot mint labels: unknown paths, MCP methods and tools are "other".
func TestMetricsLabelsAreBounded(t *testing.T) {
	ctx := context.Background()
	metrics := server.NewMetrics(server.MetricsOptions{})
	db, err := mql.Open(ctx, "memory:", mql.Options{OnCommit: metrics.ObserveCommit})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := server.New(db, db, server.Options{Metrics: metrics})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	ms := httptest.NewServer(metrics.Handler())
	defer ms.Close()
	for _, p := range []string{"/secret-path-1", "/v1/tokens/secret-id/revoke", "/static/secret.js"} {
		resp, err := http.Get(hs.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	tok, _, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "owner", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"secret/method"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"secret-tool"}}`} {
		req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	fams, body := scrapeUntil(t, ms.URL, func(f map[string]*dto.MetricFamily) bool {
		n, _ := value(f, "mql_requests_total", nil)
		return n >= 5
	})
	if strings.Contains(body, "secret") {
		t.Errorf("a client's words became labels:\n%s", body)
	}
	if n, _ := value(fams, "mql_requests_total", map[string]string{"surface": "http", "op": "other"}); n != 1 {
		t.Errorf("unknown paths: %v under op=other, want 1", n)
	}
	if n, _ := value(fams, "mql_requests_total", map[string]string{"surface": "mcp", "op": "other"}); n != 2 {
		t.Errorf("unknown MCP method and tool: %v under op=other, want 2\n%s", n, body)
	}
}
