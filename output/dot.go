package output

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// The dot format draws why and impact as Graphviz digraphs, with the states and colours of the
// web page, so that `mql -c 'why X' --format dot team.db | dot -Tsvg > why.svg` gives a
// picture without a browser. Every string from the store goes into a label escaped for a
// person (as in tree) and then quoted for DOT, so no agent-written text can end a label,
// start a new statement or become an HTML-like label.

// ErrNoGraph is returned when a read other than why or impact is rendered as dot.
var ErrNoGraph = errors.New("the dot format draws why and impact only")

// Palette is the fill and line colour of each state, shared by the dot format and the web
// page (web/static/app.css uses the same values), so a picture reads the same everywhere.
var Palette = map[string][2]string{
	string(mql.Live):        {"#d3f9d8", "#2b8a3e"},
	string(mql.Superseded):  {"#e9ecef", "#868e96"},
	string(mql.Revoked):     {"#ffe3e3", "#c92a2a"},
	string(mql.Expired):     {"#fff3bf", "#e67700"},
	string(mql.Contested):   {"#f3d9fa", "#862e9c"},
	string(mql.NeedsReview): {"#ffe3e3", "#c92a2a"},
	"artifact":              {"#dbe4ff", "#364fc7"},
	"source":                {"#ffffff", "#495057"},
	"principal":             {"#f8f9fa", "#495057"},
	"grant":                 {"#e3fafc", "#0b7285"},
	"revocation":            {"#c92a2a", "#c92a2a"},
	"event":                 {"#fff9db", "#5c940d"}, // confirmation, review, standing
}

// writeDot renders r as a digraph: why and impact draw; a write's receipt becomes a comment
// line (so a script that writes, then asks why, still pipes into dot); any other read is
// refused with ErrNoGraph.
func writeDot(b *strings.Builder, r *query.Result) error {
	switch {
	case r.Why != nil:
		g := newDotGraph(r.Statement)
		g.why(r.Why)
		g.write(b)
	case r.Impact != nil:
		g := newDotGraph(r.Statement)
		g.impact(r.Impact)
		g.write(b)
	case r.Receipt != nil:
		b.WriteString("// " + strings.TrimSuffix(EscapeText(writeLine(r)), "\n") + "\n")
	default:
		return fmt.Errorf("%w: %q has no graph; use --format table, tree, json or csv for it (\\format in the REPL)", ErrNoGraph, r.Kind)
	}
	return nil
}

type dotNode struct {
	id    string
	attrs string
}

type dotEdge struct {
	from, to, label string
	style           string
}

// dotGraph collects nodes (each once, by what it stands for) and edges (each once).
type dotGraph struct {
	title string
	ids   map[string]string // key → node id
	stub  map[string]int    // keys of nodes known only by reference → their index in nodes
	nodes []dotNode
	edges []dotEdge
	seen  map[dotEdge]bool
}

func newDotGraph(title string) *dotGraph {
	return &dotGraph{title: title, ids: map[string]string{}, stub: map[string]int{}, seen: map[dotEdge]bool{}}
}

// node adds the node for key, once, and returns its id. A node first added by reference
// alone (stub) takes the attributes of the full node when that comes later.
func (g *dotGraph) node(key string, attrs func() string) string {
	if id, ok := g.ids[key]; ok {
		if i, ok := g.stub[key]; ok {
			g.nodes[i].attrs = attrs()
			delete(g.stub, key)
		}
		return id
	}
	id := fmt.Sprintf("n%d", len(g.nodes))
	g.ids[key] = id
	g.nodes = append(g.nodes, dotNode{id: id, attrs: attrs()})
	return id
}

func (g *dotGraph) edge(from, to, label, style string) {
	e := dotEdge{from: from, to: to, label: label, style: style}
	if g.seen[e] {
		return
	}
	g.seen[e] = true
	g.edges = append(g.edges, e)
}

