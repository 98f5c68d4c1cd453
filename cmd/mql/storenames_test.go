package main

// Store names, export and escaping, through the real binary and a real shell, as an outside
// attacker ran them: the store is named the same way by every command, an export never writes
// over a store, a read never creates one, --as holds for \export, --owner is a name, and
// agent-written text never drives the terminal.

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

type shellRun struct {
	out, err string
	code     int
}

// shellScript runs script with sh -c in dir, with the built mql first on PATH and every
// location mql uses under home.
func shellScript(t *testing.T, bin, home, dir, script string) shellRun {
	t.Helper()
	cmd := crashCmd("sh", home, "-c", script)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, errOut, code := runExit(t, cmd)
	return shellRun{out, errOut, code}
}

func fileBytes(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

func mustNotExist(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s was created", path)
	}
}

func TestStoreNamesExportAndEscaping(t *testing.T) {
	bin := crashBuild(t)
	home := t.TempDir()
	defaultStore := filepath.Join(home, "data", "mql", "default.db")
	// run runs a script in a fresh directory holding a store team.db with a claim only w2 sees.
	setup := func(t *testing.T) string {
		t.Helper()
		dir := t.TempDir()
		r := shellScript(t, bin, home, dir, `mql -c 'principal w1 agent; principal w2 agent
assert K.h = 1 by w2 seen by w2
assert K.g = 2 by w1' team.db`)
		if r.code != 0 || r.err != "mql: created a new store at team.db\n" {
			t.Fatalf("setup: exit %d\n%s", r.code, r.err)
		}
		return dir
	}
	sound := func(t *testing.T, dir, db string) {
		t.Helper()
		if r := shellScript(t, bin, home, dir, "mql check "+db); r.code != 0 {
			t.Errorf("mql check %s: exit %d\n%s%s", db, r.code, r.out, r.err)
		}
	}

	// Item 1: the README's own line exports team.db, leaves it whole, creates no default store,
	// and the import makes the same store.
	t.Run("readme export line", func(t *testing.T) {
		dir := setup(t)
		readme := fileBytes(t, "../../README.md")
		line := "mql export team.db > team.nq && mql import team.nq copy.db"
		if !strings.Contains(readme, line) {
			t.Fatalf("the README no longer shows %q", line)
		}
		if r := shellScript(t, bin, home, dir, line); r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.err)
		}
		if nq := fileBytes(t, filepath.Join(dir, "team.nq")); !strings.HasPrefix(nq, "# tx 1 ") || !strings.Contains(nq, "claim:K.h@1") {
			t.Errorf("team.nq is not the export:\n%.200s", nq)
		}
		sound(t, dir, "team.db")
		mustNotExist(t, defaultStore)
		a := shellScript(t, bin, home, dir, "mql -c 'history K.h; history K.g; stats' team.db")
		b := shellScript(t, bin, home, dir, "mql -c 'history K.h; history K.g; stats' copy.db")
		if a.code != 0 || a.out != b.out {
			t.Errorf("the imported store differs:\n%s\n%s", a.out, b.out)
		}
	})

	t.Run("export never writes over a store", func(t *testing.T) {
		dir := setup(t)
		store := filepath.Join(dir, "team.db")
		before := fileBytes(t, store)
		other := filepath.Join(dir, "other.db")
		shellScript(t, bin, home, dir, "mql -c 'principal x agent' other.db; ln -s team.db link.db; ln team.db hard.db; echo notes > notes.nq")
		otherBefore := fileBytes(t, other)
		for _, tc := range []struct {
			script string
			code   int
			errRE  string
		}{
			{"mql export --db team.db team.db", exitUsage, `named twice`},
			{"mql export -o team.db team.db", exitTransfer, `refusing to overwrite team.db: it is the store being exported`},
			{"mql export --force -o team.db team.db", exitTransfer, `even when forced`},
			{"mql export --force -o link.db team.db", exitTransfer, `it is the store being exported`},
			{"mql export --force --output hard.db --db team.db", exitTransfer, `it is the store being exported`},
			{"mql export --force -o other.db team.db", exitTransfer, `it is an mql store`},
			{"mql export -o notes.nq team.db", exitTransfer, `notes.nq: it exists; add --force`},
			{"MQL_DB=team.db mql export >> team.db", exitTransfer, `stdout is the store file team.db itself`},
			{"mql -c '\\export team.db' team.db", exitTransfer, `it is the store being exported`},
			{"mql -c '\\export --force hard.db' team.db", exitTransfer, `it is the store being exported`},
			{"mql -c '\\export other.db' team.db", exitTransfer, `it is an mql store`},
			{"mql -c '\\export notes.nq' team.db", exitTransfer, `\\export --force notes.nq writes over it`},
		} {
			r := shellScript(t, bin, home, dir, tc.script)
			if r.code != tc.code || !regexp.MustCompile(tc.errRE).MatchString(r.err) {
				t.Errorf("%s: exit %d, want %d; stderr %q", tc.script, r.code, tc.code, r.err)
			}
			if fileBytes(t, store) != before || fileBytes(t, other) != otherBefore {
				t.Fatalf("%s changed a store", tc.script)
			}
			if fileBytes(t, filepath.Join(dir, "notes.nq")) != "notes\n" {
				t.Fatalf("%s changed notes.nq", tc.script)
			}
		}
		sound(t, dir, "team.db")
		mustNotExist(t, defaultStore)
		// --force replaces a file that is not a store.
		if r := shellScript(t, bin, home, dir, "mql export --force -o notes.nq team.db && mql -c '\\export --force notes2.nq' team.db"); r.code != 0 || !strings.HasPrefix(fileBytes(t, filepath.Join(dir, "notes.nq")), "# tx 1 ") {
			t.Errorf("--force: exit %d %s", r.code, r.err)
		}
	})

	// The shell empties the store before mql runs: mql says so, and makes no new store there.
	t.Run("stdout redirected onto the store", func(t *testing.T) {
		dir := setup(t)
		r := shellScript(t, bin, home, dir, "mql export team.db > team.db")
		if r.code != exitTransfer || !strings.Contains(r.err, "the shell truncated it") || !strings.Contains(r.err, "did not create a new store") {
			t.Errorf("exit %d, stderr %q", r.code, r.err)
		}
		if fi, err := os.Stat(filepath.Join(dir, "team.db")); err != nil || fi.Size() != 0 {
			t.Errorf("team.db: %v, %d bytes; want left empty", err, fi.Size())
		}
		r = shellScript(t, bin, home, dir, "mql -c 'principal a agent' team.db > team.db")
		if r.code != exitOpen || !strings.Contains(r.err, "stdout is the store file") {
			t.Errorf("a write with stdout on the store: exit %d, stderr %q", r.code, r.err)
		}
		if fi, _ := os.Stat(filepath.Join(dir, "team.db")); fi.Size() != 0 {
			t.Error("a new store was created over the truncated file")
		}
	})

	// Item 2: --as holds for \export as for mql export; \import as another principal is refused.
	t.Run("export as a principal", func(t *testing.T) {
		dir := setup(t)
		r := shellScript(t, bin, home, dir, `mql --as w1 -c '\export w1.nq' team.db && mql export --as w1 team.db > w1b.nq`)
		if r.code != 0 {
			t.Fatalf("exit %d %s", r.code, r.err)
		}
		a, b := fileBytes(t, filepath.Join(dir, "w1.nq")), fileBytes(t, filepath.Join(dir, "w1b.nq"))
		if a != b || strings.Contains(a, "K.h") || !strings.Contains(a, "claim:K.g@1") {
			t.Errorf("\\export as w1 differs from mql export --as w1, or holds w2's claim:\n%s", a)
		}
		r = shellScript(t, bin, home, dir, `mql -c 'principal w1 agent' new.db && mql --as w1 -c '\import w1.nq' new.db`)
		if r.code != exitTransfer || !strings.Contains(r.err, "only the owner (owner) may import") {
			t.Errorf("\\import as w1: exit %d %q", r.code, r.err)
		}
	})

	// Item 14: a read, check and export on a missing path fail with exit 4 and create nothing;
	// a write creates the store and says so.
	t.Run("missing store", func(t *testing.T) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "empty.db"), nil, 0o644)
		for _, tc := range []struct{ script, errRE string }{
			{"mql -c 'live *' teem.db", `^mql: no such store: teem.db does not exist; a script that only reads never creates a store`},
			{"echo 'live *' | mql teem.db", `no such store: teem.db does not exist`},
			{"mql -c '\\export x.nq' teem.db", `no such store`},
			{"mql check teem.db", `^mql check: no such store: teem.db does not exist`},
			{"mql export teem.db", `^mql export: no such store: teem.db does not exist`},
			{"mql export --db teem.db -o x.nq", `no such store`},
			{"mql --as w1 -c 'assert K.p = 1 by w1' teem.db", `a script acting as w1 never creates a store`},
			// A write that does not parse is not taken for a read: the refusal names the error.
			{"mql -c 'assert K.p = 1' teem.db", `^mql: no such store: teem.db does not exist; the script was not run, since it does not parse: -c:1:15: expected "by"`},
			{"mql -c 'live *; asert K.p = 1 by owner; principal a agent' teem.db", `does not parse: -c:1:9: unknown statement "asert"`},
			{"mql -c 'live *'", `no such store: .*default.db does not exist`},
			{"mql export", `no such store: .*default.db does not exist`},
			{"mql -c 'live *' empty.db", `empty.db is an empty file, not an mql store`},
			{"mql check empty.db", `empty.db is an empty file, not an mql store`},
		} {
			r := shellScript(t, bin, home, dir, tc.script)
			if r.code != exitOpen || !regexp.MustCompile(tc.errRE).MatchString(r.err) {
				t.Errorf("%s: exit %d, stderr %q; want %d and %s", tc.script, r.code, r.err, exitOpen, tc.errRE)
			}
		}
		mustNotExist(t, filepath.Join(dir, "teem.db"))
		mustNotExist(t, filepath.Join(dir, "x.nq"))
		mustNotExist(t, defaultStore)
		if fi, _ := os.Stat(filepath.Join(dir, "empty.db")); fi.Size() != 0 {
			t.Error("empty.db was initialised")
		}
		r := shellScript(t, bin, home, dir, "mql -c 'principal a agent' teem.db")
		if r.code != 0 || r.err != "mql: created a new store at teem.db\n" {
			t.Errorf("a write: exit %d, stderr %q", r.code, r.err)
		}
		r = shellScript(t, bin, home, dir, "mql -c 'principal b agent' teem.db && mql -c 'live *' teem.db")
		if r.code != 0 || r.err != "" {
			t.Errorf("on the existing store: exit %d, stderr %q", r.code, r.err)
		}
	})

	// Item 13: --owner is a principal name, checked before anything is created.
	t.Run("owner is a name", func(t *testing.T) {
		dir := setup(t)
		shellScript(t, bin, home, dir, "mql export team.db > team.nq")
		for _, script := range []string{
			"mql --owner 'bad name' -c 'principal a agent' o.db",
			"mql --owner 'bad name' o.db < /dev/null",
		} {
			r := shellScript(t, bin, home, dir, script)
			if r.code != exitUsage || !strings.Contains(r.err, `--owner "bad name": bad reference`) {
				t.Errorf("%s: exit %d, stderr %q", script, r.code, r.err)
			}
		}
		// An import takes its owner from the file: it has no --owner to get wrong.
		if r := shellScript(t, bin, home, dir, "mql import --owner 'bad name' team.nq o.db"); r.code != exitUsage || !strings.Contains(r.err, "flag provided but not defined: --owner") {
			t.Errorf("import --owner: exit %d, stderr %q", r.code, r.err)
		}
		mustNotExist(t, filepath.Join(dir, "o.db"))
		r := shellScript(t, bin, home, dir, "mql --owner lead -c 'principal a agent' o.db && mql -c 'grant a assert on * by lead' o.db")
		if r.code != 0 {
			t.Errorf("a good owner: exit %d %s", r.code, r.err)
		}
	})

	// Every command names its store as DB or --db DB, never both.
	t.Run("one store convention", func(t *testing.T) {
		dir := setup(t)
		shellScript(t, bin, home, dir, "mql export team.db > team.nq")
		for _, script := range []string{
			"mql -c stats --db team.db team.db",
			"mql export --db team.db team.db",
			"mql import team.nq --db a.db b.db",
			"mql check --db team.db team.db",
			"mql demo --db a.db b.db",
			"mql mcp --db team.db team.db < /dev/null",
			"mql check team.db other.db",
		} {
			if r := shellScript(t, bin, home, dir, script); r.code != exitUsage {
				t.Errorf("%s: exit %d, want %d; %s", script, r.code, exitUsage, r.err)
			}
		}
		for _, script := range []string{
			"mql -c stats --db team.db",
			"mql check --db team.db",
			"mql export --db team.db -o a.nq && mql export team.db -o b.nq && cmp a.nq b.nq",
			"mql import team.nq i1.db && mql import --db i2.db team.nq && mql import team.nq --db i3.db",
			"mql import - i4.db < team.nq",
		} {
			if r := shellScript(t, bin, home, dir, script); r.code != 0 {
				t.Errorf("%s: exit %d; %s", script, r.code, r.err)
			}
		}
	})

	// Item 5: the attack strings through the command, in each format a terminal shows.
	t.Run("escaping", func(t *testing.T) {
		dir := t.TempDir()
		r := shellScript(t, bin, home, dir, `mql -c 'principal w1 agent
assert K.h = 1 by w1 from "\x1b[2K\x1b[1A\x1b[31mFAKE ROW\x1b[0m" uri "http://x/\u202eexe.txt" revision "\u009b2J"
revoke K.h@1 by w1 because "misread\nrevoked by   owner"' a.db`)
		if r.code != 0 {
			t.Fatalf("setup: %d %s", r.code, r.err)
		}
		for _, f := range []string{"table", "tree", "json"} {
			r := shellScript(t, bin, home, dir, "mql --format "+f+" -c 'history K.h; why K.h@1; revoked-by K.h@1' a.db")
			if r.code != 0 {
				t.Fatalf("%s: exit %d %s", f, r.code, r.err)
			}
			for i, c := range r.out {
				if c == utf8.RuneError || (c != '\n' && (c < 0x20 || c == 0x7f || c >= 0x80 && c <= 0x9f || c >= 0x202a && c <= 0x202e || c >= 0x2066 && c <= 0x2069)) {
					t.Fatalf("%s: %U at byte %d:\n%s", f, c, i, r.out)
				}
			}
			if strings.Contains(r.out, "\nrevoked by   owner") || strings.Contains(r.out, "\nFAKE") {
				t.Errorf("%s: a spoofed row:\n%s", f, r.out)
			}
		}
	})

	// \export asks in the REPL, under a terminal; a refused \export of the store itself leaves
	// it working, and the writes after it are kept.
	t.Run("repl", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("no pseudo-terminals")
		}
		dir := t.TempDir()
		notes := filepath.Join(dir, "notes.nq")
		os.WriteFile(notes, []byte("notes\n"), 0o644)
		cmd := crashCmd(bin, home, "z.db")
		cmd.Dir = dir
		cmd.Env = append(cmd.Env, "TERM=xterm")
		c, exited := startConsole(t, cmd, 40)
		c.expect("mql> ")
		c.send("principal w1 agent\r")
		c.expect("mql: created a new store at z.db") // at the first write
		c.expect("(tx 2)")
		c.send("\\export notes.nq\r")
		c.expect("notes.nq exists; write over it? [y/N] ")
		c.send("n\r")
		c.expect("not exported: notes.nq is unchanged")
		c.expect("mql> ")
		if fileBytes(t, notes) != "notes\n" {
			t.Fatal("declined, yet notes.nq changed")
		}
		c.send("\\export z.db\r")
		c.expect("refusing to overwrite z.db: it is the store being exported")
		c.expect("mql> ")
		c.send("assert K.after = 1 by w1\r")
		c.expect("K.after@1  live  (tx 3)")
		c.send("\\export notes.nq\r")
		c.expect("write over it? [y/N] ")
		c.send("y\r")
		c.expect("exported to notes.nq")
		c.expect("mql> ")
		c.send("\x04")
		c.leaves(exited, "Ctrl-D")
		<-c.done
		if !strings.Contains(fileBytes(t, notes), "claim:K.after@1") {
			t.Error("the confirmed export lacks the write made after the refused one")
		}
		r := shellScript(t, bin, home, dir, "mql --format csv -c 'live K' z.db")
		if r.code != 0 || !strings.Contains(r.out, "K.after@1") {
			t.Errorf("the write after the refused export was lost: exit %d\n%s%s", r.code, r.out, r.err)
		}
	})
}
