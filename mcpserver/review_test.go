package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/mcpserver"
)

// subscribeReviews connects a client to the orchestrator's server, watched until ctx ends, and
// subscribes it to the review queue; updates gets the URI of each update it is told of.
func subscribeReviews(ctx context.Context, t *testing.T, db *mql.DB) (cs *mcp.ClientSession, updates chan string) {
	t.Helper()
	updates = make(chan string, 16)
	srv := mcpserver.New(db, "orchestrator")
	go mcpserver.Watch(ctx, srv, db, "orchestrator", 0)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cl := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updates <- req.Params.URI
		},
	})
	cs, err = cl.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: mcpserver.ReviewURI}); err != nil {
		t.Fatal(err)
	}
	return cs, updates
}

// An agent subscribed to the review queue is told when something it derived must be
// reviewed, and reads the queue to see what and why; it is not told about what it may not see.
func TestReviewQueueSubscription(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := openStore(t, "memory:", newClock())
	team(t, db)

	cs, updates := subscribeReviews(ctx, t, db)
	queue := func() []mql.Artifact {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.ReviewURI})
		if err != nil {
			t.Fatal(err)
		}
		var q []mql.Artifact
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &q); err != nil {
			t.Fatal(err)
		}
		return q
	}
	write := func(rc mql.Receipt, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3", Sources: []mql.Source{{ID: "src:rev0"}}}))
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	drain(updates) // the derivation itself changes the queue's inputs; what matters is below
	if q := queue(); len(q) != 0 {
		t.Fatalf("queue before the change: %+v", q)
	}

	// A private claim the orchestrator may not see, and a plan resting on it: no update.
	write(db.Assert(ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("patient"), By: "architect", SeenBy: []string{"architect"}}))
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "impression", From: []string{"Player7.style"}, By: "architect"}))
	write(db.Assert(ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("bold"), By: "architect", SeenBy: []string{"architect"}}))
	select {
	case u := <-updates:
		t.Fatalf("told of %s after writes it may not see", u)
	case <-time.After(300 * time.Millisecond):
	}

	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(89), By: "worker-7", Sources: []mql.Source{{ID: "src:rev1"}}}))
	select {
	case u := <-updates:
		if u != mcpserver.ReviewURI {
			t.Fatalf("update for %s", u)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notification after the plan's input was superseded")
	}
	q := queue()
	if len(q) != 1 || q[0].Ref != "plan:pick-vendor@1" || q[0].Review != mql.NeedsReview || len(q[0].Stale) != 1 || q[0].Stale[0] != "Klarveld.price_per_seat@1" {
		t.Fatalf("queue after the change: %+v", q)
	}
}

func drain(ch chan string) {
	for {
		select {
		case <-ch:
		case <-time.After(200 * time.Millisecond):
			return
		}
	}
}

// The review queue's subscribers are told only when the queue changes, and then at once: a
// derivation that leaves it as it was tells nothing (one from a plan reviewed before it, too);
// one that replaces a version needing review tells them, and so do a revocation that puts a
// plan's input back and a second input of a plan in the queue going stale.
func TestReviewQueueTellsOnlyChanges(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := openStore(t, "memory:", newClock())
	team(t, db)
	write := func(rc mql.Receipt, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3", Sources: []mql.Source{{ID: "src:rev0"}}}))
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))

	_, updates := subscribeReviews(ctx, t, db)
	quiet := func(after string) {
		t.Helper()
		select {
		case <-updates:
			t.Fatalf("told the review queue changed after %s, which left it as it was", after)
		case <-time.After(300 * time.Millisecond):
		}
	}
	told := func(after string) {
		t.Helper()
		select {
		case <-updates:
		case <-time.After(5 * time.Second):
			t.Fatalf("not told the review queue changed after %s", after)
		}
	}

	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:budget", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	quiet("a derivation from a live claim")
	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(89), By: "worker-7", Sources: []mql.Source{{ID: "src:rev1"}}}))
	told("both plans' input was superseded")
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:other", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	quiet("a new plan from the new price")
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	told("plan:pick-vendor@2 replaced the version that needed review")
	write(db.Review(ctx, mql.ReviewSpec{Artifact: "plan:budget", By: "orchestrator", Because: "still fits"}))
	told("plan:budget was reviewed")
	// The review accepted the superseded price for what is derived from the plan after it.
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "report", From: []string{"plan:budget"}, By: "orchestrator"}))
	quiet("a report derived from plan:budget after its review")

	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(95), By: "worker-7", Sources: []mql.Source{{ID: "src:rev2"}}}))
	told("the input of plan:other and plan:pick-vendor@2 was superseded")
	// A revocation that puts their input back empties the queue: no artifact is derived or
	// reviewed, and nothing starts needing review, yet the queue changed.
	write(db.Revoke(ctx, mql.RevokeSpec{Claim: "Klarveld.price_per_seat@3", ReplacedBy: "Klarveld.price_per_seat@2", By: "worker-7", Because: "misread"}))
	told("the revocation put the plans' input back")
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:more", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	quiet("a derivation from the live claim after the revocation")

	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("EU"), By: "worker-3", Sources: []mql.Source{{ID: "src:rev0"}}}))
	write(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:two", From: []string{"Klarveld.price_per_seat", "Klarveld.region"}, By: "orchestrator"}))
	quiet("a new claim, and a derivation from it")
	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(99), By: "worker-7", Sources: []mql.Source{{ID: "src:rev3"}}}))
	told("the plans' price was superseded")
	write(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("US"), By: "worker-7", Sources: []mql.Source{{ID: "src:rev3"}}}))
	told("another input of plan:two, already in the queue, went stale")
}
