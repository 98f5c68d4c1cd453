package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// A script that pipes its requests into `mql mcp` and closes stdin at once (printf … | mql
// mcp team.db) gets an answer to every request, and the process exits 0 only after writing
// them; every answered write is in the store when it has exited.
func TestMCPPipedRequestsAllAnswered(t *testing.T) {
	const n = 20
	bin := crashBuild(t)
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "team.db")
	if _, e, code := runMQL(t, bin, home, "", "-c", "principal worker-3 agent", db); code != 0 {
		t.Fatal(e)
	}
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	}
	var want []string
	for id := 2; id < 2+n; id++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"assert","arguments":{"subject":"Vendor%d","predicate":"price_per_seat","value":%d,"source":"src:pipe"}}}`, id, id, id))
		want = append(want, fmt.Sprintf("Vendor%d.price_per_seat@1", id))
	}
	sort.Strings(want)
	out, e, code := runMQL(t, bin, home, strings.Join(lines, "\n")+"\n", "mcp", "--as", "worker-3", db)
	if code != exitOK {
		t.Fatalf("mql mcp exited %d: %s", code, e)
	}
	answered := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil || r.Result == nil || r.Result.IsError {
			t.Errorf("a reply that is not a success: %s", l)
			continue
		}
		answered[string(r.ID)] = true
	}
	var missing []int
	for id := 1; id < 2+n; id++ {
		if !answered[fmt.Sprint(id)] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d requests got no answer: ids %v", len(missing), n+1, missing)
	}
	store, err := mql.Open(context.Background(), db, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cs, err := store.Live(context.Background(), "*")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Ref)
	}
	sort.Strings(got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the store holds %d of the %d writes: %v", len(got), n, got)
	}
}
