package mcpserver

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// language.md is a copy of docs/LANGUAGE.md, the one source of truth; TestLanguageCopy fails
// when they differ. Refresh it with `go generate ./mcpserver/`.
//
//go:generate cp ../docs/LANGUAGE.md language.md
//go:embed language.md
var languageReference string

// Resource URIs.
const (
	StatsURI    = "mql://stats"
	LanguageURI = "mql://language"
)

func (s *server) addResources(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{
		URI:      StatsURI,
		Name:     "stats",
		Title:    "Store statistics",
		MIMEType: "application/json",
		Description: "The store as " + s.principal + " sees it, as JSON: transactions, principals, sources, claims by state " +
			"(live, superseded, revoked, expired, contested), keys, live artifacts, artifacts needing review, contested claims, revocations and the stale rate.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		st, err := s.act.Reader().Stats(ctx)
		if err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: StatsURI, MIMEType: "application/json", Text: string(b) + "\n"}}}, nil
	})
	srv.AddResource(&mcp.Resource{
		URI:         LanguageURI,
		Name:        "language",
		Title:       "The mql language reference",
		MIMEType:    "text/markdown",
		Description: "The grammar and meaning of every mql statement: what the query tool accepts and what the other tools do.",
		Size:        int64(len(languageReference)),
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: LanguageURI, MIMEType: "text/markdown", Text: languageReference}}}, nil
	})
}
