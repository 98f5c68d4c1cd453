package repl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// step is one answer of the fake line reader.
type step struct {
	line string
	err  error
}

// fakeReader is a LineReader that plays steps and records prompts and history.
type fakeReader struct {
	steps   []step
	prompt  string
	prompts []string
	history []string
	read    int
}

func (f *fakeReader) Readline() (string, error) {
	f.prompts = append(f.prompts, f.prompt)
	if f.read >= len(f.steps) {
		return "", io.EOF
	}
	s := f.steps[f.read]
	f.read++
	return s.line, s.err
}
func (f *fakeReader) SetPrompt(p string)        { f.prompt = p }
func (f *fakeReader) AddHistory(e string) error { f.history = append(f.history, e); return nil }
func (f *fakeReader) Close() error              { return nil }
func lines(ls ...string) []step {
	var out []step
	for _, l := range ls {
		out = append(out, step{line: l})
	}
	return out
}

var ctrlC = step{err: ErrInterrupt}

func partialCtrlC(s string) step { return step{line: s, err: ErrInterrupt} }

func newDB(t *testing.T) *mql.DB {
	t.Helper()
	var n int
	var mu sync.Mutex
	start := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	db, err := mql.Open(context.Background(), "memory:", mql.Options{Clock: func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		n++
		return start.Add(time.Duration(n) * time.Second)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type shellOut struct{ out, err bytes.Buffer }

func newShell(t *testing.T, f output.Format) (*Shell, *shellOut, *mql.DB) {
	db := newDB(t)
	o := &shellOut{}
	sh := New(Config{Session: Local(query.NewSession(db, ""), "memory:"), Stdout: &o.out, Stderr: &o.err, Format: f})
	return sh, o, db
}

func TestLoopMultiLineAndHistory(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatTable)
	lr := &fakeReader{steps: lines(
		"principal alice user",
		"",
		"assert Klarveld.price_per_seat =",
		"  44 by alice -- the first reading",
		"",
		"-- just a comment",
		"assert Klarveld.region = \"EU\" by alice; live Klarveld",
	)}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	wantPrompts := []string{Prompt, Prompt, Prompt, PromptContinue, PromptContinue, Prompt, Prompt, Prompt}
	if strings.Join(lr.prompts, "|") != strings.Join(wantPrompts, "|") {
		t.Errorf("prompts %q, want %q", lr.prompts, wantPrompts)
	}
	wantHist := []string{
		"principal alice user",
		"assert Klarveld.price_per_seat = 44 by alice",
		`assert Klarveld.region = "EU" by alice; live Klarveld`,
	}
	if strings.Join(lr.history, "\n") != strings.Join(wantHist, "\n") {
		t.Errorf("history %q, want %q", lr.history, wantHist)
	}
	out := o.out.String()
	for _, want := range []string{"principal alice  recorded  (tx 2)", "Klarveld.price_per_seat@1  live  (tx 3)", "Klarveld.region@1          \"EU\"   live"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := o.err.String(); got != multiLineNote+"\n" {
		t.Errorf("stderr: %s", got)
	}
}

// TestLoopClauseOnNextLine: at the prompt, a statement typed over several lines runs at ";" or
// an empty line, never at the end of a line that completes it: clauses typed on the lines
// after are part of it (issue 23, item 7). A line complete on its own runs at Enter.
func TestLoopClauseOnNextLine(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatCSV)
	lr := &fakeReader{steps: lines(
		"principal w1 agent",
		"assert B.p = 39",
		"by w1",
		"from \"src:b0\"",
		"",
		"assert C.p = 1",
		"  by w1",
		"  from \"src:c0\";",
		"live B",
		"from \"src:b1\"",
		"assert D.p = 1",
		"by w1",
	)}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	want := []string{Prompt, Prompt, PromptContinue, PromptContinue, PromptContinue, Prompt, PromptContinue, PromptContinue, Prompt, Prompt, Prompt, PromptContinue, PromptContinue}
	if strings.Join(lr.prompts, "|") != strings.Join(want, "|") {
		t.Errorf("prompts %q, want %q", lr.prompts, want)
	}
	wantHist := []string{"principal w1 agent", `assert B.p = 39 by w1 from "src:b0"`, `assert C.p = 1 by w1 from "src:c0";`, "live B", `from "src:b1"`}
	if strings.Join(lr.history, "\n") != strings.Join(wantHist, "\n") {
		t.Errorf("history %q, want %q", lr.history, wantHist)
	}
	out, errs := o.out.String(), o.err.String()
	if !strings.Contains(out, ",observed,1,1,w1,src:b0,") {
		t.Errorf("B.p is not the claim written, with its source:\n%s", out)
	}
	if strings.Contains(out, "D.p") {
		t.Errorf("a statement still being typed ran at the end of the input:\n%s", out)
	}
	for _, want := range []string{
		multiLineNote,
		`<stdin>:1:1: unknown statement "from"`,
		"at the prompt, a line that is a complete statement runs at Enter",
		"the statement being typed was not run",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Count(errs, multiLineNote) != 1 {
		t.Errorf("the note on statements of several lines is not shown once:\n%s", errs)
	}
}

// TestLoopReadInTransaction: at the prompt, a read typed inside begin … commit is answered at
// once, from the store as committed, and says so; it is not gathered into the transaction
// (issue 23, item 14). A read for a run, which no transaction may hold, is refused as it is
// typed, and the transaction goes on.
func TestLoopReadInTransaction(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatCSV)
	lr := &fakeReader{steps: lines(
		"principal w1 agent",
		"assert K.p = 1 by w1",
		"begin",
		"live K",
		"assert K.p = 2 by w1",
		"live K",
		"live K for run r-1",
		"commit",
	)}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	out, errs := o.out.String(), o.err.String()
	first, second := strings.Index(out, "K.p@1,K,p,1,1,"), strings.LastIndex(out, "K.p@1,K,p,1,1,")
	commit := strings.Index(out, "\ncommit,")
	if first < 0 || second == first || commit < second {
		t.Errorf("the reads were not answered as typed, before the commit:\n%s", out)
	}
	if strings.Contains(out, "K.p@2,K,p,2,2,") || !strings.Contains(out, "\ncommit,1,4,") {
		t.Errorf("a read was gathered into the transaction, or saw it:\n%s", out)
	}
	for _, want := range []string{
		"(answered now, from the store as committed: a read typed inside a transaction is not part of it)",
		"(answered now, from the store as committed: it does not see the 1 statement gathered since begin, which runs at the commit)",
		// Refused as it is typed, not gathered: the transaction goes on.
		"\n<stdin>:1:1: for run r-1: a read inside a transaction records nothing; read for the run after the commit (the transaction is still open)\n",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

func TestLoopCtrlC(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatCSV)
	lr := &fakeReader{steps: []step{
		{line: "assert K.p ="},  // a statement begun…
		partialCtrlC("  by al"), // …and cancelled while typing its second line
		{line: "principal bob user"},
		partialCtrlC("live K"), // cancels the line being typed
		ctrlC,                  // on an empty line: a hint
		{line: "stats"},        // resets the count
		ctrlC,
		ctrlC, // second Ctrl-C on an empty line in a row: exit
		{line: "principal never user"},
	}}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	if lr.read != 8 {
		t.Errorf("read %d lines, want 8 (exit on the second Ctrl-C)", lr.read)
	}
	want := []string{Prompt, PromptContinue, Prompt, Prompt, Prompt, Prompt, Prompt, Prompt}
	if strings.Join(lr.prompts, "|") != strings.Join(want, "|") {
		t.Errorf("prompts %q, want %q", lr.prompts, want)
	}
	if strings.Join(lr.history, "|") != "principal bob user|stats" {
		t.Errorf("history %q", lr.history)
	}
	out := o.out.String()
	if !strings.Contains(out, "principal,bob") || strings.Contains(out, "never") || strings.Contains(out, "K.p") {
		t.Errorf("output:\n%s", out)
	}
	if strings.Count(o.err.String(), "Ctrl-C again") != 2 {
		t.Errorf("stderr: %q", o.err.String())
	}
}

func TestLoopCaret(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatTable)
	lr := &fakeReader{steps: lines(
		"live Klarveld where value = = 3",
		"principal alice user",
		"assert K.p = 1 by alice",
		"revoke K.p@9 by alice",
		"\tlive\tK where value >",
		"\t4 =",
	)}
	sh.Run(context.Background(), lr)
	got := o.err.String()
	want := "live Klarveld where value = = 3\n" +
		"                            ^\n" +
		"<stdin>:1:29: "
	if !strings.HasPrefix(got, want) {
		t.Errorf("stderr starts\n%q\nwant\n%q", got, want)
	}
	// An evaluation error has no caret, but its position.
	if !strings.Contains(got, "\n<stdin>:1:1: K.p@9: not found") {
		t.Errorf("evaluation error missing:\n%s", got)
	}
	// The caret is under the column on the error's own line, tabs kept.
	if !strings.Contains(got, "\t4 =\n\t  ^\n<stdin>:2:4: ") {
		t.Errorf("caret on the second line wrong:\n%s", got)
	}
	// The loop went on after each error.
	if !strings.Contains(o.out.String(), "K.p@1  live") {
		t.Errorf("stdout:\n%s", o.out.String())
	}
}

func TestLoopMetaCommands(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatTable)
	lr := &fakeReader{steps: lines(
		`\help`,
		`\help assert`,
		`.help nosuch`,
		`\format`,
		`\format json`,
		"principal alice user",
		`.format csv`,
		"stats",
		`\format yaml`,
		`\timing`,
		"stats",
		`\timing off`,
		`\frob`,
		`\quit`,
		"principal never user",
	)}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	if lr.read != 14 {
		t.Errorf("\\quit did not stop the loop: read %d", lr.read)
	}
	out, errs := o.out.String(), o.err.String()
	for _, want := range []string{
		"Writes:", "  assert      record a claim", "Reads:", "Meta commands", // \help
		"assert: record a claim\n\nSyntax:\n  assert Subject.predicate = VALUE by PRINCIPAL", "Example:\n  assert Klarveld.price_per_seat = 44", // \help assert
		"format is table\n", // \format
		`{"kind":"principal","statement":"principal alice user","rows":[{"tx":2,`, // json
		"metric,value\ntransactions,2\n",                                          // csv
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{`no help for "nosuch"`, "format is json", `unknown format "yaml"`, "timing is on", "Time: ", "timing is off", `unknown meta command \frob: \help lists them`} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Count(errs, "Time: ") != 1 {
		t.Errorf("timing printed %d times", strings.Count(errs, "Time: "))
	}
	if lr.history[0] != `\help` {
		t.Errorf("meta commands are not in the history: %q", lr.history)
	}
}

// Every statement of the help parses, so the examples stay true.
func TestHelpExamplesParse(t *testing.T) {
	for _, s := range Statements {
		if _, err := query.Parse("help", s.Example); err != nil {
			t.Errorf("\\help %s: example %q: %v", s.Name, s.Example, err)
		}
		var b bytes.Buffer
		if err := writeHelp(&b, s.Name); err != nil || !strings.Contains(b.String(), s.Example) {
			t.Errorf("\\help %s: %v %q", s.Name, err, b.String())
		}
	}
}

// The statements about runs have their help, their place in the help's list, and completion;
// the help of derive, stats and the modifiers says how runs enter them.
func TestRunsHelpAndCompletion(t *testing.T) {
	for _, topic := range []string{"outcome", "run", "runs"} {
		var b bytes.Buffer
		if err := writeHelp(&b, topic); err != nil {
			t.Errorf("\\help %s: %v", topic, err)
		}
	}
	var b bytes.Buffer
	if err := writeHelp(&b, ""); err != nil {
		t.Fatal(err)
	}
	all := b.String()
	for _, want := range []string{"Writes:\n", "  outcome     ", "Reads:\n", "  runs        ", "for run RUN", "What the store holds"} {
		if !strings.Contains(all, want) {
			t.Errorf("\\help lacks %q:\n%s", want, all)
		}
	}
	// The headings fall where their groups start.
	if i, j := strings.Index(all, "  outcome"), strings.Index(all, "Reads:"); i < 0 || j < i {
		t.Errorf("outcome is not among the writes:\n%s", all)
	}
	if i, j := strings.Index(all, "  runs "), strings.Index(all, "What the store holds"); i < 0 || j < i {
		t.Errorf("runs is not among the reads:\n%s", all)
	}
	for topic, want := range map[string]string{"derive": "[in run RUN]", "stats": "stats [for PRINCIPAL] [since TIME]"} {
		var b bytes.Buffer
		if err := writeHelp(&b, topic); err != nil || !strings.Contains(b.String(), want) {
			t.Errorf("\\help %s lacks %q: %s %v", topic, want, b.String(), err)
		}
	}

	sh, _, _ := newShell(t, output.FormatTable)
	for _, tc := range []struct{ line, want string }{
		{"outc", "ome "},
		{"ru", "n|ns"},
		{"outcome ", "run "},
		{"outcome run r1 ", "declined|failed|succeeded"},
		{"outcome run r1 failed ", "because|by"},
	} {
		cands, _ := sh.Complete([]rune(tc.line), len([]rune(tc.line)))
		var got []string
		for _, c := range cands {
			got = append(got, string(c))
		}
		if g := strings.Join(got, "|"); g != tc.want {
			t.Errorf("Complete(%q) = %q, want %q", tc.line, g, tc.want)
		}
	}
}

// slowSession blocks in Exec until its context ends.
type slowSession struct{ started chan struct{} }

func (s *slowSession) Exec(ctx context.Context, _ Source, _ output.Style, emit func(Rendered) error) error {
	close(s.started)
	<-ctx.Done()
	return ctx.Err()
}
func (s *slowSession) ExecTx(ctx context.Context, _ Source, _ []Source, st output.Style, emit func(Rendered) error) error {
	return s.Exec(ctx, Source{}, st, emit)
}
func (s *slowSession) Names(context.Context) (Names, error)    { return Names{}, nil }
func (s *slowSession) Info(context.Context) (Info, error)      { return Info{}, nil }
func (s *slowSession) Export(context.Context, io.Writer) error { return nil }
func (s *slowSession) Import(context.Context, io.Reader) error { return nil }

func TestInterruptCancelsStatement(t *testing.T) {
	intr := make(chan os.Signal, 1)
	intr <- os.Interrupt // a stray signal from before the statement must not cancel it
	sess := &slowSession{started: make(chan struct{})}
	var errb bytes.Buffer
	sh := New(Config{Session: sess, Stderr: &errb, Interrupt: intr})
	done := make(chan struct{})
	go func() {
		defer close(done)
		sh.Run(context.Background(), &fakeReader{steps: lines("stats")})
	}()
	<-sess.started
	select {
	case <-done:
		t.Fatal("the statement ended before the interrupt")
	case <-time.After(50 * time.Millisecond):
	}
	intr <- os.Interrupt
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Ctrl-C did not cancel the statement")
	}
	if !strings.Contains(errb.String(), "statement cancelled") {
		t.Errorf("stderr: %q", errb.String())
	}
}

func TestComplete(t *testing.T) {
	sh, _, _ := newShell(t, output.FormatTable)
	ctx := context.Background()
	if err := sh.RunScript(ctx, "t", strings.NewReader("principal alice user\nassert Klarveld.price_per_seat = 44 by alice\nassert Klarveld.region = \"EU\" by alice\nderive plan:pick-vendor from Klarveld.price_per_seat by alice")); err != nil {
		t.Fatal(err)
	}
	complete := func(line string) []string {
		cands, n := sh.Complete([]rune(line), len([]rune(line)))
		var out []string
		for _, c := range cands {
			out = append(out, string(c))
		}
		_ = n
		return out
	}
	for _, tc := range []struct{ line, want string }{
		{"sta", "ts "},
		{"revoked", "-by "},
		{"live Kl", "arveld"},
		{"live Klarveld.", "price_per_seat|region"},
		{"why Klarveld.pr", "ice_per_seat"},
		{"revoke Klarveld.price_per_seat@", "1 "},
		{"impact plan:", "pick-vendor "},
		{"grant al", "ice "},
		{`\fo`, "rmat "},
		{`.timi`, "ng "},
		{`.ti`, "mer|ming"},
		{`\format j`, "son "},
		{`\help rev`, "iew|oke|oked-by"},
		{"sea", "rch "},
		{`search "eu pricing" l`, "imit "},
		{`search "eu pricing" h`, "istory "},
		{`search "eu pricing" on Kl`, "arveld"},
		{`\help sea`, "rch "},
		{"context ", "Klarveld|for"},
		{"context f", "or "},
		{"context Klarveld, K", "larveld "},
		{`context for "eu pricing" b`, "udget "},
		{`context for "eu pricing" `, "budget "},
	} {
		got := strings.Join(complete(tc.line), "|")
		if got != tc.want {
			t.Errorf("Complete(%q) = %q, want %q", tc.line, got, tc.want)
		}
	}
	// A write refreshes the names.
	if err := sh.RunScript(ctx, "t", strings.NewReader("assert Brimsole.soc2 = true by alice")); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(complete("live Bri"), "|"); got != "msole" {
		t.Errorf("after a write: %q", got)
	}
	// The cursor in the middle of a line completes the word before it.
	line := []rune("live Kl where value = 1")
	if c, n := sh.Complete(line, 7); n != 2 || len(c) != 1 || string(c[0]) != "arveld" {
		t.Errorf("mid-line: %q %d", c, n)
	}
}

func TestRunScriptMeta(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatTable)
	err := sh.RunScript(context.Background(), "s.mql", strings.NewReader("principal alice user\n\\format json\nstats\n  .format csv\nlive K\nlive K where\n"))
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Pos.Line != 6 || !strings.HasPrefix(err.Error(), "s.mql:6:13: ") {
		t.Errorf("error %v: positions must be those of the whole script", err)
	}
	out := o.out.String()
	if !strings.HasPrefix(out, "principal alice  recorded") || !strings.Contains(out, "\n{\"kind\":\"stats\"") || !strings.HasSuffix(out, "ref,subject,predicate,version,value,value_type,state,since,kind,confidence,effective_confidence,asserted_by,sources,recorded_at,tx,valid_from,valid_until,seen_by\n") {
		t.Errorf("output:\n%s", out)
	}
	err = sh.RunScript(context.Background(), "s.mql", strings.NewReader("stats\n\\format nope\n"))
	if !errors.Is(err, ErrMeta) || !strings.HasPrefix(err.Error(), "s.mql:2:1: ") {
		t.Errorf("bad meta: %v", err)
	}
	err = sh.RunScript(context.Background(), "s.mql", strings.NewReader(`\import /nonexistent.nq`))
	if !errors.Is(err, ErrTransfer) {
		t.Errorf("bad import: %v", err)
	}
}

