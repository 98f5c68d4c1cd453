package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql/internal/syncbuf"
	"github.com/mql-dev/mql/server"
)

// logLines decodes the JSON log lines written to log so far.
func logLines(t *testing.T, log *syncbuf.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// The request log of an MCP call names its method and, for tools/call, the tool, as
// docs/SERVE.md says.
func TestLogNamesTheMCPTool(t *testing.T) {
	var log syncbuf.Buffer
	tm := newTeam(t, server.Options{Logger: slog.New(slog.NewJSONHandler(&log, nil))})
	ctx := context.Background()
	tr := &mcp.StreamableClientTransport{Endpoint: tm.http.URL + "/mcp", HTTPClient: &http.Client{Transport: &bearerTransport{token: tm.tokens["worker-3"]}}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "assert", Arguments: map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "source": "src:Klarveld:rev0"}})
	if err != nil || res.IsError {
		t.Fatalf("assert: %v %+v", err, res)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	// A request is logged once its handler has returned, which can be after its client read
	// the answer: wait for the lines a little.
	wanted := []string{"mcp initialize", "mcp tools/call assert", "mcp tools/list"}
	var whats []string
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		whats = whats[:0]
		for _, l := range logLines(t, &log) {
			if l["path"] == "/mcp" {
				whats = append(whats, l["what"].(string))
				if l["principal"] != "worker-3" {
					t.Fatalf("an MCP request logged as %v, want worker-3", l["principal"])
				}
			}
		}
		all := true
		for _, want := range wanted {
			all = all && slices.Contains(whats, want)
		}
		if all || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wanted {
		found := false
		for _, w := range whats {
			found = found || w == want
		}
		if !found {
			t.Errorf("no MCP request logged with what=%q; logged: %q", want, whats)
		}
	}
}
