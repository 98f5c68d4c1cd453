package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// QueryRequest is the JSON form of a /v1/query request body (the other is the script itself
// as text/plain).
type QueryRequest struct {
	Script string `json:"script"`
	// Parts, with tx=1, are the pieces of one transaction that come from several places of
	// the client's scripts (-1 over several -c and -f): each is parsed where it stands, so
	// that errors name its place. Script is then ignored.
	Parts []ScriptPart `json:"parts,omitempty"`
}

// ScriptPart is a piece of a script: its name (-c#2, a file), its text, and where it starts.
type ScriptPart struct {
	Name string `json:"name"`
	Text string `json:"text"`
	Line int    `json:"line"`
	Col  int    `json:"col"`
}

// QueryResponse is the answer of /v1/query in its default JSON form: one result per statement
// that ran, in the JSON of docs/OUTPUT.md, and the error that stopped the script, if any (the
// statements before it were applied).
type QueryResponse struct {
	Results []json.RawMessage `json:"results"`
	Error   *Error            `json:"error,omitempty"`
}

// Error is a statement's error as the API reports it: the CLI's error class and exit code,
// the message, and its position in the script.
type Error struct {
	Class    string `json:"class"` // syntax, evaluation, usage, timeout, interrupted
	ExitCode int    `json:"exit_code"`
	Message  string `json:"message"` // as the command line prints it: name:line:col: message
	Line     int    `json:"line,omitempty"`
	Column   int    `json:"column,omitempty"`
}

// Frame is one line of a streamed /v1/query answer (?stream=FORMAT, used by the command line
// attached to a server): a rendered result, or the error that ended the script, or the end.
type Frame struct {
	Output    string `json:"output,omitempty"`    // a result, rendered in the requested format
	Statement string `json:"statement,omitempty"` // the canonical statement it answers
	Write     bool   `json:"write,omitempty"`     // the result is a write's receipt
	Error     *Error `json:"error,omitempty"`
	Done      bool   `json:"done,omitempty"`
}

// The exit codes of the command line (docs/CLI.md), which API errors carry.
const (
	exitFailed      = 1
	exitUsage       = 2
	exitSyntax      = 3
	exitInterrupted = 130
)

// apiError classifies err as the command line would.
func apiError(err error) *Error {
	e := &Error{Class: "evaluation", ExitCode: exitFailed, Message: err.Error()}
	var qe *query.Error
	var ql query.ErrorList
	var ee *query.EvalError
	switch {
	case errors.As(err, &ql) && len(ql) > 0:
		e.Class, e.ExitCode, e.Line, e.Column = "syntax", exitSyntax, ql[0].Pos.Line, ql[0].Pos.Column
	case errors.As(err, &qe):
		e.Class, e.ExitCode, e.Line, e.Column = "syntax", exitSyntax, qe.Pos.Line, qe.Pos.Column
	case errors.As(err, &ee):
		e.Line, e.Column = ee.Pos.Line, ee.Pos.Column
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		e.Class, e.ExitCode = "timeout", exitInterrupted
	case errors.Is(err, context.Canceled):
		e.Class, e.ExitCode = "interrupted", exitInterrupted
	}
	return e
}

func (e *Error) status() int {
	switch e.Class {
	case "syntax":
		return http.StatusBadRequest
	case "usage":
		return http.StatusBadRequest
	case "timeout":
		return http.StatusGatewayTimeout
	case "interrupted":
		return http.StatusServiceUnavailable
	}
	return http.StatusUnprocessableEntity
}

