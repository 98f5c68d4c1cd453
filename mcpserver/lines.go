package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxMessageBytes bounds one message (one line) from the client, as the SDK's own transport
// does by default. A longer line is read to its end without being kept, answered with an
// error, and the session goes on.
const MaxMessageBytes = 16 << 20

// JSON-RPC error codes the server answers a line it cannot take with.
const (
	codeParseError     = -32700 // the line is not one JSON value, or not UTF-8
	codeInvalidRequest = -32600 // JSON, but not a JSON-RPC message; a batch; a line too long
)

// lineFilter stands between the client's stream and the SDK's transport. The SDK reads its
// input as one stream of JSON values and ends the session at the first that does not decode
// (`not json`, a bare `Infinity`) or that it refuses (`{}`, `[]`), dropping every request the
// client had pipelined behind it. lineFilter reads the stream one line at a time, hands the
// SDK only lines that hold one JSON-RPC message it accepts, and answers every other line
// itself, as JSON-RPC says: with an error response whose id is null (or the line's id, when it
// has a usable one), code -32700 when the line is not JSON, -32600 when it is JSON but not a
// message the server takes. Batches (JSON arrays) are refused with -32600: MCP dropped them in
// its 2025-06-18 revision, and the SDK ends the session on one once that revision is agreed.
type lineFilter struct {
	r       *bufio.Reader
	out     *lockedWriter
	max     int
	line    []byte
	pending []byte // the accepted line (with its newline) not yet read by the SDK
}

func newLineFilter(in io.Reader, out *lockedWriter, max int) *lineFilter {
	return &lineFilter{r: bufio.NewReaderSize(in, 64<<10), out: out, max: max}
}

// Read hands the SDK the next accepted line, answering the refused ones on the way.
func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, tooLong, err := f.readLine()
		if len(line) > 0 || tooLong {
			if werr := f.take(line, tooLong); werr != nil {
				return 0, werr
			}
		}
		if err != nil && len(f.pending) == 0 {
			return 0, err
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine reads the next line (up to a newline or the end of the input) and returns it
// without its newline. A line longer than max bytes is consumed but not kept.
func (f *lineFilter) readLine() (line []byte, tooLong bool, err error) {
	f.line = f.line[:0]
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !tooLong {
			if len(f.line)+len(chunk) > f.max+1 { // +1: the newline
				tooLong, f.line = true, f.line[:0]
			} else {
				f.line = append(f.line, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		f.line = bytes.TrimSuffix(f.line, []byte("\n"))
		if len(f.line) > f.max {
			tooLong, f.line = true, f.line[:0]
		}
		return f.line, tooLong, err
	}
}

// take passes an acceptable line on (into pending) or answers it.
func (f *lineFilter) take(line []byte, tooLong bool) error {
	msg := bytes.TrimSpace(line)
	switch {
	case tooLong:
		return f.out.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: the message is longer than %d bytes; it was discarded", f.max))
	case len(msg) == 0:
		return nil
	case !utf8.Valid(msg):
		return f.out.reply(nil, codeParseError, "Parse error: the message is not valid UTF-8")
	case !json.Valid(msg):
		return f.out.reply(nil, codeParseError, "Parse error: the line is not one JSON value (send one JSON-RPC message per line)")
	case msg[0] == '[':
		return f.out.reply(nil, codeInvalidRequest, "Invalid Request: batches are not supported; send one message per line")
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return f.out.reply(idOf(msg), codeInvalidRequest, "Invalid Request: "+err.Error())
	}
	f.pending = append(msg, '\n')
	return nil
}

// idOf returns the id of a JSON object that has a string or integer one, else nil (null).
func idOf(msg []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 {
		return nil
	}
	var s string
	var n int64
	if json.Unmarshal(m.ID, &s) == nil || json.Unmarshal(m.ID, &n) == nil {
		return m.ID
	}
	return nil
}

// lockedWriter serialises the SDK's writes (one message per Write) and the filter's replies.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// reply writes a JSON-RPC error response.
func (l *lockedWriter) reply(id json.RawMessage, code int, msg string) error {
	if id == nil {
		id = json.RawMessage("null")
	}
	type wireError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   wireError       `json:"error"`
	}{"2.0", id, wireError{code, msg}})
	if err != nil {
		return err
	}
	_, err = l.Write(append(b, '\n'))
	return err
}
