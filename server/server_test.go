package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

// team is a store with three agents, a token each, and a server on it.
type team struct {
	t      *testing.T
	db     *mql.DB
	srv    *server.Server
	http   *httptest.Server
	tokens map[string]string // by principal
}

// openWorker opens the store at dsn, closed when the test ends, and records the agent
// worker-3 in it.
func openWorker(ctx context.Context, t *testing.T, dsn string) *mql.DB {
	t.Helper()
	db, err := mql.Open(ctx, dsn, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"}); err != nil {
		t.Fatal(err)
	}
	return db
}

func newTeam(t *testing.T, opts server.Options) *team {
	t.Helper()
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tm := &team{t: t, db: db, tokens: map[string]string{}}
	for _, p := range []string{"worker-3", "worker-7", "orchestrator"} {
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}); err != nil {
			t.Fatal(err)
		}
		tok, _, err := db.CreateToken(ctx, mql.TokenSpec{Principal: p, By: "owner"})
		if err != nil {
			t.Fatal(err)
		}
		tm.tokens[p] = tok
	}
	tm.srv = server.New(db, db, opts)
	tm.http = httptest.NewServer(tm.srv.Handler())
	t.Cleanup(func() {
		tm.srv.Close()
		tm.http.Close()
	})
	return tm
}

// query posts a script with a token and decodes the answer.
func (tm *team) query(token, script string) (int, server.QueryResponse) {
	tm.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, tm.http.URL+"/v1/query", strings.NewReader(script))
	req.Header.Set("Content-Type", "text/plain")
	resp := do(tm.t, req, token)
	defer resp.Body.Close()
	var qr server.QueryResponse
	if resp.StatusCode != http.StatusUnauthorized {
		if err := json.NewDecoder(resp.Body).Decode(&qr); err != nil {
			tm.t.Fatalf("status %d: %v", resp.StatusCode, err)
		}
	}
	return resp.StatusCode, qr
}

func rows(t *testing.T, res json.RawMessage) []map[string]any {
	t.Helper()
	var r struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		t.Fatal(err)
	}
	return r.Rows
}

// Every request without a valid token gets the same 401, with no detail.
func TestUnauthorized(t *testing.T) {
	tm := newTeam(t, server.Options{})
	ctx := context.Background()
	expired, _, err := tm.db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner", Expires: time.Now().Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	revoked, info, err := tm.db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tm.db.RevokeToken(ctx, info.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // the expired token's second passes
	w3 := tm.tokens["worker-3"]
	id, secret, _ := strings.Cut(strings.TrimPrefix(w3, "mql_"), "_")
	headers := map[string]string{
		"missing":                 "",
		"not bearer":              "Basic " + w3,
		"empty bearer":            "Bearer ",
		"unknown":                 "Bearer mql_t999.1_" + secret,
		"wrong secret":            "Bearer mql_" + id + "_" + strings.Repeat("a", len(secret)),
		"another token's secret":  "Bearer mql_" + id + "_" + strings.SplitN(tm.tokens["worker-7"], "_", 3)[2],
		"expired":                 "Bearer " + expired,
		"revoked":                 "Bearer " + revoked,
		"truncated":               "Bearer " + w3[:len(w3)-1],
		"without the mql_ prefix": "Bearer " + strings.TrimPrefix(w3, "mql_"),
	}
	var first string
	for name, h := range headers {
		for _, path := range []string{"/v1/query", "/v1/watch", "/mcp"} {
			method := http.MethodPost
			if path == "/v1/watch" {
				method = http.MethodGet
			}
			req, _ := http.NewRequest(method, tm.http.URL+path, strings.NewReader("live *"))
			if h != "" {
				req.Header.Set("Authorization", h)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("%s on %s: status %d, want 401", name, path, resp.StatusCode)
			}
			if first == "" {
				first = string(body)
			}
			if string(body) != first {
				t.Errorf("%s on %s: body %q differs from %q", name, path, body, first)
			}
		}
	}
	if code, _ := tm.query(w3, "live *"); code != http.StatusOK {
		t.Errorf("a valid token: status %d", code)
	}
}

