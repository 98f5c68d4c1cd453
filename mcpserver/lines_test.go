package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzLineFilter feeds any input through the filter: every non-blank line is either passed on
// as one JSON-RPC message the SDK decodes, or answered with one JSON-RPC error; nothing else is
// written, and nothing panics.
func FuzzLineFilter(f *testing.F) {
	for _, s := range []string{
		"not json\nInfinity\n[]\n{}\n42\n",
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":"a","result":{}}` + "\n" + `{"jsonrpc":"1.0","id":7,"method":"x"}`,
		"[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}]\r\n\xff\n",
		string(bytes.Repeat([]byte(" "), 64)) + "\n" + string(bytes.Repeat([]byte(" "), 65)) + "\n",
		`{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"` + string(bytes.Repeat([]byte("x"), 100)) + `"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var out bytes.Buffer
		// Nothing answers the requests passed on: a closed stop lets the filter end.
		stop := make(chan struct{})
		close(stop)
		lf := newLineFilter(bytes.NewReader(in), newLockedWriter(&out), 64, stop)
		passed, err := io.ReadAll(lf)
		if err != nil {
			t.Fatal(err)
		}
		nPassed := 0
		for _, l := range bytes.Split(passed, []byte("\n")) {
			if len(l) == 0 {
				continue
			}
			nPassed++
			if _, err := jsonrpc.DecodeMessage(l); err != nil {
				t.Fatalf("passed on %q, which the SDK refuses: %v", l, err)
			}
		}
		nReplies := 0
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			nReplies++
			var r struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct{ Code int }
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.JSONRPC != "2.0" || (r.Error.Code != codeParseError && r.Error.Code != codeInvalidRequest) {
				t.Fatalf("reply %q", sc.Bytes())
			}
		}
		lines := 0
		for _, l := range bytes.Split(in, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 || len(l) > 64 {
				lines++
			}
		}
		if nPassed+nReplies != lines {
			t.Fatalf("%d lines, %d passed on and %d answered", lines, nPassed, nReplies)
		}
	})
}

// The filter passes the end of the input on only once every request it passed on has been
// answered: not when the filter itself answers a line with the same id, nor when the server
// sends a request of its own with that id; at once when the session is stopped.
func TestLineFilterHoldsEOF(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n" +
		`{"jsonrpc":"1.0","id":7,"method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
	start := func(stop chan struct{}) (*lockedWriter, chan error) {
		w := newLockedWriter(io.Discard)
		lf := newLineFilter(strings.NewReader(in), w, 1<<10, stop)
		ended := make(chan error, 1)
		go func() {
			_, err := io.ReadAll(lf)
			ended <- err
		}()
		return w, ended
	}
	held := func(ended chan error, when string) {
		t.Helper()
		select {
		case <-ended:
			t.Fatalf("the end of the input was passed on %s", when)
		case <-time.After(100 * time.Millisecond):
		}
	}
	released := func(ended chan error, when string) {
		t.Helper()
		select {
		case err := <-ended:
			if err != nil {
				t.Fatalf("%s: %v", when, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the end of the input was not passed on %s", when)
		}
	}

	w, ended := start(make(chan struct{}))
	held(ended, "while request 7 was unanswered, after the filter answered its own line with id 7")
	w.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"roots/list"}` + "\n"))
	held(ended, "after a request of the server's with id 7")
	w.Write([]byte(`{"jsonrpc":"2.0","id":7,"result":{}}` + "\n"))
	released(ended, "once request 7 was answered")

	stop := make(chan struct{})
	_, ended = start(stop)
	held(ended, "while request 7 was unanswered")
	close(stop)
	released(ended, "once the session was stopped")
}

// responseID recognises the responses among the messages the SDK writes, with the id the SDK
// gave the request, whatever the order of the keys.
func TestResponseID(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want any // the id's value, nil for a message that is not a response
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`, int64(7)},
		{`{"jsonrpc":"2.0","id":"a-7","error":{"code":-32601,"message":"no"}}`, "a-7"},
		{`{"jsonrpc":"2.0","result":{},"id":7}`, int64(7)},
		{`{"id":9007199254740993,"jsonrpc":"2.0","result":{}}`, int64(9007199254740992)},
		{`{"jsonrpc":"2.0","id":7,"method":"roots/list"}`, nil},
		{`{"jsonrpc":"2.0","result":{},"id":7,"method":"roots/list"}`, nil},
		{`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"mql://review"}}`, nil},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, nil},
		{`[{"jsonrpc":"2.0","id":7,"result":{}}]`, nil},
		{`{"jsonrpc":"2.0","id":7,"result":`, int64(7)},
		{`not json`, nil},
	} {
		id, ok := responseID([]byte(tc.msg + "\n"))
		if got := id.Raw(); ok != (tc.want != nil) || got != tc.want {
			t.Errorf("%s: id %v (%T), %v; want %v", tc.msg, got, got, ok, tc.want)
		}
		// The same id as the SDK's own decoding of the request gives.
		if tc.want != nil && ok {
			if m, err := jsonrpc.DecodeMessage([]byte(strings.Replace(tc.msg, `"result":`, `"method":"x","params":`, 1))); err == nil {
				if req, _ := m.(*jsonrpc.Request); req != nil && req.ID != id {
					t.Errorf("%s: responseID %v, the SDK %v", tc.msg, id.Raw(), req.ID.Raw())
				}
			}
		}
	}
}
