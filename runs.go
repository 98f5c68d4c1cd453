package mql

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/query/syntax"
)

// Runs: an agent names each episode or decision cycle (a run) and reads for it; every such read
// records, additively, what it served. A decision derived "in run" cites what it used, and an
// outcome says how the run ended. From these, `run`, `runs`, impact and stats tell memory
// failures (the run was served something stale) from failures downstream of the memory.

// OutcomeResult is how a run ended: succeeded, failed or declined.
type OutcomeResult = record.OutcomeResult

// Outcome results.
const (
	Succeeded = record.Succeeded
	Failed    = record.Failed
	Declined  = record.Declined // the agent said it lacked the evidence to act
)

// readMark is what a read made for a run saw: filled in by Reader.view.
type readMark struct {
	at    record.TxID
	owner string
}

// ForRun returns a reader whose reads also record, for the run named run, what they served: a
// retrieval naming the run, the reading principal (the reader's As, or the owner), the
// transaction it read at, the statement, and every claim version and artifact version in the
// answer (for Context, exactly those that fit the budget). Each such read is one more write,
// made by the reading principal; a reader without ForRun records nothing. A run belongs to
// the principal that reads for it: runs of one name by two principals are two runs.
func (r reads) ForRun(run string) Reader { r.run = nfc(run); return Reader{r} }

// forRun runs read with r (without the run) and, when r reads for a run, records what served
// names as one retrieval of it, with the statement stmt builds (see statement.go).
func forRun[T any](ctx context.Context, r reads, stmt func() syntax.Stmt, read func(reads) (T, error), served func(T) []string) (T, error) {
	var zero T
	if err := r.actErr(); err != nil {
		return zero, err
	}
	if r.tx != nil {
		return zero, fmt.Errorf("for run %s: %w: reads inside a transaction record nothing; read for the run outside it", r.run, ErrInvalid)
	}
	if err := checkName("run", r.run); err != nil {
		return zero, err
	}
	m := &readMark{}
	inner := r
	inner.run, inner.mark = "", m
	out, err := read(inner)
	if err != nil {
		return out, err
	}
	by := r.as
	if by == "" {
		by = m.owner
	}
	if err := r.db.recordRetrieval(ctx, by, r.run, m.at, stmt().String(), served(out)); err != nil {
		return zero, err
	}
	return out, nil
}

// recordRetrieval writes one retrieval of run by principal by, read at tx at, serving refs
// (claim and artifact references with versions).
func (db *DB) recordRetrieval(ctx context.Context, by, run string, at record.TxID, stmt string, refs []string) error {
	_, err := db.write(ctx, by, func(v *index.View, tx *record.Tx, rc *Receipt) error {
		mine := v.Index().View(at, v.Now(), by)
		q := &record.Retrieval{ID: recordID("q", tx, len(tx.Retrievals)+1), Run: run, By: by, ReadAt: at, Statement: stmt, Tx: tx.ID}
		seen := map[string]bool{}
		for _, ref := range refs {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			node, _ := ParseNodeRef(ref)
			switch n := node.(type) {
			case ClaimRef:
				if n.Version == 0 || mine.Claim(n.id()) == nil {
					return fmt.Errorf("for run %s: %s was served but is not a claim %s may see", run, ref, by)
				}
				q.Claims = append(q.Claims, n.id())
			case ArtifactRef:
				if n.Version == 0 || mine.Artifact(n.id()) == nil {
					return fmt.Errorf("for run %s: %s was served but is not an artifact %s may see", run, ref, by)
				}
				q.Artifacts = append(q.Artifacts, n.id())
			default:
				return fmt.Errorf("for run %s: %s was served but is not a claim or artifact reference", run, ref)
			}
		}
		tx.Retrievals = append(tx.Retrievals, q)
		rc.Ref = run
		return nil
	})
	return err
}

// OutcomeSpec records how By's run ended. Because is optional.
type OutcomeSpec struct {
	Run     string
	Result  OutcomeResult
	Because string
	By      string
}

