package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/repl"
	"github.com/mql-dev/mql/server"
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
  mql [flags] [DB]              open DB and start the REPL, or run -c / -f / piped stdin as a script
  mql export [--as P] [-o FILE [--force]] [DB]
                                write DB as N-Quads to stdout, or to FILE (atomically)
  mql import FILE.nq [DB]       create the store DB from an N-Quads export (FILE - is stdin),
                                exactly; all or nothing, and DB must not exist yet
  mql check [--format F] [DB]   verify the store's integrity; list the problems and exit 1 if any
  mql backup [--force] DB FILE  a consistent, checked copy of a bbolt store while it is in use
                                (through mql serve when it holds DB); restoring is opening FILE
  mql migrate OLD [NEW]         convert a store of an earlier mql into the new store NEW, checked
                                before and after; OLD is left as it is
  mql demo [--format F] [DB]    run the bundled demo on a fresh store and print a transcript
  mql mcp [--as NAME] [DB]      serve DB to MCP clients over stdio (docs/MCP.md)
  mql serve [--listen ADDR] [--open] [--metrics ADDR] [DB]
                                serve DB to a team over HTTP: MCP at /mcp, POST /v1/query,
                                GET /v1/watch, the web page at /, each request as its bearer
                                token's principal (--open: a one-time sign-in link for the owner);
                                probes at /healthz and /readyz, Prometheus metrics on --metrics
  mql token create NAME [--expires D] [DB] | list [DB] | revoke ID [DB]
                                issue, list and revoke the tokens of mql serve (owner only)
  mql version                   print the version (also mql --version, mql -V)
  mql COMMAND --help            a command's own usage

While mql serve holds a bbolt DB, mql, mql export, mql check, mql backup and mql token attach to
it over its local socket instead of failing with exit 4: the same statements, output and exit
codes.

Every command takes its store the same way: as the DB argument or as --db DB (not both). DB is
a bbolt file path, bbolt:PATH, memory: or postgres://…; without one, $MQL_DB, else
$XDG_DATA_HOME/mql/default.db (~/.local/share/mql/default.db).

A store that does not exist is created only by a write: the REPL's first write, a script with a
write statement or \import, mql mcp and mql demo create it and say so on stderr (the REPL starts
on a missing store without creating it); mql import creates the store it fills. A script that
only reads, mql export and mql check fail on it with exit 4 ("no such store").
mql export never writes over an mql store, nor over any other existing file without --force.

Flags:
  -c STATEMENTS      run statements (repeatable; separate several with ; or newlines)
  -f FILE            run a script file (- for stdin; repeatable, in order with -c)
  --db DB            the store, as the DB argument
  --format FORMAT    table, tree, json, csv or dot (default: table on a terminal, json otherwise)
  --as PRINCIPAL     act as PRINCIPAL: read what it may see, write only as it, export only what it sees
  --owner NAME       owner principal of a store being created (default owner); a principal name
  --strict           a store being created requires the assert right to assert
  -1, --single-transaction
                     run the scripts as one transaction: all of their writes or none, one commit
  -X, --no-mqlrc     the REPL does not read the startup file ($MQLRC, $XDG_CONFIG_HOME/mql/mqlrc
                     or ~/.mqlrc)
  -V, --version      print the version
  -h, --help         this text

Exit codes:
  0    ok
  1    a statement failed to evaluate
  2    usage error (bad flag or argument, the store named twice, unreadable script file,
       --as a principal the store does not know)
  3    syntax error in a statement or meta command
  4    the store could not be opened (no such store, in use by another process, …)
  5    import or export failed or was refused (an existing file, an mql store)
  130  interrupted
