package mql

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/provenance"
)

// The catalogue: what a store holds, as a reader may see it. Principals and grants are the
// store's authority, which every principal may read (it binds them all); subjects, predicates,
// artifacts and sources are listed, and counted, from what the reader may see only.

// PrincipalInfo is a principal and the rights it holds.
type PrincipalInfo struct {
	Name       string        `json:"name"`
	Type       PrincipalType `json:"type"`
	Owner      bool          `json:"owner,omitempty"` // the store's owner, who holds every right
	Tx         int64         `json:"tx"`
	RecordedAt time.Time     `json:"recorded_at"`
	Rights     []Grant       `json:"rights"` // the grants it holds, oldest first
}

// SubjectInfo is a subject and how many of its claims the reader may see.
type SubjectInfo struct {
	Subject string `json:"subject"`
	Keys    int    `json:"keys"`   // subject.predicate keys with a visible version
	Live    int    `json:"live"`   // live claims
	Claims  int    `json:"claims"` // versions, in every state
}

// PredicateInfo is a predicate, the type its values have, its half-life and how many of its
// claims the reader may see.
type PredicateInfo struct {
	Predicate string `json:"predicate"`
	// ValueType is the type of the first of its claims the reader may see: the type the
	// reader's own claims of it must have.
	ValueType ValueType     `json:"value_type"`
	HalfLife  time.Duration `json:"half_life,omitempty"` // 0: no decay
	Subjects  int           `json:"subjects"`            // subjects with a visible claim of it
	Live      int           `json:"live"`
	Claims    int           `json:"claims"`
}

// ArtifactInfo is an artifact name, its number of versions and its newest version the reader
// may see.
type ArtifactInfo struct {
	Name     string   `json:"name"`
	Versions int      `json:"versions"`
	Latest   Artifact `json:"latest"`
}

// SourceInfo is a source as the claims the reader may see cite it. Its Excerpt is the one an
// earlier mql recorded with the source, else the first that a claim the reader may see quotes
// from it (each claim's own is in its Sources).
type SourceInfo struct {
	Source
	SeenBy []string `json:"seen_by,omitempty"` // the audience whose record of the source it is, when restricted
	Claims int      `json:"claims"`            // visible claim versions citing it
}

// Description is what a name is in the store: any of a principal, a subject, a predicate and
// an artifact (a name may be several), with what it holds.
type Description struct {
	Name      string         `json:"name"`
	Principal *PrincipalInfo `json:"principal,omitempty"`
	Subject   *SubjectInfo   `json:"subject,omitempty"`
	Live      []Claim        `json:"live,omitempty"` // the subject's live claims
	Predicate *PredicateInfo `json:"predicate,omitempty"`
	Artifact  *ArtifactInfo  `json:"artifact,omitempty"`
	Versions  []Artifact     `json:"versions,omitempty"` // the artifact's versions, oldest first
}

// MatchName reports whether name matches pattern, in which "*" stands for any run of
// characters (none included); "" matches every name.
func MatchName(pattern, name string) bool {
	pattern = nfc(pattern)
	if pattern == "" {
		return true
	}
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return name == pattern
	}
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(name, p)
		if i < 0 {
			return false
		}
		name = name[i+len(p):]
	}
	return strings.HasSuffix(name, last)
}

// Principals lists the principals whose names match pattern ("" for all), in the order they
// were recorded, with the rights each holds.
func (r reads) Principals(ctx context.Context, pattern string) ([]PrincipalInfo, error) {
	out := []PrincipalInfo{}
	err := r.view(ctx, func(v *index.View) error {
		for _, p := range v.Principals() {
			if MatchName(pattern, p.Name) {
				out = append(out, principalInfo(v, p))
			}
		}
		return nil
	})
	return out, err
}

func principalInfo(v *index.View, p *record.Principal) PrincipalInfo {
	pi := PrincipalInfo{Name: p.Name, Type: p.Type, Owner: p.Name == v.Meta().Owner, Tx: int64(p.Tx), RecordedAt: v.TxTime(p.Tx), Rights: []Grant{}}
	for _, g := range v.Grants(p.Name) {
		pi.Rights = append(pi.Rights, grantInfo(v, g))
	}
	return pi
}

func grantInfo(v *index.View, g *record.Grant) Grant {
	return Grant{ID: g.ID, Grantee: g.Grantee, Right: g.Right, Scope: g.Scope, By: g.By, Tx: int64(g.Tx), At: v.TxTime(g.Tx)}
}

// Grants lists the grants given, oldest first, or only those grantee holds ("" for all).
func (r reads) Grants(ctx context.Context, grantee string) ([]Grant, error) {
	out := []Grant{}
	grantee = nfc(grantee)
	err := r.view(ctx, func(v *index.View) error {
		if grantee != "" {
			if v.Principal(grantee) == nil {
				return unknownPrincipal(grantee)
			}
			for _, g := range v.Grants(grantee) {
				out = append(out, grantInfo(v, g))
			}
			return nil
		}
		for _, p := range v.Principals() {
			for _, g := range v.Grants(p.Name) {
				out = append(out, grantInfo(v, g))
			}
		}
		slices.SortStableFunc(out, func(a, b Grant) int { return int(a.Tx - b.Tx) })
		return nil
	})
	return out, err
}

// Subjects lists the subjects matching pattern ("" for all) with a claim the reader may see,
// in the order of the first such claim.
func (r reads) Subjects(ctx context.Context, pattern string) ([]SubjectInfo, error) {
	out := []SubjectInfo{}
	err := r.view(ctx, func(v *index.View) error {
		for _, s := range v.Subjects() {
			if MatchName(pattern, s) {
				out = append(out, subjectInfo(v, s))
			}
		}
		return nil
	})
	return out, err
}