func (s OutcomeSpec) norm() OutcomeSpec { s.Run, s.By = nfc(s.Run), nfc(s.By); return s }

func (s OutcomeSpec) build(v *index.View, tx *record.Tx, rc *Receipt) error {
	if err := checkName("run", s.Run); err != nil {
		return err
	}
	switch s.Result {
	case Succeeded, Failed, Declined:
	default:
		return fmt.Errorf("outcome %q: %w: a run succeeded, failed or declined", s.Result, ErrInvalid)
	}
	if len(s.Because) > maxLiteral {
		return fmt.Errorf("outcome of run %s: %w: the reason is over 1 MiB", s.Run, ErrInvalid)
	}
	tx.Outcomes = append(tx.Outcomes, &record.Outcome{ID: recordID("o", tx, len(tx.Outcomes)+1), Run: s.Run, Result: s.Result, Because: s.Because, By: s.By, Tx: tx.ID})
	rc.Ref = s.Run
	return nil
}

// Retrieval is one read made for a run.
type Retrieval struct {
	Statement string    `json:"statement,omitempty"`
	ReadAt    int64     `json:"read_at_tx"`
	Tx        int64     `json:"tx"`
	At        time.Time `json:"at"`
	Served    []string  `json:"served"`
}

// Served is one claim or artifact version served to a run, judged at three points: when it
// was served, at the run's decision, and at the reader's now.
type Served struct {
	Ref     string `json:"ref"`
	Subject string `json:"subject,omitempty"` // of a claim
	ReadAt  int64  `json:"read_at_tx"`        // the transaction the first read that served it read at
	// WhenServed, AtDecision and Now are its states at those points (AtDecision is empty when
	// the run has made no decision and recorded no outcome yet).
	WhenServed State `json:"when_served"`
	AtDecision State `json:"at_decision,omitempty"`
	Now        State `json:"now"`
	// Stale says when a version that was live when served stopped being live: "at decision"
	// (before the run's decision), "later", or "" (still live, or not live when served).
	Stale string `json:"stale,omitempty"`
	// RevokedLater is set when the version was revoked after it was served.
	RevokedLater bool `json:"revoked_later,omitempty"`
	Cited        bool `json:"cited"` // a decision of the run derived from it
}

// RunReport is one run as a reader may see it.
type RunReport struct {
	Run        string      `json:"run"`
	By         string      `json:"by"`
	Retrievals []Retrieval `json:"retrievals"`
	Served     []Served    `json:"served"`
	Decisions  []string    `json:"decisions"` // artifact versions derived in the run
	// DecisionTx is the transaction of the run's decision point: its first decision, or, when
	// it made none, its first outcome; 0 when it has neither.
	DecisionTx int64         `json:"decision_tx,omitempty"`
	Outcome    OutcomeResult `json:"outcome,omitempty"` // the last outcome recorded; "" when none
	Because    string        `json:"because,omitempty"`
	OutcomeTx  int64         `json:"outcome_tx,omitempty"`
	// MemoryFailure is set on a failed run that was served a version live then and stale at
	// its decision or revoked since; a failed run without one failed downstream of its memory.
	MemoryFailure bool `json:"memory_failure,omitempty"`
}

// RunSummary is one line of Runs.
type RunSummary struct {
	Run        string        `json:"run"`
	By         string        `json:"by"`
	First      time.Time     `json:"first"` // when its first record was written
	Retrievals int           `json:"retrievals"`
	Served     int           `json:"served"` // distinct versions
	Cited      int           `json:"cited"`
	Stale      int           `json:"stale_at_decision"`
	Decisions  int           `json:"decisions"`
	Outcome    OutcomeResult `json:"outcome,omitempty"`
}

// Run reports the runs named name the reader may see: its own (the owner: every principal's
// run of that name, one report each). ErrNotFound when there is none.
func (r reads) Run(ctx context.Context, name string) ([]RunReport, error) {
	name = nfc(name)
	if err := checkName("run", name); err != nil {
		return nil, err
	}
	var out []RunReport
	err := r.view(ctx, func(v *index.View) error {
		for _, e := range v.RunsNamed(name) {
			out = append(out, runReport(v, e))
		}
		if len(out) == 0 {
			return fmt.Errorf("run %s: %w: no run of that name that you may see", name, ErrNotFound)
		}
		return nil
	})
	return out, err
}

