package main

import (
	"context"
	"fmt"
	"io"

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

func (r remoteSession) Exec(ctx context.Context, name, src string, st output.Style, emit func(repl.Rendered) error) error {
	return r.c.Exec(ctx, name, src, st, func(f server.Frame) error {
		return emit(repl.Rendered{Statement: f.Statement, Text: f.Output, Write: f.Write})
	})
}

func (r remoteSession) Names(ctx context.Context) ([]string, error) { return r.c.Names(ctx) }

func (r remoteSession) Export(ctx context.Context, w io.Writer) error { return r.c.Export(ctx, w) }

func (r remoteSession) Import(context.Context, io.Reader) error {
	return fmt.Errorf("the store is held by mql serve (%s): import creates a new store; run `mql import FILE NEWDB`", r.c.Socket)
}

func (r remoteSession) Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error {
	return r.c.Watch(ctx, pattern, emit)
}
