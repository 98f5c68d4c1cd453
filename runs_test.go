package mql_test

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// runScenario scripts three runs whose memory metrics are computed by hand below:
//
//	r1 (worker-3): context Klarveld, Brimsole → Klarveld.price_per_seat@1, Klarveld.region@1,
//	    Brimsole.price_per_seat@1; then price@1 is superseded by @2; decision pick@1 in r1
//	    cites Brimsole.price_per_seat@1; outcome failed. price@1 is stale at the decision.
//	r2 (worker-3): context Brimsole → Brimsole.price_per_seat@1; decision note@1 cites it;
//	    outcome failed, everything it was served live: a downstream failure.
//	r3 (worker-7): context Klarveld → Klarveld.price_per_seat@2, Klarveld.region@1; outcome
//	    declined, no decision.
//
// Then Klarveld.region@1 is revoked: stale "later" for r1 (making r1 a memory failure twice
// over) and for r3.
func runScenario(t *testing.T) *fixture {
	f := open(t, mql.Options{Owner: "owner"}).team()
	f.assert("Klarveld", "price_per_seat", mql.Number(44), "owner")
	f.assert("Klarveld", "region", mql.String("EU"), "owner")
	f.assert("Brimsole", "price_per_seat", mql.Number(50), "owner")
	w3, w7 := f.db.As("worker-3"), f.db.As("worker-7")

	if _, err := w3.ForRun("r1").Context(f.ctx, []string{"Klarveld", "Brimsole"}, 0); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(time.Second)
	f.assert("Klarveld", "price_per_seat", mql.Number(89), "owner")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "pick", From: []string{"Brimsole.price_per_seat@1"}, By: "worker-3", Run: "r1"}))
	f.ok(f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: "r1", Result: mql.Failed, Because: "overpaid", By: "worker-3"}))

	if _, err := w3.ForRun("r2").Context(f.ctx, []string{"Brimsole"}, 0); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(time.Second)
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "note", From: []string{"Brimsole.price_per_seat"}, By: "worker-3", Run: "r2"}))
	f.ok(f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: "r2", Result: mql.Failed, By: "worker-3"}))

	if _, err := w7.ForRun("r3").Context(f.ctx, []string{"Klarveld"}, 0); err != nil {
		t.Fatal(err)
	}
	f.clk.Add(time.Second)
	f.ok(f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: "r3", Result: mql.Declined, Because: "no SOC2 evidence", By: "worker-7"}))
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Klarveld.region@1", By: "owner", Because: "wrong region"}))
	return f
}

func TestMemoryStats(t *testing.T) {
	f := runScenario(t)
	cases := []struct {
		reader string
		by     string
		since  time.Time
		want   mql.MemoryStats
	}{
		{reader: "", want: mql.MemoryStats{Runs: 3, Retrievals: 3, Served: 6, LiveServed: 6, StaleAtDecision: 1,
			StaleMemoryRate: 1.0 / 6, Cited: 2, ContextUtilization: 2.0 / 4, RetrievalDiversity: 4.0 / 3,
			Outcomes: 3, Failed: 2, Declined: 1, DeclineRate: 1.0 / 3, MemoryFailures: 1, DownstreamFailures: 1}},
		{reader: "worker-3", want: mql.MemoryStats{Runs: 2, Retrievals: 2, Served: 4, LiveServed: 4, StaleAtDecision: 1,
			StaleMemoryRate: 0.25, Cited: 2, ContextUtilization: 0.5, RetrievalDiversity: 1.5,
			Outcomes: 2, Failed: 2, MemoryFailures: 1, DownstreamFailures: 1}},
		{reader: "worker-7", want: mql.MemoryStats{Runs: 1, Retrievals: 1, Served: 2, LiveServed: 2,
			RetrievalDiversity: 1, Outcomes: 1, Declined: 1, DeclineRate: 1}},
		// The owner, for one principal: the same as that principal sees.
		{reader: "", by: "worker-7", want: mql.MemoryStats{Runs: 1, Retrievals: 1, Served: 2, LiveServed: 2,
			RetrievalDiversity: 1, Outcomes: 1, Declined: 1, DeclineRate: 1}},
		// Since r2's first read (t0 + 6 s: three asserts, r1's read and its pause, …).
		{reader: "", by: "worker-3", since: runStart(t, f, "r2"), want: mql.MemoryStats{Runs: 1, Retrievals: 1, Served: 1, LiveServed: 1,
			Cited: 1, ContextUtilization: 1, RetrievalDiversity: 1, Outcomes: 1, Failed: 1, DownstreamFailures: 1}},
	}
	for _, c := range cases {
		r := f.db.Reader()
		if c.reader != "" {
			r = f.db.As(c.reader)
		}
		got, err := r.MemoryStats(f.ctx, c.by, c.since)
		if err != nil {
			t.Fatal(err)
		}
		if !sameStats(got, c.want) {
			t.Errorf("as %q for %q since %v:\n got %+v\nwant %+v", c.reader, c.by, c.since, got, c.want)
		}
	}
}

