package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/repl"
)

// demoScript is the bundled demo: a small team's memory, narrated by its comments.
//
//go:embed demo.mql
var demoScript string

const demoUsage = `usage: mql demo [--format FORMAT] [DB | --db DB]
Runs the bundled demo on a fresh store (a temporary file, removed afterwards, unless DB is given)
and prints a transcript: principals, grants, claims, a revision, a derived plan, why, impact, a
revocation, a review, history, context and stats. To keep the store, to open it afterwards in the
REPL (mql demo.db) or the browser (mql serve --open demo.db), give one: mql demo demo.db.
DB, if given, is a bbolt file path, bbolt:PATH, memory: or postgres://…, as the DB argument or as
--db DB (not both).
`

// runDemo is `mql demo [--format F] [DB]`: it runs the demo script on a fresh store (a new
// bbolt file in a temporary directory, removed afterwards, unless DB is given) and prints a
// transcript: each comment, each statement after the prompt, and its result.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("mql demo", demoUsage, stdout, stderr)
	formatName := fs.String("format", "tree", "output `FORMAT`: tree, table, json or csv")
	dbFlag := addDBFlag(fs.FlagSet)
	dsn, code, ok := fs.parseDB(args, dbFlag)
	if !ok {
		return code
	}
	format, err := output.ParseFormat(*formatName)
	if err != nil {
		fmt.Fprintf(stderr, "mql demo: --format: %v\n", err)
		return exitUsage
	}
	given := dsn != ""
	if !given {
		dir, err := os.MkdirTemp("", "mql-demo-")
		if err != nil {
			fmt.Fprintf(stderr, "mql demo: %v\n", err)
			return exitOpen
		}
		defer os.RemoveAll(dir)
		dsn = filepath.Join(dir, "demo.db")
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	db, dsn, code := openStore(ctx, openReq{cmd: "mql demo", dsn: dsn, stdout: stdout, announce: given}, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	sh := repl.New(repl.Config{Session: repl.Local(query.NewSession(db, ""), dsn), StoreFile: mql.FilePath(dsn), Stdout: stdout, Stderr: stderr, Format: format, Echo: true})
	if err := runNarrated(ctx, sh, "demo.mql", demoScript); err != nil {
		fmt.Fprintln(stderr, err)
		return exitCode(err)
	}
	if !given {
		fmt.Fprintln(stderr, "mql demo: the demo ran on a temporary store, now removed. To keep one to look at: mql demo demo.db, then mql demo.db (the REPL) or mql serve --open demo.db (the browser)")
	}
	return exitOK
}

// runNarrated runs a script, printing its comment lines (those between statements) as
// narration.
func runNarrated(ctx context.Context, sh *repl.Shell, name, src string) error {
	var chunk strings.Builder
	start := 1 // line at which chunk starts
	flush := func() error {
		text := chunk.String()
		chunk.Reset()
		if strings.TrimSpace(text) == "" {
			return nil
		}
		sc := repl.NewScanner(name, strings.NewReader(text))
		return sh.RunItems(ctx, func() (repl.Item, error) {
			it, err := sc.Next()
			it.Src = it.Src.At(it.Src.Line+start-1, it.Src.Col)
			return it, err
		})
	}
	for i, line := range splitLines(src) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "--") && query.Complete(chunk.String()) {
			if err := flush(); err != nil {
				return err
			}
			if err := sh.Comment(t); err != nil {
				return err
			}
			start = i + 2
			continue
		}
		if t == "" && strings.TrimSpace(chunk.String()) == "" {
			start = i + 2
			continue
		}
		chunk.WriteString(line)
	}
	return flush()
}
