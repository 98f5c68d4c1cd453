package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

// Every subcommand names its store the same way: as its DB argument, or as --db DB. Both mean
// the same, and naming it twice is a usage error. Without either, the default store is used.

// dbUsage explains DB in every command's usage.
const dbUsage = `DB is the store: a bbolt file path, bbolt:PATH, memory: or postgres://…, given as the DB
argument or as --db DB (not both). Without it: $MQL_DB, else $XDG_DATA_HOME/mql/default.db
(~/.local/share/mql/default.db).
`

// addDBFlag registers --db on fs.
func addDBFlag(fs *flag.FlagSet) *string {
	return fs.String("db", "", "the store `DB`, as the DB argument: a file, bbolt:PATH, memory: or postgres://…")
}

// takeDB returns the store named by --db (flagDB) or by the positional argument that follows
// the command's own `own` arguments, and those own arguments. More positional arguments than
// own+1, or a store named both ways, is a usage error.
func takeDB(flagDB string, pos []string, own int) (dsn string, rest []string, err error) {
	switch {
	case len(pos) > own+1:
		return "", nil, fmt.Errorf("too many arguments: %s", strings.Join(pos, " "))
	case len(pos) == own+1 && flagDB != "":
		return "", nil, fmt.Errorf("the store is named twice, as --db %s and as the argument %s: name it once", flagDB, pos[own])
	case len(pos) == own+1:
		return pos[own], pos[:own], nil
	}
	return flagDB, pos, nil
}

// openReq says how a subcommand opens its store.
type openReq struct {
	cmd  string // the command, for messages: "mql", "mql export", …
	dsn  string // "" for the default store
	opts mql.Options
	// stdout is where the command writes its output: refused if it is the store file itself.
	stdout io.Writer
	// announce says on stderr when the store was created.
	announce bool
	// failCode is the exit code for a refused stdout (exitOpen if zero).
	failCode int
	// mayCreate, if set, is asked when the store opened with MustExist does not exist: whether
	// to create it after all, and if not, what to say after "no such store".
	mayCreate func() (create bool, hint string)
	// missing, if set, runs the command when the store, opened with MustExist, does not exist
	// (and mayCreate did not create it), instead of failing, and returns the exit code. opts
	// are the options to create it with.
	missing func(dsn string, opts mql.Options) int
	// attach, if set, runs the command through the server that holds the store (`mql serve`),
	// when another process holds a bbolt store and a server answers on its socket, and returns
	// the exit code.
	attach func(c *server.Client) int
}

// openStore opens the store of req. On failure it reports on stderr and returns a nil DB and
// the exit code. dsn is the store opened (the default resolved).
func openStore(ctx context.Context, req openReq, stderr io.Writer) (db *mql.DB, dsn string, code int) {
	dsn = req.dsn
	if dsn == "" {
		var err error
		if dsn, err = defaultDB(!req.opts.MustExist); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", req.cmd, err)
			return nil, "", exitOpen
		}
	}
	if path := mql.FilePath(dsn); path != "" {
		if msg := stdoutIsStore(req.stdout, path); msg != "" {
			fmt.Fprintf(stderr, "%s: %s\n", req.cmd, msg)
			if req.failCode != 0 {
				return nil, "", req.failCode
			}
			return nil, "", exitOpen
		}
	}
	// A store that `mql serve` holds: go through the server at once, rather than after the
	// file lock's timeout.
	if req.attach != nil {
		if c := attachIfServed(ctx, dsn); c != nil {
			defer c.Close()
			return nil, dsn, req.attach(c)
		}
	}
	clock, err := testClock()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", req.cmd, err)
		return nil, "", exitUsage
	}
	req.opts.Clock = clock
	db, err = mql.Open(ctx, dsn, req.opts)
	hint := noStoreHint(req.cmd)
	if errors.Is(err, mql.ErrNoStore) && req.mayCreate != nil {
		var create bool
		if create, hint = req.mayCreate(); create {
			if req.dsn == "" {
				if dsn, err = defaultDB(true); err != nil {
					fmt.Fprintf(stderr, "%s: %v\n", req.cmd, err)
					return nil, "", exitOpen
				}
			}
			req.opts.MustExist = false
			db, err = mql.Open(ctx, dsn, req.opts)
		}
	}
	if errors.Is(err, mql.ErrNoStore) && req.missing != nil {
		return nil, dsn, req.missing(dsn, req.opts)
	}
	if errors.Is(err, mql.ErrInUse) && req.attach != nil {
		if path := mql.FilePath(dsn); path != "" {
			if c, aerr := server.Attach(ctx, path); aerr == nil {
				defer c.Close()
				return nil, dsn, req.attach(c)
			}
		}
	}
	if err != nil {
		switch {
		case errors.Is(err, mql.ErrInUse) && mql.FilePath(dsn) != "":
			// The error says the same in its own words: once is enough, with what to do.
			fmt.Fprintf(stderr, "%s: %s is in use by another process: close the other mql that has it open, or, to use the store from several at once, run \"mql serve %s\": every mql on it then goes through the server\n", req.cmd, dsn, dsn)
		case errors.Is(err, mql.ErrInUse):
			fmt.Fprintf(stderr, "%s: %s is in use by another process: %v\n", req.cmd, dsn, err)
		case errors.Is(err, mql.ErrNoStore):
			fmt.Fprintf(stderr, "%s: %v; %s\n", req.cmd, err, hint)
		default:
			fmt.Fprintf(stderr, "%s: cannot open %s: %v\n", req.cmd, dsn, err)
		}
		return nil, "", exitOpen
	}
	if req.announce && db.Created() && db.Backend() != "memory" {
		fmt.Fprintf(stderr, "%s: created a new store at %s\n", req.cmd, dsn)
	}
	return db, dsn, exitOK
}

