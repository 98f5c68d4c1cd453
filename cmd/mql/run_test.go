package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/syncbuf"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testClockStart is the fixed clock of every test run: see clock.go.
const testClockStart = "2026-11-29T10:00:00Z"

// testEnv points every location mql uses into a temporary directory and fixes the clock.
func testEnv(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv(testClockEnv, testClockStart)
	t.Setenv("HOME", dir)
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("MQL_DB", "")
	t.Setenv("MQL_HISTFILE", "")
	return dir
}

// mql runs the command with stdin and returns what it wrote and its exit code.
func mqlRun(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return out.String(), errb.String(), code
}

var formats = []string{"table", "tree", "json", "csv"}

// golden is what a golden file holds: stdout, then stderr and the exit code if there are any.
func golden(stdout, stderr string, code int) string {
	s := stdout
	if stderr != "" || code != 0 {
		s += "-- stderr --\n" + stderr + "-- exit " + strconv.Itoa(code) + " --\n"
	}
	return s
}

func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/mql -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test ./cmd/mql -update rewrites it after review):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// TestGolden runs every testdata/*.mql script in every format and compares the output with
// testdata/NAME.FORMAT.golden.
func TestGolden(t *testing.T) {
	scripts, err := filepath.Glob("testdata/*.mql")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, script := range scripts {
		base := strings.TrimSuffix(script, ".mql")
		for _, f := range formats {
			t.Run(filepath.Base(base)+"."+f, func(t *testing.T) {
				testEnv(t)
				out, errOut, code := mqlRun(t, "", "--format", f, "-f", script, "memory:")
				checkGolden(t, base+"."+f+".golden", golden(out, errOut, code))
			})
		}
	}
}

