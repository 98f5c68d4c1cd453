package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/repl"
	"github.com/mql-dev/mql/server"
)

// remoteSession runs statements through the server that holds the store (`mql serve`), over
// its local socket: the same statements, output and exit codes as on a store mql opened
// itself, rendered by the server.
type remoteSession struct{ c *server.Client }

// attachedSession checks that the server serves the client's principal and returns the session
// and what the REPL's banner says it is connected to.
func attachedSession(ctx context.Context, c *server.Client) (repl.Session, string, error) {
	ci, err := c.ConnInfo(ctx)
	if err != nil {
		return nil, "", err
	}
	return remoteSession{c}, fmt.Sprintf("attached to mql serve through %s (%s, %s, as %s)", c.Socket, ci.Store, ci.Backend, ci.Principal), nil
}

func (r remoteSession) emit(emit func(repl.Rendered) error) func(server.Frame) error {
	return func(f server.Frame) error {
		return emit(repl.Rendered{Statement: f.Statement, Text: f.Output, Write: f.Write})
	}
}

func (r remoteSession) Exec(ctx context.Context, src repl.Source, st output.Style, emit func(repl.Rendered) error) error {
	return r.c.ExecAt(ctx, server.ExecRequest{Name: src.Name, Src: src.Text, Line: src.Line, Col: src.Col}, st, r.emit(emit))
}

// ExecTx sends the statements of a transaction as one request, which the server runs as one
// transaction: the sources are joined into one text, padded so that each keeps its position.
func (r remoteSession) ExecTx(ctx context.Context, begin repl.Source, srcs []repl.Source, st output.Style, emit func(repl.Rendered) error) error {
	req := server.ExecRequest{Name: srcs[0].Name, Line: srcs[0].Line, Col: srcs[0].Col, Tx: true}
	req.Begin.Name, req.Begin.Line, req.Begin.Col = begin.Name, begin.Line, begin.Col
	for _, s := range srcs[1:] {
		if s.Name != srcs[0].Name {
			// From several places (-1 over several -c and -f): each part keeps its name.
			for _, s := range srcs {
				req.Parts = append(req.Parts, server.ScriptPart{Name: s.Name, Text: s.Text, Line: s.Line, Col: s.Col})
			}
			return r.c.ExecAt(ctx, req, st, r.emit(emit))
		}
	}
	req.Src = joinSources(srcs)
	return r.c.ExecAt(ctx, req, st, r.emit(emit))
}

// joinSources joins the sources of one script, in order, into one text that starts where the
// first does, each at its own line and column.
func joinSources(srcs []repl.Source) string {
	var b strings.Builder
	line, col := srcs[0].Line, srcs[0].Col
	for _, s := range srcs {
		if s.Name != srcs[0].Name || s.Line < line || s.Line == line && s.Col < col {
			// Another file (\i) or an earlier place: on a line of its own.
			b.WriteString("\n")
			line, col = line+1, 1
		}
		for ; line < s.Line; line++ {
			b.WriteByte('\n')
			col = 1
		}
		for ; col < s.Col; col++ {
			b.WriteByte(' ')
		}
		b.WriteString(s.Text)
		for _, c := range s.Text {
			if c == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
		}
	}
	return b.String()
}

func (r remoteSession) Names(ctx context.Context) (repl.Names, error) {
	n, err := r.c.Names(ctx)
	if err != nil {
		return repl.Names{}, err
	}
	return repl.NamesOf(n.Names, n.Principals, n.Artifacts), nil
}

func (r remoteSession) Export(ctx context.Context, w io.Writer) error { return r.c.Export(ctx, w) }

func (r remoteSession) Import(context.Context, io.Reader) error {
	return fmt.Errorf("the store is held by mql serve (%s): import creates a new store; run `mql import FILE NEWDB`", r.c.Socket)
}

func (r remoteSession) Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error {
	return r.c.Watch(ctx, pattern, emit)
}

func (r remoteSession) Info(ctx context.Context) (repl.Info, error) {
	ci, err := r.c.ConnInfo(ctx)
	if err != nil {
		return repl.Info{}, err
	}
	return repl.Info{Store: ci.Store, Backend: ci.Backend, Principal: ci.Principal, Owner: ci.Owner, Head: ci.Head, Server: r.c.Socket}, nil
}
