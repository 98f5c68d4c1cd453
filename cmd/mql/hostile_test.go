package main

// Hostile input through the real command: each bad input ends with a clear error that names
// its position (or completes), within bounded time and memory (measured from the process's
// rusage), never with a panic, and the store is unchanged (its export is byte-identical and
// `mql check` passes) unless the input was a valid script.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// Bounds for one run of the command, generous for a loaded machine: the worst input measured
// takes a few seconds and under 300 MiB (docs/RELIABILITY.md).
const (
	hostileMaxTime = 60 * time.Second
	hostileMaxRSS  = 1 << 30 // bytes
)

type hostileRun struct {
	out, err string
	code     int
	elapsed  time.Duration
	rss      int64 // peak resident set, bytes (0 where /proc is missing)
}

func hostileExec(t *testing.T, bin, home string, stdin []byte, args ...string) hostileRun {
	t.Helper()
	cmd := crashCmd(bin, home, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("mql did not start: %v", err)
	}
	// The peak resident set of the command itself: VmHWM, polled until it exits. (The
	// rusage of a child started with vfork counts the parent's memory too.)
	done := make(chan struct{})
	peakc := make(chan int64)
	go func() {
		var peak int64
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if kb, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						var n int64
						fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(kb), " kB"), &n)
						peak = max(peak, n*1024)
					}
				}
			}
			select {
			case <-done:
				peakc <- peak
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	cmd.Wait()
	close(done)
	r := hostileRun{out: out.String(), err: errb.String(), elapsed: time.Since(start), code: cmd.ProcessState.ExitCode()}
	r.rss = <-peakc
	return r
}

var hostileStdinPos = regexp.MustCompile(`(?m)^<stdin>:\d+:\d+: `)

func TestHostileInputCommand(t *testing.T) {
	bin := crashBuild(t)
	home := t.TempDir()
	db := filepath.Join(home, "h.db")
	setup := "principal a agent\nprincipal u user\nassert K.p = \"x\" by a from \"src:1\"\nassert K.n = 1 by a\nderive plan from K.p by a\n"
	if r := hostileExec(t, bin, home, []byte(setup), "--format", "json", "-f", "-", db); r.code != 0 {
		t.Fatalf("setup: %s", r.err)
	}
	export := func() string {
		r := hostileExec(t, bin, home, nil, "export", "--db", db)
		if r.code != 0 {
			t.Fatalf("export: %s", r.err)
		}
		return r.out
	}
	before := export()

	var reads bytes.Buffer
	for i := range 100_000 {
		if i%500 == 0 {
			fmt.Fprintf(&reads, "assert K%d.p = \"v%d\" by a\n", i%7, i)
		} else {
			reads.WriteString([]string{"live K.p\n", "history K.n\n", "why plan\n", "live *\n"}[i%4])
		}
	}
	cases := []struct {
		name  string
		in    []byte
		code  int
		want  string // in stderr
		dsn   string // default: the shared store, which must be left unchanged
		heads int64  // for a valid script on its own store: transactions it adds
	}{
		{name: "unterminated string", in: []byte(`assert K.p = "abc by a`), code: exitSyntax, want: "1:14: unterminated string literal"},
		{name: "10 MB literal", in: []byte(`assert K.p = "` + strings.Repeat("x", 10<<20) + `" by a`), code: exitSyntax, want: "longer than 1 MiB"},
		{name: "invalid UTF-8", in: []byte("assert K.p = \"\xff\xfe\" by a"), code: exitSyntax, want: "invalid UTF-8"},
		{name: "NUL byte", in: []byte("live K\x00"), code: exitSyntax, want: "NUL byte"},
		{name: "NUL escape", in: []byte(`assert K.p = "a\u0000b" by a`), code: exitSyntax, want: "NUL character"},
		{name: "number out of range", in: []byte(`assert K.n = 1e400 by a`), code: exitSyntax, want: `"1e400"`},
		{name: "depth out of range", in: []byte(`impact K.p depth 99999999999999999999`), code: exitSyntax, want: "too large"},
		{name: "transaction out of range", in: []byte(`as of tx 99999999999999999999 stats`), code: exitSyntax, want: "too large"},
		{name: "unknown keyword", in: []byte(`frobnicate K`), code: exitSyntax, want: `unknown statement "frobnicate"`},
		{name: "2 MB name", in: []byte(`why ` + strings.Repeat("a", 2<<20) + `.p`), code: exitSyntax, want: "longer than 1 MiB"},
		{name: "1 MiB dotted reference", in: []byte(`why ` + strings.Repeat("a.", 1<<19) + `p`), code: exitSyntax, want: "more than 20,000 tokens"},
		{name: "deep nesting", in: []byte(`live ` + strings.Repeat("(", 100_000)), code: exitSyntax, want: "unexpected character"},
		{name: "name over 256 bytes", in: []byte(`assert ` + strings.Repeat("A", 300) + `.p = "x" by a`), code: exitFailed, want: "at most 256 bytes"},
		{name: "no standing", in: []byte(`revoke K.p@1 by u`), code: exitFailed, want: "u has no revoke right on K.p"},
		{name: "as of the zero time", in: []byte(`as of 0001-01-01T00:00:00Z stats`), code: exitFailed, want: "the store was created at"},
		{name: "error after writes", in: []byte("assert K.p = \"y\" by a\nassert K.p = \"z\" by nobody\n"), code: exitFailed, want: "2:1: ", dsn: "own", heads: 1},
		{name: "100k-statement script", in: reads.Bytes(), code: exitOK, dsn: "own", heads: 200},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dsn := db
			var head0 int64
			if tc.dsn == "own" {
				dsn = filepath.Join(t.TempDir(), "own.db")
				if r := hostileExec(t, bin, home, []byte(setup), "-f", "-", dsn); r.code != 0 {
					t.Fatal(r.err)
				}
				head0 = hostileHead(t, bin, home, dsn)
			}
			r := hostileExec(t, bin, home, tc.in, "--format", "json", "-f", "-", dsn)
			t.Logf("%d KiB of input: exit %d in %s, max RSS %d MiB", len(tc.in)>>10, r.code, r.elapsed.Round(time.Millisecond), r.rss>>20)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %.400q", r.code, tc.code, r.err)
			}
			if strings.Contains(r.err, "panic") || strings.Contains(r.err, "goroutine ") {
				t.Fatalf("panicked: %.2000s", r.err)
			}
			if tc.code != exitOK && (!hostileStdinPos.MatchString(r.err) || !strings.Contains(r.err, tc.want)) {
				t.Fatalf("stderr %.400q: want <stdin>:line:col and %q", r.err, tc.want)
			}
			if len(r.err) > 4000 {
				t.Errorf("%d bytes of error output", len(r.err))
			}
			if r.elapsed > hostileMaxTime || r.rss > hostileMaxRSS {
				t.Fatalf("took %s and %d MiB", r.elapsed, r.rss>>20)
			}
			if tc.dsn == "own" {
				if got := hostileHead(t, bin, home, dsn) - head0; got != tc.heads {
					t.Fatalf("the script added %d transactions, want %d", got, tc.heads)
				}
				if c := hostileExec(t, bin, home, nil, "check", dsn); c.code != 0 {
					t.Fatalf("check: %s", c.out)
				}
			}
		})
	}
	if after := export(); after != before {
		t.Fatal("the bad inputs changed the store")
	}
	if c := hostileExec(t, bin, home, nil, "check", db); c.code != 0 {
		t.Fatalf("check: %s", c.out)
	}
}