Errors are printed to stderr as name:line:col: message, name being -c (-c#N when there are
several), the file or <stdin>.
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
		case "migrate":
			return runMigrate(ctx, args[1:], stdout, stderr)
		case "export":
			return runExport(ctx, args[1:], stdout, stderr)
		case "check":
			return runCheck(ctx, args[1:], stdout, stderr)
		case "backup":
			return runBackup(ctx, args[1:], stdout, stderr)
		case "version":
			return runVersion(args[1:], stdout, stderr)
		case "demo":
			return runDemo(ctx, args[1:], stdout, stderr)
		case "mcp":
			return runMCP(ctx, args[1:], stdin, stdout, stderr)
		case "serve":
			return runServe(ctx, args[1:], stdout, stderr)
		case "token":
			return runToken(ctx, args[1:], stdout, stderr)
		case "help":
			usage(stdout)
			return exitOK
		}
	}

	fs := newFlags("mql", usageText, stdout, stderr)
	var scripts []scriptArg
	fs.Var(scriptFlag{&scripts, false}, "c", "run `STATEMENTS`")
	fs.Var(scriptFlag{&scripts, true}, "f", "run the script `FILE`")
	formatName := fs.String("format", "", "output `FORMAT`")
	as := fs.String("as", "", "act as `PRINCIPAL`")
	owner := fs.String("owner", "", "owner `NAME` of a new store")
	strict := fs.Bool("strict", false, "a new store requires the assert right")
	single := fs.Bool("single-transaction", false, "run the scripts as one transaction")
	fs.BoolVar(single, "1", false, "run the scripts as one transaction")
	noRC := fs.Bool("no-mqlrc", false, "do not read the startup file")
	fs.BoolVar(noRC, "X", false, "do not read the startup file")
	showVersion := fs.Bool("version", false, "print the version")
	fs.BoolVar(showVersion, "V", false, "print the version")
	dbFlag := addDBFlag(fs.FlagSet)
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if *showVersion {
		return runVersion(nil, stdout, stderr)
	}
	if len(pos) > 1 {
		fmt.Fprintf(stderr, "mql: one DB at most, got %q\n", pos)
		fs.tryHelp(stderr)
		return exitUsage
	}
	dsn, _, err := takeDB(*dbFlag, pos, 0)
	if err != nil {
		fmt.Fprintf(stderr, "mql: %v\n", err)
		fs.tryHelp(stderr)
		return exitUsage
	}
	if *owner != "" {
		if err := mql.CheckName("--owner", *owner); err != nil {
			fmt.Fprintf(stderr, "mql: %v\n", err)
			return exitUsage
		}
	}
	if *as != "" {
		if err := mql.CheckName("--as", *as); err != nil {
			fmt.Fprintf(stderr, "mql: %v\n", err)
			return exitUsage
		}
	}
	stdinTTY, stdoutTTY := isTerminal(stdin), isTerminal(stdout)
	format := output.FormatJSON
	if stdoutTTY {
		format = output.FormatTable
	}
	if *formatName != "" {
		if format, err = output.ParseFormat(*formatName); err != nil {
			fmt.Fprintf(stderr, "mql: --format: %v\n", err)
			return exitUsage
		}
	}
	interactive := len(scripts) == 0 && stdinTTY
	if *single && interactive {
		fmt.Fprintln(stderr, "mql: -1 (--single-transaction) runs scripts (-c, -f, stdin) as one transaction; at the prompt, use begin … commit")
		return exitUsage
	}
	// Open the script files before the store, so that a missing file changes nothing. Scripts
	// are read a statement at a time, as they run.
	todo, err := openScripts(scripts, stdin, !interactive)
	defer todo.close()
	if err != nil {
		fmt.Fprintf(stderr, "mql: -f: %v\n", err)
		return exitUsage
	}

	// Only a write creates a store: a misspelt name is an error, not a new empty store. A
	// script is read ahead for a write only when the store is missing; the REPL starts on a
	// missing store without creating it, and its first write creates it.
	req := openReq{
		cmd: "mql", dsn: dsn, stdout: stdout, announce: true,
		opts: mql.Options{Owner: *owner, Strict: *strict, MustExist: true},
	}
	if !interactive {
		req.mayCreate = func() (bool, string) {
			writes, err := todo.writes()
			if err != nil {
				return false, "the script was not run, since it does not parse: " + output.EscapeText(err.Error())
			}
			if !writes {
				return false, "a script that only reads never creates a store: a write creates it (in a script, or at the REPL)"
			}
			// In a new store only the owner exists: a script acting as another could only fail.
			if a := *as; a != "" && a != *owner && (*owner != "" || a != "owner") {
				return false, "a script acting as " + a + " never creates a store: a new store holds only its owner"
			}
			return true, ""
		}
	}
	cfg := repl.Config{StoreFile: mql.FilePath(dsn), Stdout: stdout, Stderr: stderr, Format: format, Terminal: stdoutTTY, Single: *single}
	// run runs the REPL or the scripts on a session, local or attached to a server.
	run := func(sess repl.Session, where string) int {
		cfg.Session = sess
		if interactive {
			cfg.Pager, cfg.Rows = pagerCommand(stdout)
			return runREPL(ctx, cfg, where, stdin, !*noRC)
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		sh := repl.New(cfg)
		err := todo.run(ctx, sh)
		if err == nil {
			err = sh.Finish(ctx)
		}
		if err != nil && !errors.Is(err, repl.ErrQuit) {
			fmt.Fprintln(stderr, output.EscapeText(err.Error()))
			return exitCode(err)
		}
		return exitOK
	}
	req.attach = func(c *server.Client) int {
		c.As = *as
		sess, where, err := attachedSession(ctx, c)
		if err != nil {
			fmt.Fprintf(stderr, "mql: %v\n", output.EscapeText(err.Error()))
			return exitCode(err)
		}
		return run(sess, where)
	}
	if interactive {
		req.missing = func(dsn string, opts mql.Options) int {
			if a := *as; a != "" && a != *owner && (*owner != "" || a != "owner") {
				fmt.Fprintf(stderr, "mql: no such store: %s does not exist; a session acting as %s never creates a store: a new store holds only its owner\n", dsn, a)
				return exitOpen
			}
			opts.MustExist = false
			l := &lazyStore{dsn: dsn, opts: opts, as: *as, stderr: stderr}
			if req.dsn == "" && os.Getenv("MQL_DB") == "" {
				l.mkdir = filepath.Dir(dsn) // the default store's directory, created with it
			}
			defer l.Close()
			return run(l, fmt.Sprintf("on %s (%s): no store there yet; the first write creates it", dsn, backendOf(dsn)))
		}
	}
	db, dsn, code := openStore(ctx, req, stderr)
	if db == nil {
		return code
	}
	defer db.Close()
	if *as != "" {
		if ok, err := db.HasPrincipal(ctx, *as); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("%q: %w: record it first, e.g. `principal %s agent`", *as, mql.ErrUnknownPrincipal, *as)
			}
			fmt.Fprintf(stderr, "mql: --as %s: %v\n", *as, output.EscapeText(err.Error()))
			return exitUsage
		}
	}
	return run(repl.Local(query.NewSession(db, *as), dsn), fmt.Sprintf("on %s (%s)", dsn, db.Backend()))
}

