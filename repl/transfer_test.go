package repl

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

func TestScriptWrites(t *testing.T) {
	for _, tc := range []struct {
		src    string
		writes bool
	}{
		{"live *", false},
		{"live *; why K.p; stats\nas of tx 3 live K\nas w1 history K.p", false},
		{"\\format csv\nlive *\n\\export out.nq\n\\quit", false},
		{"", false},
		{"-- only a comment\n", false},
		{"live *\nprincipal w1 agent", true},
		{"assert K.p = 1 by owner", true},
		{"live *; revoke K.p@1 by owner", true},
		{"\\import in.nq", true},
		{"  .import in.nq", true},
		{"  .read no-such-script.mql", false}, // \read (\i) runs a script; this one cannot be read
		{"  .read testdata/writes.mql", true},
		{"\\i testdata/reads.mql", false},
		{"decay p half-life 1d", true},
		{"assert K.p = 1 by owner\nlive K where value = = 1", true}, // runs before the syntax error
		{"live K where value = = 1\nassert K.p = 1 by owner", true}, // never runs; counted all the same
		{"live *\n\\format json\nreview plan:x by owner", true},
	} {
		if got := ScriptWrites(tc.src); got != tc.writes {
			t.Errorf("ScriptWrites(%q) = %v, want %v", tc.src, got, tc.writes)
		}
	}
}