// A request acts as its token's principal and nothing in it can name another.
func TestQueryActsAsTheTokensPrincipal(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3, w7 := tm.tokens["worker-3"], tm.tokens["worker-7"]
	code, qr := tm.query(w3, `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0"
assert Player7.style = "patient" by worker-3 seen by worker-3
live *`)
	if code != http.StatusOK || qr.Error != nil || len(qr.Results) != 3 {
		t.Fatalf("status %d, %+v", code, qr)
	}
	if got := len(rows(t, qr.Results[2])); got != 2 {
		t.Errorf("worker-3 sees %d live claims, want 2", got)
	}
	for _, script := range []string{
		`assert K.p = 1 by worker-3`,          // writes by another principal
		`as worker-3 live *`,                  // reads as another
		`principal intruder agent`,            // only the owner records principals
		`revoke Player7.style@1 by worker-7`,  // cannot see it: not found
		`grant worker-7 assert on * by owner`, // by the owner
	} {
		code, qr := tm.query(w7, script)
		if code == http.StatusOK || qr.Error == nil {
			t.Errorf("%q as worker-7: status %d, %+v", script, code, qr)
		}
	}
	// worker-7 never sees worker-3's private claim, through any read.
	for _, script := range []string{"live *", "history Player7.style", "why Player7.style", "stats", "context *", "find ?s, ?v where ?s.style = ?v"} {
		_, qr := tm.query(w7, script)
		for _, r := range qr.Results {
			if strings.Contains(string(r), "patient") {
				t.Errorf("%q as worker-7 shows the private claim: %s", script, r)
			}
		}
	}
	// The receipt names its author.
	_, qr = tm.query(w7, `assert Klarveld.region = "EU" by worker-7 from "src:Klarveld:rev0"
why Klarveld.region`)
	if qr.Error != nil || !strings.Contains(string(qr.Results[1]), `"asserted_by":"worker-7"`) {
		t.Errorf("%+v", qr)
	}
}