// scriptList are the -c and -f arguments (or stdin), opened, read a statement at a time.
type scriptList []*script

type script struct {
	name   string
	sc     *repl.Scanner
	closer io.Closer
	ahead  []repl.Item // read to tell whether the scripts write, not run yet
	err    error       // what ended the reading ahead (io.EOF at the end)
}

// openScripts opens the scripts: each -c and -f in order, or stdin when there is none and
// stdin is a script. Several -c are named -c#1, -c#2, … in errors.
func openScripts(args []scriptArg, stdin io.Reader, stdinScript bool) (scriptList, error) {
	var out scriptList
	nc := 0
	for _, a := range args {
		if !a.file {
			nc++
		}
	}
	ic := 0
	for _, a := range args {
		switch {
		case !a.file:
			ic++
			name := "-c"
			if nc > 1 {
				name = "-c#" + strconv.Itoa(ic)
			}
			out = append(out, &script{name: name, sc: repl.NewScanner(name, strings.NewReader(a.text))})
		case a.text == "-":
			out = append(out, &script{name: "<stdin>", sc: repl.NewScanner("<stdin>", stdin)})
		default:
			f, err := os.Open(a.text)
			if err != nil {
				return out, err
			}
			out = append(out, &script{name: a.text, sc: repl.NewScanner(a.text, f), closer: f})
		}
	}
	if len(args) == 0 && stdinScript {
		out = append(out, &script{name: "<stdin>", sc: repl.NewScanner("<stdin>", stdin)})
	}
	return out, nil
}