func runStart(t *testing.T, f *fixture, name string) time.Time {
	t.Helper()
	runs, err := f.db.Reader().Runs(f.ctx, "", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Run == name {
			return r.First
		}
	}
	t.Fatalf("no run %s", name)
	return time.Time{}
}

func sameStats(a, b mql.MemoryStats) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-12 }
	fa := []float64{a.StaleMemoryRate, a.ContextUtilization, a.RetrievalDiversity, a.DeclineRate}
	fb := []float64{b.StaleMemoryRate, b.ContextUtilization, b.RetrievalDiversity, b.DeclineRate}
	for i := range fa {
		if !eq(fa[i], fb[i]) {
			return false
		}
	}
	a.StaleMemoryRate, a.ContextUtilization, a.RetrievalDiversity, a.DeclineRate = 0, 0, 0, 0
	b.StaleMemoryRate, b.ContextUtilization, b.RetrievalDiversity, b.DeclineRate = 0, 0, 0, 0
	return a == b
}

func TestRunReport(t *testing.T) {
	f := runScenario(t)
	reps, err := f.db.As("worker-3").Run(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 {
		t.Fatalf("got %d reports, want 1", len(reps))
	}
	r := reps[0]
	if r.By != "worker-3" || r.Outcome != mql.Failed || r.Because != "overpaid" || !r.MemoryFailure {
		t.Errorf("report %+v", r)
	}
	if len(r.Decisions) != 1 || r.Decisions[0] != "pick@1" {
		t.Errorf("decisions %v, want [pick@1]", r.Decisions)
	}
	if len(r.Retrievals) != 1 || r.Retrievals[0].Statement != "context Klarveld, Brimsole" {
		t.Errorf("retrievals %+v", r.Retrievals)
	}
	want := map[string]struct {
		atDecision, now mql.State
		stale           string
		revoked, cited  bool
	}{
		"Klarveld.price_per_seat@1": {mql.Superseded, mql.Superseded, "at decision", false, false},
		"Klarveld.region@1":         {mql.Live, mql.Revoked, "later", true, false},
		"Brimsole.price_per_seat@1": {mql.Live, mql.Live, "", false, true},
	}
	if len(r.Served) != len(want) {
		t.Fatalf("served %+v", r.Served)
	}
	for _, s := range r.Served {
		w, ok := want[s.Ref]
		if !ok || s.WhenServed != mql.Live || s.AtDecision != w.atDecision || s.Now != w.now || s.Stale != w.stale ||
			s.RevokedLater != w.revoked || s.Cited != w.cited {
			t.Errorf("served %+v, want %+v", s, w)
		}
	}
}

// TestRunsKeepToTheirPrincipal: a retrieval is seen by the owner and the principal that read;
// nothing of what was served to one principal's run reaches another.
func TestRunsKeepToTheirPrincipal(t *testing.T) {
	f := runScenario(t)
	w7 := f.db.As("worker-7")
	if _, err := w7.Run(f.ctx, "r1"); !errors.Is(err, mql.ErrNotFound) {
		t.Errorf("worker-7 run r1: %v, want ErrNotFound", err)
	}
	runs, err := w7.Runs(f.ctx, "", time.Time{})
	if err != nil || len(runs) != 1 || runs[0].Run != "r3" {
		t.Errorf("worker-7 runs: %+v %v", runs, err)
	}
	owner, err := f.db.Reader().Runs(f.ctx, "", time.Time{})
	if err != nil || len(owner) != 3 {
		t.Errorf("owner runs: %+v %v", owner, err)
	}
	var buf bytes.Buffer
	if err := w7.Export(f.ctx, &buf); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, leak := range []string{"urn:mql:retrieval:q6", "\"r1\"", "\"r2\"", "overpaid"} {
		if strings.Contains(out, leak) {
			t.Errorf("worker-7's export holds %s", leak)
		}
	}
	if !strings.Contains(out, "\"r3\"") {
		t.Errorf("worker-7's export lacks its own run r3")
	}
	// The decision made in r1 names its run to the owner and worker-3, not to worker-7.
	for who, want := range map[string]string{"owner": "r1", "worker-3": "r1", "worker-7": ""} {
		r := f.db.As(who)
		if who == "owner" {
			r = f.db.Reader()
		}
		h, err := r.History(f.ctx, "pick")
		if err != nil || len(h.Artifacts) != 1 || h.Artifacts[0].Run != want {
			t.Errorf("%q's history of pick: %+v %v, want run %q", who, h, err, want)
		}
	}
	// A run of the same name by another principal is another run.
	if _, err := w7.ForRun("r1").Live(f.ctx, "Brimsole"); err != nil {
		t.Fatal(err)
	}
	reps, err := f.db.Reader().Run(f.ctx, "r1")
	if err != nil || len(reps) != 2 || reps[0].By != "worker-3" || reps[1].By != "worker-7" {
		t.Fatalf("owner's run r1: %+v %v", reps, err)
	}
	mine, err := w7.Run(f.ctx, "r1")
	if err != nil || len(mine) != 1 || mine[0].By != "worker-7" || len(mine[0].Served) != 1 {
		t.Errorf("worker-7's run r1: %+v %v", mine, err)
	}
}

// TestReadsWithoutRunRecordNothing: a read without ForRun writes nothing; with it, exactly
// one transaction, by the reader.
func TestReadsWithoutRunRecordNothing(t *testing.T) {
	f := open(t, mql.Options{Owner: "owner"}).team()
	f.assert("Klarveld", "price_per_seat", mql.Number(44), "owner")
	head, _ := f.db.Head(f.ctx)
	if _, err := f.db.As("worker-3").Context(f.ctx, []string{"Klarveld"}, 0); err != nil {
		t.Fatal(err)
	}
	if h, _ := f.db.Head(f.ctx); h != head {
		t.Fatalf("a read without for run wrote: head %d → %d", head, h)
	}
	if _, err := f.db.As("worker-3").ForRun("r-1").Context(f.ctx, []string{"Klarveld"}, 0); err != nil {
		t.Fatal(err)
	}
	if h, _ := f.db.Head(f.ctx); h != head+1 {
		t.Fatalf("a read for a run: head %d → %d, want one transaction", head, h)
	}
	if _, err := f.db.Reader().ForRun("not a name").Context(f.ctx, []string{"Klarveld"}, 0); !errors.Is(err, mql.ErrBadReference) {
		t.Errorf("bad run name: %v", err)
	}
	if h, _ := f.db.Head(f.ctx); h != head+1 {
		t.Fatalf("a refused read for a run wrote")
	}
	// Inside a transaction a read for a run is refused: its record would rest on writes not yet
	// committed.
	if _, err := f.db.Tx(f.ctx, "owner", func(tx *mql.Tx) error {
		_, err := tx.Reader().ForRun("r-1").Live(f.ctx, "Klarveld")
		return err
	}); !errors.Is(err, mql.ErrInvalid) {
		t.Errorf("a read for a run in a transaction: %v", err)
	}
	if h, _ := f.db.Head(f.ctx); h != head+1 {
		t.Fatalf("a refused read for a run in a transaction wrote")
	}
	rep, err := f.db.Check(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("check: %+v", rep.Problems)
	}
}

// TestImpactNamesRuns: impact and revoked-by of a claim version list the runs it was served to
// and what they decided, as far as the reader may see.
func TestImpactNamesRuns(t *testing.T) {
	f := runScenario(t)
	rb, err := f.db.RevokedBy(f.ctx, "Klarveld.region@1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Runs) != 2 || rb.Runs[0].Run != "r1" || rb.Runs[0].By != "worker-3" || rb.Runs[0].Outcome != mql.Failed ||
		len(rb.Runs[0].Decisions) != 1 || rb.Runs[0].Decisions[0] != "pick@1" ||
		rb.Runs[1].Run != "r3" || rb.Runs[1].Outcome != mql.Declined || len(rb.Runs[1].Decisions) != 0 {
		t.Errorf("revoked-by runs: %+v", rb.Runs)
	}
	im, err := f.db.Impact(f.ctx, "Klarveld.price_per_seat", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Runs) != 2 || im.Runs[0].Run != "r1" || im.Runs[0].Served[0] != "Klarveld.price_per_seat@1" ||
		im.Runs[1].Run != "r3" || im.Runs[1].Served[0] != "Klarveld.price_per_seat@2" {
		t.Errorf("impact runs: %+v", im.Runs)
	}
	// worker-7 sees its own run only.
	rb7, err := f.db.As("worker-7").RevokedBy(f.ctx, "Klarveld.region@1")
	if err != nil {
		t.Fatal(err)
	}
	if len(rb7.Runs) != 1 || rb7.Runs[0].Run != "r3" {
		t.Errorf("worker-7's revoked-by runs: %+v", rb7.Runs)
	}
	im7, err := f.db.As("worker-7").Impact(f.ctx, "Klarveld.price_per_seat@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(im7.Runs) != 0 {
		t.Errorf("worker-7 sees runs of worker-3: %+v", im7.Runs)
	}
}

// TestRunsSurviveExportAndImport: retrievals, outcomes and decisions in runs are quads like the
// rest (PROV-O: the retrieval prov:used each served version); an owner's export imports to an
// identical store, and mql check holds them to their rules: a retrieval served only what its
// reader may see.
func TestRunsSurviveExportAndImport(t *testing.T) {
	f := runScenario(t)
	nq := f.export()
	if !strings.Contains(nq, "<urn:mql:retrieval:q") || !strings.Contains(nq, "<http://www.w3.org/ns/prov#used> <urn:mql:claim:Klarveld.region@1>") {
		t.Fatalf("the export holds no retrieval using Klarveld.region@1")
	}
	g := imported(t, nq)
	if g.export() != nq {
		t.Fatal("the imported store exports differently")
	}
	want, _ := f.db.MemoryStats(f.ctx, "", time.Time{})
	got, _ := g.db.MemoryStats(g.ctx, "", time.Time{})
	if !sameStats(got, want) {
		t.Errorf("after import: %+v, before %+v", got, want)
	}

	// A retrieval that names a claim its reader may not see is refused by the import's check.
	h := open(t, mql.Options{Owner: "owner"}).team()
	h.assert("K", "q", mql.Number(1), "owner")
	h.ok(h.db.Assert(h.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(2), By: "worker-7", SeenBy: []string{"worker-7"}}))
	if _, err := h.db.As("worker-3").ForRun("r1").Live(h.ctx, "K"); err != nil {
		t.Fatal(err)
	}
	var hb strings.Builder
	if err := h.db.Export(h.ctx, &hb); err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(hb.String(), "<http://www.w3.org/ns/prov#used> <urn:mql:claim:K.q@1>", "<http://www.w3.org/ns/prov#used> <urn:mql:claim:K.p@1>", 1)
	if forged == hb.String() {
		t.Fatal("no retrieval to forge")
	}
	err := open(t, mql.Options{}).db.Import(h.ctx, strings.NewReader(forged))
	if err == nil || !strings.Contains(err.Error(), "served K.p@1 to worker-3, who may not see it") {
		t.Fatalf("import of a retrieval serving a hidden claim: %v", err)
	}
}

// TestPastVersionsAreNoMemoryFailure: history serves past versions on purpose, as what they
// are (superseded); one of them revoked later does not make the run's failure the memory's,
// since the run was never given it as live. The live version it was given stayed live.
func TestPastVersionsAreNoMemoryFailure(t *testing.T) {
	f := open(t, mql.Options{Owner: "owner"}).team()
	f.assert("Klarveld", "price_per_seat", mql.Number(44), "owner")
	f.assert("Klarveld", "price_per_seat", mql.Number(89), "owner")
	if _, err := f.db.As("worker-3").ForRun("r1").History(f.ctx, "Klarveld.price_per_seat"); err != nil {
		t.Fatal(err)
	}
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Klarveld.price_per_seat@1", By: "owner", Because: "misread"}))
	f.ok(f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: "r1", Result: mql.Failed, By: "worker-3"}))
	reps, err := f.db.As("worker-3").Run(f.ctx, "r1")
	if err != nil || len(reps) != 1 {
		t.Fatalf("run r1: %+v %v", reps, err)
	}
	r := reps[0]
	if r.MemoryFailure {
		t.Errorf("a failure with only a past version revoked since is a memory failure: %+v", r.Served)
	}
	m, err := f.db.As("worker-3").MemoryStats(f.ctx, "", time.Time{})
	if err != nil || m.MemoryFailures != 0 || m.DownstreamFailures != 1 {
		t.Errorf("stats: %+v %v, want 0 memory and 1 downstream failure", m, err)
	}
}
