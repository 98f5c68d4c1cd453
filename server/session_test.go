package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
	"github.com/mql-dev/mql/web"
)

// signIn posts a sign-in body and returns the response (its body read) and the session cookie.
func signIn(t *testing.T, c *http.Client, base, contentType, body string) (*http.Response, string, *http.Cookie) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/session", strings.NewReader(body))
	req.Header.Set("Content-Type", contentType)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, ck := range resp.Cookies() {
		if ck.Name == server.SessionCookie {
			return resp, string(b), ck
		}
	}
	return resp, string(b), nil
}

// withCookie makes a request carrying the session cookie (and no Authorization header).
func withCookie(t *testing.T, c *http.Client, method, url string, ck *http.Cookie, contentType, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if ck != nil {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tokenBody(tok string) string {
	b, _ := json.Marshal(server.SignInRequest{Token: tok})
	return string(b)
}

// The page signs in with a token in a JSON body and gets a session cookie that script cannot
// read and other sites cannot make the browser send; the cookie then reads as the token's
// principal, through every read the page uses.
func TestSignInSetsAStrictHttpOnlyCookie(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3 := tm.tokens["worker-3"]
	tm.query(w3, `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0"
assert Player7.style = "patient" by worker-3 seen by worker-3`)

	resp, body, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-7"]))
	if resp.StatusCode != http.StatusOK || ck == nil {
		t.Fatalf("sign in: %d %s", resp.StatusCode, body)
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/" || ck.Secure {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP", ck)
	}
	if strings.Contains(ck.Value, tm.tokens["worker-7"]) || strings.Contains(body, tm.tokens["worker-7"]) {
		t.Error("the cookie or the answer holds the token")
	}
	var info server.SessionInfo
	if err := json.Unmarshal([]byte(body), &info); err != nil || info.Principal != "worker-7" || info.Owner || !info.ReadOnly {
		t.Errorf("session info %s: %v", body, err)
	}

	code, got := withCookie(t, http.DefaultClient, http.MethodPost, tm.http.URL+"/v1/query", ck, "application/json", `{"script": "live *\nwhy Klarveld.price_per_seat"}`)
	if code != http.StatusOK || !strings.Contains(got, "Klarveld.price_per_seat@1") || strings.Contains(got, "patient") {
		t.Errorf("query with the cookie: %d %s", code, got)
	}
	code, got = withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/catalog", ck, "", "")
	if code != http.StatusOK || !strings.Contains(got, `"Klarveld"`) || strings.Contains(got, "Player7") {
		t.Errorf("catalog with the cookie: %d %s", code, got)
	}
	code, got = withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/session", ck, "", "")
	if code != http.StatusOK || !strings.Contains(got, `"principal":"worker-7"`) {
		t.Errorf("GET /v1/session: %d %s", code, got)
	}

	// Anything that does not sign in gets the same 401, and no cookie.
	for name, body := range map[string]string{
		"unknown token": tokenBody("mql_t9.9_" + strings.Repeat("a", 43)),
		"no token":      `{}`,
		"both":          `{"token": "` + w3 + `", "code": "x"}`,
		"unknown code":  `{"code": "abc"}`,
	} {
		resp, got, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", body)
		if resp.StatusCode != http.StatusUnauthorized || ck != nil || got != "unauthorized\n" {
			t.Errorf("%s: %d %q %v", name, resp.StatusCode, got, ck)
		}
	}
	// A cross-site HTML form cannot send JSON: a form body is refused.
	if resp, _, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/x-www-form-urlencoded", "token="+w3); resp.StatusCode != http.StatusUnsupportedMediaType || ck != nil {
		t.Errorf("a form sign-in: %d, cookie %v", resp.StatusCode, ck)
	}
	// An unknown cookie is no credential.
	if code, _ := withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/catalog", &http.Cookie{Name: server.SessionCookie, Value: "forged"}, "", ""); code != http.StatusUnauthorized {
		t.Errorf("a forged cookie: %d", code)
	}
}

