package mcpserver_test

import (
	"context"
	"encoding/json"
	"github.com/mql-dev/mql/internal/pgtest"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

// clock is a test clock that moves only when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openStore opens dsn and closes it when the test ends.
func openStore(t *testing.T, dsn string, clk *clock) *mql.DB {
	t.Helper()
	opts := mql.Options{}
	if clk != nil {
		opts.Clock = clk.Now
	}
	db, err := mql.Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// team records the principals the tests use.
func team(t *testing.T, db *mql.DB) {
	t.Helper()
	for _, p := range []struct {
		name string
		typ  mql.PrincipalType
	}{
		{"alice", mql.User}, {"worker-3", mql.Agent}, {"worker-7", mql.Agent}, {"worker-9", mql.Agent},
		{"orchestrator", mql.Agent}, {"architect", mql.Agent},
	} {
		if _, err := db.AddPrincipal(context.Background(), mql.PrincipalSpec{Name: p.name, Type: p.typ, By: db.Owner()}); err != nil {
			t.Fatal(err)
		}
	}
}

// postgresDSN gives one test a PostgreSQL database of its own, or skips.
func postgresDSN(t *testing.T) string { return pgtest.Database(t) }

// client is an MCP client session connected to a server, with test helpers.
type client struct {
	t  *testing.T
	as string
	cs *mcp.ClientSession
}

// connect starts mcpserver.New(db, as) in process and connects the SDK's client to it.
func connect(t *testing.T, db *mql.DB, as string) *client {
	t.Helper()
	return connectWith(t, db, as, mcpserver.Options{})
}

// connectWith is connect to mcpserver.NewWith(db, as, opts).
func connectWith(t *testing.T, db *mql.DB, as string, opts mcpserver.Options) *client {
	t.Helper()
	return connectTo(t, mcpserver.NewWith(db, as, opts), as)
}

// connectTo connects the SDK's client, in process, to srv, a server for as.
func connectTo(t *testing.T, srv *mcp.Server, as string) *client {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return &client{t: t, as: as, cs: cs}
}

func (c *client) call(name string, args map[string]any) *mcp.CallToolResult {
	c.t.Helper()
	res, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		c.t.Fatalf("%s %s: protocol error: %v", c.as, name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, ct := range res.Content {
		if tc, ok := ct.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ok calls a tool that must succeed and returns its text and structured content.
func (c *client) ok(name string, args map[string]any) (string, map[string]any) {
	c.t.Helper()
	res := c.call(name, args)
	if res.IsError {
		c.t.Fatalf("%s %s %v: tool error: %s", c.as, name, args, text(res))
	}
	m, _ := res.StructuredContent.(map[string]any)
	if m == nil {
		c.t.Fatalf("%s %s: no structured content: %#v", c.as, name, res.StructuredContent)
	}
	return text(res), m
}

// fail calls a tool that must fail with a tool error containing want, and returns the message.
func (c *client) fail(name string, args map[string]any, want string) string {
	c.t.Helper()
	res := c.call(name, args)
	msg := text(res)
	if !res.IsError {
		c.t.Fatalf("%s %s %v: want a tool error containing %q, got success: %s", c.as, name, args, want, msg)
	}
	if !strings.Contains(msg, want) {
		c.t.Fatalf("%s %s %v: tool error %q does not contain %q", c.as, name, args, msg, want)
	}
	return msg
}

// query runs read statements and returns their result objects.
func (c *client) query(stmt string) []map[string]any {
	c.t.Helper()
	_, m := c.ok("query", map[string]any{"statement": stmt})
	var out []map[string]any
	for _, r := range m["results"].([]any) {
		out = append(out, r.(map[string]any))
	}
	return out
}

// rows is the rows of one result object.
func rows(r map[string]any) []map[string]any {
	var out []map[string]any
	for _, x := range r["rows"].([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// receipt is the one row of a write's result.
func receipt(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	rs := rows(m)
	if len(rs) != 1 {
		t.Fatalf("want one receipt, got %v", m)
	}
	return rs[0]
}

func (c *client) readResource(uri string) *mcp.ResourceContents {
	c.t.Helper()
	res, err := c.cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		c.t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 {
		c.t.Fatalf("read %s: %d contents", uri, len(res.Contents))
	}
	return res.Contents[0]
}

func (c *client) stats() mql.Stats {
	c.t.Helper()
	var st mql.Stats
	if err := json.Unmarshal([]byte(c.readResource(mcpserver.StatsURI).Text), &st); err != nil {
		c.t.Fatal(err)
	}
	return st
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
