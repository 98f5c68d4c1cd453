package mql_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// describe renders what a user checks of an impact answer: each dependent with its depth,
// path, review state, stale inputs and effective confidence.
func describe(r mql.ImpactResult) []string {
	var out []string
	for _, d := range r.Dependents {
		a := d.Artifact
		out = append(out, fmt.Sprintf("%s depth %d via %s: %s, stale %v, effective %.2f",
			a.Ref, d.Depth, strings.Join(d.Path, " → "), a.Review, a.Stale, a.Effective))
	}
	return out
}

// describeWhy renders a provenance tree one node a line, indented by depth: artifacts with
// their review state, claims, reviews.
func describeWhy(n *mql.Node, indent string, out *[]string) {
	switch n.Kind {
	case mql.NodeArtifact:
		*out = append(*out, fmt.Sprintf("%s%s %s", indent, n.Artifact.Ref, n.Artifact.Review))
	case mql.NodeClaim:
		*out = append(*out, indent+n.Claim.Ref)
	case mql.NodeReview:
		*out = append(*out, indent+"reviewed by "+n.Review.By)
	default:
		return
	}
	for _, c := range n.Children {
		describeWhy(c, indent+"  ", out)
	}
}

func equalLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("%s:\ngot\n\t%s\nwant\n\t%s", what, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

// diamonds builds artifacts over two claims, with diamonds (c rests on a and b, which share
// K.p; d rests on c and on a again), then makes K.p@1, J.q@1 and a@1 stop being live, with a
// review of b between the two claim changes.
func diamonds(t *testing.T) *fixture {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(1), By: "worker-3", Confidence: mql.Confidence(0.9)}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "J", Predicate: "q", Value: mql.Number(2), By: "worker-3", Confidence: mql.Confidence(0.6)}))
	for _, d := range []struct {
		name string
		from []string
	}{{"a", []string{"K.p"}}, {"b", []string{"K.p", "J.q"}}, {"c", []string{"a", "b"}}, {"d", []string{"c", "a"}}, {"e", []string{"d"}}} {
		f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: d.name, From: d.from, By: "orchestrator"}))
	}
	f.assert("K", "p", mql.Number(2), "worker-7")
	f.ok(f.db.Review(f.ctx, mql.ReviewSpec{Artifact: "b", By: "alice", Because: "re-checked"}))
	f.assert("J", "q", mql.Number(3), "worker-7")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"K.p"}, By: "orchestrator"}))
	return f
}

