package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// ErrNoServer is returned by Attach when no server answers on any of a store's socket paths.
var ErrNoServer = errors.New("no mql server holds the store")

// ErrConnectionLost is returned by Exec when the connection to the server fails after the
// script was sent and before the server said how it ended: the statement it was running may
// or may not have been recorded.
var ErrConnectionLost = errors.New("the connection to mql serve was lost")

// lost is Exec's error for a connection that failed after req was sent, once the server had
// answered ran of its statements (a transaction's results come only once it is committed).
func (c *Client) lost(req ExecRequest, ran int, err error) error {
	switch {
	case req.Tx && ran > 0:
		return fmt.Errorf("%w (%s) after the transaction was committed, with %d of its results received; read the store to see the rest: %v", ErrConnectionLost, c.Socket, ran, err)
	case req.Tx:
		return fmt.Errorf("%w (%s) before it answered: the transaction may or may not have been recorded; once the server is back, read the store to see whether it was: %v", ErrConnectionLost, c.Socket, err)
	case ran > 0:
		return fmt.Errorf("%w (%s) after it answered %d statement(s): the statement it was running then may or may not have been recorded; once the server is back, read the store to see whether it was: %v", ErrConnectionLost, c.Socket, ran, err)
	}
	return fmt.Errorf("%w (%s) before it answered: the statement it was running may or may not have been recorded; once the server is back, read the store to see whether it was: %v", ErrConnectionLost, c.Socket, err)
}

// unsent is Exec's error for a request that never reached the server.
func (c *Client) unsent(err error) error {
	return fmt.Errorf("mql serve does not answer on %s, so nothing was sent and nothing was recorded; is the server still running? %v", c.Socket, err)
}

// Client talks to a server over its local socket, as the store's owner: what the command line
// uses when `mql serve` holds the store it was asked to open.
type Client struct {
	hc     *http.Client
	Socket string // the socket it is connected to
	As     string // the principal requests act as ("" for the owner)
}

// Attach connects to the server holding the bbolt store at dbPath, trying each of its
// SocketPaths. It fails with ErrNoServer when none answers.
func Attach(ctx context.Context, dbPath string) (*Client, error) {
	for _, p := range SocketPaths(dbPath) {
		c := newClient(p)
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := c.ConnInfo(ctx)
		cancel()
		if err == nil {
			return c, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", dbPath, ErrNoServer)
}

func newClient(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableCompression: true,
	}
	return &Client{hc: &http.Client{Transport: tr}, Socket: socket}
}

// Close releases the client's connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

func (c *Client) request(ctx context.Context, method, path string, body io.Reader) (*http.Response, error) {
	return c.requestAs(ctx, method, path, body, "text/plain; charset=utf-8")
}

// requestJSON posts a JSON body.
func (c *Client) requestJSON(ctx context.Context, path string, body []byte) (*http.Response, error) {
	return c.requestAs(ctx, http.MethodPost, path, bytes.NewReader(body), "application/json")
}

func (c *Client) requestAs(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, "http://mql"+path, body)
	if err != nil {
		return nil, err
	}
	if c.As != "" {
		req.Header.Set("Mql-As", c.As)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	return c.hc.Do(req)
}

// ConnInfo asks the server which store it serves and as whom this client is served.
func (c *Client) ConnInfo(ctx context.Context) (ConnInfo, error) {
	return call[ConnInfo](ctx, c, http.MethodGet, "/v1/conninfo", nil)
}

// call sends a request and decodes the JSON of its answer, or returns the server's error.
func call[T any](ctx context.Context, c *Client, method, path string, body io.Reader) (T, error) {
	var out T
	resp, err := c.request(ctx, method, path, body)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, responseError(resp)
	}
	return out, json.NewDecoder(resp.Body).Decode(&out)
}

// Exec runs a script named name (in error positions: -c, a file name, <stdin>) on the server,
// calling emit with each result rendered in format as it arrives. A statement's error comes
// back as an *Error (its class, exit code, message and position); other errors are the
// connection's.
func (c *Client) Exec(ctx context.Context, name, src string, st output.Style, emit func(Frame) error) error {
	return c.ExecAt(ctx, ExecRequest{Name: name, Src: src}, st, emit)
}

// ExecRequest is a script to run on the server: its name, its text and where the text starts
// in it; with Tx, as one transaction begun at Begin (see query.Session.ExecTx).
type ExecRequest struct {
	Name      string
	Src       string
	Line, Col int
	Tx        bool
	Parts     []ScriptPart // with Tx: the transaction's pieces, from several places (Src unused)
	Begin     struct {
		Name      string // "-1" for a whole script run with -1
		Line, Col int
	}
}

