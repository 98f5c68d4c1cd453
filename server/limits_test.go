package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

// post sends a script to base+path (with its query) and decodes the JSON answer.
func post(t *testing.T, base, token, path, script string) (int, server.QueryResponse) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(script))
	req.Header.Set("Content-Type", "text/plain")
	resp := do(t, req, token)
	defer resp.Body.Close()
	var qr server.QueryResponse
	if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
		t.Fatalf("status %d: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, qr
}

// stream sends a script with ?stream=json and returns its frames.
func stream(t *testing.T, base, token, script string) (int, []server.Frame) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/query?stream=json", strings.NewReader(script))
	resp := do(t, req, token)
	defer resp.Body.Close()
	var frames []server.Frame
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var f server.Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
	return resp.StatusCode, frames
}

// writes counts the claims of subject K.
func writes(t *testing.T, db *mql.DB) int {
	t.Helper()
	claims, err := db.Live(context.Background(), "K")
	if err != nil {
		t.Fatal(err)
	}
	return len(claims)
}

// A script is parsed whole and held to the statement limit before any of it runs: one with a
// syntax error anywhere, or one statement too many, writes nothing — over HTTP and on the
// local socket alike.
func TestQueryRunsNothingUnlessItAllParses(t *testing.T) {
	tm := newTeam(t, server.Options{Limits: server.Limits{Statements: 5}})
	local := httptest.NewServer(tm.srv.LocalHandler())
	t.Cleanup(local.Close)
	asserts := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "assert K.p%d = %d by worker-3\n", i, i)
		}
		return b.String()
	}
	for _, c := range []struct {
		name, base, token, script string
		status                    int
		class, message            string
	}{
		{"typo after 3", tm.http.URL, tm.tokens["worker-3"], asserts(3) + "liv K", 400, "syntax", `<http>:4:1: unknown statement "liv"`},
		{"typo after 6", tm.http.URL, tm.tokens["worker-3"], asserts(6) + "liv K", 400, "syntax", `<http>:7:1:`},
		{"typo after 6 on the socket", local.URL, "", asserts(6) + "liv K", 400, "syntax", `<http>:7:1:`},
		{"6 statements", tm.http.URL, tm.tokens["worker-3"], asserts(6), 413, "usage", "the script has 6 statements, and at most 5 run in one request (mql serve --max-statements): none ran"},
		{"6 statements on the socket", local.URL, "", asserts(6), 413, "usage", "at most 5 run in one request"},
		{"a typo inside a transaction's statements", tm.http.URL, tm.tokens["worker-3"], asserts(2) + "begin\n" + asserts(2) + "commit\nliv K", 400, "syntax", `<http>:7:1:`},
	} {
		code, qr := post(t, c.base, c.token, "/v1/query", c.script)
		if code != c.status || qr.Error == nil || qr.Error.Class != c.class || !strings.Contains(qr.Error.Message, c.message) || len(qr.Results) != 0 {
			t.Errorf("%s: %d %+v, %d results", c.name, code, qr.Error, len(qr.Results))
		}
		if n := writes(t, tm.db); n != 0 {
			t.Fatalf("%s: %d statements were applied", c.name, n)
		}
	}
	if code, qr := post(t, tm.http.URL, tm.tokens["worker-3"], "/v1/query", asserts(5)); code != 200 || len(qr.Results) != 5 || writes(t, tm.db) != 5 {
		t.Errorf("five statements: %d %+v", code, qr.Error)
	}
}

// Where a script starts in the client's (line, col, begin_line, begin_col) is a whole number
// from 1 to 2³¹−1; anything else is refused with a 400 that names it, and nothing runs.
func TestQueryRefusesPositionsOutOfRange(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3 := tm.tokens["worker-3"]
	for _, q := range []string{"line=9223372036854775807", "line=2147483648", "col=0", "line=-1", "line=abc", "tx=1&begin_line=9223372036854775807", "tx=1&begin_col=1e3"} {
		code, qr := post(t, tm.http.URL, w3, "/v1/query?"+q, "assert K.p = 1 by worker-3\nliv")
		key, _, _ := strings.Cut(strings.TrimPrefix(q, "tx=1&"), "=")
		if code != http.StatusBadRequest || qr.Error == nil || qr.Error.Class != "usage" || !strings.HasPrefix(qr.Error.Message, key+"=") || !strings.Contains(qr.Error.Message, "from 1 to 2147483647") {
			t.Errorf("%s: %d %+v", q, code, qr.Error)
		}
	}
	if n := writes(t, tm.db); n != 0 {
		t.Errorf("%d statements were applied", n)
	}
	code, qr := post(t, tm.http.URL, w3, "/v1/query?line=2147483646&col=3", "live K\nliv")
	if code != http.StatusBadRequest || qr.Error == nil || qr.Error.Line != 2147483647 || qr.Error.Column != 1 || !strings.HasPrefix(qr.Error.Message, "<http>:2147483647:1:") {
		t.Errorf("the last line: %d %+v", code, qr.Error)
	}
}