// exportShell is a shell on a store file (storeFile) acting as as, with a claim only w2 sees.
func exportShell(t *testing.T, as string) (sh *Shell, out, errb *bytes.Buffer, storeFile string) {
	t.Helper()
	ctx := context.Background()
	storeFile = filepath.Join(t.TempDir(), "z.db")
	db, err := mql.Open(ctx, storeFile, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := query.NewSession(db, "").Exec(ctx, "setup", "principal w1 agent\nprincipal w2 agent\nassert K.h = 1 by w2 seen by w2\nassert K.g = 2 by w1", nil); err != nil {
		t.Fatal(err)
	}
	out, errb = &bytes.Buffer{}, &bytes.Buffer{}
	sh = New(Config{Session: Local(query.NewSession(db, as), "memory:"), StoreFile: storeFile, Stdout: out, Stderr: errb})
	return sh, out, errb, storeFile
}

// newStoreFile creates an mql store at path that holds nothing but its genesis, and returns
// path.
func newStoreFile(t *testing.T, path string) string {
	t.Helper()
	db, err := mql.Open(context.Background(), path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	return path
}

// TestExportNeverOverwritesAStore: \export refuses the open store under any name and any other
// mql store, even with --force, and any other existing file in a script unless --force. (Issue
// 11, item 1: `\export z.db` in a session on z.db replaced the store.)
func TestExportNeverOverwritesAStore(t *testing.T) {
	ctx := context.Background()
	sh, _, _, storeFile := exportShell(t, "")
	dir := filepath.Dir(storeFile)
	other := newStoreFile(t, filepath.Join(dir, "other.db"))
	link := filepath.Join(dir, "link.db")
	hard := filepath.Join(dir, "hard.db")
	if err := os.Symlink(storeFile, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(storeFile, hard); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.nq")
	os.WriteFile(notes, []byte("my notes\n"), 0o644)

	snapshot := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	for _, tc := range []struct {
		name, cmd, path string
		refused         bool
	}{
		{"the open store", `\export ` + storeFile, storeFile, true},
		{"the open store, forced", `\export --force ` + storeFile, storeFile, true},
		{"a symbolic link to it", `\export --force ` + link, storeFile, true},
		{"a hard link to it", `\export --force ` + hard, storeFile, true},
		{"another store, forced", `\export --force ` + other, other, true},
		{"an existing file", `\export ` + notes, notes, true},
		{"the directory", `\export --force ` + dir, notes, true},
		{"an existing file, forced", `\export --force ` + notes, notes, false},
		{"a new file", `\export ` + filepath.Join(dir, "new.nq"), filepath.Join(dir, "new.nq"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(tc.path)
			err := sh.RunScript(ctx, "s", strings.NewReader(tc.cmd))
			after := snapshot(tc.path)
			if tc.refused {
				if !errors.Is(err, ErrTransfer) || !errors.Is(err, ErrOverwrite) {
					t.Fatalf("not refused: %v", err)
				}
				if before != after {
					t.Fatal("the file changed")
				}
				return
			}
			if err != nil || !strings.HasPrefix(after, "# tx 1 ") {
				t.Fatalf("not exported: %v\n%.80s", err, after)
			}
		})
	}
	// The store is intact and takes writes after the refused exports.
	if err := sh.RunScript(ctx, "s", strings.NewReader("assert K.after = 1 by w1")); err != nil {
		t.Fatal(err)
	}
	if !IsStoreFile(storeFile) || !IsStoreFile(hard) {
		t.Fatal("the store is no longer a bbolt file")
	}
}

// TestExportAsksInTheREPL: over an existing file the interactive \export asks, and only y
// writes.
func TestExportAsksInTheREPL(t *testing.T) {
	sh, _, errb, storeFile := exportShell(t, "")
	notes := filepath.Join(filepath.Dir(storeFile), "notes.nq")
	os.WriteFile(notes, []byte("my notes\n"), 0o644)
	for _, answer := range []step{{line: ""}, {line: "n"}, {line: "nope"}, ctrlC, {line: "Y"}} {
		os.WriteFile(notes, []byte("my notes\n"), 0o644)
		lr := &fakeReader{steps: []step{{line: `\export ` + notes}, answer}}
		if err := sh.Run(context.Background(), lr); err != nil {
			t.Fatal(err)
		}
		if len(lr.prompts) < 2 || lr.prompts[1] != notes+" exists; write over it? [y/N] " {
			t.Fatalf("answer %q: prompts %q", answer.line, lr.prompts)
		}
		b, _ := os.ReadFile(notes)
		if yes := answer.line == "Y"; yes != strings.HasPrefix(string(b), "# tx 1 ") {
			t.Errorf("answer %q (%v): the file holds %.40q; stderr %s", answer.line, answer.err, b, errb)
		}
	}
	// The store itself is refused without a question.
	lr := &fakeReader{steps: lines(`\export ` + storeFile)}
	if err := sh.Run(context.Background(), lr); err != nil {
		t.Fatal(err)
	}
	if len(lr.prompts) != 2 || lr.prompts[1] != Prompt || !strings.Contains(errb.String(), "it is the store being exported") {
		t.Errorf("prompts %q, stderr %s", lr.prompts, errb)
	}
}

// TestExportAsThePrincipal: \export holds what the session's principal may see, exactly as the
// reader's export (issue 11, item 2), and \import under another principal than the owner is
// refused.
func TestExportAsThePrincipal(t *testing.T) {
	ctx := context.Background()
	sh, _, _, storeFile := exportShell(t, "w1")
	path := filepath.Join(filepath.Dir(storeFile), "w1.nq")
	if err := sh.RunScript(ctx, "s", strings.NewReader(`\export `+path)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "claim:K.h@") || !strings.Contains(string(b), "claim:K.g@") {
		t.Errorf("w1's export holds what w1 may not see, or misses its own:\n%s", b)
	}
	err := sh.RunScript(ctx, "s", strings.NewReader(`\import `+path))
	if !errors.Is(err, ErrTransfer) || !errors.Is(err, query.ErrActAs) {
		t.Errorf("\\import as w1: %v", err)
	}
}

// TestOutputFile: \o sends results to a file, never over the open store nor another mql store,
// and says so in its own words; a device such as /dev/null takes them, as in psql.
func TestOutputFile(t *testing.T) {
	ctx := context.Background()
	sh, out, errb, storeFile := exportShell(t, "")
	dir := filepath.Dir(storeFile)
	other := newStoreFile(t, filepath.Join(dir, "other.db"))
	for _, tc := range []struct{ path, want string }{
		{storeFile, `\o: refusing to overwrite ` + storeFile + `: it is the open store, which \o never writes over; send the results to another file`},
		{other, `\o: refusing to overwrite ` + other + `: it is an mql store (a bbolt file), which \o never writes over; send the results to another file`},
		{dir, `\o: refusing to overwrite ` + dir + `: it is a directory; name a file`},
	} {
		err := sh.RunScript(ctx, "s", strings.NewReader(`\o `+tc.path))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf(`\o %s: %v, want %q`, tc.path, err, tc.want)
		}
	}
	if !IsStoreFile(storeFile) || !IsStoreFile(other) {
		t.Fatal(`\o damaged a store`)
	}
	out.Reset()
	if err := sh.RunScript(ctx, "s", strings.NewReader("\\o /dev/null\nlive K\n\\o\n")); err != nil {
		t.Fatalf(`\o /dev/null: %v (stderr %s)`, err, errb)
	}
	if out.Len() != 0 {
		t.Errorf(`\o /dev/null: results reached stdout: %s`, out)
	}
}
