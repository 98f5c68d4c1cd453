package mcpserver_test

import (
	"strings"
	"testing"
)

// The search tool: live claims by their text, best first, as the server's principal sees them;
// its bad input is refused with the library's message.
func TestSearchTool(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	team(t, db)
	w3, w7 := connect(t, db, "worker-3"), connect(t, db, "worker-7")
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "pricing_note", "value": "EU pricing for the team plan",
		"sources": []any{map[string]any{"id": "src:k", "excerpt": "billed yearly"}}})
	w3.ok("assert", map[string]any{"subject": "Brimsole", "predicate": "pricing_note", "value": "EU pricing, secret", "seen_by": []any{"worker-3"}})
	w3.ok("assert", map[string]any{"subject": "Ostwind", "predicate": "note", "value": "old EU pricing"})
	w3.ok("assert", map[string]any{"subject": "Ostwind", "predicate": "note", "value": "US only"})

	refs := func(m map[string]any) []string {
		var out []string
		for _, r := range m["rows"].([]any) {
			row := r.(map[string]any)
			if row["score"] == nil || row["matched_terms"] == nil || row["state"] == nil {
				t.Fatalf("row without score, matched_terms or state: %v", row)
			}
			out = append(out, row["ref"].(string)+" "+row["state"].(string))
		}
		return out
	}
	_, m := w3.ok("search", map[string]any{"text": "EU pricing"})
	if got := strings.Join(refs(m), ", "); got != "Klarveld.pricing_note@1 live, Brimsole.pricing_note@1 live" && got != "Brimsole.pricing_note@1 live, Klarveld.pricing_note@1 live" {
		t.Errorf("worker-3's search: %s", got)
	}
	_, m = w7.ok("search", map[string]any{"text": "EU pricing"})
	if got := strings.Join(refs(m), ", "); got != "Klarveld.pricing_note@1 live" {
		t.Errorf("worker-7's search: %s, want only what it may see, live", got)
	}
	_, m = w7.ok("search", map[string]any{"text": "EU pricing", "on": []any{"Ostwind.*"}, "history": true, "limit": 5})
	if got := strings.Join(refs(m), ", "); got != "Ostwind.note@1 superseded" {
		t.Errorf("worker-7's search on Ostwind.* history: %s", got)
	}
	_, m = w7.ok("search", map[string]any{"text": "billed yearly", "run": "r-1"})
	if got := strings.Join(refs(m), ", "); got != "Klarveld.pricing_note@1 live" {
		t.Errorf("search by excerpt: %s", got)
	}
	runs := w7.query("run r-1")
	if s := strings.Join(strings.Fields(strings.ReplaceAll(mustJSON(runs), `\"`, `"`)), " "); !strings.Contains(s, "Klarveld.pricing_note@1") {
		t.Errorf("the run does not name what the search served: %s", s)
	}
	w7.fail("search", map[string]any{"text": "   "}, "empty")
	w7.fail("search", map[string]any{"text": "the of"}, "no word to search for")
	w7.fail("search", map[string]any{"text": "x", "limit": -1}, "limit")
	w7.fail("search", map[string]any{"text": "x", "on": []any{"a b"}}, "on")
	w7.fail("search", map[string]any{"text": strings.Repeat("x", 5000)}, "text")
}

