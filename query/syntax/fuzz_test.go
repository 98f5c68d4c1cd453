package syntax

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// FuzzParse checks that parsing never panics, that errors have sane
// positions, and that whatever parses prints to source that parses back to
// the same AST. Seeds: every testdata .mql file, whole and line by line,
// and the statement table.
func FuzzParse(f *testing.F) {
	for _, file := range testdataFiles(f, "") {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
		for _, line := range strings.Split(string(data), "\n") {
			f.Add(line)
		}
	}
	for _, tc := range stmtCases {
		f.Add(tc.src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := Parse("fuzz", src)
		Complete(src)
		if err != nil {
			var list ErrorList
			for _, e := range append(list, errorsOf(err)...) {
				if e.Pos.Line < 1 || e.Pos.Column < 1 || e.Pos.Offset < 0 || e.Pos.Offset > len(src) {
					t.Fatalf("error with a bad position: %v (%+v)", e, e.Pos)
				}
				// A name the input itself holds (a subject "AG") is an echo, not jargon.
				for _, w := range jargon.FindAllString(quoted.ReplaceAllString(e.Msg, `""`), -1) {
					if !strings.Contains(src, w) {
						t.Fatalf("error in participle's words: %v", e)
					}
				}
			}
		}
		// Every statement that parsed, alone or in a script without errors,
		// must round-trip.
		for _, st := range s.Stmts {
			printed := st.String()
			again, err := ParseStmt("printed", printed)
			if err != nil {
				t.Fatalf("%q printed as %q, which does not parse: %v", src, printed, err)
			}
			stripPos(st)
			stripPos(again)
			if !reflect.DeepEqual(st, again) {
				t.Fatalf("%q printed as %q, which parses differently:\n%#v\n%#v", src, printed, st, again)
			}
			if p2 := again.String(); p2 != printed {
				t.Fatalf("printing is not stable: %q then %q", printed, p2)
			}
		}
		if err == nil {
			printed := s.String()
			s2, err := Parse("printed", printed)
			if err != nil {
				t.Fatalf("script %q printed as %q, which does not parse: %v", src, printed, err)
			}
			stripPos(s2)
			if !reflect.DeepEqual(s, s2) {
				t.Fatalf("script %q printed as %q, which parses differently", src, printed)
			}
		}
	})
}

// jargon matches what participle's own messages say: token type names and
// grammar struct names.
var jargon = regexp.MustCompile(`<[a-z]+>|\b[A-Z][A-Za-z]*G\b|unexpected token|StmtNode`)

// quoted matches the quoted parts of a message, which echo the input.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

func errorsOf(err error) []*Error {
	switch e := err.(type) {
	case *Error:
		return []*Error{e}
	case ErrorList:
		return e
	}
	return nil
}
