package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/repl"
)

// Exit codes. They are documented in docs/CLI.md and `mql -h`; keep them stable.
const (
	exitOK          = 0   // everything ran
	exitFailed      = 1   // a statement failed to evaluate (no standing, not found, …)
	exitUsage       = 2   // bad flag, argument or subcommand; a script file that cannot be read
	exitSyntax      = 3   // a statement or meta command does not parse
	exitOpen        = 4   // the store could not be opened (in use by another process, bad DSN, …)
	exitTransfer    = 5   // import or export failed (nothing was imported)
	exitInterrupted = 130 // interrupted (Ctrl-C, SIGTERM) while running a script
)

const usageText = `Usage:
  mql [flags] [DB]             open DB (default: the embedded store) and start the REPL,
                               or run -c / -f / piped stdin as a script
  mql import [--db DB] FILE.nq create the store DB from an N-Quads export; all or nothing
  mql export [--db DB] [FILE]  write the store as N-Quads (stdout if no FILE)
  mql check [DB]               verify the store's integrity; list the problems and exit 1 if any
  mql demo [--format F] [DB]   run the bundled demo on a fresh store and print a transcript
  mql mcp [--as NAME] [DB]     serve DB to MCP clients over stdio (docs/MCP.md)
  mql version                  print the version

DB is a bbolt file path, bbolt:PATH, memory: or postgres://…; without one, $MQL_DB, else
$XDG_DATA_HOME/mql/default.db (~/.local/share/mql/default.db).

Flags:
  -c STATEMENTS      run statements (repeatable; separate several with ; or newlines)
  -f FILE            run a script file (- for stdin; repeatable, in order with -c)
  --format FORMAT    table, tree, json or csv (default: table on a terminal, json otherwise)
  --as PRINCIPAL     act as PRINCIPAL: read what it may see, write only as it
  --owner NAME       owner principal of a store being created (default owner)
  --strict           a store being created requires the assert right to assert

Exit codes:
  0    ok
  1    a statement failed to evaluate
  2    usage error (bad flag or argument, unreadable script file)
  3    syntax error in a statement or meta command
  4    the store could not be opened (e.g. in use by another process)
  5    import or export failed
  130  interrupted
Errors are printed to stderr as name:line:col: message, name being -c, the file or <stdin>.
`

func usage(w io.Writer) { io.WriteString(w, usageText) }

// scriptArg is one -c or -f argument, in command-line order.
type scriptArg struct {
	file bool
	text string // the statements, or the file name
}

type scriptFlag struct {
	list *[]scriptArg
	file bool
}

func (f scriptFlag) String() string { return "" }
func (f scriptFlag) Set(s string) error {
	*f.list = append(*f.list, scriptArg{file: f.file, text: s})
	return nil
}

// parseInterleaved parses flags that may come before or after positional arguments.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// flag stops at the first non-flag, or after "--": take one positional and go on,
		// unless "--" ended the flags.
		if len(args) >= len(rest)+1 && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "import":
			return runImport(ctx, args[1:], stdin, stdout, stderr)
		case "export":
			return runExport(ctx, args[1:], stdout, stderr)
		case "check":
			return runCheck(ctx, args[1:], stdout, stderr)
		case "version":
			return runVersion(args[1:], stdout, stderr)
		case "demo":
			return runDemo(ctx, args[1:], stdout, stderr)
		case "mcp":
			return runMCP(ctx, args[1:], stdin, stdout, stderr)
		case "help":
			usage(stdout)
			return exitOK
		}
	}

	fs := flag.NewFlagSet("mql", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { usage(stderr) }
	var scripts []scriptArg
	fs.Var(scriptFlag{&scripts, false}, "c", "run `STATEMENTS`")
	fs.Var(scriptFlag{&scripts, true}, "f", "run the script `FILE`")
	formatName := fs.String("format", "", "output `FORMAT`")
	as := fs.String("as", "", "act as `PRINCIPAL`")
	owner := fs.String("owner", "", "owner `NAME` of a new store")
	strict := fs.Bool("strict", false, "a new store requires the assert right")
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "mql: one DB at most, got %q\n", pos)
		usage(stderr)
		return exitUsage
	}
	stdinTTY, stdoutTTY := isTerminal(stdin), isTerminal(stdout)
	format := repl.FormatJSON
	if stdoutTTY {
		format = repl.FormatTable
	}
	if *formatName != "" {
		if format, err = repl.ParseFormat(*formatName); err != nil {
			fmt.Fprintf(stderr, "mql: --format: %v\n", err)
			return exitUsage
		}
	}
	// Read the script files before opening the store, so that a missing file changes nothing.
	type script struct{ name, src string }
	var todo []script
	for _, s := range scripts {
		if !s.file {
			todo = append(todo, script{"-c", s.text})
			continue
		}
		src, name, err := readScript(s.text, stdin)
		if err != nil {
			fmt.Fprintf(stderr, "mql: -f: %v\n", err)
			return exitUsage
		}
		todo = append(todo, script{name, src})
	}
	interactive := len(scripts) == 0 && stdinTTY
	if len(scripts) == 0 && !stdinTTY {
		b, err := io.ReadAll(stdin)
		if err != nil {
			fmt.Fprintf(stderr, "mql: reading stdin: %v\n", err)
			return exitUsage
		}
		todo = append(todo, script{"<stdin>", string(b)})
	}

	dsn := ""
	if len(pos) == 1 {
		dsn = pos[0]
	}
	db, dsn, code := openDB(ctx, dsn, mql.Options{Owner: *owner, Strict: *strict}, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	sess := query.NewSession(db, *as)

	if interactive {
		return runREPL(ctx, sess, db, dsn, format, stdin, stdout, stderr)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	sh := repl.New(repl.Config{Session: sess, Store: db, Stdout: stdout, Stderr: stderr, Format: format})
	for _, s := range todo {
		if err := sh.RunScript(ctx, s.name, s.src); err != nil {
			fmt.Fprintln(stderr, err)
			return exitCode(err)
		}
	}
	return exitOK
}

// readScript reads a -f argument: a file, or stdin for "-".
func readScript(name string, stdin io.Reader) (src, display string, err error) {
	if name == "-" {
		b, err := io.ReadAll(stdin)
		return string(b), "<stdin>", err
	}
	b, err := os.ReadFile(name)
	return string(b), name, err
}

// exitCode maps a script's error to the exit code.
func exitCode(err error) int {
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.Is(err, repl.ErrTransfer):
		return exitTransfer
	case errors.Is(err, query.ErrSyntax), errors.Is(err, repl.ErrMeta):
		return exitSyntax
	}
	return exitFailed
}