// The context tool takes a question instead of subjects: the live claims the search finds for
// it, as the server's principal sees them, one line per subject, within the budget.
func TestContextToolQuestion(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	team(t, db)
	w3, w7 := connect(t, db, "worker-3"), connect(t, db, "worker-7")
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "pricing_note", "value": "EU pricing for the team plan"})
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "EU"})
	w3.ok("assert", map[string]any{"subject": "Brimsole", "predicate": "pricing_note", "value": "EU pricing, secret", "seen_by": []any{"worker-3"}})
	w3.ok("assert", map[string]any{"subject": "Ostwind", "predicate": "note", "value": "US pricing, billed monthly per seat, for teams of up to fifty people"})

	for _, c := range []struct {
		who  *client
		args map[string]any
		want string
	}{
		{w7, map[string]any{"question": "EU pricing"},
			"Klarveld: pricing_note=\"EU pricing for the team plan\" @1, region=\"EU\" @1\nOstwind: note=\"US pricing, billed monthly per seat, for teams of up to fifty people\" @1\n"},
		{w3, map[string]any{"question": "EU pricing"},
			"Brimsole: pricing_note=\"EU pricing, secret\" @1\nKlarveld: pricing_note=\"EU pricing for the team plan\" @1, region=\"EU\" @1\nOstwind: note=\"US pricing, billed monthly per seat, for teams of up to fifty people\" @1\n"},
		{w7, map[string]any{"question": "EU pricing", "budget": 32},
			"Klarveld: pricing_note=\"EU pricing for the team plan\" @1, region=\"EU\" @1\n(left out for the token budget: 1 subjects: Ostwind)\n"},
		{w7, map[string]any{"question": "secret"}, "(nothing visible: no live claims match the question)\n"},
	} {
		txt, m := c.who.ok("context", c.args)
		if txt != c.want || m["kind"] != "context" {
			t.Errorf("%s context %v:\n%s\nwant\n%s", c.who.as, c.args, txt, c.want)
		}
	}
	w7.ok("context", map[string]any{"question": "team plan", "run": "r-1"})
	if runs := mustJSON(w7.query("run r-1")); !strings.Contains(runs, "Klarveld.pricing_note@1") || !strings.Contains(runs, `context for \"team plan\"`) {
		t.Errorf("the run does not name the context and what it served: %s", runs)
	}
	before := w7.stats()
	w7.fail("context", map[string]any{"question": "EU", "subjects": []any{"Klarveld"}}, "give subjects or a question, not both")
	w7.fail("context", map[string]any{}, "give the subjects")
	w7.fail("context", map[string]any{"question": "   ", "run": "r-2"}, `search text "   ": invalid input: it is empty`)
	w7.fail("context", map[string]any{"question": "the of"}, "no word to search for")
	w7.fail("context", map[string]any{"question": strings.Repeat("x", 5000)}, "at most 4096 bytes")
	w7.fail("context", map[string]any{"question": "EU", "budget": -1}, "budget")
	if after := w7.stats(); after.Transactions != before.Transactions {
		t.Errorf("refused contexts wrote: tx %d → %d", before.Transactions, after.Transactions)
	}
}

// The assert tool takes a claim's vector, the search tool a query vector and the signals:
// fused rows say which signals ranked them; a vector of another dimension is refused by name.
func TestSearchToolVectors(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	team(t, db)
	w3 := connect(t, db, "worker-3")
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "note", "value": "EU pricing", "vector": []any{1, 0, 0}})
	w3.ok("assert", map[string]any{"subject": "Ostwind", "predicate": "note", "value": "ship sensors", "vector": []any{0, 1, 0.5}})
	w3.ok("assert", map[string]any{"subject": "Brimsole", "predicate": "note", "value": "no vector here"})
	rows := func(m map[string]any) []string {
		var out []string
		for _, r := range m["rows"].([]any) {
			row := r.(map[string]any)
			var sig []string
			for _, s := range row["signals"].([]any) {
				sig = append(sig, s.(string))
			}
			out = append(out, row["ref"].(string)+" "+strings.Join(sig, "+"))
		}
		return out
	}
	_, m := w3.ok("search", map[string]any{"text": "EU pricing", "vector": []any{0, 1, 0}})
	if got := strings.Join(rows(m), ", "); got != "Klarveld.note@1 text+vector, Ostwind.note@1 vector" {
		t.Errorf("fused search: %s", got)
	}
	_, m = w3.ok("search", map[string]any{"vector": []any{0, 1, 0}, "limit": 1})
	if got := strings.Join(rows(m), ", "); got != "Ostwind.note@1 vector" {
		t.Errorf("search by vector: %s", got)
	}
	_, m = w3.ok("search", map[string]any{"text": "EU pricing", "vector": []any{0, 1, 0}, "signals": []any{"text"}})
	if got := strings.Join(rows(m), ", "); got != "Klarveld.note@1 text" {
		t.Errorf("search by text only: %s", got)
	}
	w3.fail("assert", map[string]any{"subject": "X", "predicate": "note", "value": "x", "vector": []any{1, 2}}, "2 dimensions, and the store's vectors have 3")
	w3.fail("assert", map[string]any{"subject": "X", "predicate": "note", "value": "x", "vector": []any{0, 0, 0}}, "no direction")
	w3.fail("assert", map[string]any{"subject": "X", "predicate": "note", "value": "x", "vector": []any{1e39, 0, 0}}, "vector is out of range")
	w3.fail("search", map[string]any{"vector": []any{1, 2}}, "2 dimensions")
	w3.fail("search", map[string]any{}, "empty")
}
