package main

import (
	"io"
	"net/http"
	"path/filepath"
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