// ExecAt is Exec for a part of a script, or a transaction (see ExecRequest).
func (c *Client) ExecAt(ctx context.Context, req ExecRequest, st output.Style, emit func(Frame) error) error {
	name, src := req.Name, req.Src
	q := url.Values{"stream": {string(st.Format)}, "name": {name}}
	if st.Terminal {
		q.Set("terminal", "1")
	}
	if st.Expanded {
		q.Set("expanded", "1")
	}
	if req.Line > 1 || req.Col > 1 {
		q.Set("line", strconv.Itoa(req.Line))
		q.Set("col", strconv.Itoa(req.Col))
	}
	if req.Tx {
		q.Set("tx", "1")
		q.Set("begin_line", strconv.Itoa(req.Begin.Line))
		q.Set("begin_col", strconv.Itoa(req.Begin.Col))
		if req.Begin.Name == "-1" {
			q.Set("begin_name", "-1")
		}
	}
	var resp *http.Response
	var err error
	if len(req.Parts) > 0 {
		body, jerr := json.Marshal(QueryRequest{Parts: req.Parts})
		if jerr != nil {
			return jerr
		}
		resp, err = c.requestJSON(ctx, "/v1/query?"+q.Encode(), body)
	} else {
		resp, err = c.request(ctx, http.MethodPost, "/v1/query?"+q.Encode(), strings.NewReader(src))
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if opErr := (*net.OpError)(nil); errors.As(err, &opErr) && opErr.Op == "dial" {
			return c.unsent(err)
		}
		return c.lost(req, 0, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	ran := 0
	for sc.Scan() {
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return fmt.Errorf("the server sent a malformed answer: %v", err)
		}
		switch {
		case f.Error != nil:
			return f.Error
		case f.Done:
			return nil
		}
		ran++
		if err := emit(f); err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if !req.Tx && len(req.Parts) == 0 {
		// Every statement was answered, and so done: only the end of the answer was lost.
		if script, perr := query.Parse(name, src); perr == nil && len(script.Stmts) > 0 && ran >= len(script.Stmts) {
			return nil
		}
	}
	err = sc.Err()
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return c.lost(req, ran, err)
}

// Export writes the store as N-Quads, as the client's principal may see it.
func (c *Client) Export(ctx context.Context, w io.Writer) error {
	resp, err := c.request(ctx, http.MethodGet, "/v1/export", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return responseError(resp)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		// The server cuts an export off when it fails after its first byte.
		return fmt.Errorf("the export was cut off (%w): the server could not read the whole store; what was written is not a whole export", err)
	}
	return nil
}

// Check runs the server's integrity check of the store it holds.
func (c *Client) Check(ctx context.Context) (mql.CheckReport, error) {
	return call[mql.CheckReport](ctx, c, http.MethodGet, "/v1/check", nil)
}

// Names lists completion candidates as the client's principal sees the store, with which of
// them are principals and artifacts.
func (c *Client) Names(ctx context.Context) (Names, error) {
	return call[Names](ctx, c, http.MethodGet, "/v1/names?kinds=1", nil)
}

// Error implements error: the message the command line prints (name:line:col: message).
func (e *Error) Error() string { return e.Message }

// SyntaxError reports whether the statement did not parse.
func (e *Error) SyntaxError() bool { return e.Class == "syntax" }

// Position is where in the script the error is (0, 0 when it has no position).
func (e *Error) Position() (line, column int) { return e.Line, e.Column }

// responseError turns a failed response into an error: its *Error if the server sent one.
func responseError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var qr QueryResponse
	if json.Unmarshal(b, &qr) == nil && qr.Error != nil {
		return qr.Error
	}
	return fmt.Errorf("the server answered %s: %s", resp.Status, strings.TrimSpace(string(b)))
}

// CreateToken asks the server to issue a token for principal (the owner only).
func (c *Client) CreateToken(ctx context.Context, principal string, expires time.Time) (TokenResponse, error) {
	body, _ := json.Marshal(TokenRequest{Principal: principal, Expires: expires})
	return call[TokenResponse](ctx, c, http.MethodPost, "/v1/tokens", bytes.NewReader(body))
}

// Tokens lists the tokens the store records (the owner only).
func (c *Client) Tokens(ctx context.Context) ([]mql.Token, error) {
	return call[[]mql.Token](ctx, c, http.MethodGet, "/v1/tokens", nil)
}

// RevokeToken asks the server to revoke a token (the owner only).
func (c *Client) RevokeToken(ctx context.Context, id string) (mql.Receipt, error) {
	return call[mql.Receipt](ctx, c, http.MethodPost, "/v1/tokens/"+url.PathEscape(id)+"/revoke", nil)
}

// Watch follows the server's change feed (GET /v1/watch) from now on, calling emit with each
// event that matches pattern, until ctx ends (then it returns nil) or the stream does.
func (c *Client) Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error {
	resp, err := c.request(ctx, http.MethodGet, "/v1/watch?"+url.Values{"pattern": {pattern}}.Encode(), nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return responseError(resp)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && event != "ready" && event != "error":
			var e mql.Event
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil {
				return fmt.Errorf("the server sent a malformed event: %v", err)
			}
			if err := emit(e); err != nil {
				return err
			}
		case strings.HasPrefix(line, "data: ") && event == "error":
			return fmt.Errorf("the change feed ended: %s", strings.TrimPrefix(line, "data: "))
		}
	}
	if ctx.Err() != nil {
		return nil
	}
	return sc.Err()
}
