// Package repl is mql's interactive shell: the read-eval-print loop over a LineReader (line
// editing, history, completion, multi-line statements, meta commands, Ctrl-C, a pager), the
// same evaluation for scripts read a statement at a time, and transactions (begin … commit)
// gathered and sent as one.
package repl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// Prompts of the interactive loop; inside a transaction a * marks the prompt, as in psql.
const (
	Prompt           = "mql> "
	PromptContinue   = "  -> "
	PromptTx         = "mql*> "
	PromptTxContinue = "  *> "
)

// Errors of meta commands and scripts, matched with errors.Is.
var (
	// ErrMeta is returned for a meta command that does not exist or has a bad argument.
	ErrMeta = errors.New("bad meta command")
	// ErrTransfer is returned when \import or \export failed or was refused; an import that
	// fails imports nothing, and a refused export writes nothing.
	ErrTransfer = errors.New("import/export failed")
	// ErrQuit is returned by RunScript when the script ran \quit: nothing more is to run.
	ErrQuit = errors.New("quit")
	// ErrScript is returned when a script file that \i names cannot be read.
	ErrScript = errors.New("cannot read the script")
)

// Config configures a Shell.
type Config struct {
	Session Session // evaluates statements, and serves \import, \export and \conninfo
	// StoreFile is the file of the open store ("" for memory: and PostgreSQL): \export and \o
	// never write over it, whatever name it is given by (a symbolic or hard link).
	StoreFile string
	Stdout    io.Writer     // results, help
	Stderr    io.Writer     // errors, notices, timing
	Format    output.Format // FormatTable if empty
	// Terminal says that Stdout is a terminal: CSV cells are escaped as table cells are, and
	// the interactive loop may page long output.
	Terminal bool
	// Echo prints each statement before its result, as in a transcript (mql demo).
	Echo bool
	// Interrupt, if set, delivers Ctrl-C (SIGINT) while a statement runs; it cancels the
	// statement through its context. Signals that arrive between statements are ignored.
	Interrupt <-chan os.Signal
	// Single runs every script given to RunScript, up to Finish, as one transaction (-1).
	Single bool
	// Pager is the command long output of the interactive loop goes through ("" for none),
	// and Rows the terminal's height; see pager.go.
	Pager string
	Rows  func() int
}

// Shell runs statements and meta commands, interactively (Run) or as a script (RunScript).
type Shell struct {
	cfg      Config
	out      *output.Printer
	outFile  *os.File // \o FILE: results go there
	outName  string
	timing   bool
	expanded bool
	noted    bool          // multiLineNote was shown
	paging   bool          // \pager on
	tx       query.TxBlock // begin … commit, by the language's rules
	block    openBlock     // what the open transaction gathered, while tx is in one
	depth    int           // \i nesting
	errText  string        // the text an error at commit refers to, at the prompt
	pagerBuf *bytes.Buffer // what an input printed, while the pager waits for it
	timings  bytes.Buffer  // the Time: lines of that input, printed after it

	ctx   context.Context // of the running loop, for completion
	lr    LineReader      // of the running interactive loop, to ask before overwriting; nil in a script
	mu    sync.Mutex
	names Names
	stale bool // names must be fetched again (after a write)
}

// openBlock is a transaction being gathered: its statements run together at commit.
type openBlock struct {
	srcs []Source
	// At the prompt every input starts at line 1; the statements of a transaction are
	// renumbered as lines of the block, whose text shows where an error at commit is.
	text  strings.Builder
	lines int
}

// renumber makes src the next lines of the block typed at the prompt.
func (b *openBlock) renumber(src Source) Source {
	src = src.At(b.lines+1, 1)
	b.text.WriteString(src.Text)
	if !strings.HasSuffix(src.Text, "\n") {
		b.text.WriteByte('\n')
	}
	b.lines += strings.Count(strings.TrimSuffix(src.Text, "\n"), "\n") + 1
	return src
}

// New returns a shell.
func New(cfg Config) *Shell {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	s := &Shell{cfg: cfg, out: output.NewPrinter(cfg.Stdout, cfg.Format), stale: true, ctx: context.Background(), paging: cfg.Pager != ""}
	if cfg.Echo {
		s.out.SetEcho(Prompt)
	}
	s.out.SetTerminal(cfg.Terminal)
	if cfg.Single {
		// The scripts are one transaction, which Finish commits; a new block takes any begin.
		s.tx.Next(&query.Begin{Start: query.Position{Filename: "-1", Line: 1, Column: 1}})
	}
	return s
}

// inTx reports whether a transaction is open: its statements are being gathered.
func (s *Shell) inTx() bool {
	_, open := s.tx.Begun()
	return open
}

// Comment prints a line of narration between results (mql demo's script comments).
func (s *Shell) Comment(text string) error { return s.out.Comment(text) }

