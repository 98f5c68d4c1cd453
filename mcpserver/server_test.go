package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
	"github.com/mql-dev/mql/query"
)

var toolNames = []string{"assert", "context", "derive", "impact", "outcome", "query", "review", "revoke", "search", "why"}

// Every tool is listed with a description and a closed input schema naming its required
// fields; none takes a principal.
func TestToolList(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	c := connect(t, db, "")
	res, err := c.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	required := map[string][]string{
		"assert": {"subject", "predicate", "value"}, "revoke": {"claim"}, "derive": {"artifact", "from"},
		"review": {"artifact"}, "query": {"statement"}, "why": {"ref"}, "impact": {"ref"},
		"outcome": {"run", "result"}, "search": nil, // context: subjects or a question; search: text or vector
	}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		if len(tool.Description) < 80 {
			t.Errorf("%s: description too short: %q", tool.Name, tool.Description)
		}
		sc := tool.InputSchema.(map[string]any)
		if sc["type"] != "object" || sc["additionalProperties"] != false {
			t.Errorf("%s: schema is not a closed object: %v", tool.Name, sc)
		}
		var req []string
		rs, _ := sc["required"].([]any) // context requires none: subjects or a question
		for _, r := range rs {
			req = append(req, r.(string))
		}
		if !slices.Equal(req, required[tool.Name]) {
			t.Errorf("%s: required %v, want %v", tool.Name, req, required[tool.Name])
		}
		for name, p := range sc["properties"].(map[string]any) {
			if name == "by" || name == "as" || name == "principal" {
				t.Errorf("%s: takes %q", tool.Name, name)
			}
			if p.(map[string]any)["description"] == nil {
				t.Errorf("%s.%s: no description", tool.Name, name)
			}
		}
		if ro := tool.Annotations.ReadOnlyHint; ro != slices.Contains([]string{"query", "context", "why", "impact", "search"}, tool.Name) {
			t.Errorf("%s: readOnlyHint %v", tool.Name, ro)
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, toolNames) {
		t.Fatalf("tools %v, want %v", names, toolNames)
	}
	// What the metrics label their calls with is the list a client gets.
	if got := slices.Sorted(slices.Values(mcpserver.ToolNames())); !slices.Equal(got, names) {
		t.Errorf("ToolNames() = %v, want the listed tools %v", got, names)
	}
	assertSchema := res.Tools[slices.IndexFunc(res.Tools, func(x *mcp.Tool) bool { return x.Name == "assert" })].InputSchema.(map[string]any)
	props := assertSchema["properties"].(map[string]any)
	if got := mustJSON(props["kind"].(map[string]any)["enum"]); got != `["observed","inferred"]` {
		t.Errorf("assert kind enum %s", got)
	}
	if got := mustJSON(props["value_type"].(map[string]any)["enum"]); got != `["string","number","bool","time","ref"]` {
		t.Errorf("assert value_type enum %s", got)
	}
	if got := mustJSON(props["value"].(map[string]any)["type"]); got != `["string","number","boolean"]` {
		t.Errorf("assert value type %s", got)
	}
	if in := c.cs.InitializeResult(); !strings.Contains(in.Instructions, `act as the principal "owner"`) || in.ServerInfo.Name != "mql" {
		t.Errorf("initialize: %q %+v", in.Instructions, in.ServerInfo)
	}
}