// TestSameOutputEveryWay runs each script through -f, -c and stdin: the output and exit code
// are the same, and errors differ only in the name they give.
func TestSameOutputEveryWay(t *testing.T) {
	scripts, _ := filepath.Glob("testdata/*.mql")
	for _, script := range scripts {
		t.Run(filepath.Base(script), func(t *testing.T) {
			testEnv(t)
			src, err := os.ReadFile(script)
			if err != nil {
				t.Fatal(err)
			}
			fOut, fErr, fCode := mqlRun(t, "", "--format", "table", "-f", script, "memory:")
			cOut, cErr, cCode := mqlRun(t, "", "--format", "table", "-c", string(src), "memory:")
			sOut, sErr, sCode := mqlRun(t, string(src), "--format", "table", "memory:")
			dOut, dErr, dCode := mqlRun(t, string(src), "--format", "table", "-f", "-", "memory:")
			if fOut != cOut || fOut != sOut || fOut != dOut {
				t.Errorf("outputs differ:\n-f:\n%s\n-c:\n%s\nstdin:\n%s\n-f -:\n%s", fOut, cOut, sOut, dOut)
			}
			if fCode != cCode || fCode != sCode || fCode != dCode {
				t.Errorf("exit codes differ: -f %d, -c %d, stdin %d, -f - %d", fCode, cCode, sCode, dCode)
			}
			norm := func(s, name string) string { return strings.ReplaceAll(s, name+":", "NAME:") }
			if a, b, c, d := norm(fErr, script), norm(cErr, "-c"), norm(sErr, "<stdin>"), norm(dErr, "<stdin>"); a != b || a != c || a != d {
				t.Errorf("errors differ:\n-f: %s-c: %sstdin: %s-f -: %s", fErr, cErr, sErr, dErr)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	dir := testEnv(t)
	nq := filepath.Join(dir, "bad.nq")
	os.WriteFile(nq, []byte("<urn:a> <urn:b> <urn:c> <urn:mql:tx:1> .\nthis is not a quad\n"), 0o644)
	for _, tc := range []struct {
		name     string
		args     []string
		stdin    string
		code     int
		stderrRE string
	}{
		{"ok", []string{"-c", "principal alice user", "memory:"}, "", exitOK, `^$`},
		{"bad flag", []string{"--nope", "memory:"}, "", exitUsage, `flag provided but not defined: --nope`},
		{"bad format", []string{"--format", "yaml", "-c", "stats", "memory:"}, "", exitUsage, `unknown format "yaml"`},
		{"two DBs", []string{"-c", "stats", "memory:", "memory:"}, "", exitUsage, `one DB at most`},
		{"missing file", []string{"-f", filepath.Join(dir, "nope.mql"), "memory:"}, "", exitUsage, `no such file`},
		{"syntax", []string{"-c", "live Klarveld where value", "memory:"}, "", exitSyntax, `^-c:1:26: `},
		{"syntax stdin", []string{"memory:"}, "stats\nlive K where\n", exitSyntax, `^<stdin>:2:13: `},
		{"bad meta", []string{"-c", `\frobnicate`, "memory:"}, "", exitSyntax, `^-c:1:1: unknown meta command \\frobnicate: \\help lists them`},
		{"evaluation", []string{"-c", "principal alice user\nrevoke K.p@1 by alice", "memory:"}, "", exitFailed, `^-c:2:1: .*not found`},
		{"unknown principal", []string{"-c", "assert K.p = 1 by nobody", "memory:"}, "", exitFailed, `^-c:1:1: .*unknown principal`},
		{"bad dsn", []string{"-c", "stats", "nosuch://x"}, "", exitOpen, `cannot open nosuch://x`},
		{"import bad line", []string{"import", "--db", filepath.Join(dir, "imp.db"), nq}, "", exitTransfer, `line 2`},
		{"import no file", []string{"import", "--db", filepath.Join(dir, "imp.db"), filepath.Join(dir, "none.nq")}, "", exitTransfer, `no such file`},
		{"import usage", []string{"import"}, "", exitUsage, `usage: mql import`},
		{"version args", []string{"version", "x"}, "", exitUsage, `usage: mql version`},
		{"help", []string{"-h"}, "", exitOK, `^$`}, // on stdout: TestHelp
		{"quit in a script", []string{"-c", "principal alice user\n\\quit\nlive K where", "memory:"}, "", exitOK, `^$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := mqlRun(t, tc.stdin, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, errOut)
			}
			if !regexp.MustCompile(tc.stderrRE).MatchString(errOut) {
				t.Errorf("stderr %q does not match %q", errOut, tc.stderrRE)
			}
		})
	}
}

// TestStoreInUse: a bbolt store held by another opener cannot be opened (exit 4).
func TestStoreInUse(t *testing.T) {
	dir := testEnv(t)
	path := filepath.Join(dir, "held.db")
	db, err := mql.Open(context.Background(), path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, errOut, code := mqlRun(t, "", "-c", "stats", path)
	if code != exitOpen || !strings.Contains(errOut, "in use") {
		t.Errorf("exit %d, stderr %q; want %d and 'in use'", code, errOut, exitOpen)
	}
	// Said once, with what to do: close the other, or share the store through mql serve
	// (issue 23, item 13).
	if n := strings.Count(errOut, path); n != 2 || strings.Count(errOut, "by another process") != 1 || !strings.Contains(errOut, `run "mql serve `+path+`"`) {
		t.Errorf("stderr %q: want the store named, the other process once, and mql serve suggested", errOut)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestDefaultFormatAndDB(t *testing.T) {
	dir := testEnv(t)
	// Not a terminal: JSON, on the default store, which is created with its directory.
	out, errOut, code := mqlRun(t, "", "-c", "principal alice user")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, `{"kind":"principal"`) {
		t.Errorf("default format is not json: %q", out)
	}
	def := filepath.Join(dir, "data", "mql", "default.db")
	if _, err := os.Stat(def); err != nil {
		t.Fatalf("default store: %v", err)
	}
	if fi, _ := os.Stat(filepath.Dir(def)); fi.Mode().Perm() != 0o700 {
		t.Errorf("store directory mode %v, want 0700", fi.Mode().Perm())
	}
	// The store persists; MQL_DB overrides the default.
	out, _, _ = mqlRun(t, "", "--format", "csv", "-c", "stats")
	if !strings.Contains(out, "principals,2") {
		t.Errorf("default store did not keep alice:\n%s", out)
	}
	other := filepath.Join(dir, "other.db")
	t.Setenv("MQL_DB", other)
	if _, e, code := mqlRun(t, "", "-c", "principal bob agent"); code != 0 || e != "mql: created a new store at "+other+"\n" {
		t.Errorf("MQL_DB: exit %d, stderr %q", code, e)
	}
	out, _, _ = mqlRun(t, "", "--format", "csv", "-c", "stats")
	if !strings.Contains(out, "principals,2") {
		t.Errorf("MQL_DB not used:\n%s", out)
	}
	// Flags may follow the DB.
	out, _, code = mqlRun(t, "", "memory:", "--format", "csv", "-c", "stats")
	if code != 0 || !strings.HasPrefix(out, "metric,value") {
		t.Errorf("flags after DB: exit %d\n%s", code, out)
	}
}

func TestActAs(t *testing.T) {
	dir := testEnv(t)
	db := filepath.Join(dir, "as.db")
	setup := `principal alice user
principal architect agent
assert Player7.style = "patient" by architect kind inferred seen by architect
assert Player7.rank = 3 by alice`
	if _, e, code := mqlRun(t, "", "-c", setup, db); code != 0 {
		t.Fatalf("setup: %s", e)
	}
	out, e, code := mqlRun(t, "", "--as", "alice", "--format", "csv", "-c", "live Player7", db)
	if code != 0 || strings.Contains(out, "patient") || !strings.Contains(out, "Player7.rank@1") {
		t.Errorf("as alice: exit %d, %s\n%s", code, e, out)
	}
	out, _, _ = mqlRun(t, "", "--as", "architect", "--format", "csv", "-c", "live Player7", db)
	if !strings.Contains(out, "patient") {
		t.Errorf("as architect: the private claim is missing:\n%s", out)
	}
	_, e, code = mqlRun(t, "", "--as", "alice", "-c", "assert Player7.rank = 4 by architect", db)
	if code != exitFailed || !strings.Contains(e, "-c:1:1:") || !strings.Contains(e, "cannot act as another principal") {
		t.Errorf("writing by another principal: exit %d, %s", code, e)
	}
}

func TestVersion(t *testing.T) {
	out, _, code := mqlRun(t, "", "version")
	if code != 0 || !regexp.MustCompile(`^mql \S+\n$`).MatchString(out) {
		t.Errorf("version: exit %d, %q", code, out)
	}
}

// TestDemo runs the bundled demo on a temporary store and compares its transcript.
func TestDemo(t *testing.T) {
	dir := testEnv(t)
	out, errOut, code := mqlRun(t, "", "demo", filepath.Join(dir, "demo.db"))
	if code != 0 {
		t.Fatalf("demo: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"mql> why Klarveld.price_per_seat", "└─ supersedes @1", "needs review", "mql> revoked-by", "mql> context", "mql> stats"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	// The demo writes a new store, and says so: the only line on stderr.
	if want := "mql demo: created a new store at " + filepath.Join(dir, "demo.db") + "\n"; errOut != want {
		t.Errorf("demo stderr %q, want %q", errOut, want)
	}
	checkGolden(t, "testdata/demo.golden", golden(out, "", code))
	// Without a DB it uses a temporary store, removed afterwards, and says so, and how to keep
	// one (issue 23, item 13).
	out2, errOut2, code := mqlRun(t, "", "demo")
	if code != 0 || out2 != out {
		t.Errorf("demo on a temporary store: exit %d, output differs", code)
	}
	if want := "mql demo: the demo ran on a temporary store, now removed. To keep one to look at: mql demo demo.db, then mql demo.db (the REPL) or mql serve --open demo.db (the browser)\n"; errOut2 != want {
		t.Errorf("demo on a temporary store: stderr %q, want %q", errOut2, want)
	}
}

func TestImportExport(t *testing.T) {
	dir := testEnv(t)
	src := filepath.Join(dir, "src.db")
	if _, e, code := mqlRun(t, "", "-f", "testdata/provenance.mql", src); code != 0 {
		t.Fatalf("setup: %s", e)
	}
	nq := filepath.Join(dir, "out.nq")
	if _, e, code := mqlRun(t, "", "export", "--db", src, "-o", nq); code != 0 {
		t.Fatalf("export: %s", e)
	}
	toStdout, _, _ := mqlRun(t, "", "export", "--db", src)
	if b, _ := os.ReadFile(nq); string(b) != toStdout || len(b) == 0 {
		t.Errorf("export to a file and to stdout differ")
	}
	dst := filepath.Join(dir, "dst.db")
	if _, e, code := mqlRun(t, "", "import", "--db", dst, nq); code != 0 {
		t.Fatalf("import: %s", e)
	}
	a, _, _ := mqlRun(t, "", "--format", "json", "-c", "history Klarveld.price_per_seat\nstats", src)
	b, _, _ := mqlRun(t, "", "--format", "json", "-c", "history Klarveld.price_per_seat\nstats", dst)
	if a != b {
		t.Errorf("imported store differs:\n%s\n%s", a, b)
	}
	// A bad line imports nothing and creates nothing: a correct import into the same path
	// then succeeds.
	lines := strings.Split(toStdout, "\n")
	lines[3] = "garbage"
	bad := filepath.Join(dir, "bad.nq")
	os.WriteFile(bad, []byte(strings.Join(lines, "\n")), 0o644)
	fresh := filepath.Join(dir, "fresh.db")
	_, e, code := mqlRun(t, "", "import", "--db", fresh, bad)
	if code != exitTransfer || !strings.Contains(e, "line 4") {
		t.Errorf("bad import: exit %d, %s", code, e)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a refused import left %s behind: %v", fresh, err)
	}
	if _, e, code := mqlRun(t, "", "import", "--db", fresh, nq); code != 0 || !strings.Contains(e, "imported ") {
		t.Fatalf("import after a refused one: exit %d, %s", code, e)
	}
	// An existing store is never imported into.
	if _, e, code := mqlRun(t, "", "import", "--db", fresh, nq); code != exitTransfer || !strings.Contains(e, "the file exists") {
		t.Errorf("import into an existing store: exit %d, %s", code, e)
	}
	// \export, and \import into a new memory: store, as meta commands in a script; \import
	// into a file store points at mql import.
	nq2 := filepath.Join(dir, "meta.nq")
	if _, e, code := mqlRun(t, "", "-c", `\export `+nq2, src); code != 0 {
		t.Fatalf(`\export: %s`, e)
	}
	if out, e, code := mqlRun(t, "", "--format", "csv", "-c", `\import `+nq2+"\nstats", "memory:"); code != 0 || !strings.Contains(out, "transactions,") {
		t.Fatalf(`\import: %s`, e)
	}
	if _, e, code := mqlRun(t, "", "-c", `\import `+nq2, filepath.Join(dir, "meta.db")); code != exitTransfer || !strings.Contains(e, "mql import FILE NEWDB") {
		t.Errorf(`\import into a file store: exit %d, %s`, code, e)
	}
	if _, e, code := mqlRun(t, "", "-c", `\import `+bad, "memory:"); code != exitTransfer {
		t.Errorf(`\import of a bad file: exit %d, %s`, code, e)
	}
}

// TestHelp: --help (and -h) prints a full synopsis on stdout and exits 0 for mql and every
// subcommand; mql --version and -V print the version.
func TestHelp(t *testing.T) {
	testEnv(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "mql [flags] [DB]"},
		{[]string{"-h"}, "Exit codes:"},
		{[]string{"help"}, "Exit codes:"},
		{[]string{"export", "--help"}, "usage: mql export [--as PRINCIPAL] [-o FILE [--force]] [DB | --db DB]"},
		{[]string{"import", "--help"}, "usage: mql import FILE.nq [DB | --db DB]"},
		{[]string{"check", "--help"}, "usage: mql check [--format text|json] [DB | --db DB]"},
		{[]string{"backup", "--help"}, "usage: mql backup [--force] DB FILE"},
		{[]string{"demo", "--help"}, "usage: mql demo [--format FORMAT] [DB | --db DB]"},
		{[]string{"mcp", "--help"}, "usage: mql mcp [--as PRINCIPAL] [LIMITS] [DB | --db DB]"},
		{[]string{"serve", "--help"}, "usage: mql serve [--listen ADDR]"},
		{[]string{"token", "--help"}, "mql token create NAME"},
		{[]string{"token", "list", "--help"}, "mql token list"},
		{[]string{"version", "--help"}, "usage: mql version"},
	} {
		out, errOut, code := mqlRun(t, "", tc.args...)
		if code != exitOK || !strings.Contains(out, tc.want) || errOut != "" {
			t.Errorf("mql %s: exit %d, stdout %q, stderr %q; want exit 0 and %q on stdout", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
		if tc.args[0] != "help" && tc.args[0] != "-h" && tc.args[0] != "--help" && tc.args[0] != "token" && tc.args[0] != "version" && !strings.Contains(out, "--db DB") {
			t.Errorf("mql %s: the usage does not say how to name the store: %q", strings.Join(tc.args, " "), out)
		}
	}
	// A mistake says what is wrong and where the usage is, on stderr, and exits 2: the whole
	// usage would bury the one line that matters (issue 23, item 12).
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "mql: flag provided but not defined: --nope\nRun \"mql --help\" for the usage.\n"},
		{[]string{"--format"}, "mql: flag needs an argument: --format\nRun \"mql --help\" for the usage.\n"},
		{[]string{"a.db", "b.db"}, "mql: one DB at most, got [\"a.db\" \"b.db\"]\nRun \"mql --help\" for the usage.\n"},
		{[]string{"export", "--nope"}, "mql export: flag provided but not defined: --nope\nRun \"mql export --help\" for the usage.\n"},
		{[]string{"demo", "-x"}, "mql demo: flag provided but not defined: -x\nRun \"mql demo --help\" for the usage.\n"},
	} {
		if out, errOut, code := mqlRun(t, "", tc.args...); code != exitUsage || out != "" || errOut != tc.want {
			t.Errorf("mql %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, out, errOut, tc.want)
		}
	}
	// Every command's usage writes its flags as mql --help does: --db, not Go's -db.
	for _, args := range [][]string{{"demo", "--help"}, {"export", "--help"}, {"check", "--help"}, {"backup", "--help"}, {"serve", "--help"}, {"token", "list", "--help"}} {
		out, _, _ := mqlRun(t, "", args...)
		if !strings.Contains(out, "\n  --db DB\n") || regexp.MustCompile(`(?m)^  -[a-z]{2,}`).MatchString(out) {
			t.Errorf("mql %s: flags not written as --name:\n%s", strings.Join(args, " "), out)
		}
	}
	for _, args := range [][]string{{"--version"}, {"-V"}, {"version"}} {
		if out, _, code := mqlRun(t, "", args...); code != exitOK || !strings.HasPrefix(out, "mql ") {
			t.Errorf("mql %v: exit %d, %q", args, code, out)
		}
	}
}

// TestActAsUnknown: --as names a principal the store does not know: a usage error (exit 2)
// that names it, before anything runs.
func TestActAsUnknown(t *testing.T) {
	dir := testEnv(t)
	db := filepath.Join(dir, "t.db")
	if _, errOut, code := mqlRun(t, "", "-c", "principal alice user", db); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut, code := mqlRun(t, "", "--as", "bob", "-c", "stats", db)
	if code != exitUsage || !strings.Contains(errOut, "--as bob") || !strings.Contains(errOut, `"bob": unknown principal`) {
		t.Fatalf("exit %d: %s", code, errOut)
	}
}

// TestNoInternalWords: messages a user reads do not carry the storage layer's package name
// ("graphstore:") or its sentinel ("storage failure:").
func TestNoInternalWords(t *testing.T) {
	dir := testEnv(t)
	os.Mkdir(filepath.Join(dir, "adir"), 0o755)
	for _, args := range [][]string{
		{"-c", "assert K.p = 1 by owner", filepath.Join(dir, "adir")},
		{"-c", "principal x agent", "postgres://postgres@127.0.0.1:1/x?sslmode=disable&connect_timeout=1"},
		{"export", filepath.Join(dir, "adir")},
		{"check", filepath.Join(dir, "adir")},
	} {
		_, errOut, code := mqlRun(t, "", args...)
		if code == exitOK || errOut == "" {
			t.Errorf("mql %v: exit %d, %q", args, code, errOut)
		}
		if strings.Contains(errOut, "graphstore:") || strings.Contains(errOut, "storage failure:") {
			t.Errorf("mql %v: %q", args, errOut)
		}
	}
}

// TestScriptStreams: a script on stdin runs each statement as it arrives, before the script
// ends: a producer sees each result while it still writes (on a store mql opens, and through
// mql serve). Its statements end with ";", which ends one at once; a newline waits for the next
// line, which may continue the statement with a clause.
func TestScriptStreams(t *testing.T) {
	bin := crashBuild(t)
	home := t.TempDir()
	dir := t.TempDir()
	local, held := filepath.Join(dir, "local.db"), filepath.Join(dir, "held.db")
	for _, db := range []string{local, held} {
		if _, errs, code := runMQL(t, bin, home, "principal w agent\n", "-f", "-", db); code != 0 {
			t.Fatal(errs)
		}
	}
	startServe(t, bin, home, held)
	for _, db := range []string{local, held} {
		cmd := crashCmd(bin, home, "--format", "csv", "-f", "-", db)
		in, _ := cmd.StdinPipe()
		outPipe, _ := cmd.StdoutPipe()
		var errb syncbuf.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 100)
		go func() {
			buf := make([]byte, 4096)
			var acc string
			for {
				n, err := outPipe.Read(buf)
				acc += string(buf[:n])
				for {
					i := strings.IndexByte(acc, '\n')
					if i < 0 {
						break
					}
					lines <- acc[:i]
					acc = acc[i+1:]
				}
				if err != nil {
					close(lines)
					return
				}
			}
		}()
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(in, "assert K.p = %d by w from \"s%d\";\n", i, i)
			deadline := time.After(20 * time.Second)
			for got := false; !got; {
				select {
				case l := <-lines:
					got = strings.HasPrefix(l, fmt.Sprintf("assert,K.p@%d,", i))
				case <-deadline:
					t.Fatalf("%s: statement %d has no result while the script goes on; stderr %s", db, i, errb.String())
				}
			}
		}
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("%s: %v %s", db, err, errb.String())
		}
	}
}

// TestClauseOnNextLine: a write whose clauses go on over the next lines is one statement in
// every script (-c, -f, stdin): it is never committed without them (issue 23, item 7).
func TestClauseOnNextLine(t *testing.T) {
	dir := testEnv(t)
	script := "assert B.p = 39\nby w1\nfrom \"src:b0\"\n"
	file := filepath.Join(dir, "s.mql")
	if err := os.WriteFile(file, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, args := range [][]string{{"-c", script}, {"-f", file}, {}} {
		db := filepath.Join(dir, fmt.Sprintf("t%d.db", i))
		if _, errOut, code := mqlRun(t, "", "-c", "principal w1 agent", db); code != 0 {
			t.Fatal(errOut)
		}
		if _, errOut, code := mqlRun(t, script, append(args, db)...); code != exitOK {
			t.Errorf("mql %v: exit %d: %s", args, code, errOut)
		}
		out, errOut, code := mqlRun(t, "", "--format", "csv", "-c", "live B", db)
		if code != 0 || strings.Count(out, "B.p@") != 1 || !strings.Contains(out, "src:b0") || !strings.Contains(out, "observed") {
			t.Errorf("mql %v: the claim is not the one written, with its source: exit %d\n%s%s", args, code, out, errOut)
		}
	}
}
