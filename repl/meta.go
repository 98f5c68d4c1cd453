package repl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// metaCommands are the meta commands, for completion and "did you mean"; each may also be
// written with "." instead of "\".
var metaCommands = []string{
	"help", "format", "timing", "x", "pager", "o", "output", "i", "include", "read", "watch",
	"import", "export", "conninfo", "d", "dp", "quit", "q", "exit", "mode", "timer",
}

// maxInclude bounds how deep \i may nest, so that a script including itself stops.
const maxInclude = 16

// meta runs a meta command line (with its \ or . prefix).
func (s *Shell) meta(ctx context.Context, src Source) error {
	line := src.Text
	fields := strings.Fields(line[1:])
	name, args := strings.ToLower(fields[0]), fields[1:]
	arg := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line[1:]), fields[0]))
	w := s.screen()
	onOff := func(what string, cur bool) (bool, error) {
		switch {
		case len(args) == 0:
			return !cur, nil
		case args[0] == "on":
			return true, nil
		case args[0] == "off":
			return false, nil
		}
		return cur, fmt.Errorf("%w: \\%s takes on or off, not %q", ErrMeta, what, args[0])
	}
	state := func(on bool) string {
		if on {
			return "on"
		}
		return "off"
	}
	switch name {
	case "help", "h", "?":
		if err := writeHelp(w, arg); err != nil {
			return fmt.Errorf("%w: %v", ErrMeta, err)
		}
	case "format", "mode":
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
		on, err := onOff("timing", s.timing)
		if err != nil {
			return err
		}
		s.timing = on
		fmt.Fprintf(s.cfg.Stderr, "timing is %s\n", state(on))
	case "x", "expanded":
		on, err := onOff("x", s.expanded)
		if err != nil {
			return err
		}
		s.expanded = on
		fmt.Fprintf(s.cfg.Stderr, "expanded display is %s\n", state(on))
	case "pager":
		on, err := onOff("pager", s.paging)
		if err != nil {
			return err
		}
		if on && s.cfg.Pager == "" {
			return fmt.Errorf("%w: \\pager: there is no pager: output is not a terminal, or $PAGER is empty", ErrMeta)
		}
		s.paging = on
		fmt.Fprintf(s.cfg.Stderr, "pager is %s\n", state(on))
	case "o", "output":
		return s.setOutput(arg)
	case "i", "include", "read":
		if arg == "" {
			return fmt.Errorf("%w: \\i needs a script file: \\i FILE runs its statements", ErrMeta)
		}
		return s.include(ctx, arg)
	case "import":
		if arg == "" {
			return fmt.Errorf("%w: \\import needs a file name", ErrMeta)
		}
		if s.inTx() {
			return fmt.Errorf("%w: \\import inside a transaction: an import is a transaction of its own; commit or roll back first", ErrMeta)
		}
		if err := s.importFile(ctx, arg); err != nil {
			return err
		}
		fmt.Fprintf(s.cfg.Stderr, "imported %s\n", arg)
	case "export":
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
	case "conninfo":
		info, err := s.cfg.Session.Info(ctx)
		if err != nil {
			return err
		}
		writeConnInfo(w, info)
	case "d":
		if len(args) > 1 {
			return fmt.Errorf("%w: \\d takes one name at most", ErrMeta)
		}
		text := "predicates\nartifacts"
		if len(args) == 1 {
			text = "describe " + args[0]
		}
		return s.metaStatements(ctx, src, text)
	case "dp":
		if len(args) > 1 {
			return fmt.Errorf("%w: \\dp takes one principal name at most", ErrMeta)
		}
		text := "principals\ngrants"
		if len(args) == 1 {
			text = "principals " + args[0] + "\ngrants " + args[0]
		}
		return s.metaStatements(ctx, src, text)
	case "watch":
		if err := s.watch(ctx, arg); err != nil {
			return err
		}
	case "quit", "q", "exit":
		if begin, open := s.tx.Begun(); open && s.lr == nil {
			return fmt.Errorf("%w: \\quit inside a transaction (begun at %d:%d): end it with commit or rollback first", ErrMeta, begin.Line, begin.Column)
		}
		return ErrQuit
	default:
		msg := fmt.Sprintf("unknown meta command %s%s: ", line[:1], fields[0])
		if h := otherShells[name]; h != "" {
			msg += h
		} else {
			msg += `\help lists them`
			if c := closestMeta(name); c != "" {
				msg += fmt.Sprintf(" (did you mean %s%s?)", line[:1], c)
			}
		}
		return unknownMeta(msg)
	}
	s.out.Note()
	return nil
}

// unknownMeta is the error for a meta command that does not exist: it says so itself, so it
// matches ErrMeta without "bad meta command:" before it.
type unknownMeta string

func (e unknownMeta) Error() string        { return string(e) }
func (e unknownMeta) Is(target error) bool { return target == ErrMeta }

// otherShells says what mql calls the meta commands of psql and sqlite3 that it has not.
var otherShells = map[string]string{
	"dt":     `mql has no tables; \d lists the predicates and artifacts`,
	"tables": `mql has no tables; subjects and predicates list what the store holds, \d the predicates and artifacts`,
	"schema": `\d lists the predicates and artifacts, \d NAME describes one`,
	"du":     `\dp lists the principals and grants`,
}

