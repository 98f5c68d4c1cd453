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

// openWorkerStore opens a new store file that records the agent worker-3.
func openWorkerStore(ctx context.Context, t *testing.T) (path string, db *mql.DB) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "team.db")
	db, err := mql.Open(ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: db.Owner()}); err != nil {
		t.Fatal(err)
	}
	return path, db
}

// `mql mcp` takes the limit flags of mql serve that apply to its one client, each bounding what
// it says, and refuses a value it cannot use.
func TestMCPLimitFlags(t *testing.T) {
	ctx := context.Background()
	path, db := openWorkerStore(ctx, t)
	db.Close()

	for args, want := range map[string]string{
		"--max-statements 0": "--max-statements 0: give at least 1",
		"--max-body 0":       `invalid value "0" for flag --max-body: "0" is not a size`,
		"--max-body 3GiB":    "--max-body 3GiB: give at most 2GiB",
		"--max-output 1XB":   `"1XB" is not a size`,
		"--timeout 0s":       "--timeout 0s: give a duration above 0",
	} {
		var out, errb strings.Builder
		code := runMCP(ctx, append(strings.Fields(args), path), strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), want) {
			t.Errorf("%s: exit %d, %s", args, code, errb.String())
		}
	}

	session := func(args []string, requests ...string) string {
		t.Helper()
		lines := []string{
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		}
		for i, r := range requests {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,%s}`, i+2, r))
		}
		var out, errb strings.Builder
		if code := runMCP(ctx, append(append([]string{"--as", "worker-3"}, args...), path), strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, &errb); code != exitOK {
			t.Fatalf("mql mcp %v exited %d: %s", args, code, errb.String())
		}
		// The answers, initialize's among them, in the order written: a line too long is
		// answered by the line filter, maybe before initialize is.
		return out.String()
	}
	query := func(stmt string) string {
		return fmt.Sprintf(`"method":"tools/call","params":{"name":"query","arguments":{"statement":%q}}`, stmt)
	}
	const readLanguage = `"method":"resources/read","params":{"uri":"mql://language"}`
	for _, c := range []struct {
		args    []string
		request string
		want    string
	}{
		{nil, query("stats; stats; stats"), `"kind":"stats"`},
		{[]string{"--max-statements", "2"}, query("stats; stats; stats"), "3 statements, and at most 2 run in one call (mql serve --max-statements): none ran"},
		{nil, readLanguage, `"uri":"mql://language"`},
		{[]string{"--max-output", "1KiB"}, readLanguage, "over the output limit of 1 KiB (mql serve --max-output)"},
		{[]string{"--max-output", "1KiB"}, query("stats"), `"kind":"stats"`},
		{[]string{"--timeout", "1ns"}, query("stats"), "the call ran over the time limit of 1ns (mql serve --timeout)"},
		{[]string{"--max-body", "1KiB"}, query(strings.Repeat("stats; ", 200)), `"id":null,"error":{"code":-32600`},
		{[]string{"--max-body", "1KiB"}, query("stats"), `"kind":"stats"`},
	} {
		got := session(c.args, c.request)
		if !strings.Contains(got, c.want) {
			t.Errorf("mql mcp %v, %s: got %s, want %s", c.args, c.request[:30], got, c.want)
		}
	}
}
