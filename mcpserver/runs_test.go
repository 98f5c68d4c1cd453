package mcpserver_test

import (
	"context"
	"testing"
)

// A run through the tools: context, why and query take a run and record what they served;
// derive takes the run its decision belongs to; outcome ends it. Reads without a run record
// nothing.
func TestRunsThroughTools(t *testing.T) {
	clk := newClock()
	db := openStore(t, "memory:", clk)
	team(t, db)
	w3 := connect(t, db, "worker-3")
	w7 := connect(t, db, "worker-7")
	ctx := context.Background()
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "source": "src:Klarveld:rev0"})
	w3.ok("assert", map[string]any{"subject": "Brimsole", "predicate": "price_per_seat", "value": 50})

	head, _ := db.Head(ctx)
	w3.ok("context", map[string]any{"subjects": []any{"Klarveld"}})
	if h, _ := db.Head(ctx); h != head {
		t.Fatalf("context without a run wrote: head %d → %d", head, h)
	}
	w3.ok("context", map[string]any{"subjects": []any{"Klarveld"}, "run": "r-17"})
	w3.ok("why", map[string]any{"ref": "Brimsole.price_per_seat", "run": "r-17"})
	w3.call("query", map[string]any{"statement": "live Klarveld; stats", "run": "r-17"})
	if h, _ := db.Head(ctx); h != head+3 {
		t.Fatalf("three reads for a run: head %d → %d, want three retrievals", head, h)
	}
	w3.ok("derive", map[string]any{"artifact": "pick", "from": []any{"Brimsole.price_per_seat"}, "run": "r-17"})
	w3.ok("outcome", map[string]any{"run": "r-17", "result": "failed", "because": "overpaid"})
	w3.fail("outcome", map[string]any{"run": "r-17", "result": "crashed"}, `result is "crashed": it must be one of "succeeded", "failed", "declined"`)

	reps, err := db.As("worker-3").Run(ctx, "r-17")
	if err != nil || len(reps) != 1 {
		t.Fatalf("run r-17: %+v %v", reps, err)
	}
	r := reps[0]
	if len(r.Retrievals) != 3 || len(r.Decisions) != 1 || r.Outcome != "failed" || len(r.Served) != 2 {
		t.Fatalf("run r-17: %+v", r)
	}
	if got := rows(w3.query("run r-17")[0]); len(got) != 1 || got[0]["outcome"] != "failed" {
		t.Errorf("query run r-17: %v", got)
	}
	// An outcome in the query tool is pointed at the outcome tool; a statement made for one run
	// while the call names another is refused, and records nothing.
	w3.fail("query", map[string]any{"statement": "outcome run r-17 succeeded"}, "query:1:1: outcome is a write; the query tool runs only reads")
	w3.fail("query", map[string]any{"statement": "outcome run r-17 succeeded"}, "run, runs")
	w3.fail("query", map[string]any{"statement": "outcome run r-17 succeeded"}, "use the outcome tool")
	head, _ = db.Head(ctx)
	w3.fail("query", map[string]any{"statement": "live Brimsole; live Klarveld for run r-1", "run": "r-2"}, `query:1:`)
	w3.fail("query", map[string]any{"statement": "live Klarveld for run r-1", "run": "r-2"}, `is for run r-1, and the call names run r-2`)
	if h, _ := db.Head(ctx); h != head {
		t.Errorf("a query naming two runs wrote: head %d → %d", head, h)
	}
	w3.ok("query", map[string]any{"statement": "live Klarveld for run r-2", "run": "r-2"})

	// worker-7 sees nothing of worker-3's run.
	w7.fail("query", map[string]any{"statement": "run r-17"}, "no run of that name")
}

// Names of any script pass the tools' schemas, as they pass the language: a subject, an
// artifact and a run named in Unicode are written, a decomposed one is stored composed, and
// what no write accepts (a space, a leading digit, a symbol) is still refused.
func TestUnicodeNamesThroughTools(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	team(t, db)
	w3 := connect(t, db, "worker-3")
	ctx := context.Background()
	w3.ok("assert", map[string]any{"subject": "Klärveld", "predicate": "région", "value": 44})
	w3.ok("assert", map[string]any{"subject": "東京", "predicate": "price_per_seat", "value": 50})
	w3.ok("assert", map[string]any{"subject": "Kla\u0308rveld", "predicate": "price_per_seat", "value": 45})
	w3.ok("context", map[string]any{"subjects": []any{"Klärveld", "東京"}, "run": "début-1"})
	w3.ok("derive", map[string]any{"artifact": "plan:東京", "from": []any{"東京.price_per_seat"}, "run": "de\u0301but-1"})
	w3.ok("outcome", map[string]any{"run": "début-1", "result": "succeeded"})
	reps, err := db.As("worker-3").Run(ctx, "début-1")
	if err != nil || len(reps) != 1 || len(reps[0].Decisions) != 1 || len(reps[0].Served) != 3 {
		t.Fatalf("run début-1: %+v %v", reps, err)
	}
	if got := rows(w3.query("live Klärveld")[0]); len(got) != 2 {
		t.Errorf("live Klärveld: %v, want région and price_per_seat, the decomposed name stored composed", got)
	}
	for _, bad := range []string{"a b", "1st", "x--y", "€uro", "a.b"} {
		w3.fail("assert", map[string]any{"subject": bad, "predicate": "p", "value": 1}, bad)
	}
}
