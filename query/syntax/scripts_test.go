package syntax

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testdataFiles returns every .mql file under testdata.
func testdataFiles(t testing.TB, dir string) []string {
	var files []string
	err := filepath.WalkDir(filepath.Join("testdata", dir), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".mql") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no .mql files under testdata/%s: %v", dir, err)
	}
	return files
}

// TestScripts parses the example scripts, which must be free of errors, and
// checks that printing them gives a script that parses to the same AST.
func TestScripts(t *testing.T) {
	for _, file := range testdataFiles(t, "scripts") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(file, string(data))
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Stmts) < 5 {
				t.Fatalf("only %d statements", len(s.Stmts))
			}
			if !Complete(string(data)) {
				t.Error("Complete is false")
			}
			printed := s.String()
			s2, err := Parse("printed", printed)
			if err != nil {
				t.Fatalf("printed script does not parse: %v\n%s", err, printed)
			}
			stripPos(s)
			stripPos(s2)
			if !reflect.DeepEqual(s, s2) {
				t.Errorf("round trip differs:\n%s", printed)
			}
		})
	}
}

// TestScriptCoverage checks that the procurement script uses every
// statement.
func TestScriptCoverage(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "scripts", "procurement.mql"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse("procurement.mql", string(data))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, st := range s.Stmts {
		seen[reflect.TypeOf(st).Elem().Name()] = true
	}
	for _, name := range []string{"Principal", "Grant", "Assert", "Revoke", "Confirm", "Derive", "Review", "Decay",
		"Live", "Find", "Why", "RevokedBy", "Impact", "History", "Conflicts", "Context", "Stats"} {
		if !seen[name] {
			t.Errorf("procurement.mql has no %s statement", name)
		}
	}
}
