// Package repl is mql's interactive shell and its output formats: the read-eval-print loop
// over a LineReader (line editing, history, completion, multi-line statements, meta commands,
// Ctrl-C), the same evaluation for scripts, and the table, tree, JSON and CSV renderings of
// statement results.
package repl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// Prompts of the interactive loop.
const (
	Prompt         = "mql> "
	PromptContinue = "  -> "
)

// Session evaluates statements: Local wraps a *query.Session on an open store, and a client
// attached to `mql serve` implements it over the server's local socket.
type Session interface {
	// Exec evaluates the statements of src in order, calling emit with each result rendered
	// in style st, and stops at the first error (see query.Session.Exec).
	Exec(ctx context.Context, name, src string, st output.Style, emit func(Rendered) error) error
	// Names returns completion candidates from the store.
	Names(ctx context.Context) ([]string, error)
	// Export writes what the acting principal may see as N-Quads (\export).
	Export(ctx context.Context, w io.Writer) error
	// Import loads an N-Quads export into the store, all or nothing (\import); a session that
	// may not import (one acting as a principal other than the owner) refuses.
	Import(ctx context.Context, r io.Reader) error
}

// Rendered is one statement's result, rendered in an output format.
type Rendered struct {
	Statement string // canonical source of the statement
	Text      string
	Write     bool // the result is a write's receipt
}

// Local is a Session evaluating statements with a *query.Session on an open store.
func Local(sess *query.Session) Session { return local{sess} }

type local struct{ *query.Session }

func (l local) Exec(ctx context.Context, name, src string, st output.Style, emit func(Rendered) error) error {
	return l.Session.Exec(ctx, name, src, func(r *query.Result) error {
		text, err := output.Render(r, st)
		if err != nil {
			return err
		}
		return emit(Rendered{Statement: r.Statement, Text: text, Write: r.Receipt != nil})
	})
}

// Watch follows the change feed as the session's principal (\watch).
func (l local) Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error {
	db := l.DB()
	r := db.Reader()
	if as := l.As(); as != "" {
		r = db.As(as)
	}
	after, err := db.Head(ctx)
	if err != nil {
		return err
	}
	return r.Follow(ctx, after, pattern, 0, emit)
}

// Errors of meta commands, matched with errors.Is.
var (
	// ErrMeta is returned for a meta command that does not exist or has a bad argument.
	ErrMeta = errors.New("bad meta command")
	// ErrTransfer is returned when \import or \export failed or was refused; an import that
	// fails imports nothing, and a refused export writes nothing.
	ErrTransfer = errors.New("import/export failed")
	// errQuit is returned by \quit.
	errQuit = errors.New("quit")
)

// Config configures a Shell.
type Config struct {
	Session Session // evaluates statements, and serves \import and \export
	// StoreFile is the file of the open store ("" for memory: and PostgreSQL): \export never
	// writes over it, whatever name it is given by (a symbolic or hard link).
	StoreFile string
	Stdout    io.Writer     // results, help
	Stderr    io.Writer     // errors, notices, timing
	Format    output.Format // FormatTable if empty
	// Terminal says that Stdout is a terminal: CSV cells are escaped as table cells are.
	Terminal bool
	// Echo prints each statement before its result, as in a transcript (mql demo).
	Echo bool
	// Interrupt, if set, delivers Ctrl-C (SIGINT) while a statement runs; it cancels the
	// statement through its context. Signals that arrive between statements are ignored.
	Interrupt <-chan os.Signal
}

// Shell runs statements and meta commands, interactively (Run) or as a script (RunScript).
type Shell struct {
	cfg    Config
	out    *output.Printer
	timing bool

	ctx   context.Context // of the running loop, for completion
	lr    LineReader      // of the running interactive loop, to ask before overwriting; nil in a script
	mu    sync.Mutex
	names []string // cached Session.Names
	stale bool     // names must be fetched again (after a write)
}

// New returns a shell.
func New(cfg Config) *Shell {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	s := &Shell{cfg: cfg, out: output.NewPrinter(cfg.Stdout, cfg.Format), stale: true, ctx: context.Background()}
	if cfg.Echo {
		s.out.SetEcho(Prompt)
	}
	s.out.SetTerminal(cfg.Terminal)
	return s
}

