package server

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/mql-dev/mql"
)

// ConnInfo is what GET /v1/conninfo answers on the local socket: which store, which backend,
// and who the request is served as.
type ConnInfo struct {
	Store     string `json:"store"`
	Backend   string `json:"backend"`
	Principal string `json:"principal"`
	Owner     string `json:"owner"`
	Head      int64  `json:"head"`
	URL       string `json:"url,omitempty"` // where the server listens for agents (HTTP)
	Version   string `json:"version,omitempty"`
}

func (s *Server) conninfo(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	if id.principal != s.owner {
		// The command line's --as: a principal the store does not know is a usage error.
		if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
			s.principalFailed(w, r, false, "--as "+id.principal+": ", err)
			return
		}
	}
	head, err := s.db.Head(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	setWhat(r, "conninfo")
	writeJSON(w, http.StatusOK, ConnInfo{Store: s.opts.Store, Backend: s.db.Backend(), Principal: id.principal, Owner: s.owner, Head: head, URL: s.opts.URL})
}

// export streams the store as N-Quads, as the request's principal may see it. It is the one
// answer not held to Limits.Output: an export is meant to be the whole store, it is served
// only on the socket (to the owner, or as a principal the owner names), and it costs the
// server no memory in proportion to its size, as mql.Reader.Export holds one chunk of
// transactions at a time and each is written as soon as it is read. An error before the
// first byte is answered 500; one after it cuts the response off (http.ErrAbortHandler), so
// that the client sees a broken answer, never a shorter export that looks whole.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	setWhat(r, "export")
	if id.principal != s.owner {
		if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
			s.principalFailed(w, r, false, "", err)
			return
		}
	}
	w.Header().Set("Content-Type", "application/n-quads")
	cw := &countingWriter{w: w}
	if err := s.db.ActAs(id.principal).Export(r.Context(), cw); err != nil {
		if cw.n == 0 {
			s.fail(w, r, false, &Error{Class: "transfer", ExitCode: 5, Message: err.Error()}, http.StatusInternalServerError)
			return
		}
		setOutcome(r, "transfer")
		panic(http.ErrAbortHandler)
	}
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// check runs the integrity check of the open store (owner only).
func (s *Server) check(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "check")
	rep, err := s.db.Check(r.Context())
	if err != nil {
		s.fail(w, r, false, &Error{Class: "open", ExitCode: 4, Message: err.Error()}, http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, rep)
}

// names lists completion candidates as the request's principal sees the store.
func (s *Server) names(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	reader := s.db.ActAs(id.principal).Reader()
	names, err := reader.Names(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Query().Get("kinds") != "1" {
		json.NewEncoder(w).Encode(names)
		return
	}
	// With kinds=1, principals and artifacts apart, so that completion can tell them from
	// subjects.
	out := Names{Names: names, Principals: []string{}, Artifacts: []string{}}
	ps, err := reader.Principals(r.Context(), "")
	if err == nil {
		for _, p := range ps {
			out.Principals = append(out.Principals, p.Name)
		}
		var as []mql.ArtifactInfo
		as, err = reader.Artifacts(r.Context(), "")
		for _, a := range as {
			out.Artifacts = append(out.Artifacts, a.Name)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	json.NewEncoder(w).Encode(out)
}

// Names is what GET /v1/names?kinds=1 answers: every name the principal may see, and which of
// them are principals and artifacts.
type Names struct {
	Names      []string `json:"names"`
	Principals []string `json:"principals"`
	Artifacts  []string `json:"artifacts"`
}

// TokenRequest asks the server to issue a token (POST /v1/tokens, local socket, owner only).
type TokenRequest struct {
	Principal string    `json:"principal"`
	Expires   time.Time `json:"expires,omitzero"`
}

// TokenResponse is a token issued: the secret, shown once, and what the store records.
type TokenResponse struct {
	Token string    `json:"token"`
	Info  mql.Token `json:"info"`
}

// ownerOnly answers 403 unless the request is the owner's own (not acting as another).
func (s *Server) ownerOnly(w http.ResponseWriter, r *http.Request) bool {
	if id := identityOf(r.Context()); id.local && id.principal == s.owner {
		return true
	}
	s.fail(w, r, false, &Error{Class: "evaluation", ExitCode: exitFailed, Message: "only the owner manages tokens"}, http.StatusForbidden)
	return false
}

func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "token create")
	if !s.ownerOnly(w, r) {
		return
	}
	var req TokenRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		s.fail(w, r, false, &Error{Class: "usage", ExitCode: exitUsage, Message: "the body is not a token request: " + err.Error()}, http.StatusBadRequest)
		return
	}
	tok, info, err := s.db.ActAs(identityOf(r.Context()).principal).CreateToken(r.Context(), mql.TokenSpec{Principal: req.Principal, Expires: req.Expires})
	if err != nil {
		s.fail(w, r, false, apiError(err), http.StatusUnprocessableEntity)
		return
	}
	writeJSON(w, http.StatusOK, TokenResponse{Token: tok, Info: info})
}

func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "token list")
	if !s.ownerOnly(w, r) {
		return
	}
	toks, err := s.db.Reader().Tokens(r.Context())
	if err != nil {
		s.fail(w, r, false, apiError(err), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, toks)
}

func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "token revoke")
	if !s.ownerOnly(w, r) {
		return
	}
	rc, err := s.db.ActAs(identityOf(r.Context()).principal).RevokeToken(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, r, false, apiError(err), http.StatusUnprocessableEntity)
		return
	}
	s.endRevoked(r.Context())
	writeJSON(w, http.StatusOK, rc)
}
