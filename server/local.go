package server

import (
	"encoding/json"
	"net/http"
	"strings"
)

// ConnInfo is what GET /v1/conninfo answers on the local socket: which store, which backend,
// and who the request is served as.
type ConnInfo struct {
	Store     string `json:"store"`
	Backend   string `json:"backend"`
	Principal string `json:"principal"`
	Owner     string `json:"owner"`
	Head      int64  `json:"head"`
	Version   string `json:"version,omitempty"`
}

func (s *Server) conninfo(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	head, err := s.db.Head(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, http.StatusOK, ConnInfo{Store: s.opts.Store, Backend: s.db.Backend(), Principal: id.principal, Owner: s.owner, Head: head})
}

// export streams the store as N-Quads, as the request's principal may see it.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	setWhat(r, "export")
	reader := s.db.Reader()
	if id.principal != s.owner {
		if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
			s.fail(w, r, false, &Error{Class: "usage", ExitCode: exitUsage, Message: err.Error()}, http.StatusBadRequest)
			return
		}
		reader = s.db.As(id.principal)
	}
	// Export builds the whole answer before it writes, so an error comes before any byte.
	var b strings.Builder
	if err := reader.Export(r.Context(), &b); err != nil {
		s.fail(w, r, false, &Error{Class: "transfer", ExitCode: 5, Message: err.Error()}, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/n-quads")
	w.Write([]byte(b.String()))
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
	reader := s.db.Reader()
	if id.principal != s.owner {
		reader = s.db.As(id.principal)
	}
	names, err := reader.Names(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(names)
}