// readScript reads a /v1/query body: text/plain (or no type) is the script, application/json
// a QueryRequest.
func (s *Server) readScript(w http.ResponseWriter, r *http.Request) (string, []ScriptPart, *Error, int) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", nil, &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf("the request body is over %d bytes; send a smaller script", s.opts.MaxBody)}, http.StatusRequestEntityTooLarge
		}
		return "", nil, &Error{Class: "usage", ExitCode: exitUsage, Message: "reading the request body: " + err.Error()}, http.StatusBadRequest
	}
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "", "text/plain", "application/x-mql", "application/x-www-form-urlencoded":
		// (curl -d sends the script as it is, labelled as a form.)
		return string(body), nil, nil, 0
	case "application/json":
		var req QueryRequest
		dec := json.NewDecoder(strings.NewReader(string(body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return "", nil, &Error{Class: "usage", ExitCode: exitUsage, Message: `the body is not {"script": "…"}: ` + err.Error()}, http.StatusBadRequest
		}
		if len(req.Parts) > 0 {
			texts := make([]string, len(req.Parts))
			for i, p := range req.Parts {
				texts[i] = p.Text
			}
			return strings.Join(texts, "\n"), req.Parts, nil, 0
		}
		return req.Script, nil, nil, 0
	}
	return "", nil, &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf("content type %q: send text/plain (the script) or application/json ({\"script\": \"…\"})", ct)}, http.StatusUnsupportedMediaType
}

// query runs a script as the request's principal: POST /v1/query.
func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	src, parts, perr, status := s.readScript(w, r)
	stream := r.URL.Query().Get("stream")
	if perr != nil {
		s.fail(w, r, stream != "", perr, status)
		return
	}
	name := r.URL.Query().Get("name")
	if name == "" || len(name) > 256 || strings.ContainsAny(name, "\x00\r\n") {
		name = "<http>"
	}
	if id.session != "" && !readsOnly(name, src) {
		s.fail(w, r, stream != "", &Error{Class: "usage", ExitCode: exitUsage, Message: errReadOnly.Error()}, http.StatusForbidden)
		return
	}
	if st, err := query.Parse(name, src); err == nil && len(st.Stmts) > s.opts.MaxStatements {
		s.fail(w, r, stream != "", &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf("the script has %d statements; at most %d run in one request", len(st.Stmts), s.opts.MaxStatements)}, http.StatusRequestEntityTooLarge)
		return
	} else if st != nil {
		setWhat(r, kinds(st))
	}
	if id.principal != s.owner {
		if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
			s.fail(w, r, stream != "", &Error{Class: "usage", ExitCode: exitUsage, Message: err.Error()}, http.StatusBadRequest)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Timeout)
	defer cancel()
	sess := query.NewSession(s.db, id.principal)
	exec := execFor(r, sess, name, src)
	if len(parts) > 0 {
		if exec = execParts(r, sess, parts); exec == nil {
			s.fail(w, r, stream != "", &Error{Class: "usage", ExitCode: exitUsage, Message: "parts are the pieces of one transaction: send them with tx=1"}, http.StatusBadRequest)
			return
		}
	}
	if stream != "" {
		s.queryStream(ctx, w, r, exec, stream)
		return
	}
	resp := QueryResponse{Results: []json.RawMessage{}}
	err := exec(ctx, func(res *query.Result) error {
		b, err := resultJSON(res)
		if err != nil {
			return err
		}
		resp.Results = append(resp.Results, b)
		return nil
	})
	code := http.StatusOK
	if err != nil {
		resp.Error = apiError(err)
		code = resp.Error.status()
		setOutcome(r, resp.Error.Class)
	}
	writeJSON(w, code, resp)
}

// execFor runs a request's script. The query parameters line and col say where it starts in
// the client's script (1, 1 by default), so that errors carry the client's positions; tx=1
// runs it as one transaction, begun at begin_line:begin_col of the client's script (or the
// whole of it, begin_name -1), as the command line sends a begin … commit block or a -1 script.
func execFor(r *http.Request, sess *query.Session, name, src string) func(context.Context, func(*query.Result) error) error {
	q := r.URL.Query()
	num := func(k string) int {
		n, err := strconv.Atoi(q.Get(k))
		if err != nil || n < 1 {
			return 1
		}
		return n
	}
	line, col := num("line"), num("col")
	if q.Get("tx") == "1" {
		begin := query.Position{Filename: name, Line: num("begin_line"), Column: num("begin_col")}
		if q.Get("begin_name") == "-1" {
			begin.Filename = "-1"
		}
		return func(ctx context.Context, emit func(*query.Result) error) error {
			return sess.ExecTx(ctx, name, src, line, col, begin, emit)
		}
	}
	return func(ctx context.Context, emit func(*query.Result) error) error {
		return sess.ExecAt(ctx, name, src, line, col, emit)
	}
}

