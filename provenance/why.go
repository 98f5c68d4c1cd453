package provenance

import (
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// WhyKind is what a node of a why tree is.
type WhyKind int

const (
	WhyClaim        WhyKind = iota // a claim version
	WhyArtifact                    // an artifact version
	WhySource                      // one of a claim's sources (Claim, Source)
	WhyGrant                       // the grant a claim was asserted under
	WhyConfirmation                // a claim's confirmation
	WhyRevocation                  // a claim's revocation
	WhyReview                      // an artifact version's last review
)

// The relations a node of a why tree has to its parent.
const (
	RelFrom         = "from"
	RelStanding     = "standing"
	RelConfirmed    = "confirmed"
	RelRevoked      = "revoked"
	RelContests     = "contests"
	RelCorroborates = "corroborates"
	RelSupersedes   = "supersedes"
	RelDerivedFrom  = "derived from"
	RelReviewed     = "reviewed"
)

// MaxWhyChain bounds how far back a why tree follows supersession.
const MaxWhyChain = 1000

// WhyNode is a node of a why tree: what a claim or artifact version rests on, as the viewer of
// the view it was built from may see it. Which of the fields is set follows Kind.
type WhyNode struct {
	Kind     WhyKind
	Relation string // to the parent; "" at the root
	Claim    *index.ClaimEntry
	Artifact *index.ArtifactNode
	// Source is the position, in Claim.Sources, of a WhySource node's source.
	Source       int
	Grant        *record.Grant
	Confirmation *record.Confirmation
	Revocation   *record.Revocation
	Review       *record.Review
	Children     []*WhyNode
}

// WhyOfClaim explains claim version e: its sources, the grant it was asserted under, its
// confirmation and revocation, the claims it contests or corroborates, and, with history, the
// version it supersedes, explained in turn (up to MaxWhyChain versions back).
func WhyOfClaim(v *index.View, e *index.ClaimEntry, history bool) *WhyNode {
	return whyClaim(v, e, history, 0)
}

func whyClaim(v *index.View, e *index.ClaimEntry, history bool, depth int) *WhyNode {
	n := &WhyNode{Kind: WhyClaim, Claim: e}
	add := func(c *WhyNode) { n.Children = append(n.Children, c) }
	for i := range e.Sources {
		add(&WhyNode{Kind: WhySource, Relation: RelFrom, Claim: e, Source: i})
	}
	if e.Grant != "" {
		if g := v.Grant(e.Grant); g != nil {
			add(&WhyNode{Kind: WhyGrant, Relation: RelStanding, Grant: g})
		}
	}
	if cf := v.Confirmation(e); cf != nil {
		add(&WhyNode{Kind: WhyConfirmation, Relation: RelConfirmed, Confirmation: cf})
	}
	if rv := v.Revocation(e); rv != nil {
		add(&WhyNode{Kind: WhyRevocation, Relation: RelRevoked, Revocation: rv})
	}
	if e.Contests != nil {
		if o := v.Claim(*e.Contests); o != nil {
			add(&WhyNode{Kind: WhyClaim, Relation: RelContests, Claim: o})
		}
	}
	if e.Corroborates != nil {
		if o := v.Claim(*e.Corroborates); o != nil {
			add(&WhyNode{Kind: WhyClaim, Relation: RelCorroborates, Claim: o})
		}
	}
	if history && e.Supersedes != nil && depth < MaxWhyChain {
		if o := v.Claim(*e.Supersedes); o != nil {
			c := whyClaim(v, o, true, depth+1)
			c.Relation = RelSupersedes
			add(c)
		}
	}
	return n
}

// WhyOfArtifact explains artifact version a: what it was derived from (claims explained without
// their history, artifacts explained in turn, each artifact once), and its last review.
func WhyOfArtifact(v *index.View, a *index.ArtifactNode) *WhyNode {
	return whyArtifact(v, a, map[record.ArtifactID]bool{})
}

func whyArtifact(v *index.View, a *index.ArtifactNode, seen map[record.ArtifactID]bool) *WhyNode {
	n := &WhyNode{Kind: WhyArtifact, Artifact: a}
	seen[a.ID] = true
	for _, in := range a.DerivedFrom {
		var c *WhyNode
		switch {
		case in.Claim != nil:
			if e := v.Claim(*in.Claim); e != nil {
				c = whyClaim(v, e, false, 0)
			}
		case in.Artifact != nil:
			if an := v.Artifact(*in.Artifact); an != nil && !seen[an.ID] {
				c = whyArtifact(v, an, seen)
			}
		}
		if c != nil {
			c.Relation = RelDerivedFrom
			n.Children = append(n.Children, c)
		}
	}
	if rs := v.Reviews(a); len(rs) > 0 {
		n.Children = append(n.Children, &WhyNode{Kind: WhyReview, Relation: RelReviewed, Review: rs[len(rs)-1]})
	}
	return n
}
