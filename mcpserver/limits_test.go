package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

// connectLimited is connect for a server with limits lim.
func connectLimited(t *testing.T, db *mql.DB, as string, lim mcpserver.Limits) *client {
	t.Helper()
	return connectTo(t, mcpserver.NewLimited(db, as, lim), as)
}

// big records a subject whose live claims' JSON is some 10 KB.
func big(t *testing.T, db *mql.DB) {
	t.Helper()
	var specs []mql.AssertSpec
	for i := range 50 {
		specs = append(specs, mql.AssertSpec{Subject: "BIG", Predicate: fmt.Sprintf("p%d", i), Value: mql.String(strings.Repeat("v", 100)), By: "worker-3"})
	}
	if _, err := db.AssertBatch(context.Background(), "worker-3", specs); err != nil {
		t.Fatal(err)
	}
}

// A query call with more statements than the limit runs none; one whose results would pass the
// output limit stops there with an error naming the limit; every tool's result is bounded; a
// call past the time limit is stopped. Each error says which limit and how to raise it.
func TestToolCallLimits(t *testing.T) {
	db := openStore(t, "memory:", nil)
	team(t, db)
	big(t, db)
	c := connectLimited(t, db, "worker-3", mcpserver.Limits{Statements: 5, Output: 64 << 10})

	c.fail("query", map[string]any{"statement": strings.Repeat("stats; ", 6), "run": "r-1"}, "6 statements, and at most 5 run in one call (mql serve --max-statements): none ran")
	if runs := c.query("runs"); len(rows(runs[0])) != 0 {
		t.Errorf("a refused call recorded its run: %v", runs)
	}
	if got := c.query(strings.Repeat("live BIG; ", 3)); len(got) != 3 {
		t.Errorf("three results under the limits: %d", len(got))
	}
	msg := c.fail("query", map[string]any{"statement": strings.Repeat("live BIG; ", 5)}, "the results would be over the output limit of 64 KiB (mql serve --max-output)")
	if !strings.HasPrefix(msg, "query:1:") || !strings.Contains(msg, "raise the limit") {
		t.Errorf("the output limit's error says where and how to raise it: %s", msg)
	}

	c = connectLimited(t, db, "worker-3", mcpserver.Limits{Output: 4 << 10})
	c.fail("context", map[string]any{"subjects": []string{"BIG"}}, "over the output limit of 4 KiB (mql serve --max-output)")
	c.ok("why", map[string]any{"ref": "BIG.p1"})

	c = connectLimited(t, db, "worker-3", mcpserver.Limits{Timeout: time.Nanosecond})
	c.fail("query", map[string]any{"statement": "live BIG"}, "the call ran over the time limit of 1ns (mql serve --timeout)")
	c.fail("assert", map[string]any{"subject": "K", "predicate": "p", "value": 1}, "time limit")
	if claims, _ := db.Live(context.Background(), "K"); len(claims) != 0 {
		t.Errorf("a write stopped by the time limit was applied: %v", claims)
	}
}

// A resource read is held to the output and time limits, as a tool call is: past one, the read
// fails with an error that names the limit, and nothing of the resource is sent.
func TestResourceReadLimits(t *testing.T) {
	db := openStore(t, "memory:", nil)
	team(t, db)
	ctx := context.Background()
	for i := range 30 {
		key := fmt.Sprintf("Vendor%d", i)
		for v := range 2 {
			if _, err := db.Assert(ctx, mql.AssertSpec{Subject: key, Predicate: "price_per_seat", Value: mql.Number(float64(v)), By: "worker-3"}); err != nil {
				t.Fatal(err)
			}
			if v == 0 {
				if _, err := db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:" + key, From: []string{key + ".price_per_seat"}, By: "worker-3"}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	c := connectLimited(t, db, "worker-3", mcpserver.Limits{Output: 4 << 10})
	if got := c.readResource(mcpserver.StatsURI); !strings.Contains(got.Text, `"transactions"`) {
		t.Errorf("the statistics under the limit: %s", got.Text)
	}
	for _, uri := range []string{mcpserver.LanguageURI, mcpserver.ReviewURI} {
		_, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err == nil || !strings.Contains(err.Error(), "over the output limit of 4 KiB (mql serve --max-output)") {
			t.Errorf("%s over the output limit: %v", uri, err)
		}
	}
	c = connectLimited(t, db, "worker-3", mcpserver.Limits{Timeout: time.Nanosecond})
	if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ReviewURI}); err == nil || !strings.Contains(err.Error(), "the read ran over the time limit of 1ns (mql serve --timeout)") {
		t.Errorf("the review queue past the time limit: %v", err)
	}
}
