package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
)

// ReviewURI is the review queue: the artifacts the server's principal may see that need
// review. A client may subscribe to it (resources/subscribe) and is then told
// (notifications/resources/updated) whenever a transaction changes it, instead of polling.
const ReviewURI = "mql://review"

func (s *server) addReviewQueue(srv *mcp.Server) {
	srv.AddResource(&mcp.Resource{
		URI:      ReviewURI,
		Name:     "review",
		Title:    "Review queue",
		MIMEType: "application/json",
		Description: "The artifacts (plans, decisions, summaries) " + s.principal + " may see that need review because something they rest on changed, " +
			"as JSON, each with the inputs that went stale. Subscribe to be told when it changes.",
	}, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		q, err := s.db.As(s.principal).ReviewQueue(ctx)
		if err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(q, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ReviewURI, MIMEType: "application/json", Text: string(b) + "\n"}}}, nil
	})
}

func subscribe(_ context.Context, req *mcp.SubscribeRequest) error {
	if req.Params.URI != ReviewURI {
		return fmt.Errorf("%s cannot be subscribed to; subscribe to %s", req.Params.URI, ReviewURI)
	}
	return nil
}

func unsubscribe(context.Context, *mcp.UnsubscribeRequest) error { return nil }

// Watch tells srv's clients subscribed to the review queue when a transaction changes it (an
// artifact derived, reviewed, or made to need review), as principal as ("" for the owner) may
// see it, until ctx ends. poll, if positive, is how often it looks for other processes'
// commits on a shared store (PostgreSQL).
func Watch(ctx context.Context, srv *mcp.Server, db *mql.DB, as string, poll time.Duration) error {
	reader := db.Reader()
	if as != "" {
		reader = db.As(as)
	}
	after, err := db.Head(ctx)
	if err != nil {
		return err
	}
	told := int64(0) // one notification per transaction, however many events it had
	return reader.Follow(ctx, after, "", poll, func(e mql.Event) error {
		switch e.Kind {
		case mql.EventNeedsReview, mql.EventReview, mql.EventArtifact:
			if e.Tx != told {
				told = e.Tx
				srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: ReviewURI})
			}
		}
		return nil
	})
}
