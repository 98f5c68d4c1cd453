package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/repl"
)

// TestDocExamples runs the examples of the documentation as written, and compares what mql
// prints with what the documentation shows:
//
//   - A block fenced as ```mql is a REPL session: its lines after a prompt (mql> , and the
//     continuation   -> ; mql*>  and   *>  inside a transaction) are typed, every other line is
//     what mql printed (standard output and standard error, as on a terminal). It runs on a
//     fresh store (memory:, the clock of the golden tests, owner "owner"), and its transcript
//     must be the block, byte for byte.
//   - A block fenced as ```mql scenario is such a session whose store the ```json blocks after
//     it, in the same file, are read from: each is a result as --format json prints it
//     (indented, and abbreviated: fields left out, "...": "..." for the rest), of the statement
//     it names. Every field it shows must be in the result with that value, and every list must
//     have the result's length.
//
// Blocks fenced as ``` alone are syntax, listings and commands, not run. With -update, the
// sessions are written back with what mql prints (review the change with git diff).
func TestDocExamples(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	blocks := 0
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			var scenario *docStore
			updated := string(src)
			for _, b := range fencedBlocks(string(src)) {
				name := fmt.Sprintf("%s:%d", filepath.Base(file), b.line)
				switch b.info {
				case "mql", "mql scenario":
					blocks++
					st := newDocStore(t)
					got := st.session(t, b.text)
					if *update && got != b.text {
						// -update writes each session's transcript in place, to be reviewed
						// with git diff.
						updated = strings.Replace(updated, "```"+b.info+"\n"+b.text+"```", "```"+b.info+"\n"+got+"```", 1)
					} else if got != b.text {
						t.Errorf("%s: the session prints\n%s\nthe documentation shows\n%s\n(diff from line %d)", name, got, b.text, firstDiff(got, b.text))
					}
					if b.info == "mql scenario" {
						scenario = st
					}
				case "json":
					if scenario == nil {
						continue // a schema or a configuration, not a result
					}
					blocks++
					scenario.checkJSON(t, name, b.text)
				}
			}
			if *update && updated != string(src) {
				if err := os.WriteFile(file, []byte(updated), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	if blocks < 20 {
		t.Errorf("only %d examples found in the documentation", blocks)
	}
}

type fenced struct {
	info string
	text string
	line int // of the opening fence
}

// fencedBlocks returns the fenced code blocks of a Markdown text.
func fencedBlocks(md string) []fenced {
	var out []fenced
	lines := strings.SplitAfter(md, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\n")
		if !strings.HasPrefix(l, "```") {
			continue
		}
		b := fenced{info: strings.TrimSpace(strings.TrimPrefix(l, "```")), line: i + 1}
		var text strings.Builder
		for i++; i < len(lines) && strings.TrimRight(lines[i], "\n") != "```"; i++ {
			text.WriteString(lines[i])
		}
		b.text = text.String()
		out = append(out, b)
	}
	return out
}

func firstDiff(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return i + 1
		}
	}
	return min(len(al), len(bl)) + 1
}

// docStore is a fresh store for one example.
type docStore struct {
	db   *mql.DB
	sess *query.Session
}

func newDocStore(t *testing.T) *docStore {
	t.Helper()
	t.Setenv(testClockEnv, testClockStart)
	clock, err := testClock()
	if err != nil {
		t.Fatal(err)
	}
	db, err := mql.Open(context.Background(), "memory:", mql.Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &docStore{db: db, sess: query.NewSession(db, "")}
}

// session runs the input lines of a transcript in the REPL and returns the transcript it
// prints.
func (st *docStore) session(t *testing.T, block string) string {
	t.Helper()
	prompts := []string{repl.PromptTx, repl.Prompt, repl.PromptTxContinue, repl.PromptContinue}
	var inputs []string
	for _, l := range strings.Split(strings.TrimSuffix(block, "\n"), "\n") {
		for _, p := range prompts {
			if strings.HasPrefix(l, p) || l+" " == p {
				inputs = append(inputs, strings.TrimPrefix(strings.TrimPrefix(l, p), strings.TrimSpace(p)))
				break
			}
		}
	}
	var out bytes.Buffer
	sh := repl.New(repl.Config{Session: repl.Local(st.sess, "memory:"), Stdout: &out, Stderr: &out, Format: output.FormatTable, Terminal: true})
	lr := &transcriptReader{inputs: inputs, out: &out}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// transcriptReader types the inputs of a transcript, echoing each after its prompt.
type transcriptReader struct {
	inputs []string
	prompt string
	out    *bytes.Buffer
}

func (r *transcriptReader) Readline() (string, error) {
	if len(r.inputs) == 0 {
		return "", io.EOF
	}
	l := r.inputs[0]
	r.inputs = r.inputs[1:]
	if l == "" {
		r.out.WriteString(strings.TrimRight(r.prompt, " ") + "\n")
	} else {
		r.out.WriteString(r.prompt + l + "\n")
	}
	return l, nil
}
func (r *transcriptReader) SetPrompt(p string)      { r.prompt = p }
func (r *transcriptReader) AddHistory(string) error { return nil }
func (r *transcriptReader) Close() error            { return nil }

// checkJSON checks an abbreviated JSON result against the result of its statement.
func (st *docStore) checkJSON(t *testing.T, name, doc string) {
	t.Helper()
	var want map[string]any
	if err := json.Unmarshal([]byte(doc), &want); err != nil {
		t.Errorf("%s: not JSON: %v", name, err)
		return
	}
	stmt, _ := want["statement"].(string)
	if stmt == "" {
		t.Errorf("%s: the example names no statement", name)
		return
	}
	var got map[string]any
	err := st.sess.Exec(context.Background(), name, stmt, func(r *query.Result) error {
		raw, err := output.JSON(r)
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &got)
	})
	if err != nil {
		t.Errorf("%s: %s: %v", name, stmt, err)
		return
	}
	if path, ok := subset(want, got, "$"); !ok {
		g, _ := json.Marshal(got)
		t.Errorf("%s: %s: the documentation shows at %s what the result does not hold; the result:\n%s", name, stmt, path, g)
	}
}

// subset reports whether want (from the documentation) is in got: every field of an object,
// but "...", with a value in got's field; every list of got's length, element by element.
func subset(want, got any, path string) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return path, false
		}
		for k, v := range w {
			if k == "..." {
				continue
			}
			gv, ok := g[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := subset(v, gv, path+"."+k); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return path, false
		}
		for i := range w {
			if p, ok := subset(w[i], g[i], fmt.Sprintf("%s[%d]", path, i)); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(want, got)
}