func TestJSONClaimsCarryRequiredFields(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatJSON)
	src := `principal alice user
principal bob agent
grant alice revoke on * by owner
assert K.p = 1 by bob from "s1"
assert K.p = 2 by bob
assert K.p = 0 by alice kind inferred
assert K.q = 2026-01-02 by bob
derive plan:x from K.p by alice
revoke K.p@2 by alice because "wrong"
live K
why K.p@2
why plan:x
revoked-by K.p@2
history K.p
history plan:x
conflicts
beliefs *.p
context K
stats
impact K.p@1
find ?s, ?v where ?s.p = ?v`
	if err := sh.RunScript(context.Background(), "j", strings.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(o.out.String()))
	kinds := map[string]bool{}
	claims := 0
	for dec.More() {
		var obj map[string]any
		if err := dec.Decode(&obj); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"kind", "statement", "rows"} {
			if _, ok := obj[k]; !ok {
				t.Errorf("%v lacks %q", obj["kind"], k)
			}
		}
		if _, ok := obj["rows"].([]any); !ok {
			t.Errorf("%v: rows is not a list", obj["kind"])
		}
		kinds[obj["kind"].(string)] = true
		// Every claim object, wherever it is, carries the required fields.
		var walk func(path string, v any)
		walk = func(path string, v any) {
			switch v := v.(type) {
			case map[string]any:
				if _, isClaim := v["asserted_by"]; isClaim || strings.HasSuffix(path, ".claim") || strings.HasSuffix(path, ".live") {
					claims++
					for _, k := range []string{"ref", "state", "effective_confidence", "asserted_by", "sources", "value", "value_type"} {
						if _, ok := v[k]; !ok {
							t.Errorf("%s: claim %v lacks %q", path, v["ref"], k)
						}
					}
					if _, ok := v["sources"].([]any); !ok {
						t.Errorf("%s: sources is not a list: %v", path, v["sources"])
					}
				}
				for k, x := range v {
					walk(path+"."+k, x)
				}
			case []any:
				for _, x := range v {
					walk(path+"[]", x)
				}
			}
		}
		walk(obj["kind"].(string), obj["rows"])
	}
	if len(kinds) != 15 {
		t.Errorf("kinds seen: %v", kinds)
	}
	if claims < 10 {
		t.Errorf("only %d claim objects checked", claims)
	}
	if !strings.Contains(o.out.String(), `"value":"2026-01-02T00:00:00.000000000Z","value_type":"time"`) {
		t.Errorf("time value not rendered as RFC 3339 with nine digits of fraction")
	}
	// Every timestamp has the same width, so that timestamps sort as strings.
	stamps := regexp.MustCompile(`"\d{4}-\d\d-\d\dT[^"]*"`).FindAllString(o.out.String(), -1)
	for _, ts := range stamps {
		if !regexp.MustCompile(`^"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z"$`).MatchString(ts) {
			t.Errorf("timestamp %s has not the fixed width", ts)
		}
	}
	if len(stamps) < 20 {
		t.Errorf("only %d timestamps checked", len(stamps))
	}
}

