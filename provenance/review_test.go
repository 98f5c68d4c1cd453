package provenance_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// run applies a script of writes, one a line, each one second after the one before:
//
//	assert K.p                    a new value for K.p (superseding its live claim)
//	derive NAME from REF, REF     an artifact version
//	review NAME[@N]               a review of it
//	revoke K.p@N [replaced by K.p@M]
func run(t *testing.T, script string) *mql.DB {
	t.Helper()
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for i, line := range strings.Split(strings.TrimSpace(script), "\n") {
		verb, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch verb {
		case "assert":
			subj, pred, _ := strings.Cut(rest, ".")
			_, err = db.Assert(ctx, mql.AssertSpec{Subject: subj, Predicate: pred, Value: mql.Number(float64(i)), By: "owner"})
		case "derive":
			name, from, _ := strings.Cut(rest, " from ")
			_, err = db.Derive(ctx, mql.DeriveSpec{Artifact: name, From: strings.Split(from, ", "), By: "owner"})
		case "review":
			_, err = db.Review(ctx, mql.ReviewSpec{Artifact: rest, By: "owner"})
		case "revoke":
			claim, by, _ := strings.Cut(rest, " replaced by ")
			_, err = db.Revoke(ctx, mql.RevokeSpec{Claim: claim, ReplacedBy: by, By: "owner", Because: "wrong"})
		default:
			t.Fatalf("line %d: %q", i+1, line)
		}
		if err != nil {
			t.Fatalf("line %d: %q: %v", i+1, line, err)
		}
		now = now.Add(time.Second)
	}
	return db
}

// states is what a user sees of every artifact version of names: its review state and the
// inputs that went stale, one line each ("plan@1 needs review X.p@1"). It is read from history,
// and checked against what why, impact (of every version of keys) and the review queue say of
// the same versions.
func states(t *testing.T, db *mql.DB, names, keys []string) []string {
	t.Helper()
	ctx := context.Background()
	line := func(a mql.Artifact) string {
		return strings.TrimSpace(fmt.Sprintf("%s %s %s", a.Ref, a.Review, strings.Join(a.Stale, " ")))
	}
	var out, queued []string
	for _, name := range names {
		h, err := db.History(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range h.Artifacts {
			out = append(out, line(a))
			n, err := db.Why(ctx, a.Ref)
			if err != nil {
				t.Fatal(err)
			}
			if got := line(*n.Artifact); got != line(a) {
				t.Errorf("why says %q, history %q", got, line(a))
			}
			if a.Review == mql.NeedsReview {
				queued = append(queued, a.Ref)
			}
		}
	}
	for _, k := range keys {
		imp, err := db.Impact(ctx, k, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range imp.Dependents {
			if !slices.Contains(out, line(d.Artifact)) {
				t.Errorf("impact of %s says %q; history says %q", k, line(d.Artifact), out)
			}
		}
	}
	q, err := db.Reader().ReviewQueue(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var inQueue []string
	for _, a := range q {
		inQueue = append(inQueue, a.Ref)
		if !slices.Contains(out, line(a)) {
			t.Errorf("the review queue says %q; history says %q", line(a), out)
		}
	}
	slices.Sort(inQueue)
	slices.Sort(queued)
	if !slices.Equal(inQueue, queued) {
		t.Errorf("the review queue holds %q; history says %q need review", inQueue, queued)
	}
	return out
}

// Rule 4: an artifact version needs review when something it rests on, transitively, stopped
// being live since it was last reviewed; a review of an artifact it was derived from, made
// before it was derived, already accepted what had stopped being live by then.
func TestReviewState(t *testing.T) {
	tests := []struct {
		name   string
		script string
		want   []string
	}{{
		name: "fresh",
		script: `
			assert X.p
			derive plan from X.p
			derive report from plan`,
		want: []string{"plan@1 ok", "report@1 ok"},
	}, {
		name: "an input superseded: the artifact and what rests on it need review",
		script: `
			assert X.p
			assert Y.q
			derive plan from X.p, Y.q
			derive report from plan
			assert X.p`,
		want: []string{"plan@1 needs review X.p@1", "report@1 needs review X.p@1"},
	}, {
		name: "a review clears the artifact, not what was derived from it before",
		script: `
			assert X.p
			derive plan from X.p
			derive report from plan
			assert X.p
			review plan`,
		want: []string{"plan@1 ok", "report@1 needs review X.p@1"},
	}, {
		name: "what was derived after a review rests on the reviewed artifact",
		script: `
			assert X.p
			derive plan from X.p
			assert X.p
			review plan
			derive report from plan
			derive summary from report`,
		want: []string{"plan@1 ok", "report@1 ok", "summary@1 ok"},
	}, {
		name: "an input revoked before the review, then derived from",
		script: `
			assert X.p
			derive plan from X.p
			revoke X.p@1
			review plan
			derive report from plan`,
		want: []string{"plan@1 ok", "report@1 ok"},
	}, {
		name: "a change after the review still goes through",
		script: `
			assert X.p
			assert Y.q
			derive plan from X.p, Y.q
			assert X.p
			review plan
			derive report from plan
			assert Y.q`,
		want: []string{"plan@1 needs review Y.q@1", "report@1 needs review Y.q@1"},
	}, {
		name: "a review after the derivation does not cover it",
		script: `
			assert X.p
			assert Y.q
			derive plan from X.p, Y.q
			assert X.p
			review plan
			derive report from plan
			assert Y.q
			review plan`,
		want: []string{"plan@1 ok", "report@1 needs review Y.q@1"},
	}, {
		name: "a stale input reached around the review still counts",
		script: `
			assert X.p
			derive plan from X.p
			assert X.p
			review plan
			derive report from plan, X.p@1`,
		want: []string{"plan@1 ok", "report@1 needs review X.p@1"},
	}, {
		name: "the reviewed version superseded: what rests on it needs review",
		script: `
			assert X.p
			derive plan from X.p
			assert X.p
			review plan
			derive report from plan
			derive plan from X.p`,
		want: []string{"plan@1 superseded", "plan@2 ok", "report@1 needs review plan@1"},
	}, {
		name: "a review of the middle of a chain covers what was derived from it after",
		script: `
			assert X.p
			derive plan from X.p
			derive report from plan
			assert X.p
			review report
			derive summary from report`,
		want: []string{"plan@1 needs review X.p@1", "report@1 ok", "summary@1 ok"},
	}, {
		name: "re-derived after another change, the new version is ok and its dependent is not",
		script: `
			assert X.p
			assert Y.q
			derive plan from X.p, Y.q
			derive decision from plan
			assert X.p
			review plan
			assert Y.q
			derive plan from X.p, Y.q`,
		want: []string{"plan@1 superseded Y.q@1", "plan@2 ok", "decision@1 needs review plan@1 X.p@1 Y.q@1"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := run(t, tt.script)
			var names []string
			for _, w := range tt.want {
				name, _, _ := strings.Cut(w, "@")
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
			var keys []string
			for _, line := range strings.Split(tt.script, "\n") {
				if k, ok := strings.CutPrefix(strings.TrimSpace(line), "assert "); ok && !slices.Contains(keys, k) {
					keys = append(keys, k)
				}
			}
			if got := states(t, db, names, keys); !slices.Equal(got, tt.want) {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
