package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"

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
		lf := newLineFilter(bytes.NewReader(in), &lockedWriter{w: &out}, 64)
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
