package server

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

// What the metrics add to a request: one counter and one histogram observation, with the
// labels looked up (docs/BENCHMARKS.md compares it with a request's round trip).
func BenchmarkMetricsObserve(b *testing.B) {
	m := NewMetrics(MetricsOptions{})
	b.ReportAllocs()
	for b.Loop() {
		m.observe("http", "/v1/query", "assert,live", "ok", 120*time.Microsecond)
	}
}

func BenchmarkMetricsObserveMCP(b *testing.B) {
	m := NewMetrics(MetricsOptions{})
	b.ReportAllocs()
	for b.Loop() {
		m.observe("http", "/mcp", "mcp tools/call assert", "ok", 120*time.Microsecond)
	}
}

// The labels come from fixed sets whatever the request says.
func TestMetricLabels(t *testing.T) {
	for _, tc := range []struct{ in, route string }{
		{"/v1/query", "/v1/query"},
		{"/v1/tokens/t6/revoke", "/v1/tokens/{id}/revoke"},
		{"/static/app.js", "/static/"},
		{"/v1/tokens/t6/other", "other"},
		{"/anything/else", "other"},
		{"", "other"},
	} {
		if got := routeOf(tc.in); got != tc.route {
			t.Errorf("routeOf(%q) = %q, want %q", tc.in, got, tc.route)
		}
	}
	m := NewMetrics(MetricsOptions{})
	for in, want := range map[string]string{
		"mcp tools/call assert": "assert", "mcp tools/call nope": "other", "mcp initialize": "initialize",
		"mcp secret/method": "other", "mcp": "stream", "": "stream",
	} {
		if got := m.mcpOp(in); got != want {
			t.Errorf("mcpOp(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"ok": "ok", "read only": "read_only", "Not Found": "not_found", "Service Unavailable": "service_unavailable",
		"evaluation": "evaluation", "Klarveld secret": "other", "": "other",
	} {
		if got := outcomeLabel(in); got != want {
			t.Errorf("outcomeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every tool an MCP client is offered is counted under its own name, never as "other": the
// labels come from the server's own tool list, so a new tool cannot be missed.
func TestMetricLabelsNameEveryTool(t *testing.T) {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(db, "").Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) == 0 {
		t.Fatal("the MCP server lists no tools")
	}
	m := NewMetrics(MetricsOptions{})
	for _, tool := range list.Tools {
		if got := m.mcpOp("mcp tools/call " + tool.Name); got != tool.Name {
			t.Errorf("a call of %s is counted as %q, want %q", tool.Name, got, tool.Name)
		}
	}
}
