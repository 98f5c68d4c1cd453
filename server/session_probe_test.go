package server_test

import (
	"net/http"
	"testing"

	"github.com/mql-dev/mql/server"
)

// GET /v1/session, which the page asks on every load: with no credential at all it answers 204
// (nobody is signed in, and a browser would log a 401 as an error); with a cookie that no
// longer signs in it answers 401 and clears the cookie; with a bad bearer token, 401 as ever;
// with a live session, who it is.
func TestSessionProbe(t *testing.T) {
	tm := newTeam(t, server.Options{})
	get := func(ck *http.Cookie, bearer string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, tm.http.URL+"/v1/session", nil)
		if ck != nil {
			req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
		}
		resp := do(t, req, bearer)
		resp.Body.Close()
		return resp
	}
	cleared := func(resp *http.Response) bool {
		for _, c := range resp.Cookies() {
			if c.Name == server.SessionCookie && c.MaxAge < 0 && c.HttpOnly && c.SameSite == http.SameSiteStrictMode {
				return true
			}
		}
		return false
	}
	if resp := get(nil, ""); resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) > 0 {
		t.Errorf("no credential: %d %v", resp.StatusCode, resp.Cookies())
	}
	if resp := get(&http.Cookie{Name: server.SessionCookie, Value: "forged"}, ""); resp.StatusCode != http.StatusUnauthorized || !cleared(resp) {
		t.Errorf("a forged cookie: %d %v", resp.StatusCode, resp.Cookies())
	}
	if resp := get(nil, "mql_nope_nope"); resp.StatusCode != http.StatusUnauthorized || cleared(resp) {
		t.Errorf("a bad token: %d %v", resp.StatusCode, resp.Cookies())
	}
	_, _, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-3"]))
	if resp := get(ck, ""); resp.StatusCode != http.StatusOK || cleared(resp) {
		t.Errorf("a live session: %d %v", resp.StatusCode, resp.Cookies())
	}
	if code, _ := withCookie(t, http.DefaultClient, http.MethodDelete, tm.http.URL+"/v1/session", ck, "", ""); code != http.StatusNoContent {
		t.Fatalf("sign out: %d", code)
	}
	if resp := get(ck, ""); resp.StatusCode != http.StatusUnauthorized || !cleared(resp) {
		t.Errorf("a signed-out session: %d %v", resp.StatusCode, resp.Cookies())
	}
}
