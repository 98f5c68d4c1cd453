// Package server serves one mql store to a team: agents over MCP (Streamable HTTP, at /mcp),
// scripts and programs over the language on HTTP (/v1/query), a change feed (/v1/watch), a web
// page for people (/, package web; docs/WEB.md), and the command line over a local socket.
// Every request is served as exactly one principal, fixed by its credential and never by
// anything the request says: over HTTP, the principal of its bearer token, or of the web
// page's session cookie (which only reads); on the local socket, whose file mode admits only
// the store's owner, the owner (who may act as any principal, as `mql --as` does).
package server

import (
	"context"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/web"
)

// Authenticator resolves a bearer token to the principal it was issued to. *mql.DB implements
// it. For a token that is malformed, unknown, expired or revoked it returns an error that
// errors.Is finds as mql.ErrUnauthorized, and says nothing else about it; any other error is a
// failure to tell (the store could not be read), which the server answers 503, never 401.
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (principal string, err error)
}

// Options configure a Server. The zero value of each field means its default.
type Options struct {
	// Logger gets one line per request: principal, what was asked (statement kinds or MCP
	// method and tool), duration, outcome. Never a token, never a claim's value. Default: a
	// logger that discards.
	Logger *slog.Logger
	// Store names the store in \conninfo and the log (a path or a redacted DSN).
	Store string
	// URL is where the server listens for agents (http://127.0.0.1:7411), for \conninfo.
	URL string
	// Limits bound what one request may cost: statements, bytes in and out, time, and the web
	// page's sessions per principal (DefaultLimits).
	Limits Limits
	// Heartbeat is the interval of keep-alive comments on /v1/watch (default 15s).
	Heartbeat time.Duration
	// Poll is how often a server on a shared store (PostgreSQL) looks for other processes'
	// commits while someone watches (default 200ms).
	Poll time.Duration
	// SessionTTL is how long a web page's sign-in lasts (default 12h); revoking its token ends
	// it sooner.
	SessionTTL time.Duration
	// CodeTTL is how long a one-time sign-in code (SignInCode) may be used (default 60s).
	CodeTTL time.Duration
	// Metrics, if set, count every request and report the store (NewMetrics); nil: none.
	Metrics *Metrics
	// Embedder, if set, embeds the claims written without a vector, over MCP and /v1/query,
	// and the text of each search, for the vector signal (query.Session.EmbedWith); nil:
	// claims get only the vectors their writers give, and searches rank by text.
	Embedder query.Embedder
}

// Server serves one store. Make it with New; it is safe for concurrent use.
type Server struct {
	db    *mql.DB
	auth  Authenticator
	opts  Options
	log   *slog.Logger
	owner string

	sessions sessions // the web page's

	mu   sync.Mutex
	mcps map[string]*mcpEntry // by principal
	stop chan struct{}        // closed by Close: ends watches
	once sync.Once

	draining atomic.Bool // set by Drain: /readyz answers 503
	ready    readiness   // /readyz's check of the store
}

// New returns a server for db that authenticates bearer tokens with auth.
func New(db *mql.DB, auth Authenticator, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.Limits = opts.Limits.orDefaults()
	if opts.Heartbeat <= 0 {
		opts.Heartbeat = 15 * time.Second
	}
	if opts.Poll <= 0 {
		opts.Poll = 200 * time.Millisecond
	}
	if opts.SessionTTL <= 0 {
		opts.SessionTTL = 12 * time.Hour
	}
	if opts.CodeTTL <= 0 {
		opts.CodeTTL = 60 * time.Second
	}
	s := &Server{db: db, auth: auth, opts: opts, log: opts.Logger, owner: db.Owner(),
		mcps: map[string]*mcpEntry{}, stop: make(chan struct{})}
	if opts.Metrics != nil {
		opts.Metrics.attach(s)
	}
	return s
}

// Close ends the server's long-lived streams (watches, MCP sessions' notifications). Call it
// before shutting the HTTP servers down so that they can drain.
func (s *Server) Close() {
	s.once.Do(func() { close(s.stop) })
}

