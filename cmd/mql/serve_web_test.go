package main

import (
	"encoding/json"
	"github.com/mql-dev/mql/internal/syncbuf"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// `mql serve --open` prints a one-time link whose code is in the fragment (never a token, never
// a query string), opens it with xdg-open when there is one, and the code signs in as the
// owner once. Without --open, the server names the page and no link.
func TestServeOpenPrintsAOneTimeLink(t *testing.T) {
	bin, home, dir, db := serveFixture(t)
	// A stand-in xdg-open that records what it was asked to open.
	fake, opened := t.TempDir(), filepath.Join(dir, "opened")
	if err := os.WriteFile(filepath.Join(fake, "xdg-open"), []byte("#!/bin/sh\nprintf '%s' \"$1\" > "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := crashCmd(bin, home, "serve", "--listen", "127.0.0.1:0", "--open", db)
	cmd.Env = append(cmd.Env, "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"))
	stderr := &syncbuf.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-done })

	linkRE := regexp.MustCompile(`(http://127\.0\.0\.1:[0-9]+/)#code=([A-Za-z0-9_-]+)\n`)
	var m []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && m == nil; time.Sleep(20 * time.Millisecond) {
		m = linkRE.FindStringSubmatch(stderr.String())
	}
	if m == nil {
		t.Fatalf("no link:\n%s", stderr)
	}
	base, code := m[1], m[2]
	var got []byte
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got, _ = os.ReadFile(opened); len(got) > 0 {
			break
		}
	}
	if string(got) != base+"#code="+code {
		t.Errorf("xdg-open was given %q, want the link", got)
	}
	if strings.Contains(stderr.String(), "mql_t") || strings.Contains(stderr.String(), "?code=") {
		t.Errorf("the output holds a token or a code in a query string:\n%s", stderr)
	}
	signIn := func() (int, string) {
		resp, err := http.Post(base+"v1/session", "application/json", strings.NewReader(`{"code": "`+code+`"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := signIn()
	var info struct {
		Principal string `json:"principal"`
		Owner     bool   `json:"owner"`
	}
	if status != http.StatusOK || json.Unmarshal([]byte(body), &info) != nil || !info.Owner {
		t.Fatalf("the code: %d %s", status, body)
	}
	if status, _ := signIn(); status != http.StatusUnauthorized {
		t.Errorf("the code a second time: %d", status)
	}
	resp, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `<script src="/static/app.js"`) {
		t.Errorf("GET /: %d %.200s", resp.StatusCode, page)
	}
}
