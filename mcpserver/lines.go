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
//
// The filter also holds the end of the input back from the SDK until every request it passed
// on has been answered. The SDK takes the end of its input for the end of the session: it
// cancels the requests still being handled and refuses to write their answers, so a client
// that writes its requests and closes its end at once (`printf … | mql mcp`) would lose the
// answers to the last ones, and a write among them could be applied without an answer
// (modelcontextprotocol/go-sdk#1061). A client that closes its end has no more to send; it
// has not stopped reading.
type lineFilter struct {
	r       *bufio.Reader
	out     *lockedWriter
	max     int
	stop    <-chan struct{} // closed when the session is over, answered or not
	line    []byte
	pending []byte // the accepted line (with its newline) not yet read by the SDK
}

// newLineFilter reads in for the SDK. stop releases a held end of input when the session
// ends for another reason (the context is done, the output is broken).
func newLineFilter(in io.Reader, out *lockedWriter, max int, stop <-chan struct{}) *lineFilter {
	return &lineFilter{r: bufio.NewReaderSize(in, 64<<10), out: out, max: max, stop: stop}
}

// Read hands the SDK the next accepted line, answering the refused ones on the way. At the
// end of the input it returns the end only once every request passed on has its answer.
func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		line, tooLong, err := f.readLine()
		if len(line) > 0 || tooLong {
			if werr := f.take(line, tooLong); werr != nil {
				return 0, werr
			}
		}
		if err != nil && len(f.pending) == 0 {
			select {
			case <-f.out.calls.idle():
			case <-f.stop:
			}
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
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		return f.out.reply(idOf(msg), codeInvalidRequest, "Invalid Request: "+err.Error())
	}
	// A subscriptions/listen call is answered only when its stream ends, which the client's
	// leaving is: waiting for its answer would never end.
	if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && req.Method != "subscriptions/listen" {
		f.out.calls.add(req.ID)
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

// inflight is the set of requests passed on to the SDK and not yet answered. It is a set, not
// a count: the SDK answers a request reusing the id of one in flight with nothing, so such a
// request adds nothing to wait for.
type inflight struct {
	mu    sync.Mutex
	ids   map[jsonrpc.ID]struct{}
	empty chan struct{} // closed while ids is empty
}

func newInflight() *inflight {
	c := make(chan struct{})
	close(c)
	return &inflight{ids: map[jsonrpc.ID]struct{}{}, empty: c}
}

func (s *inflight) add(id jsonrpc.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ids) == 0 {
		s.empty = make(chan struct{})
	}
	s.ids[id] = struct{}{}
}

func (s *inflight) answered(id jsonrpc.ID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; !ok {
		return
	}
	delete(s.ids, id)
	if len(s.ids) == 0 {
		close(s.empty)
	}
}

// idle returns a channel that is closed once no request is waiting for its answer.
func (s *inflight) idle() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.empty
}

// lockedWriter serialises the SDK's writes (one message per Write) and the filter's replies,
// and strikes each request the SDK answers off calls.
type lockedWriter struct {
	mu    sync.Mutex
	w     io.Writer
	calls *inflight
}

func newLockedWriter(w io.Writer) *lockedWriter {
	return &lockedWriter{w: w, calls: newInflight()}
}

// Write writes one message of the SDK's. Once a response is written (or failed to be: then
// the session is ending anyway) its request is no longer waited for.
func (l *lockedWriter) Write(p []byte) (int, error) {
	n, err := l.write(p)
	if id, ok := responseID(p); ok {
		l.calls.answered(id)
	}
	return n, err
}

// responseID returns the id of msg if msg is a JSON-RPC response (an object with an id and no
// method). It reads keys only until it can tell: the SDK writes "jsonrpc" and "id" before
// "result" or "error", so a large result is not scanned.
func responseID(msg []byte) (jsonrpc.ID, bool) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}, false
	}
	var raw any
	seen := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return jsonrpc.ID{}, false
		}
		switch k {
		case "method":
			return jsonrpc.ID{}, false
		case "id":
			if dec.Decode(&raw) != nil {
				return jsonrpc.ID{}, false
			}
			seen = true
			continue
		case "result", "error":
			if seen {
				// As the SDK decodes ids: a number is a float64 made an integer.
				id, err := jsonrpc.MakeID(raw)
				return id, err == nil && id.IsValid()
			}
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return jsonrpc.ID{}, false
		}
	}
	id, err := jsonrpc.MakeID(raw)
	return id, err == nil && id.IsValid()
}

func (l *lockedWriter) write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// reply writes a JSON-RPC error response to a line the SDK never saw: it answers no request
// in calls, even one with the same id.
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
	_, err = l.write(append(b, '\n'))
	return err
}