// Each artifact is reported once, at its shortest depth, along the first shortest path; its
// stale inputs are listed breadth-first, without those that changed before its last review;
// its confidence is capped by every input, through both sides of a diamond.
func TestImpactDiamonds(t *testing.T) {
	f := diamonds(t)
	r, err := f.db.Impact(f.ctx, "K.p@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "impact K.p@1", describe(r), []string{
		"a@1 depth 1 via K.p@1 → a@1: superseded, stale [K.p@1], effective 0.90",
		"b@1 depth 1 via K.p@1 → b@1: needs review, stale [J.q@1], effective 0.60",
		"c@1 depth 2 via K.p@1 → a@1 → c@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
		"d@1 depth 2 via K.p@1 → a@1 → d@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
		"e@1 depth 3 via K.p@1 → a@1 → d@1 → e@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
	})
	if r.Truncated {
		t.Fatal("an unbounded impact says it was truncated")
	}

	r, err = f.db.Impact(f.ctx, "K.p", 0)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "impact K.p", describe(r), []string{
		"a@1 depth 1 via K.p@1 → a@1: superseded, stale [K.p@1], effective 0.90",
		"b@1 depth 1 via K.p@1 → b@1: needs review, stale [J.q@1], effective 0.60",
		"a@2 depth 1 via K.p@2 → a@2: ok, stale [], effective 1.00",
		"c@1 depth 2 via K.p@1 → a@1 → c@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
		"d@1 depth 2 via K.p@1 → a@1 → d@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
		"e@1 depth 3 via K.p@1 → a@1 → d@1 → e@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
	})

	r, err = f.db.Impact(f.ctx, "K.p@1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(r); len(got) != 4 || !r.Truncated {
		t.Fatalf("impact depth 2: truncated %v, %s", r.Truncated, strings.Join(got, "; "))
	}

	r, err = f.db.Impact(f.ctx, "a@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "impact a@1", describe(r), []string{
		"c@1 depth 1 via a@1 → c@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
		"d@1 depth 1 via a@1 → d@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
		"e@1 depth 2 via a@1 → d@1 → e@1: needs review, stale [a@1 K.p@1 J.q@1], effective 0.60",
	})

	// why shows each artifact once: d's second input, a@1, was already explained under c.
	n, err := f.db.Why(f.ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	var why []string
	describeWhy(n, "", &why)
	equalLines(t, "why e", why, []string{
		"e@1 needs review",
		"  d@1 needs review",
		"    c@1 needs review",
		"      a@1 superseded",
		"        K.p@1",
		"      b@1 needs review",
		"        K.p@1",
		"        J.q@1",
		"        reviewed by alice",
	})

	st, err := f.db.Stats(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Artifacts != 5 || st.NeedsReview != 4 {
		t.Fatalf("stats: %d artifacts, %d need review; want 5 and 4", st.Artifacts, st.NeedsReview)
	}
}

// A derivation that would close a cycle is refused, and the reads over the graph it left are
// unchanged.
func TestImpactCycleRefused(t *testing.T) {
	f := diamonds(t)
	before, err := f.db.Impact(f.ctx, "K.p@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	f.refused(mql.ErrCycle, func() (mql.Receipt, error) {
		return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "b", From: []string{"e"}, By: "orchestrator"})
	})
	f.refused(mql.ErrCycle, func() (mql.Receipt, error) {
		return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "c", From: []string{"c@1", "d"}, By: "orchestrator"})
	})
	after, err := f.db.Impact(f.ctx, "K.p@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	equalLines(t, "impact after the refusals", describe(after), describe(before))
}

// A chain a0 ← a1 ← … ← a49 resting on K.p, joined at a20 by J.q: superseding K.p@1 leaves
// every artifact needing review, except a30, reviewed after it changed (a31 on still needs
// review: a review does not travel down). Superseding J.q@1 afterwards reaches a20 on.
func TestImpactDeepChain(t *testing.T) {
	const n = 50
	f := open(t, mql.Options{}).team()
	f.assert("K", "p", mql.Number(1), "worker-3")
	f.assert("J", "q", mql.Number(1), "worker-3")
	for i := range n {
		from := []string{"K.p"}
		if i > 0 {
			from = []string{fmt.Sprintf("a%d", i-1)}
		}
		if i == 20 {
			from = append(from, "J.q")
		}
		f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: fmt.Sprintf("a%d", i), From: from, By: "orchestrator"}))
	}
	f.assert("K", "p", mql.Number(2), "worker-7")
	f.ok(f.db.Review(f.ctx, mql.ReviewSpec{Artifact: "a30", By: "alice"}))
	f.assert("J", "q", mql.Number(2), "worker-7")

	r, err := f.db.Impact(f.ctx, "K.p@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Dependents) != n || r.Truncated {
		t.Fatalf("impact K.p@1: %d dependents, truncated %v", len(r.Dependents), r.Truncated)
	}
	path := []string{"K.p@1"}
	for i, d := range r.Dependents {
		ref := fmt.Sprintf("a%d@1", i)
		path = append(path, ref)
		review, stale := mql.NeedsReview, "[K.p@1]"
		switch {
		case i == 30:
			review, stale = mql.NeedsReview, "[J.q@1]"
		case i >= 20:
			stale = "[J.q@1 K.p@1]" // J.q@1 is the nearer
		}
		if d.Artifact.Ref != ref || d.Depth != i+1 || strings.Join(d.Path, " ") != strings.Join(path, " ") ||
			d.Artifact.Review != review || fmt.Sprint(d.Artifact.Stale) != stale {
			t.Fatalf("dependent %d: %s depth %d via %v: %s, stale %v; want %s depth %d, %s, stale %s",
				i, d.Artifact.Ref, d.Depth, d.Path, d.Artifact.Review, d.Artifact.Stale, ref, i+1, review, stale)
		}
	}
	// The paths share storage; appending to one must not change another.
	_ = append(r.Dependents[10].Path, "x")
	if got := r.Dependents[11].Path[12]; got != "a11@1" {
		t.Fatalf("appending to a path changed the next one: %s", got)
	}

	r, err = f.db.Impact(f.ctx, "J.q@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Dependents) != n-20 || r.Dependents[0].Artifact.Ref != "a20@1" ||
		strings.Join(r.Dependents[n-21].Path, " ") != "J.q@1 a20@1 a21@1 a22@1 a23@1 a24@1 a25@1 a26@1 a27@1 a28@1 a29@1 a30@1 a31@1 a32@1 a33@1 a34@1 a35@1 a36@1 a37@1 a38@1 a39@1 a40@1 a41@1 a42@1 a43@1 a44@1 a45@1 a46@1 a47@1 a48@1 a49@1" {
		t.Fatalf("impact J.q@1: %s", strings.Join(describe(r), "; "))
	}
}

