package main

import (
	"bufio"
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

// runImport is `mql import [--db DB] FILE.nq`: it creates the store DB from an N-Quads export,
// exactly (the export's genesis, ids and times), all or nothing: DB must not exist yet.
func runImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mql import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dsn := fs.String("db", "", "the store to create (default: the embedded store, which must not exist yet)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: mql import [--db DB] FILE.nq  (- for stdin)")
		fmt.Fprintln(stderr, "Creates the store DB from an export; DB must not exist yet (a bbolt file) or hold no store (PostgreSQL).")
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
		r = bufio.NewReaderSize(f, 1<<20)
	}
	target := *dsn
	if target == "" {
		if target, err = defaultDB(); err != nil {
			fmt.Fprintf(stderr, "mql import: %v\n", err)
			return exitOpen
		}
	}
	clock, err := testClock()
	if err != nil {
		fmt.Fprintf(stderr, "mql: %v\n", err)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	boundMemory()
	sum, err := mql.ImportStore(ctx, target, r, mql.Options{Clock: clock})
	switch {
	case err == nil:
		fmt.Fprintf(stderr, "imported %d transactions (%d claims, %d quads) from %s into %s\n", sum.Transactions, sum.Claims, sum.Quads, name, target)
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(stderr, "mql import: interrupted; nothing was imported and %s was not created\n", target)
		return exitInterrupted
	case errors.Is(err, mql.ErrBadDSN):
		fmt.Fprintf(stderr, "mql import: %v\n", err)
		return exitOpen
	case errors.Is(err, mql.ErrNotEmpty):
		fmt.Fprintf(stderr, "mql import: %v\n", err)
		return exitTransfer
	default:
		fmt.Fprintf(stderr, "mql import: %s: %v; nothing was imported and %s was not created\n", name, err, target)
		return exitTransfer
	}
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