func runREPL(ctx context.Context, sess *query.Session, db *mql.DB, dsn string, format repl.Format, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)
	sh := repl.New(repl.Config{Session: sess, Store: db, Stdout: stdout, Stderr: stderr, Format: format, Interrupt: intr})
	histFile, err := repl.HistoryPath(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mql: no history: %v\n", err)
		histFile = ""
	}
	cfg := repl.TerminalConfig{Prompt: repl.Prompt, HistoryFile: histFile, Complete: sh.Complete, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	var lr repl.LineReader
	t, err := repl.NewTerminal(cfg)
	if err != nil && histFile != "" {
		fmt.Fprintf(stderr, "mql: no history: %v\n", err)
		cfg.HistoryFile = ""
		t, err = repl.NewTerminal(cfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mql: no line editing: %v\n", err)
		lr = repl.NewPlain(stdin, stdout)
	} else {
		lr = t
	}
	defer lr.Close()
	fmt.Fprintf(stdout, "mql %s on %s (%s). Type \\help for help, \\quit or Ctrl-D to leave.\n", version(), dsn, db.Backend())
	if err := sh.Run(ctx, lr); err != nil {
		fmt.Fprintf(stderr, "mql: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// defaultDB is the embedded store's file: $MQL_DB, else $XDG_DATA_HOME/mql/default.db, else
// ~/.local/share/mql/default.db. Its directory is created (mode 0700) when it is the default.
func defaultDB() (string, error) {
	if p := os.Getenv("MQL_DB"); p != "" {
		return p, nil
	}
	dir := os.Getenv("XDG_DATA_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home directory for the default store: %w", err)
		}
		dir = filepath.Join(home, ".local", "share")
	}
	dir = filepath.Join(dir, "mql")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(dir, "default.db"), nil
}

// openDB opens dsn ("" for the default store). On failure it reports on stderr and returns a
// nil DB and the exit code.
func openDB(ctx context.Context, dsn string, opts mql.Options, stderr io.Writer) (*mql.DB, string, int) {
	if dsn == "" {
		var err error
		if dsn, err = defaultDB(); err != nil {
			fmt.Fprintf(stderr, "mql: %v\n", err)
			return nil, "", exitOpen
		}
	}
	clock, err := testClock()
	if err != nil {
		fmt.Fprintf(stderr, "mql: %v\n", err)
		return nil, "", exitUsage
	}
	opts.Clock = clock
	db, err := mql.Open(ctx, dsn, opts)
	if err != nil {
		switch {
		case errors.Is(err, mql.ErrInUse):
			fmt.Fprintf(stderr, "mql: %s is in use by another process: %v\n", dsn, err)
		default:
			fmt.Fprintf(stderr, "mql: cannot open %s: %v\n", dsn, err)
		}
		return nil, "", exitOpen
	}
	return db, dsn, exitOK
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	if fd, ok := f.(interface{ Fd() uintptr }); ok {
		return repl.IsTerminal(fd.Fd())
	}
	return false
}

// splitLines is used by demo: the lines of src, each with its newline.
func splitLines(src string) []string { return strings.SplitAfter(src, "\n") }