// Over TLS the cookie is Secure.
func TestSessionCookieIsSecureOverTLS(t *testing.T) {
	tm := newTeam(t, server.Options{})
	ts := httptest.NewTLSServer(tm.srv.Handler())
	defer ts.Close()
	c := ts.Client()
	c.Transport.(*http.Transport).TLSClientConfig = &tls.Config{InsecureSkipVerify: true}
	resp, body, ck := signIn(t, c, ts.URL, "application/json", tokenBody(tm.tokens["worker-3"]))
	if resp.StatusCode != http.StatusOK || ck == nil || !ck.Secure || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("%d %s: cookie %+v", resp.StatusCode, body, ck)
	}
}

// A session reads only: with the cookie, a script with any write is refused whole and changes
// nothing, MCP is refused, and an unsafe request from another origin is refused.
func TestCookieSessionReadsOnly(t *testing.T) {
	tm := newTeam(t, server.Options{})
	_, _, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-3"]))
	head := func() int64 {
		h, err := tm.db.Head(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := head()
	for _, script := range []string{
		`assert Klarveld.price_per_seat = 44 by worker-3`,
		"live *\nassert Klarveld.price_per_seat = 44 by worker-3",
		`revoke Klarveld.price_per_seat@1 by worker-3`,
		`derive plan:x from Klarveld.price_per_seat by worker-3`,
	} {
		code, got := withCookie(t, http.DefaultClient, http.MethodPost, tm.http.URL+"/v1/query", ck, "text/plain", script)
		if code != http.StatusForbidden || !strings.Contains(got, "reads only") {
			t.Errorf("%q with the cookie: %d %s", script, code, got)
		}
	}
	// A script with a syntax error runs nothing, whoever sends it.
	code, got := withCookie(t, http.DefaultClient, http.MethodPost, tm.http.URL+"/v1/query", ck, "text/plain", "live *\nassert Klarveld.price_per_seat = 44 by worker-3\nlive (")
	if code != http.StatusBadRequest || !strings.Contains(got, `"class":"syntax"`) {
		t.Errorf("a write before a syntax error, with the cookie: %d %s", code, got)
	}
	if head() != before {
		t.Errorf("a write through the cookie changed the store: head %d → %d", before, head())
	}
	code, _ = withCookie(t, http.DefaultClient, http.MethodPost, tm.http.URL+"/mcp", ck, "application/json",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if code != http.StatusForbidden {
		t.Errorf("MCP with the cookie: %d", code)
	}
	// The same write with the bearer token works: the refusal is the cookie's.
	if code, qr := tm.query(tm.tokens["worker-3"], `assert Klarveld.price_per_seat = 44 by worker-3`); code != http.StatusOK {
		t.Errorf("bearer write: %d %+v", code, qr)
	}
	// Cross-origin: refused before it runs, even a read.
	req, _ := http.NewRequest(http.MethodPost, tm.http.URL+"/v1/query", strings.NewReader("live *"))
	req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site POST: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodPost, tm.http.URL+"/v1/session", strings.NewReader(tokenBody(tm.tokens["worker-3"])))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) > 0 {
		t.Errorf("a cross-site sign-in: %d %v", resp.StatusCode, resp.Cookies())
	}
}

// A session ends when its token is revoked (at its next request, and its open change feed
// stops), when it expires, and when it signs out.
func TestSessionEnds(t *testing.T) {
	tm := newTeam(t, server.Options{SessionTTL: 2 * time.Second, Heartbeat: 50 * time.Millisecond})
	ctx := context.Background()
	tok, info, err := tm.db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	_, _, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tok))
	if code, _ := withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/catalog", ck, "", ""); code != http.StatusOK {
		t.Fatalf("before revoking: %d", code)
	}
	req, _ := http.NewRequest(http.MethodGet, tm.http.URL+"/v1/watch", nil)
	req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("watch with the cookie: %v %v", err, resp)
	}
	defer resp.Body.Close()
	if _, err := tm.db.RevokeToken(ctx, info.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	ended := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		var last string
		for sc.Scan() {
			last = sc.Text()
			if strings.Contains(last, "unauthorized") {
				break
			}
		}
		ended <- last
	}()
	select {
	case last := <-ended:
		if !strings.Contains(last, "unauthorized") {
			t.Errorf("the feed ended with %q", last)
		}
	case <-time.After(5 * time.Second):
		t.Error("the change feed of a revoked token's session did not stop")
	}
	if code, _ := withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/catalog", ck, "", ""); code != http.StatusUnauthorized {
		t.Errorf("after revoking the token: %d", code)
	}

	// Sign out.
	_, _, ck = signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-3"]))
	if code, _ := withCookie(t, http.DefaultClient, http.MethodDelete, tm.http.URL+"/v1/session", ck, "", ""); code != http.StatusNoContent {
		t.Errorf("sign out: %d", code)
	}
	if code, _ := withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/catalog", ck, "", ""); code != http.StatusUnauthorized {
		t.Errorf("after signing out: %d", code)
	}

	// Expiry.
	_, _, ck = signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-3"]))
	time.Sleep(2100 * time.Millisecond)
	if code, _ := withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/catalog", ck, "", ""); code != http.StatusUnauthorized {
		t.Errorf("after the session expired: %d", code)
	}
}

