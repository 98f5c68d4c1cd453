package nquads

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cayleygraph/quad"
)

// w3cTest is one entry of a W3C test manifest.
type w3cTest struct {
	name     string
	kind     string // the rdft: type, such as TestNQuadsNegativeSyntax
	positive bool
	file     string // path of the mf:action
	result   string // path of the mf:result, for a canonicalization test
}

var (
	manifestEntry   = regexp.MustCompile(`(?m)^(?:<#([^>]+)>|:(\S+))\s+(?:a|rdf:type)\s+rdft:(Test\w*?(Positive|Negative)\w*)\s*;`)
	manifestAction  = regexp.MustCompile(`mf:action\s+<([^>]+)>`)
	manifestResult  = regexp.MustCompile(`mf:result\s+<([^>]+)>`)
	manifestList    = regexp.MustCompile(`(?s)mf:entries\s*\((.*?)\)`)
	manifestComment = regexp.MustCompile(`(?m)^\s*#.*$`)
)

// readManifest reads the entries of a manifest.ttl: each entry's name, its type, and its
// mf:action and mf:result files. It checks that it found every entry that mf:entries lists,
// so a manifest it misreads fails the test instead of shrinking it.
func readManifest(t *testing.T, dir string) []w3cTest {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(dir, "manifest.ttl"))
	if err != nil {
		t.Fatal(err)
	}
	s := manifestComment.ReplaceAllString(string(text), "")
	list := manifestList.FindStringSubmatch(s)
	if list == nil {
		t.Fatalf("%s: no mf:entries list", dir)
	}
	listed := strings.Fields(list[1])
	locs := manifestEntry.FindAllStringSubmatchIndex(s, -1)
	byName := map[string]w3cTest{}
	for i, loc := range locs {
		end := len(s)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		var name string
		if loc[2] >= 0 {
			name = s[loc[2]:loc[3]]
		} else {
			name = s[loc[4]:loc[5]]
		}
		action := manifestAction.FindStringSubmatch(s[loc[1]:end])
		if action == nil {
			t.Fatalf("%s: entry %s has no mf:action", dir, name)
		}
		tc := w3cTest{
			name:     name,
			kind:     s[loc[6]:loc[7]],
			positive: s[loc[8]:loc[9]] == "Positive",
			file:     filepath.Join(dir, action[1]),
		}
		if result := manifestResult.FindStringSubmatch(s[loc[1]:end]); result != nil {
			tc.result = filepath.Join(dir, result[1])
		}
		byName[name] = tc
	}
	var tests []w3cTest
	for _, l := range listed {
		name := strings.TrimPrefix(strings.TrimSuffix(strings.TrimPrefix(l, "<#"), ">"), ":")
		tc, ok := byName[name]
		if !ok {
			t.Fatalf("%s: listed entry %s not found", dir, l)
		}
		tests = append(tests, tc)
	}
	if len(tests) != len(byName) || len(tests) == 0 {
		t.Fatalf("%s: %d entries listed, %d described", dir, len(tests), len(byName))
	}
	return tests
}

// readAll reads every quad of a document, stopping at the first error.
func readAll(data []byte) ([]quad.Quad, error) {
	r := NewReader(bytes.NewReader(data))
	var qs []quad.Quad
	for {
		q, err := r.Next()
		if errors.Is(err, io.EOF) {
			return qs, nil
		}
		if err != nil {
			return qs, err
		}
		qs = append(qs, q)
	}
}

// format writes quads in canonical form, one a line.
func format(qs []quad.Quad) string {
	var b strings.Builder
	for _, q := range qs {
		b.WriteString(FormatQuad(q))
		b.WriteByte('\n')
	}
	return b.String()
}

// lineCount is the number of lines in data, with CR, LF and CR LF each ending one.
func lineCount(data []byte) int {
	n := 0
	for i := 0; i < len(data); i++ {
		if data[i] == '\r' || data[i] == '\n' {
			n++
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
		}
	}
	if len(data) > 0 && data[len(data)-1] != '\n' && data[len(data)-1] != '\r' {
		n++
	}
	return n
}

