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
	"github.com/mql-dev/mql/mcpserver"
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
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.Limits.Body))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return "", nil, &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf("the request body is over %s, the limit (mql serve --max-body); send a smaller script", mcpserver.Bytes(s.opts.Limits.Body))}, http.StatusRequestEntityTooLarge
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

// query runs a script as the request's principal: POST /v1/query. The whole script is parsed
// and held to the limits before any of it runs: a syntax error anywhere, or one statement too
// many, and nothing runs.
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
	sc, perr, status := s.parse(r, name, src, parts)
	if perr != nil {
		s.fail(w, r, stream != "", perr, status)
		return
	}
	setWhat(r, kinds(sc.script))
	if id.session != "" && !readsOnly(sc.script) {
		s.fail(w, r, stream != "", &Error{Class: "usage", ExitCode: exitUsage, Message: errReadOnly.Error()}, http.StatusForbidden)
		return
	}
	if id.principal != s.owner {
		if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
			s.principalFailed(w, r, stream != "", "", err)
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.opts.Limits.Timeout)
	defer cancel()
	sess := query.NewSession(s.db, id.principal)
	if s.opts.Embedder != nil {
		sess.EmbedWith(s.opts.Embedder)
	}
	m := &meter{limit: s.opts.Limits.Output}
	exec := func(ctx context.Context, emit func(*query.Result) error) error {
		if sc.tx {
			return sess.ExecStmts(ctx, sc.begin, sc.script.Stmts, emit)
		}
		return sess.ExecParsed(ctx, sc.script, nil, emit)
	}
	if stream != "" {
		s.queryStream(ctx, w, r, sess, m, exec, stream)
		return
	}
	resp := QueryResponse{Results: []json.RawMessage{}}
	sess.HoldWith(func(res *query.Result) error {
		b, err := resultJSON(res)
		if err != nil {
			return err
		}
		return m.hold(len(b))
	})
	err := exec(ctx, func(res *query.Result) error {
		b, err := resultJSON(res)
		if err != nil {
			return err
		}
		if err := m.send(len(b)); err != nil {
			return err
		}
		resp.Results = append(resp.Results, b)
		return nil
	})
	code := http.StatusOK
	if err != nil {
		resp.Error, code = s.apiError(err, len(resp.Results))
		setOutcome(r, resp.Error.Class)
	}
	writeJSON(w, code, resp)
}

// maxPosition bounds the line and column a client may say its script starts at, as the
// language bounds its numbers, so that no position in an error can overflow.
const maxPosition = 1<<31 - 1

// parsed is a /v1/query script parsed whole, before any of it runs.
type parsed struct {
	script *query.Script
	tx     bool           // run as one transaction (tx=1)
	begin  query.Position // where that transaction begins in the client's script
}

// parse reads a request's script where it starts in the client's script: the query parameters
// line and col (1, 1 by default), or each part's own place. With tx=1 it runs as one
// transaction begun at begin_line:begin_col (of the whole script, begin_name -1), as the
// command line sends a begin … commit block or a -1 script. It answers the error to send when
// the script does not parse, names a place out of range, or holds more statements than a
// request may run.
func (s *Server) parse(r *http.Request, name, src string, parts []ScriptPart) (parsed, *Error, int) {
	q := r.URL.Query()
	usage := func(format string, args ...any) (parsed, *Error, int) {
		return parsed{}, &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf(format, args...)}, http.StatusBadRequest
	}
	pos := map[string]int{}
	for _, k := range []string{"line", "col", "begin_line", "begin_col"} {
		pos[k] = 1
		if v := q.Get(k); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxPosition {
				return usage("%s=%.40q: give a whole number from 1 to %d, where the script starts in yours", k, v, maxPosition)
			}
			pos[k] = n
		}
	}
	sc := parsed{tx: q.Get("tx") == "1", begin: query.Position{Filename: name, Line: pos["begin_line"], Column: pos["begin_col"]}}
	if len(parts) > 0 {
		sc.begin.Filename = q.Get("name")
	}
	if q.Get("begin_name") == "-1" {
		sc.begin.Filename = "-1"
	}
	var err error
	if len(parts) == 0 {
		sc.script, err = query.ParseAt(name, src, pos["line"], pos["col"])
	} else {
		if !sc.tx {
			return usage("parts are the pieces of one transaction: send them with tx=1")
		}
		sc.script = &query.Script{}
		for i, p := range parts {
			if p.Line < 0 || p.Line > maxPosition || p.Col < 0 || p.Col > maxPosition {
				return usage("part %d starts at %d:%d: give a line and column from 1 to %d", i+1, p.Line, p.Col, maxPosition)
			}
			var part *query.Script
			if part, err = query.ParseAt(p.Name, p.Text, max(p.Line, 1), max(p.Col, 1)); err != nil {
				break
			}
			sc.script.Stmts = append(sc.script.Stmts, part.Stmts...)
		}
	}
	if err != nil {
		e := apiError(err)
		return parsed{}, e, e.status()
	}
	if n := len(sc.script.Stmts); n > s.opts.Limits.Statements {
		return parsed{}, &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf("the script has %d statements, and at most %d run in one request (mql serve --max-statements): none ran; send fewer in each request", n, s.opts.Limits.Statements)}, http.StatusRequestEntityTooLarge
	}
	return sc, nil, 0
}

