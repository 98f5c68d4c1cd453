package mql

import (
	"slices"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/provenance"
)

// claimOf renders a claim as v's reader sees it. References to claims the reader may not see
// are left out.
func claimOf(v *index.View, e *index.ClaimEntry) Claim {
	st, since := v.State(e)
	c := Claim{
		Ref:        e.ID.String(),
		Subject:    e.ID.Subject,
		Predicate:  e.ID.Predicate,
		Version:    e.ID.Version,
		Value:      e.Value,
		ValueType:  e.Value.Type,
		State:      st,
		Since:      since,
		Kind:       v.EffectiveKind(e),
		Confidence: e.Confidence,
		Effective:  v.EffectiveConfidence(e),
		By:         e.By,
		Tx:         int64(e.Tx),
		RecordedAt: v.ClaimTime(e),
		ValidFrom:  e.ValidFrom,
		ValidUntil: e.ValidUntil,
		SeenBy:     slices.Clone(e.SeenBy),
		Grant:      e.Grant,
		Sources:    make([]Source, 0, len(e.Sources)),
	}
	for i, id := range e.Sources {
		src := sourceOf(v, id)
		if i < len(e.Excerpts) && e.Excerpts[i] != "" {
			src.Excerpt = e.Excerpts[i]
		}
		c.Sources = append(c.Sources, src)
	}
	c.Supersedes = visibleRef(v, e.Supersedes)
	c.Contests = visibleRef(v, e.Contests)
	c.Corroborates = visibleRef(v, e.Corroborates)
	if n := v.SupersededBy(e); n != nil {
		c.SupersededBy = n.ID.String()
	}
	return c
}

func visibleRef(v *index.View, id *record.ClaimID) string {
	if id == nil || v.Claim(*id) == nil {
		return ""
	}
	return id.String()
}

// sourceOf renders the source a claim cites by key: its audience's record, under the id the
// writer gave it, with the excerpt recorded with the source by an earlier mql (which a
// citation's own excerpt replaces).
func sourceOf(v *index.View, key string) Source {
	s := v.Source(key)
	if s == nil {
		return Source{ID: record.SourceName(key)}
	}
	return Source{ID: record.SourceName(s.ID), Excerpt: s.Excerpt, URI: s.URI, Revision: s.Revision}
}

func artifactOf(v *index.View, pc *provenance.Cache, a *index.ArtifactNode) Artifact {
	out := Artifact{
		Ref:         a.Ref(),
		Name:        a.ID.Name,
		Version:     a.ID.Version,
		State:       Live,
		By:          a.By,
		Confidence:  a.Confidence,
		Effective:   pc.Confidence(a),
		Tx:          int64(a.Tx),
		RecordedAt:  v.ArtifactTime(a),
		SeenBy:      slices.Clone(a.SeenBy),
		DerivedFrom: make([]string, 0, len(a.DerivedFrom)),
	}
	for i := range a.DerivedFrom {
		if an, e := v.Input(a, i); an != nil || e != nil {
			out.DerivedFrom = append(out.DerivedFrom, a.InputRef(i))
		}
	}
	if v.SeesRunsOf(a.By) {
		out.Run = a.Run // a run is its principal's (and the owner's) to see, as in export
	}
	if v.ArtifactSupersededBy(a) != nil {
		out.State = Superseded
	}
	rs := pc.ReviewState(a)
	switch {
	case out.State == Superseded:
		out.Review = ReviewStale
	case rs.Needs:
		out.Review = NeedsReview
	default:
		out.Review = ReviewOK
	}
	for _, s := range rs.Stale {
		if nodeVisible(v, s) {
			out.Stale = append(out.Stale, s.String())
		}
	}
	if rs.Last != nil {
		r := reviewOf(v, rs.Last)
		out.LastReview = &r
	}
	return out
}

func reviewOf(v *index.View, r *record.Review) Review {
	return Review{Artifact: r.Artifact.String(), By: r.By, Because: r.Because, Tx: int64(r.Tx), At: v.TxTime(r.Tx)}
}

func nodeVisible(v *index.View, n record.NodeRef) bool {
	if n.Claim != nil {
		return v.Claim(*n.Claim) != nil
	}
	return n.Artifact != nil && v.Artifact(*n.Artifact) != nil
}

func revocationOf(v *index.View, r *record.Revocation) Revocation {
	out := Revocation{Claim: r.Claim.String(), By: r.By, At: v.TxTime(r.Tx), Tx: int64(r.Tx), Because: r.Because, Standing: r.Standing, StandingGrant: standingGrant(v, r.Standing)}
	out.ReplacedBy = visibleRef(v, r.ReplacedBy)
	return out
}

func grantOf(v *index.View, id string) *Grant {
	if g := v.Grant(id); g != nil {
		gi := grantInfo(v, g)
		return &gi
	}
	return nil
}

// standingGrant is the grant a recorded standing names, or nil for "owner", "own claim" and
// the like.
func standingGrant(v *index.View, standing string) *Grant {
	if len(standing) < 2 || standing[0] != 'g' || standing[1] < '0' || standing[1] > '9' {
		return nil
	}
	return grantOf(v, standing)
}
