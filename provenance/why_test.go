package provenance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// outline writes a why tree one node a line, indented by depth: its relation to its parent
// and what it is.
func outline(b *strings.Builder, n *mql.Node, depth int) {
	b.WriteString(strings.Repeat("  ", depth))
	if n.Relation != "" {
		b.WriteString(n.Relation + " ")
	}
	switch {
	case n.Claim != nil:
		fmt.Fprintf(b, "%s %s", n.Claim.Ref, n.Claim.State)
	case n.Artifact != nil:
		fmt.Fprintf(b, "%s %s", n.Artifact.Ref, n.Artifact.Review)
	case n.Source != nil:
		b.WriteString(n.Source.ID)
	case n.Revocation != nil:
		fmt.Fprintf(b, "by %s", n.Revocation.By)
	case n.Review != nil:
		fmt.Fprintf(b, "by %s", n.Review.By)
	default:
		fmt.Fprintf(b, "%s by %s", n.Kind, n.By)
	}
	b.WriteString("\n")
	for _, c := range n.Children {
		outline(b, c, depth+1)
	}
}

// TestWhyTree pins what a why tree explains a node by: a claim by its sources, its revocation
// and the version it supersedes, explained in turn; an artifact by what it was derived from
// (its claims without their history, each artifact once) and its last review.
func TestWhyTree(t *testing.T) {
	for _, tc := range []struct {
		name, script, ref, want string
	}{
		{"a claim with no history", "assert X.p", "X.p", `
X.p@1 live
`},
		{"the versions a claim supersedes, newest first", "assert X.p\nassert X.p\nassert X.p", "X.p", `
X.p@3 live
  supersedes X.p@2 superseded
    supersedes X.p@1 superseded
`},
		{"a revoked version, and the live one it left", "assert X.p\nassert X.p\nrevoke X.p@2 replaced by X.p@1", "X.p@2", `
X.p@2 revoked
  revoked by owner
  supersedes X.p@1 live
`},
		{"an artifact's inputs, without their history", "assert X.p\nassert X.p\nassert Y.q\nderive plan from X.p, Y.q", "plan", `
plan@1 ok
  derived from X.p@2 live
  derived from Y.q@1 live
`},
		{"an artifact derived from artifacts, each explained once", "assert X.p\nderive a from X.p\nderive b from a\nderive c from a, b", "c", `
c@1 ok
  derived from a@1 ok
    derived from X.p@1 live
  derived from b@1 ok
`},
		{"an artifact's last review", "assert X.p\nderive plan from X.p\nassert X.p\nreview plan\nreview plan", "plan", `
plan@1 ok
  derived from X.p@1 superseded
  reviewed by owner
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := run(t, tc.script)
			n, err := db.Why(context.Background(), tc.ref)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			outline(&b, n, 0)
			if got, want := b.String(), strings.TrimPrefix(tc.want, "\n"); got != want {
				t.Errorf("why %s:\n%s\nwant:\n%s", tc.ref, got, want)
			}
		})
	}
}