// Comment prints a line of narration between results (mql demo's script comments).
func (s *Shell) Comment(text string) error { return s.out.Comment(text) }

// Format is the current output format.
func (s *Shell) Format() output.Format { return s.out.Format() }

// SetFormat changes the output format.
func (s *Shell) SetFormat(f output.Format) { s.out.SetFormat(f) }

// SetTiming turns printing the time each statement took on or off.
func (s *Shell) SetTiming(on bool) { s.timing = on }

// Run is the interactive loop: it reads statements from lr until Ctrl-D, \quit, a second
// Ctrl-C on an empty line, or ctx ends. Statements may span lines: while the input so far
// ends inside a statement the continuation prompt is shown. Each statement (or each line of
// complete statements) becomes one history entry. Errors are reported on Stderr and the loop
// goes on; Run returns an error only when reading fails.
func (s *Shell) Run(ctx context.Context, lr LineReader) error {
	s.ctx = ctx
	s.lr = lr
	defer func() { s.lr = nil }()
	var buf strings.Builder
	interrupted := false // the last input was Ctrl-C on an empty line
	for ctx.Err() == nil {
		if buf.Len() == 0 {
			lr.SetPrompt(Prompt)
		} else {
			lr.SetPrompt(PromptContinue)
		}
		line, err := lr.Readline()
		switch {
		case errors.Is(err, ErrInterrupt):
			if buf.Len() == 0 && strings.TrimSpace(line) == "" {
				if interrupted {
					return nil
				}
				interrupted = true
				fmt.Fprintln(s.cfg.Stderr, "(to exit, press Ctrl-C again or Ctrl-D, or type \\quit)")
				continue
			}
			buf.Reset() // cancel the current input
			interrupted = false
			continue
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
		interrupted = false
		if buf.Len() == 0 {
			t := strings.TrimSpace(line)
			if t == "" {
				continue
			}
			if isMeta(t) {
				lr.AddHistory(t)
				err := s.meta(ctx, t)
				if errors.Is(err, errQuit) {
					return nil
				}
				if err != nil {
					fmt.Fprintln(s.cfg.Stderr, output.EscapeText(err.Error()))
				}
				continue
			}
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
		src := buf.String()
		if !query.Complete(src) {
			continue
		}
		buf.Reset()
		entry := historyEntry(src)
		if entry == "" {
			continue // only comments
		}
		lr.AddHistory(entry)
		s.out.StartInput()
		err = s.exec(ctx, "<stdin>", src)
		s.out.EndInput()
		if err != nil {
			s.reportError(src, err)
		}
	}
	return nil
}

// RunScript runs src as a script named name (a file name, "-c" or "<stdin>"), printing each
// result as it comes, and stops at the first error, which it returns (its message starts
// with name:line:col). A line that starts with \ or . where a statement could start is a
// meta command; \quit ends the script without error.
func (s *Shell) RunScript(ctx context.Context, name, src string) error {
	s.ctx = ctx
	for _, p := range splitScript(src) {
		if !p.meta {
			// Pad with newlines so that positions are those of the whole script.
			if err := s.exec(ctx, name, strings.Repeat("\n", p.line-1)+p.text); err != nil {
				return err
			}
			continue
		}
		err := s.meta(ctx, p.text)
		if errors.Is(err, errQuit) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d:%d: %w", name, p.line, p.col, err)
		}
	}
	return nil
}

// scriptPart is a run of statements or one meta command line of a script.
type scriptPart struct {
	meta      bool
	text      string // the statements, or the trimmed meta command line
	line, col int    // where it starts (col only for a meta command)
}

// splitScript cuts a script into statements and meta commands, as RunScript runs them: a line
// that starts with \ or . where a statement could start is a meta command.
func splitScript(src string) []scriptPart {
	var parts []scriptPart
	var chunk strings.Builder
	chunkLine := 1 // line at which chunk starts
	flush := func() {
		if text := chunk.String(); strings.TrimSpace(text) != "" {
			parts = append(parts, scriptPart{text: text, line: chunkLine})
		}
		chunk.Reset()
	}
	for i, line := range strings.SplitAfter(src, "\n") {
		if t := strings.TrimSpace(line); isMeta(t) && query.Complete(chunk.String()) {
			flush()
			parts = append(parts, scriptPart{meta: true, text: t, line: i + 1, col: strings.Index(line, t) + 1})
			chunkLine = i + 2
			continue
		}
		chunk.WriteString(line)
	}
	flush()
	return parts
}

// ScriptWrites reports whether running src as a script could change the store: it holds a
// write statement (principal, grant, assert, revoke, confirm, derive, review, decay) or an
// \import. A script that does not parse counts the statements that did, as RunScript runs
// those before the error. The command line opens the store for a script that only reads
// without creating it.
func ScriptWrites(src string) bool {
	for _, p := range splitScript(src) {
		if p.meta {
			if name := strings.ToLower(strings.Fields(p.text[1:])[0]); name == "import" || name == "i" || name == "read" {
				return true
			}
			continue
		}
		script, _ := query.Parse("", p.text)
		for _, st := range script.Stmts {
			if _, read := st.(query.ReadStmt); !read {
				return true
			}
		}
	}
	return false
}

// exec evaluates src, printing results; Ctrl-C (on cfg.Interrupt) cancels it.
// interruptible returns a context that Ctrl-C (cfg.Interrupt) cancels, and the function that
// ends it. Signals from before it was made do not cancel it.
func (s *Shell) interruptible(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := s.cfg.Interrupt
	if ch == nil {
		return ctx, cancel
	}
drain:
	for {
		select {
		case <-ch:
		default:
			break drain
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
		}
	}()
	return ctx, func() { close(done); cancel() }
}

func (s *Shell) exec(ctx context.Context, name, src string) error {
	ctx, stop := s.interruptible(ctx)
	defer stop()
	last := time.Now()
	err := s.cfg.Session.Exec(ctx, name, src, s.out.Style(), func(r Rendered) error {
		if r.Write {
			s.mu.Lock()
			s.stale = true
			s.mu.Unlock()
		}
		if err := s.out.PrintRendered(r.Statement, r.Text); err != nil {
			return err
		}
		if s.timing {
			now := time.Now()
			fmt.Fprintf(s.cfg.Stderr, "Time: %.3f ms\n", float64(now.Sub(last).Microseconds())/1000)
			last = now
		}
		return nil
	})
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w: statement cancelled", err)
	}
	return err
}

