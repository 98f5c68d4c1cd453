package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/mql-dev/mql/mcpserver"
)

// Limits bound what one request may cost the server, whoever sends it. They are one policy,
// applied alike on every surface: POST /v1/query over HTTP and on the local socket, MCP tool
// calls at /mcp (as mcpserver.Limits), and the web page's sign-ins. A zero field means its
// default (DefaultLimits); mql serve sets them from its flags.
type Limits struct {
	// Statements bounds the statements of one /v1/query script and of one MCP query call. A
	// script with more runs none: 413.
	Statements int
	// Body bounds the bytes of a request body: a /v1/query script, an MCP message. Past it: 413.
	Body int64
	// Output bounds the bytes of one answer: the JSON of a /v1/query's results (streamed: the
	// rendered text of its frames), an MCP tool call's result. The answer ends, before the
	// result that would take it past the bound, with an error that names the limit: 413.
	Output int64
	// Timeout bounds the evaluation of one /v1/query or MCP tool call: 504.
	Timeout time.Duration
	// Sessions bounds the web page's sessions held for one principal: its sign-in past the bound
	// ends its oldest session, never another principal's.
	Sessions int
}

// DefaultLimits are what a zero field of Limits means, and mql serve's defaults.
func DefaultLimits() Limits {
	m := mcpserver.DefaultLimits()
	return Limits{Statements: m.Statements, Body: 1 << 20, Output: m.Output, Timeout: m.Timeout, Sessions: 16}
}

func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.Statements <= 0 {
		l.Statements = d.Statements
	}
	if l.Body <= 0 {
		l.Body = d.Body
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.Sessions <= 0 {
		l.Sessions = d.Sessions
	}
	return l
}

// mcp is the part of the policy that bounds an MCP tool call.
func (l Limits) mcp() mcpserver.Limits {
	return mcpserver.Limits{Statements: l.Statements, Output: l.Output, Timeout: l.Timeout}
}

// errOutputLimit stops a script whose answer would pass Limits.Output.
var errOutputLimit = errors.New("over the output limit")

// meter counts an answer's bytes against Limits.Output: those sent, and those of the results a
// transaction holds until it commits.
type meter struct {
	limit      int64
	sent, held int64
}

// send counts a result about to be sent.
func (m *meter) send(n int) error {
	m.held = 0 // what a transaction held is being sent
	if m.sent += int64(n); m.sent > m.limit {
		return errOutputLimit
	}
	return nil
}

// hold counts a result a transaction holds until it commits.
func (m *meter) hold(n int) error {
	if m.held += int64(n); m.sent+m.held > m.limit {
		return heldError{m.limit}
	}
	return nil
}

// heldError stops a transaction whose results would pass Limits.Output: it is rolled back.
type heldError struct{ limit int64 }

func (e heldError) Error() string {
	return fmt.Sprintf("the transaction's results would be over %s, the output limit (mql serve --max-output): ask for less (a narrower pattern, limit N, fewer statements in the transaction), or raise the limit", mcpserver.Bytes(e.limit))
}

func (heldError) Unwrap() error { return errOutputLimit }
