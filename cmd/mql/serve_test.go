package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/syncbuf"
)

// served is a running `mql serve` process.
type served struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	stderr *syncbuf.Buffer
	done   chan error
}

var servingRE = regexp.MustCompile(`at (https?://[0-9.:\[\]]+):`)

// startServe starts `mql serve --listen 127.0.0.1:0 DB` and waits until it listens.
func startServe(t *testing.T, bin, home, db string, env ...string) *served {
	t.Helper()
	return startServeArgs(t, bin, home, []string{db}, env...)
}

// startServeArgs starts `mql serve --listen 127.0.0.1:0 ARGS…` and waits until it listens.
func startServeArgs(t *testing.T, bin, home string, args []string, env ...string) *served {
	t.Helper()
	cmd := crashCmd(bin, home, append([]string{"serve", "--listen", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	s := &served{t: t, cmd: cmd, stderr: &syncbuf.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-s.done
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingRE.FindStringSubmatch(s.stderr.String()); m != nil && strings.Contains(s.stderr.String(), "agents need a token") {
			s.url = m[1]
			return s
		}
		select {
		case err := <-s.done:
			t.Fatalf("mql serve exited: %v\n%s", err, s.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("mql serve did not start:\n%s", s.stderr)
	return nil
}

func runMQL(t *testing.T, bin, home string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := crashCmd(bin, home, args...)
	cmd.Stdin = strings.NewReader(stdin)
	return runExit(t, cmd)
}

// runExit runs cmd and returns what it wrote on stdout and stderr and its exit status; a
// command that cannot be run fails the test.
func runExit(t *testing.T, cmd *exec.Cmd) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%q: %v", cmd.Args, err)
	}
	return out.String(), errb.String(), code
}

// serveFixture builds the binary and writes serveSetup into a new store file, db in dir;
// home is the HOME to run the binary with.
func serveFixture(t *testing.T) (bin, home, dir, db string) {
	t.Helper()
	bin = crashBuild(t)
	home, dir = t.TempDir(), t.TempDir()
	db = filepath.Join(dir, "team.db")
	if _, e, code := runMQL(t, bin, home, serveSetup, "-f", "-", db); code != 0 {
		t.Fatal(e)
	}
	return bin, home, dir, db
}

const serveSetup = `principal worker-3 agent
principal worker-7 agent
principal orchestrator agent
assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0"
derive plan:pick-vendor from Klarveld.price_per_seat by orchestrator
assert Player7.style = "patient" by worker-7 seen by worker-7
`

// The command line attached to a running server gives the same output and exit codes as on a
// store it opens itself: -c, -f, piped stdin, export, check, errors, --as.
func TestServeAttach(t *testing.T) {
	bin := crashBuild(t)
	home := t.TempDir()
	dir := t.TempDir()
	clock := testClockEnv + "=2026-11-29T10:00:00Z"
	held, free := filepath.Join(dir, "held.db"), filepath.Join(dir, "free.db")
	for _, db := range []string{held, free} {
		cmd := crashCmd(bin, home, "-f", "-", db)
		cmd.Env = append(cmd.Env, clock)
		cmd.Stdin = strings.NewReader(serveSetup)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("setup: %v\n%s", err, out)
		}
	}
	startServe(t, bin, home, held, clock)

	type step struct {
		stdin string
		args  []string
	}
	steps := []step{
		{"", []string{"-c", "live *", "--format", "table"}},
		{"", []string{"-c", "why Klarveld.price_per_seat", "--format", "tree"}},
		{"", []string{"-c", "history Klarveld.price_per_seat; stats", "--format", "json"}},
		{"", []string{"--as", "worker-3", "-c", "live *", "--format", "csv"}},
		{"assert Klarveld.price_per_seat = 89 by worker-7 from \"src:Klarveld:rev1\"\nimpact Klarveld.price_per_seat@1\n", []string{"--format", "tree"}},
		{"", []string{"-c", "liv K"}},                                          // syntax error, exit 3
		{"", []string{"-c", "revoke Klarveld.price_per_seat@9 by worker-3"}},   // evaluation error, exit 1
		{"", []string{"--as", "worker-3", "-c", "assert K.p = 1 by worker-7"}}, // acting as another
		{"", []string{"export", "--as", "worker-3"}},
		{"", []string{"check", "--format", "json"}},
		// Transactions: begin … commit and -1 are one transaction through the server too.
		{"begin\nassert Brimsole.price_per_seat = 39 by worker-7 from \"src:Brimsole:rev0\"\nlive Brimsole\nderive plan:b from Brimsole.price_per_seat by worker-7\ncommit\nhistory plan:b\n", []string{"--format", "table"}},
		{"begin\nassert Brimsole.region = \"EU\" by worker-7\nassert Brimsole.soc2 = true by nobody\ncommit\n", []string{"--format", "json"}},
		{"", []string{"-1", "-c", "assert Hollow.p = 1 by worker-3", "-c", "revoke Hollow.p@1 by worker-3", "--format", "csv"}},
		{"", []string{"-1", "-c", "assert Hollow.q = 1 by worker-3", "-c", "assert Hollow.q = 2 by nobody"}},
		{"", []string{"-c", "stats", "-c", "begin", "-c", "rollback", "-c", "liv K"}},
		// The catalogue and the meta commands for it.
		{"\\d\n\\dp worker-3\nsubjects\nsources\ndescribe Klarveld\n", []string{"--format", "table"}},
		{"", []string{"--as", "worker-7", "-c", "subjects; predicates; describe Player7", "--format", "json"}},
		{"", []string{"--as", "nobody", "-c", "stats"}}, // a usage error, exit 2
	}
	for _, st := range steps {
		t.Run(strings.Join(st.args, " "), func(t *testing.T) {
			run := func(db string) (string, string, int) {
				args := append(append([]string{}, st.args...), db)
				cmd := crashCmd(bin, home, args...)
				cmd.Env = append(cmd.Env, clock)
				cmd.Stdin = strings.NewReader(st.stdin)
				return runExit(t, cmd)
			}
			o1, e1, c1 := run(free)
			o2, e2, c2 := run(held)
			// The server's clock is not the command's: times differ, nothing else may.
			norm := func(s, db string) string {
				s = strings.ReplaceAll(s, db, "DB")
				s = regexp.MustCompile(`"(at|recorded_at|since)":"[^"]*"`).ReplaceAllString(s, `"$1":"T"`)
				s = regexp.MustCompile(`"[0-9T:.-]+Z"\^\^`).ReplaceAllString(s, `"T"^^`)
				s = regexp.MustCompile(`\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`).ReplaceAllString(s, "T")
				return regexp.MustCompile(`(?m)^# tx (\d+) at \S+`).ReplaceAllString(s, "# tx $1 at T")
			}
			if c1 != c2 || norm(o1, free) != norm(o2, held) || norm(e1, free) != norm(e2, held) {
				t.Errorf("on a store it opens: exit %d\n%s%s\nattached to the server: exit %d\n%s%s", c1, o1, e1, c2, o2, e2)
			}
		})
	}

	// Tokens through the server; the REPL's banner says where it is attached (under a pty in
	// TestTerminal-style tests; here through the plain reader it falls back to).
	tok, errs, code := runMQL(t, bin, home, "", "token", "create", "worker-3", held)
	if code != 0 || !strings.HasPrefix(tok, "mql_") {
		t.Fatalf("token create through the server: exit %d, %q %q", code, tok, errs)
	}
	list, _, code := runMQL(t, bin, home, "", "token", "list", held)
	if code != 0 || !strings.Contains(list, "worker-3") {
		t.Fatalf("token list: %d %q", code, list)
	}
}

// SIGTERM: the server stops accepting, lets the request in flight finish (its writes are
// acknowledged and durable), closes the store and exits 0.
func TestServeSIGTERMDrains(t *testing.T) {
	bin, home, _, db := serveFixture(t)
	tok, _, _ := runMQL(t, bin, home, "", "token", "create", "worker-3", db)
	tok = strings.TrimSpace(tok)
	s := startServe(t, bin, home, db)

	// A long script in flight: 400 assertions, a transaction each (seconds on bbolt).
	var script strings.Builder
	for i := range 400 {
		fmt.Fprintf(&script, "assert Load.n%d = %d by worker-3\n", i%50, i)
	}
	type answer struct {
		code int
		body []byte
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/query", strings.NewReader(script.String()))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- answer{err: err}
			return
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		got <- answer{resp.StatusCode, b, err}
	}()
	// Wait until the script is running (its first writes are committed), then stop the server.
	head := func() int {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/query", strings.NewReader("stats"))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var qr struct {
			Results []struct {
				Rows []mql.Stats `json:"rows"`
			} `json:"results"`
		}
		json.NewDecoder(resp.Body).Decode(&qr)
		if len(qr.Results) != 1 || len(qr.Results[0].Rows) != 1 {
			t.Fatal("stats: no answer")
		}
		return qr.Results[0].Rows[0].Claims
	}
	for deadline := time.Now().Add(30 * time.Second); head() < 3; {
		if time.Now().After(deadline) {
			t.Fatal("the script did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	a := <-got
	if a.err != nil || a.code != http.StatusOK {
		t.Fatalf("the request in flight: %v, status %d, %.300s", a.err, a.code, a.body)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("mql serve exited with %v\n%s", err, s.stderr)
		}
		s.done <- nil // for the cleanup
	case <-time.After(20 * time.Second):
		t.Fatalf("mql serve did not exit after SIGTERM\n%s", s.stderr)
	}
	if !strings.Contains(s.stderr.String(), "stopped; the store is closed") {
		t.Errorf("stderr: %s", s.stderr)
	}
	out, e, code := runMQL(t, bin, home, "", "-c", "stats", "--format", "json", db)
	if code != 0 {
		t.Fatal(e)
	}
	var st struct {
		Rows []mql.Stats `json:"rows"`
	}
	json.Unmarshal([]byte(out), &st)
	if len(st.Rows) != 1 || st.Rows[0].Claims != 402 {
		t.Fatalf("after the drain: %s", out)
	}
	if _, e, code := runMQL(t, bin, home, "", "check", db); code != 0 {
		t.Fatal(e)
	}
}

// A client that sends its headers slowly, or an oversized body, is cut off; the other
// clients are served meanwhile.
func TestServeSlowAndHostileClients(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the header timeout")
	}
	bin, home, _, db := serveFixture(t)
	tok, _, _ := runMQL(t, bin, home, "", "token", "create", "worker-3", db)
	tok = strings.TrimSpace(tok)
	s := startServe(t, bin, home, db)
	host := strings.TrimPrefix(s.url, "http://")

	// Ten slow clients: a request line and one header byte a second.
	var slow []net.Conn
	for range 10 {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		fmt.Fprintf(c, "POST /v1/query HTTP/1.1\r\nHost: %s\r\nX-Slow: ", host)
	}
	start := time.Now()
	query := func(body string) int {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/query", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for range 20 {
		if code := query("live *"); code != http.StatusOK {
			t.Fatalf("another client got %d while slow clients hold connections", code)
		}
	}
	if code := query(strings.Repeat("x", 2<<20)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 MiB body: status %d, want 413", code)
	}
	// The slow clients are cut off once the header timeout passes.
	cut := make(chan time.Duration, len(slow))
	for _, c := range slow {
		go func(c net.Conn) {
			buf := make([]byte, 1)
			for {
				if _, err := c.Write([]byte("a")); err != nil {
					break
				}
				c.SetReadDeadline(time.Now().Add(time.Second))
				if _, err := c.Read(buf); err != nil && !isTimeout(err) {
					break
				}
			}
			cut <- time.Since(start)
		}(c)
	}
	for range slow {
		select {
		case d := <-cut:
			if d > 20*time.Second {
				t.Errorf("a slow client was cut off only after %s", d)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a slow client was never cut off")
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// Twelve MCP clients, each with its own token, assert concurrently over Streamable HTTP while
// the server is SIGKILLed and restarted: every acknowledged claim is in the store, with its
// author, and `mql check` passes. MQL_SERVE_DURATION sets how long they write (default 6s;
// CI runs 30s).
func TestServeTwelveAgentsThroughKills(t *testing.T) {
	d := 6 * time.Second
	if v := os.Getenv("MQL_SERVE_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil {
			t.Fatal(err)
		}
	}
	bin := crashBuild(t)
	home, dir := t.TempDir(), t.TempDir()
	db := filepath.Join(dir, "team.db")
	var setup strings.Builder
	for i := range 12 {
		fmt.Fprintf(&setup, "principal agent-%d agent\n", i)
	}
	if _, e, code := runMQL(t, bin, home, setup.String(), "-f", "-", db); code != 0 {
		t.Fatal(e)
	}
	tokens := make([]string, 12)
	for i := range 12 {
		tok, e, code := runMQL(t, bin, home, "", "token", "create", fmt.Sprintf("agent-%d", i), db)
		if code != 0 {
			t.Fatal(e)
		}
		tokens[i] = strings.TrimSpace(tok)
	}
	// The server listens on a fixed port so that clients find it again after a restart.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := func() *exec.Cmd {
		cmd := crashCmd(bin, home, "serve", "--listen", addr, db)
		errb := &syncbuf.Buffer{}
		cmd.Stderr = errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 500; i++ {
			if strings.Contains(errb.String(), "agents need a token") {
				return cmd
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("mql serve did not start: %s", errb)
		return nil
	}
	srv := start()

	var (
		mu    sync.Mutex
		acked = map[string]string{} // claim ref → author
		calls atomic.Int64
		fails atomic.Int64
	)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			me := fmt.Sprintf("agent-%d", i)
			var cs *mcp.ClientSession
			for n := 0; ctx.Err() == nil; n++ {
				if cs == nil {
					tr := &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1,
						HTTPClient: &http.Client{Transport: &bearerRT{tokens[i]}, Timeout: 10 * time.Second}, DisableStandaloneSSE: true}
					c, err := mcp.NewClient(&mcp.Implementation{Name: me, Version: "1"}, nil).Connect(ctx, tr, nil)
					if err != nil {
						time.Sleep(50 * time.Millisecond) // the server is restarting
						continue
					}
					cs = c
				}
				calls.Add(1)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "assert", Arguments: map[string]any{
					"subject": fmt.Sprintf("Agent%d", i), "predicate": fmt.Sprintf("p%d", n%20), "value": n, "source": fmt.Sprintf("src:%d:%d", i, n)}})
				if err != nil || res.IsError {
					fails.Add(1)
					cs.Close()
					cs = nil
					continue
				}
				b, _ := json.Marshal(res.StructuredContent)
				var rc struct {
					Rows []mql.Receipt `json:"rows"`
				}
				json.Unmarshal(b, &rc)
				if len(rc.Rows) != 1 || rc.Rows[0].Ref == "" {
					t.Errorf("%s: a receipt without a reference: %s", me, b)
					continue
				}
				mu.Lock()
				acked[rc.Rows[0].Ref] = me
				mu.Unlock()
			}
			if cs != nil {
				cs.Close()
			}
		}(i)
	}
	// Kill the server twice during the run, restarting it each time.
	kills := 0
	for _, at := range []time.Duration{d / 3, 2 * d / 3} {
		select {
		case <-ctx.Done():
		case <-time.After(at - time.Duration(kills)*d/3):
			srv.Process.Kill()
			srv.Wait()
			kills++
			srv = start()
		}
	}
	wg.Wait()
	srv.Process.Kill()
	srv.Wait()

	t.Logf("%d calls, %d acknowledged, %d failed (around %d kills), in %s", calls.Load(), len(acked), fails.Load(), kills, d)
	if len(acked) < 100 {
		t.Fatalf("only %d assertions were acknowledged", len(acked))
	}
	if o, e, code := runMQL(t, bin, home, "", "check", db); code != 0 {
		t.Fatalf("check: exit %d\n%s%s", code, o, e)
	}
	store, err := mql.Open(context.Background(), db, mql.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for ref, author := range acked {
		rb, err := store.RevokedBy(context.Background(), ref)
		if err != nil {
			t.Errorf("acknowledged %s is missing: %v", ref, err)
			continue
		}
		if rb.Claim.By != author || len(rb.Claim.Sources) != 1 {
			t.Errorf("%s: by %s with %d sources, want by %s with its source", ref, rb.Claim.By, len(rb.Claim.Sources), author)
		}
	}
}

type bearerRT struct{ token string }

func (b *bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// The REPL, under a pseudo-terminal, attaches to the server holding its store: it says so,
// completes names the server knows, runs statements, shows a caret under a syntax error, and
// Ctrl-C during a statement cancels only that statement.
func TestServeAttachREPL(t *testing.T) {
	bin, home, dir, db := serveFixture(t)
	s := startServe(t, bin, home, db)
	cmd := crashCmd(bin, home, db)
	cmd.Env = append(cmd.Env, "TERM=xterm", "MQL_HISTFILE="+filepath.Join(dir, "hist"))
	c, exited := startConsole(t, cmd, 40)

	c.expect("attached to mql serve through " + db + ".sock")
	c.expect("mql> ")
	c.send("why Kla\t")
	c.expect("Klarveld")
	c.send(".pri\t")
	c.expect("price_per_seat")
	c.send("\r")
	c.expect("Klarveld.price_per_seat@1 = 44")
	c.expect("mql> ")
	c.send("assert Klarveld.price_per_seat = 89 by worker-3 from \"src:Klarveld:rev1\"\r")
	c.expect("Klarveld.price_per_seat@2  live  (supersedes @1")
	c.expect("mql> ")
	c.send("live Klarveld where value = = 1\r")
	c.expect("                            ^")
	c.expect("<stdin>:1:29:")
	c.expect("mql> ")

	// \watch prints the change feed until Ctrl-C: a write by another process appears.
	c.send("\\watch Klarveld\r")
	c.expect("watching changes to Klarveld; Ctrl-C to stop")
	if _, e, code := runMQL(t, bin, home, "", "-c", `assert Klarveld.region = "EU" by worker-7 from "src:Klarveld:rev0"`, db); code != 0 {
		t.Fatal(e)
	}
	c.expect("worker-7  claim         Klarveld.region@1  = \"EU\", live")
	c.send("\x03")
	c.expect("mql> ")
	c.send("live Klarveld.region\r")
	c.expect("Klarveld.region@1")
	c.expect("mql> ")
	c.send("\x04")
	<-exited
	// The server saw the write: its log names the principal and the statement kind.
	if !strings.Contains(s.stderr.String(), "what=assert") {
		t.Errorf("the server's log: %s", s.stderr)
	}
}

// mql mcp on a store that mql serve holds says where the agents' server is, instead of
// waiting for the file lock.
func TestServeMCPPointsAtTheServer(t *testing.T) {
	bin, home, _, db := serveFixture(t)
	s := startServe(t, bin, home, db)
	_, e, code := runMQL(t, bin, home, "", "mcp", "--as", "worker-3", db)
	if code != exitOpen || !strings.Contains(e, s.url+"/mcp") || !strings.Contains(e, "mql token create") {
		t.Errorf("exit %d: %s", code, e)
	}
}
