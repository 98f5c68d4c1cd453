package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

// runMCP serves a store to one MCP client over stdio, acting as one principal.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mql mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	as := fs.String("as", "", "act as `PRINCIPAL` (default: the owner)")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil || len(pos) > 1 {
		fmt.Fprintln(stderr, "usage: mql mcp [--as PRINCIPAL] [DB]")
		return exitUsage
	}
	dsn := ""
	if len(pos) == 1 {
		dsn = pos[0]
	}
	db, _, code := openDB(ctx, dsn, mql.Options{}, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mcpserver.Serve(ctx, db, *as, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "mql mcp: %v\n", err)
		return exitFailed
	}
	return exitOK
}
