package index

import (
	"slices"

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

// RunEntry is everything recorded about one run, each list in transaction order.
type RunEntry struct {
	Key        RunKey
	Retrievals []*record.Retrieval
	Decisions  []*ArtifactNode // artifact versions derived "in run" by the run's principal
	Outcomes   []*record.Outcome
	first      record.TxID
}

type runIndex struct {
	runs     map[RunKey]*RunEntry
	runOrder []RunKey
	// served lists, by claim or artifact version (NodeRef.String()), the retrievals that served it.
	served map[string][]*record.Retrieval
}

func newRunIndex() *runIndex {
	return &runIndex{runs: map[RunKey]*RunEntry{}, served: map[string][]*record.Retrieval{}}
}

func (ix *Index) run(k RunKey, tx record.TxID) *RunEntry {
	r := ix.runs[k]
	if r == nil {
		r = &RunEntry{Key: k, first: tx}
		ix.runs[k] = r
		ix.runOrder = append(ix.runOrder, k)
	}
	return r
}

// addRunRecords indexes the retrievals, outcomes and run decisions of tx after mark m.
func (ix *Index) addRunRecords(tx *record.Tx, m Mark) {
	for _, a := range tx.Artifacts[m.artifacts:] {
		if a.Run != "" {
			r := ix.run(RunKey{a.By, a.Run}, tx.ID)
			r.Decisions = append(r.Decisions, ix.arts[a.ID])
		}
	}
	for _, q := range tx.Retrievals[m.retrievals:] {
		r := ix.run(RunKey{q.By, q.Run}, tx.ID)
		r.Retrievals = append(r.Retrievals, q)
		for _, c := range q.Claims {
			k := c.String()
			ix.served[k] = append(ix.served[k], q)
		}
		for _, a := range q.Artifacts {
			k := a.String()
			ix.served[k] = append(ix.served[k], q)
		}
	}
	for _, o := range tx.Outcomes[m.outcomes:] {
		r := ix.run(RunKey{o.By, o.Run}, tx.ID)
		r.Outcomes = append(r.Outcomes, o)
	}
}

// SeesRunsOf reports whether the viewer may see the runs of principal by: its own, or any
// for the owner.
func (v *View) SeesRunsOf(by string) bool { return v.viewer == "" || v.viewer == by }

// visibleRun is r as the view shows it: records within the view, decisions the viewer may
// see; nil when the viewer may not see r's principal's runs or nothing of it is in the view.
func (v *View) visibleRun(r *RunEntry) *RunEntry {
	if r == nil || !v.SeesRunsOf(r.Key.By) || !v.in(r.first) {
		return nil
	}
	out := &RunEntry{Key: r.Key, first: r.first,
		Retrievals: prefix(r.Retrievals, v.asOf, func(q *record.Retrieval) record.TxID { return q.Tx }),
		Outcomes:   prefix(r.Outcomes, v.asOf, func(o *record.Outcome) record.TxID { return o.Tx }),
	}
	for _, d := range prefix(r.Decisions, v.asOf, func(n *ArtifactNode) record.TxID { return n.Tx }) {
		if v.CanSee(d.SeenBy) {
			out.Decisions = append(out.Decisions, d)
		}
	}
	if len(out.Retrievals)+len(out.Outcomes)+len(out.Decisions) == 0 {
		return nil
	}
	return out
}

// Runs lists the runs the viewer may see, in the order each was first recorded; by (when not
// "") keeps one principal's.
func (v *View) Runs(by string) []*RunEntry {
	var out []*RunEntry
	for _, k := range v.ix.runOrder {
		if by != "" && k.By != by {
			continue
		}
		if r := v.visibleRun(v.ix.runs[k]); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// RunsNamed lists the runs of that name the viewer may see (one per principal).
func (v *View) RunsNamed(name string) []*RunEntry {
	var out []*RunEntry
	for _, k := range v.ix.runOrder {
		if k.Name != name {
			continue
		}
		if r := v.visibleRun(v.ix.runs[k]); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// ServedIn lists the retrievals within the view that served node (a claim or artifact
// version) and that the viewer may see.
func (v *View) ServedIn(node record.NodeRef) []*record.Retrieval {
	var out []*record.Retrieval
	for _, q := range prefix(v.ix.served[node.String()], v.asOf, func(q *record.Retrieval) record.TxID { return q.Tx }) {
		if v.SeesRunsOf(q.By) {
			out = append(out, q)
		}
	}
	return out
}

// Run returns the run of key as the viewer may see it, or nil.
func (v *View) Run(k RunKey) *RunEntry { return v.visibleRun(v.ix.runs[k]) }

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
