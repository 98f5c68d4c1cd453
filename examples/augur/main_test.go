package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
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
	var out bytes.Buffer
	store := filepath.Join(t.TempDir(), "augur.db")
	if err := run(context.Background(), []string{"-store", store}, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"Perception audit", "summary:Player7@2 ok", "Recent impressions:", "export"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q", w)
		}
	}
}