// TestHostileCycleCommand: `derive` closing a cycle over a chain of 10,000 artifacts (imported
// with `mql import`) is refused with its position, in bounded time, and changes nothing.
func TestHostileCycleCommand(t *testing.T) {
	bin := crashBuild(t)
	home := t.TempDir()
	nq := filepath.Join(home, "chain.nq")
	if err := os.WriteFile(nq, []byte(hostileChainNQ(t, 10_000)), 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(home, "chain.db")
	imp := hostileExec(t, bin, home, nil, "import", "--db", db, nq)
	if imp.code != 0 {
		t.Fatalf("import: %s", imp.err)
	}
	head := hostileHead(t, bin, home, db)
	r := hostileExec(t, bin, home, []byte("derive a0 from a9999 by x\n"), "--format", "json", "-f", "-", db)
	t.Logf("import of the chain: %s, %d MiB; cycle refused: exit %d in %s, max RSS %d MiB", imp.elapsed.Round(time.Millisecond), imp.rss>>20, r.code, r.elapsed.Round(time.Millisecond), r.rss>>20)
	if r.code != exitFailed || !strings.Contains(r.err, "<stdin>:1:1: ") || !strings.Contains(r.err, "derivation cycle") {
		t.Fatalf("exit %d: %s", r.code, r.err)
	}
	if r.elapsed > hostileMaxTime || r.rss > hostileMaxRSS {
		t.Fatalf("took %s and %d MiB", r.elapsed, r.rss>>20)
	}
	if hostileHead(t, bin, home, db) != head {
		t.Fatal("the refused derivation wrote")
	}
}

// hostileChainNQ is an export holding one claim and n artifacts, each derived from the one
// before (deriving them one by one through the command would cost time quadratic in n).
func hostileChainNQ(t *testing.T, n int) string {
	t.Helper()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	txs := []*record.Tx{
		{ID: 1, Time: at, By: "owner", Meta: &record.StoreMeta{Owner: "owner"}, Principals: []*record.Principal{{Name: "owner", Type: record.User, Tx: 1}}},
		{ID: 2, Time: at, By: "owner", Principals: []*record.Principal{{Name: "x", Type: record.Agent, Tx: 2}}},
	}
	k, _ := record.ParseClaimID("K.p@1")
	txs = append(txs, &record.Tx{ID: 3, Time: at, By: "x", Claims: []*record.Claim{{ID: k, Value: record.Value{Type: record.String, Str: "v"}, By: "x", Kind: record.Inferred, Confidence: 1, Tx: 3}}})
	for i := range n {
		from := record.NodeRef{Claim: &k}
		if i > 0 {
			from = record.NodeRef{Artifact: &record.ArtifactID{Name: fmt.Sprintf("a%d", i-1), Version: 1}}
		}
		id := record.TxID(4 + i)
		txs = append(txs, &record.Tx{ID: id, Time: at.Add(time.Duration(i) * time.Millisecond), By: "x", Artifacts: []*record.Artifact{
			{ID: record.ArtifactID{Name: fmt.Sprintf("a%d", i), Version: 1}, DerivedFrom: []record.NodeRef{from}, By: "x", Confidence: 1, Tx: id}}})
	}
	var b bytes.Buffer
	if err := codec.WriteNQuads(&b, txs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hostileHead is the head of the store at path, as `mql check` reports it (which also finds the
// store sound). (`stats` would do, but it costs time quadratic in the length of a derivation
// chain: docs/RELIABILITY.md.)
func hostileHead(t *testing.T, bin, home, path string) int64 {
	t.Helper()
	r := hostileExec(t, bin, home, nil, "check", "--format", "json", path)
	var rep struct {
		OK   bool  `json:"ok"`
		Head int64 `json:"head"`
	}
	if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != 0 || !rep.OK {
		t.Fatalf("check: exit %d %v %.1000s %s", r.code, err, r.out, r.err)
	}
	return rep.Head
}
