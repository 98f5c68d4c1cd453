package provenance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// TestFlagged pins which artifacts a transaction makes need review, as the change feed reports
// them: once, in the transaction that made an input stale, with the inputs it changed; not
// again while they stay in need of it, not for a version derived in that very transaction,
// and not for an artifact a review had accepted the change for.
func TestFlagged(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"a superseded input", "assert X.p\nderive plan from X.p\nassert X.p", `
tx 4: plan@1 because X.p@1
`},
		{"each dependent, transitively, once", "assert X.p\nderive a from X.p\nderive b from a\nassert X.p\nassert X.p", `
tx 5: a@1 because X.p@1
tx 5: b@1 because X.p@1
`},
		{"not again while it still needs review", "assert X.p\nassert Y.q\nderive plan from X.p, Y.q\nassert X.p\nassert Y.q", `
tx 5: plan@1 because X.p@1
`},
		{"a revoked input", "assert X.p\nderive plan from X.p@1\nrevoke X.p@1", `
tx 4: plan@1 because X.p@1
`},
		{"not a version derived in the transaction, nor one reviewed since", "assert X.p\nderive plan from X.p\nassert X.p\nreview plan\nderive report from plan\nassert X.p", `
tx 4: plan@1 because X.p@1
`},
		{"again after a review, when a newer input goes stale", "assert X.p\nassert Y.q\nderive plan from X.p, Y.q\nassert X.p\nreview plan\nassert Y.q", `
tx 5: plan@1 because X.p@1
tx 7: plan@1 because Y.q@1
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := run(t, tc.script)
			evs, _, err := db.Reader().Events(context.Background(), 0, "")
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, e := range evs {
				if e.Kind == mql.EventNeedsReview {
					fmt.Fprintf(&b, "tx %d: %s because %s\n", e.Tx, e.Ref, strings.Join(e.Because, ", "))
				}
			}
			if got, want := b.String(), strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("needs-review events:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// A version derived in the transaction that made its input stale is reported as derived, not
// as newly needing review; the artifacts derived before it are.
func TestFlaggedNotTheNewVersion(t *testing.T) {
	ctx := context.Background()
	db := run(t, "assert X.p\nderive old from X.p")
	tx, err := db.Tx(ctx, "owner", func(tx *mql.Tx) error {
		if _, err := tx.Derive(mql.DeriveSpec{Artifact: "plan", From: []string{"X.p@1"}, By: "owner"}); err != nil {
			return err
		}
		_, err := tx.Assert(mql.AssertSpec{Subject: "X", Predicate: "p", Value: mql.Number(9), By: "owner"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	evs, _, err := db.Reader().Events(ctx, tx-1, "")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Kind+" "+e.Ref)
	}
	if want := []string{"claim X.p@2", "artifact plan@1", "needs review old@1"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events of tx %d: %q, want %q", tx, got, want)
	}
}