// A one-time sign-in code signs in as the owner, once, within its lifetime.
func TestSignInCode(t *testing.T) {
	tm := newTeam(t, server.Options{CodeTTL: 300 * time.Millisecond})
	tm.query(tm.tokens["worker-3"], `assert Player7.style = "patient" by worker-3 seen by worker-3`)
	code := tm.srv.SignInCode()
	body := `{"code": "` + code + `"}`
	resp, got, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", body)
	if resp.StatusCode != http.StatusOK || ck == nil || !strings.Contains(got, `"owner":true`) {
		t.Fatalf("first use: %d %s", resp.StatusCode, got)
	}
	// The owner sees everything, and still only reads.
	if c, q := withCookie(t, http.DefaultClient, http.MethodPost, tm.http.URL+"/v1/query", ck, "text/plain", "live *"); c != http.StatusOK || !strings.Contains(q, "patient") {
		t.Errorf("owner's read: %d %s", c, q)
	}
	if c, _ := withCookie(t, http.DefaultClient, http.MethodPost, tm.http.URL+"/v1/query", ck, "text/plain", "principal x agent"); c != http.StatusForbidden {
		t.Errorf("owner's write through the cookie: %d", c)
	}
	if resp, _, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", body); resp.StatusCode != http.StatusUnauthorized || ck != nil {
		t.Errorf("second use: %d", resp.StatusCode)
	}
	late := tm.srv.SignInCode()
	time.Sleep(400 * time.Millisecond)
	if resp, _, _ := signIn(t, http.DefaultClient, tm.http.URL, "application/json", `{"code": "`+late+`"}`); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an expired code: %d", resp.StatusCode)
	}
}

// The page is served without a credential, with its security headers; the API answers with
// them too; the static tree lists no directory.
func TestPageIsServedWithStrictHeaders(t *testing.T) {
	tm := newTeam(t, server.Options{})
	for path, want := range map[string]int{
		"/":                                     http.StatusOK,
		"/static/app.js":                        http.StatusOK,
		"/static/app.css":                       http.StatusOK,
		"/static/vendor/cytoscape.min.js":       http.StatusOK,
		"/static/vendor/cytoscape-dagre.min.js": http.StatusOK,
		"/static/":                              http.StatusNotFound,
		"/static/vendor/":                       http.StatusNotFound,
		"/v1/catalog":                           http.StatusUnauthorized,
	} {
		resp, err := http.Get(tm.http.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
		h := resp.Header
		if h.Get("Content-Security-Policy") != web.CSP || h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("GET %s: headers %v", path, h)
		}
		if path == "/" && !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("GET /: %s", h.Get("Content-Type"))
		}
	}
}

