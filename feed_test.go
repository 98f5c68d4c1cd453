package mql_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// The change feed reports each transaction's effect, including the artifacts it made need
// review, and only what the reader may see.
func TestEvents(t *testing.T) {
	f := open(t, mql.Options{}).team()
	head, _ := f.db.Head(f.ctx)
	f.assert("Klarveld", "price_per_seat", mql.Number(44), "worker-3", "src:Klarveld:rev0")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	f.assert("Klarveld", "price_per_seat", mql.Number(89), "worker-7", "src:Klarveld:rev1")
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("patient"), By: "architect", SeenBy: []string{"architect"}}))
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Klarveld.price_per_seat@2", By: "worker-7", Because: "misread"}))

	type ev struct{ kind, ref, supersedes string }
	summary := func(es []mql.Event) []ev {
		var out []ev
		for _, e := range es {
			out = append(out, ev{e.Kind, e.Ref, e.Supersedes})
		}
		return out
	}
	events, last, err := f.db.Reader().Events(f.ctx, head, "")
	if err != nil {
		t.Fatal(err)
	}
	want := []ev{
		{mql.EventClaim, "Klarveld.price_per_seat@1", ""},
		{mql.EventArtifact, "plan:pick-vendor@1", ""},
		{mql.EventClaim, "Klarveld.price_per_seat@2", "Klarveld.price_per_seat@1"},
		{mql.EventNeedsReview, "plan:pick-vendor@1", ""},
		{mql.EventClaim, "Player7.style@1", ""},
		{mql.EventRevocation, "Klarveld.price_per_seat@2", ""},
	}
	if got := summary(events); !slices.Equal(got, want) {
		t.Fatalf("owner's events:\n got %v\nwant %v", got, want)
	}
	if h, _ := f.db.Head(f.ctx); last != h {
		t.Errorf("last = %d, want the head %d", last, h)
	}
	nr := events[3]
	if !slices.Equal(nr.Because, []string{"Klarveld.price_per_seat@1"}) || nr.Artifact == nil || nr.Artifact.Review != mql.NeedsReview {
		t.Errorf("needs review event = %+v", nr)
	}
	// The revocation of @2 does not make the plan need review again: it already does.
	if rv := events[5]; rv.Revocation == nil || rv.Revocation.Because != "misread" || rv.Claim.State != mql.Revoked {
		t.Errorf("revocation event = %+v", rv)
	}

	// worker-3 does not see the architect's impression, in any event.
	events, _, err = f.db.As("worker-3").Events(f.ctx, head, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Ref == "Player7.style@1" {
			t.Errorf("worker-3 was told of %+v", e)
		}
	}
	if len(events) != 5 {
		t.Errorf("worker-3 got %d events, want 5: %v", len(events), summary(events))
	}

	// Patterns.
	for pat, n := range map[string]int{"Klarveld": 3, "Klarveld.*": 3, "*.price_per_seat": 3, "plan:*": 2, "Player7.style": 1, "nothing": 0} {
		es, _, err := f.db.Reader().Events(f.ctx, head, pat)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) != n {
			t.Errorf("pattern %q: %d events, want %d: %v", pat, len(es), n, summary(es))
		}
	}
	if _, _, err := f.db.Reader().Events(f.ctx, 1000, ""); err == nil {
		t.Error("events after a transaction past the head: no error")
	}
}

// The feed's needs-review events follow the review state rule (docs/MODEL.md, rule 4): a report
// derived from a plan after the plan's review does not need review for what that review
// accepted, so when another input of the plan goes stale later, the report starts needing
// review, and the feed says so, with the plan.
func TestEventsNeedsReviewFollowsReviews(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("Klarveld", "price_per_seat", mql.Number(44), "worker-3")
	f.assert("Klarveld", "region", mql.String("EU"), "worker-3")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan", From: []string{"Klarveld.price_per_seat", "Klarveld.region"}, By: "orchestrator"}))
	f.assert("Klarveld", "price_per_seat", mql.Number(89), "worker-7")
	f.ok(f.db.Review(f.ctx, mql.ReviewSpec{Artifact: "plan", By: "alice", Because: "89 still wins"}))
	head, _ := f.db.Head(f.ctx)
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "report", From: []string{"plan"}, By: "orchestrator"}))
	f.assert("Klarveld", "region", mql.String("US"), "worker-7")

	events, _, err := f.db.Reader().Events(f.ctx, head, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range events {
		s := fmt.Sprintf("tx %d %s %s", e.Tx, e.Kind, e.Ref)
		if e.Artifact != nil {
			s += " (" + string(e.Artifact.Review) + ")"
		}
		if len(e.Because) > 0 {
			s += " because " + strings.Join(e.Because, " ")
		}
		got = append(got, s)
	}
	want := []string{
		fmt.Sprintf("tx %d artifact report@1 (ok)", head+1),
		fmt.Sprintf("tx %d claim Klarveld.region@2", head+2),
		fmt.Sprintf("tx %d needs review plan@1 (needs review) because Klarveld.region@1", head+2),
		fmt.Sprintf("tx %d needs review report@1 (needs review) because Klarveld.region@1", head+2),
	}
	if !slices.Equal(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
}

// A subscriber is signalled after each commit.
func TestSubscribe(t *testing.T) {
	f := open(t, mql.Options{}).team()
	ch, stop := f.db.Subscribe()
	defer stop()
	f.assert("K", "p", mql.Number(1), "worker-3")
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatal("no signal after a commit")
	}
}
