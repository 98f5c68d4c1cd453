package output

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// Rendering of the catalogue reads (principals, grants, subjects, predicates, artifacts,
// sources, describe) and of the end of a transaction (commit, rollback).

// isCatalog reports whether r is a result this file renders.
func isCatalog(r *query.Result) bool {
	switch r.Kind {
	case "principals", "grants", "subjects", "predicates", "artifacts", "sources", "describe", "commit", "rollback":
		return true
	}
	return false
}

// rightsText is a principal's rights for a person: "every right (owner)", or each grant as
// "revoke on price_per_seat (g6.1, by owner)", joined with "; ".
func rightsText(p mql.PrincipalInfo) string {
	if p.Owner {
		return "every right (owner)"
	}
	if len(p.Rights) == 0 {
		return "-"
	}
	parts := make([]string, len(p.Rights))
	for i, g := range p.Rights {
		parts[i] = fmt.Sprintf("%s on %s (%s, by %s)", Escape(string(g.Right)), Escape(g.Scope), Escape(g.ID), Escape(g.By))
	}
	return strings.Join(parts, "; ")
}

// grantWords is a grant in words: "g6.1: revoke on price_per_seat, by owner".
func grantWords(g *mql.Grant) string {
	return fmt.Sprintf("%s: %s on %s, by %s", Escape(g.ID), Escape(string(g.Right)), Escape(g.Scope), Escape(g.By))
}

// standingText is a recorded standing for a person: the grant in words when it is one.
func standingText(standing string, g *mql.Grant) string {
	if g != nil {
		return grantWords(g)
	}
	return Escape(standing)
}

func halfLifeText(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return query.FormatDuration(d)
}

func valueTypeText(t mql.ValueType) string {
	if t == "" {
		return "-"
	}
	return string(t)
}

func seenByText(s []string) string {
	if len(s) == 0 {
		return "everyone"
	}
	return escapeJoin(s, ", ")
}

// writeCatalogTable renders r for a person.
func writeCatalogTable(b *strings.Builder, r *query.Result, ex bool) {
	switch r.Kind {
	case "principals":
		g := &grid{header: []string{"name", "type", "rights"}}
		for _, p := range r.Principals {
			g.add(Escape(p.Name), string(p.Type), rightsText(p))
		}
		g.render(b, ex)
	case "grants":
		g := &grid{header: []string{"grant", "grantee", "right", "scope", "by", "tx"}}
		for _, x := range r.Grants {
			g.add(Escape(x.ID), Escape(x.Grantee), Escape(string(x.Right)), Escape(x.Scope), Escape(x.By), strconv.FormatInt(x.Tx, 10))
		}
		g.render(b, ex)
	case "subjects":
		g := &grid{header: []string{"subject", "keys", "live", "claims"}}
		for _, s := range r.Subjects {
			g.add(Escape(s.Subject), strconv.Itoa(s.Keys), strconv.Itoa(s.Live), strconv.Itoa(s.Claims))
		}
		g.render(b, ex)
	case "predicates":
		g := &grid{header: []string{"predicate", "type", "half-life", "subjects", "live", "claims"}}
		for _, p := range r.Predicates {
			g.add(Escape(p.Predicate), valueTypeText(p.ValueType), halfLifeText(p.HalfLife), strconv.Itoa(p.Subjects), strconv.Itoa(p.Live), strconv.Itoa(p.Claims))
		}
		g.render(b, ex)
	case "artifacts":
		g := &grid{header: []string{"artifact", "versions", "latest", "state", "review", "derived by"}}
		for _, a := range r.Artifacts {
			g.add(Escape(a.Name), strconv.Itoa(a.Versions), Escape(a.Latest.Ref), string(a.Latest.State), string(a.Latest.Review), Escape(a.Latest.By))
		}
		g.render(b, ex)
	case "sources":
		g := &grid{header: []string{"source", "claims", "excerpt", "uri", "revision", "seen by"}}
		for _, s := range r.Sources {
			excerpt := ""
			if s.Excerpt != "" {
				excerpt = strconv.Quote(s.Excerpt)
			}
			g.add(Escape(s.ID), strconv.Itoa(s.Claims), excerpt, Escape(s.URI), Escape(s.Revision), seenByText(s.SeenBy))
		}
		g.render(b, ex)
	case "describe":
		writeDescribe(b, r.Describe, ex)
	case "commit":
		c := r.Control
		if c.Tx == 0 {
			fmt.Fprintf(b, "commit  nothing to write  (%s)\n", statements(c.Statements))
			return
		}
		fmt.Fprintf(b, "commit  committed  (tx %d, %s)\n", c.Tx, statements(c.Statements))
	case "rollback":
		fmt.Fprintf(b, "rollback  discarded  (%s, nothing written)\n", statements(r.Control.Statements))
	}
}

func statements(n int) string { return plural(n, "statement") }

