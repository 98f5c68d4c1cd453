package server

import (
	"testing"
	"time"
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
	for in, want := range map[string]string{
		"mcp tools/call assert": "assert", "mcp tools/call nope": "other", "mcp initialize": "initialize",
		"mcp secret/method": "other", "mcp": "stream", "": "stream",
	} {
		if got := mcpOp(in); got != want {
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
