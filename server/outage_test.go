package server_test

import (
	"bufio"
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/pgtest"
	"github.com/mql-dev/mql/internal/syncbuf"
	"github.com/mql-dev/mql/server"
)

// pgOutage makes the PostgreSQL database of dsn refuse every connection, and ends those it
// has, until the returned function is called: a real outage of that one database, on the
// test server that other tests share.
func pgOutage(t *testing.T, dsn string) (restore func()) {
	t.Helper()
	admin, err := sql.Open("postgres", pgtest.Server(t))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	exec := func(q string) {
		t.Helper()
		if _, err := admin.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS false`)
	exec(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '` + name + `' AND pid <> pg_backend_pid()`)
	restored := false
	restore = func() {
		if !restored {
			restored = true
			exec(`ALTER DATABASE "` + name + `" ALLOW_CONNECTIONS true`)
		}
	}
	t.Cleanup(func() { restore(); admin.Close() })
	return restore
}

// While PostgreSQL cannot be reached, a valid token and a signed-in web session get 503, logged
// as storage, never the 401 of a revoked token; once it is back, both work again, the session
// included.
func TestStorageOutageIsNotUnauthorized(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	db := openWorker(ctx, t, dsn)
	tok, _, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	// A short heartbeat re-checks the change feed's token soon; a long poll leaves the check to it.
	srv := server.New(db, db, server.Options{Logger: slog.New(slog.NewJSONHandler(&log, nil)), Heartbeat: 50 * time.Millisecond, Poll: time.Hour})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	bearer := func(method, path, body string) (int, string) {
		t.Helper()
		return send(t, method, hs.URL+path, tok, body)
	}
	resp, _, ck := signIn(t, http.DefaultClient, hs.URL, "application/json", tokenBody(tok))
	if resp.StatusCode != http.StatusOK || ck == nil {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	if code, body := bearer(http.MethodPost, "/v1/query", "stats"); code != http.StatusOK {
		t.Fatalf("before the outage: %d %s", code, body)
	}

	req, _ := http.NewRequest(http.MethodGet, hs.URL+"/v1/watch", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	feed, err := http.DefaultClient.Do(req)
	if err != nil || feed.StatusCode != http.StatusOK {
		t.Fatalf("watch: %v %v", feed, err)
	}
	defer feed.Body.Close()

	restore := pgOutage(t, dsn)
	// The change feed opened before the outage ends with a storage error, not "unauthorized".
	sc := bufio.NewScanner(feed.Body)
	for sc.Scan() && sc.Text() != "event: error" {
	}
	if !sc.Scan() || strings.Contains(sc.Text(), "unauthorized") || !strings.Contains(sc.Text(), "storage failure") {
		t.Errorf("the change feed during the outage ended with %q, want a storage failure", sc.Text())
	}
	for _, path := range []string{"/v1/query", "/v1/watch", "/mcp"} {
		method := http.MethodPost
		if path == "/v1/watch" {
			method = http.MethodGet
		}
		if code, body := bearer(method, path, "stats"); code != http.StatusServiceUnavailable || strings.Contains(body, "unauthorized") {
			t.Errorf("a valid token on %s during the outage: %d %q, want 503 saying the store cannot be read", path, code, body)
		}
	}
	if code, body := withCookie(t, http.DefaultClient, http.MethodGet, hs.URL+"/v1/session", ck, "", ""); code != http.StatusServiceUnavailable {
		t.Errorf("the web session during the outage: %d %q, want 503", code, body)
	}
	if resp, body, _ := signIn(t, http.DefaultClient, hs.URL, "application/json", tokenBody(tok)); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a sign-in during the outage: %d %q, want 503", resp.StatusCode, body)
	}
	for _, l := range logLines(t, &log) {
		if l["outcome"] == "unauthorized" {
			t.Errorf("logged as unauthorized: %v", l)
		}
	}
	if !strings.Contains(log.String(), `"outcome":"storage"`) {
		t.Errorf("no request logged with outcome storage:\n%s", log.String())
	}

	restore()
	if code, body := bearer(http.MethodPost, "/v1/query", "stats"); code != http.StatusOK {
		t.Errorf("the token after the outage: %d %s", code, body)
	}
	if code, body := withCookie(t, http.DefaultClient, http.MethodGet, hs.URL+"/v1/session", ck, "", ""); code != http.StatusOK || !strings.Contains(body, `"principal":"worker-3"`) {
		t.Errorf("the web session after the outage: %d %s", code, body)
	}
}

// stillValid is an Authenticator that goes on answering for a token while the store is down:
// a token checked just before an outage, so that the principal's own lookup is what fails.
type stillValid struct{ principal string }

func (a stillValid) Authenticate(context.Context, string) (string, error) { return a.principal, nil }

// A principal the request acts as that cannot be looked up because the store cannot be read is
// an outage, 503 logged as storage, on every path that looks it up: never the 400 of a
// principal the store does not know.
func TestPrincipalLookupOutageIs503(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	db := openWorker(ctx, t, dsn)
	var log syncbuf.Buffer
	srv := server.New(db, stillValid{"worker-3"}, server.Options{Logger: slog.New(slog.NewJSONHandler(&log, nil)), Poll: time.Hour})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	local := httptest.NewServer(srv.LocalHandler())
	defer local.Close()

	do := func(base, method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer any")
		req.Header.Set("Mql-As", "worker-3")
		if path == "/mcp" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode == http.StatusOK && path == "/v1/watch" {
			return resp.StatusCode, "" // a change feed: it goes on until closed
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	type call struct{ base, method, path, body string }
	calls := []call{
		{hs.URL, http.MethodPost, "/v1/query", "stats"},
		{hs.URL, http.MethodGet, "/v1/watch", ""},
		{hs.URL, http.MethodGet, "/v1/catalog", ""},
		{hs.URL, http.MethodGet, "/v1/review-queue", ""},
		{hs.URL, http.MethodPost, "/mcp", initialize},
		{local.URL, http.MethodPost, "/v1/query", "stats"},
		{local.URL, http.MethodGet, "/v1/conninfo", ""},
		{local.URL, http.MethodGet, "/v1/export", ""},
	}
	for _, c := range calls {
		if code, body := do(c.base, c.method, c.path, c.body); code != http.StatusOK {
			t.Fatalf("%s %s before the outage: %d %s", c.method, c.path, code, body)
		}
	}
	restore := pgOutage(t, dsn)
	for _, c := range calls {
		if code, body := do(c.base, c.method, c.path, c.body); code != http.StatusServiceUnavailable || !strings.Contains(body, "storage failure") {
			t.Errorf("%s %s as worker-3 during the outage: %d %q, want 503 saying the store cannot be read", c.method, c.path, code, body)
		}
	}
	for _, l := range logLines(t, &log) {
		if l["status"] == float64(http.StatusServiceUnavailable) && l["outcome"] != "storage" {
			t.Errorf("a 503 logged with outcome %v, want storage: %v", l["outcome"], l)
		}
	}
	restore()
	if code, body := do(local.URL, http.MethodPost, "/v1/query", "stats"); code != http.StatusOK {
		t.Errorf("after the outage: %d %s", code, body)
	}
}