func TestHistoryFile(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"HOME": dir}
	getenv := func(k string) string { return env[k] }
	p, err := HistoryPath(getenv)
	if err != nil || p != filepath.Join(dir, ".local/state/mql/history") {
		t.Errorf("HistoryPath = %q, %v", p, err)
	}
	env["XDG_STATE_HOME"] = filepath.Join(dir, "state")
	if p, _ = HistoryPath(getenv); p != filepath.Join(dir, "state/mql/history") {
		t.Errorf("with XDG_STATE_HOME: %q", p)
	}
	env["MQL_HISTFILE"] = filepath.Join(dir, "h")
	if p, _ = HistoryPath(getenv); p != filepath.Join(dir, "h") {
		t.Errorf("with MQL_HISTFILE: %q", p)
	}

	path := filepath.Join(dir, "state", "mql", "history")
	h, err := OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	h.Append("live K")
	h.Append("assert K.p = 1\nby alice")
	h.Close()
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("history mode %v", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(filepath.Dir(path)); fi.Mode().Perm() != 0o700 {
		t.Errorf("history directory mode %v", fi.Mode().Perm())
	}
	h, err = OpenHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if got := strings.Join(h.Entries(), "|"); got != "live K|assert K.p = 1 by alice" {
		t.Errorf("entries %q", got)
	}
}