// attachIfServed returns a client of the server holding the bbolt store dsn, if a socket of
// one is there and answers; nil otherwise.
func attachIfServed(ctx context.Context, dsn string) *server.Client {
	path := mql.FilePath(dsn)
	if path == "" {
		return nil
	}
	for _, sock := range server.SocketPaths(path) {
		if fi, err := os.Stat(sock); err == nil && fi.Mode()&os.ModeSocket != 0 {
			if c, err := server.Attach(ctx, path); err == nil {
				return c
			}
			return nil
		}
	}
	return nil
}

// noStoreHint says what creates a store, after "no such store".
func noStoreHint(cmd string) string {
	return cmd + " never creates a store: check the name, or create it with a write (in a script, or at the REPL)"
}

// stdoutIsStore returns why the command must not run when its stdout is the store file at
// path ("" when it is not): the output would be written over the store. A shell that redirected
// stdout with > has already emptied the file before mql ran.
func stdoutIsStore(stdout io.Writer, path string) string {
	f, ok := stdout.(*os.File)
	if !ok {
		return ""
	}
	out, err := f.Stat()
	if err != nil {
		return ""
	}
	st, err := os.Stat(path)
	if err != nil || !os.SameFile(out, st) {
		return ""
	}
	msg := fmt.Sprintf("stdout is the store file %s itself: refusing to write over the store", path)
	if st.Size() == 0 {
		msg += fmt.Sprintf(". %s is now empty: the shell truncated it when it redirected stdout onto it (> %s), before mql ran, so what it held is gone unless you have a copy; mql did not create a new store there", path, path)
	}
	return msg + ". Redirect the output to another file (mql export writes to a file with -o FILE)"
}

// defaultDB is the embedded store's file: $MQL_DB, else $XDG_DATA_HOME/mql/default.db, else
// ~/.local/share/mql/default.db. With create, its directory is created (mode 0700) when it is
// the default; a command that only reads creates nothing.
func defaultDB(create bool) (string, error) {
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
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "default.db"), nil
}

// cmdFlags are a command's flags and its usage: -h or --help prints the usage on stdout and
// exits 0; a bad flag prints it on stderr and exits 2.
type cmdFlags struct {
	*flag.FlagSet
	synopsis       string
	stdout, stderr io.Writer
}

func newFlags(name, synopsis string, stdout, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // parse says what is wrong
	fs.Usage = func() {}
	return &cmdFlags{FlagSet: fs, synopsis: synopsis, stdout: stdout, stderr: stderr}
}

// usage writes the synopsis and the flags.
func (c *cmdFlags) usage(w io.Writer) {
	io.WriteString(w, c.synopsis)
	if !strings.Contains(c.synopsis, "Flags:") {
		fmt.Fprintln(w, "Flags:")
		c.printFlags(w)
	}
}

// printFlags lists the flags as the synopses write them: --name for a long one, -n for a
// letter (the flag package would write -name).
func (c *cmdFlags) printFlags(w io.Writer) {
	c.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		name, help := flag.UnquoteUsage(f)
		line := "  " + dash + f.Name
		if name != "" {
			line += " " + name
		}
		if g, ok := f.Value.(flag.Getter); ok && f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			if _, isString := g.Get().(string); isString {
				help += fmt.Sprintf(" (default %q)", f.DefValue)
			} else {
				help += fmt.Sprintf(" (default %v)", f.DefValue)
			}
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, help)
	})
}

// longFlag matches a long flag's name in the flag package's errors, which write it -name
// where the usage writes --name.
var longFlag = regexp.MustCompile(`(^| )-([A-Za-z0-9][A-Za-z0-9_-]+)`)

// tryHelp says, after a usage error, where the usage is: the whole of it would bury the error.
func (c *cmdFlags) tryHelp(w io.Writer) {
	fmt.Fprintf(w, "Run %q for the usage.\n", c.Name()+" --help")
}

// parse parses args, flags and positional arguments in any order; ok is false when the
// command is done (it printed its usage, or what is wrong with a flag), with the exit code.
func (c *cmdFlags) parse(args []string) (pos []string, code int, ok bool) {
	pos, err := parseInterleaved(c.FlagSet, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.usage(c.stdout)
		return nil, exitOK, false
	case err != nil:
		fmt.Fprintf(c.stderr, "%s: %s\n", c.Name(), longFlag.ReplaceAllString(err.Error(), "$1--$2"))
		c.tryHelp(c.stderr)
		return nil, exitUsage, false
	}
	return pos, 0, true
}

// parseDB is parse for a command whose only positional argument is its store: the store named
// by --db (dbFlag) or by that argument, "" for the default one.
func (c *cmdFlags) parseDB(args []string, dbFlag *string) (dsn string, code int, ok bool) {
	pos, code, ok := c.parse(args)
	if !ok {
		return "", code, false
	}
	dsn, _, err := takeDB(*dbFlag, pos, 0)
	if err != nil {
		fmt.Fprintf(c.stderr, "%s: %v\n", c.Name(), err)
		c.usage(c.stderr)
		return "", exitUsage, false
	}
	return dsn, 0, true
}