// plural is "1 key", "2 keys".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// writeDescribe writes each thing a name is, one section after another.
func writeDescribe(b *strings.Builder, d *mql.Description, ex bool) {
	sep := func() {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
	}
	if p := d.Principal; p != nil {
		sep()
		fmt.Fprintf(b, "principal %s  %s, recorded in tx %d\n", Escape(p.Name), p.Type, p.Tx)
		if p.Owner {
			b.WriteString("rights: every right (owner)\n")
		} else if len(p.Rights) == 0 {
			b.WriteString("rights: none\n")
		} else {
			for _, g := range p.Rights {
				b.WriteString("right " + grantWords(&g) + "\n")
			}
		}
	}
	if s := d.Subject; s != nil {
		sep()
		fmt.Fprintf(b, "subject %s  %s, %s, %s in all\n", Escape(s.Subject), plural(s.Keys, "key"), plural(s.Live, "live claim"), plural(s.Claims, "claim"))
		claimGrid(d.Live).render(b, ex)
	}
	if p := d.Predicate; p != nil {
		sep()
		decay := "no decay"
		if p.HalfLife > 0 {
			decay = "half-life " + halfLifeText(p.HalfLife)
		}
		fmt.Fprintf(b, "predicate %s  %s values, %s, %s, %s, %s in all\n",
			Escape(p.Predicate), valueTypeText(p.ValueType), decay, plural(p.Subjects, "subject"), plural(p.Live, "live claim"), plural(p.Claims, "claim"))
	}
	if a := d.Artifact; a != nil {
		sep()
		fmt.Fprintf(b, "artifact %s  %s, the newest %s\n", Escape(a.Name), plural(a.Versions, "version"), Escape(a.Latest.Ref))
		artifactGrid(d.Versions).render(b, ex)
	}
}

// catalogJSON is the object of a catalogue result.
func catalogJSON(out *resultJSON, r *query.Result) {
	switch r.Kind {
	case "principals":
		for _, p := range r.Principals {
			out.Rows = append(out.Rows, principalOut(p))
		}
	case "grants":
		for _, g := range r.Grants {
			out.Rows = append(out.Rows, grantOut(g))
		}
	case "subjects":
		for _, s := range r.Subjects {
			out.Rows = append(out.Rows, s)
		}
	case "predicates":
		for _, p := range r.Predicates {
			out.Rows = append(out.Rows, predicateOut(p))
		}
	case "artifacts":
		for _, a := range r.Artifacts {
			out.Rows = append(out.Rows, artifactInfoJSON{Name: a.Name, Versions: a.Versions, Latest: artifactOut(a.Latest)})
		}
	case "sources":
		for _, s := range r.Sources {
			out.Rows = append(out.Rows, s)
		}
	case "describe":
		d := r.Describe
		dj := describeJSON{Name: d.Name, Subject: d.Subject}
		if d.Principal != nil {
			p := principalOut(*d.Principal)
			dj.Principal = &p
		}
		if d.Subject != nil {
			dj.Live = claimsOut(d.Live)
		}
		if d.Predicate != nil {
			p := predicateOut(*d.Predicate)
			dj.Predicate = &p
		}
		if d.Artifact != nil {
			dj.Artifact = &artifactInfoJSON{Name: d.Artifact.Name, Versions: d.Artifact.Versions, Latest: artifactOut(d.Artifact.Latest)}
			for _, a := range d.Versions {
				dj.Versions = append(dj.Versions, artifactOut(a))
			}
		}
		out.Rows = append(out.Rows, dj)
	case "commit", "rollback":
		c := r.Control
		out.Rows = append(out.Rows, controlJSON{Statements: c.Statements, Tx: c.Tx, At: stamp(c.At)})
	}
}

type principalJSON struct {
	mql.PrincipalInfo
	RecordedAt stamp       `json:"recorded_at"`
	Rights     []grantJSON `json:"rights"`
}

func principalOut(p mql.PrincipalInfo) principalJSON {
	out := principalJSON{PrincipalInfo: p, RecordedAt: stamp(p.RecordedAt), Rights: []grantJSON{}}
	for _, g := range p.Rights {
		out.Rights = append(out.Rights, grantOut(g))
	}
	return out
}

type predicateJSON struct {
	mql.PredicateInfo
	ValueType string `json:"value_type,omitempty"`
	HalfLife  string `json:"half_life,omitempty"` // as the language writes it: "14d"
}

func predicateOut(p mql.PredicateInfo) predicateJSON {
	out := predicateJSON{PredicateInfo: p, ValueType: string(p.ValueType)}
	if p.HalfLife > 0 {
		out.HalfLife = query.FormatDuration(p.HalfLife)
	}
	return out
}

type artifactInfoJSON struct {
	Name     string       `json:"name"`
	Versions int          `json:"versions"`
	Latest   artifactJSON `json:"latest"`
}

type describeJSON struct {
	Name      string            `json:"name"`
	Principal *principalJSON    `json:"principal,omitempty"`
	Subject   *mql.SubjectInfo  `json:"subject,omitempty"`
	Live      []any             `json:"live,omitempty"`
	Predicate *predicateJSON    `json:"predicate,omitempty"`
	Artifact  *artifactInfoJSON `json:"artifact,omitempty"`
	Versions  []artifactJSON    `json:"versions,omitempty"`
}

