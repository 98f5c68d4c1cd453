package mql_test

// The model the authority and visibility property test (property_test.go) checks mql against:
// written here, independently of the implementation, from docs/MODEL.md's rules.

import (
	"slices"
	"strconv"
	"strings"

	"github.com/mql-dev/mql"
)

// ---- the model -------------------------------------------------------------------------------

type pmClaim struct {
	ref       string
	key       string
	ver       int
	by        string
	kind      mql.Kind
	value     string
	source    string
	seenBy    []string
	aud       string
	state     mql.State
	confirmed bool
}

type pmArtifact struct {
	ref    string
	name   string
	ver    int
	seenBy []string
	aud    string
	state  mql.State // live, or superseded by a later version of its audience
}

type pmGrant struct {
	grantee string
	right   mql.Right
	scope   string
	by      string
}

type pmModel struct {
	owner      string
	strict     bool
	principals map[string]mql.PrincipalType
	order      []string
	grants     []pmGrant
	claims     map[string]*pmClaim // by ref
	keys       map[string][]*pmClaim
	arts       map[string][]*pmArtifact
	values     map[string][]*pmClaim // value string -> claims holding it
	sources    map[string]*pmClaim
}

func newModel(strict bool) *pmModel {
	return &pmModel{owner: "owner", strict: strict, principals: map[string]mql.PrincipalType{"owner": mql.User},
		order: []string{"owner"}, claims: map[string]*pmClaim{}, keys: map[string][]*pmClaim{},
		arts: map[string][]*pmArtifact{}, values: map[string][]*pmClaim{}, sources: map[string]*pmClaim{}}
}

func pmCanSee(p string, seenBy []string, owner string) bool {
	return p == owner || len(seenBy) == 0 || slices.Contains(seenBy, p)
}

func (m *pmModel) sees(p string, seenBy []string) bool { return pmCanSee(p, seenBy, m.owner) }

// writesFor reports whether p may write something seen by seenBy: only into an audience it is
// in, unless it is the owner.
func (m *pmModel) writesFor(p string, seenBy []string) bool {
	return len(seenBy) == 0 || p == m.owner || slices.Contains(seenBy, p)
}

func pmAudience(seenBy []string) string {
	s := slices.Clone(seenBy)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), ",")
}

// pmCoversScope is the scope rule of docs/MODEL.md, written again: a grant over scope covers
// target, a key "S.p" or a scope.
func pmCoversScope(scope, target string) bool {
	if scope == "*" || scope == target {
		return true
	}
	if target == "*" {
		return false
	}
	ts, tp, tdot := strings.Cut(target, ".")
	switch {
	case !strings.Contains(scope, "."):
		return tdot && tp == scope
	case strings.HasSuffix(scope, ".*"):
		return tdot && ts == strings.TrimSuffix(scope, ".*")
	}
	return false
}

func (m *pmModel) holds(p string, right mql.Right, target string) bool {
	if p == m.owner {
		return true
	}
	for _, g := range m.grants {
		if g.grantee == p && g.right == right && pmCoversScope(g.scope, target) {
			return true
		}
	}
	return false
}

func pmRank(k mql.Kind) int {
	switch k {
	case mql.Confirmed:
		return 3
	case mql.Observed:
		return 2
	}
	return 1
}

func (c *pmClaim) effKind() mql.Kind {
	if c.confirmed {
		return mql.Confirmed
	}
	return c.kind
}

// live is the live claim of key in audience aud, or nil.
func (m *pmModel) live(key, aud string) *pmClaim {
	for _, c := range m.keys[key] {
		if c.aud == aud && c.state == mql.Live {
			return c
		}
	}
	return nil
}

func (m *pmModel) visibleClaim(p, ref string) *pmClaim {
	c := m.claims[ref]
	if c == nil || !m.sees(p, c.seenBy) {
		return nil
	}
	return c
}

func (m *pmModel) visibleArtifact(p, ref string) *pmArtifact {
	name, ver, _ := strings.Cut(ref, "@")
	n, _ := strconv.Atoi(ver)
	as := m.arts[name]
	if n < 1 || n > len(as) || !m.sees(p, as[n-1].seenBy) {
		return nil
	}
	return as[n-1]
}
