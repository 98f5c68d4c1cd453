package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/examples/internal/exflag"
	"github.com/mql-dev/mql/examples/internal/extest"
	"github.com/mql-dev/mql/internal/pgtest"
)

// The architect, reading as architect, never sees an engine-only claim through any statement;
// the owner sees them all, so every check is looking at something that exists.
func TestPerceptionConstraint(t *testing.T) {
	ctx := context.Background()
	for _, seed := range []uint64{1, 2, 3} {
		g, err := play(ctx, "memory:", seed)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := audit(ctx, g.db)
		g.db.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{"live": true, "find": true, "why": true, "history": true, "impact": true, "context": true, "stats": true, "export": true}
		for _, r := range rows {
			delete(want, r.statement)
			if r.architect != 0 {
				t.Errorf("seed %d: %s shows the architect %d engine-only items", seed, r.statement, r.architect)
			}
			if r.owner == 0 {
				t.Errorf("seed %d: %s shows the owner nothing: the check is vacuous", seed, r.statement)
			}
		}
		if len(want) > 0 {
			t.Errorf("statements not audited: %v", want)
		}
	}
}

// The audit is not blind: an engine claim written without `seen by` is caught.
func TestAuditCatchesALeak(t *testing.T) {
	ctx := context.Background()
	g, err := play(ctx, "memory:", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.db.Close()
	if _, err := g.db.Assert(ctx, mql.AssertSpec{Subject: "Vault", Predicate: "guard_rota", Value: mql.String("changes at the third bell"), By: engine}); err != nil {
		t.Fatal(err)
	}
	rows, err := audit(ctx, g.db)
	if err != nil {
		t.Fatal(err)
	}
	caught := map[string]int{}
	for _, r := range rows {
		caught[r.statement] = r.architect
	}
	for _, s := range []string{"live", "find", "context", "export", "stats"} {
		if caught[s] == 0 {
			t.Errorf("%s did not catch a claim visible to all", s)
		}
	}
}

// Retrieval by recency, graduation, and revocation putting the summary up for review until it
// is reviewed or derived again.
func TestMemoryLoop(t *testing.T) {
	ctx := context.Background()
	g, err := play(ctx, "memory:", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.db.Close()
	row := func(n int) encounterRow { return g.rows[n-1] }

	if r := row(5); r.summaryAfter != "summary:Player7@1" || r.reviewedAfter != mql.ReviewOK {
		t.Errorf("Player7's third encounter should graduate a first summary: %+v", r)
	}
	if r := row(7); !strings.Contains(r.event, "summary:Player7@1 needs review") || r.reviewedAfter != mql.ReviewOK {
		t.Errorf("encounter 7: revoking should put the summary in the impact set, then the review clears it: %+v", r)
	}
	if r := row(10); !strings.Contains(r.event, "needs review") || r.reviewedAfter != mql.NeedsReview {
		t.Errorf("encounter 10: the summary should stay in review: %+v", r)
	}
	if r := row(11); r.summary != "summary:Player7@1 needs review" || r.summaryAfter != "summary:Player7@2" || r.reviewedAfter != mql.ReviewOK {
		t.Errorf("encounter 11: deriving again should supersede the summary under review: %+v", r)
	}

	// What the architect recalls: at most `recall` impressions, newest first, none revoked.
	mem, n, summary, err := g.memory(ctx, "Player7")
	if err != nil {
		t.Fatal(err)
	}
	if n != recall || summary != "summary:Player7@2 ok" || !strings.HasPrefix(mem, "Long-term memory of Player7: Across 6 encounters") {
		t.Errorf("memory: %d impressions, summary %q:\n%s", n, summary, mem)
	}
	if strings.Contains(mem, themes["fearful"][0]) {
		t.Errorf("recalled a revoked impression:\n%s", mem)
	}
	live, err := g.db.As(architect).Live(ctx, "Player7")
	if err != nil {
		t.Fatal(err)
	}
	newest := int64(0)
	for _, c := range live {
		if strings.HasPrefix(c.Predicate, "impression_") && c.Tx > newest {
			newest = c.Tx
		}
	}
	for _, c := range live {
		if c.Tx == newest && !strings.Contains(mem, c.Value.Str) {
			t.Errorf("the newest impression %s is not recalled", c.Ref)
		}
	}

	// The new summary rests only on live impressions; the revoked ones are not among them.
	h, err := g.db.As(architect).History(ctx, "summary:Player7")
	if err != nil {
		t.Fatal(err)
	}
	last := h.Artifacts[len(h.Artifacts)-1]
	if h.Artifacts[0].State != mql.Superseded || last.State != mql.Live {
		t.Errorf("summary versions: %+v", h.Artifacts)
	}
	for _, ref := range last.DerivedFrom {
		if strings.HasPrefix(ref, "Player7.impression_e01_2") || strings.HasPrefix(ref, "Player7.impression_e03_2") {
			t.Errorf("summary v2 derived from revoked %s", ref)
		}
	}
}

func TestRunPrints(t *testing.T) {
	store := filepath.Join(t.TempDir(), "augur.db")
	out, errOut, code := runCmd(t, "-store", store)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"Perception audit", "summary:Player7@2 ok", "Recent impressions:", "export"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// runCmd runs the program as main does: its output, its errors and its exit status.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		fmt.Fprintf(&errOut, "augur: %v\n", err)
	}
	return out.String(), errOut.String(), exflag.Code(err)
}

// The defaults are the run the figures in docs/EXAMPLES.md were measured with.
func TestDefaultFlags(t *testing.T) {
	c, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (config{seed: 1, store: "memory:"}); c != want {
		t.Errorf("defaults: %+v, want %+v", c, want)
	}
}

func TestFlagRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-seed", "-1"}, "invalid value \"-1\" for flag -seed"},
		{[]string{"-seed", "18446744073709551616"}, "value out of range"},
		{[]string{"-store", ""}, "-store : cannot open \"\": invalid data source name"},
		{[]string{"-games", "3"}, "flag provided but not defined: -games"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCmd(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("a refused command line ran:\n%s", out)
			}
		})
	}
}