// apiError is the error to answer for a script stopped by err, with the status: a limit's
// error says which limit and how to raise it.
func (s *Server) apiError(err error, sent int) (*Error, int) {
	var held heldError
	if errors.As(err, &held) {
		e := apiError(err)
		e.Class, e.ExitCode = "usage", exitUsage
		return e, http.StatusRequestEntityTooLarge
	}
	if errors.Is(err, errOutputLimit) {
		return &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf("the answer is cut off after %d results: the next would take it over %s, the output limit (mql serve --max-output). The script stopped there: the statement of that result ran (in a transaction, the whole transaction did), the statements after it did not. Ask for less (a narrower pattern, limit N, fewer statements in each request), or raise the limit", sent, mcpserver.Bytes(s.opts.Limits.Output))}, http.StatusRequestEntityTooLarge
	}
	e := apiError(err)
	if errors.Is(err, context.DeadlineExceeded) {
		e.Message += fmt.Sprintf(": the request ran over its time limit of %s (mql serve --timeout) and was stopped; the statements before this one were applied, nothing of this one", s.opts.Limits.Timeout)
	}
	return e, e.status()
}

// queryStream answers with one Frame per line as the statements run.
func (s *Server) queryStream(ctx context.Context, w http.ResponseWriter, r *http.Request, sess *query.Session, m *meter, exec func(context.Context, func(*query.Result) error) error, format string) {
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
	sess.HoldWith(func(res *query.Result) error {
		out, err := render(res)
		if err != nil {
			return err
		}
		return m.hold(len(out))
	})
	sent := 0
	err = exec(ctx, func(res *query.Result) error {
		out, err := render(res)
		if err != nil {
			return err
		}
		if err := m.send(len(out)); err != nil {
			return err
		}
		sent++
		if err := enc.Encode(Frame{Output: out, Statement: res.Statement, Write: res.Receipt != nil}); err != nil {
			return err
		}
		flush()
		return nil
	})
	if err != nil {
		e, _ := s.apiError(err, sent)
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

// checkPrincipal reports whether the store knows principal: an error errors.Is finds as
// mql.ErrUnknownPrincipal when it does not, any other when the store could not be read to tell.
func checkPrincipal(ctx context.Context, db *mql.DB, principal string) error {
	ok, err := db.HasPrincipal(ctx, principal)
	if err == nil && !ok {
		err = fmt.Errorf("%q: %w: record it first, e.g. `principal %s agent`", principal, mql.ErrUnknownPrincipal, principal)
	}
	return err
}

// principalFailed answers a request whose principal checkPrincipal did not find: 400 for a
// principal the store does not know (prefix, if any, says where it was named), 503 logged as
// storage when the store could not be read to tell, which is an outage, not a bad request. Like
// storageDown it names no detail of the failure.
func (s *Server) principalFailed(w http.ResponseWriter, r *http.Request, stream bool, prefix string, err error) {
	if !errors.Is(err, mql.ErrUnknownPrincipal) {
		w.Header().Set("Retry-After", "5")
		s.fail(w, r, stream, &Error{Class: "storage", ExitCode: exitFailed, Message: "the store cannot be read now (a storage failure), so the principal " + strconv.Quote(identityOf(r.Context()).principal) + " could not be looked up; nothing ran: try again shortly"}, http.StatusServiceUnavailable)
		return
	}
	s.fail(w, r, stream, &Error{Class: "usage", ExitCode: exitUsage, Message: prefix + err.Error()}, http.StatusBadRequest)
}

// readsOnly reports whether every statement of a script is a read.
func readsOnly(st *query.Script) bool {
	for _, stmt := range st.Stmts {
		if !query.IsRead(stmt) {
			return false
		}
	}
	return true
}