// Format is the current output format.
func (s *Shell) Format() output.Format { return s.out.Format() }

// SetFormat changes the output format.
func (s *Shell) SetFormat(f output.Format) { s.out.SetFormat(f) }

// style is how results are rendered now.
func (s *Shell) style() output.Style {
	st := s.out.Style()
	st.Expanded = s.expanded
	return st
}

// Run is the interactive loop: it reads statements from lr until Ctrl-D, \quit (or quit,
// exit), a second Ctrl-C on an empty line, or ctx ends. Statements may span lines: while the
// input so far ends inside a statement the continuation prompt is shown. Each statement (or
// each line of complete statements) becomes one history entry. Errors are reported on Stderr
// and the loop goes on; Run returns an error only when reading fails.
func (s *Shell) Run(ctx context.Context, lr LineReader) error {
	s.ctx = ctx
	s.lr = lr
	defer func() { s.lr = nil }()
	var buf strings.Builder
	interrupted := false // the last input was Ctrl-C on an empty line
	for ctx.Err() == nil {
		switch {
		case buf.Len() == 0 && s.inTx():
			lr.SetPrompt(PromptTx)
		case buf.Len() == 0:
			lr.SetPrompt(Prompt)
		case s.inTx():
			lr.SetPrompt(PromptTxContinue)
		default:
			lr.SetPrompt(PromptContinue)
		}
		line, err := lr.Readline()
		switch {
		case errors.Is(err, ErrInterrupt):
			if buf.Len() == 0 && strings.TrimSpace(line) == "" {
				if interrupted {
					return s.leave()
				}
				interrupted = true
				fmt.Fprintln(s.cfg.Stderr, "(to exit, press Ctrl-C again or Ctrl-D, or type \\quit)")
				continue
			}
			buf.Reset() // cancel the current input
			interrupted = false
			continue
		case errors.Is(err, io.EOF):
			if historyEntry(buf.String()) != "" {
				fmt.Fprintln(s.cfg.Stderr, `(the statement being typed was not run: a statement of several lines runs at ";" or an empty line)`)
			}
			return s.leave()
		case err != nil:
			return err
		}
		interrupted = false
		if buf.Len() == 0 {
			t := strings.TrimSpace(line)
			if t == "" {
				continue
			}
			if word := bareWord(t); word != "" {
				lr.AddHistory(t)
				if word == "help" {
					s.paged(func() { writeHelp(s.screen(), "") })
					continue
				}
				return s.leave()
			}
			if isMeta(t) {
				lr.AddHistory(t)
				var err error
				s.out.StartInput() // its results follow the prompt, as a statement's do
				s.paged(func() { err = s.meta(ctx, Source{Name: "<stdin>", Text: t, Line: 1, Col: 1}) })
				if errors.Is(err, ErrQuit) {
					return s.leave()
				}
				if err != nil {
					fmt.Fprintln(s.cfg.Stderr, output.EscapeText(err.Error()))
				}
				continue
			}
		}
		first := buf.Len() == 0
		buf.WriteString(line)
		buf.WriteByte('\n')
		src := buf.String()
		_, perr, complete := query.ParseComplete("<stdin>", src, 1, 1)
		if !complete {
			continue
		}
		// The prompt cannot see the next line, which may go on with more clauses: a
		// statement typed over several lines runs at ";" or an empty line, not at the end of
		// the line that completes it. One that cannot be right whatever follows is reported
		// at once.
		if !first && perr == nil && !endsInput(line) {
			if !s.noted {
				s.noted = true
				fmt.Fprintln(s.cfg.Stderr, multiLineNote)
			}
			continue
		}
		buf.Reset()
		entry := historyEntry(src)
		if entry == "" {
			continue // only comments
		}
		lr.AddHistory(entry)
		s.out.StartInput()
		s.errText = ""
		s.paged(func() {
			sc := NewScanner("<stdin>", strings.NewReader(src))
			for {
				it, err := sc.Next()
				if err == io.EOF {
					break
				}
				if err == nil {
					err = s.Item(ctx, it)
				}
				if err != nil {
					s.reportError(src, err)
					if isSyntax(err) && query.IsClauseKeyword(stmtKind(it.Src.Text)) {
						fmt.Fprintln(s.cfg.Stderr, clauseHint)
					}
					break
				}
			}
		})
		s.out.EndInput()
	}
	return nil
}

// What the prompt says about statements of several lines: once, when one first waits for its
// end; and after a line that begins with a clause, when no statement is open.
const (
	multiLineNote = `(a statement typed over several lines runs at ";" or an empty line: until then, more lines may add clauses)`
	clauseHint    = `(at the prompt, a line that is a complete statement runs at Enter; to give a statement more lines, break its first line where it cannot end, before its "by", and end it with ";" or an empty line)`
)

