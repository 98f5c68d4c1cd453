package nquads

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"unicode/utf8"
)

// FuzzReader checks that the reader never panics, that an error is a *SyntaxError at a line
// and column inside the document, and that whatever it reads, written canonically, reads
// back as the same terms and writes as the same bytes.
func FuzzReader(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "w3c", "*", "*.n[qt]"))
	if len(files) == 0 {
		f.Fatal("no W3C test files to seed from")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("<urn:s><urn:p>\"x\"@en<urn:g>.\r<urn:s> <urn:p> _:a.b. # c\r\n"))
	f.Add([]byte(`<urn:mql:principal:\u0061lice> <urn:p> "\U0001F600\t" .`))

	lineEnd := regexp.MustCompile(`\r\n|\r|\n`)
	f.Fuzz(func(t *testing.T, data []byte) {
		qs, err := readAll(data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error is not a *SyntaxError: %v", err)
			}
			lines := lineEnd.Split(string(data), -1)
			if se.Line < 1 || se.Line > len(lines) {
				t.Fatalf("line %d outside the document's %d lines: %v", se.Line, len(lines), err)
			}
			if n := utf8.RuneCountInString(lines[se.Line-1]); se.Column < 1 || se.Column > n+1 {
				t.Fatalf("column %d outside line %d of %d characters: %v", se.Column, se.Line, n, err)
			}
		}
		out := format(qs)
		again, err := readAll([]byte(out))
		if err != nil {
			t.Fatalf("canonical form refused: %v\n%s", err, out)
		}
		if !sameQuads(qs, again) {
			t.Fatalf("round trip changed the terms:\n%#v\n%#v", qs, again)
		}
		if out2 := format(again); !bytes.Equal([]byte(out), []byte(out2)) {
			t.Fatalf("canonical form is not stable:\n%s\n%s", out, out2)
		}
	})
}
