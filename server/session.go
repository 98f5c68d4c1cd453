package server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/mql-dev/mql"
)

// The web page's sessions. A browser's EventSource cannot send an Authorization header, and a
// token kept where the page's script can read it (localStorage, a URL) is a token that any
// injected script or any log can steal. So the page signs in once, posting its token in a
// request body, and gets a cookie that script cannot read (HttpOnly), that no other site's
// page can make the browser send (SameSite=Strict), and that crosses the network only inside
// TLS when the server has it (Secure). The cookie holds a random session id; the server maps
// it to the principal and to the token, and checks the token again on every request, so
// revoking the token ends the session at its next request. A session made with a one-time
// sign-in code (mql serve --open) is the owner's and has no token: it ends when it expires,
// when its browser signs out, or when the server stops.
//
// A session reads: with a cookie, /v1/query refuses every write and /mcp refuses everything
// (see readOnly), so a page, or anything that rides on its cookie, cannot change the memory.

// SessionCookie is the name of the web page's session cookie.
const SessionCookie = "mql_session"

type session struct {
	principal string
	token     string // the bearer token it was made with; "" for a sign-in code's (the owner's)
	expires   time.Time
	seq       uint64 // the order of sign-ins, to find a principal's oldest
}

type signinCode struct {
	principal string
	expires   time.Time
}

// sessions holds the sessions and the unused sign-in codes, keyed by the SHA-256 of their
// secret, so that what the server holds cannot be replayed as a cookie or a code.
type sessions struct {
	mu    sync.Mutex
	byKey map[string]*session
	codes map[string]signinCode
	seq   uint64
}

func secretKey(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return string(h[:])
}

func randomSecret() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create records a session and returns its id. A principal holds at most limit sessions: its
// sign-in past them ends its oldest, so that what one principal's credential does, however
// often, costs the server a bounded state and locks no other principal out.
func (ss *sessions) create(principal, token string, ttl time.Duration, limit int, now time.Time) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byKey == nil {
		ss.byKey = map[string]*session{}
	}
	held, oldest := 0, ""
	for k, s := range ss.byKey {
		switch {
		case !now.Before(s.expires):
			delete(ss.byKey, k)
		case s.principal == principal:
			held++
			if oldest == "" || s.seq < ss.byKey[oldest].seq {
				oldest = k
			}
		}
	}
	if held >= limit {
		delete(ss.byKey, oldest)
	}
	ss.seq++
	id := randomSecret()
	ss.byKey[secretKey(id)] = &session{principal: principal, token: token, expires: now.Add(ttl), seq: ss.seq}
	return id
}

// get returns the session with id, if it exists and has not expired.
func (ss *sessions) get(id string, now time.Time) (session, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s, ok := ss.byKey[secretKey(id)]
	if !ok {
		return session{}, false
	}
	if !now.Before(s.expires) {
		delete(ss.byKey, secretKey(id))
		return session{}, false
	}
	return *s, true
}

func (ss *sessions) end(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byKey, secretKey(id))
}

// endRevoked ends the sessions whose token no longer authenticates as their principal (a
// token just revoked), so that they stop holding their principal's places at once, not at
// their next request. A token the store cannot judge now keeps its sessions.
func (s *Server) endRevoked(ctx context.Context) {
	s.sessions.mu.Lock()
	held := map[string]session{}
	for k, sess := range s.sessions.byKey {
		if sess.token != "" {
			held[k] = *sess
		}
	}
	s.sessions.mu.Unlock()
	for k, sess := range held {
		p, err := s.auth.Authenticate(ctx, sess.token)
		if errors.Is(err, mql.ErrUnauthorized) || err == nil && p != sess.principal {
			s.sessions.mu.Lock()
			delete(s.sessions.byKey, k)
			s.sessions.mu.Unlock()
		}
	}
}

// newCode records a one-time sign-in code for principal.
func (ss *sessions) newCode(principal string, ttl time.Duration, now time.Time) string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.codes == nil {
		ss.codes = map[string]signinCode{}
	}
	for k, c := range ss.codes {
		if !now.Before(c.expires) {
			delete(ss.codes, k)
		}
	}
	code := randomSecret()
	ss.codes[secretKey(code)] = signinCode{principal: principal, expires: now.Add(ttl)}
	return code
}

// useCode spends a sign-in code: it works once, before it expires.
func (ss *sessions) useCode(code string, now time.Time) (string, bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	c, ok := ss.codes[secretKey(code)]
	if !ok {
		return "", false
	}
	delete(ss.codes, secretKey(code))
	return c.principal, now.Before(c.expires)
}

// SignInCode returns a one-time code that signs a browser in as the store's owner, once,
// within Options.CodeTTL: `mql serve --open` puts it in the fragment of the page's address
// (never in a query string, so it reaches neither the server's log nor a Referer).
func (s *Server) SignInCode() string {
	return s.sessions.newCode(s.owner, s.opts.CodeTTL, time.Now())
}

// SignInRequest is the body of POST /v1/session: a bearer token, or a one-time code.
type SignInRequest struct {
	Token string `json:"token,omitempty"`
	Code  string `json:"code,omitempty"`
}

