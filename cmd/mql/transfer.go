package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/internal/streammem"
	"github.com/mql-dev/mql/output"
)

const importUsage = `usage: mql import FILE.nq [DB | --db DB]
Creates the store DB from an N-Quads export (FILE - is stdin), exactly: its owner, strict flag,
transaction ids and times come from the file. All or nothing; DB must not exist yet (a bbolt
file) or hold no store (PostgreSQL).
` + dbUsage

// runImport is `mql import FILE.nq [DB | --db DB]`: it creates the store DB from an N-Quads
// export, exactly (the export's genesis, ids and times), all or nothing: DB must not exist yet.
func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("mql import", importUsage, stdout, stderr)
	dbFlag := addDBFlag(fs.FlagSet)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	dsn, rest, err := takeDB(*dbFlag, pos, 1)
	if err == nil && len(rest) != 1 {
		err = errors.New("name the file to import (- for stdin)")
	}
	if err != nil {
		fmt.Fprintf(stderr, "mql import: %v\n", err)
		fs.usage(stderr)
		return exitUsage
	}
	name := rest[0]
	var r io.Reader = stdin
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintf(stderr, "mql import: %v\n", err)
			return exitTransfer
		}
		defer f.Close()
		r = bufio.NewReaderSize(f, 1<<20)
	}
	target := dsn
	if target == "" {
		if target, err = defaultDB(true); err != nil {
			fmt.Fprintf(stderr, "mql import: %v\n", err)
			return exitOpen
		}
	}
	shown := output.EscapeText(graphstore.RedactDSN(target))
	clock, err := testClock()
	if err != nil {
		fmt.Fprintf(stderr, "mql: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	streammem.Bound()
	sum, err := mql.ImportStore(ctx, target, r, mql.Options{Clock: clock})
	switch {
	case err == nil:
		fmt.Fprintf(stderr, "imported %d transactions (%d claims, %d quads) from %s into %s\n", sum.Transactions, sum.Claims, sum.Quads, output.EscapeText(name), shown)
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "mql import: interrupted; nothing was imported and %s was not created\n", shown)
		return exitInterrupted
	case errors.Is(err, mql.ErrBadDSN):
		fmt.Fprintf(stderr, "mql import: %s\n", output.EscapeText(err.Error()))
		return exitOpen
	case errors.Is(err, mql.ErrNotEmpty):
		fmt.Fprintf(stderr, "mql import: %s\n", output.EscapeText(err.Error()))
		return exitTransfer
	default:
		fmt.Fprintf(stderr, "mql import: %s: %s; nothing was imported and %s was not created\n", output.EscapeText(name), output.EscapeText(err.Error()), shown)
		return exitTransfer
	}
}