// reportError writes err to Stderr; for a syntax error it first shows the offending line of
// src with a caret under the column.
func (s *Shell) reportError(src string, err error) {
	line, col := 0, 0
	var qe *query.Error
	var pe interface{ Position() (int, int) } // a syntax error a server reported
	switch {
	case errors.As(err, &qe):
		line, col = qe.Pos.Line, qe.Pos.Column
	case errors.As(err, &pe) && isSyntax(err):
		line, col = pe.Position()
	}
	if lines := strings.Split(src, "\n"); line > 0 && line <= len(lines) {
		fmt.Fprint(s.cfg.Stderr, caretLines(lines[line-1], col))
	}
	fmt.Fprintln(s.cfg.Stderr, output.EscapeText(err.Error()))
}

// isSyntax reports whether err is a syntax error, here or on a server.
func isSyntax(err error) bool {
	var c interface{ SyntaxError() bool }
	return errors.Is(err, query.ErrSyntax) || (errors.As(err, &c) && c.SyntaxError())
}

// caretLines is line and, under it, a caret at column (1-based, in code points); tabs before
// the column are kept so the caret lines up.
func caretLines(line string, column int) string {
	rs := []rune(strings.TrimRight(line, "\r"))
	n := column - 1
	if n > len(rs) {
		n = len(rs)
	}
	if n < 0 {
		n = 0
	}
	var b strings.Builder
	b.WriteString(string(rs) + "\n")
	for _, r := range rs[:n] {
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
	}
	b.WriteString("^\n")
	return b.String()
}

// isMeta reports whether a trimmed line is a meta command: \word or .word.
func isMeta(t string) bool {
	if len(t) < 2 || (t[0] != '\\' && t[0] != '.') {
		return false
	}
	c := t[1]
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '?'
}