func TestPlainReader(t *testing.T) {
	var prompts bytes.Buffer
	p := NewPlain(strings.NewReader("a\r\nb\nc"), &prompts)
	p.SetPrompt("> ")
	var got []string
	for {
		l, err := p.Readline()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	if strings.Join(got, "|") != "a|b|c" || prompts.String() != "> > > > " {
		t.Errorf("lines %q prompts %q", got, prompts.String())
	}
}

func TestHistoryEntry(t *testing.T) {
	for in, want := range map[string]string{
		"live K\n":                             "live K",
		"assert K.p = \"a--b\" -- note\n by x": `assert K.p = "a--b" by x`,
		"-- only a comment\n":                  "",
		`assert K.p = "q\"--" by x`:            `assert K.p = "q\"--" by x`,
	} {
		if got := historyEntry(in); got != want {
			t.Errorf("historyEntry(%q) = %q, want %q", in, got, want)
		}
	}
}

// \watch prints each change as it is committed, as the session's principal may see it, until
// Ctrl-C.
func TestWatch(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	for _, p := range []string{"w1", "w2"} {
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	intr := make(chan os.Signal, 1)
	var out, errb syncBuf
	sh := New(Config{Session: Local(query.NewSession(db, "w1"), "memory:"), Stdout: &out, Stderr: &errb, Interrupt: intr})
	done := make(chan error, 1)
	go func() { done <- sh.RunScript(ctx, "w", strings.NewReader(`\watch K`)) }()
	for !strings.Contains(errb.String(), "watching") {
		time.Sleep(5 * time.Millisecond)
	}
	db.Assert(ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(1), By: "w2", Sources: []mql.Source{{ID: "s"}}})
	db.Assert(ctx, mql.AssertSpec{Subject: "K", Predicate: "h", Value: mql.Number(2), By: "w2", SeenBy: []string{"w2"}})
	db.Assert(ctx, mql.AssertSpec{Subject: "L", Predicate: "p", Value: mql.Number(3), By: "w2"})
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "K.p@1") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	intr <- os.Interrupt
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "w2  claim         K.p@1  = 1, live") || strings.Contains(got, "K.h") || strings.Contains(got, "L.p") {
		t.Errorf("watch printed:\n%s", got)
	}
}