func subjectInfo(v *index.View, s string) SubjectInfo {
	si := SubjectInfo{Subject: s}
	for _, k := range v.KeysOfSubject(s) {
		si.Keys++
		si.Claims += len(v.Versions(k))
		si.Live += len(v.LiveClaims(k))
	}
	return si
}

// Predicates lists the predicates matching pattern ("" for all) with a claim the reader may
// see, in the order of the first such claim, each with its value type, half-life and counts.
func (r reads) Predicates(ctx context.Context, pattern string) ([]PredicateInfo, error) {
	out := []PredicateInfo{}
	err := r.view(ctx, func(v *index.View) error {
		for _, p := range predicatesOf(v) {
			if MatchName(pattern, p) {
				out = append(out, predicateInfo(v, p))
			}
		}
		return nil
	})
	return out, err
}

// predicatesOf lists the predicates with a visible claim, in the order of the first of them.
func predicatesOf(v *index.View) []string {
	var out []string
	seen := map[string]bool{}
	for _, k := range v.Keys() {
		if !seen[k.Predicate] {
			seen[k.Predicate] = true
			out = append(out, k.Predicate)
		}
	}
	return out
}

func predicateInfo(v *index.View, p string) PredicateInfo {
	pi := PredicateInfo{Predicate: p, HalfLife: v.HalfLife(p)}
	pi.ValueType, _ = v.ValueType(p)
	for _, k := range v.KeysOfPredicate(p) {
		pi.Subjects++
		pi.Claims += len(v.Versions(k))
		pi.Live += len(v.LiveClaims(k))
	}
	return pi
}

// Artifacts lists the artifacts matching pattern ("" for all) with a version the reader may
// see, in the order of the first such version, each with its newest visible version.
func (r reads) Artifacts(ctx context.Context, pattern string) ([]ArtifactInfo, error) {
	out := []ArtifactInfo{}
	err := r.view(ctx, func(v *index.View) error {
		pc := provenance.NewCache(v)
		for _, name := range v.ArtifactNames() {
			if MatchName(pattern, name) {
				out = append(out, artifactInfo(v, pc, name))
			}
		}
		return nil
	})
	return out, err
}

func artifactInfo(v *index.View, pc *provenance.Cache, name string) ArtifactInfo {
	vs := v.ArtifactVersions(name)
	return ArtifactInfo{Name: name, Versions: len(vs), Latest: artifactOf(v, pc, vs[len(vs)-1])}
}

// Sources lists the sources whose ids match pattern ("" for all) that claims the reader may see
// cite, in the order of the first such claim; each audience's record of an id is listed apart.
func (r reads) Sources(ctx context.Context, pattern string) ([]SourceInfo, error) {
	out := []SourceInfo{}
	err := r.view(ctx, func(v *index.View) error {
		at := map[string]int{} // source key → index in out
		for _, k := range v.Keys() {
			for _, e := range v.Versions(k) {
				for j, key := range e.Sources {
					quote := ""
					if j < len(e.Excerpts) {
						quote = e.Excerpts[j]
					}
					if i, ok := at[key]; ok {
						out[i].Claims++
						if out[i].Excerpt == "" {
							out[i].Excerpt = quote
						}
						continue
					}
					if !MatchName(pattern, record.SourceName(key)) {
						continue
					}
					s := v.Source(key)
					if s == nil {
						continue
					}
					si := SourceInfo{Source: Source{ID: record.SourceName(key), Excerpt: s.Excerpt, URI: s.URI, Revision: s.Revision}, Claims: 1}
					if si.Excerpt == "" {
						si.Excerpt = quote
					}
					if len(e.SeenBy) > 0 {
						si.SeenBy = strings.Split(e.Audience(), ",")
					}
					at[key] = len(out)
					out = append(out, si)
				}
			}
		}
		return nil
	})
	return out, err
}

// Describe says what name is in the store as the reader sees it — a principal (with its
// rights), a subject (with its live claims), a predicate (with its type, half-life and
// counts), an artifact (with its versions), or several of these — and fails with ErrNotFound
// when it is none.
func (r reads) Describe(ctx context.Context, name string) (Description, error) {
	name = nfc(name)
	d := Description{Name: name}
	if err := checkName("name", name); err != nil {
		return d, err
	}
	err := r.view(ctx, func(v *index.View) error {
		if p := v.Principal(name); p != nil {
			pi := principalInfo(v, p)
			d.Principal = &pi
		}
		if len(v.KeysOfSubject(name)) > 0 {
			si := subjectInfo(v, name)
			d.Subject = &si
			d.Live = []Claim{}
			for _, k := range v.KeysOfSubject(name) {
				for _, e := range v.LiveClaims(k) {
					d.Live = append(d.Live, claimOf(v, e))
				}
			}
		}
		if len(v.KeysOfPredicate(name)) > 0 {
			pi := predicateInfo(v, name)
			d.Predicate = &pi
		}
		if vs := v.ArtifactVersions(name); len(vs) > 0 {
			pc := provenance.NewCache(v)
			ai := artifactInfo(v, pc, name)
			d.Artifact = &ai
			for _, a := range vs {
				d.Versions = append(d.Versions, artifactOf(v, pc, a))
			}
		}
		if d.Principal == nil && d.Subject == nil && d.Predicate == nil && d.Artifact == nil {
			return fmt.Errorf("%s: %w: no principal, subject, predicate or artifact of that name; `subjects`, `predicates`, `artifacts` and `principals` list them", name, ErrNotFound)
		}
		return nil
	})
	return d, err
}
