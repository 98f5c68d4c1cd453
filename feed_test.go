package mql_test

import (
	"slices"
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
