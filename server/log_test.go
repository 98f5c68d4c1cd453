package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql/server"
)

// syncBuffer is a bytes.Buffer that a server's handlers may write to concurrently.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lines decodes the JSON log lines written so far.
func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
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
	var log syncBuffer
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
		for _, l := range log.lines(t) {
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
