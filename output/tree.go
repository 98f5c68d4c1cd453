package output

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mql-dev/mql"
)

// nodeRef is the reference a node names, used to shorten its children's references.
func nodeRef(n *mql.Node) string {
	switch {
	case n.Claim != nil:
		return n.Claim.Ref
	case n.Artifact != nil:
		return n.Artifact.Ref
	}
	return ""
}

// claimDetail is "live, observed by worker-7, confidence 1.0" and the claim's other
// particulars.
func claimDetail(c *mql.Claim) string {
	parts := []string{string(c.State), fmt.Sprintf("%s by %s", c.Kind, Escape(c.By)), "confidence " + fmtConf(c.Effective)}
	if !c.ValidFrom.IsZero() {
		parts = append(parts, "valid from "+fmtTime(c.ValidFrom))
	}
	if !c.ValidUntil.IsZero() {
		parts = append(parts, "valid until "+fmtTime(c.ValidUntil))
	}
	if len(c.SeenBy) > 0 {
		parts = append(parts, "seen by "+escapeJoin(c.SeenBy, ", "))
	}
	return strings.Join(parts, ", ")
}

func artifactDetail(a *mql.Artifact) string {
	parts := []string{string(a.State)}
	switch a.Review {
	case mql.ReviewOK:
		parts = append(parts, "review ok")
	case mql.NeedsReview:
		parts = append(parts, string(a.Review))
	}
	by := "derived by " + Escape(a.By)
	if a.Run != "" {
		by += " in run " + Escape(a.Run)
	}
	parts = append(parts, by, "confidence "+fmtConf(a.Effective))
	if len(a.SeenBy) > 0 {
		parts = append(parts, "seen by "+escapeJoin(a.SeenBy, ", "))
	}
	return strings.Join(parts, ", ")
}

func sourceDetail(s *mql.Source) string {
	var parts []string
	if s.Excerpt != "" {
		parts = append(parts, strconv.Quote(s.Excerpt))
	}
	if s.URI != "" {
		parts = append(parts, "<"+Escape(s.URI)+">")
	}
	if s.Revision != "" {
		parts = append(parts, "revision "+Escape(s.Revision))
	}
	return strings.Join(parts, ", ")
}

// nodeCells describes a node as a name and a detail, for a person: every string from the store
// is escaped (reasons and excerpts are quoted as values are). parent is the reference of the
// node's parent, used to write other versions of the same key as "@N".
func nodeCells(n *mql.Node, parent string) (name, detail string) {
	switch {
	case n.Claim != nil:
		return Escape(shortRef(n.Claim.Ref, parent)) + " = " + valueText(n.Claim.Value), claimDetail(n.Claim)
	case n.Artifact != nil:
		return Escape(shortRef(n.Artifact.Ref, parent)), artifactDetail(n.Artifact)
	case n.Source != nil:
		return Escape(n.Source.ID), sourceDetail(n.Source)
	case n.Grant != nil:
		g := n.Grant
		return Escape(g.ID), fmt.Sprintf("%s may %s on %s, granted by %s", Escape(g.Grantee), Escape(string(g.Right)), Escape(g.Scope), Escape(g.By))
	case n.Revocation != nil:
		rv := n.Revocation
		parts := []string{"at " + fmtTime(rv.At)}
		if rv.Because != "" {
			parts = append(parts, "because "+strconv.Quote(rv.Because))
		}
		parts = append(parts, "standing "+standingText(rv.Standing, rv.StandingGrant))
		if rv.ReplacedBy != "" {
			parts = append(parts, "replaced by "+Escape(shortRef(rv.ReplacedBy, parent)))
		}
		return "by " + Escape(rv.By), strings.Join(parts, ", ")
	case n.Review != nil:
		rv := n.Review
		d := "at " + fmtTime(rv.At)
		if rv.Because != "" {
			d += ", because " + strconv.Quote(rv.Because)
		}
		return "by " + Escape(rv.By), d
	case n.Kind == mql.NodeConfirmation:
		d := "at " + fmtTime(n.At)
		if n.Standing != "" {
			d += ", standing " + standingText(n.Standing, n.StandingGrant)
		}
		return "by " + Escape(n.By), d
	case n.Standing != "":
		return Escape(n.Standing), ""
	}
	return string(n.Kind), ""
}

