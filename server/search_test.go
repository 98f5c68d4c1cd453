package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/mql-dev/mql/server"
)

// POST /v1/query runs search as the token's principal: what another principal keeps to itself
// is not found, and the rows carry their scores.
func TestQuerySearch(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3, w7 := tm.tokens["worker-3"], tm.tokens["worker-7"]
	if code, qr := tm.query(w3, `assert Klarveld.pricing_note = "EU pricing for teams" by worker-3
assert Brimsole.pricing_note = "EU pricing, ours only" by worker-3 seen by worker-3`); code != http.StatusOK {
		t.Fatalf("writes: %d %+v", code, qr)
	}
	for _, c := range []struct {
		token string
		want  []string
	}{{w3, []string{"Klarveld.pricing_note@1", "Brimsole.pricing_note@1"}}, {w7, []string{"Klarveld.pricing_note@1"}}} {
		code, qr := tm.query(c.token, `search "EU pricing" limit 5`)
		if code != http.StatusOK || len(qr.Results) != 1 {
			t.Fatalf("search: %d %+v", code, qr)
		}
		rs := rows(t, qr.Results[0])
		var got []string
		for _, r := range rs {
			if _, ok := r["score"].(float64); !ok {
				t.Errorf("row without a score: %v", r)
			}
			got = append(got, r["ref"].(string))
		}
		if len(got) != len(c.want) {
			t.Errorf("search: %v, want %v (in some order)", got, c.want)
		}
		for _, w := range c.want {
			found := false
			for _, g := range got {
				found = found || g == w
			}
			if !found {
				t.Errorf("search: %v, want %v", got, c.want)
			}
		}
	}
	if code, qr := tm.query(w7, `search "  "`); code != http.StatusUnprocessableEntity || qr.Error == nil {
		t.Errorf("an empty search: %d %+v, want 422 and the error", code, qr)
	}
}

// POST /v1/query runs context for a question as the token's principal: the context text holds
// only what it may see, and a bad question is refused with the library's message.
func TestQueryContextFor(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3, w7 := tm.tokens["worker-3"], tm.tokens["worker-7"]
	if code, qr := tm.query(w3, `assert Klarveld.pricing_note = "EU pricing for teams" by worker-3
assert Brimsole.pricing_note = "EU pricing, ours only" by worker-3 seen by worker-3`); code != http.StatusOK {
		t.Fatalf("writes: %d %+v", code, qr)
	}
	for _, c := range []struct {
		token, want string
	}{
		{w3, "Klarveld: pricing_note=\"EU pricing for teams\" @1\nBrimsole: pricing_note=\"EU pricing, ours only\" @1\n"},
		{w7, "Klarveld: pricing_note=\"EU pricing for teams\" @1\n"},
	} {
		code, qr := tm.query(c.token, `context for "EU pricing for teams" budget 100`)
		if code != http.StatusOK || len(qr.Results) != 1 {
			t.Fatalf("context for: %d %+v", code, qr)
		}
		if rs := rows(t, qr.Results[0]); len(rs) != 1 || rs[0]["text"] != c.want || rs[0]["question"] != "EU pricing for teams" {
			t.Errorf("context for: %v, want the text %q", rs, c.want)
		}
	}
	if code, qr := tm.query(w7, `context for "  "`); code != http.StatusUnprocessableEntity || qr.Error == nil {
		t.Errorf("an empty question: %d %+v, want 422 and the error", code, qr)
	}
}

// The web page searches with its session cookie, which only reads: search and context for a
// question answer as the cookie's principal, and one made for a run, which records, is refused.
func TestCookieSessionSearches(t *testing.T) {
	tm := newTeam(t, server.Options{})
	before, err := tm.db.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if code, qr := tm.query(tm.tokens["worker-3"], `assert Klarveld.pricing_note = "EU pricing for teams" by worker-3
assert Brimsole.pricing_note = "EU pricing, ours only" by worker-3 seen by worker-3`); code != http.StatusOK {
		t.Fatalf("writes: %d %+v", code, qr)
	}
	_, _, ck := signIn(t, http.DefaultClient, tm.http.URL, "application/json", tokenBody(tm.tokens["worker-7"]))
	for _, c := range []struct {
		script string
		code   int
		has    []string
		hasNot []string
	}{
		{`search "EU pricing" limit 50`, http.StatusOK, []string{"Klarveld.pricing_note@1", `"score"`}, []string{"Brimsole", "ours only"}},
		{fmt.Sprintf(`as of tx %d search "EU pricing"`, before), http.StatusOK, []string{`"rows":[]`}, []string{"Klarveld.pricing_note"}},
		{`context for "EU pricing"`, http.StatusOK, []string{`Klarveld: pricing_note=\"EU pricing for teams\" @1`}, []string{"Brimsole"}},
		{`search "EU pricing" for run r-1`, http.StatusForbidden, []string{"reads only"}, nil},
	} {
		code, body := withCookie(t, http.DefaultClient, http.MethodPost, tm.http.URL+"/v1/query", ck, "text/plain", c.script)
		if code != c.code {
			t.Errorf("%s: %d %s, want %d", c.script, code, body, c.code)
		}
		for _, s := range c.has {
			if !strings.Contains(body, s) {
				t.Errorf("%s: %s lacks %s", c.script, body, s)
			}
		}
		for _, s := range c.hasNot {
			if strings.Contains(body, s) {
				t.Errorf("%s: %s holds %s", c.script, body, s)
			}
		}
	}
}
