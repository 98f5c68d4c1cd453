package web_test

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/web"
)

// Every vendored file is listed in vendor/README.md with its version, licence and hash, and
// its licence file is there.
func TestVendoredFilesAreRecorded(t *testing.T) {
	readme, err := os.ReadFile("static/vendor/README.md")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir("static/vendor")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".js") {
			continue
		}
		b, err := os.ReadFile("static/vendor/" + name)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		row := ""
		for _, line := range strings.Split(string(readme), "\n") {
			if strings.HasPrefix(line, "| `"+name+"`") {
				row = line
			}
		}
		if row == "" {
			t.Errorf("%s is not listed in vendor/README.md", name)
			continue
		}
		if !strings.Contains(row, hex.EncodeToString(sum[:])) {
			t.Errorf("%s: its SHA-256 %x is not the one vendor/README.md records: %s", name, sum, row)
		}
		if !strings.Contains(row, "MIT") {
			t.Errorf("%s: no licence recorded: %s", name, row)
		}
	}
	for _, lic := range []string{"LICENSE.cytoscape", "LICENSE.cytoscape-dagre", "LICENSE.dagre", "LICENSE.graphlib"} {
		if b, err := os.ReadFile("static/vendor/" + lic); err != nil || !strings.Contains(string(b), "Permission is hereby granted") {
			t.Errorf("%s: %v", lic, err)
		}
	}
}

// The page has no inline script, no inline style, no event-handler attribute and loads nothing
// from another origin, so the Content-Security-Policy can forbid all of them; the page's
// script never parses a string as markup or code.
func TestPageHasNothingInline(t *testing.T) {
	html, err := os.ReadFile("static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*regexp.Regexp{
		regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`),        // a script with a body
		regexp.MustCompile(`<script(?:\s(?:[^s>]|s[^r])*)?>`), // a script without src
		regexp.MustCompile(`<style`),
		regexp.MustCompile(`\sstyle=`),
		regexp.MustCompile(`\son[a-z]+=`),
		regexp.MustCompile(`(?:src|href)="(?:https?:)?//`),
	} {
		if m := bad.Find(html); m != nil {
			t.Errorf("index.html: %q", m)
		}
	}
	js, err := os.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "setAttribute('on", "localStorage", "sessionStorage", "javascript:"} {
		if strings.Contains(string(js), bad) {
			t.Errorf("app.js uses %s", bad)
		}
	}
	if !strings.Contains(web.CSP, "script-src 'self'") || strings.Contains(web.CSP, "unsafe") || strings.Contains(web.CSP, "*") {
		t.Errorf("CSP: %s", web.CSP)
	}
}

// The page draws states in the dot format's colours.
func TestPaletteMatchesTheDotFormat(t *testing.T) {
	js, _ := os.ReadFile("static/app.js")
	css, _ := os.ReadFile("static/app.css")
	for state, c := range output.Palette {
		want := "'" + state + "': ['" + c[0] + "', '" + c[1] + "']"
		if !strings.Contains(string(js), want) {
			t.Errorf("app.js: no %s", want)
		}
		if strings.Contains(state, " ") || state == "source" || state == "principal" || state == "grant" || state == "revocation" || state == "event" {
			continue
		}
		if !strings.Contains(string(css), "--"+state+"-fill: "+c[0]) || !strings.Contains(string(css), "--"+state+"-line: "+c[1]) {
			t.Errorf("app.css: %s is not %v", state, c)
		}
	}
}

// The handler serves the page and its files, and no directory listing.
func TestHandler(t *testing.T) {
	ts := httptest.NewServer(web.Handler())
	defer ts.Close()
	err := fs.WalkDir(os.DirFS("static"), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || path == "index.html" {
			return nil
		}
		resp, err := http.Get(ts.URL + "/static/" + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("/static/%s: %d", path, resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]int{"/": 200, "/static/": 404, "/static/index.html": 404, "/static/vendor/": 404, "/other": 404} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}