// An answer is cut off, with an error that names the output limit, before the result that
// would take it past the bound; the statements after it do not run. Streamed answers too.
func TestQueryOutputLimit(t *testing.T) {
	tm := newTeam(t, server.Options{Limits: server.Limits{Output: 64 << 10}})
	w3 := tm.tokens["worker-3"]
	if code, qr := post(t, tm.http.URL, w3, "/v1/query", `assert BIGV.v = "`+strings.Repeat("x", 10_000)+`" by worker-3`); code != 200 {
		t.Fatalf("%d %+v", code, qr.Error)
	}
	script := strings.Repeat("live BIGV\n", 20) + "assert K.after = 1 by worker-3"
	code, qr := post(t, tm.http.URL, w3, "/v1/query", script)
	size := 0
	for _, r := range qr.Results {
		size += len(r)
	}
	if code != http.StatusRequestEntityTooLarge || qr.Error == nil || qr.Error.Class != "usage" || len(qr.Results) == 0 || len(qr.Results) >= 20 || size > 64<<10 {
		t.Fatalf("cut off: %d %+v, %d results, %d bytes", code, qr.Error, len(qr.Results), size)
	}
	want := fmt.Sprintf("the answer is cut off after %d results: the next would take it over 64 KiB, the output limit (mql serve --max-output)", len(qr.Results))
	if !strings.Contains(qr.Error.Message, want) || !strings.Contains(qr.Error.Message, "raise the limit") {
		t.Errorf("the message: %s", qr.Error.Message)
	}
	if n := writes(t, tm.db); n != 0 {
		t.Errorf("a statement after the cut ran")
	}

	// A transaction's results are held until it commits: past the limit, it is rolled back.
	for _, c := range []struct{ path, script string }{
		{"/v1/query", "begin\n" + strings.Repeat("live BIGV\n", 20) + "assert K.in = 1 by worker-3\ncommit"},
		{"/v1/query?tx=1", strings.Repeat("live BIGV\n", 20) + "assert K.in = 1 by worker-3"},
	} {
		code, qr := post(t, tm.http.URL, w3, c.path, c.script)
		if code != http.StatusRequestEntityTooLarge || qr.Error == nil || len(qr.Results) != 0 || !strings.Contains(qr.Error.Message, "the transaction's results would be over 64 KiB, the output limit (mql serve --max-output)") || !strings.Contains(qr.Error.Message, "rolled back: nothing of it was written") {
			t.Errorf("a transaction over the limit, %s: %d %+v, %d results", c.path, code, qr.Error, len(qr.Results))
		}
		if n := writes(t, tm.db); n != 0 {
			t.Errorf("%s: a transaction over the limit wrote", c.path)
		}
	}

	code, frames := stream(t, tm.http.URL, w3, script)
	last := frames[len(frames)-1]
	if code != 200 || last.Error == nil || !strings.Contains(last.Error.Message, "the output limit (mql serve --max-output)") || len(frames) < 2 || len(frames) > 20 {
		t.Errorf("streamed: %d, %d frames, last %+v", code, len(frames), last)
	}
	if n := writes(t, tm.db); n != 0 {
		t.Errorf("a streamed statement after the cut ran")
	}
}

// A request past the time limit is stopped with a 504 that names the limit.
func TestQueryTimeLimit(t *testing.T) {
	tm := newTeam(t, server.Options{Limits: server.Limits{Timeout: time.Nanosecond}})
	code, qr := tm.query(tm.tokens["worker-3"], "assert K.p = 1 by worker-3")
	if code != http.StatusGatewayTimeout || qr.Error == nil || qr.Error.Class != "timeout" || !strings.Contains(qr.Error.Message, "ran over its time limit of 1ns (mql serve --timeout)") {
		t.Errorf("%d %+v", code, qr.Error)
	}
	if n := writes(t, tm.db); n != 0 {
		t.Errorf("the statement stopped by the time limit was applied")
	}
}

