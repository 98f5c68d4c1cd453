// Command mqlmcp is a test-only stand-in for `mql mcp [--as NAME] [DB]`: it serves DB over
// stdio as an MCP server acting as NAME. The tests build and run it as a real process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

func main() {
	as := flag.String("as", "", "act as `PRINCIPAL` (default: the owner)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mqlmcp [--as NAME] DB")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, err := mql.Open(ctx, flag.Arg(0), mql.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "mqlmcp:", err)
		os.Exit(4)
	}
	defer db.Close()
	if err := mcpserver.Serve(ctx, db, *as, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mqlmcp:", err)
		os.Exit(1)
	}
}