// nthLine is line n (1-based) of data.
func nthLine(data []byte, n int) []byte {
	lines := regexp.MustCompile(`\r\n|\r|\n`).Split(string(data), -1)
	if n < 1 || n > len(lines) {
		return nil
	}
	return []byte(lines[n-1])
}

// wantPosition is where the reader reports each negative test of the suites: the line and
// column of the first character that makes the document not N-Quads. Checked by hand against
// each file; the test fails when a negative test is added that is not here.
var wantPosition = map[string][2]int{
	"nq-syntax-bad-literal-01": {1, 58}, // "o" as the graph
	"nq-syntax-bad-literal-02": {1, 58},
	"nq-syntax-bad-literal-03": {1, 58},
	"nq-syntax-bad-uri-01":     {2, 58}, // <g>
	"nq-syntax-bad-quint-01":   {2, 77}, // the fifth term
	"nt-syntax-bad-uri-01":     {2, 17}, // the space
	"nt-syntax-bad-uri-02":     {2, 17}, // \u00ZZ
	"nt-syntax-bad-uri-03":     {2, 17}, // \U00ZZ1111
	"nt-syntax-bad-uri-04":     {2, 17}, // \n
	"nt-syntax-bad-uri-05":     {2, 17}, // \/
	"nt-syntax-bad-uri-06":     {2, 1},  // <s>
	"nt-syntax-bad-uri-07":     {2, 20}, // <p>
	"nt-syntax-bad-uri-08":     {2, 39}, // <o>
	"nt-syntax-bad-uri-09":     {2, 46}, // ^^<dt>
	"nt-syntax-bad-prefix-01":  {1, 1},
	"nt-syntax-bad-base-01":    {1, 1},
	"nt-syntax-bad-bnode-01":   {1, 3},  // the second ':'
	"nt-syntax-bad-bnode-02":   {1, 6},  // the ':' in abc:def
	"nt-syntax-bad-struct-01":  {1, 57}, // ','
	"nt-syntax-bad-struct-02":  {1, 57}, // ';'
	"nt-syntax-bad-lang-01":    {2, 48}, // the 1 of @1
	"nt-syntax-bad-esc-01":     {2, 41}, // \z
	"nt-syntax-bad-esc-02":     {2, 40}, // \uWXYZ
	"nt-syntax-bad-esc-03":     {2, 40}, // \U0000WXYZ
	"nt-syntax-bad-string-01":  {1, 39}, // "abc' opens a literal that never closes
	"nt-syntax-bad-string-02":  {1, 39}, // 1.0
	"nt-syntax-bad-string-03":  {1, 39}, // 1.0e1
	"nt-syntax-bad-string-04":  {1, 39}, // '''abc'''
	"nt-syntax-bad-string-05":  {1, 41}, // """abc""": "" is a literal, then "abc" stands where the graph goes
	"nt-syntax-bad-string-06":  {1, 39}, // "abc .
	"nt-syntax-bad-string-07":  {1, 39}, // abc"
	"nt-syntax-bad-num-01":     {1, 39},
	"nt-syntax-bad-num-02":     {1, 39},
	"nt-syntax-bad-num-03":     {1, 39},
}