// peakHeap samples the heap in use while f runs and returns its peak above what was in use
// before.
func peakHeap(f func()) uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapInuse, ms.HeapInuse
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	f()
	close(stop)
	<-done
	return peak - base
}

// The worst requests found (docs/RELIABILITY.md, "Limits"), scaled down, against one server:
// 5,000 reads of a big subject in one MCP query call, 1,000 in a call, 1,000 reads of a big
// value in a 10 KB /v1/query script, the same streamed on the local socket. Each gets the
// documented limit's error, and the heap stays within a few times the output limit (before
// the limits, each held every result: 7.5 GB for the first, scaled down as here).
func TestWorstRequestsInBoundedMemory(t *testing.T) {
	const outputLimit = 2 << 20
	tm := newTeam(t, server.Options{Limits: server.Limits{Output: outputLimit}})
	ctx := context.Background()
	var specs []mql.AssertSpec
	for i := range 200 {
		specs = append(specs, mql.AssertSpec{Subject: "BIG2", Predicate: fmt.Sprintf("p%d", i), Value: mql.String(strings.Repeat("v", 150)), By: "worker-3"})
	}
	specs = append(specs, mql.AssertSpec{Subject: "BIGV", Predicate: "v", Value: mql.String(strings.Repeat("x", 100_000)), By: "worker-3"})
	if _, err := tm.db.AssertBatch(ctx, "worker-3", specs); err != nil {
		t.Fatal(err)
	}
	local := httptest.NewServer(tm.srv.LocalHandler())
	t.Cleanup(local.Close)
	tr := &mcp.StreamableClientTransport{Endpoint: tm.http.URL + "/mcp", HTTPClient: &http.Client{Transport: &bearerTransport{token: tm.tokens["worker-7"]}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	mcpQuery := func(stmt, want string) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"statement": stmt}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, want) {
			t.Errorf("MCP query of %d bytes: %v %.300v", len(stmt), err, res)
		}
	}
	script := strings.Repeat("live BIGV\n", 1000)
	for name, attack := range map[string]func(){
		"MCP: live BIG2 x 5,000": func() {
			mcpQuery(strings.Repeat("live BIG2; ", 5000), "5000 statements, and at most 1000 run in one call (mql serve --max-statements): none ran")
		},
		"MCP: live BIG2 x 1,000": func() {
			mcpQuery(strings.Repeat("live BIG2; ", 1000), "the results would be over the output limit of 2 MiB (mql serve --max-output)")
		},
		"/v1/query: live BIGV x 1,000": func() {
			code, qr := post(t, tm.http.URL, tm.tokens["worker-7"], "/v1/query", script)
			if code != http.StatusRequestEntityTooLarge || qr.Error == nil || !strings.Contains(qr.Error.Message, "over 2 MiB, the output limit (mql serve --max-output)") {
				t.Errorf("%d %+v", code, qr.Error)
			}
		},
		"/v1/query: live BIGV x 998 in a transaction": func() {
			code, qr := post(t, tm.http.URL, tm.tokens["worker-7"], "/v1/query", "begin\n"+strings.Repeat("live BIGV\n", 998)+"commit")
			if code != http.StatusRequestEntityTooLarge || qr.Error == nil || !strings.Contains(qr.Error.Message, "the output limit (mql serve --max-output)") {
				t.Errorf("%d %+v", code, qr.Error)
			}
		},
		"the socket, streamed: live BIGV x 1,000": func() {
			_, frames := stream(t, local.URL, "", script)
			if last := frames[len(frames)-1]; last.Error == nil || !strings.Contains(last.Error.Message, "the output limit (mql serve --max-output)") {
				t.Errorf("the last frame: %+v", last)
			}
		},
	} {
		peak := peakHeap(attack)
		t.Logf("%s: heap peak %.1f MiB above the start", name, float64(peak)/(1<<20))
		if peak > 16*outputLimit {
			t.Errorf("%s: the heap grew by %d MiB, over %d MiB", name, peak>>20, 16*outputLimit>>20)
		}
	}
}

