package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mql-dev/mql"
	render "github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/repl"
	"github.com/mql-dev/mql/server"
)

// runExport is `mql export [--as PRINCIPAL] [-o FILE [--force]] [DB | --db DB]`: it writes
// what the principal may see of the store as N-Quads, to stdout or to FILE (atomically:
// complete or untouched). It never creates a store, never writes over an mql store or the
// store it exports (not even with --force, nor through stdout), and writes over another
// existing file only with --force.
const exportUsage = `usage: mql export [--as PRINCIPAL] [-o FILE [--force]] [DB | --db DB]
Writes the store as N-Quads to stdout, or to FILE (atomically); with --as, only what PRINCIPAL may
see. It never creates a store, never writes over an mql store or the store it exports, and over
another existing file only with --force.
` + dbUsage

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mql export", exportUsage, stdout, stderr)
	dbFlag := addDBFlag(fs.FlagSet)
	as := fs.String("as", "", "export only what `PRINCIPAL` may see")
	var output string
	fs.StringVar(&output, "o", "", "write to `FILE` instead of stdout (- for stdout)")
	fs.StringVar(&output, "output", "", "same as -o `FILE`")
	force := fs.Bool("force", false, "write over an existing file that is not an mql store")
	dsn, code, ok := fs.parseDB(args, dbFlag)
	if !ok {
		return code
	}
	toStdout := output == "" || output == "-"
	if dsn == "" {
		// The output must be checked against the store it exports, so resolve the default now.
		var err error
		if dsn, err = defaultDB(false); err != nil {
			fmt.Fprintf(stderr, "mql export: %v\n", err)
			return exitOpen
		}
	}
	if !toStdout {
		// Before the store is opened: a refused export opens nothing.
		exists, err := repl.CheckOutput(output, mql.FilePath(dsn))
		if err == nil && exists && !*force {
			err = fmt.Errorf("%w %s: it exists; add --force to write over it", repl.ErrOverwrite, output)
		}
		if err != nil {
			fmt.Fprintf(stderr, "mql export: %v\n", err)
			return exitTransfer
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// write exports through a session, local or attached to the server that holds the store.
	write := func(export func(ctx context.Context, w io.Writer) error) int {
		var err error
		if toStdout {
			err = export(ctx, stdout)
		} else {
			err = repl.WriteFileAtomic(output, func(w io.Writer) error { return export(ctx, w) })
		}
		if err != nil {
			fmt.Fprintf(stderr, "mql export: %v\n", render.EscapeText(err.Error()))
			return exitTransfer
		}
		return exitOK
	}
	req := openReq{cmd: "mql export", dsn: dsn, stdout: stdout, opts: mql.Options{MustExist: true}, failCode: exitTransfer}
	req.attach = func(c *server.Client) int {
		c.As = *as
		return write(c.Export)
	}
	db, _, code := openStore(ctx, req, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	// The same path as \export: the session's principal decides what is exported.
	return write(query.NewSession(db, *as).Export)
}
