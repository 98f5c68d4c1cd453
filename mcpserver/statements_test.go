package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// toolCall is one call of a tool and the statement of the language it is equivalent to.
type toolCall struct {
	tool string
	args map[string]any
	stmt string
}

// Every tool but query answers as the language answers its equivalent statement (docs/MCP.md,
// "Results"): the result's statement is that statement, canonical (it parses and prints back
// the same), by the server's principal for a write; a read's whole result is the one the
// language gives for the statement. And a tool's refusal is the language's message for it:
// here, of every tool of a server whose principal was never recorded, which writes nothing.
func TestToolsAnswerAsTheirStatements(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	db := openStore(t, "memory:", clk)
	team(t, db)
	w3 := connect(t, db, "worker-3")
	sess := query.NewSession(db, "worker-3")

	calls := []toolCall{
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "source": "src:k:rev0"},
			`assert Klarveld.price_per_seat = 44 by worker-3 from "src:k:rev0"`},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "note", "value": "EU \"team\" plan", "source": "src:k:rev0",
			"sources":    []any{map[string]any{"id": "src:k:rev1", "excerpt": "billed yearly", "uri": "https://k.example/p", "revision": "r1"}},
			"confidence": 0.75, "kind": "observed", "valid_from": "2026-01-01", "valid_until": "2030-01-01T10:30:00+02:00",
			"seen_by": []any{"worker-3", "worker-7"}, "vector": []any{1, 0, 0.5}},
			`assert Klarveld.note = "EU \"team\" plan" by worker-3 from "src:k:rev0", "src:k:rev1" excerpt "billed yearly" uri "https://k.example/p" revision "r1" confidence 0.75 kind observed valid from 2026-01-01 valid until 2030-01-01T08:30:00Z seen by worker-3, worker-7 vector "1 0 0.5"`},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "founded", "value": "2019-03-01", "value_type": "time", "kind": "inferred"},
			`assert Klarveld.founded = 2019-03-01 by worker-3 kind inferred`},
		{"assert", map[string]any{"subject": "Brimsole", "predicate": "rival", "value": "Klarveld", "value_type": "ref"},
			`assert Brimsole.rival = Klarveld by worker-3`},
		{"assert", map[string]any{"subject": "Brimsole", "predicate": "price_per_seat", "value": "39.5", "value_type": "number"},
			`assert Brimsole.price_per_seat = 39.5 by worker-3`},
		{"derive", map[string]any{"artifact": "plan:pick", "from": []any{"Klarveld.price_per_seat", "Brimsole.price_per_seat@1"}, "confidence": 0.8, "seen_by": []any{"worker-3"}, "run": "r-1"},
			`derive plan:pick from Klarveld.price_per_seat, Brimsole.price_per_seat@1 by worker-3 confidence 0.8 seen by worker-3 in run r-1`},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 89, "source": "src:k:rev2"},
			`assert Klarveld.price_per_seat = 89 by worker-3 from "src:k:rev2"`},
		{"review", map[string]any{"artifact": "plan:pick@1", "because": `still "cheapest"`},
			`review plan:pick@1 by worker-3 because "still \"cheapest\""`},
		{"revoke", map[string]any{"claim": "Klarveld.price_per_seat@1", "because": "misread", "replaced_by": "Klarveld.price_per_seat@2"},
			`revoke Klarveld.price_per_seat@1 by worker-3 because "misread" replaced by Klarveld.price_per_seat@2`},
		{"outcome", map[string]any{"run": "r-1", "result": "succeeded", "because": "bought"},
			`outcome run r-1 succeeded by worker-3 because "bought"`},
		{"why", map[string]any{"ref": "Klarveld.price_per_seat"}, `why Klarveld.price_per_seat`},
		{"why", map[string]any{"ref": "plan:pick", "run": "r-2"}, `why plan:pick for run r-2`},
		{"impact", map[string]any{"ref": "Brimsole.price_per_seat@1", "depth": 1}, `impact Brimsole.price_per_seat@1 depth 1`},
		{"impact", map[string]any{"ref": "Klarveld.price_per_seat"}, `impact Klarveld.price_per_seat`},
		{"search", map[string]any{"text": "team plan", "on": []any{"Klarveld", "*.note", "Brimsole.*"}, "signals": []any{"text"}, "limit": 5, "history": true, "run": "r-2"},
			`search "team plan" on Klarveld, *.note, Brimsole signals text limit 5 history for run r-2`},
		{"search", map[string]any{"vector": []any{1, 0, 0}, "on": []any{"*"}}, `search "" on * vector "1 0 0"`},
		{"context", map[string]any{"subjects": []any{"Klarveld", "Brimsole"}, "budget": 60, "run": "r-2"}, `context Klarveld, Brimsole budget 60 for run r-2`},
		{"context", map[string]any{"subjects": []any{"*"}}, `context *`},
		{"context", map[string]any{"question": `the "team" plan`, "budget": 40}, `context for "the \"team\" plan" budget 40`},
	}
	for _, c := range calls {
		clk.Add(60e9)
		head, _ := db.Head(ctx)
		_, m := w3.ok(c.tool, c.args)
		if m["statement"] != c.stmt {
			t.Errorf("%s %v: statement\n %s\nwant\n %s", c.tool, c.args, m["statement"], c.stmt)
			continue
		}
		st, err := query.ParseStmt("x", c.stmt)
		if err != nil || st.String() != c.stmt {
			t.Errorf("%s: not a canonical statement: %v, %v", c.stmt, st, err)
			continue
		}
		if _, read := query.ReadFor(st); !read {
			if h, _ := db.Head(ctx); h != head+1 {
				t.Errorf("%s: head %d → %d, want one transaction", c.stmt, head, h)
			}
			continue
		}
		r, err := sess.Eval(ctx, st)
		if err != nil {
			t.Fatalf("%s: %v", c.stmt, err)
		}
		lang, err := output.JSON(r)
		if err != nil {
			t.Fatal(err)
		}
		if got := mustJSON(m); got != canonJSON(t, lang) {
			t.Errorf("%s %v:\n tool     %s\n language %s", c.tool, c.args, got, lang)
		}
	}

	// A server acting as a principal the store does not know: every tool refuses, with the
	// language's message for the statement made as that principal, and nothing is written.
	ghost := connect(t, db, "ghost")
	gsess := query.NewSession(db, "ghost")
	calls = append(calls, toolCall{"query", map[string]any{"statement": "stats"}, "stats"})
	head, _ := db.Head(ctx)
	refused := map[string]bool{}
	for _, c := range calls {
		stmt := strings.ReplaceAll(c.stmt, "by worker-3", "by ghost")
		err := gsess.Exec(ctx, "query", stmt, nil)
		var ee *query.EvalError
		if !errors.As(err, &ee) {
			t.Fatalf("%s as ghost: %v", stmt, err)
		}
		want := ee.Err.Error()
		if c.tool == "query" {
			want = err.Error() // the query tool's statements keep their position
		}
		if msg := ghost.fail(c.tool, c.args, "unknown principal"); msg != want {
			t.Errorf("ghost %s %v:\n tool     %q\n language %q", c.tool, c.args, msg, want)
		}
		refused[c.tool] = true
	}
	if h, _ := db.Head(ctx); h != head {
		t.Errorf("refused calls wrote: head %d → %d", head, h)
	}
	for _, tool := range toolNames {
		if !refused[tool] {
			t.Errorf("no call of %s here", tool)
		}
	}
}

// canonJSON is raw as encoding/json writes it back, keys sorted: the form of a tool's
// structured content.
func canonJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return mustJSON(v)
}
