package mql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// Tokens: issued by the owner only, stored as a hash, audited as records, authenticated until
// they expire or are revoked, and never in a principal's export.
func TestTokens(t *testing.T) {
	f := open(t, mql.Options{}).team()
	tok, info, err := f.db.CreateToken(f.ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, "mql_"+info.ID+"_") || len(tok) != len("mql_"+info.ID+"_")+52 {
		t.Fatalf("token %q for %+v", tok, info)
	}
	if p, err := f.db.Authenticate(f.ctx, tok); err != nil || p != "worker-3" {
		t.Fatalf("Authenticate: %q %v", p, err)
	}
	for _, bad := range []string{"", tok[:len(tok)-1], tok + "a", strings.Replace(tok, info.ID, "t99.1", 1), strings.ToUpper(tok)} {
		if _, err := f.db.Authenticate(f.ctx, bad); !errors.Is(err, mql.ErrUnauthorized) {
			t.Errorf("Authenticate(%q): %v, want ErrUnauthorized", bad, err)
		}
	}
	f.refused(mql.ErrNoStanding, func() (mql.Receipt, error) {
		_, _, err := f.db.CreateToken(f.ctx, mql.TokenSpec{Principal: "worker-3", By: "worker-3"})
		return mql.Receipt{}, err
	})
	f.refused(mql.ErrUnknownPrincipal, func() (mql.Receipt, error) {
		_, _, err := f.db.CreateToken(f.ctx, mql.TokenSpec{Principal: "nobody", By: "owner"})
		return mql.Receipt{}, err
	})
	f.refused(mql.ErrInvalid, func() (mql.Receipt, error) {
		_, _, err := f.db.CreateToken(f.ctx, mql.TokenSpec{Principal: "worker-3", By: "owner", Expires: t0.Add(-time.Hour)})
		return mql.Receipt{}, err
	})

	// Expiry, by the store's clock.
	short, _, err := f.db.CreateToken(f.ctx, mql.TokenSpec{Principal: "worker-7", By: "owner", Expires: f.clk.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := f.db.Authenticate(f.ctx, short); err != nil || p != "worker-7" {
		t.Fatalf("before expiry: %q %v", p, err)
	}
	f.clk.Add(2 * time.Minute)
	if _, err := f.db.Authenticate(f.ctx, short); !errors.Is(err, mql.ErrUnauthorized) {
		t.Errorf("after expiry: %v", err)
	}

	// Revocation.
	f.refused(mql.ErrNoStanding, func() (mql.Receipt, error) { return f.db.RevokeToken(f.ctx, info.ID, "worker-3") })
	f.ok(f.db.RevokeToken(f.ctx, info.ID, "owner"))
	if _, err := f.db.Authenticate(f.ctx, tok); !errors.Is(err, mql.ErrUnauthorized) {
		t.Errorf("after revocation: %v", err)
	}
	f.refused(mql.ErrConflict, func() (mql.Receipt, error) { return f.db.RevokeToken(f.ctx, info.ID, "owner") })
	f.refused(mql.ErrNotFound, func() (mql.Receipt, error) { return f.db.RevokeToken(f.ctx, "t99.1", "owner") })
	// As of before the revocation, the token was valid: the record says when.
	toks, err := f.db.Reader().Tokens(f.ctx)
	if err != nil || len(toks) != 2 || toks[0].Revoked == nil || toks[0].RevokedBy != "owner" || toks[1].Revoked != nil {
		t.Fatalf("Tokens: %+v %v", toks, err)
	}
	if toks, _ := f.db.As("worker-3").Tokens(f.ctx); len(toks) != 0 {
		t.Errorf("worker-3 sees tokens: %+v", toks)
	}

	// Exports: the owner's holds the records (a hash, never the secret); a principal's none.
	var owner, w3 strings.Builder
	if err := f.db.Export(f.ctx, &owner); err != nil {
		t.Fatal(err)
	}
	if err := f.db.As("worker-3").Export(f.ctx, &w3); err != nil {
		t.Fatal(err)
	}
	secret := tok[strings.LastIndexByte(tok, '_')+1:]
	if !strings.Contains(owner.String(), "<urn:mql:Token>") || strings.Contains(owner.String(), secret) {
		t.Errorf("the owner's export: token records %v, secret %v", strings.Contains(owner.String(), "<urn:mql:Token>"), strings.Contains(owner.String(), secret))
	}
	if strings.Contains(w3.String(), "urn:mql:token") {
		t.Error("worker-3's export holds token records")
	}
	// The records survive a check.
	if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
		t.Fatalf("check: %+v %v", rep.Problems, err)
	}
}

// A token outlives a reopen of the store (from the snapshot and from the quads).
func TestTokensSurviveReopen(t *testing.T) {
	path := t.TempDir() + "/t.db"
	f := openDSN(t, path, mql.Options{}).team()
	tok, info, err := f.db.CreateToken(f.ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	f.db.Close()
	db, err := mql.Open(f.ctx, path, mql.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if p, err := db.Authenticate(f.ctx, tok); err != nil || p != "worker-3" {
		t.Fatalf("after reopening: %q %v", p, err)
	}
	if _, err := db.RevokeToken(f.ctx, info.ID, "owner"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Authenticate(f.ctx, tok); !errors.Is(err, mql.ErrUnauthorized) {
		t.Fatalf("revoked after reopening: %v", err)
	}
}

// FuzzAuthenticate: a bearer token is hostile input from the network. Whatever the string,
// Authenticate does not panic, and it names a principal only for the exact token issued;
// anything else is ErrUnauthorized, with no detail.
func FuzzAuthenticate(f *testing.F) {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"}); err != nil {
		f.Fatal(err)
	}
	tok, info, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{tok, "", "mql_", "mql__", "mql_" + info.ID + "_", "mql_" + info.ID, tok + "_", "mql_" + info.ID + "_" + info.ID + "_x",
		strings.Replace(tok, "mql_", "MQL_", 1), tok[:len(tok)-1] + "\x00", "mql_" + strings.Repeat("_", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := db.Authenticate(ctx, s)
		switch {
		case s == tok:
			if err != nil || p != "worker-3" {
				t.Fatalf("the issued token: %q %v", p, err)
			}
		case !errors.Is(err, mql.ErrUnauthorized) || p != "":
			t.Fatalf("Authenticate(%q) = %q, %v; want ErrUnauthorized", s, p, err)
		case err.Error() != mql.ErrUnauthorized.Error():
			t.Fatalf("Authenticate(%q): %v says more than ErrUnauthorized", s, err)
		}
	})
}
