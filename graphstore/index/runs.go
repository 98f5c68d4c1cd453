package index

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// Runs: what reads served to an agent's run, the decisions made in it, and how it ended. A run
// is named by the principal that reads for it, so RunKey holds both; the owner sees every
// principal's runs, any other principal only its own (what was served to a run tells what its
// reader asked for and could see, which is nobody else's business).

// RunKey names one run: a principal's run of that name.
type RunKey struct {
	By   string
	Name string
}

// RunEntry is everything recorded about one run within a view, each list in transaction order.
type RunEntry struct {
	Key        RunKey
	Retrievals []*record.Retrieval
	Decisions  []*ArtifactNode // artifact versions derived "in run" by the run's principal
	Outcomes   []*record.Outcome
	firstTx    record.TxID
	firstN     int
}

// SeesRunsOf reports whether the viewer may see the runs of principal by: its own, or any
// for the owner.
func (v *View) SeesRunsOf(by string) bool { return v.viewer == "" || v.viewer == by }

// visibleRun is the run k as the view shows it: records within the view, decisions the viewer
// may see; nil when the viewer may not see k's principal's runs or nothing of it is in the view.
func (v *View) visibleRun(k RunKey, r *runEntry) *RunEntry {
	if r == nil || !v.SeesRunsOf(k.By) || !v.in(r.firstTx) {
		return nil
	}
	out := &RunEntry{Key: k, firstTx: r.firstTx, firstN: r.firstN}
	for _, x := range r.retrievals {
		if !v.in(x.tx) {
			break
		}
		if q := v.ix.retrieval(x.id); q != nil {
			out.Retrievals = append(out.Retrievals, q)
		}
	}
	for _, x := range r.outcomes {
		if !v.in(x.tx) {
			break
		}
		if o := v.ix.outcome(x.id); o != nil {
			out.Outcomes = append(out.Outcomes, o)
		}
	}
	for _, d := range r.decisions {
		n := v.ix.artifactByRef(d)
		if n == nil {
			corrupt("run "+k.Name, fmt.Errorf("%w: a decision it names is missing", encoding.ErrCorrupt))
		}
		if !v.in(n.Tx) {
			break
		}
		if v.CanSee(n.SeenBy) {
			out.Decisions = append(out.Decisions, n)
		}
	}
	if len(out.Retrievals)+len(out.Outcomes)+len(out.Decisions) == 0 {
		return nil
	}
	return out
}

// eachRun calls fn with every run under prefix (a principal's, or all).
func (v *View) eachRun(prefix []byte, fn func(RunKey, *runEntry)) {
	v.ix.scan(bRun, prefix, kv.ScanOptions{}, func(k, b []byte) bool {
		i := slices.Index(k, 0)
		if i < 0 {
			corrupt("run", encoding.ErrCorrupt)
		}
		key := RunKey{By: string(k[:i]), Name: string(k[i+1:])}
		r := loadRaw(v.ix, bRun, k, b, func() string { return "run " + key.Name }, decodeRun)
		fn(key, r)
		return true
	})
}

func sortRuns(rs []*RunEntry) []*RunEntry {
	slices.SortFunc(rs, func(a, b *RunEntry) int {
		return cmp.Or(cmp.Compare(a.firstTx, b.firstTx), cmp.Compare(a.firstN, b.firstN))
	})
	return rs
}

// Runs lists the runs the viewer may see, in the order each was first recorded; by (when not
// "") keeps one principal's.
func (v *View) Runs(by string) []*RunEntry {
	var prefix []byte
	if by != "" {
		prefix = encoding.AppendName(nil, by)
	}
	var out []*RunEntry
	v.eachRun(prefix, func(k RunKey, r *runEntry) {
		if x := v.visibleRun(k, r); x != nil {
			out = append(out, x)
		}
	})
	return sortRuns(out)
}

// RunsNamed lists the runs of that name the viewer may see (one per principal).
func (v *View) RunsNamed(name string) []*RunEntry {
	var out []*RunEntry
	v.eachRun(nil, func(k RunKey, r *runEntry) {
		if k.Name != name {
			return
		}
		if x := v.visibleRun(k, r); x != nil {
			out = append(out, x)
		}
	})
	return sortRuns(out)
}

// ServedIn lists the retrievals within the view that served node (a claim or artifact
// version) and that the viewer may see.
func (v *View) ServedIn(node record.NodeRef) []*record.Retrieval {
	key := v.nodeKeyOf(node)
	if key == nil {
		return nil
	}
	var out []*record.Retrieval
	v.ix.scan(bServed, key, kv.ScanOptions{}, func(k, id []byte) bool {
		tx, _, ok := encoding.Uint(k[len(key):])
		if !ok {
			corrupt("served", encoding.ErrCorrupt)
		}
		if !v.in(record.TxID(tx)) {
			return false
		}
		if q := v.ix.retrieval(string(id)); q != nil && v.SeesRunsOf(q.By) {
			out = append(out, q)
		}
		return true
	})
	return out
}

// Run returns the run of key as the viewer may see it, or nil.
func (v *View) Run(k RunKey) *RunEntry { return v.visibleRun(k, v.ix.runEntry(k)) }

// Served reports whether a retrieval of the run served node.
func (r *RunEntry) Served(node record.NodeRef) bool {
	for _, q := range r.Retrievals {
		if node.Claim != nil && slices.Contains(q.Claims, *node.Claim) ||
			node.Artifact != nil && slices.Contains(q.Artifacts, *node.Artifact) {
			return true
		}
	}
	return false
}