// Runs lists the runs the reader may see, oldest first: by one principal when by is not "",
// and only runs whose first record was written at or after since, when since is not zero.
func (r reads) Runs(ctx context.Context, by string, since time.Time) ([]RunSummary, error) {
	by = nfc(by)
	out := []RunSummary{}
	err := r.view(ctx, func(v *index.View) error {
		if by != "" && v.Principal(by) == nil {
			return unknownPrincipal(by)
		}
		for _, e := range v.Runs(by) {
			first := runFirst(v, e)
			if !since.IsZero() && first.Before(since) {
				continue
			}
			rep := runReport(v, e)
			s := RunSummary{Run: rep.Run, By: rep.By, First: first, Retrievals: len(rep.Retrievals),
				Served: len(rep.Served), Decisions: len(rep.Decisions), Outcome: rep.Outcome}
			for _, x := range rep.Served {
				if x.Cited {
					s.Cited++
				}
				if x.Stale == staleAtDecision {
					s.Stale++
				}
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

const (
	staleAtDecision = "at decision"
	staleLater      = "later"
)

// runFirst is the time of a run's first record in the view.
func runFirst(v *index.View, e *index.RunEntry) time.Time {
	first := record.TxID(0)
	take := func(tx record.TxID) {
		if first == 0 || tx < first {
			first = tx
		}
	}
	if len(e.Retrievals) > 0 {
		take(e.Retrievals[0].Tx)
	}
	if len(e.Decisions) > 0 {
		take(e.Decisions[0].Tx)
	}
	if len(e.Outcomes) > 0 {
		take(e.Outcomes[0].Tx)
	}
	return v.TxTime(first)
}

// decisionTx is a run's decision point: its first decision, else its first outcome, else 0.
func decisionTx(e *index.RunEntry) record.TxID {
	if len(e.Decisions) > 0 {
		return e.Decisions[0].Tx
	}
	if len(e.Outcomes) > 0 {
		return e.Outcomes[0].Tx
	}
	return 0
}

func runReport(v *index.View, e *index.RunEntry) RunReport {
	rep := RunReport{Run: e.Key.Name, By: e.Key.By, Retrievals: []Retrieval{}, Served: []Served{}, Decisions: []string{}}
	cited := map[string]bool{}
	for _, d := range e.Decisions {
		rep.Decisions = append(rep.Decisions, d.ID.String())
		for _, in := range d.DerivedFrom {
			cited[in.String()] = true
		}
	}
	dtx := decisionTx(e)
	rep.DecisionTx = int64(dtx)
	if n := len(e.Outcomes); n > 0 {
		o := e.Outcomes[n-1]
		rep.Outcome, rep.Because, rep.OutcomeTx = o.Result, o.Because, int64(o.Tx)
	}
	ix := v.Index()
	viewAt := func(tx record.TxID) *index.View { return ix.View(tx, ix.TxTime(tx), v.Viewer()) }
	var atDecision *index.View
	if dtx != 0 && dtx <= v.AsOf() {
		atDecision = viewAt(dtx)
	}
	seen := map[string]bool{}
	for _, q := range e.Retrievals {
		ret := Retrieval{Statement: q.Statement, ReadAt: int64(q.ReadAt), Tx: int64(q.Tx), At: v.TxTime(q.Tx), Served: []string{}}
		served := viewAt(q.ReadAt)
		add := func(ref string, node record.NodeRef) {
			ret.Served = append(ret.Served, ref)
			if seen[ref] {
				return
			}
			seen[ref] = true
			s := Served{Ref: ref, ReadAt: int64(q.ReadAt), Cited: cited[ref]}
			if node.Claim != nil {
				s.Subject = node.Claim.Subject
				s.WhenServed = claimState(served, *node.Claim)
				s.Now = claimState(v, *node.Claim)
				if atDecision != nil {
					s.AtDecision = claimState(atDecision, *node.Claim)
				}
				if c := v.Claim(*node.Claim); c != nil {
					if rv := v.Revocation(c); rv != nil && rv.Tx > q.ReadAt {
						s.RevokedLater = true
					}
				}
			} else {
				s.WhenServed = artifactState(served, *node.Artifact)
				s.Now = artifactState(v, *node.Artifact)
				if atDecision != nil {
					s.AtDecision = artifactState(atDecision, *node.Artifact)
				}
			}
			if s.WhenServed == Live {
				switch {
				case s.AtDecision != "" && s.AtDecision != Live:
					s.Stale = staleAtDecision
				case s.Now != Live:
					s.Stale = staleLater
				}
			}
			rep.Served = append(rep.Served, s)
		}
		for _, c := range q.Claims {
			add(c.String(), record.NodeRef{Claim: &c})
		}
		for _, a := range q.Artifacts {
			add(a.String(), record.NodeRef{Artifact: &a})
		}
		rep.Retrievals = append(rep.Retrievals, ret)
	}
	if rep.Outcome == Failed {
		// Only what the run was given as live can fail it: a past version (why, history) was
		// served as superseded, and its revocation since changes nothing the run relied on.
		rep.MemoryFailure = slices.ContainsFunc(rep.Served, func(s Served) bool {
			return s.Stale == staleAtDecision || s.RevokedLater && s.WhenServed == Live
		})
	}
	return rep
}

func claimState(v *index.View, id record.ClaimID) State {
	e := v.Claim(id)
	if e == nil {
		return ""
	}
	st, _ := v.State(e)
	return st
}

func artifactState(v *index.View, id record.ArtifactID) State {
	n := v.Artifact(id)
	switch {
	case n == nil:
		return ""
	case v.ArtifactSupersededBy(n) != nil:
		return Superseded
	}
	return Live
}

// MemoryStats are the memory metrics over the runs a reader may see (see docs/MODEL.md).
type MemoryStats struct {
	Runs       int `json:"runs"`
	Retrievals int `json:"retrievals"`
	Served     int `json:"served"` // distinct versions served, summed over runs
	// LiveServed counts the served versions that were live when served, in the runs that
	// reached a decision point (the others have no decision to be stale at); StaleAtDecision
	// those of them that were no longer live at their run's decision.
	LiveServed      int `json:"live_served"`
	StaleAtDecision int `json:"stale_at_decision"`
	// StaleMemoryRate is StaleAtDecision ÷ LiveServed over the runs that reached a decision.
	StaleMemoryRate float64 `json:"stale_memory_rate"`
	Cited           int     `json:"cited"`
	// ContextUtilization is Cited ÷ Served over the runs that made a decision.
	ContextUtilization float64 `json:"context_utilization"`
	// RetrievalDiversity is the mean number of distinct subjects served per run.
	RetrievalDiversity float64 `json:"retrieval_diversity"`
	Outcomes           int     `json:"outcomes"` // runs with an outcome
	Succeeded          int     `json:"succeeded"`
	Failed             int     `json:"failed"`
	Declined           int     `json:"declined"`
	// DeclineRate is Declined ÷ Outcomes.
	DeclineRate float64 `json:"decline_rate"`
	// MemoryFailures are failed runs served a live version stale at their decision or revoked
	// since; DownstreamFailures the other failed runs.
	MemoryFailures     int `json:"memory_failures"`
	DownstreamFailures int `json:"downstream_failures"`
}

// MemoryStats computes the memory metrics over the runs the reader may see: by one principal
// when by is not "", and whose first record was written at or after since when it is not zero.
func (r reads) MemoryStats(ctx context.Context, by string, since time.Time) (MemoryStats, error) {
	var out MemoryStats
	by = nfc(by)
	err := r.view(ctx, func(v *index.View) error {
		if by != "" && v.Principal(by) == nil {
			return unknownPrincipal(by)
		}
		out = memoryStats(v, by, since)
		return nil
	})
	return out, err
}

func memoryStats(v *index.View, by string, since time.Time) MemoryStats {
	var out MemoryStats
	subjects, decidedServed := 0, 0
	for _, e := range v.Runs(by) {
		if !since.IsZero() && runFirst(v, e).Before(since) {
			continue
		}
		rep := runReport(v, e)
		out.Runs++
		out.Retrievals += len(rep.Retrievals)
		out.Served += len(rep.Served)
		subj := map[string]bool{}
		for _, s := range rep.Served {
			if s.Subject != "" {
				subj[s.Subject] = true
			}
			if rep.DecisionTx != 0 && s.WhenServed == Live {
				out.LiveServed++
				if s.Stale == staleAtDecision {
					out.StaleAtDecision++
				}
			}
			if len(rep.Decisions) > 0 {
				decidedServed++
				if s.Cited {
					out.Cited++
				}
			}
		}
		subjects += len(subj)
		switch rep.Outcome {
		case Succeeded:
			out.Succeeded++
		case Failed:
			out.Failed++
			if rep.MemoryFailure {
				out.MemoryFailures++
			} else {
				out.DownstreamFailures++
			}
		case Declined:
			out.Declined++
		}
		if rep.Outcome != "" {
			out.Outcomes++
		}
	}
	ratio := func(a, b int) float64 {
		if b == 0 {
			return 0
		}
		return float64(a) / float64(b)
	}
	out.StaleMemoryRate = ratio(out.StaleAtDecision, out.LiveServed)
	out.ContextUtilization = ratio(out.Cited, decidedServed)
	out.RetrievalDiversity = ratio(subjects, out.Runs)
	out.DeclineRate = ratio(out.Declined, out.Outcomes)
	return out
}

func claimRefs(cs []Claim) []string {
	refs := make([]string, len(cs))
	for i, c := range cs {
		refs[i] = c.Ref
	}
	return refs
}

// nodeRefs lists the claim and artifact versions of a provenance tree.
func nodeRefs(n *Node) []string {
	var refs []string
	var walk func(n *Node)
	walk = func(n *Node) {
		if n == nil {
			return
		}
		switch {
		case n.Claim != nil:
			refs = append(refs, n.Claim.Ref)
		case n.Artifact != nil:
			refs = append(refs, n.Artifact.Ref)
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(n)
	return refs
}

// RunUse is a run that was served a claim or artifact version, and what it decided.
type RunUse struct {
	Run       string        `json:"run"`
	By        string        `json:"by"`
	Served    []string      `json:"served"`    // which of the versions asked about it was served
	ServedTx  int64         `json:"served_tx"` // the transaction that recorded the first such read
	Decisions []string      `json:"decisions"` // artifact versions derived in the run
	Outcome   OutcomeResult `json:"outcome,omitempty"`
}

// servedRuns lists the runs the viewer may see that were served any of nodes, in the order of
// the read that first served one.
func servedRuns(v *index.View, nodes []record.NodeRef) []RunUse {
	var out []RunUse
	at := map[index.RunKey]int{}
	for _, n := range nodes {
		for _, q := range v.ServedIn(n) {
			k := index.RunKey{By: q.By, Name: q.Run}
			i, ok := at[k]
			if !ok {
				i = len(out)
				at[k] = i
				u := RunUse{Run: q.Run, By: q.By, ServedTx: int64(q.Tx), Decisions: []string{}}
				if e := v.Run(k); e != nil {
					for _, d := range e.Decisions {
						u.Decisions = append(u.Decisions, d.ID.String())
					}
					if len(e.Outcomes) > 0 {
						u.Outcome = e.Outcomes[len(e.Outcomes)-1].Result
					}
				}
				out = append(out, u)
			}
			if ref := n.String(); !slices.Contains(out[i].Served, ref) {
				out[i].Served = append(out[i].Served, ref)
			}
			if int64(q.Tx) < out[i].ServedTx {
				out[i].ServedTx = int64(q.Tx)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b RunUse) int { return int(a.ServedTx - b.ServedTx) })
	return out
}