// syncBuf is a bytes.Buffer safe to write from one goroutine and read from another.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// A meta command typed at the prompt starts a new input, as a statement does: after a
// statement, and after another meta command, \d prints its tables without a blank line before
// them (the second \d printed one that the first did not).
func TestMetaStartsAnInput(t *testing.T) {
	sh, o, _ := newShell(t, output.FormatTable)
	ctx := context.Background()
	if err := sh.Run(ctx, &fakeReader{steps: lines(`principal alice user`, `assert K.p = 1 by alice`, `derive plan:x from K.p by alice`)}); err != nil {
		t.Fatal(err)
	}
	o.out.Reset()
	if err := sh.Run(ctx, &fakeReader{steps: lines(`\d`)}); err != nil {
		t.Fatal(err)
	}
	once := o.out.String()
	if strings.HasPrefix(once, "\n") {
		t.Errorf("\\d after a statement starts with a blank line:\n%q", once)
	}
	o.out.Reset()
	if err := sh.Run(ctx, &fakeReader{steps: lines(`\d`)}); err != nil {
		t.Fatal(err)
	}
	if got := o.out.String(); got != once {
		t.Errorf("\\d after \\d:\n%q\nwant:\n%q", got, once)
	}
}

// TestTimingFollowsResult: with the pager on, "Time:" is printed after the result it times, as
// it is in a script and in psql, not before the output held for the pager (issue 23, item 12).
func TestTimingFollowsResult(t *testing.T) {
	db := newDB(t)
	var both syncBuf
	sh := New(Config{Session: Local(query.NewSession(db, ""), "memory:"), Stdout: &both, Stderr: &both,
		Format: output.FormatTable, Terminal: true, Pager: "cat", Rows: func() int { return 100 }})
	if err := sh.Run(context.Background(), &fakeReader{steps: lines(`\timing on`, "stats")}); err != nil {
		t.Fatal(err)
	}
	out := both.String()
	result, timing := strings.Index(out, "transactions"), strings.Index(out, "Time: ")
	if result < 0 || timing < result {
		t.Errorf("Time: is not after the result:\n%s", out)
	}
}