// identity is who a request is served as.
type identity struct {
	principal string
	token     string // the bearer token, to re-check long-lived requests; never logged
	local     bool   // the owner on the local socket: may act as another principal
	session   string // the web page's session id, when a cookie authenticated the request: reads only
}

type identityKey struct{}

func withIdentity(ctx context.Context, id identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

func identityOf(ctx context.Context) identity {
	id, _ := ctx.Value(identityKey{}).(identity)
	return id
}

// Handler serves the network API and the web page. Every API request must carry
// `Authorization: Bearer TOKEN`, or the web page's session cookie (which reads only); the page
// itself (GET /, /static/…) and its sign-in (POST /v1/session) need neither. Unsafe requests
// from another origin are refused (http.CrossOriginProtection), and every response carries the
// page's security headers (web.SetHeaders).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	mux.HandleFunc("GET /v1/session", s.whoami)
	mux.HandleFunc("DELETE /v1/session", s.signOut)
	mux.HandleFunc("POST /v1/session", s.signIn) // reached through open below; here for the Allow of a 405
	mux.Handle("/mcp", s.peekMCP(s.mcpHandler()))
	api := s.bearer(mux)
	page := web.Handler()
	open := http.NewServeMux()
	open.HandleFunc("POST /v1/session", s.signIn)
	open.HandleFunc("GET /healthz", s.healthz)
	open.HandleFunc("GET /readyz", s.readyz)
	open.Handle("GET /{$}", page)
	open.Handle("GET /static/", page)
	open.Handle("/", api)
	open.Handle("GET /v1/session", s.sessionProbe(api))
	cop := http.NewCrossOriginProtection()
	return s.logged("http", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		web.SetHeaders(w.Header())
		cop.Handler(open).ServeHTTP(w, r)
	}))
}

// LocalHandler serves the local socket: every request is the owner's. A request may ask to
// act as another principal with the Mql-As header, as `mql --as` does.
func (s *Server) LocalHandler() http.Handler {
	mux := http.NewServeMux()
	s.routes(mux)
	mux.HandleFunc("GET /v1/conninfo", s.conninfo)
	mux.HandleFunc("GET /v1/export", s.export)
	mux.HandleFunc("GET /v1/check", s.check)
	mux.HandleFunc("GET /v1/backup", s.backup)
	mux.HandleFunc("GET /v1/names", s.names)
	mux.HandleFunc("POST /v1/tokens", s.createToken)
	mux.HandleFunc("GET /v1/tokens", s.listTokens)
	mux.HandleFunc("POST /v1/tokens/{id}/revoke", s.revokeToken)
	return s.logged("socket", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := identity{principal: s.owner, local: true}
		if as := r.Header.Get("Mql-As"); as != "" {
			id.principal = as
		}
		setPrincipal(r, id.principal)
		mux.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
	}))
}

func (s *Server) routes(mux *http.ServeMux) {
	mux.HandleFunc("POST /v1/query", s.query)
	mux.HandleFunc("GET /v1/watch", s.watch)
	mux.HandleFunc("GET /v1/catalog", s.catalog)
	mux.HandleFunc("GET /v1/review-queue", s.reviewQueue)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(mux, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			http.Error(w, r.URL.Path+" takes "+strings.Join(allow, " or ")+", not "+r.Method, http.StatusMethodNotAllowed)
			return
		}
		http.Error(w, "not found: the API is POST /v1/query, GET /v1/watch and /mcp (docs/MCP.md)", http.StatusNotFound)
	})
}

// allowed lists the methods mux serves r's path with. The catch-all "/" matches every method,
// so the mux alone would answer a known path asked with the wrong method 404, not 405.
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			allow = append(allow, m)
		}
	}
	return allow
}

