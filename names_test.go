package mql_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// TestUnicodeNames: names may be letters and digits of any script; a name typed composed or
// decomposed (NFC or NFD) is one name, stored in NFC; export and import keep them.
func TestUnicodeNames(t *testing.T) {
	const nfc, nfd = "Klärveld", "Kla\u0308rveld"
	f := open(t, mql.Options{})
	f.ok(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "東京", Type: mql.Agent, By: "owner"}))
	rc := f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: nfd, Predicate: "préis", Value: mql.Number(44), By: "東京", Sources: []mql.Source{{ID: "src:é"}}}))
	if rc.Ref != nfc+".préis@1" {
		t.Fatalf("receipt %q: the name is not stored in NFC", rc.Ref)
	}
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: nfc, Predicate: "pre\u0301is", Value: mql.Number(89), By: "東京", Sources: []mql.Source{{ID: "src:e\u0301"}}}))
	for _, ref := range []string{nfc + ".préis", nfd + ".pre\u0301is"} {
		h, err := f.db.History(f.ctx, ref)
		if err != nil || len(h.Claims) != 2 {
			t.Fatalf("history %q: %v %+v", ref, err, h)
		}
	}
	if live, err := f.db.As("東京").Live(f.ctx, nfd); err != nil || len(live) != 1 || live[0].Value.Num != 89 {
		t.Fatalf("live: %v %+v", err, live)
	}
	// Export and import keep the names.
	exp := f.export()
	g := imported(t, exp)
	if n, err := g.db.Why(g.ctx, nfc+".préis"); err != nil || n.Claim.By != "東京" {
		t.Fatalf("why after the import: %v %+v", err, n)
	}
	// An import that spells a name decomposed is refused at its line: mql never writes one, and
	// an import is exact, so it does not change what it imports.
	decomposed := strings.ReplaceAll(strings.ReplaceAll(exp, "Kl%C3%A4rveld", "Kla%CC%88rveld"), nfc, nfd)
	if decomposed == exp {
		t.Fatal("the export does not hold the escaped name")
	}
	h := open(t, mql.Options{})
	var ie *mql.ImportError
	if err := h.db.Import(h.ctx, strings.NewReader(decomposed)); !errors.As(err, &ie) || ie.Line == 0 || !strings.Contains(err.Error(), "NFC") {
		t.Fatalf("importing a decomposed name: %v", err)
	}
	if n, _ := h.db.Head(h.ctx); n != 1 {
		t.Fatalf("a refused import left %d transactions", n)
	}
	// Still refused: what is not a letter or a digit.
	for _, bad := range []string{"a b", "€uro", "x--y", "1st"} {
		if _, err := f.db.Assert(context.Background(), mql.AssertSpec{Subject: bad, Predicate: "p", Value: mql.Number(1), By: "owner"}); err == nil {
			t.Errorf("subject %q accepted", bad)
		}
	}
}

// TestImportRefusesBadNames: a file naming a run, or a principal, with what no write accepts
// as a name (a control character, 5,000 bytes) is refused by import, as check reports it:
// the language could never name it again, and the limits of names hold for every store.
func TestImportRefusesBadNames(t *testing.T) {
	f := runScenario(t)
	exp := f.export()
	for _, tc := range []struct{ name, text, want string }{
		{"run with an escape", strings.Replace(exp, `<urn:mql:run> "r1"`, `<urn:mql:run> "r\u001b1"`, 1), `run "r\x1b1": bad reference`},
		{"run of 5000 bytes", strings.Replace(exp, `<urn:mql:run> "r1"`, `<urn:mql:run> "`+strings.Repeat("r", 5000)+`"`, 1), "names are at most 256 bytes"},
		{"principal with an escape", strings.ReplaceAll(strings.ReplaceAll(exp, "urn:mql:principal:worker-7", "urn:mql:principal:worker%1B7"), `"worker-7"`, `"worker\u001b7"`), `principal "worker\x1b7": bad reference`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.text == exp {
				t.Fatal("the edit changed nothing")
			}
			_, err := mql.ImportStore(context.Background(), filepath.Join(t.TempDir(), "copy.db"), strings.NewReader(tc.text), mql.Options{})
			if !errors.Is(err, mql.ErrBadImport) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a refusal saying %s", err, tc.want)
			}
		})
	}
}