// TestHabitsOfOtherShells: what psql, sqlite3 and the mql command line would take, typed at
// the prompt, gets a message that says what mql calls it (issue 23, item 12).
func TestHabitsOfOtherShells(t *testing.T) {
	for _, tc := range []struct{ input, want string }{
		{`\dt`, `unknown meta command \dt: mql has no tables; \d lists the predicates and artifacts`},
		{`.tables`, `unknown meta command .tables: mql has no tables; subjects and predicates list what the store holds, \d the predicates and artifacts`},
		{`.schema`, `unknown meta command .schema: \d lists the predicates and artifacts, \d NAME describes one`},
		{`\du`, `unknown meta command \du: \dp lists the principals and grants`},
		{`\frob x`, `unknown meta command \frob: \help lists them`},
		{`\fromat csv`, `unknown meta command \fromat: \help lists them (did you mean \format?)`},
		{"token list", `<stdin>:1:1: "token" is a command of mql, not a statement: run it in a shell, as mql token create NAME | list | revoke ID [DB]`},
		{"export", `<stdin>:1:1: "export" is a command of mql, not a statement: run it in a shell, as mql export [DB]; here, \export FILE writes what you may see`},
	} {
		sh, o, _ := newShell(t, output.FormatTable)
		if err := sh.Run(context.Background(), &fakeReader{steps: lines(tc.input)}); err != nil {
			t.Fatal(err)
		}
		if got := o.err.String(); !strings.Contains(got, tc.want) || strings.Contains(got, "bad meta command: unknown") {
			t.Errorf("%s:\n%s\nwant %q", tc.input, got, tc.want)
		}
	}
	// In a script the same, at its position, and a syntax error.
	sh, _, _ := newShell(t, output.FormatTable)
	err := sh.RunScript(context.Background(), "x.mql", strings.NewReader("stats\n  token list\n"))
	if !errors.Is(err, query.ErrSyntax) || !strings.HasPrefix(err.Error(), `x.mql:2:3: "token" is a command of mql`) {
		t.Errorf("in a script: %v", err)
	}
}