// endsInput reports whether the line typed ends a statement of several lines: it is empty, or
// ends with ";".
func endsInput(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || strings.HasSuffix(strings.TrimSpace(stripComment(t)), ";")
}

// leave ends the interactive loop, saying what an open transaction loses.
func (s *Shell) leave() error {
	if s.inTx() {
		fmt.Fprintf(s.cfg.Stderr, "the transaction begun with begin was not committed: its %s were not run\n", statements(len(s.block.srcs)))
		s.tx, s.block = query.TxBlock{}, openBlock{}
	}
	s.closeOutput()
	return nil
}

// bareWord recognises what a newcomer types to get help or to leave: help, quit or exit alone
// on the line (none of them is a statement).
func bareWord(t string) string {
	switch w := strings.TrimSuffix(strings.TrimSpace(t), ";"); w {
	case "help", "quit", "exit":
		return w
	}
	return ""
}

// RunScript runs the script read from r, named name (a file name, -c or <stdin>), a statement
// at a time as it arrives, printing each result as it comes, and stops at the first error,
// which it returns (its message starts with name:line:col). It returns ErrQuit when the script
// ran \quit. Statements between begin and commit run together at the commit; a script may end
// inside a transaction only if Finish ends it (see Finish).
func (s *Shell) RunScript(ctx context.Context, name string, r io.Reader) error {
	return s.RunItems(ctx, NewScanner(name, r).Next)
}

// RunItems is RunScript for a script whose items next returns (io.EOF at the end).
func (s *Shell) RunItems(ctx context.Context, next func() (Item, error)) error {
	s.ctx = ctx
	for {
		it, err := next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := s.Item(ctx, it); err != nil {
			return err
		}
	}
}

// RunStartup runs the startup file at path (~/.mqlrc or $XDG_CONFIG_HOME/mql/mqlrc) before the
// prompt: meta commands such as \format and \timing, and statements. An error is reported and
// the rest of the file skipped; the prompt comes all the same.
func (s *Shell) RunStartup(ctx context.Context, path string) {
	f, err := os.Open(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			fmt.Fprintf(s.cfg.Stderr, "mql: startup file: %v\n", err)
		}
		return
	}
	defer f.Close()
	lr := s.lr
	s.lr = nil
	defer func() { s.lr = lr }()
	if err := s.RunScript(ctx, path, f); err != nil && !errors.Is(err, ErrQuit) {
		fmt.Fprintf(s.cfg.Stderr, "mql: startup file: %s\n", output.EscapeText(err.Error()))
	}
	s.out.StartInput()
}