// An MCP client drives every tool and both resources against a fresh store.
func TestEveryTool(t *testing.T) {
	clk := newClock()
	db := openStore(t, "memory:", clk)
	team(t, db)
	w3 := connect(t, db, "worker-3")

	_, m := w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44,
		"sources":    []any{map[string]any{"id": "src:Klarveld:rev0", "excerpt": "EUR 44 per seat", "uri": "https://klarveld.example/pricing", "revision": "rev0"}},
		"confidence": 0.9})
	if rc := receipt(t, m); rc["ref"] != "Klarveld.price_per_seat@1" || rc["state"] != "live" || m["kind"] != "assert" ||
		m["statement"] != `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0" excerpt "EUR 44 per seat" uri "https://klarveld.example/pricing" revision "rev0" confidence 0.9` {
		t.Fatalf("assert: %v", m)
	}
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "EU", "source": "src:Klarveld:rev0", "valid_until": "2027-01-01"})
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "soc2", "value": true, "kind": "inferred", "confidence": 0.5})
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "founded", "value": "2019-03-01T00:00:00Z", "value_type": "time"})
	w3.ok("assert", map[string]any{"subject": "Brimsole", "predicate": "competitor", "value": "Klarveld", "value_type": "ref", "source": "src:Brimsole:about"})
	w3.ok("assert", map[string]any{"subject": "Brimsole", "predicate": "price_per_seat", "value": "39", "value_type": "number", "source": "src:Brimsole:rev0"})

	clk.Add(60e9)
	_, m = w3.ok("derive", map[string]any{"artifact": "plan:pick-vendor", "from": []any{"Klarveld.price_per_seat", "Brimsole.price_per_seat@1"}, "confidence": 0.95})
	if rc := receipt(t, m); rc["ref"] != "plan:pick-vendor@1" || m["statement"] != "derive plan:pick-vendor from Klarveld.price_per_seat, Brimsole.price_per_seat@1 by worker-3 confidence 0.95" {
		t.Fatalf("derive: %v", m)
	}

	clk.Add(60e9)
	_, m = w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 89, "source": "src:Klarveld:rev1"})
	if rc := receipt(t, m); rc["ref"] != "Klarveld.price_per_seat@2" || rc["supersedes"] != "Klarveld.price_per_seat@1" {
		t.Fatalf("revision: %v", m)
	}

	_, m = w3.ok("impact", map[string]any{"ref": "Klarveld.price_per_seat@1"})
	deps := rows(m)
	if len(deps) != 1 || deps[0]["artifact"].(map[string]any)["ref"] != "plan:pick-vendor@1" || deps[0]["artifact"].(map[string]any)["review"] != "needs review" {
		t.Fatalf("impact: %v", m)
	}
	_, m = w3.ok("impact", map[string]any{"ref": "Klarveld.price_per_seat", "depth": 1})
	if len(rows(m)) != 1 || mustJSON(m["of"]) != `["Klarveld.price_per_seat@1","Klarveld.price_per_seat@2"]` {
		t.Fatalf("impact of a key: %v", m)
	}

	_, m = w3.ok("why", map[string]any{"ref": "Klarveld.price_per_seat"})
	root := rows(m)[0]
	if root["claim"].(map[string]any)["ref"] != "Klarveld.price_per_seat@2" || root["claim"].(map[string]any)["value"] != 89.0 {
		t.Fatalf("why: %v", m)
	}
	if !strings.Contains(mustJSON(root), `"relation":"supersedes"`) || !strings.Contains(mustJSON(root), `"excerpt":"EUR 44 per seat"`) {
		t.Fatalf("why has no superseded version with its source: %s", mustJSON(root))
	}
	_, m = w3.ok("why", map[string]any{"ref": "plan:pick-vendor"})
	if rows(m)[0]["kind"] != "artifact" {
		t.Fatalf("why artifact: %v", m)
	}

	_, m = w3.ok("review", map[string]any{"artifact": "plan:pick-vendor", "because": "89 is still above Brimsole's 39"})
	if receipt(t, m)["ref"] != "plan:pick-vendor@1" {
		t.Fatalf("review: %v", m)
	}
	_, m = w3.ok("impact", map[string]any{"ref": "Klarveld.price_per_seat@1"})
	if rows(m)[0]["artifact"].(map[string]any)["review"] != "ok" {
		t.Fatalf("impact after review: %v", m)
	}

	_, m = w3.ok("revoke", map[string]any{"claim": "Klarveld.price_per_seat@1", "because": "misread the page", "replaced_by": "Klarveld.price_per_seat@2"})
	if rc := receipt(t, m); rc["ref"] != "Klarveld.price_per_seat@1" || rc["state"] != "revoked" {
		t.Fatalf("revoke: %v", m)
	}

	txt, m := w3.ok("context", map[string]any{"subjects": []any{"Klarveld", "Brimsole"}})
	want := "Klarveld: price_per_seat=89 @2, region=\"EU\" @1, soc2=true @1 (0.50), founded=2019-03-01T00:00:00Z @1\n" +
		"Brimsole: competitor=Klarveld @1, price_per_seat=39 @1\n"
	if txt != want || m["kind"] != "context" {
		t.Fatalf("context text:\n%s\nwant:\n%s", txt, want)
	}
	txt, _ = w3.ok("context", map[string]any{"subjects": []any{"Brimsole", "Klarveld"}, "budget": 30})
	if !strings.Contains(txt, "(left out for the token budget: 1 subjects: Klarveld)") {
		t.Fatalf("context with budget:\n%s", txt)
	}
	txt, _ = w3.ok("context", map[string]any{"subjects": []any{"*"}})
	if strings.Count(txt, "\n") != 2 {
		t.Fatalf("context *:\n%s", txt)
	}
	txt, _ = w3.ok("context", map[string]any{"subjects": []any{"Nobody"}})
	if txt != "(nothing visible: no live claims of Nobody)\n" {
		t.Fatalf("context of nothing: %q", txt)
	}

	rs := w3.query("live Klarveld.price_per_seat; history Klarveld.price_per_seat\nfind ?v, ?p where ?v.price_per_seat = ?p order by ?p limit 1")
	if len(rs) != 3 || rs[0]["kind"] != "live" || rs[1]["kind"] != "history" || rs[2]["kind"] != "find" {
		t.Fatalf("query kinds: %v", rs)
	}
	if live := rows(rs[0]); len(live) != 1 || live[0]["value"] != 89.0 || live[0]["value_type"] != "number" || live[0]["asserted_by"] != "worker-3" {
		t.Fatalf("live: %v", live)
	}
	if h := rows(rs[1]); len(h) != 2 || h[0]["state"] != "revoked" {
		t.Fatalf("history: %v", h)
	}
	if f := rows(rs[2]); mustJSON(f) != `[{"claims":["Brimsole.price_per_seat@1"],"values":{"p":39,"v":"Brimsole"}}]` {
		t.Fatalf("find: %s", mustJSON(f))
	}
	for _, stmt := range []string{"conflicts", "beliefs *.soc2", "revoked-by Klarveld.price_per_seat@1", "stats", "as of tx 3 live Klarveld", "as worker-3 context *"} {
		if r := w3.query(stmt); len(r) != 1 {
			t.Fatalf("%s: %v", stmt, r)
		}
	}

	// A distribution over nothing: the gate declines, entropy reported as 0.
	if b := w3.query("beliefs *.nothing")[0]; b["entropy_bits"] != 0.0 || b["decision"] != "decline" || len(rows(b)) != 0 {
		t.Fatalf("beliefs over nothing: %v", b)
	}

	// Resources.
	lr, err := w3.cs.ListResources(context.Background(), nil)
	if err != nil || len(lr.Resources) != 3 {
		t.Fatalf("resources: %v %v", lr, err)
	}
	st := w3.stats()
	if st.Claims != 7 || st.Revocations != 1 || st.Artifacts != 1 || st.ByState[mql.Superseded] != 0 || st.ByState[mql.Revoked] != 1 {
		t.Fatalf("stats: %+v", st)
	}
	lang := w3.readResource(mcpserver.LanguageURI)
	doc, err := os.ReadFile("language.md") // TestLanguageCopy checks it is docs/LANGUAGE.md
	if err != nil {
		t.Fatal(err)
	}
	if lang.Text != string(doc) || lang.MIMEType != "text/markdown" || !strings.HasPrefix(lang.Text, "# The mql language") {
		t.Fatalf("language resource differs from the language reference (%d vs %d bytes)", len(lang.Text), len(doc))
	}
}

