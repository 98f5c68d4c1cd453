package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
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
		q, err := s.act.Reader().ReviewQueue(ctx)
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
// artifact starts or stops needing review, or another of its inputs goes stale), as principal
// as ("" for the owner) may see it, until ctx ends. A transaction that leaves the queue as it
// was tells nothing. poll, if positive, is how often it looks for other
// processes' commits on a shared store (PostgreSQL).
func Watch(ctx context.Context, srv *mcp.Server, db *mql.DB, as string, poll time.Duration) error {
	if as == "" {
		as = db.Owner()
	}
	reader := db.ActAs(as).Reader()
	after, err := db.Head(ctx)
	if err != nil {
		return err
	}
	last, err := queueOf(ctx, reader.AsOfTx(after))
	if err != nil {
		return err
	}
	seen := int64(0) // the queue is read once per transaction, however many events it had
	return reader.Follow(ctx, after, "", poll, func(e mql.Event) error {
		if !mayChangeQueue(e) || e.Tx == seen {
			return nil
		}
		seen = e.Tx
		// A queue that cannot be read is told as changed: the client's own read of it then
		// says what went wrong, and the watch goes on.
		q, err := queueOf(ctx, reader.AsOfTx(e.Tx))
		if err != nil || q != last {
			if err == nil {
				last = q
			}
			srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: ReviewURI})
		}
		return nil
	})
}

// mayChangeQueue reports whether a transaction with event e may have changed the review queue:
// it derived or reviewed, superseded a claim, or revoked one (which may put another back).
// Each such transaction is compared, not only those that made something need review: one that
// empties the queue (a revocation putting an earlier version back) or adds another stale input
// to an artifact already in it is told then, and the queue last told stays current, so that the
// next derivation is not told as a change it did not make.
func mayChangeQueue(e mql.Event) bool {
	switch e.Kind {
	case mql.EventNeedsReview, mql.EventReview, mql.EventArtifact, mql.EventRevocation:
		return true
	case mql.EventClaim:
		return e.Supersedes != ""
	}
	return false
}

// queueOf is what the review queue holds as r sees it: each artifact version that needs review
// with its stale inputs, the part of the queue that changes when something needs review.
func queueOf(ctx context.Context, r mql.Reader) (string, error) {
	q, err := r.ReviewQueue(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, a := range q {
		fmt.Fprintf(&b, "%s %s\n", a.Ref, strings.Join(a.Stale, " "))
	}
	return b.String(), nil
}
