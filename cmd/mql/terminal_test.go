package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// raceBuild is set when the tests run with the race detector (race_test.go).
var raceBuild bool

// console collects what the program under the pseudo-terminal writes.
// leaves waits for the command to exit with status 0, as how (Ctrl-D, quit) asked it to.
func (c *console) leaves(exited <-chan error, how string) {
	c.t.Helper()
	select {
	case err := <-exited:
		if err != nil {
			c.t.Fatalf("exit: %v", err)
		}
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s did not exit", how)
	}
}

// terminalBuild builds the binary, with the race detector if the tests run with it, into a
// directory of the test's, and returns both; it skips the test where there are no
// pseudo-terminals.
func terminalBuild(t *testing.T) (dir, bin string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no pseudo-terminals")
	}
	dir = t.TempDir()
	bin = filepath.Join(dir, "mql")
	args := []string{"build", "-o", bin}
	if raceBuild {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return dir, bin
}

// startConsole starts cmd on a pseudo-terminal rows high and 200 wide, and reads what it
// writes there; exited gets its end. When the test ends, the command is killed if it still
// runs, and the terminal is closed.
func startConsole(t *testing.T, cmd *exec.Cmd, rows uint16) (c *console, exited chan error) {
	t.Helper()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	c = &console{t: t, f: f, done: make(chan struct{})}
	go c.loop()
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
		f.Close()
	})
	return c, exited
}

type console struct {
	t    *testing.T
	f    *os.File
	mu   sync.Mutex
	buf  bytes.Buffer
	mark int // expect searches from here
	done chan struct{}
}

