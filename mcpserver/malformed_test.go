package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql/mcpserver"
)

// wireReply is a JSON-RPC response as it comes over the wire.
type wireReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

const (
	rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	rawInitDone   = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	rawToolsList  = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	rawToolCall   = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"query","arguments":{"statement":"stats"}}}`
)

// exchange writes lines to a server all at once, as a client that pipelines, and reads replies
// until every id in want has its answer; it returns the replies without an id (in order) and
// those with one (by id).
func exchange(t *testing.T, in io.WriteCloser, out io.Reader, lines []string, want []string) (anon []wireReply, byID map[string]wireReply) {
	t.Helper()
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(in, l+"\n"); err != nil {
				return
			}
		}
	}()
	byID = map[string]wireReply{}
	replies := make(chan wireReply)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var r wireReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Errorf("the server wrote a line that is not JSON: %q", sc.Text())
				continue
			}
			replies <- r
		}
	}()
	timeout := time.After(60 * time.Second)
	for {
		missing := 0
		for _, id := range want {
			if _, ok := byID[id]; !ok {
				missing++
			}
		}
		if missing == 0 {
			return anon, byID
		}
		select {
		case r, ok := <-replies:
			if !ok {
				t.Fatalf("the server stopped answering; answered %v, and %d replies without id", keys(byID), len(anon))
			}
			if string(r.ID) == "null" || r.ID == nil {
				anon = append(anon, r)
			} else {
				byID[string(r.ID)] = r
			}
		case <-timeout:
			t.Fatalf("no answer to every request in 60 s; answered %v", keys(byID))
		}
	}
}

func keys(m map[string]wireReply) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A line that is not a JSON-RPC message gets a JSON-RPC error and the session goes on: every
// request pipelined behind it is answered.
func TestMalformedLines(t *testing.T) {
	db := openStore(t, "memory:", nil)
	team(t, db)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- mcpserver.Serve(context.Background(), db, "worker-3", inR, outW) }()

	huge := `{"jsonrpc":"2.0","id":99,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcpserver.MaxMessageBytes) + `"}}`
	lines := []string{
		"not json",
		"Infinity",
		"[]",
		"{}",
		"42",
		`{"jsonrpc":"1.0","id":7,"method":"tools/list"}`,
		"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":{\"x\":\"\xff\"}}",
		huge,
		`[{"jsonrpc":"2.0","id":9,"method":"ping"}]`,
		rawInitialize,
		rawInitDone,
		"{not json either",
		rawToolsList,
		rawToolCall,
		`{"jsonrpc":"2.0","id":4,"method":"no/such/method"}`,
		`{"jsonrpc":"2.0","id":77,"result":{}}`, // a response to nothing the server asked
		"",
		"   ",
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"context","arguments":{"subjects":["Klarveld"]}}}`,
		`{"jsonrpc":"2.0","id":"six","method":"ping"}`,
	}
	anon, byID := exchange(t, inW, outR, lines, []string{"7", "1", "2", "3", "4", "5", `"six"`})

	wantAnon := []int{-32700, -32700, -32600, -32600, -32600, -32700, -32600, -32600, -32700}
	var got []int
	for _, r := range anon {
		if r.Error == nil {
			t.Fatalf("a reply without id that is not an error: %+v", r)
		}
		got = append(got, r.Error.Code)
	}
	if fmt.Sprint(got) != fmt.Sprint(wantAnon) {
		t.Fatalf("errors with id null: codes %v, want %v (one per malformed line, in order)", got, wantAnon)
	}
	if !strings.Contains(anon[6].Error.Message, "longer than") {
		t.Errorf("the oversized line: %q", anon[6].Error.Message)
	}
	if r := byID["7"]; r.Error == nil || r.Error.Code != -32600 {
		t.Errorf("a message of another JSON-RPC version: %+v, want -32600 with its id", r)
	}
	for _, id := range []string{"1", "2", "3", "5", `"six"`} {
		if r := byID[id]; r.Error != nil || len(r.Result) == 0 {
			t.Errorf("request %s after the malformed lines: %+v", id, r)
		}
	}
	if !strings.Contains(string(byID["2"].Result), `"assert"`) || !strings.Contains(string(byID["3"].Result), "claims") {
		t.Errorf("tools/list and the tool call: %s %s", byID["2"].Result, byID["3"].Result)
	}
	if r := byID["4"]; r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("an unknown method: %+v, want -32601", r)
	}
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return when its input closed")
	}
}

// The same through the server's real process over its stdin and stdout.
func TestMalformedLinesProcess(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "team.db")
	db := openStore(t, dsn, nil)
	team(t, db)
	db.Close()
	cmd := exec.Command(serverBinary(t), "--as", "worker-3", dsn)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	anon, byID := exchange(t, in, out, []string{"not json", "Infinity", rawInitialize, rawInitDone, rawToolsList, rawToolCall}, []string{"1", "2", "3"})
	if len(anon) != 2 || anon[0].Error.Code != -32700 || anon[1].Error.Code != -32700 {
		t.Fatalf("replies to `not json` and `Infinity`: %+v", anon)
	}
	for _, id := range []string{"1", "2", "3"} {
		if r := byID[id]; r.Error != nil || len(r.Result) == 0 {
			t.Errorf("request %s: %+v", id, r)
		}
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the server process: %v\n%s", err, stderr.String())
	}
}