// Errors come back as tool errors, with the message the language gives, and change nothing.
func TestToolErrors(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	team(t, db)
	w3 := connect(t, db, "worker-3")
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "source": "src:Klarveld:rev0"})
	w3.ok("derive", map[string]any{"artifact": "plan:pick-vendor", "from": []any{"Klarveld.price_per_seat"}})
	before := w3.stats()

	// query: syntax errors and refused writes are positioned as query:LINE:COL.
	w3.fail("query", map[string]any{"statement": "live Klarveld@"}, "query:1:")
	w3.fail("query", map[string]any{"statement": "asert Klarveld.x = 1 by worker-3"}, `query:1:1: unknown statement "asert"`)
	w3.fail("query", map[string]any{"statement": "assert Klarveld.x = 1 by worker-3"}, "query:1:1: assert is a write; the query tool runs only reads")
	w3.fail("query", map[string]any{"statement": "stats\nprincipal mallory agent"}, "query:2:1: principal is a write")
	w3.fail("query", map[string]any{"statement": "-- nothing"}, "no statement")
	w3.fail("query", map[string]any{"statement": "why Nope.p"}, "query:1:1: Nope.p: not found")

	// Library errors: the message the language gives, after its position.
	cases := []struct {
		tool, stmt string
		args       map[string]any
	}{
		{"assert", `assert Klarveld.price_per_seat = "cheap" by worker-3`, map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": "cheap"}},
		{"assert", `assert Klarveld.region = "EU" by worker-3 seen by nobody`, map[string]any{"subject": "Klarveld", "predicate": "region", "value": "EU", "seen_by": []any{"nobody"}}},
		{"revoke", `revoke Nope.p@1 by worker-3`, map[string]any{"claim": "Nope.p@1"}},
		{"revoke", `revoke Klarveld.price_per_seat@1 by worker-3 replaced by Klarveld.price_per_seat@7`, map[string]any{"claim": "Klarveld.price_per_seat@1", "replaced_by": "Klarveld.price_per_seat@7"}},
		{"derive", `derive plan:x from Nope.p by worker-3`, map[string]any{"artifact": "plan:x", "from": []any{"Nope.p"}}},
		{"derive", `derive plan:pick-vendor from plan:pick-vendor@9 by worker-3`, map[string]any{"artifact": "plan:pick-vendor", "from": []any{"plan:pick-vendor@9"}}},
		{"review", `review plan:nope by worker-3`, map[string]any{"artifact": "plan:nope"}},
		{"review", `review plan:pick-vendor@4 by worker-3`, map[string]any{"artifact": "plan:pick-vendor@4"}},
		{"why", `why Klarveld.price_per_seat@9`, map[string]any{"ref": "Klarveld.price_per_seat@9"}},
		{"why", `why plan:nope`, map[string]any{"ref": "plan:nope"}},
		{"impact", `impact Nope.p`, map[string]any{"ref": "Nope.p"}},
		{"context", `context Klarveld budget 1`, map[string]any{"subjects": []any{"Klarveld"}, "budget": 1}},
	}
	sess := query.NewSession(db, "worker-3")
	for _, tc := range cases {
		err := sess.Exec(context.Background(), "x", tc.stmt, nil)
		if tc.stmt == `context Klarveld budget 1` {
			// Not an error: a tiny budget leaves everything out.
			if err != nil {
				t.Fatalf("%s: %v", tc.stmt, err)
			}
			txt, _ := w3.ok(tc.tool, tc.args)
			if !strings.Contains(txt, "left out") {
				t.Fatalf("context budget 1: %q", txt)
			}
			continue
		}
		if err == nil {
			t.Fatalf("%s: the language accepted it", tc.stmt)
		}
		var ee *query.EvalError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: not an evaluation error: %v", tc.stmt, err)
		}
		msg := w3.fail(tc.tool, tc.args, "")
		if !strings.HasPrefix(msg, ee.Err.Error()) {
			t.Errorf("%s %v:\n tool error     %q\n language error %q", tc.tool, tc.args, msg, err)
		}
	}

	// The schema refuses malformed arguments before anything runs.
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "confidence": 1.5}, "confidence"},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "kind": "confirmed"}, "kind"},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat"}, "value"},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": nil}, "value"},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": []any{1}}, "value"},
		{"assert", map[string]any{"subject": "Klar veld", "predicate": "price_per_seat", "value": 44}, "subject"},
		{"assert", map[string]any{"subject": "Klarveld-", "predicate": "price_per_seat", "value": 44}, "subject"}, // the language could not name it
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "valid_until": "next year"}, "valid_until"},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "by": "alice"}, "by"},
		{"revoke", map[string]any{"claim": "Klarveld.price_per_seat"}, "claim"},
		{"derive", map[string]any{"artifact": "plan:x", "from": []any{}}, "from"},
		{"context", map[string]any{"subjects": []any{}}, "subjects"},
		{"context", map[string]any{"question": ""}, "question"},
		{"impact", map[string]any{"ref": "Klarveld.price_per_seat@1", "depth": -1}, "depth"},
		{"query", map[string]any{}, "statement"},
	} {
		w3.fail(tc.tool, tc.args, tc.want)
	}
	// Values that fit the schema but not their value_type.
	w3.fail("assert", map[string]any{"subject": "K", "predicate": "founded", "value": "yesterday", "value_type": "time"}, `value "yesterday": invalid input`)
	w3.fail("assert", map[string]any{"subject": "K", "predicate": "founded", "value": 2019, "value_type": "time"}, `value_type "time" needs a string`)
	w3.fail("assert", map[string]any{"subject": "K", "predicate": "rival", "value": "Brim sole", "value_type": "ref"}, "bad reference")
	w3.fail("assert", map[string]any{"subject": "K", "predicate": "n", "value": "many", "value_type": "number"}, `value_type "number" needs a number`)
	w3.fail("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "EU", "valid_from": "2027-01-01", "valid_until": "2026-01-01T10:00:00+02:00"},
		"valid until 2026-01-01T08:00:00Z is not after valid from 2027-01-01T00:00:00Z")
	msg := w3.fail("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": "cheap"}, "wrong value type")
	if !strings.Contains(msg, "value_type") {
		t.Errorf("no hint for the tool: %s", msg)
	}

	// An unknown tool is a protocol error, not a crash; the server keeps serving.
	if _, err := w3.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "drop", Arguments: map[string]any{}}); err == nil {
		t.Fatal("unknown tool accepted")
	}
	if _, err := w3.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mql://nope"}); err == nil {
		t.Fatal("unknown resource read")
	}
	if after := w3.stats(); mustJSON(after) != mustJSON(before) {
		t.Fatalf("failed calls changed the store:\n%+v\n%+v", before, after)
	}
}