// TestScriptTransactions: begin … commit in scripts, with and without -1 (Single): what they
// print, their errors word for word (from RunScript, or else from Finish), and that a
// transaction in error writes nothing.
func TestScriptTransactions(t *testing.T) {
	for _, tc := range []struct {
		name   string
		single bool
		src    string
		want   string // RunScript's error, or else Finish's
		out    string // what the script printed, in CSV
	}{
		{name: "a transaction commits", src: "principal w agent\nbegin\nassert K.p = 1 by w\ncommit",
			out: "kind,ref,state,tx,at,supersedes,contests,corroborates,note\nprincipal,w,,2,2026-11-29T10:00:02Z,,,,\nassert,K.p@1,live,3,2026-11-29T10:00:03Z,,,,\n\nkind,statements,tx,at\ncommit,1,3,2026-11-29T10:00:03Z\n"},
		{name: "a rollback", src: "begin\nassert K.p = 1 by w\nrollback",
			out: "kind,statements,tx,at\nrollback,1,,\n"},
		{name: "commit without begin", src: "principal w agent\ncommit",
			want: "s.mql:2:1: commit without begin: no transaction is open", out: "kind,ref,state,tx,at,supersedes,contests,corroborates,note\nprincipal,w,,2,2026-11-29T10:00:02Z,,,,\n"},
		{name: "rollback without begin", src: "  rollback", want: "s.mql:1:3: rollback without begin: no transaction is open"},
		{name: "begin inside a transaction", src: "begin\nassert K.p = 1 by w\nbegin",
			want: "s.mql:3:1: begin inside a transaction (begun at 1:1): commit or roll it back first"},
		{name: "the script ends inside a transaction", src: "principal w agent\nbegin\nassert K.p = 1 by w\n",
			want: "s.mql:2:1: the script ended inside the transaction begun here: nothing of it was written; end it with commit (or rollback)", out: "kind,ref,state,tx,at,supersedes,contests,corroborates,note\nprincipal,w,,2,2026-11-29T10:00:02Z,,,,\n"},
		{name: "a begin after blanks is where its keyword is", src: "begin; commit;  begin\nassert K.p = 1 by w\n",
			want: "s.mql:1:17: the script ended inside the transaction begun here: nothing of it was written; end it with commit (or rollback)", out: "kind,statements,tx,at\ncommit,0,,\n"},
		{name: "quit inside a transaction", src: "begin\n\\q\ncommit",
			want: "s.mql:2:1: bad meta command: \\quit inside a transaction (begun at 1:1): end it with commit or rollback first"},
		{name: "import inside a transaction", src: "begin\n\\import x.nq\ncommit",
			want: "s.mql:2:1: bad meta command: \\import inside a transaction: an import is a transaction of its own; commit or roll back first"},
		{name: "a failing statement", src: "principal w agent\nbegin\nassert K.p = 1 by w\nassert K.q = 1 by nobody\ncommit",
			want: "s.mql:4:1: \"nobody\": unknown principal: record it first, e.g. `principal nobody agent`; the transaction begun at 2:1 was rolled back: nothing of it was written", out: "kind,ref,state,tx,at,supersedes,contests,corroborates,note\nprincipal,w,,2,2026-11-29T10:00:02Z,,,,\n"},
		{name: "a read for a run, at the commit", src: "principal w agent\nbegin\nassert K.p = 1 by w\nlive K for run r-1\ncommit",
			want: "s.mql:4:1: for run r-1: a read inside a transaction records nothing; read for the run after the commit; the transaction begun at 2:1 was rolled back: nothing of it was written", out: "kind,ref,state,tx,at,supersedes,contests,corroborates,note\nprincipal,w,,2,2026-11-29T10:00:02Z,,,,\n"},
		{name: "-1 commits at the end", single: true, src: "principal w agent\nassert K.p = 1 by w",
			out: "kind,ref,state,tx,at,supersedes,contests,corroborates,note\nprincipal,w,,2,2026-11-29T10:00:02Z,,,,\nassert,K.p@1,live,2,2026-11-29T10:00:02Z,,,,\n\nkind,statements,tx,at\ncommit,2,2,2026-11-29T10:00:02Z\n"},
		{name: "begin with -1", single: true, src: "principal w agent\n begin",
			want: "s.mql:2:2: begin in a script run with -1, which is one transaction already"},
		{name: "commit with -1", single: true, src: "commit", want: "s.mql:1:1: commit in a script run with -1, which commits once, at its end"},
		{name: "rollback with -1", single: true, src: "rollback", want: "s.mql:1:1: rollback in a script run with -1, which commits once, at its end"},
		{name: "a failing statement with -1", single: true, src: "principal w agent\nassert K.q = 1 by nobody",
			want: "s.mql:2:1: \"nobody\": unknown principal: record it first, e.g. `principal nobody agent`; the script ran as one transaction (-1), which was rolled back: nothing of it was written"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newDB(t)
			o := &shellOut{}
			sh := New(Config{Session: Local(query.NewSession(db, ""), "memory:"), Stdout: &o.out, Stderr: &o.err, Format: output.FormatCSV, Single: tc.single})
			ctx := context.Background()
			err := sh.RunScript(ctx, "s.mql", strings.NewReader(tc.src))
			if err == nil {
				err = sh.Finish(ctx)
			}
			if got := fmt.Sprint(err); (err != nil || tc.want != "") && got != tc.want {
				t.Errorf("error %s\nwant  %s", got, tc.want)
			}
			if got := o.out.String(); got != tc.out {
				t.Errorf("printed %q, want %q", got, tc.out)
			}
			if claims, _ := db.Live(ctx, "K"); tc.want != "" && len(claims) != 0 {
				t.Errorf("a transaction in error wrote %d claims", len(claims))
			}
		})
	}
}
