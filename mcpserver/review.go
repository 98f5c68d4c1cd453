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
	sub, stop := db.Subscribe()
	defer stop()
	after, err := db.Head(ctx)
	if err != nil {
		return err
	}
	var tick <-chan time.Time
	if poll > 0 && db.Backend() == "postgres" {
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			if _, err := db.Head(ctx); err != nil && ctx.Err() == nil {
				return err
			}
			continue
		case <-sub:
		}
		for {
			events, last, err := reader.Events(ctx, after, "")
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			changed := false
			for _, e := range events {
				switch e.Kind {
				case mql.EventNeedsReview, mql.EventReview, mql.EventArtifact:
					changed = true
				}
			}
			if changed {
				srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: ReviewURI})
			}
			full := last-after >= mql.MaxEventTxs
			after = last
			if !full {
				break
			}
		}
	}
}
