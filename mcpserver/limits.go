package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Limits bound what one tool call may cost the server, whatever it asks: how many statements a
// query call runs, how many bytes its result may hold, how long it may take. A zero field
// means its default (DefaultLimits). mql serve and `mql mcp` set them from their flags.
type Limits struct {
	// Statements bounds the statements of one query call; a call with more runs none.
	Statements int
	// Output bounds the bytes of one call's result (its JSON, which the text content repeats).
	// A query call stops at the statement whose result would take it past the bound.
	Output int64
	// Timeout bounds one call's evaluation.
	Timeout time.Duration
}

// DefaultLimits are the limits a zero field of Limits means.
func DefaultLimits() Limits {
	return Limits{Statements: 1000, Output: 16 << 20, Timeout: 30 * time.Second}
}

func (l Limits) orDefaults() Limits {
	d := DefaultLimits()
	if l.Statements <= 0 {
		l.Statements = d.Statements
	}
	if l.Output <= 0 {
		l.Output = d.Output
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	return l
}

// errLimit is what a tool call over one of its Limits fails with.
var errLimit = errors.New("over the server's limit")

// Bytes says a size as the flags take it: 16 MiB, 512 KiB, or a number of bytes.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// bound applies the limits to every tool call and resource read: its evaluation runs under the
// time limit, and a result over the output limit is replaced by an error that says so (a tool
// error for a tool call, the request's error for a resource read).
func (s *server) bound(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "resources/read" {
			return s.boundRead(ctx, next, method, req)
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithTimeout(ctx, s.lim.Timeout)
		defer cancel()
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok {
			return res, err
		}
		switch {
		case r.IsError && errors.Is(ctx.Err(), context.DeadlineExceeded):
			return toolError(fmt.Errorf("%w: the call ran over the time limit of %s (mql serve --timeout) and was stopped, nothing of the statement running applied; ask for less, or raise the limit", errLimit, s.lim.Timeout)), nil
		case !r.IsError && resultSize(r) > s.lim.Output:
			return toolError(fmt.Errorf("%w: the result is %d bytes, over the output limit of %s (mql serve --max-output); ask for less (a narrower pattern, a budget, a depth), or raise the limit", errLimit, resultSize(r), Bytes(s.lim.Output))), nil
		}
		return r, nil
	}
}

// boundRead holds a resource read (the statistics, the review queue, the language reference)
// to the time and output limits, as a tool call is.
func (s *server) boundRead(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, s.lim.Timeout)
	defer cancel()
	res, err := next(ctx, method, req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: the read ran over the time limit of %s (mql serve --timeout) and was stopped; try again, or raise the limit", errLimit, s.lim.Timeout)
		}
		return res, err
	}
	r, ok := res.(*mcp.ReadResourceResult)
	if !ok {
		return res, nil
	}
	var n int64
	for _, c := range r.Contents {
		n += int64(len(c.Text) + len(c.Blob))
	}
	if n > s.lim.Output {
		return nil, fmt.Errorf("%w: the resource is %d bytes, over the output limit of %s (mql serve --max-output); raise the limit to read it, or use the tools, which can ask for less", errLimit, n, Bytes(s.lim.Output))
	}
	return r, nil
}

// resultSize is the size of a result's JSON, which is what the output limit bounds.
func resultSize(r *mcp.CallToolResult) int64 {
	if b, ok := r.StructuredContent.(json.RawMessage); ok {
		return int64(len(b))
	}
	var n int64
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			n += int64(len(t.Text))
		}
	}
	return n
}

func toolError(err error) *mcp.CallToolResult {
	var r mcp.CallToolResult
	r.SetError(err)
	return &r
}