func (g *dotGraph) write(b *strings.Builder) {
	b.WriteString("digraph mql {\n")
	fmt.Fprintf(b, "  label=%s; labelloc=t; fontname=\"Helvetica\"; fontsize=12;\n", dotQuote(EscapeText(g.title)))
	b.WriteString("  rankdir=TB; nodesep=0.35; ranksep=0.55;\n")
	b.WriteString("  node [fontname=\"Helvetica\", fontsize=10, style=\"filled\", penwidth=1.4];\n")
	b.WriteString("  edge [fontname=\"Helvetica\", fontsize=9, color=\"#495057\", fontcolor=\"#495057\"];\n")
	for _, n := range g.nodes {
		fmt.Fprintf(b, "  %s [%s];\n", n.id, n.attrs)
	}
	for _, e := range g.edges {
		attrs := "label=" + dotQuote(e.label)
		if e.style != "" {
			attrs += ", " + e.style
		}
		fmt.Fprintf(b, "  %s -> %s [%s];\n", e.from, e.to, attrs)
	}
	b.WriteString("}\n")
}

// dotQuote quotes s as a DOT string: backslashes and quotes escaped, line breaks as \n (the
// only escapes a label then holds are the ones written here).
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
	return `"` + r.Replace(s) + `"`
}

// styled is the attribute list of a node in a palette colour.
func styled(shape, palette string, lines []string, extra string) string {
	c := Palette[palette]
	font := "#212529"
	if palette == "revocation" {
		font = "#ffffff"
	}
	a := fmt.Sprintf("shape=%s, fillcolor=%s, color=%s, fontcolor=%s, label=%s", shape, dotQuote(c[0]), dotQuote(c[1]), dotQuote(font), dotQuote(strings.Join(lines, "\n")))
	if extra != "" {
		a += ", " + extra
	}
	return a
}

// wrap breaks a detail written as "a, b, c" into lines of about width characters.
func wrap(detail string, width int) []string {
	if detail == "" {
		return nil
	}
	var lines []string
	cur := ""
	for _, part := range strings.Split(detail, ", ") {
		switch {
		case cur == "":
			cur = part
		case len(cur)+2+len(part) > width:
			lines = append(lines, cur+",")
			cur = part
		default:
			cur += ", " + part
		}
	}
	return append(lines, cur)
}

func (g *dotGraph) principal(name string) string {
	return g.node("principal\x00"+name, func() string {
		return styled("ellipse", "principal", []string{Escape(name)}, "")
	})
}

func (g *dotGraph) claimNode(c *mql.Claim) string {
	return g.node("claim\x00"+c.Ref, func() string {
		name, detail := nodeCells(&mql.Node{Kind: mql.NodeClaim, Claim: c}, "")
		extra := ""
		if c.State == mql.Live {
			extra = "penwidth=2.2"
		}
		return styled("box", string(c.State), append([]string{name}, wrap(detail, 40)...), extra)
	})
}

func (g *dotGraph) artifactNode(a *mql.Artifact) string {
	return g.node("artifact\x00"+a.Ref, func() string {
		name, detail := nodeCells(&mql.Node{Kind: mql.NodeArtifact, Artifact: a}, "")
		pal, extra := "artifact", ""
		switch {
		case a.Review == mql.NeedsReview:
			pal, extra = string(mql.NeedsReview), "penwidth=3, peripheries=2"
		case a.State == mql.Superseded:
			pal = string(mql.Superseded)
		}
		return styled("box3d", pal, append([]string{name}, wrap(detail, 40)...), extra)
	})
}

// refNode is a claim or artifact known only by its reference (a replacement outside the
// graph, an impact walk's start).
func (g *dotGraph) refNode(ref, state string) string {
	kind := "claim"
	if !strings.Contains(keyOf(ref), ".") {
		kind = "artifact"
	}
	key := kind + "\x00" + ref
	if _, ok := g.ids[key]; ok {
		return g.ids[key]
	}
	defer func() { g.stub[key] = len(g.nodes) - 1 }()
	return g.node(key, func() string {
		pal, lines := state, []string{Escape(ref)}
		if state == "" {
			pal = "principal"
		} else {
			lines = append(lines, state)
		}
		shape := "box"
		if kind == "artifact" {
			shape = "box3d"
		}
		return styled(shape, pal, lines, "")
	})
}