// execParts runs the parts of one transaction (tx=1), each parsed where it stands in the
// client's scripts; nil without tx=1.
func execParts(r *http.Request, sess *query.Session, parts []ScriptPart) func(context.Context, func(*query.Result) error) error {
	q := r.URL.Query()
	if q.Get("tx") != "1" {
		return nil
	}
	num := func(k string) int {
		n, err := strconv.Atoi(q.Get(k))
		if err != nil || n < 1 {
			return 1
		}
		return n
	}
	begin := query.Position{Filename: q.Get("name"), Line: num("begin_line"), Column: num("begin_col")}
	if q.Get("begin_name") == "-1" {
		begin.Filename = "-1"
	}
	return func(ctx context.Context, emit func(*query.Result) error) error {
		var stmts []query.Stmt
		for _, p := range parts {
			script, err := query.ParseAt(p.Name, p.Text, p.Line, p.Col)
			if err != nil {
				return err
			}
			stmts = append(stmts, script.Stmts...)
		}
		return sess.ExecStmts(ctx, begin, stmts, emit)
	}
}

// queryStream answers with one Frame per line as the statements run.
func (s *Server) queryStream(ctx context.Context, w http.ResponseWriter, r *http.Request, exec func(context.Context, func(*query.Result) error) error, format string) {
	render, err := renderer(format, r.URL.Query().Get("terminal") == "1", r.URL.Query().Get("expanded") == "1")
	if err != nil {
		s.fail(w, r, true, &Error{Class: "usage", ExitCode: exitUsage, Message: err.Error()}, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	enc := json.NewEncoder(w)
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	err = exec(ctx, func(res *query.Result) error {
		out, err := render(res)
		if err != nil {
			return err
		}
		if err := enc.Encode(Frame{Output: out, Statement: res.Statement, Write: res.Receipt != nil}); err != nil {
			return err
		}
		flush()
		return nil
	})
	if err != nil {
		e := apiError(err)
		setOutcome(r, e.Class)
		enc.Encode(Frame{Error: e})
		return
	}
	enc.Encode(Frame{Done: true})
}

// fail answers a request that did not run.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, stream bool, e *Error, status int) {
	setOutcome(r, e.Class)
	if stream {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(Frame{Error: e})
		return
	}
	writeJSON(w, status, QueryResponse{Results: []json.RawMessage{}, Error: e})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

// kinds lists the kinds of a script's statements for the log: "assert,assert,live".
func kinds(s *query.Script) string {
	var b strings.Builder
	for i, st := range s.Stmts {
		if i == 8 {
			fmt.Fprintf(&b, ",… (%d)", len(s.Stmts))
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(query.KindOf(st))
	}
	return b.String()
}

// checkPrincipal reports whether the store knows principal.
func checkPrincipal(ctx context.Context, db *mql.DB, principal string) error {
	ok, err := db.HasPrincipal(ctx, principal)
	if err == nil && !ok {
		err = fmt.Errorf("%q: %w: record it first, e.g. `principal %s agent`", principal, mql.ErrUnknownPrincipal, principal)
	}
	return err
}

// readsOnly reports whether every statement of a script is a read. Of a script with a syntax
// error, the statements before the error run, so every statement that parsed must be a read.
func readsOnly(name, src string) bool {
	st, _ := query.Parse(name, src)
	if st == nil {
		return true
	}
	for _, stmt := range st.Stmts {
		if !query.IsRead(stmt) {
			return false
		}
	}
	return true
}
