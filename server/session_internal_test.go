package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// Revoking a token through the server ends the sessions it made at once: the server stops
// holding them, while the sessions of the principal's other tokens go on.
func TestRevokingATokenEndsItsSessions(t *testing.T) {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"}); err != nil {
		t.Fatal(err)
	}
	revoked, info, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	kept, _, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(db, db, Options{})
	defer srv.Close()
	api, local := httptest.NewServer(srv.Handler()), httptest.NewServer(srv.LocalHandler())
	defer api.Close()
	defer local.Close()
	signIn := func(tok string) {
		resp, err := http.Post(api.URL+"/v1/session", "application/json", strings.NewReader(`{"token": "`+tok+`"}`))
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("sign in: %v %v", err, resp)
		}
		resp.Body.Close()
	}
	for range 5 {
		signIn(revoked)
	}
	signIn(kept)
	held := func() (n int) {
		srv.sessions.mu.Lock()
		defer srv.sessions.mu.Unlock()
		return len(srv.sessions.byKey)
	}
	if n := held(); n != 6 {
		t.Fatalf("%d sessions held, want 6", n)
	}
	resp, err := http.Post(local.URL+"/v1/tokens/"+info.ID+"/revoke", "application/json", nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("revoke: %v %v", err, resp)
	}
	resp.Body.Close()
	if n := held(); n != 1 {
		t.Errorf("after revoking the token of 5 sessions: %d sessions held, want 1", n)
	}
}