func TestW3CSuites(t *testing.T) {
	for _, suite := range []string{"rdf-n-quads", "rdf-n-triples"} {
		t.Run(suite, func(t *testing.T) {
			tests := readManifest(t, filepath.Join("testdata", "w3c", suite))
			var pos, neg int
			for _, tc := range tests {
				if !strings.HasSuffix(tc.kind, "Syntax") {
					t.Fatalf("%s: unexpected test type %s", tc.name, tc.kind)
				}
				data, err := os.ReadFile(tc.file)
				if err != nil {
					t.Fatal(err)
				}
				qs, err := readAll(data)
				if tc.positive {
					pos++
					if err != nil {
						t.Errorf("%s: positive test refused: %v", tc.name, err)
						continue
					}
					if len(qs) == 0 && len(bytes.TrimSpace(data)) > 0 && !commentsOnly(data) {
						t.Errorf("%s: read no quads", tc.name)
					}
					// Formatted canonically and read again, the quads are the same terms.
					again, err := readAll([]byte(format(qs)))
					if err != nil {
						t.Errorf("%s: canonical form refused: %v\n%s", tc.name, err, format(qs))
						continue
					}
					if !sameQuads(qs, again) {
						t.Errorf("%s: round trip changed the terms:\n%v\n%v", tc.name, qs, again)
					}
					continue
				}
				neg++
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Errorf("%s: negative test not refused with a *SyntaxError: err=%v, quads=%v", tc.name, err, qs)
					continue
				}
				if se.Line < 1 || se.Line > lineCount(data) {
					t.Errorf("%s: line %d outside the file's %d lines", tc.name, se.Line, lineCount(data))
				}
				line := []rune(string(nthLine(data, se.Line)))
				if se.Column < 1 || se.Column > len(line)+1 {
					t.Errorf("%s: column %d outside line %d (%d characters)", tc.name, se.Column, se.Line, len(line))
				}
				want, ok := wantPosition[tc.name]
				if !ok {
					t.Errorf("%s: no expected position (got %v)", tc.name, se)
				} else if [2]int{se.Line, se.Column} != want {
					t.Errorf("%s: error at line %d, column %d, want %d, %d: %v", tc.name, se.Line, se.Column, want[0], want[1], se)
				}
			}
			t.Logf("%d positive and %d negative syntax tests", pos, neg)
		})
	}
}

func commentsOnly(data []byte) bool {
	for _, l := range regexp.MustCompile(`\r\n|\r|\n`).Split(string(data), -1) {
		l = strings.TrimLeft(l, " \t")
		if l != "" && l[0] != '#' {
			return false
		}
	}
	return true
}

func sameQuads(a, b []quad.Quad) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rdf12Only are the entries of the RDF 1.2 canonicalization suite written in RDF 1.2 syntax
// (triple terms, base directions), which an RDF 1.1 reader refuses.
var rdf12Only = map[string]bool{
	"dirlangtagged_string": true,
	"triple-term-01":       true,
	"triple-term-02":       true,
	"triple-term-03":       true,
	"triple-term-04":       true,
}

// TestW3CCanonicalPairs uses the expected outputs of the RDF 1.2 N-Quads canonicalization
// suite as an independent check that the reader reads the same terms: each input and its
// canonical form, written differently, must read as identical quads. (mql's canonical form
// is the exporter's and differs from RDF 1.2's in how it escapes a few characters, so the
// texts are not compared.)
func TestW3CCanonicalPairs(t *testing.T) {
	tests := readManifest(t, filepath.Join("testdata", "w3c", "rdf12-n-quads-c14n"))
	compared := 0
	for _, tc := range tests {
		if tc.kind != "TestNQuadsPositiveC14N" || tc.result == "" {
			t.Fatalf("%s: unexpected test type %s or no mf:result", tc.name, tc.kind)
		}
		input, err := os.ReadFile(tc.file)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(tc.result)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAll(input)
		if rdf12Only[tc.name] {
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("%s: RDF 1.2 syntax not refused: %v", tc.name, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		canon, err := readAll(want)
		if err != nil {
			t.Errorf("%s: canonical form: %v", tc.name, err)
			continue
		}
		if len(got) == 0 || !sameQuads(got, canon) {
			t.Errorf("%s: read\n%#v\ncanonical form reads\n%#v", tc.name, got, canon)
		}
		compared++
	}
	if compared+len(rdf12Only) != len(tests) {
		t.Fatalf("compared %d of %d entries", compared, len(tests))
	}
	t.Logf("%d pairs read as the same terms", compared)
}