// meta runs a meta command line (with its \ or . prefix).
func (s *Shell) meta(ctx context.Context, line string) error {
	fields := strings.Fields(line[1:])
	name, args := strings.ToLower(fields[0]), fields[1:]
	arg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[1:]), fields[0]))
	w := s.cfg.Stdout
	switch name {
	case "help", "h", "?":
		if err := writeHelp(w, arg); err != nil {
			return fmt.Errorf("%w: %v", ErrMeta, err)
		}
	case "format", "f", "mode":
		if len(args) == 0 {
			fmt.Fprintf(w, "format is %s\n", s.Format())
			break
		}
		f, err := output.ParseFormat(args[0])
		if err != nil {
			return fmt.Errorf("%w: \\format: %v", ErrMeta, err)
		}
		s.SetFormat(f)
		fmt.Fprintf(s.cfg.Stderr, "format is %s\n", f)
	case "timing", "timer":
		switch {
		case len(args) == 0:
			s.timing = !s.timing
		case args[0] == "on":
			s.timing = true
		case args[0] == "off":
			s.timing = false
		default:
			return fmt.Errorf("%w: \\timing takes on or off, not %q", ErrMeta, args[0])
		}
		state := "off"
		if s.timing {
			state = "on"
		}
		fmt.Fprintf(s.cfg.Stderr, "timing is %s\n", state)
	case "import", "i", "read":
		if arg == "" {
			return fmt.Errorf("%w: \\import needs a file name", ErrMeta)
		}
		if err := s.importFile(ctx, arg); err != nil {
			return err
		}
		fmt.Fprintf(s.cfg.Stderr, "imported %s\n", arg)
	case "export", "e", "o":
		path, force := strings.CutPrefix(arg, "--force")
		if force && path != "" && path[0] != ' ' && path[0] != '\t' {
			path, force = arg, false // a file whose name starts with --force
		}
		path = strings.TrimSpace(path)
		if path == "" {
			return fmt.Errorf("%w: \\export needs a file name: \\export FILE, or \\export --force FILE to write over an existing file", ErrMeta)
		}
		done, err := s.exportFile(ctx, path, force)
		if err != nil {
			return err
		}
		if done {
			fmt.Fprintf(s.cfg.Stderr, "exported to %s\n", path)
		}
	case "watch", "w":
		if err := s.watch(ctx, arg); err != nil {
			return err
		}
	case "quit", "q", "exit":
		return errQuit
	default:
		return fmt.Errorf("%w: unknown meta command %q: \\help lists them", ErrMeta, line)
	}
	s.out.Note()
	return nil
}

// historyEntry is the history line for a statement: its lines joined by spaces, without
// comments. It is "" for input that holds only comments and blanks.
func historyEntry(src string) string {
	var parts []string
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(stripComment(l)); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, " ")
}

// stripComment removes a "--" comment from a line, outside string literals.
func stripComment(line string) string {
	inStr := false
	for i := 0; i < len(line); i++ {
		switch c := line[i]; {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && c == '-' && i+1 < len(line) && line[i+1] == '-':
			return line[:i]
		}
	}
	return line
}

// Watcher is a Session that can follow the change feed (\watch).
type Watcher interface {
	// Watch calls emit with each event of the transactions committed from now on that the
	// session's principal may see and that match pattern, until ctx ends.
	Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error
}

// watch runs \watch [PATTERN]: it prints the change feed until Ctrl-C.
func (s *Shell) watch(ctx context.Context, pattern string) error {
	w, ok := s.cfg.Session.(Watcher)
	if !ok {
		return fmt.Errorf("%w: \\watch needs a store to follow", ErrMeta)
	}
	ctx, stop := s.interruptible(ctx)
	defer stop()
	what := "every change"
	if pattern != "" {
		what = "changes to " + pattern
	}
	fmt.Fprintf(s.cfg.Stderr, "watching %s; Ctrl-C to stop\n", output.EscapeLine(what))
	err := w.Watch(ctx, pattern, func(e mql.Event) error {
		return s.out.PrintEvent(e)
	})
	if ctx.Err() != nil {
		return nil // Ctrl-C: the watch is over
	}
	return err
}
