// Package web is the page that `mql serve` serves at /: a person signs in and sees the memory
// the way their principal may see it — live claims, why graphs, impact graphs, histories, the
// review queue — drawn in the browser from the JSON of the same API the agents use. The page
// and the libraries it draws with are embedded here, so the binary serves them offline.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed static
var static embed.FS

// CSP is the Content-Security-Policy of every response: scripts, styles and connections only
// from the server's own origin, never inline, never framed. Everything on the page is
// agent-written and hostile until escaped; the policy is the second wall behind the escaping.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'none'; " +
	"base-uri 'none'; form-action 'self'"

// SetHeaders sets the security headers every response of the server carries.
func SetHeaders(h http.Header) {
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
}

// Handler serves the page: GET / is the page, GET /static/… its scripts, styles and the
// vendored libraries. None of it is secret (the page holds no data until its reader signs in),
// so it needs no credential.
func Handler() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServerFS(sub)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		page, err := fs.ReadFile(sub, "index.html")
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(page)
	})
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") || r.URL.Path == "index.html" {
			http.NotFound(w, r) // no directory listings; the page itself is at /
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})))
	return mux
}