// SessionInfo answers GET and POST /v1/session: who the page reads as.
type SessionInfo struct {
	Principal string    `json:"principal"`
	Owner     bool      `json:"owner"`               // the principal is the store's owner
	Head      int64     `json:"head"`                // the newest transaction
	Expires   time.Time `json:"expires,omitzero"`    // when a cookie session ends
	Store     string    `json:"store,omitempty"`     // the store's name (path or redacted DSN)
	Backend   string    `json:"backend,omitempty"`   // bbolt, memory or postgres
	ReadOnly  bool      `json:"read_only,omitempty"` // a cookie session: reads only
}

// signIn is POST /v1/session: the body is JSON (a cross-site HTML form cannot send that
// without the browser asking this server first, which it never allows), holding a token or a
// one-time code. It answers 401 with no detail for anything that does not sign in.
func (s *Server) signIn(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "sign in")
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, "send application/json: {\"token\": \"…\"}", http.StatusUnsupportedMediaType)
		return
	}
	var req SignInRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(&req); err != nil {
		http.Error(w, "the body is not {\"token\": \"…\"}", http.StatusBadRequest)
		return
	}
	now := time.Now()
	principal, token := "", ""
	switch {
	case req.Token != "" && req.Code == "":
		p, err := s.auth.Authenticate(r.Context(), req.Token)
		if err != nil && !errors.Is(err, mql.ErrUnauthorized) {
			s.storageDown(w, r)
			return
		}
		if err == nil && p != "" {
			principal, token = p, req.Token
		}
	case req.Code != "" && req.Token == "":
		if p, ok := s.sessions.useCode(req.Code, now); ok {
			principal = p
		}
	}
	if principal == "" {
		setOutcome(r, "unauthorized")
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	setPrincipal(r, principal)
	id := s.sessions.create(principal, token, s.opts.SessionTTL, s.opts.Limits.Sessions, now)
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: id, Path: "/",
		Expires: now.Add(s.opts.SessionTTL), MaxAge: int(s.opts.SessionTTL / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
	})
	info, err := s.sessionInfo(r, principal)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	info.Expires, info.ReadOnly = now.Add(s.opts.SessionTTL).UTC(), true
	writeJSON(w, http.StatusOK, info)
}

func (s *Server) sessionInfo(r *http.Request, principal string) (SessionInfo, error) {
	head, err := s.db.Head(r.Context())
	return SessionInfo{Principal: principal, Owner: principal == s.owner, Head: head, Store: s.opts.Store, Backend: s.db.Backend()}, err
}

// whoami is GET /v1/session: who the request is served as, and the head.
func (s *Server) whoami(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	info, err := s.sessionInfo(r, id.principal)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	if id.session != "" {
		if sess, ok := s.sessions.get(id.session, time.Now()); ok {
			info.Expires = sess.expires.UTC()
		}
		info.ReadOnly = true
	}
	writeJSON(w, http.StatusOK, info)
}

// signOut is DELETE /v1/session: it ends the cookie's session.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "sign out")
	if id := identityOf(r.Context()); id.session != "" {
		s.sessions.end(id.session)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil})
	w.WriteHeader(http.StatusNoContent)
}

// cookieIdentity resolves a session cookie: the session must exist and be unexpired, and its
// token, if it has one, must still authenticate as the same principal. A token that could not
// be checked (the store cannot be read) is an error, and the session is kept for when it can.
func (s *Server) cookieIdentity(r *http.Request) (identity, bool, error) {
	c, err := r.Cookie(SessionCookie)
	if err != nil || c.Value == "" {
		return identity{}, false, nil
	}
	sess, ok := s.sessions.get(c.Value, time.Now())
	if !ok {
		return identity{}, false, nil
	}
	if sess.token != "" {
		p, err := s.auth.Authenticate(r.Context(), sess.token)
		if err != nil && !errors.Is(err, mql.ErrUnauthorized) {
			return identity{}, false, err
		}
		if err != nil || p != sess.principal {
			s.sessions.end(c.Value)
			return identity{}, false, nil
		}
	}
	return identity{principal: sess.principal, token: sess.token, session: c.Value}, true, nil
}

// errReadOnly is what a write through the web page's session gets.
var errReadOnly = errors.New("the web page's session reads only: write with a bearer token (Authorization: Bearer …) or over MCP")

// sessionProbe routes GET /v1/session, which the page asks on every load to learn whether its
// browser is signed in. A request with no credential at all (no Authorization header, no
// session cookie) is a browser that has not signed in: it is answered 204 No Content, not
// refused, since there is nothing to refuse and a browser logs every 401 as an error. A
// credential, good or bad, goes to bearer as on every request; when the session cookie no
// longer signs in, the 401 also clears it, so that the next load asks without it.
func (s *Server) sessionProbe(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			c, err := r.Cookie(SessionCookie)
			if err != nil || c.Value == "" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w = &clearOnRefusal{ResponseWriter: w, secure: r.TLS != nil}
		}
		api.ServeHTTP(w, r)
	})
}

// clearOnRefusal adds the cookie's removal to a 401.
type clearOnRefusal struct {
	http.ResponseWriter
	secure bool
}

func (c *clearOnRefusal) WriteHeader(code int) {
	if code == http.StatusUnauthorized {
		http.SetCookie(c.ResponseWriter, &http.Cookie{Name: SessionCookie, Value: "", Path: "/", MaxAge: -1,
			HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: c.secure})
	}
	c.ResponseWriter.WriteHeader(code)
}