// -store writes only into a store the run creates or one that holds nothing but its genesis:
// anything else is refused with exit status 2 and left as it was. (An empty directory given as
// -store used to be deleted.)
func TestStoreRefusals(t *testing.T) {
	dir := t.TempDir()
	refusals := extest.BBoltRefusals(t, dir)
	if os.Getenv("MQL_TEST_POSTGRES") != "" {
		refusals = append(refusals, extest.PostgresRefusals(t)...)
	}
	for _, r := range refusals {
		t.Run(r.Name, func(t *testing.T) {
			where := dir
			if strings.HasPrefix(r.DSN, "postgres") {
				where = r.DSN
			}
			before := extest.Snapshot(t, where)
			out, errOut, code := runCmd(t, "-store", r.DSN)
			if code != 2 || !strings.Contains(errOut, r.Want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, r.Want)
			}
			if out != "" {
				t.Errorf("a refused store ran:\n%s", out)
			}
			if after := extest.Snapshot(t, where); after != before {
				t.Errorf("the run changed what it refused:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// A store that holds nothing but its genesis is written into, whoever owns it.
func TestStoreGenesisOnly(t *testing.T) {
	store := extest.Store(t, filepath.Join(t.TempDir(), "alice.db"), mql.Options{Owner: "alice"}, 0)
	if _, errOut, code := runCmd(t, "-store", store); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	info, err := mql.Inspect(context.Background(), store)
	if err != nil || info.Owner != "alice" || info.Transactions < 50 {
		t.Errorf("after the run: %+v, %v", info, err)
	}
}

// -reuse plays again on top of an earlier game, after a rehearsal on an in-memory copy, and the
// perception audit still finds nothing; a store the run could not finish on is refused before
// anything is written.
func TestReuse(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "augur.db")
	if _, errOut, code := runCmd(t, "-store", store); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errOut)
	}
	first := extest.Transactions(t, store)
	if _, errOut, code := runCmd(t, "-store", store, "-seed", "2"); code != 2 || !strings.Contains(errOut, "add -reuse") {
		t.Errorf("second run without -reuse: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCmd(t, "-store", store, "-seed", "2", "-reuse")
	if code != 0 || !strings.Contains(errOut, "rehearsed on an in-memory copy") || !strings.Contains(out, "Perception audit") {
		t.Fatalf("second run with -reuse: exit %d: %s\n%s", code, errOut, out)
	}
	if got := extest.Transactions(t, store); got <= first {
		t.Errorf("-reuse wrote nothing: %d transactions before, %d after", first, got)
	}

	// A store where the architect's first impression would be refused: the predicate holds
	// numbers.
	odd := filepath.Join(dir, "odd.db")
	db, err := mql.Open(context.Background(), odd, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Assert(context.Background(), mql.AssertSpec{Subject: "Someone", Predicate: "impression_e01_1", Value: mql.Number(7), By: "owner"})
	db.Close()
	before := extest.Transactions(t, odd)
	_, errOut, code = runCmd(t, "-store", odd, "-reuse")
	if code != 2 || !strings.Contains(errOut, "the run would fail on what the store holds") {
		t.Errorf("-reuse of a store the run cannot write into: exit %d: %s", code, errOut)
	}
	if got := extest.Transactions(t, odd); got != before {
		t.Errorf("the refused run wrote: %d transactions before, %d after", before, got)
	}
}

// On PostgreSQL the game is played in an empty database, and a second run is refused
// (procurement's tests run -reuse on PostgreSQL).
func TestPostgresStore(t *testing.T) {
	dsn := pgtest.Database(t)
	if _, errOut, code := runCmd(t, "-store", dsn); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	before := extest.Snapshot(t, dsn)
	if _, errOut, code := runCmd(t, "-store", dsn); code != 2 || !strings.Contains(errOut, "already holds") {
		t.Errorf("second run: exit %d: %s", code, errOut)
	}
	if after := extest.Snapshot(t, dsn); after != before {
		t.Errorf("the refused run wrote:\n%s\n%s", before, after)
	}
	if got := extest.Transactions(t, dsn); got < 50 {
		t.Errorf("the game wrote %d transactions", got)
	}
}