// why adds n and everything under it, and returns n's id.
func (g *dotGraph) why(n *mql.Node) string {
	var id string
	switch {
	case n.Claim != nil:
		id = g.claimNode(n.Claim)
		g.edge(id, g.principal(n.Claim.By), string(n.Claim.Kind)+" by", "style=dashed")
	case n.Artifact != nil:
		id = g.artifactNode(n.Artifact)
		g.edge(id, g.principal(n.Artifact.By), "derived by", "style=dashed")
	case n.Source != nil:
		id = g.node("source\x00"+n.Source.ID, func() string {
			return styled("note", "source", append([]string{Escape(n.Source.ID)}, wrap(sourceDetail(n.Source), 40)...), "")
		})
	case n.Grant != nil:
		id = g.node("grant\x00"+n.Grant.ID, func() string {
			_, detail := nodeCells(n, "")
			return styled("hexagon", "grant", append([]string{"grant " + Escape(n.Grant.ID)}, wrap(detail, 36)...), "")
		})
	case n.Revocation != nil:
		rv := n.Revocation
		id = g.node("revocation\x00"+rv.Claim, func() string {
			_, detail := nodeCells(n, "")
			return styled("octagon", "revocation", append([]string{"revoked"}, wrap(detail, 36)...), "")
		})
		g.edge(id, g.principal(rv.By), "revoked by", "style=dashed")
		if rv.ReplacedBy != "" {
			g.edge(id, g.refNode(rv.ReplacedBy, ""), "replaced by", "")
		}
	default: // a confirmation, a review, a standing without a grant
		name, detail := nodeCells(n, "")
		id = g.node(fmt.Sprintf("event\x00%d", len(g.nodes)), func() string {
			return styled("box", "event", append([]string{string(n.Kind) + " " + name}, wrap(detail, 36)...), "style=\"filled,rounded\"")
		})
		switch {
		case n.Review != nil:
			g.edge(id, g.principal(n.Review.By), "reviewed by", "style=dashed")
		case n.Kind == mql.NodeConfirmation:
			g.edge(id, g.principal(n.By), "confirmed by", "style=dashed")
		}
	}
	for _, c := range n.Children {
		cid := g.why(c)
		style := ""
		if c.Relation == "supersedes" || c.Relation == "contests" {
			style = "style=bold"
		}
		g.edge(id, cid, c.Relation, style)
	}
	return id
}

// impact draws the changed nodes, every dependent and the paths between them (input →
// artifact), dependents that need review outlined twice in red.
func (g *dotGraph) impact(im *mql.ImpactResult) {
	changes := map[string]mql.Change{}
	for _, ch := range im.Changes {
		changes[ch.Ref] = ch
	}
	for _, of := range im.Of {
		ch := changes[of]
		id := g.refNode(of, string(ch.State))
		if ch.ReplacedBy != "" {
			g.edge(id, g.refNode(ch.ReplacedBy, ""), "replaced by", "style=dashed")
		}
	}
	arts := map[string]*mql.Artifact{}
	for i := range im.Dependents {
		arts[im.Dependents[i].Artifact.Ref] = &im.Dependents[i].Artifact
	}
	nodeOf := func(ref string) string {
		if a, ok := arts[ref]; ok {
			return g.artifactNode(a)
		}
		return g.refNode(ref, string(changes[ref].State))
	}
	for _, d := range im.Dependents {
		for i := 1; i < len(d.Path); i++ {
			g.edge(nodeOf(d.Path[i-1]), nodeOf(d.Path[i]), "input of", "")
		}
		if len(d.Path) < 2 {
			nodeOf(d.Artifact.Ref)
		}
	}
	if im.Truncated {
		g.title += " (depth limit reached)"
	}
}