// Serve checks the principal first, and returns nil when the client goes away.
func TestServe(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	err := mcpserver.Serve(context.Background(), db, "ghost", strings.NewReader(""), &bytes.Buffer{})
	if !errors.Is(err, mql.ErrUnknownPrincipal) || !strings.Contains(err.Error(), "principal ghost agent") {
		t.Fatalf("unknown principal: %v", err)
	}
	if err := mcpserver.Check(context.Background(), db, ""); err != nil {
		t.Fatal(err)
	}
	// A raw JSON-RPC conversation over a pipe, as a client on stdio would have it.
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- mcpserver.Serve(context.Background(), db, "", inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() string {
		if !lines.Scan() {
			t.Fatalf("no response: %v", lines.Err())
		}
		return lines.Text()
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := recv(); !strings.Contains(r, `"id":1`) || !strings.Contains(r, `"name":"mql"`) {
		t.Fatalf("initialize: %s", r)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query","arguments":{"statement":"stats"}}}`)
	if r := recv(); !strings.Contains(r, `"id":2`) || !strings.Contains(r, `\"kind\":\"stats\"`) {
		t.Fatalf("tools/call: %s", r)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query","arguments":{"statement":"stats","by":"alice"}}}`)
	if r := recv(); !strings.Contains(r, `"id":3`) || !strings.Contains(r, `"isError":true`) {
		t.Fatalf("tools/call with by: %s", r)
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatalf("serve after the client closed stdin: %v", err)
	}
}

// mcpserver/language.md, embedded as the language resource, is a copy of docs/LANGUAGE.md.
func TestLanguageCopy(t *testing.T) {
	doc, err := os.ReadFile("../docs/LANGUAGE.md")
	if err != nil {
		t.Fatal(err)
	}
	cp, err := os.ReadFile("language.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, cp) {
		t.Fatal("mcpserver/language.md differs from docs/LANGUAGE.md: run `go generate ./mcpserver/`")
	}
}
