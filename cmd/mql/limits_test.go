package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/syncbuf"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/server"
)

// A limit flag that is not a usable value is a usage error that names it.
func TestServeRefusesBadLimits(t *testing.T) {
	for args, want := range map[string]string{
		"--max-statements 0":       "--max-statements 0: give at least 1",
		"--max-body 0":             `invalid value "0" for flag --max-body: "0" is not a size`,
		"--max-output 1XB":         `"1XB" is not a size: give a whole number of bytes above 0, or one of KiB, MiB or GiB`,
		"--max-output 9GiB9":       `is not a size`,
		"--max-body 9999999999GiB": `is not a size`,
		"--timeout 0s":             "--timeout 0s: give a duration above 0",
		"--max-sessions -1":        "--max-sessions -1: give at least 1",
		"--embedder ftp://e":       `--embedder: embedder URL "ftp://e": want http://HOST[:PORT][/PATH]`,
		"--embedder http://127.0.0.1:1 --embedder-model=": "--embedder: embedder: no model named",
	} {
		var out, errb strings.Builder
		code := runServe(context.Background(), append(strings.Fields(args), "memory:"), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("%s: exit %d, %s", args, code, errb.String())
		}
	}
}

// mql serve's limit flags bound every surface: /v1/query over HTTP, MCP at /mcp, the command
// line attached over the socket, and the web page's sessions.
func TestServeLimitFlags(t *testing.T) {
	ctx := context.Background()
	path, db := openWorkerStore(ctx, t)
	if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "BIGV", Predicate: "v", Value: mql.String(strings.Repeat("x", 2000)), By: "worker-3"}); err != nil {
		t.Fatal(err)
	}
	token, _, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: db.Owner()})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	sctx, stop := context.WithCancel(ctx)
	stderr := &syncbuf.Buffer{}
	done := make(chan int, 1)
	go func() {
		done <- runServe(sctx, []string{"--listen", "127.0.0.1:0", "--max-statements", "2", "--max-body", "300", "--max-output", "1KiB", "--max-sessions", "1", "--timeout", "5s", path}, io.Discard, stderr)
	}()
	t.Cleanup(func() { stop(); <-done })
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := regexp.MustCompile(`at (http://[0-9.:]+):`).FindStringSubmatch(stderr.String()); m != nil && strings.Contains(stderr.String(), "agents need a token") {
			base = m[1]
		}
	}
	if base == "" {
		t.Fatalf("mql serve did not start:\n%s", stderr)
	}
	query := func(script string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/query", strings.NewReader(script))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for script, want := range map[string]string{
		"stats\nstats\nstats":                  "the script has 3 statements, and at most 2 run in one request (mql serve --max-statements)",
		"stats -- " + strings.Repeat("x", 300): "the request body is over 300 bytes, the limit (mql serve --max-body)",
		"live BIGV":                            "the next would take it over 1 KiB, the output limit (mql serve --max-output)",
	} {
		if code, got := query(script); code != http.StatusRequestEntityTooLarge || !strings.Contains(got, want) {
			t.Errorf("%.20q: %d %s", script, code, got)
		}
	}

	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer(token)}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for stmt, want := range map[string]string{
		"stats; stats; stats": "3 statements, and at most 2 run in one call (mql serve --max-statements)",
		"live BIGV":           "over the output limit of 1 KiB (mql serve --max-output)",
	} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query", Arguments: map[string]any{"statement": stmt}})
		if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, want) {
			t.Errorf("MCP query %q: %v %+v", stmt, err, res)
		}
	}

	c, err := server.Attach(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Exec(ctx, "-c", "stats; stats; stats", output.Style{Format: output.FormatJSON}, func(server.Frame) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "at most 2 run in one request") {
		t.Errorf("attached: %v", err)
	}

	var cookies []*http.Cookie
	for range 2 {
		resp, err := http.Post(base+"/v1/session", "application/json", strings.NewReader(`{"token": "`+token+`"}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("sign in: %v %v", err, resp)
		}
		resp.Body.Close()
		cookies = append(cookies, resp.Cookies()[0])
	}
	for i, want := range []int{http.StatusUnauthorized, http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, base+"/v1/session", nil)
		req.AddCookie(cookies[i])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("session %d of 2 with --max-sessions 1: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// bearer is a transport that adds a bearer token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
