package main

import (
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// On SIGTERM, /readyz answers 503 at once, while the server still accepts connections for
// --drain-delay; then it stops as before. /healthz answers 200 until the end.
func TestServeReadyzDrains(t *testing.T) {
	bin := crashBuild(t)
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "team.db")
	if _, errs, code := runMQL(t, bin, home, "", "-c", "assert Klarveld.price = 44 by owner", db); code != 0 {
		t.Fatalf("seed: %d %s", code, errs)
	}
	s := startServeArgs(t, bin, home, []string{"--drain-delay", "3s", db})
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(s.url + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := get(path); code != http.StatusOK {
			t.Fatalf("%s before SIGTERM: %d %q", path, code, body)
		}
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	code, body := get("/readyz")
	for code == http.StatusOK && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		code, body = get("/readyz")
	}
	if code != http.StatusServiceUnavailable || body != "not ready: draining (the server is stopping)\n" {
		t.Errorf("/readyz while draining: %d %q", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while draining: %d, want 200", code)
	}
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		if err != nil {
			t.Errorf("mql serve after SIGTERM: %v\n%s", err, s.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("mql serve did not stop:\n%s", s.stderr)
	}
}

var metricsRE = regexp.MustCompile(`Prometheus metrics at (http://[0-9.:]+)/metrics`)

// `mql serve --metrics ADDR` serves the metrics on a listener of its own, counting the
// server's requests and commits; the API's address does not serve them.
func TestServeMetricsFlag(t *testing.T) {
	bin := crashBuild(t)
	home := t.TempDir()
	db := filepath.Join(t.TempDir(), "team.db")
	if _, errs, code := runMQL(t, bin, home, "", "-c", "assert Klarveld.price = 44 by owner", db); code != 0 {
		t.Fatalf("seed: %d %s", code, errs)
	}
	if _, errs, code := runMQL(t, bin, home, "", "serve", "--metrics", "not-an-address", db); code != exitUsage || !strings.Contains(errs, "--metrics") {
		t.Errorf("a bad --metrics address: exit %d %q", code, errs)
	}
	s := startServeArgs(t, bin, home, []string{"--metrics", "127.0.0.1:0", db})
	m := metricsRE.FindStringSubmatch(s.stderr.String())
	if m == nil {
		t.Fatalf("no metrics address in:\n%s", s.stderr)
	}
	if _, errs, code := runMQL(t, bin, home, "", "-c", "assert Klarveld.price = 45 by owner", db); code != 0 {
		t.Fatalf("attached write: %d %s", code, errs)
	}
	get := func(url string) (int, string) {
		t.Helper()
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get(m[1] + "/metrics")
	for _, want := range []string{`mql_requests_total{op="/v1/query",outcome="ok",surface="socket"} 1`, `mql_commits_total{outcome="ok"} 1`, `mql_claims{state="live"} 1`, "mql_store_bytes "} {
		if code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("GET /metrics: %d, no %q in:\n%s", code, want, body)
		}
	}
	if code, _ := get(s.url + "/metrics"); code == http.StatusOK {
		t.Errorf("the API's address serves /metrics too")
	}
}
