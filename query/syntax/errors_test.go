package syntax

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The error tests follow go/parser's: each file in testdata/errors is
// parsed whole, and every line that must fail ends with a marker comment
//
//	-- ERROR "regexp"      (or -- ERROR `regexp`, a Go string literal)
//
// The error must be reported at the last token before the marker (its
// line, column and offset are checked) with a message the regexp matches,
// and no other error may be reported. A statement whose error is in its
// middle is continued on the next line when the part before the marker is
// incomplete, so that the marker can follow the offending token.

var markerRx = regexp.MustCompile("--\\s*ERROR\\s+(\"(?:[^\"\\\\]|\\\\.)*\"|`[^`]*`)\\s*$")

type expectation struct {
	pos  Position
	rx   *regexp.Regexp
	line string
	seen bool
}

// expectations finds the markers in src and where each error must be.
func expectations(t *testing.T, name, src string) map[int]*expectation {
	t.Helper()
	want := map[int]*expectation{}
	all, _, _ := scan(name, src, true, 0)
	off := 0
	for n, line := range strings.SplitAfter(src, "\n") {
		m := markerRx.FindStringSubmatchIndex(strings.TrimRight(line, "\n"))
		start := off
		off += len(line)
		if m == nil {
			continue
		}
		lit := line[m[2]:m[3]]
		pattern, err := strconv.Unquote(lit)
		if err != nil {
			t.Fatalf("%s:%d: bad marker %s: %v", name, n+1, lit, err)
		}
		rx, err := regexp.Compile(pattern)
		if err != nil {
			t.Fatalf("%s:%d: bad regexp %s: %v", name, n+1, lit, err)
		}
		// The last token before the marker. (A marker inside an
		// unterminated string follows the error token at its quote.)
		var last *tok
		for i := range all {
			tt := all[i].Type
			if all[i].Pos.Offset >= start+m[0] {
				break
			}
			if tt != tokEOF && tt != tokNewline && tt != tokComment {
				last = &all[i]
			}
		}
		if last == nil || last.Pos.Line != n+1 {
			t.Fatalf("%s:%d: no token before the marker on its line", name, n+1)
		}
		p := posOf(last.Pos)
		want[p.Offset] = &expectation{pos: p, rx: rx, line: strings.TrimSpace(line)}
	}
	return want
}

func TestErrorFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.mql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no error files: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			name := filepath.ToSlash(file)
			want := expectations(t, name, string(data))
			if len(want) == 0 {
				t.Fatal("no ERROR markers")
			}
			r := parseScript(name, string(data), 0)
			for _, e := range r.errs {
				x, ok := want[e.Pos.Offset]
				switch {
				case !ok:
					t.Errorf("unexpected error: %v", e)
				case x.seen:
					t.Errorf("second error at the same place: %v", e)
				case x.pos != e.Pos:
					t.Errorf("%v: position %v, want %v", e, e.Pos, x.pos)
				case !x.rx.MatchString(e.Msg):
					t.Errorf("%v: message does not match %q", e, x.rx)
				}
				if ok {
					x.seen = true
				}
			}
			for _, x := range want {
				if !x.seen {
					t.Errorf("%v: missing error matching %q for: %s", x.pos, x.rx, x.line)
				}
			}
		})
	}
}