// StartupPath is the startup file the interactive loop reads: $MQLRC if set, else
// $XDG_CONFIG_HOME/mql/mqlrc (~/.config/mql/mqlrc) if it exists, else ~/.mqlrc. getenv is
// os.Getenv, or a stand-in in tests.
func StartupPath(getenv func(string) string) string {
	if p := getenv("MQLRC"); p != "" {
		return p
	}
	home := getenv("HOME")
	cfg := getenv("XDG_CONFIG_HOME")
	if cfg == "" || !filepath.IsAbs(cfg) {
		if home == "" {
			return ""
		}
		cfg = filepath.Join(home, ".config")
	}
	if p := filepath.Join(cfg, "mql", "mqlrc"); fileExists(p) {
		return p
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".mqlrc")
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// Finish ends the scripts: with Config.Single it commits the one transaction they formed;
// otherwise a transaction still open is an error (nothing of it was written).
func (s *Shell) Finish(ctx context.Context) error {
	defer s.closeOutput()
	begin, open := s.tx.Begun()
	if open && s.cfg.Single {
		s.tx.Next(&query.Commit{Start: begin})
		return s.commit(ctx, begin)
	}
	s.block = openBlock{}
	return s.tx.End()
}

func srcPos(src Source) query.Position {
	return query.Position{Filename: src.Name, Line: src.Line, Column: src.Col}
}

// Item runs one statement or meta command of a script or of the interactive loop.
func (s *Shell) Item(ctx context.Context, it Item) error {
	if it.Meta {
		err := s.meta(ctx, it.Src)
		if err != nil && !errors.Is(err, ErrQuit) && s.lr == nil && !strings.HasPrefix(err.Error(), it.Src.Name+":") {
			err = fmt.Errorf("%s:%d:%d: %w", it.Src.Name, it.Src.Line, it.Src.Col, err)
		}
		return err
	}
	if err := commandError(it.Src); err != nil {
		return err
	}
	switch stmtKind(it.Src.Text) {
	case "begin", "commit", "rollback":
		script, err := query.ParseAt(it.Src.Name, it.Src.Text, it.Src.Line, it.Src.Col)
		if err != nil {
			return err
		}
		if len(script.Stmts) == 1 {
			return s.control(ctx, it.Src, script.Stmts[0])
		}
	}
	if s.inTx() {
		if s.lr != nil {
			// At the prompt, a statement that does not parse is refused now, not at commit; so is
			// one no transaction may hold (a read for a run): refused at the commit, it would
			// take every statement gathered with it.
			script, err := query.ParseAt(it.Src.Name, it.Src.Text, it.Src.Line, it.Src.Col)
			if err != nil {
				return err
			}
			reads := len(script.Stmts) > 0
			for _, st := range script.Stmts {
				if _, err := s.tx.Next(st); err != nil {
					return fmt.Errorf("%w (the transaction is still open)", err)
				}
				reads = reads && query.IsRead(st)
			}
			if reads {
				// Gathered, it would be answered only at the commit, long after it was typed.
				if n := len(s.block.srcs); n == 0 {
					fmt.Fprintln(s.cfg.Stderr, "(answered now, from the store as committed: a read typed inside a transaction is not part of it)")
				} else {
					verb := "run"
					if n == 1 {
						verb = "runs"
					}
					fmt.Fprintf(s.cfg.Stderr, "(answered now, from the store as committed: it does not see the %s gathered since begin, which %s at the commit)\n", statements(n), verb)
				}
				return s.exec(ctx, it.Src)
			}
		}
		src := it.Src
		if s.lr != nil {
			src = s.block.renumber(src)
		}
		s.block.srcs = append(s.block.srcs, src)
		return nil
	}
	return s.exec(ctx, it.Src)
}

// control runs begin, commit and rollback: the statements between them are gathered and sent
// as one transaction at the commit.
func (s *Shell) control(ctx context.Context, src Source, st query.Stmt) error {
	if s.cfg.Single {
		msg := st.String() + " in a script run with -1, which commits once, at its end"
		if _, ok := st.(*query.Begin); ok {
			msg = "begin in a script run with -1, which is one transaction already"
		}
		return &query.Error{Pos: st.Pos(), Msg: msg}
	}
	begin, _ := s.tx.Begun()
	step, err := s.tx.Next(st)
	if err != nil {
		return err
	}
	switch step {
	case query.TxBegin:
		s.block = openBlock{}
		if s.lr != nil {
			s.block.renumber(src)
			fmt.Fprintln(s.cfg.Stderr, "begin: the statements up to commit run together, as one transaction, at the commit (rollback discards them)")
		}
	case query.TxRollback:
		n := len(s.block.srcs)
		s.block = openBlock{}
		return s.printLocal(&query.Result{Kind: "rollback", Statement: "rollback", Control: &query.Control{Statements: n}})
	case query.TxCommit:
		return s.commit(ctx, begin)
	}
	return nil
}

// commit sends the statements of the transaction begun at begin, just ended, as one.
func (s *Shell) commit(ctx context.Context, begin query.Position) error {
	srcs := s.block.srcs
	if s.lr != nil {
		s.errText = s.block.text.String()
	}
	s.block = openBlock{}
	if len(srcs) == 0 {
		return s.printLocal(&query.Result{Kind: "commit", Statement: "commit", Control: &query.Control{}})
	}
	return s.run(ctx, func(ctx context.Context, emit func(Rendered) error) error {
		return s.cfg.Session.ExecTx(ctx, Source{Name: begin.Filename, Line: begin.Line, Col: begin.Column}, srcs, s.style(), emit)
	})
}

// printLocal prints a result the shell made itself.
func (s *Shell) printLocal(r *query.Result) error {
	text, err := output.Render(r, s.style())
	if err != nil {
		return err
	}
	return s.out.PrintRendered(r.Statement, text)
}

// exec evaluates src, printing results; Ctrl-C (on cfg.Interrupt) cancels it.
func (s *Shell) exec(ctx context.Context, src Source) error {
	return s.run(ctx, func(ctx context.Context, emit func(Rendered) error) error {
		return s.cfg.Session.Exec(ctx, src, s.style(), emit)
	})
}

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

// run runs an evaluation, printing its results as they come, cancelled by Ctrl-C.
func (s *Shell) run(ctx context.Context, eval func(context.Context, func(Rendered) error) error) error {
	ctx, stop := s.interruptible(ctx)
	defer stop()
	last := time.Now()
	err := eval(ctx, func(r Rendered) error {
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
			w := s.cfg.Stderr
			if s.pagerBuf != nil {
				w = &s.timings // printed after the output held for the pager
			}
			fmt.Fprintf(w, "Time: %.3f ms\n", float64(now.Sub(last).Microseconds())/1000)
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
	if s.errText != "" {
		src, s.errText = s.errText, ""
	}
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
	return len(t) >= 2 && (t[0] == '\\' || t[0] == '.') && isMetaStart(t[1])
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

func statements(n int) string {
	if n == 1 {
		return "1 statement"
	}
	return fmt.Sprintf("%d statements", n)
}