// bearer authenticates every request by its bearer token or, without an Authorization
// header, by the web page's session cookie. Every failure — no credential, a malformed one, an
// unknown, expired or revoked token, an unknown or expired session — gets the same 401 with no
// detail. A store that cannot be read to tell gets 503 (storageDown): an outage is not a
// revoked token, and a session is kept through it.
func (s *Server) bearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			id, ok, err := s.cookieIdentity(r)
			if err != nil {
				s.storageDown(w, r)
				return
			}
			if ok {
				setPrincipal(r, id.principal)
				next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), id)))
				return
			}
		}
		tok, ok := bearerToken(r.Header.Get("Authorization"))
		principal := ""
		if ok {
			p, err := s.auth.Authenticate(r.Context(), tok)
			if err != nil && !errors.Is(err, mql.ErrUnauthorized) {
				s.storageDown(w, r)
				return
			}
			ok = err == nil && p != ""
			principal = p
		}
		if !ok {
			setOutcome(r, "unauthorized")
			w.Header().Set("WWW-Authenticate", `Bearer realm="mql"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		setPrincipal(r, principal)
		next.ServeHTTP(w, r.WithContext(withIdentity(r.Context(), identity{principal: principal, token: tok})))
	})
}

// storageDown answers a request whose credential could not be checked because the store could
// not be read. It names no detail of the failure: the caller is not authenticated.
func (s *Server) storageDown(w http.ResponseWriter, r *http.Request) {
	setOutcome(r, "storage")
	w.Header().Set("Retry-After", "5")
	http.Error(w, "the store cannot be read now (a storage failure), so the credential could not be checked; it was not refused: try again shortly", http.StatusServiceUnavailable)
}

// bearerToken takes the token of an "Authorization: Bearer TOKEN" header.
func bearerToken(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || subtle.ConstantTimeCompare([]byte(strings.ToLower(scheme)), []byte("bearer")) != 1 {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// ---- the request log ----

// logEntry is filled in by the handlers and written by logged when the request ends.
type logEntry struct {
	mu        sync.Mutex
	principal string
	what      string
	outcome   string
}

type logKey struct{}

func entryOf(r *http.Request) *logEntry {
	e, _ := r.Context().Value(logKey{}).(*logEntry)
	return e
}

func setPrincipal(r *http.Request, p string) {
	if e := entryOf(r); e != nil {
		e.mu.Lock()
		e.principal = p
		e.mu.Unlock()
	}
}

func setWhat(r *http.Request, what string) {
	if e := entryOf(r); e != nil {
		e.mu.Lock()
		e.what = what
		e.mu.Unlock()
	}
}

func setOutcome(r *http.Request, outcome string) {
	if e := entryOf(r); e != nil {
		e.mu.Lock()
		e.outcome = outcome
		e.mu.Unlock()
	}
}

// statusWriter records the status code a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logged writes one structured line per request, and counts it in the metrics as one of
// surface's ("http" or "socket"; MCP requests are counted as "mcp").
func (s *Server) logged(surface string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		e := &logEntry{}
		sw := &statusWriter{ResponseWriter: w}
		// Deferred, so that a response cut off on purpose (http.ErrAbortHandler) is logged too.
		defer s.logRequest(surface, r, sw, e, start)
		next.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), logKey{}, e)))
	})
}

// logRequest writes the log line of a request that ended.
func (s *Server) logRequest(surface string, r *http.Request, sw *statusWriter, e *logEntry, start time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	principal := e.principal
	if id := identityOf(r.Context()); principal == "" && id.principal != "" {
		principal = id.principal
	}
	outcome := e.outcome
	if outcome == "" {
		outcome = "ok"
		if sw.status >= 400 {
			outcome = http.StatusText(sw.status)
		}
	}
	took := time.Since(start)
	s.opts.Metrics.observe(surface, r.URL.Path, e.what, outcome, took)
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("principal", principal),
		slog.String("what", e.what),
		slog.Int("status", sw.status),
		slog.String("outcome", outcome),
		slog.Duration("duration", took),
	)
}

// ---- MCP ----

type mcpEntry struct {
	srv *mcp.Server
}