func (c *console) loop() {
	defer close(c.done)
	b := make([]byte, 4096)
	for {
		n, err := c.f.Read(b)
		c.mu.Lock()
		c.buf.Write(b[:n])
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (c *console) send(s string) {
	c.t.Helper()
	if _, err := c.f.WriteString(s); err != nil {
		c.t.Fatalf("writing %q: %v", s, err)
	}
}

// ansi matches terminal escape sequences, which readline sprinkles through its output.
var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`)

// expect waits until the output after the last match contains want (escape sequences
// removed) and moves the mark past it.
func (c *console) expect(want string) {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		raw := c.buf.String()[c.mark:]
		c.mu.Unlock()
		clean := ansi.ReplaceAllString(raw, "")
		if i := strings.Index(clean, want); i >= 0 {
			// Advance the mark past the match in the raw output: find the shortest raw
			// prefix whose cleaned form holds the match.
			for j := 1; j <= len(raw); j++ {
				if strings.Contains(ansi.ReplaceAllString(raw[:j], ""), want) {
					c.mu.Lock()
					c.mark += j
					c.mu.Unlock()
					break
				}
			}
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %q; output since the last match:\n%q", want, clean)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTerminal drives the real binary under a pseudo-terminal: completion, a statement over
// two lines, Ctrl-C mid-input, the history file, and Ctrl-D to leave.
func TestTerminal(t *testing.T) {
	dir, bin := terminalBuild(t)
	hist := filepath.Join(dir, "state", "hist")
	store := filepath.Join(dir, "term.db")
	cmd := exec.Command(bin, store)
	cmd.Env = append(os.Environ(),
		"HOME="+dir, "TERM=xterm", "MQL_HISTFILE="+hist, testClockEnv+"="+testClockStart,
		"XDG_STATE_HOME="+filepath.Join(dir, "xdg-state"))
	c, exited := startConsole(t, cmd, 40)

	// Only a write creates a store: the REPL starts on a missing one without creating it,
	// refuses a read, and creates it at the first write (issue 23, item 13).
	c.expect("no store there yet; the first write creates it. Type \\help for help")
	c.expect("mql> ")
	c.send("stats\r")
	c.expect("no store at " + store + " yet: there is nothing to read; the first write creates it")
	c.expect("mql> ")
	if _, err := os.Stat(store); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the REPL made %s before a write: %v", store, err)
	}
	c.send("principal alice user\r")
	c.expect("mql: created a new store at " + store)
	c.expect("principal alice  recorded  (tx 2)")
	c.expect("mql> ")

	// Tab completes a keyword: "sta" alone would not parse.
	c.send("sta\t")
	c.expect("stats")
	c.send("\r")
	c.expect("transactions")
	c.expect("mql> ")

	// A statement over three lines, with the continuation prompt: the line that completes it
	// does not end it, as the next may add a clause; an empty line does (issue 23, item 7).
	c.send("assert Klarveld.price_per_seat = 44\r")
	c.expect("  -> ")
	c.send("by alice\r")
	c.expect(`runs at ";" or an empty line`)
	c.expect("  -> ")
	c.send("from \"src:k0\"\r")
	c.expect("  -> ")
	c.send("\r")
	c.expect("Klarveld.price_per_seat@1  live  (tx 3)")
	c.expect("mql> ")

	// Tab completes names from the store, a part at a time.
	c.send("why Kla\t")
	c.expect("Klarveld")
	c.send(".pri\t")
	c.expect("price_per_seat")
	c.send("\r")
	c.expect("Klarveld.price_per_seat@1 = 44")
	c.expect("from    src:k0")
	c.expect("mql> ")

	// Ctrl-C mid-input discards it, in a continuation line too, and gives a fresh prompt.
	c.send("live Kl")
	c.send("\x03")
	c.expect("mql> ")
	c.send("assert X.y =\r")
	c.expect("  -> ")
	c.send("\x03")
	c.expect("mql> ")
	c.send("live Klarveld\r") // runs alone: nothing of the cancelled input is left
	c.expect("Klarveld.price_per_seat@1  44")
	c.expect("mql> ")

	// A syntax error shows the line and a caret.
	c.send("live Klarveld where value = = 1\r")
	c.expect("                            ^")
	c.expect("<stdin>:1:29:")
	c.expect("mql> ")

	// Ctrl-D leaves with status 0.
	c.send("\x04")
	c.leaves(exited, "Ctrl-D")

	<-c.done
	if os.Getenv("MQL_TERM_DEBUG") != "" {
		c.mu.Lock()
		t.Logf("terminal output:\n%s", ansi.ReplaceAllString(c.buf.String(), ""))
		c.mu.Unlock()
	}

	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	want := "stats\nprincipal alice user\nstats\nassert Klarveld.price_per_seat = 44 by alice from \"src:k0\"\nwhy Klarveld.price_per_seat\nlive Klarveld\nlive Klarveld where value = = 1\n"
	if string(b) != want {
		t.Errorf("history file:\n%s\nwant:\n%s", b, want)
	}
	if fi, _ := os.Stat(hist); fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want 0600", fi.Mode().Perm())
	}
}

// TestTerminalREPL drives the REPL's newer edges under a pseudo-terminal: one Ctrl-C cancels
// the line while a completion list is open (shown, and being selected from); completion offers
// what fits where the cursor is; \i runs a script; a transaction shows its prompt; long output
// goes through the pager; quit leaves.
func TestTerminalREPL(t *testing.T) {
	dir, bin := terminalBuild(t)
	script := filepath.Join(dir, "setup.mql")
	os.WriteFile(script, []byte("principal alice user\nprincipal albert agent\nassert Klarveld.price_per_seat = 44 by alice from \"s\"\nassert Kludge.price = 1 by alice from \"s\"\n"), 0o644)
	cmd := exec.Command(bin, filepath.Join(dir, "term.db"))
	cmd.Env = append(os.Environ(),
		"HOME="+dir, "TERM=xterm", "MQL_HISTFILE="+filepath.Join(dir, "hist"), testClockEnv+"="+testClockStart,
		"PAGER=sed 's/^/|paged| /'", "MQLRC="+filepath.Join(dir, "rc"))
	os.WriteFile(filepath.Join(dir, "rc"), []byte("\\timing off\n"), 0o644)
	c, exited := startConsole(t, cmd, 20)
	c.expect("timing is off") // the startup file ran
	c.expect("mql> ")

	// \i runs a script file.
	c.send("\\i " + script + "\r")
	c.expect("Kludge.price@1  live  (tx 5)")
	c.expect("mql> ")

	// Completion offers what fits where the cursor is.
	c.send("assert Kludge.price = 2 by al\t")
	c.expect("al")
	c.send("i\t")
	c.expect("alice ")
	c.send("\x03") // (and one Ctrl-C cancels it)
	c.expect("mql> ")
	c.send("live *.pr\t")
	c.expect("*.price")
	c.send("\x03")
	c.expect("mql> ")

	// One Ctrl-C cancels the line while the completion list is open: "live Kl" then Tab shows
	// Klarveld and Kludge; the Ctrl-C leaves nothing behind, so "stats" runs alone.
	c.send("live Kl\t")
	c.expect("Kludge")
	c.send("\x03")
	c.expect("mql> ")
	c.send("stats\r")
	c.expect("transactions  5")
	c.expect("mql> ")
	// The same while a candidate is being selected (Tab again).
	c.send("live Kl\t")
	c.expect("Kludge")
	c.send("\t")
	c.send("\x03")
	c.expect("mql> ")
	c.send("stats\r")
	c.expect("transactions  5")
	c.expect("mql> ")

	// A transaction: its prompt, its statements run at the commit.
	c.send("begin\r")
	c.expect("mql*> ")
	c.send("assert Kludge.price = 2 by alice from \"s2\"\r")
	c.expect("mql*> ")
	// A read for a run cannot be in a transaction: refused as it is typed, the transaction
	// kept open with what it gathered.
	c.send("live Kludge for run r-1\r")
	c.expect("a read inside a transaction records nothing")
	c.expect("mql*> ")
	// Any other read is answered as it is typed, and says what it sees (issue 23, item 14).
	c.send("live Kludge\r")
	c.expect("it does not see the 1 statement gathered since begin")
	c.expect("Kludge.price@1  1 ")
	c.expect("mql*> ")
	c.send("commit\r")
	c.expect("Kludge.price@2  live  (supersedes @1, tx 6)")
	c.expect("commit  committed  (tx 6, 1 statement)")
	c.expect("mql> ")

	// Output longer than the terminal goes through the pager.
	c.send("\\help\r")
	c.expect("|paged| Statements end at \";\"")
	c.expect("mql> ")
	c.send("\\pager off\r")
	c.expect("pager is off")
	c.send("\\help\r")
	c.expect("\nStatements end at \";\"")
	c.expect("mql> ")

	// quit alone on a line leaves.
	c.send("quit\r")
	c.leaves(exited, "quit")
}
