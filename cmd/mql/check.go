package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/internal/streammem"
	"github.com/mql-dev/mql/output"
)

// maxCheckLines bounds the problems `mql check` prints as text; the JSON report lists all that
// the check kept.
const maxCheckLines = 1000

const checkUsage = `usage: mql check [--format text|json] [DB | --db DB]
Verifies the store's integrity from its records and index (it never creates or changes a store); exits 0 if
it is sound, 1 with the list of problems if not, 4 if it cannot be read.
` + dbUsage

// runCheck is `mql check [--format text|json] [DB]`: it verifies the store's integrity from its
// records and index, without opening it as a memory (so it works on a store that mql refuses to open, and
// never creates one), prints what is wrong, and exits 1 if anything is.
func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlags("mql check", checkUsage, stdout, stderr)
	format := flags.String("format", "text", "output `FORMAT`: text or json")
	dbFlag := addDBFlag(flags.FlagSet)
	dsn, code, ok := flags.parseDB(args, dbFlag)
	if !ok {
		return code
	}
	if *format != "text" && *format != "json" {
		fmt.Fprintf(stderr, "mql check: --format %s: want text or json\n", *format)
		flags.usage(stderr)
		return exitUsage
	}
	var err error
	if dsn == "" {
		if dsn, err = defaultDB(false); err != nil {
			fmt.Fprintf(stderr, "mql check: %v\n", err)
			return exitOpen
		}
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var rep mql.CheckReport
	if c := attachIfServed(ctx, dsn); c != nil {
		// A running `mql serve` holds it: ask the server to check the store it holds.
		defer c.Close()
		rep, err = c.Check(ctx)
	} else {
		streammem.Bound()
		rep, err = mql.CheckStore(ctx, dsn, mql.Options{})
	}
	if err != nil {
		switch {
		case errors.Is(err, mql.ErrInUse):
			fmt.Fprintf(stderr, "mql check: %s is in use by another process: %v\n", dsn, err)
		case errors.Is(err, mql.ErrDamaged):
			fmt.Fprintf(stderr, "mql check: %v\n", err)
		case errors.Is(err, mql.ErrNoStore), errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(stderr, "mql check: %v; %s\n", err, noStoreHint("mql check"))
		case errors.Is(err, context.Canceled):
			fmt.Fprintln(stderr, "mql check: interrupted")
			return exitInterrupted
		default:
			fmt.Fprintf(stderr, "mql check: cannot read %s: %v\n", dsn, err)
		}
		return exitOpen
	}
	if *format == "json" {
		out := struct {
			Store string `json:"store"`
			OK    bool   `json:"ok"`
			mql.CheckReport
		}{dsn, rep.OK(), rep}
		b, err := json.Marshal(out)
		if err == nil {
			_, err = io.WriteString(stdout, output.EscapeJSON(string(b)+"\n"))
		}
		if err != nil {
			fmt.Fprintf(stderr, "mql check: %v\n", err)
			return exitFailed
		}
	} else {
		if len(rep.Problems) > 0 && rep.Problems[0].Kind == graphstore.ProblemFile {
			fmt.Fprintf(stdout, "%s: the file is damaged\n", dsn)
		} else {
			fmt.Fprintf(stdout, "%s: %d quads, %d transactions (head %d), %d principals, %d claims of %d keys, %d revocations, %d artifact versions\n",
				dsn, rep.Quads, rep.Transactions, rep.Head, rep.Principals, rep.Claims, rep.Keys, rep.Revocations, rep.Artifacts)
		}
		for i, p := range rep.Problems {
			if i == maxCheckLines {
				fmt.Fprintf(stdout, "… and %d more (use --format json for all of them)\n", len(rep.Problems)-i)
				break
			}
			fmt.Fprintf(stdout, "%s: %s\n", p.Kind, output.EscapeLine(p.String()))
		}
		n := len(rep.Problems) + rep.Omitted
		switch n {
		case 0:
			fmt.Fprintln(stdout, "ok: no problems found")
		case 1:
			fmt.Fprintln(stdout, "1 problem found")
		default:
			fmt.Fprintf(stdout, "%d problems found\n", n)
		}
	}
	if !rep.OK() {
		return exitFailed
	}
	return exitOK
}