// The catalog and the review queue answer as the principal, and as of a transaction.
func TestCatalogAndReviewQueue(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3 := tm.tokens["worker-3"]
	if code, qr := tm.query(w3, `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0"
assert Player7.style = "patient" by worker-3 seen by worker-3
derive plan:secret from Player7.style by worker-3 seen by worker-3
derive plan:pick-vendor from Klarveld.price_per_seat by worker-3
assert Klarveld.price_per_seat = 89 by worker-3 from "src:Klarveld:rev1"
assert Player7.style = "bold" by worker-3 seen by worker-3`); code != http.StatusOK {
		t.Fatalf("%d %+v", code, qr)
	}
	code, got := get(t, tm.http.URL, tm.tokens["worker-7"], "/v1/catalog")
	var c mql.Catalog
	if code != http.StatusOK || json.Unmarshal([]byte(got), &c) != nil {
		t.Fatalf("%d %s", code, got)
	}
	if strings.Contains(got, "Player7") || strings.Contains(got, "plan:secret") || len(c.Keys) != 1 || c.Keys[0] != "Klarveld.price_per_seat" ||
		len(c.Artifacts) != 1 || len(c.Principals) < 3 {
		t.Errorf("worker-7's catalog: %s", got)
	}
	if _, got := get(t, tm.http.URL, w3, "/v1/catalog"); !strings.Contains(got, "Player7.style") || !strings.Contains(got, "plan:secret") {
		t.Errorf("worker-3's catalog: %s", got)
	}
	code, got = get(t, tm.http.URL, tm.tokens["worker-7"], "/v1/review-queue")
	if code != http.StatusOK || !strings.Contains(got, "plan:pick-vendor@1") || strings.Contains(got, "plan:secret") {
		t.Errorf("worker-7's review queue: %d %s", code, got)
	}
	if _, got := get(t, tm.http.URL, w3, "/v1/review-queue"); !strings.Contains(got, "plan:secret@1") {
		t.Errorf("worker-3's review queue: %s", got)
	}
	head, _ := tm.db.Head(context.Background())
	if _, got := get(t, tm.http.URL, w3, "/v1/review-queue?tx="+itoa(head-2)); strings.Contains(got, "plan:pick-vendor") {
		t.Errorf("the review queue before the new price: %s", got)
	}
	if code, _ := get(t, tm.http.URL, w3, "/v1/review-queue?tx=x"); code != http.StatusBadRequest {
		t.Errorf("tx=x: %d", code)
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A known path asked with a method it does not take is answered 405 with the methods it does
// take; an unknown path is 404.
func TestWrongMethodIsNotAllowed(t *testing.T) {
	tm := newTeam(t, server.Options{})
	for _, tc := range []struct {
		method, path string
		code         int
		allow        string
	}{
		{http.MethodPut, "/v1/query", http.StatusMethodNotAllowed, "POST"},
		{http.MethodGet, "/v1/query", http.StatusMethodNotAllowed, "POST"},
		{http.MethodDelete, "/v1/watch", http.StatusMethodNotAllowed, "GET"},
		{http.MethodPut, "/v1/session", http.StatusMethodNotAllowed, "GET, POST, DELETE"},
		{http.MethodGet, "/v1/nothing", http.StatusNotFound, ""},
		{http.MethodPost, "/v1/catalog/x", http.StatusNotFound, ""},
	} {
		req, err := http.NewRequest(tc.method, tm.http.URL+tc.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tm.tokens["worker-3"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.code || resp.Header.Get("Allow") != tc.allow {
			t.Errorf("%s %s: %d, Allow %q; want %d, Allow %q", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Allow"), tc.code, tc.allow)
		}
	}
}

// Sessions are bounded per principal: one principal's sign-ins past the bound end its own
// oldest sessions, never another's, and never lock the owner's one-time code out.
func TestSessionsPerPrincipal(t *testing.T) {
	tm := newTeam(t, server.Options{Limits: server.Limits{Sessions: 3}})
	_, _, w7 := signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-7"]))
	var w3 []*http.Cookie
	for range 500 {
		resp, got, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-3"]))
		if resp.StatusCode != http.StatusOK || ck == nil {
			t.Fatalf("sign-in %d: %d %s", len(w3)+1, resp.StatusCode, got)
		}
		w3 = append(w3, ck)
	}
	for i, ck := range w3 {
		want := http.StatusUnauthorized
		if i >= len(w3)-3 {
			want = http.StatusOK
		}
		if code, _ := withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/session", ck, "", ""); code != want {
			t.Errorf("worker-3's session %d of %d: %d, want %d", i+1, len(w3), code, want)
		}
	}
	if code, _ := withCookie(t, http.DefaultClient, http.MethodGet, tm.http.URL+"/v1/session", w7, "", ""); code != http.StatusOK {
		t.Errorf("worker-7's session, after worker-3's sign-ins: %d", code)
	}
	resp, got, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", `{"code": "`+tm.srv.SignInCode()+`"}`)
	if resp.StatusCode != http.StatusOK || ck == nil || !strings.Contains(got, `"owner":true`) {
		t.Errorf("the owner's code, after worker-3's sign-ins: %d %s", resp.StatusCode, got)
	}
}
