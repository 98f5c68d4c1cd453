package mcpserver_test

import (
	"strings"
	"testing"
)

// Issue 11, items 3 and 4, through MCP: another principal's private artifact version and
// private value type change nothing a server's principal is told.
func TestNoOraclesThroughMCP(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	team(t, db)
	arch := connect(t, db, "architect")
	w3 := connect(t, db, "worker-3")
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "EU"})
	arch.ok("derive", map[string]any{"artifact": "plan:secret", "from": []any{"Klarveld.region"}, "seen_by": []any{"architect"}})
	arch.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "secret", "value": "s", "seen_by": []any{"architect"}})

	w3.fail("query", map[string]any{"statement": "history plan:secret"}, "artifact plan:secret: not found: derive it first")
	txt, m := w3.ok("derive", map[string]any{"artifact": "plan:secret", "from": []any{"Klarveld.region"}})
	if rc := receipt(t, m); rc["ref"] != "plan:secret@2" || rc["state"] != "live" || rc["supersedes"] != nil || strings.Contains(txt, "supersedes\":\"plan") {
		t.Fatalf("worker-3's derive: %v", rc)
	}
	if h := arch.query("history plan:secret"); len(rows(h[0])) != 2 || rows(h[0])[0]["state"] != "live" {
		t.Fatalf("the architect's version after worker-3's derive: %v", h)
	}
	// The value type of the architect's private claim does not refuse worker-3's number.
	_, m = w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "secret", "value": 5})
	if rc := receipt(t, m); rc["ref"] != "Klarveld.secret@2" || rc["state"] != "live" {
		t.Fatalf("worker-3's number: %v", rc)
	}
	w3.fail("assert", map[string]any{"subject": "Klarveld", "predicate": "secret", "value": "t"}, "secret holds number values")
	// Naming the hidden version reads like naming one that never existed.
	hidden := w3.fail("revoke", map[string]any{"claim": "Klarveld.secret@1"}, "not found")
	none := w3.fail("revoke", map[string]any{"claim": "Klarveld.secret@9"}, "not found")
	if strings.ReplaceAll(hidden, "Klarveld.secret@1:", "X:") != strings.ReplaceAll(none, "Klarveld.secret@9:", "X:") {
		t.Fatalf("a hidden version: %q; none: %q", hidden, none)
	}
	hidden = w3.fail("review", map[string]any{"artifact": "plan:secret@1"}, "not found")
	none = w3.fail("review", map[string]any{"artifact": "plan:secret@9"}, "not found")
	if strings.ReplaceAll(hidden, "plan:secret@1:", "X:") != strings.ReplaceAll(none, "plan:secret@9:", "X:") {
		t.Fatalf("a hidden artifact version: %q; none: %q", hidden, none)
	}
	// Writing into the architect's audience is refused: it would supersede what worker-3 may
	// not see.
	w3.fail("assert", map[string]any{"subject": "Klarveld", "predicate": "secret", "value": 6, "seen_by": []any{"architect"}}, "would not see what it writes")
}
