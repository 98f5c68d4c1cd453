package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// A server acts as one principal: a tool call cannot write as another, cannot read as
// another, and claims seen by another principal are invisible through every tool and resource.
func TestCannotActAsAnother(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, "memory:", newClock())
	team(t, db)
	arch := connect(t, db, "architect")
	w3 := connect(t, db, "worker-3")

	// The architect's private claim and a plan resting on it; and a public claim of worker-7.
	arch.ok("assert", map[string]any{"subject": "Player7", "predicate": "style", "value": "patient", "kind": "inferred", "seen_by": []any{"architect"}})
	arch.ok("assert", map[string]any{"subject": "Player7", "predicate": "rating", "value": 2100, "seen_by": []any{"architect"}})
	arch.ok("derive", map[string]any{"artifact": "plan:endgame", "from": []any{"Player7.style"}})
	if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("EU"), By: "worker-7"}); err != nil {
		t.Fatal(err)
	}
	if got := arch.query("live Player7"); len(rows(got[0])) != 2 {
		t.Fatalf("the architect does not see its own claims: %v", got)
	}
	before, _ := db.Stats(ctx)

	// No tool takes a principal; trying to pass one is refused by the schema and writes nothing.
	for _, tool := range toolNames {
		res := w3.call(tool, map[string]any{"by": "alice", "as": "alice"})
		if !res.IsError {
			t.Fatalf("%s accepted by/as: %s", tool, text(res))
		}
	}
	w3.fail("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "US", "by": "alice"}, "by")

	// The query tool refuses writes, whoever they name, and reads as anyone else.
	w3.fail("query", map[string]any{"statement": `assert Klarveld.region = "US" by alice`}, "is a write")
	w3.fail("query", map[string]any{"statement": `revoke Klarveld.region@1 by owner`}, "is a write")
	w3.fail("query", map[string]any{"statement": `grant worker-3 revoke on * by owner`}, "is a write")
	w3.fail("query", map[string]any{"statement": "as architect live *"}, "query:1:1: cannot act as another principal: this session acts as worker-3 and cannot read as architect")
	w3.fail("query", map[string]any{"statement": "as owner live Player7"}, "cannot act as another principal")
	w3.fail("query", map[string]any{"statement": "stats; as of tx 2 as architect why Player7.style"}, "query:1:8: cannot act as another principal")
	if r := w3.query("as worker-3 live *"); len(rows(r[0])) != 1 {
		t.Fatalf("reading as itself: %v", r)
	}

	// Revoking another's claim needs standing; the refusal names the principal, right and scope.
	w3.fail("revoke", map[string]any{"claim": "Klarveld.region@1", "because": "I say so"}, "worker-3")

	// Writes are made by the server's principal.
	_, m := w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "soc2", "value": true, "source": "src:trust"})
	if !strings.Contains(m["statement"].(string), "by worker-3") {
		t.Fatalf("assert statement: %v", m["statement"])
	}
	if h := rows(w3.query("history Klarveld.soc2")[0]); h[0]["asserted_by"] != "worker-3" {
		t.Fatalf("asserted by %v", h[0]["asserted_by"])
	}

	// The architect's claims and plan are invisible to worker-3 through every tool.
	hidden := []string{"Player7", "patient", "plan:endgame", "2100"}
	noLeak := func(what, s string) {
		t.Helper()
		for _, h := range hidden {
			if strings.Contains(s, h) && !strings.Contains(s, "not found") {
				t.Fatalf("%s shows %q to worker-3: %s", what, h, s)
			}
		}
	}
	txt, _ := w3.ok("context", map[string]any{"subjects": []any{"Player7", "Klarveld"}})
	// The context names the subjects asked for of which worker-3 sees nothing: it says the same
	// of Player7, whose claims it may not see, as of a subject no one ever named.
	other, _ := w3.ok("context", map[string]any{"subjects": []any{"Nobody9", "Klarveld"}})
	if strings.ReplaceAll(other, "Nobody9", "Player7") != txt {
		t.Fatalf("context of a hidden subject:\n%s\nof an unknown one:\n%s", txt, other)
	}
	noLeak("context", strings.ReplaceAll(txt, "(no live claims of Player7)", ""))
	txt, _ = w3.ok("context", map[string]any{"subjects": []any{"*"}})
	noLeak("context *", txt)
	if !strings.Contains(txt, "Klarveld") {
		t.Fatalf("context * misses public claims: %s", txt)
	}
	for _, stmt := range []string{
		"live *", "live Player7", "live *.style", "find ?p, ?s where ?p.style = ?s", "find ?p where ?p.rating > 0",
		"conflicts", "conflicts Player7", "beliefs *.style", "context *", "stats",
	} {
		r := w3.query(stmt)[0]
		delete(r, "statement") // it echoes what was asked
		noLeak(stmt, mustJSON(r))
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"query", map[string]any{"statement": "why Player7.style"}},
		{"query", map[string]any{"statement": "history Player7.style"}},
		{"query", map[string]any{"statement": "revoked-by Player7.style@1"}},
		{"query", map[string]any{"statement": "impact Player7.style@1"}},
		{"query", map[string]any{"statement": "why plan:endgame"}},
		{"why", map[string]any{"ref": "Player7.style"}},
		{"why", map[string]any{"ref": "Player7.style@1"}},
		{"why", map[string]any{"ref": "plan:endgame"}},
		{"impact", map[string]any{"ref": "Player7.style@1"}},
		{"impact", map[string]any{"ref": "plan:endgame"}},
		{"revoke", map[string]any{"claim": "Player7.style@1"}},
		{"derive", map[string]any{"artifact": "plan:copy", "from": []any{"Player7.style"}}},
		{"derive", map[string]any{"artifact": "plan:copy", "from": []any{"plan:endgame"}}},
		{"review", map[string]any{"artifact": "plan:endgame"}},
	} {
		// The refusal is word for word the one for names that were never recorded.
		msg := w3.fail(tc.tool, tc.args, "not found")
		ghost := strings.NewReplacer("Player7", "Ghost7", "plan:endgame", "plan:ghost")
		var twin map[string]any
		if err := json.Unmarshal([]byte(ghost.Replace(mustJSON(tc.args))), &twin); err != nil {
			t.Fatal(err)
		}
		if want := w3.fail(tc.tool, twin, "not found"); ghost.Replace(msg) != want {
			t.Fatalf("%s %v: %q differs from the refusal for unknown names %q", tc.tool, tc.args, msg, want)
		}
	}
	// Asserting on the same key does not reveal the hidden version either: it becomes version 2
	// for the store, but worker-3 sees only its own.
	w3.ok("assert", map[string]any{"subject": "Player7", "predicate": "style", "value": "aggressive", "source": "src:match-12"})
	if r := rows(w3.query("history Player7.style")[0]); len(r) != 1 || r[0]["value"] != "aggressive" {
		t.Fatalf("history of a key with a hidden version: %v", r)
	}
	st := w3.stats()
	if st.Claims != 3 {
		t.Fatalf("stats resource counts %d claims for worker-3, want 3 (its two and worker-7's)", st.Claims)
	}
	if st.Artifacts != 0 {
		t.Fatalf("stats resource counts the architect's plan: %+v", st)
	}

	// Nothing was written by the refused calls: the store grew by exactly worker-3's two claims.
	after, _ := db.Stats(ctx)
	if after.Claims != before.Claims+2 || after.Revocations != before.Revocations || after.Artifacts != before.Artifacts {
		t.Fatalf("refused calls changed the store: %+v -> %+v", before, after)
	}
}
