package mcpserver_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite testdata/transcript.md")

// TestTranscript records a short session of real tool calls and results; docs/MCP.md shows it.
// Run `go test ./mcpserver/ -run Transcript -update` after changing the tools, and paste
// testdata/transcript.md into docs/MCP.md.
func TestTranscript(t *testing.T) {
	clk := newClock()
	db := openStore(t, "memory:", clk)
	team(t, db)
	servers := map[string]*client{}
	var b strings.Builder
	step := func(as, tool string, args map[string]any) {
		t.Helper()
		clk.Add(time.Minute)
		c := servers[as]
		if c == nil {
			c = connect(t, db, as)
			servers[as] = c
		}
		res := c.call(tool, args)
		fmt.Fprintf(&b, "→ %s calls %s %s\n", as, tool, mustJSON(args))
		out := text(res)
		if res.IsError {
			fmt.Fprintf(&b, "← error: %s\n\n", out)
			return
		}
		if tool != "context" && len(out) > 300 {
			var ind bytes.Buffer
			if err := json.Indent(&ind, []byte(out), "", "  "); err != nil {
				t.Fatal(err)
			}
			out = ind.String()
		}
		fmt.Fprintf(&b, "← %s\n\n", strings.ReplaceAll(strings.TrimRight(out, "\n"), "\n", "\n  "))
	}
	step("worker-3", "assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44,
		"sources": []any{map[string]any{"id": "src:Klarveld:pricing:2026-11", "excerpt": "EUR 44 per seat per month"}}, "confidence": 0.9})
	step("worker-3", "assert", map[string]any{"subject": "Klarveld", "predicate": "soc2", "value": true, "source": "src:Klarveld:trust", "valid_until": "2027-06-30"})
	step("worker-7", "assert", map[string]any{"subject": "Brimsole", "predicate": "price_per_seat", "value": 39, "source": "src:Brimsole:pricing:2026-11"})
	step("worker-7", "assert", map[string]any{"subject": "Brimsole", "predicate": "soc2", "value": true, "source": "src:Brimsole:trust"})
	step("orchestrator", "query", map[string]any{"statement": "find ?v, ?p where ?v.soc2 = true, ?v.price_per_seat = ?p order by ?p limit 1"})
	step("orchestrator", "derive", map[string]any{"artifact": "plan:pick-vendor", "from": []any{"Brimsole.price_per_seat", "Klarveld.price_per_seat"}})
	step("worker-7", "assert", map[string]any{"subject": "Brimsole", "predicate": "price_per_seat", "value": 58, "source": "src:Brimsole:pricing:2026-12"})
	step("orchestrator", "context", map[string]any{"subjects": []any{"Klarveld", "Brimsole"}, "budget": 60})
	step("orchestrator", "impact", map[string]any{"ref": "Brimsole.price_per_seat@1"})
	step("orchestrator", "query", map[string]any{"statement": "find ?v, ?p where ?v.soc2 = true, ?v.price_per_seat = ?p order by ?p limit 1"})
	step("orchestrator", "derive", map[string]any{"artifact": "plan:pick-vendor", "from": []any{"Klarveld.price_per_seat", "Brimsole.price_per_seat"}})
	step("worker-3", "query", map[string]any{"statement": `assert Brimsole.price_per_seat = 1 by worker-7`})
	step("worker-3", "query", map[string]any{"statement": "as worker-7 live *"})
	step("worker-3", "revoke", map[string]any{"claim": "Brimsole.price_per_seat@2", "because": "looks wrong"})
	got := strings.TrimRight(b.String(), "\n") + "\n"

	const golden = "testdata/transcript.md"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("transcript changed; run `go test ./mcpserver/ -run Transcript -update` and update docs/MCP.md.\ngot:\n%s", got)
	}
	doc, err := os.ReadFile("../docs/MCP.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), got) {
		t.Fatal("docs/MCP.md does not show testdata/transcript.md verbatim; paste it in")
	}
}
