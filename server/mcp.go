package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql/mcpserver"
)

// mcpFor returns the MCP server of a principal, made on first use, with the same tools and
// resources as `mql mcp --as PRINCIPAL`. Its review-queue watcher runs until Close.
func (s *Server) mcpFor(principal string) *mcp.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.mcps[principal]; e != nil {
		return e.srv
	}
	as := principal
	if as == s.owner {
		as = ""
	}
	srv := mcpserver.NewWith(s.db, as, mcpserver.Options{Limits: s.opts.Limits.mcp(), Embedder: s.opts.Embedder})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.stop
		cancel()
	}()
	go mcpserver.Watch(ctx, srv, s.db, as, s.opts.Poll)
	s.mcps[principal] = &mcpEntry{srv: srv}
	return srv
}

// mcpHandler serves MCP over Streamable HTTP. Sessions are bound to the principal that
// opened them: a request with another principal's token cannot use them.
func (s *Server) mcpHandler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		id := identityOf(r.Context())
		if id.principal == "" {
			return nil
		}
		return s.mcpFor(id.principal)
	}, &mcp.StreamableHTTPOptions{
		SessionTimeout:      30 * time.Minute,
		MaxRequestBodyBytes: s.opts.Limits.Body,
	})
	// The SDK binds a session to the TokenInfo's UserID; ours is the principal that the
	// bearer middleware already authenticated.
	verify := func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id := identityOf(r.Context())
		if id.principal == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id.principal}, nil
	}
	// A principal the store does not know gets no MCP server; one that cannot be looked up
	// because the store cannot be read gets 503, as every storage outage does.
	known := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := identityOf(r.Context()); id.principal != s.owner {
			if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
				s.principalFailed(w, r, false, "", err)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(known)
}

// peekMCP notes, for the request log, the JSON-RPC method of an MCP request (and the tool a
// tools/call names). It reads at most Limits.Body bytes and hands the body on unchanged.
func (s *Server) peekMCP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if identityOf(r.Context()).session != "" {
			setOutcome(r, "read only")
			http.Error(w, errReadOnly.Error(), http.StatusForbidden)
			return
		}
		setWhat(r, "mcp") // a GET's stream, a DELETE, or a body that names no method
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, s.opts.Limits.Body+1))
			r.Body.Close()
			if err != nil {
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				what := "mcp " + msg.Method
				if msg.Params.Name != "" && msg.Method == "tools/call" {
					what += " " + msg.Params.Name
				}
				setWhat(r, what)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		next.ServeHTTP(w, r)
	})
}
