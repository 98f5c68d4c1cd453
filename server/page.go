package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

// Two reads the language has no statement for, which the web page needs: what a search box can
// complete, and the review queue. Both are served as the request's principal, like every read.

// readerFor is the reader of the request's principal, as of ?tx=N when given.
func (s *Server) readerFor(w http.ResponseWriter, r *http.Request) (mql.Reader, bool) {
	id := identityOf(r.Context())
	reader := s.db.ActAs(id.principal).Reader()
	if id.principal != s.owner {
		if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
			s.principalFailed(w, r, false, "", err)
			return reader, false
		}
	}
	if tx := r.URL.Query().Get("tx"); tx != "" {
		n, err := strconv.ParseInt(tx, 10, 64)
		if err != nil || n < 0 {
			s.fail(w, r, false, &Error{Class: "usage", ExitCode: exitUsage, Message: "tx " + strconv.Quote(tx) + ": want a transaction number, 0 or more"}, http.StatusBadRequest)
			return reader, false
		}
		reader = reader.AsOfTx(n)
	}
	return reader, true
}

// catalog is GET /v1/catalog[?tx=N]: the principals, subjects, predicates, claim keys and
// artifacts the principal may see (mql.Catalog).
func (s *Server) catalog(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "catalog")
	reader, ok := s.readerFor(w, r)
	if !ok {
		return
	}
	c, err := reader.Catalog(r.Context())
	if err != nil {
		s.fail(w, r, false, apiError(err), http.StatusUnprocessableEntity)
		return
	}
	s.writeBounded(w, r, c)
}

// ReviewQueue answers GET /v1/review-queue: the newest artifact versions that need review, as
// artifact objects of docs/OUTPUT.md.
type ReviewQueue struct {
	Rows []mql.Artifact `json:"rows"`
}

// reviewQueue is GET /v1/review-queue[?tx=N] (mql.Reader.ReviewQueue).
func (s *Server) reviewQueue(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "review queue")
	reader, ok := s.readerFor(w, r)
	if !ok {
		return
	}
	q, err := reader.ReviewQueue(r.Context())
	if err != nil {
		s.fail(w, r, false, apiError(err), http.StatusUnprocessableEntity)
		return
	}
	s.writeBounded(w, r, ReviewQueue{Rows: q})
}

// writeBounded answers v as JSON, or 413 when its JSON is over Limits.Output: the catalog and
// the review queue are held to the output limit as /v1/query's answers are.
func (s *Server) writeBounded(w http.ResponseWriter, r *http.Request, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.fail(w, r, false, apiError(err), http.StatusInternalServerError)
		return
	}
	if n := int64(b.Len()); n > s.opts.Limits.Output {
		s.fail(w, r, false, &Error{Class: "usage", ExitCode: exitUsage, Message: fmt.Sprintf("the answer is %d bytes, over %s, the output limit (mql serve --max-output): raise the limit to read it whole", n, mcpserver.Bytes(s.opts.Limits.Output))}, http.StatusRequestEntityTooLarge)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b.Bytes())
}
