package query_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

func openDB(t *testing.T) *mql.DB {
	t.Helper()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	db, err := mql.Open(context.Background(), "memory:", mql.Options{Clock: func() time.Time { now = now.Add(time.Second); return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

const story = `
principal alice user
principal worker-3 agent
principal worker-7 agent
principal orchestrator agent
grant alice revoke on price_per_seat by owner
assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0" confidence 0.9
assert Klarveld.region = "EU" by worker-3 from "src:Klarveld:rev0"
assert Klarveld.soc2 = true by worker-3 from "src:Klarveld:rev0"
derive plan:pick-vendor from Klarveld.price_per_seat by orchestrator
assert Klarveld.price_per_seat = 89 by worker-7 from "src:Klarveld:rev1"
impact Klarveld.price_per_seat@1
why Klarveld.price_per_seat
find ?v, ?p where ?v.soc2 = true, ?v.region = "EU", ?v.price_per_seat = ?p order by ?p limit 1
revoke Klarveld.price_per_seat@2 by alice because "misread the page"
revoked-by Klarveld.price_per_seat@2
as of tx 10 live Klarveld.price_per_seat
context Klarveld budget 60
stats
`

func TestSessionStory(t *testing.T) {
	db := openDB(t)
	s := query.NewSession(db, "")
	var kinds []string
	var results []*query.Result
	err := s.Exec(context.Background(), "story.mql", story, func(r *query.Result) error {
		kinds = append(kinds, r.Kind)
		results = append(results, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, " "); got != "principal principal principal principal grant assert assert assert derive assert impact why find revoke revoked-by live context stats" {
		t.Fatalf("kinds: %s", got)
	}
	imp := results[10].Impact
	if len(imp.Dependents) != 1 || imp.Dependents[0].Artifact.Review != mql.NeedsReview {
		t.Errorf("impact = %+v", imp)
	}
	if f := results[12].Find; len(f.Rows) != 1 || f.Rows[0].Values[1].Num != 89 {
		t.Errorf("find = %+v", f)
	}
	if rb := results[14].RevokedBy; rb.Revocation == nil || rb.Revocation.Because != "misread the page" {
		t.Errorf("revoked-by = %+v", rb)
	}
	if l := results[15].Claims; len(l) != 1 || l[0].Value.Num != 44 {
		t.Errorf("as of tx 10 = %+v", l)
	}
	if c := results[16].Context; !strings.Contains(c.Text, "region=\"EU\" @1") || strings.Contains(c.Text, "price_per_seat") {
		t.Errorf("context = %q", c.Text)
	}
}

// A script that fails at statement k has applied 1..k-1 and nothing of k.
func TestSessionStopsAtFirstError(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      error
		applied   int
	}{
		{"evaluation error", "principal a agent\nprincipal b agent\nassert K.p = 1 by ghost\nprincipal c agent", mql.ErrUnknownPrincipal, 2},
		{"syntax error", "principal a agent\nprincipal b agent\nassert K.p = by a\nprincipal c agent", query.ErrSyntax, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db := openDB(t)
			n := 0
			err := query.NewSession(db, "").Exec(context.Background(), "s.mql", tt.src, func(*query.Result) error { n++; return nil })
			if !errors.Is(err, tt.want) || !strings.HasPrefix(err.Error(), "s.mql:3:") {
				t.Fatalf("error %v, want %v at s.mql:3", err, tt.want)
			}
			head, _ := db.Head(context.Background())
			if n != tt.applied || head != int64(1+tt.applied) {
				t.Fatalf("applied %d statements, head %d", n, head)
			}
		})
	}
}

func TestSessionActsAsOnePrincipal(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	if err := query.NewSession(db, "").Exec(ctx, "setup", "principal w3 agent\nprincipal w7 agent\nassert K.secret = 1 by w7 seen by w7", nil); err != nil {
		t.Fatal(err)
	}
	s := query.NewSession(db, "w3")
	if err := s.Exec(ctx, "x", "assert K.p = 1 by w7", nil); !errors.Is(err, query.ErrActAs) {
		t.Errorf("writing by another principal: %v", err)
	}
	if err := s.Exec(ctx, "x", "as w7 live *", nil); !errors.Is(err, query.ErrActAs) {
		t.Errorf("reading as another principal: %v", err)
	}
	var live []mql.Claim
	s.Exec(ctx, "x", "live *", func(r *query.Result) error { live = r.Claims; return nil })
	if len(live) != 0 {
		t.Errorf("w3 sees %+v", live)
	}
}

// TestSessionTransfer: the session's principal decides what an export holds (issue 11, item 2:
// \export under --as wrote the owner's export), and only the owner imports.
func TestSessionTransfer(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	if err := query.NewSession(db, "").Exec(ctx, "setup", "principal w1 agent\nprincipal w2 agent\nassert K.h = 1 by w2 seen by w2\nassert K.g = 2 by w1", nil); err != nil {
		t.Fatal(err)
	}
	export := func(as string) string {
		var b strings.Builder
		if err := query.NewSession(db, as).Export(ctx, &b); err != nil {
			t.Fatalf("export as %q: %v", as, err)
		}
		return b.String()
	}
	var want strings.Builder
	if err := db.As("w1").Export(ctx, &want); err != nil {
		t.Fatal(err)
	}
	if got := export("w1"); got != want.String() || strings.Contains(got, "claim:K.h@") {
		t.Errorf("w1's export is not what w1 may see:\n%s", got)
	}
	var all strings.Builder
	db.Export(ctx, &all)
	for _, as := range []string{"", "owner"} {
		if got := export(as); got != all.String() {
			t.Errorf("the owner's export (as %q) differs from the store's", as)
		}
	}
	if !strings.Contains(all.String(), "claim:K.h@") {
		t.Fatal("the test's claim is not in the owner's export")
	}

	dst, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	query.NewSession(dst, "").Exec(ctx, "setup", "principal w1 agent", nil)
	if err := query.NewSession(dst, "w1").Import(ctx, strings.NewReader(all.String())); !errors.Is(err, query.ErrActAs) || !strings.Contains(err.Error(), "only the owner") {
		t.Errorf("import as w1: %v", err)
	}
}

// TestSessionTransactions: begin … commit is one transaction, all or nothing: later
// statements see the earlier ones (a revocation of a claim asserted in it, a derivation from
// it, a read of it), results come at the commit, and a failure writes nothing and says so.
func TestSessionTransactions(t *testing.T) {
	ctx := context.Background()
	run := func(s *query.Session, src string) ([]string, error) {
		var out []string
		err := s.Exec(ctx, "tx.mql", src, func(r *query.Result) error {
			line := r.Kind
			if r.Receipt != nil {
				line += " " + r.Receipt.Ref + " tx" + strconv.FormatInt(r.Receipt.Tx, 10)
			}
			if r.Control != nil {
				line += " tx" + strconv.FormatInt(r.Control.Tx, 10) + " n" + strconv.Itoa(r.Control.Statements)
			}
			if r.Kind == "live" {
				for _, c := range r.Claims {
					line += " " + c.Ref
				}
			}
			out = append(out, line)
			return nil
		})
		return out, err
	}
	db := openDB(t)
	s := query.NewSession(db, "")
	got, err := run(s, `principal w agent
begin
principal alice user
assert K.p = 1 by w from "s"
live K
assert K.p = 2 by alice from "s"
revoke K.p@2 by alice replaced by K.p@1
derive plan from K.p by w
commit
live K`)
	if err != nil {
		t.Fatal(err)
	}
	want := "principal w tx2|principal alice tx3|assert K.p@1 tx3|live K.p@1|assert K.p@2 tx3|revoke K.p@2 tx3|derive plan@1 tx3|commit tx3 n6|live K.p@1"
	if strings.Join(got, "|") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}

	// A failing statement rolls everything back and emits nothing of the block.
	head, _ := db.Head(ctx)
	got, err = run(s, "begin\nassert K.p = 3 by w\nassert K.q = 1 by nobody\ncommit\nstats")
	var te *query.TxError
	if !errors.As(err, &te) || !errors.Is(err, mql.ErrUnknownPrincipal) || !strings.Contains(err.Error(), "tx.mql:3:1: ") ||
		!strings.Contains(err.Error(), "the transaction begun at 1:1 was rolled back: nothing of it was written") || len(got) != 0 {
		t.Fatalf("failed block: %v, emitted %q", err, got)
	}
	if h, _ := db.Head(ctx); h != head {
		t.Fatalf("a failed block wrote: head %d → %d", head, h)
	}
	// A rollback evaluates nothing; reads only, or no-ops only, commit nothing.
	got, err = run(s, "begin\nassert K.p = 3 by nobody\nrollback\nbegin\nlive K\nprincipal w agent\ncommit")
	if err != nil || strings.Join(got, "|") != "rollback tx0 n1|live K.p@1|principal w tx2|commit tx0 n2" {
		t.Fatalf("rollback, reads: %v %q", err, got)
	}
	// Structure errors, at their statements.
	for src, msg := range map[string]string{
		"commit":                            "tx.mql:1:1: commit without begin: no transaction is open",
		"rollback":                          "tx.mql:1:1: rollback without begin",
		"begin\nbegin\ncommit":              "tx.mql:2:1: begin inside a transaction (begun at 1:1)",
		"stats\nbegin\nassert K.p = 4 by w": "tx.mql:2:1: the script ended inside the transaction begun here: nothing of it was written",
	} {
		_, err := run(s, src)
		if err == nil || !strings.Contains(err.Error(), msg) || !errors.Is(err, query.ErrSyntax) {
			t.Errorf("%q: %v, want %q", src, err, msg)
		}
	}
	if h, _ := db.Head(ctx); h != head {
		t.Fatalf("head %d → %d", head, h)
	}
}

// HoldWith judges each result a transaction holds as it is evaluated; its error rolls the
// transaction back at that statement, before anything is emitted or written.
func TestSessionHoldWith(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := query.NewSession(db, "")
	errTooMuch := errors.New("too much held")
	held := 0
	s.HoldWith(func(r *query.Result) error {
		if held++; held > 2 {
			return errTooMuch
		}
		return nil
	})
	emitted := 0
	err := s.Exec(ctx, "tx.mql", "principal w agent\nbegin\nassert K.a = 1 by w\nassert K.b = 1 by w\nassert K.c = 1 by w\ncommit", func(*query.Result) error { emitted++; return nil })
	var txe *query.TxError
	if !errors.Is(err, errTooMuch) || !errors.As(err, &txe) || txe.Err.Pos.Line != 5 || !strings.Contains(err.Error(), "rolled back: nothing of it was written") {
		t.Fatalf("%v", err)
	}
	if emitted != 1 {
		t.Errorf("%d results emitted, want the principal's only", emitted)
	}
	if claims, _ := db.Live(ctx, "K"); len(claims) != 0 {
		t.Errorf("the transaction wrote %d claims", len(claims))
	}
}