// onlySources reports whether n has children and all of them are bare source ids, which a tree
// writes inline: "supersedes @1 = 44, observed by worker-3, from src:Klarveld:rev0".
func onlySources(n *mql.Node) bool {
	if len(n.Children) == 0 {
		return false
	}
	for _, c := range n.Children {
		if c.Source == nil || len(c.Children) > 0 || sourceDetail(c.Source) != "" {
			return false
		}
	}
	return true
}

// writeWhyTree draws a provenance tree:
//
//	Klarveld.price_per_seat@2 = 89  live, observed by worker-7, confidence 1.0
//	├─ from src:Klarveld:rev1
//	└─ supersedes @1 = 44, superseded, observed by worker-3, confidence 0.9, from src:Klarveld:rev0
func writeWhyTree(b *strings.Builder, root *mql.Node) {
	name, detail := nodeCells(root, "")
	b.WriteString(name)
	if detail != "" {
		b.WriteString("  " + detail)
	}
	b.WriteString("\n")
	if root.Note != "" {
		b.WriteString("(" + Escape(root.Note) + ")\n")
	}
	writeChildren(b, root, "")
}

func writeChildren(b *strings.Builder, n *mql.Node, indent string) {
	self := nodeRef(n)
	for i, c := range n.Children {
		last := i == len(n.Children)-1
		branch, next := "├─ ", "│  "
		if last {
			branch, next = "└─ ", "   "
		}
		name, detail := nodeCells(c, self)
		line := name
		if c.Relation != "" {
			line = c.Relation + " " + name
		}
		if detail != "" {
			line += ", " + detail
		}
		inline := c.Claim != nil && onlySources(c)
		if inline {
			var ids []string
			for _, s := range c.Children {
				ids = append(ids, Escape(s.Source.ID))
			}
			line += ", from " + strings.Join(ids, ", ")
		}
		b.WriteString(indent + branch + line + "\n")
		if !inline {
			writeChildren(b, c, indent+next)
		}
	}
}

// writeImpactTree draws what depends on the changed node(s), one branch per derivation:
//
//	Klarveld.price_per_seat@1
//	└─ plan:pick-vendor@1  needs review  (derived from Klarveld.price_per_seat@1, no longer live)
//	   └─ decision:go@1  needs review  (derived from plan:pick-vendor@1)
func writeImpactTree(b *strings.Builder, im *mql.ImpactResult) {
	children := map[string][]mql.Dependent{}
	for _, d := range im.Dependents {
		parent := ""
		if len(d.Path) >= 2 {
			parent = d.Path[len(d.Path)-2]
		} else if len(im.Of) > 0 {
			parent = im.Of[0]
		}
		children[parent] = append(children[parent], d)
	}
	var roots []string
	for _, of := range im.Of {
		if len(children[of]) > 0 {
			roots = append(roots, of)
		}
	}
	if len(roots) == 0 {
		b.WriteString(escapeJoin(im.Of, ", "))
		b.WriteString("  (nothing depends on it)\n")
		return
	}
	changes := map[string]mql.Change{}
	for _, ch := range im.Changes {
		changes[ch.Ref] = ch
	}
	seen := map[string]bool{}
	var walk func(ref, indent string)
	walk = func(ref, indent string) {
		kids := children[ref]
		for i, d := range kids {
			last := i == len(kids)-1
			branch, next := "├─ ", "│  "
			if last {
				branch, next = "└─ ", "   "
			}
			a := d.Artifact
			note := "derived from " + Escape(ref)
			if ch, ok := changes[ref]; ok && ch.State != mql.Live {
				switch {
				case ch.State == mql.Superseded && ch.ReplacedBy != "":
					note += ", superseded by " + Escape(shortRef(ch.ReplacedBy, ref))
				case ch.ReplacedBy != "":
					note += ", " + string(ch.State) + ", replaced by " + Escape(shortRef(ch.ReplacedBy, ref))
				default:
					note += ", " + string(ch.State)
				}
			} else if slices.Contains(a.Stale, ref) {
				note += ", no longer live"
			}
			fmt.Fprintf(b, "%s%s%s  %s  (%s)\n", indent, branch, Escape(a.Ref), a.Review, note)
			if !seen[a.Ref] {
				seen[a.Ref] = true
				walk(a.Ref, indent+next)
			}
		}
	}
	for _, r := range roots {
		b.WriteString(Escape(r) + "\n")
		walk(r, "")
	}
	if im.Truncated {
		b.WriteString("(depth limit reached: more dependents lie beyond it)\n")
	}
}