// get fetches base+path with a token (none on the socket) and returns the status and body.
func get(t *testing.T, base, token, path string) (int, string) {
	t.Helper()
	return send(t, http.MethodGet, base+path, token, "")
}

// do sends req with a token ("" for none) and returns the answer, whose body the caller
// closes.
func do(t *testing.T, req *http.Request, token string) *http.Response {
	t.Helper()
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// send makes a request with a token ("" for none) and a body ("" for none), and returns the
// status and the body of the answer.
func send(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, r)
	resp := do(t, req, token)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The catalog and the review queue are held to the output limit, as /v1/query's answers are:
// over it, 413 naming the limit and how to raise it; under it, the answer.
func TestCatalogAndReviewQueueOutputLimit(t *testing.T) {
	ctx := context.Background()
	tm := newTeam(t, server.Options{Limits: server.Limits{Output: 2 << 10}})
	tok := tm.tokens["orchestrator"]
	for _, path := range []string{"/v1/catalog", "/v1/review-queue"} {
		if code, body := get(t, tm.http.URL, tok, path); code != http.StatusOK {
			t.Fatalf("%s under the limit: %d %s", path, code, body)
		}
	}
	for i := range 40 {
		key := fmt.Sprintf("Vendor%d", i)
		if _, err := tm.db.Assert(ctx, mql.AssertSpec{Subject: key, Predicate: "price_per_seat", Value: mql.Number(float64(i)), By: "orchestrator"}); err != nil {
			t.Fatal(err)
		}
		if _, err := tm.db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:" + key, From: []string{key + ".price_per_seat"}, By: "orchestrator"}); err != nil {
			t.Fatal(err)
		}
		if _, err := tm.db.Assert(ctx, mql.AssertSpec{Subject: key, Predicate: "price_per_seat", Value: mql.Number(float64(i + 1)), By: "orchestrator"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range []string{"/v1/catalog", "/v1/review-queue"} {
		code, body := get(t, tm.http.URL, tok, path)
		if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "over 2 KiB, the output limit (mql serve --max-output): raise the limit") {
			t.Errorf("%s over the limit: %d %.300s", path, code, body)
		}
	}
}

// recorder is a ResponseWriter that keeps the size of the largest single write, and calls
// onWrite at the first.
type recorder struct {
	header        http.Header
	status        int
	total, widest int
	onWrite       func()
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	if r.total == 0 && r.onWrite != nil {
		r.onWrite()
	}
	r.total += len(b)
	r.widest = max(r.widest, len(b))
	return len(b), nil
}

// /v1/export is not held to the output limit: it streams, writing each part of the store as it
// is read, so that the server never holds the whole export. One that fails after its first
// byte is cut off (http.ErrAbortHandler), never ended as if it were whole.
func TestExportStreams(t *testing.T) {
	ctx := context.Background()
	tm := newTeam(t, server.Options{Limits: server.Limits{Output: 4 << 10}})
	for i := range 300 { // more transactions than one chunk of Reader.Export
		if _, err := tm.db.Assert(ctx, mql.AssertSpec{Subject: fmt.Sprintf("K%d", i), Predicate: "note", Value: mql.String(strings.Repeat("x", 1000)), By: "worker-3"}); err != nil {
			t.Fatal(err)
		}
	}
	local := tm.srv.LocalHandler()
	rec := &recorder{header: http.Header{}}
	local.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/export", nil))
	var whole strings.Builder
	if err := tm.db.Export(ctx, &whole); err != nil {
		t.Fatal(err)
	}
	if rec.status != http.StatusOK || rec.total != whole.Len() {
		t.Fatalf("export: %d, %d bytes, want 200 and %d", rec.status, rec.total, whole.Len())
	}
	if rec.widest > 64<<10 || rec.total < 10*rec.widest {
		t.Errorf("the export of %d bytes was written %d bytes at a time: it was held, not streamed", rec.total, rec.widest)
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	rec = &recorder{header: http.Header{}, onWrite: cancel}
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Errorf("an export that failed after its first byte ended with %v (%d of %d bytes written), want it cut off with http.ErrAbortHandler", p, rec.total, whole.Len())
			}
		}()
		local.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/export", nil).WithContext(rctx))
	}()
}