func closestMeta(name string) string {
	best, bestD := "", 3
	for _, m := range metaCommands {
		if d := query.EditDistance(name, m); d < bestD && d < len(m) {
			best, bestD = m, d
		}
	}
	return best
}

// metaStatements runs the statements a meta command stands for (\d, \dp), as a script of its
// own, inside an open transaction too (they only read: they run at once).
func (s *Shell) metaStatements(ctx context.Context, src Source, text string) error {
	sc := NewScanner(src.Text, strings.NewReader(text))
	for {
		it, err := sc.Next()
		if err == io.EOF {
			return nil
		}
		if err == nil {
			err = s.exec(ctx, it.Src)
		}
		if err != nil {
			return err
		}
	}
}

// include runs a script file (\i): its statements as if typed here, errors named by the file.
func (s *Shell) include(ctx context.Context, path string) error {
	if s.depth >= maxInclude {
		return fmt.Errorf("%w: \\i %s: scripts nest more than %d deep (does one include itself?)", ErrMeta, path, maxInclude)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: \\i: %v", ErrScript, err)
	}
	defer f.Close()
	s.depth++
	defer func() { s.depth-- }()
	lr := s.lr
	s.lr = nil // a script's errors stop it and carry its positions
	defer func() { s.lr = lr }()
	return s.RunScript(ctx, path, f)
}

// setOutput sends results to a file (\o FILE) or back to standard output (\o). It never writes
// over an mql store, the open store or a directory; another file it replaces, as psql does.
func (s *Shell) setOutput(path string) error {
	if path == "" {
		if s.outFile == nil {
			fmt.Fprintln(s.cfg.Stderr, "output is standard output")
			return nil
		}
		name := s.outName
		s.closeOutput()
		fmt.Fprintf(s.cfg.Stderr, "output is standard output again (results were written to %s)\n", name)
		return nil
	}
	if strings.HasPrefix(path, "|") {
		return fmt.Errorf("%w: \\o |COMMAND is not supported: write to a file and run the command on it", ErrMeta)
	}
	if err := checkResultsFile(path, s.cfg.StoreFile); err != nil {
		return fmt.Errorf("%w: \\o: %w", ErrMeta, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("%w: \\o: %v", ErrMeta, err)
	}
	s.closeOutput()
	s.outFile, s.outName = f, path
	s.out.SetWriter(f)
	s.out.SetTerminal(false)
	fmt.Fprintf(s.cfg.Stderr, "output is %s\n", path)
	return nil
}

// closeOutput ends \o FILE.
func (s *Shell) closeOutput() {
	if s.outFile == nil {
		return
	}
	if err := s.outFile.Close(); err != nil {
		fmt.Fprintf(s.cfg.Stderr, "mql: writing %s: %v\n", s.outName, err)
	}
	s.outFile, s.outName = nil, ""
	s.out.SetWriter(s.cfg.Stdout)
	s.out.SetTerminal(s.cfg.Terminal)
}

func writeConnInfo(w io.Writer, in Info) {
	who := in.Principal
	if who == in.Owner {
		who += " (the owner)"
	} else {
		who += " (the owner is " + in.Owner + ")"
	}
	fmt.Fprintf(w, "store:     %s\nbackend:   %s\nprincipal: %s\nhead:      tx %d\n", output.EscapeText(in.Store), in.Backend, output.EscapeText(who), in.Head)
	if in.Server != "" {
		fmt.Fprintf(w, "through:   mql serve, at %s\n", output.EscapeText(in.Server))
	}
}

// screen is where meta commands write: standard output, or the buffer of the pager.
func (s *Shell) screen() io.Writer {
	if s.pagerBuf != nil {
		return s.pagerBuf
	}
	return s.cfg.Stdout
}

// paged runs fn, the handling of one input at the prompt; what it prints to standard output
// goes through the pager when it is longer than the terminal (and \pager is on).
func (s *Shell) paged(fn func()) {
	if !s.paging || s.cfg.Pager == "" || s.cfg.Rows == nil || s.outFile != nil || s.pagerBuf != nil {
		fn()
		return
	}
	buf := &bytes.Buffer{}
	s.pagerBuf = buf
	s.out.SetWriter(buf)
	defer func() {
		s.pagerBuf = nil
		if s.outFile == nil {
			s.out.SetWriter(s.cfg.Stdout)
		}
		s.show(buf.Bytes())
		// The times of what was held for the pager follow it, as they follow a result
		// printed at once.
		io.WriteString(s.cfg.Stderr, s.timings.String())
		s.timings.Reset()
	}()
	fn()
}

// show writes what one input printed: through the pager when it is longer than the terminal.
func (s *Shell) show(text []byte) {
	if rows := s.cfg.Rows(); rows > 0 && bytes.Count(text, []byte("\n")) >= rows-1 {
		err := s.page(text)
		if err == nil {
			return
		}
		fmt.Fprintf(s.cfg.Stderr, "mql: pager %q: %v\n", s.cfg.Pager, err)
	}
	s.cfg.Stdout.Write(text)
}

// page shows text through the pager command.
func (s *Shell) page(text []byte) error {
	cmd := exec.Command("/bin/sh", "-c", s.cfg.Pager)
	cmd.Stdin = bytes.NewReader(text)
	cmd.Stdout, cmd.Stderr = s.cfg.Stdout, s.cfg.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // the pager ran (less quits with a status when its output is cut short)
	}
	return err
}
