package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/repl"
)

// TestREPLMissingStore: the REPL on a store that does not exist creates nothing until its
// first write: reads, \d, \export and \import are refused saying so, \conninfo says so, and a
// transaction that writes creates the store (and the default store's directory) at its commit
// (issue 23, item 13).
func TestREPLMissingStore(t *testing.T) {
	dir := testEnv(t)
	home := filepath.Join(dir, "data", "mql")
	dsn := filepath.Join(home, "default.db")
	clock, err := testClock()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	l := &lazyStore{dsn: dsn, opts: mql.Options{Clock: clock}, mkdir: home, stderr: &errb}
	defer l.Close()
	sh := repl.New(repl.Config{Session: l, Stdout: &out, Stderr: &errb, Format: output.FormatTable})
	nq := filepath.Join(dir, "x.nq")
	if err := os.WriteFile(nq, []byte("\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inputs := []string{`live *`, `\d`, `\conninfo`, `\export ` + filepath.Join(dir, "y.nq"), `\import ` + nq, "begin", "stats", "principal alice user", "commit", "stats"}
	r := &transcriptReader{inputs: inputs, out: &out}
	lr := &hookReader{r: r, before: func() {
		if len(r.inputs) == 2 { // before the commit
			if _, err := os.Stat(home); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("reads made %s: %v", home, err)
			}
		}
	}}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	all := out.String() + errb.String()
	for _, want := range []string{
		"no store at " + dsn + " yet: there is nothing to read; the first write creates it",
		"store:     " + dsn + " (no store yet: the first write creates it)",
		"no store at " + dsn + " yet: there is nothing to export",
		"no store at " + dsn + " yet, and \\import does not create one: create it from the export with `mql import FILE " + dsn + "`",
		"mql: created a new store at " + dsn,
		"commit  committed  (tx 2, 1 statement)",
		"transactions  2",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("the session lacks %q:\n%s", want, all)
		}
	}
	if fi, err := os.Stat(home); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the default store's directory: %v %v", fi, err)
	}
}

// hookReader calls before ahead of each line it reads.
type hookReader struct {
	r      *transcriptReader
	before func()
}

func (h *hookReader) Readline() (string, error) { h.before(); return h.r.Readline() }
func (h *hookReader) SetPrompt(p string)        { h.r.SetPrompt(p) }
func (h *hookReader) AddHistory(string) error   { return nil }
func (h *hookReader) Close() error              { return nil }
