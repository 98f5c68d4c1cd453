package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
)

const importUsage = `usage: mql import [--owner NAME] [--strict] FILE.nq [DB | --db DB]
Loads an N-Quads export (FILE - is stdin) into a store that holds nothing yet, creating it: all
or nothing. --owner and --strict must match the exported store's.
` + dbUsage

// runImport is `mql import [--owner NAME] [--strict] FILE.nq [DB | --db DB]`: it loads an
// N-Quads export into a new store, all or nothing.
func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("mql import", importUsage, stdout, stderr)
	dbFlag := addDBFlag(fs.FlagSet)
	owner := fs.String("owner", "", "owner `NAME` of the new store; must match the export's")
	strict := fs.Bool("strict", false, "create the store strict; must match the export")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	dsn, rest, err := takeDB(*dbFlag, pos, 1)
	if err == nil && len(rest) != 1 {
		err = errors.New("name the file to import (- for stdin)")
	}
	if err == nil && *owner != "" {
		err = mql.CheckName("--owner", *owner)
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
		r = f
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, dsnUsed, code := openDB(ctx, dsn, mql.Options{Owner: *owner, Strict: *strict}, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	if err := db.Import(ctx, r); err != nil {
		fmt.Fprintf(stderr, "mql import: %s: %s\n", name, output.EscapeText(err.Error()))
		return exitTransfer
	}
	fmt.Fprintf(stderr, "imported %s into %s\n", name, dsnUsed)
	return exitOK
}
