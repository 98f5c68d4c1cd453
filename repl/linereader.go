package repl

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/chzyer/readline"
	"golang.org/x/sys/unix"
)

// ErrInterrupt is returned by LineReader.Readline when the user pressed Ctrl-C; the line
// returned with it is what had been typed so far.
var ErrInterrupt = errors.New("interrupt")

// LineReader reads the lines of an interactive session. It keeps the terminal library behind
// a small interface, so that the loop can be tested with a fake and the library replaced.
type LineReader interface {
	// Readline shows the prompt and returns the next line without its newline. It returns
	// io.EOF at the end of input (Ctrl-D on an empty line) and ErrInterrupt, with the partial
	// line, on Ctrl-C.
	Readline() (string, error)
	// SetPrompt sets the prompt shown by the next Readline.
	SetPrompt(prompt string)
	// AddHistory records one history entry (one statement, on one line).
	AddHistory(entry string) error
	// Close releases the terminal.
	Close() error
}

// Plain is a LineReader over any reader, without line editing, completion or a history file:
// for input that is not a terminal, and for tests.
type Plain struct {
	r       *bufio.Reader
	prompt  io.Writer // where the prompt is written, nil for none
	mu      sync.Mutex
	p       string
	History []string // entries added with AddHistory
}

// NewPlain returns a LineReader reading lines from r. If prompt is not nil, the prompt is
// written to it before each line.
func NewPlain(r io.Reader, prompt io.Writer) *Plain {
	return &Plain{r: bufio.NewReader(r), prompt: prompt}
}

// Readline returns the next line.
func (p *Plain) Readline() (string, error) {
	p.mu.Lock()
	if p.prompt != nil {
		io.WriteString(p.prompt, p.p)
	}
	p.mu.Unlock()
	line, err := p.r.ReadString('\n')
	if err != nil && (err != io.EOF || line == "") {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// SetPrompt sets the prompt.
func (p *Plain) SetPrompt(s string) { p.mu.Lock(); p.p = s; p.mu.Unlock() }

// AddHistory appends to p.History.
func (p *Plain) AddHistory(s string) error {
	p.mu.Lock()
	p.History = append(p.History, s)
	p.mu.Unlock()
	return nil
}

// Close does nothing.
func (p *Plain) Close() error { return nil }

// TerminalConfig configures NewTerminal.
type TerminalConfig struct {
	Prompt string
	// HistoryFile is where entries are loaded from and appended to ("" for no file); see
	// HistoryPath. It is created with mode 0600, its directory with 0700.
	HistoryFile string
	// Complete returns completion candidates for the line up to the cursor; see
	// Shell.Complete. Nil disables completion.
	Complete func(line []rune, pos int) ([][]rune, int)
	Stdin    io.Reader // nil: os.Stdin
	Stdout   io.Writer // nil: os.Stdout
	Stderr   io.Writer // nil: os.Stderr
}

// Terminal is the LineReader for a terminal, on github.com/chzyer/readline: line editing,
// history (Up/Down, Ctrl-R), Tab completion.
type Terminal struct {
	rl   *readline.Instance
	hist *History
}

// NewTerminal returns a LineReader for a terminal.
func NewTerminal(cfg TerminalConfig) (*Terminal, error) {
	rc := &readline.Config{
		Prompt:                 cfg.Prompt,
		HistoryLimit:           historyLimit,
		DisableAutoSaveHistory: true, // one entry per statement, added by the loop
		HistorySearchFold:      true,
		Stdout:                 cfg.Stdout,
		Stderr:                 cfg.Stderr,
	}
	if cfg.Stdin != nil {
		rc.Stdin = readline.NewCancelableStdin(cfg.Stdin)
	}
	if cfg.Complete != nil {
		rc.AutoComplete = completerFunc(cfg.Complete)
	}
	// One Ctrl-C cancels the line even while a completion list is open: readline would only
	// close the list (and, once a candidate is being selected, swallow the Ctrl-C).
	var rl *readline.Instance
	rc.FuncFilterInputRune = func(r rune) (rune, bool) {
		if r == readline.CharInterrupt && rl != nil && rl.Operation.IsInCompleteMode() {
			rl.Operation.ExitCompleteMode(false)
		}
		return r, true
	}
	rl, err := readline.NewEx(rc)
	if err != nil {
		return nil, err
	}
	t := &Terminal{rl: rl}
	if cfg.HistoryFile != "" {
		h, err := OpenHistory(cfg.HistoryFile)
		if err != nil {
			rl.Close()
			return nil, err
		}
		t.hist = h
		for _, e := range h.Entries() {
			rl.SaveHistory(e) // no history file is set: this only fills the in-memory list
		}
	}
	return t, nil
}

type completerFunc func(line []rune, pos int) ([][]rune, int)

func (f completerFunc) Do(line []rune, pos int) ([][]rune, int) { return f(line, pos) }

// Readline reads a line with editing.
func (t *Terminal) Readline() (string, error) {
	line, err := t.rl.Readline()
	if errors.Is(err, readline.ErrInterrupt) {
		return line, ErrInterrupt
	}
	return line, err
}

// SetPrompt sets the prompt.
func (t *Terminal) SetPrompt(s string) { t.rl.SetPrompt(s) }

// AddHistory records an entry in memory and in the history file.
func (t *Terminal) AddHistory(s string) error {
	if err := t.rl.SaveHistory(s); err != nil {
		return err
	}
	if t.hist != nil {
		return t.hist.Append(s)
	}
	return nil
}

// Close restores the terminal.
func (t *Terminal) Close() error {
	err := t.rl.Close()
	if t.hist != nil {
		if herr := t.hist.Close(); err == nil {
			err = herr
		}
	}
	return err
}

// IsTerminal reports whether fd is a terminal.
func IsTerminal(fd uintptr) bool { return readline.IsTerminal(int(fd)) }

// TerminalRows is the height of the terminal fd, in rows (0 if it cannot be told).
func TerminalRows(fd uintptr) int {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Row)
}