// An error carries the CLI's class, exit code and position; the statements before an
// evaluation error were applied, and nothing of a script with a syntax error; JSON bodies work
// too.
func TestQueryErrors(t *testing.T) {
	tm := newTeam(t, server.Options{Limits: server.Limits{Statements: 5, Body: 4096}})
	w3 := tm.tokens["worker-3"]
	code, qr := tm.query(w3, "assert K.a = 1 by worker-3\nliv K")
	if code != http.StatusBadRequest || qr.Error == nil || qr.Error.Class != "syntax" || qr.Error.ExitCode != 3 || qr.Error.Line != 2 || qr.Error.Column != 1 {
		t.Errorf("syntax error: %d %+v", code, qr.Error)
	}
	if len(qr.Results) != 0 {
		t.Errorf("the statement before the syntax error ran: %d results", len(qr.Results))
	}
	code, qr = tm.query(w3, "revoke K.a@7 by worker-3")
	if code != http.StatusUnprocessableEntity || qr.Error.Class != "evaluation" || qr.Error.ExitCode != 1 || !strings.Contains(qr.Error.Message, "not found") {
		t.Errorf("evaluation error: %d %+v", code, qr.Error)
	}
	code, qr = tm.query(w3, strings.Repeat("live *\n", 6))
	if code != http.StatusRequestEntityTooLarge || qr.Error.Class != "usage" {
		t.Errorf("too many statements: %d %+v", code, qr.Error)
	}
	code, qr = tm.query(w3, "live K -- "+strings.Repeat("x", 5000))
	if code != http.StatusRequestEntityTooLarge || qr.Error.Class != "usage" {
		t.Errorf("oversized body: %d %+v", code, qr.Error)
	}
	// JSON body.
	req, _ := http.NewRequest(http.MethodPost, tm.http.URL+"/v1/query", strings.NewReader(`{"script": "live K"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+w3)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	qr = server.QueryResponse{}
	json.NewDecoder(resp.Body).Decode(&qr)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || qr.Error != nil || len(qr.Results) != 1 {
		t.Errorf("json body: %d %+v", resp.StatusCode, qr)
	}
}

// sse reads a watch stream's events.
type sse struct {
	events chan map[string]any
	cancel func()
}

func (tm *team) watch(token, query string) *sse {
	tm.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, tm.http.URL+"/v1/watch"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tm.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		tm.t.Fatalf("watch: %s", resp.Status)
	}
	s := &sse{events: make(chan map[string]any, 100), cancel: func() { cancel(); resp.Body.Close() }}
	go func() {
		defer close(s.events)
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				var m map[string]any
				json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m)
				if m == nil {
					m = map[string]any{}
				}
				m["event"] = name
				s.events <- m
			}
		}
	}()
	tm.t.Cleanup(s.cancel)
	return s
}

func (s *sse) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case e, ok := <-s.events:
		if !ok {
			t.Fatal("the stream ended")
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
	}
	return nil
}

// The change feed streams what each principal may see, as it is committed, and a revoked
// token ends its stream.
func TestWatch(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3, w7, orch := tm.tokens["worker-3"], tm.tokens["worker-7"], tm.tokens["orchestrator"]
	s3 := tm.watch(w3, "")
	s7 := tm.watch(w7, "?pattern=Klarveld")
	so := tm.watch(orch, "?pattern=plan:*")
	for _, s := range []*sse{s3, s7, so} {
		if e := s.next(t); e["event"] != "ready" {
			t.Fatalf("first event %v", e)
		}
	}
	tm.query(w3, `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0"`)
	tm.query(orch, `derive plan:pick-vendor from Klarveld.price_per_seat by orchestrator`)
	tm.query(w3, `assert Player7.style = "patient" by worker-3 seen by worker-3`)
	tm.query(w7, `assert Klarveld.price_per_seat = 89 by worker-7 from "src:Klarveld:rev1"`)

	if e := s3.next(t); e["event"] != "claim" || e["ref"] != "Klarveld.price_per_seat@1" {
		t.Errorf("worker-3's first event: %v", e)
	}
	for _, want := range []string{"Klarveld.price_per_seat@1", "Klarveld.price_per_seat@2"} {
		if e := s7.next(t); e["ref"] != want {
			t.Errorf("worker-7 got %v, want %s", e["ref"], want)
		}
	}
	if e := so.next(t); e["event"] != "artifact" || e["ref"] != "plan:pick-vendor@1" {
		t.Errorf("orchestrator: %v", e)
	}
	if e := so.next(t); e["event"] != "needs-review" || e["ref"] != "plan:pick-vendor@1" {
		t.Errorf("orchestrator: %v, want the plan to need review", e)
	}
	// worker-7 was never told about the private claim (its pattern would not match it anyway:
	// worker-3's unfiltered stream must and worker-7's must not).
	seen := map[string]bool{}
	for i := 0; i < 4; i++ {
		e := s3.next(t)
		seen[e["ref"].(string)] = true
	}
	if !seen["Player7.style@1"] {
		t.Errorf("worker-3 was not told of its own private claim: %v", seen)
	}
	all7 := tm.watch(w7, "?after=0")
	all7.next(t) // ready
	for {
		select {
		case e := <-all7.events:
			if e["ref"] == "Player7.style@1" {
				t.Fatalf("worker-7 was told of the private claim: %v", e)
			}
			continue
		case <-time.After(500 * time.Millisecond):
		}
		break
	}

	// Revoke worker-7's token: its streams end at the next commit.
	toks, _ := tm.db.Reader().Tokens(context.Background())
	for _, tok := range toks {
		if tok.Principal == "worker-7" {
			tm.db.RevokeToken(context.Background(), tok.ID, "owner")
		}
	}
	tm.query(w3, `assert Klarveld.soc2 = true by worker-3 from "src:Klarveld:rev0"`)
	deadline := time.After(5 * time.Second)
	for ended := false; !ended; {
		select {
		case e, ok := <-s7.events:
			if !ok {
				ended = true
			} else if e["ref"] == "Klarveld.soc2@1" {
				t.Fatal("a revoked token's stream got a later event")
			}
		case <-deadline:
			t.Fatal("the revoked token's stream did not end")
		}
	}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct {
	mu    sync.Mutex
	token string
}

func (b *bearerTransport) set(tok string) { b.mu.Lock(); b.token = tok; b.mu.Unlock() }

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b.mu.Lock()
	tok := b.token
	b.mu.Unlock()
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return http.DefaultTransport.RoundTrip(r)
}

// MCP over Streamable HTTP: the tools act as the token's principal; a session cannot be used
// with another principal's token, and a revoked token stops working at its next request.
func TestMCPOverHTTP(t *testing.T) {
	tm := newTeam(t, server.Options{})
	ctx := context.Background()
	connect := func(principal string) (*mcp.ClientSession, *bearerTransport) {
		bt := &bearerTransport{token: tm.tokens[principal]}
		tr := &mcp.StreamableClientTransport{Endpoint: tm.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bt}, MaxRetries: -1}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs, bt
	}
	call := func(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	}
	c3, bt3 := connect("worker-3")
	res, err := call(c3, "assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "source": "src:Klarveld:rev0"})
	if err != nil || res.IsError {
		t.Fatalf("assert: %v %+v", err, res)
	}
	res, err = call(c3, "assert", map[string]any{"subject": "Player7", "predicate": "style", "value": "patient", "seen_by": []string{"worker-3"}})
	if err != nil || res.IsError {
		t.Fatalf("assert seen by: %v %+v", err, res)
	}
	c7, _ := connect("worker-7")
	res, err = call(c7, "query", map[string]any{"statement": "live *"})
	if err != nil || res.IsError {
		t.Fatalf("query: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if strings.Contains(string(b), "patient") || !strings.Contains(string(b), "Klarveld.price_per_seat@1") {
		t.Errorf("worker-7's live *: %s", b)
	}
	live, err := tm.db.Live(ctx, "Klarveld.price_per_seat")
	if err != nil || len(live) != 1 || live[0].By != "worker-3" {
		t.Fatalf("the claim's author: %+v %v", live, err)
	}

	// worker-3's session with worker-7's token: refused.
	bt3.set(tm.tokens["worker-7"])
	if _, err := call(c3, "query", map[string]any{"statement": "live *"}); err == nil {
		t.Error("a session was used with another principal's token")
	}
	c3, _ = connect("worker-3") // (the client closes a session the server refused)

	// Revoke worker-3's token: the next request fails.
	toks, _ := tm.db.Reader().Tokens(ctx)
	for _, tok := range toks {
		if tok.Principal == "worker-3" {
			tm.db.RevokeToken(ctx, tok.ID, "owner")
		}
	}
	if _, err := call(c3, "query", map[string]any{"statement": "live *"}); err == nil {
		t.Error("a revoked token still works")
	}
}