type controlJSON struct {
	Statements int   `json:"statements"`
	Tx         int64 `json:"tx,omitempty"`
	At         stamp `json:"at,omitzero"`
}

// catalogCSV returns the header and rows of a catalogue result.
func catalogCSV(r *query.Result) (header []string, rows [][]string) {
	switch r.Kind {
	case "principals":
		header = []string{"name", "type", "owner", "rights", "tx", "recorded_at"}
		for _, p := range r.Principals {
			var rights []string
			for _, g := range p.Rights {
				rights = append(rights, fmt.Sprintf("%s %s on %s by %s", g.ID, g.Right, g.Scope, g.By))
			}
			rows = append(rows, []string{p.Name, string(p.Type), strconv.FormatBool(p.Owner), strings.Join(rights, csvListSep), csvInt(p.Tx), fmtTime(p.RecordedAt)})
		}
	case "grants":
		header = []string{"grant", "grantee", "right", "scope", "by", "tx", "at"}
		for _, g := range r.Grants {
			rows = append(rows, []string{g.ID, g.Grantee, string(g.Right), g.Scope, g.By, csvInt(g.Tx), fmtTime(g.At)})
		}
	case "subjects":
		header = []string{"subject", "keys", "live", "claims"}
		for _, s := range r.Subjects {
			rows = append(rows, []string{s.Subject, strconv.Itoa(s.Keys), strconv.Itoa(s.Live), strconv.Itoa(s.Claims)})
		}
	case "predicates":
		header = []string{"predicate", "value_type", "half_life", "subjects", "live", "claims"}
		for _, p := range r.Predicates {
			hl := ""
			if p.HalfLife > 0 {
				hl = query.FormatDuration(p.HalfLife)
			}
			rows = append(rows, []string{p.Predicate, string(p.ValueType), hl, strconv.Itoa(p.Subjects), strconv.Itoa(p.Live), strconv.Itoa(p.Claims)})
		}
	case "artifacts":
		header = []string{"artifact", "versions", "latest", "state", "review", "derived_by", "recorded_at"}
		for _, a := range r.Artifacts {
			l := a.Latest
			rows = append(rows, []string{a.Name, strconv.Itoa(a.Versions), l.Ref, string(l.State), string(l.Review), l.By, fmtTime(l.RecordedAt)})
		}
	case "sources":
		header = []string{"source", "claims", "excerpt", "uri", "revision", "seen_by"}
		for _, s := range r.Sources {
			rows = append(rows, []string{s.ID, strconv.Itoa(s.Claims), s.Excerpt, s.URI, s.Revision, strings.Join(s.SeenBy, csvListSep)})
		}
	case "describe":
		// One field per row: what the name is, which field, its value.
		d := r.Describe
		header = []string{"name", "as", "field", "value"}
		add := func(as, field, value string) { rows = append(rows, []string{d.Name, as, field, value}) }
		if p := d.Principal; p != nil {
			add("principal", "type", string(p.Type))
			add("principal", "owner", strconv.FormatBool(p.Owner))
			for _, g := range p.Rights {
				add("principal", "right", fmt.Sprintf("%s %s on %s by %s", g.ID, g.Right, g.Scope, g.By))
			}
		}
		if s := d.Subject; s != nil {
			add("subject", "keys", strconv.Itoa(s.Keys))
			add("subject", "live", strconv.Itoa(s.Live))
			add("subject", "claims", strconv.Itoa(s.Claims))
			for _, c := range d.Live {
				add("subject", c.Predicate, c.Ref+" = "+rawValue(c.Value))
			}
		}
		if p := d.Predicate; p != nil {
			add("predicate", "value_type", string(p.ValueType))
			if p.HalfLife > 0 {
				add("predicate", "half_life", query.FormatDuration(p.HalfLife))
			}
			add("predicate", "subjects", strconv.Itoa(p.Subjects))
			add("predicate", "live", strconv.Itoa(p.Live))
			add("predicate", "claims", strconv.Itoa(p.Claims))
		}
		if a := d.Artifact; a != nil {
			add("artifact", "versions", strconv.Itoa(a.Versions))
			for _, v := range d.Versions {
				add("artifact", "version", v.Ref+" "+string(v.State)+", review "+string(v.Review))
			}
		}
	case "commit":
		c := r.Control
		header = []string{"kind", "statements", "tx", "at"}
		tx := ""
		if c.Tx != 0 {
			tx = csvInt(c.Tx)
		}
		rows = [][]string{{"commit", strconv.Itoa(c.Statements), tx, fmtTime(c.At)}}
	case "rollback":
		header = []string{"kind", "statements", "tx", "at"}
		rows = [][]string{{"rollback", strconv.Itoa(r.Control.Statements), "", ""}}
	}
	return header, rows
}
