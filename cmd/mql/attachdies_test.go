package main

import (
	"bufio"
	"errors"
	"github.com/mql-dev/mql/internal/syncbuf"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// A server killed under an attached command line: the statement sent after it died is
// refused with exit 1 and a message that says nothing was recorded and what to check, not a
// bare socket error.
func TestServeDiesUnderTheCommandLine(t *testing.T) {
	bin, home, _, db := serveFixture(t)
	s := startServe(t, bin, home, db)

	cmd := crashCmd(bin, home, "-f", "-", db)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	if _, err := stdin.Write([]byte("assert Klarveld.region = \"EU\" by worker-3;\n")); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewScanner(stdout)
	if !out.Scan() || !strings.Contains(out.Text(), "Klarveld.region@1") {
		t.Fatalf("the first statement's receipt: %q %v\n%s", out.Text(), out.Err(), stderr.String())
	}

	s.cmd.Process.Kill()
	sock := db + ".sock"
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("unix", sock)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the killed server still answers")
		}
		time.Sleep(20 * time.Millisecond)
	}
	stdin.Write([]byte("assert Klarveld.soc2 = true by worker-3;\n"))
	stdin.Close()
	for out.Scan() {
		t.Errorf("output after the server died: %q", out.Text())
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitFailed {
		t.Errorf("exit: %v, want %d\n%s", err, exitFailed, stderr.String())
	}
	for _, want := range []string{"mql serve does not answer on " + sock, "nothing was sent and nothing was recorded", "is the server still running?"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
}
