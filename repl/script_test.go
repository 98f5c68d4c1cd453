package repl

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql/query"
)

// TestScannerClauseOnNextLine: a line that begins with a clause keyword continues the
// statement above it, even one complete at its line's end, across blank and comment lines;
// any other line, a meta command or a ";" ends it.
func TestScannerClauseOnNextLine(t *testing.T) {
	type item struct {
		meta      bool
		text      string
		line, col int
	}
	for _, tc := range []struct {
		src  string
		want []item
	}{
		{"assert B.p = 39\nby w1\nfrom \"src:b0\"\n", []item{{false, "assert B.p = 39\nby w1\nfrom \"src:b0\"\n", 1, 1}}},
		{"assert B.p = 39 by w1\n\n  -- its source\n  from \"s\"\nstats\n", []item{
			{false, "assert B.p = 39 by w1\n\n\n  from \"s\"\n", 1, 1}, {false, "stats\n", 5, 1}}},
		{"stats\n\n\\format csv\nlive X\n  where value > 1", []item{
			{false, "stats\n", 1, 1}, {true, `\format csv`, 3, 1}, {false, "live X\n  where value > 1", 4, 1}}},
		{"assert B.p = 39 by w1;\nfrom \"s\"\n", []item{
			{false, "assert B.p = 39 by w1;", 1, 1}, {false, "from \"s\"\n", 2, 1}}},
		{"stats\nfrom_x\nby-w\n", []item{{false, "stats\n", 1, 1}, {false, "from_x\n", 2, 1}, {false, "by-w\n", 3, 1}}},
		{"stats\nfor--me\n  w", []item{{false, "stats\nfor--me\n  w", 1, 1}}},
	} {
		sc := NewScanner("s", strings.NewReader(tc.src))
		var got []item
		for {
			it, err := sc.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", tc.src, err)
			}
			got = append(got, item{it.Meta, it.Src.Text, it.Src.Line, it.Src.Col})
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q: items %+v, want %+v", tc.src, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: item %d is %+v, want %+v", tc.src, i, got[i], tc.want[i])
			}
		}
	}
}

// TestScannerSemicolonRunsAtOnce: a statement ended by ";" is returned before the next line
// arrives, so that a producer that waits for each result before it writes the next statement
// is answered; one ended by a newline waits for the next line, which may continue it.
func TestScannerSemicolonRunsAtOnce(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	sc := NewScanner("<stdin>", r)
	next := func() chan string {
		ch := make(chan string, 1)
		go func() {
			it, err := sc.Next()
			if err != nil {
				ch <- "error: " + err.Error()
				return
			}
			ch <- it.Src.Text
		}()
		return ch
	}
	go io.WriteString(w, "assert K.p = 1 by w;\n")
	select {
	case got := <-next():
		if got != "assert K.p = 1 by w;" {
			t.Fatalf("got %q", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a statement ended by ; waits for more input")
	}
	ch := next()
	io.WriteString(w, "\nassert K.p = 2 by w\n")
	select {
	case got := <-ch:
		t.Fatalf("a statement ended by a newline was returned before the next line came: %q", got)
	case <-time.After(100 * time.Millisecond):
	}
	io.WriteString(w, "  from \"s\"\n")
	w.Close()
	if got := <-ch; got != "assert K.p = 2 by w\n  from \"s\"\n" {
		t.Fatalf("got %q", got)
	}
}

// TestScannerClausePositions: an error in a clause that continues a statement past blank and
// comment lines is reported where it is in the script.
func TestScannerClausePositions(t *testing.T) {
	sc := NewScanner("x.mql", strings.NewReader("stats\nassert B.p = 39 by w1\n\n   -- its source\n\t from 12\n"))
	for _, want := range []string{"", `x.mql:5:8: expected a source string after "from", found "12"`} {
		it, err := sc.Next()
		if err != nil {
			t.Fatal(err)
		}
		_, perr := query.ParseAt(it.Src.Name, it.Src.Text, it.Src.Line, it.Src.Col)
		got := ""
		if perr != nil {
			got = perr.Error()
		}
		if got != want {
			t.Errorf("%q: %q, want %q", it.Src.Text, got, want)
		}
	}
}
