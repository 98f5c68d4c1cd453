package provenance

import (
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// Flag is an artifact version that a transaction made need review, and the nodes that
// transaction changed among its stale inputs.
type Flag struct {
	Artifact *index.ArtifactNode
	Because  []record.NodeRef
}

// Flagged lists the artifact versions that transaction tx made need review: those that
// depend on the nodes changed in tx (that stopped being live in it), need review as of v (the
// view at tx, whose Cache pc is) and did not as of prev (the view just before tx; nil before
// the first), other than those derived in tx itself (a new version is reported as derived,
// not as flagged). limit bounds the dependents walked (0: unbounded).
func Flagged(v, prev *index.View, tx record.TxID, changed []record.NodeRef, pc *Cache, limit int) []Flag {
	if len(changed) == 0 {
		return nil
	}
	reached, _ := Impact(v, changed, 0, limit)
	if len(reached) == 0 {
		return nil
	}
	var before *Cache
	if prev != nil {
		before = NewCache(prev)
	}
	isChanged := map[string]bool{}
	for _, n := range changed {
		isChanged[n.String()] = true
	}
	var out []Flag
	for _, d := range reached {
		a := d.Artifact
		if a.Tx == tx {
			continue
		}
		now := pc.ReviewState(a)
		if !now.Needs || (before != nil && before.ReviewState(a).Needs) {
			continue
		}
		f := Flag{Artifact: a}
		for _, s := range now.Stale {
			if isChanged[s.String()] {
				f.Because = append(f.Because, s)
			}
		}
		out = append(out, f)
	}
	return out
}
