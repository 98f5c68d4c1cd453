package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mql-dev/mql/mcpserver"
	"github.com/mql-dev/mql/server"
)

const mcpUsage = `usage: mql mcp [--as PRINCIPAL] [LIMITS] [DB | --db DB]
Serves the store DB to one MCP client over stdio (JSON-RPC on stdin and stdout), acting as
PRINCIPAL: tools assert, revoke, derive, review, query, context, why and impact (docs/MCP.md).
LIMITS bound what one message, tool call or resource read may cost, as mql serve's do:
--max-statements, --max-body (one line of stdin), --max-output, --timeout (below).
It creates DB if it does not exist, and says so on stderr.
` + dbUsage

// runMCP serves a store to one MCP client over stdio, acting as one principal.
func runMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("mql mcp", mcpUsage, stdout, stderr)
	as := fs.String("as", "", "act as `PRINCIPAL` (default: the owner)")
	dbFlag := addDBFlag(fs.FlagSet)
	opts, checkLimits := addMCPLimitFlags(fs.FlagSet)
	dsn, code, ok := fs.parseDB(args, dbFlag)
	if !ok {
		return code
	}
	if err := checkLimits(); err != nil {
		fmt.Fprintf(stderr, "mql mcp: %v\n", err)
		return exitUsage
	}
	// The server writes for its client, so it creates a missing store, and says so.
	req := openReq{cmd: "mql mcp", dsn: dsn, stdout: stdout, announce: true}
	req.attach = func(c *server.Client) int {
		// A store held by mql serve is served to agents over HTTP already: one process per
		// store, every agent its own token.
		where := "its /mcp URL"
		if ci, err := c.ConnInfo(ctx); err == nil && ci.URL != "" {
			where = ci.URL + "/mcp"
		}
		fmt.Fprintf(stderr, "mql mcp: %s is held by mql serve (socket %s). Point the MCP client at %s with a token of its own (mql token create NAME %s); docs/MCP.md shows the configuration\n",
			dsn, c.Socket, where, dsn)
		return exitOpen
	}
	db, _, code := openStore(ctx, req, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := mcpserver.ServeWith(ctx, db, *as, stdin, stdout, *opts); err != nil {
		fmt.Fprintf(stderr, "mql mcp: %v\n", err)
		return exitFailed
	}
	return exitOK
}
