package mcpserver_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// serverBinary builds testdata/mqlmcp, a stand-in for `mql mcp [--as NAME] DB` that calls
// mcpserver.Serve on stdin and stdout.
func serverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			buildErr = err
			return
		}
		dir, err := mkdirTemp()
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "mqlmcp")
		buildOut, buildErr = exec.Command(goBin, "build", "-o", binPath, "./testdata/mqlmcp").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building testdata/mqlmcp: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// spawn runs the server binary as a child process and connects the SDK's client to it over
// the child's stdin and stdout.
func spawn(t *testing.T, as, dsn string) (*client, *bytes.Buffer) {
	t.Helper()
	args := []string{dsn}
	if as != "" {
		args = []string{"--as", as, dsn}
	}
	cmd := exec.Command(serverBinary(t), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpserver-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v\n%s", cmd, err, stderr.String())
	}
	c := &client{t: t, as: as, cs: cs}
	t.Cleanup(func() { cs.Close() })
	return c, &stderr
}

// The server runs as a real process over stdio: a worker writes through one process, the
// process exits cleanly when the client closes its stdin, and an orchestrator's process on
// the same bbolt file reads what it wrote.
func TestStdioProcess(t *testing.T) {
	dsn := filepath.Join(t.TempDir(), "team.db")
	db := openStore(t, dsn, nil)
	team(t, db)
	db.Close()

	w3, stderr := spawn(t, "worker-3", dsn)
	res, err := w3.cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != len(toolNames) {
		t.Fatalf("tools over stdio: %v %v", res, err)
	}
	_, m := w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44,
		"sources": []any{map[string]any{"id": "src:Klarveld:rev0", "excerpt": "EUR 44 per seat"}}})
	if receipt(t, m)["ref"] != "Klarveld.price_per_seat@1" {
		t.Fatalf("assert: %v", m)
	}
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 89, "source": "src:Klarveld:rev1"})
	txt, _ := w3.ok("context", map[string]any{"subjects": []any{"Klarveld"}})
	if txt != "Klarveld: price_per_seat=89 @2\n" {
		t.Fatalf("context: %q", txt)
	}
	w3.fail("query", map[string]any{"statement": "live Klarveld.price_per_seat@"}, "query:1:")
	w3.fail("query", map[string]any{"statement": "as orchestrator live *"}, "cannot act as another principal")
	w3.fail("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "EU", "by": "orchestrator"}, "by")
	if st := w3.stats(); st.Claims != 2 {
		t.Fatalf("stats over stdio: %+v", st)
	}
	if lang := w3.readResource("mql://language"); !strings.HasPrefix(lang.Text, "# The mql language") {
		t.Fatalf("language over stdio: %.60q", lang.Text)
	}
	if err := w3.cs.Close(); err != nil {
		t.Fatalf("the server process did not exit cleanly when its stdin closed: %v\n%s", err, stderr.String())
	}

	orch, stderr := spawn(t, "orchestrator", dsn)
	r := orch.query("history Klarveld.price_per_seat")
	if h := rows(r[0]); len(h) != 2 || h[0]["state"] != "superseded" || h[1]["asserted_by"] != "worker-3" {
		t.Fatalf("history seen by the orchestrator's process: %v", h)
	}
	if err := orch.cs.Close(); err != nil {
		t.Fatalf("orchestrator process: %v\n%s", err, stderr.String())
	}

	// A principal that is not recorded: the process refuses to start serving.
	cmd := exec.Command(serverBinary(t), "--as", "ghost", dsn)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "unknown principal") {
		t.Fatalf("unknown principal: %v\n%s", err, out)
	}
}

var binDir string

func mkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "mqlmcp-bin-")
	binDir = d
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// On PostgreSQL, two server processes running at the same time, one per agent, share one
// memory: each sees the other's writes at once.
func TestStdioPostgres(t *testing.T) {
	dsn := postgresDSN(t)
	team(t, openStore(t, dsn, nil))
	w3, _ := spawn(t, "worker-3", dsn)
	w7, _ := spawn(t, "worker-7", dsn)
	w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44, "source": "src:Klarveld:rev0"})
	if txt, _ := w7.ok("context", map[string]any{"subjects": []any{"Klarveld"}}); txt != "Klarveld: price_per_seat=44 @1\n" {
		t.Fatalf("worker-7 sees %q", txt)
	}
	_, m := w7.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 89, "source": "src:Klarveld:rev1"})
	if rc := receipt(t, m); rc["ref"] != "Klarveld.price_per_seat@2" || rc["supersedes"] != "Klarveld.price_per_seat@1" {
		t.Fatalf("worker-7's revision: %v", m)
	}
	if r := rows(w3.query("live Klarveld.price_per_seat")[0]); len(r) != 1 || r[0]["value"] != 89.0 || r[0]["asserted_by"] != "worker-7" {
		t.Fatalf("worker-3 sees %v", r)
	}
	for _, c := range []*client{w3, w7} {
		if err := c.cs.Close(); err != nil {
			t.Fatalf("%s: %v", c.as, err)
		}
	}
}