// A chain of 10,000 artifacts: impact, why and stats complete and report every artifact.
func TestChainOf10k(t *testing.T) {
	const n = 10_000
	f := open(t, mql.Options{})
	if err := f.db.Import(f.ctx, strings.NewReader(hostileChain(t, n))); err != nil {
		t.Fatal(err)
	}
	f.assert("K", "p", mql.String("w"), "owner")

	r, err := f.db.Impact(f.ctx, "K.p@1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Dependents) != n || r.Truncated {
		t.Fatalf("impact: %d dependents, truncated %v", len(r.Dependents), r.Truncated)
	}
	for i, d := range r.Dependents {
		ref := fmt.Sprintf("a%d@1", i)
		if d.Artifact.Ref != ref || d.Depth != i+1 || len(d.Path) != i+2 || d.Path[0] != "K.p@1" || d.Path[i+1] != ref ||
			d.Artifact.Review != mql.NeedsReview || len(d.Artifact.Stale) != 1 || d.Artifact.Stale[0] != "K.p@1" {
			t.Fatalf("dependent %d: %s depth %d, path of %d, %s, stale %v", i, d.Artifact.Ref, d.Depth, len(d.Path), d.Artifact.Review, d.Artifact.Stale)
		}
		if i > 0 && d.Path[i] != r.Dependents[i-1].Artifact.Ref {
			t.Fatalf("dependent %d: reached through %s, want %s", i, d.Path[i], r.Dependents[i-1].Artifact.Ref)
		}
	}

	n0, err := f.db.Why(f.ctx, fmt.Sprintf("a%d", n-1))
	if err != nil {
		t.Fatal(err)
	}
	depth := 0
	for node := n0; ; depth++ {
		if node.Kind == mql.NodeClaim {
			if node.Claim.Ref != "K.p@1" || depth != n {
				t.Fatalf("why ends at %s at depth %d", node.Claim.Ref, depth)
			}
			break
		}
		if node.Artifact.Ref != fmt.Sprintf("a%d@1", n-1-depth) || node.Artifact.Review != mql.NeedsReview || len(node.Children) != 1 {
			t.Fatalf("why at depth %d: %s %s, %d children", depth, node.Artifact.Ref, node.Artifact.Review, len(node.Children))
		}
		node = node.Children[0]
	}

	st, err := f.db.Stats(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Artifacts != n || st.NeedsReview != n {
		t.Fatalf("stats: %d artifacts, %d need review", st.Artifacts, st.NeedsReview)
	}
}
