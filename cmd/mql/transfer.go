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
	"github.com/mql-dev/mql/repl"
)

// runImport is `mql import [--db DB] [--owner NAME] [--strict] FILE.nq`: it loads an N-Quads
// export into a new store, all or nothing.
func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mql import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("db", "", "the store to import into (default: the embedded store)")
	owner := fs.String("owner", "", "owner `NAME` of the new store; must match the export's")
	strict := fs.Bool("strict", false, "create the store strict; must match the export")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mql import [--db DB] [--owner NAME] [--strict] FILE.nq  (- for stdin)")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(pos) != 1 {
		fs.Usage()
		return exitUsage
	}
	name := pos[0]
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
	db, dsnUsed, code := openDB(ctx, *dsn, mql.Options{Owner: *owner, Strict: *strict}, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	if err := db.Import(ctx, r); err != nil {
		fmt.Fprintf(stderr, "mql import: %s: %v\n", name, err)
		return exitTransfer
	}
	fmt.Fprintf(stderr, "imported %s into %s\n", name, dsnUsed)
	return exitOK
}

// runExport is `mql export [--db DB] [FILE]`: it writes the store as N-Quads to FILE
// (atomically: complete or untouched) or to stdout.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mql export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("db", "", "the store to export (default: the embedded store)")
	as := fs.String("as", "", "export only what `PRINCIPAL` may see")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mql export [--db DB] [--as PRINCIPAL] [FILE]  (stdout if no FILE)")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(pos) > 1 {
		fs.Usage()
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, _, code := openDB(ctx, *dsn, mql.Options{}, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	export := func(w io.Writer) error {
		if *as != "" {
			return db.As(*as).Export(ctx, w)
		}
		return db.Export(ctx, w)
	}
	if len(pos) == 0 || pos[0] == "-" {
		err = export(stdout)
	} else {
		err = repl.WriteFileAtomic(pos[0], export)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mql export: %v\n", err)
		return exitTransfer
	}
	return exitOK
}