func (l scriptList) close() {
	for _, s := range l {
		if s.closer != nil {
			s.closer.Close()
		}
	}
}

// writes reads the scripts ahead until a statement that writes (or \import), keeping what it
// read for run: whether running them could change the store. A script on stdin is read until
// its first write, or its end. A statement that does not parse ends the scripts before any
// write after it: writes returns its error.
func (l scriptList) writes() (bool, error) {
	for _, s := range l {
		for s.err == nil {
			it, err := s.sc.Next()
			if err != nil {
				s.err = err
				break
			}
			s.ahead = append(s.ahead, it)
			if repl.ItemWrites(it) {
				return true, nil
			}
			if err := repl.StatementError(it); err != nil {
				return false, err
			}
		}
	}
	return false, nil
}

// run runs the scripts, one after another, each a statement at a time.
func (l scriptList) run(ctx context.Context, sh *repl.Shell) error {
	for _, s := range l {
		ahead := s.ahead
		next := func() (repl.Item, error) {
			if len(ahead) > 0 {
				it := ahead[0]
				ahead = ahead[1:]
				return it, nil
			}
			if s.err != nil {
				return repl.Item{}, s.err
			}
			return s.sc.Next()
		}
		if err := sh.RunItems(ctx, next); err != nil {
			return err
		}
	}
	return nil
}

// exitCode maps a script's error to the exit code.
func exitCode(err error) int {
	var se *server.Error
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &se):
		return se.ExitCode
	case errors.Is(err, repl.ErrTransfer):
		return exitTransfer
	case errors.Is(err, query.ErrSyntax), errors.Is(err, repl.ErrMeta), errors.Is(err, repl.ErrTooLong):
		return exitSyntax
	case errors.Is(err, repl.ErrScript):
		return exitUsage
	}
	return exitFailed
}

// runREPL runs the interactive loop; where says what it is connected to, in the banner.
func runREPL(ctx context.Context, cfg repl.Config, where string, stdin io.Reader, rc bool) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM)
	defer stop()
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)
	cfg.Interrupt = intr
	stdout, stderr := cfg.Stdout, cfg.Stderr
	sh := repl.New(cfg)
	histFile, err := repl.HistoryPath(os.Getenv)
	if err != nil {
		fmt.Fprintf(stderr, "mql: no history: %v\n", err)
		histFile = ""
	}
	tcfg := repl.TerminalConfig{Prompt: repl.Prompt, HistoryFile: histFile, Complete: sh.Complete, Stdin: stdin, Stdout: stdout, Stderr: stderr}
	var lr repl.LineReader
	t, err := repl.NewTerminal(tcfg)
	if err != nil && histFile != "" {
		fmt.Fprintf(stderr, "mql: no history: %v\n", err)
		tcfg.HistoryFile = ""
		t, err = repl.NewTerminal(tcfg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "mql: no line editing: %v\n", err)
		lr = repl.NewPlain(stdin, stdout)
	} else {
		lr = t
	}
	defer lr.Close()
	fmt.Fprintf(stdout, "mql %s %s. Type \\help for help, \\quit or Ctrl-D to leave.\n", version(), where)
	if rc {
		if path := repl.StartupPath(os.Getenv); path != "" {
			sh.RunStartup(ctx, path)
		}
	}
	if err := sh.Run(ctx, lr); err != nil {
		fmt.Fprintf(stderr, "mql: %v\n", err)
		return exitFailed
	}
	return exitOK
}

// pagerCommand is the pager of the REPL and the terminal's height: $MQL_PAGER, else $PAGER,
// else less -FRX when it is installed; none when stdout is not a terminal, or the variable
// is set and empty.
func pagerCommand(stdout io.Writer) (string, func() int) {
	f, ok := stdout.(*os.File)
	if !ok || !repl.IsTerminal(f.Fd()) {
		return "", nil
	}
	rows := func() int { return repl.TerminalRows(f.Fd()) }
	for _, v := range []string{"MQL_PAGER", "PAGER"} {
		if p, set := os.LookupEnv(v); set {
			return strings.TrimSpace(p), rows
		}
	}
	if _, err := exec.LookPath("less"); err == nil {
		return "less -FRX", rows
	}
	return "", rows
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
