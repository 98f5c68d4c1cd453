// Command horcrux replays the Horcrux Hunt memory stress test: a seeker hunts a hidden target
// across 15 locations for 50 turns while an adversary relocates it, plants decoys where the
// seeker is looking and times its moves for right after the seeker commits.
//
// Two seekers play the same seeded games. Both fold a signal into a location's belief by the
// same likelihood rule and decide with the same entropy gate — act (attack the top location),
// retrieve (search it first) or decline (explore the least-known location instead of
// attacking). They differ only in memory:
//
//   - naive keeps every signal forever, with no notion of age, and decides from the whole list
//     (kept in an mql store used as a plain list: a claim per signal, none ever superseded);
//   - mql stores each signal as an observed claim `Location.holds_horcrux` with a confidence,
//     lets the predicate decay with a half-life (forgetting what decayed away), supersedes its
//     beliefs when it senses a relocation, and decides with `beliefs *.holds_horcrux`.
//
// Each game is one run of its seeker (mql's runs: what the seeker hands a model is read for the
// run, each attack is a decision of the run, the game's end its outcome).
//
// It prints win rates with 95% Wilson intervals, the share of decisions made on stale signals,
// the context each seeker would hand a model, the gate's branches, the memory metrics of the
// runs (stale-memory rate, context utilization, declined runs, memory vs downstream failures)
// from mql's run records, ablations of the mql design and an A/A run (the same arm twice,
// different seeds) that shows the noise floor.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/examples/internal/exflag"
	"github.com/mql-dev/mql/examples/internal/exstore"
)

func main() {
	exflag.Exit("horcrux", run(context.Background(), os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
}

// locations are the 15 places the target can hide.
var locations = []string{
	"Hogwarts", "Gringotts", "Azkaban", "Ministry", "Godrics_Hollow",
	"Little_Hangleton", "Malfoy_Manor", "Shrieking_Shack", "Diagon_Alley", "Knockturn_Alley",
	"Grimmauld_Place", "Spinners_End", "Hogsmeade", "Forbidden_Forest", "Borgin_and_Burkes",
}

// game holds the rules both seekers play by.
type game struct {
	Turns int
	// A search reports "positive" with these probabilities when the location holds the target,
	// a decoy, or nothing.
	PTarget, PDecoy, PEmpty float64
	// The adversary relocates the target right after a search finds it ("the seeker commits"),
	// with probability RelocateProb, at most MaxRelocations times, at least Cooldown turns apart.
	MaxRelocations int
	RelocateProb   float64
	Cooldown       int
	// WanderProb is the chance per turn that the adversary relocates anyway (within the same
	// budget and cooldown): it raises the seeker's uncertainty even when it is not close.
	WanderProb float64
	// AnnounceProb is the chance the seeker senses a relocation ("a disturbance") next turn.
	AnnounceProb float64
	// Decoys: InitialDecoys at the start, one left behind at the old location on each
	// relocation, and one planted where a search just gave a false positive with probability
	// DecoyOnFalsePositive; at most MaxDecoys in all.
	InitialDecoys        int
	MaxDecoys            int
	DecoyOnFalsePositive float64
}

var defaultGame = game{
	Turns:   50,
	PTarget: 0.6, PDecoy: 0.6, PEmpty: 0.15,
	MaxRelocations: 6, RelocateProb: 0.8, Cooldown: 4, WanderProb: 0.05,
	AnnounceProb:  0.5,
	InitialDecoys: 2, MaxDecoys: 6, DecoyOnFalsePositive: 0.5,
}

// Signal likelihood ratios both seekers use: what a result says about "the target is here".
func (g game) lr(kind string) float64 {
	switch kind {
	case "positive":
		return g.PTarget / g.PEmpty
	case "negative":
		return (1 - g.PTarget) / (1 - g.PEmpty)
	case "empty", "decoy":
		return 0.02 // an attack that destroyed nothing real: almost certainly not here (now)
	}
	return 1
}

// observation is what the seeker learns: a search result, an attack result, or a sensed
// relocation ("disturbance", no location).
type observation struct {
	kind string // positive, negative, empty, decoy, disturbance
	loc  int
	turn int
}

// text is the observation as one line of the game's narrative.
func (o observation) text() string {
	switch o.kind {
	case "disturbance":
		return fmt.Sprintf("Turn %d: you sense a disturbance: something was moved.", o.turn)
	case "positive", "negative":
		return fmt.Sprintf("Turn %d: searched %s: %s signal.", o.turn, locations[o.loc], o.kind)
	case "empty":
		return fmt.Sprintf("Turn %d: attacked %s: nothing there.", o.turn, locations[o.loc])
	case "decoy":
		return fmt.Sprintf("Turn %d: attacked %s: destroyed, but it was a decoy!", o.turn, locations[o.loc])
	}
	return fmt.Sprintf("Turn %d: %s", o.turn, o.kind)
}

// decision is a seeker's move and what it cost to make.
type decision struct {
	attack bool
	loc    int
	branch string // the gate's decision: act, retrieve or decline
	// evidence is the turn of the newest positive signal at loc the seeker holds, or -1;
	// onEvidence says loc was picked for it (act or retrieve), not explored.
	evidence   int
	onEvidence bool
	chars      int // context a model would be handed for this decision
	tokens     int
}

type seeker interface {
	decide(ctx context.Context, turn int) (decision, error)
	observe(ctx context.Context, o observation) error
	// lastContext is what the seeker would have handed a model at its last decision.
	lastContext() string
	// finish records how the game's run ended and returns what mql's run records say of it,
	// and what the seeker's own bookkeeping says of the same quantities.
	finish(ctx context.Context, result mql.OutcomeResult) (mem, book runRecord, err error)
	close() error
}

// arm builds one seeker per game.
type arm struct {
	name string
	new  func(ctx context.Context, g game, seed uint64) (seeker, error)
}

// outcome is one game's record.
type outcome struct {
	won       bool
	turns     int
	decisions int
	attacks   int
	stale     int // decisions resting only on signals from before the target's last relocation
	staleAtt  int // of them, attacks
	branches  map[string]int
	chars     int
	tokens    int
	maxTokens int
	relocs    int
	// mem is the game's run as mql's run records measure it; book the same quantities from
	// the seeker's own bookkeeping (for the tests, which check the two agree).
	mem, book runRecord
}

// play runs one seeded game.
func play(ctx context.Context, g game, seed uint64, s seeker) (outcome, error) {
	out, last, err := hunt(ctx, g, seed, s)
	if err != nil {
		return out, err
	}
	// The game is the seeker's run; it ends won, or lost. A lost game whose last move was the
	// gate's decline branch ended with the seeker saying it lacked the evidence to act.
	result := mql.Failed
	switch {
	case out.won:
		result = mql.Succeeded
	case last == mql.Decline:
		result = mql.Declined
	}
	out.mem, out.book, err = s.finish(ctx, result)
	return out, err
}

// hunt plays the turns of one seeded game and returns the gate's last decision.
func hunt(ctx context.Context, g game, seed uint64, s seeker) (out outcome, last string, err error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out = outcome{branches: map[string]int{}}
	n := len(locations)
	target := rng.IntN(n)
	decoys := map[int]bool{}
	for len(decoys) < min(g.InitialDecoys, g.MaxDecoys) {
		if l := rng.IntN(n); l != target {
			decoys[l] = true
		}
	}
	planted := len(decoys)
	lastReloc := 0    // turn of the target's last relocation (0: never moved)
	nextReloc := 0    // first turn a relocation is allowed again
	announce := false // a disturbance to report at the start of the next turn

	for turn := 1; turn <= g.Turns; turn++ {
		if announce {
			announce = false
			if err = s.observe(ctx, observation{kind: "disturbance", loc: -1, turn: turn}); err != nil {
				return out, last, err
			}
		}
		d, err := s.decide(ctx, turn)
		if err != nil {
			return out, last, err
		}
		last = d.branch
		out.decisions++
		out.turns = turn
		out.branches[d.branch]++
		out.chars += d.chars
		out.tokens += d.tokens
		out.maxTokens = max(out.maxTokens, d.tokens)

		o := observation{loc: d.loc, turn: turn}
		if d.onEvidence && lastReloc > 0 && d.evidence >= 0 && d.evidence <= lastReloc {
			out.stale++
			if d.attack {
				out.staleAtt++
			}
		}
		if d.attack {
			out.attacks++
			switch {
			case d.loc == target:
				out.won = true
				return out, last, nil
			case decoys[d.loc]:
				delete(decoys, d.loc)
				o.kind = "decoy"
			default:
				o.kind = "empty"
			}
		} else {
			p := g.PEmpty
			switch {
			case d.loc == target:
				p = g.PTarget
			case decoys[d.loc]:
				p = g.PDecoy
			}
			o.kind = "negative"
			if rng.Float64() < p {
				o.kind = "positive"
			}
		}
		if err = s.observe(ctx, o); err != nil {
			return out, last, err
		}

		// The adversary moves after seeing the result.
		canMove := out.relocs < g.MaxRelocations && turn >= nextReloc
		switch {
		case canMove && ((o.kind == "positive" && d.loc == target && rng.Float64() < g.RelocateProb) || rng.Float64() < g.WanderProb):
			// The seeker is about to commit (or the adversary just feels like it): move the
			// target to another location and leave a decoy behind.
			old := target
			for target == old || decoys[target] {
				target = rng.IntN(n)
			}
			out.relocs++
			lastReloc, nextReloc = turn, turn+g.Cooldown
			if planted < g.MaxDecoys {
				decoys[old] = true
				planted++
			}
			announce = rng.Float64() < g.AnnounceProb
		case o.kind == "positive" && d.loc != target && !decoys[d.loc]:
			// A false positive: plant a decoy where the seeker now believes the target is.
			if planted < g.MaxDecoys && rng.Float64() < g.DecoyOnFalsePositive {
				decoys[d.loc] = true
				planted++
			}
		}
	}
	return out, last, nil
}

// ---------------------------------------------------------------------------------------------
// What both seekers share: one belief per location, one rule to fold a signal into it, one
// distribution for the gate, one policy. They differ only in memory: the naive seeker folds
// every signal it ever got with equal weight; the mql seeker's beliefs decay, are forgotten
// back to the prior when they have decayed away, and are superseded when it senses a
// relocation.
//
// A belief is either positive — holds_horcrux = true with a weight in posterior units (the
// prior times the likelihood ratio of each signal folded in, so weights are proportional to
// the probability that the target is there) — or negative: holds_horcrux = false with the
// certainty that it is not there. Negative locations are left out of the distribution.

// prior is the weight of a location with no evidence, from the rules: the target is hidden
// uniformly at random. It is small so weights, stored as confidences, stay below 1 until a
// location has four positive signals (likelihood ratio 4 each with the default game).
const prior = 0.01

// forgetBelow is the certainty under which a decayed negative belief is forgotten.
const forgetBelow = 0.25

// belief is one location's live belief.
type belief struct {
	positive bool
	conf     float64 // effective: weight if positive, certainty if negative
}

// weight is the belief in posterior units.
func (b belief) weight() float64 {
	if b.positive {
		return b.conf
	}
	return prior * (1 - b.conf)
}

// fold folds one signal into a belief.
func fold(g game, b belief, kind string) belief {
	w := b.weight() * g.lr(kind)
	if w >= prior {
		return belief{true, math.Min(w, 1)}
	}
	return belief{false, 1 - w/prior}
}

// distribution normalises the positive beliefs and returns the top location, its probability,
// the entropy in bits and the gate's decision: the same arithmetic as mql's beliefs, for the
// naive seeker.
func distribution(bs []belief, gate [2]float64) (top int, pTop, entropy float64, decision string) {
	total := 0.0
	top = -1
	for i, b := range bs {
		if b.positive {
			total += b.conf
			if top < 0 || b.conf > bs[top].conf {
				top = i
			}
		}
	}
	if total <= 0 {
		return -1, 0, math.Inf(1), mql.Decline
	}
	for _, b := range bs {
		if p := b.conf / total; b.positive && p > 0 {
			entropy -= p * math.Log2(p)
		}
	}
	switch {
	case entropy <= gate[0]:
		decision = mql.Act
	case entropy <= gate[1]:
		decision = mql.Retrieve
	default:
		decision = mql.Decline
	}
	return top, bs[top].conf / total, entropy, decision
}

// policy turns the gate's decision into a move: act attacks the top location, retrieve
// searches it, decline explores the least-known location. Without the gate (gated false) the
// seeker attacks when the top location is more likely than not and searches it otherwise.
// onEvidence says whether the location was picked for the evidence behind it.
func policy(gated bool, decision string, top int, pTop float64, explore func() int) (attack bool, loc int, onEvidence bool) {
	if !gated && top >= 0 {
		decision = mql.Retrieve
		if pTop >= 0.5 {
			decision = mql.Act
		}
	}
	switch {
	case top < 0 || decision == mql.Decline:
		return false, explore(), false
	case decision == mql.Act:
		return true, top, true
	}
	return false, top, true
}

// leastKnown picks the location with the least evidence either way: the weight closest to the
// prior, ties at random.
func leastKnown(rng *rand.Rand, bs []belief) int {
	score := make([]float64, len(bs))
	for i, b := range bs {
		score[i] = -math.Abs(math.Log(b.weight()+1e-9) - math.Log(prior))
	}
	return argmaxTies(rng, score)
}

// argmaxTies returns the index of the largest value, breaking ties at random.
func argmaxTies(rng *rand.Rand, xs []float64) int {
	best, n := 0, 0
	for i, x := range xs {
		switch {
		case n == 0 || x > xs[best]+1e-12:
			best, n = i, 1
		case math.Abs(x-xs[best]) <= 1e-12:
			n++
			if rng.IntN(n) == 0 {
				best = i
			}
		}
	}
	return best
}

// ---------------------------------------------------------------------------------------------
// Each game is one run of its seeker ("game-SEED"): what the seeker hands a model at each
// decision is read for the run, each attack is a decision of the run citing the claims it rests
// on, and the game's end is the run's outcome. The figures printed come from mql's run records
// (MemoryStats and Run); the ledger keeps the same quantities from what the seeker itself
// knows — which versions it wrote, which it was handed, what it cited — so the tests can check
// that the two agree.

// seekerName is the principal each seeker writes and reads as.
const seekerName = "seeker"

func runName(seed uint64) string { return fmt.Sprintf("game-%d", seed) }

// runRecord is one game's run, measured.
type runRecord struct {
	served     int // distinct claim versions served
	liveServed int // of them, live when served
	stale      int // of them, no longer live at the run's decision point
	cited      int // served versions an attack cited
	// decidedServed is served when the run made a decision (an attack), else 0: the
	// denominator of context utilization.
	decidedServed int
	result        mql.OutcomeResult
	memoryFailure bool // a failed run that was served a version stale at its decision
}

// runOf reads one game's run back from the seeker's store, as the owner.
func runOf(ctx context.Context, db *mql.DB, run string) (runRecord, error) {
	ms, err := db.MemoryStats(ctx, seekerName, time.Time{})
	if err != nil {
		return runRecord{}, err
	}
	reps, err := db.Run(ctx, run)
	if err != nil {
		return runRecord{}, err
	}
	if ms.Runs != 1 || len(reps) != 1 {
		return runRecord{}, fmt.Errorf("run %s: the store holds %d runs of the seeker and %d reports of it, want 1", run, ms.Runs, len(reps))
	}
	r := runRecord{served: ms.Served, liveServed: ms.LiveServed, stale: ms.StaleAtDecision, cited: ms.Cited,
		result: reps[0].Outcome, memoryFailure: ms.MemoryFailures == 1}
	if len(reps[0].Decisions) > 0 {
		r.decidedServed = ms.Served
	}
	return r, nil
}

// ledger is the seeker's own account of its run: every write it made to a key, every version
// it was handed, and what its decisions cited, in the order they happened.
type ledger struct {
	tick     int
	writes   map[string][]int // key → ticks of the writes that made its versions 1, 2, …
	served   map[string]int   // claim reference → tick it was first served
	cited    map[string]bool
	decision int // tick of the run's first decision, 0 before it
}

func newLedger() ledger {
	return ledger{writes: map[string][]int{}, served: map[string]int{}, cited: map[string]bool{}}
}

func (l *ledger) next() int { l.tick++; return l.tick }

// wrote notes a new version of key ("Subject.predicate").
func (l *ledger) wrote(key string) { l.writes[key] = append(l.writes[key], l.next()) }

func (l *ledger) serve(refs []string) {
	t := l.next()
	for _, ref := range refs {
		if _, ok := l.served[ref]; !ok {
			l.served[ref] = t
		}
	}
}

func (l *ledger) decide(cites []string) {
	t := l.next()
	if l.decision == 0 {
		l.decision = t
	}
	for _, c := range cites {
		l.cited[c] = true
	}
}

// close ends the run with result: its decision point is its first decision, or, when it made
// none, now.
func (l *ledger) close(result mql.OutcomeResult) runRecord {
	t := l.next()
	dp := l.decision
	if dp == 0 {
		dp = t
	}
	r := runRecord{served: len(l.served), result: result}
	for ref, at := range l.served {
		key, v, _ := strings.Cut(ref, "@")
		n, _ := strconv.Atoi(v)
		ws := l.writes[key]
		if l.cited[ref] {
			r.cited++
		}
		// Live when served: no newer version had been written. Stale at the decision: one was
		// written after it was served and before the decision point.
		if n < 1 || n > len(ws) || (n < len(ws) && ws[n] < at) {
			continue
		}
		r.liveServed++
		if n < len(ws) && ws[n] < dp {
			r.stale++
		}
	}
	if l.decision != 0 {
		r.decidedServed = r.served
	}
	r.memoryFailure = result == mql.Failed && r.stale > 0
	return r
}

// ---------------------------------------------------------------------------------------------
// The naive seeker: every signal forever, no notion of age, decide from the whole list. The
// list is kept in an mql store of its own, used as nothing more than a list: one claim per
// signal (Location.signal_tN = "positive", World.signal_tN = "disturbance"), never superseded,
// no decay; each decision reads all of it, for the game's run, and folds it in order.

type naive struct {
	g      game
	gate   [2]float64
	rng    *rand.Rand
	db     *mql.DB
	run    string
	book   ledger
	list   []observation // as read for the last decision
	header string
}

func newNaive(gate [2]float64) func(context.Context, game, uint64) (seeker, error) {
	return func(ctx context.Context, g game, seed uint64) (seeker, error) {
		db, err := mql.Open(ctx, "memory:", mql.Options{})
		if err != nil {
			return nil, err
		}
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: seekerName, Type: mql.Agent, By: db.Owner()}); err != nil {
			db.Close()
			return nil, err
		}
		return &naive{g: g, gate: gate, rng: rand.New(rand.NewPCG(seed, 0x9a1e)), db: db, run: runName(seed), book: newLedger()}, nil
	}
}

func (s *naive) close() error { return s.db.Close() }

func (s *naive) observe(ctx context.Context, o observation) error {
	subject := "World"
	if o.loc >= 0 {
		subject = locations[o.loc]
	}
	spec := mql.AssertSpec{Subject: subject, Predicate: fmt.Sprintf("signal_t%d", o.turn), Value: mql.String(o.kind), By: seekerName,
		Sources: []mql.Source{{ID: fmt.Sprintf("signal:t%d:%s", o.turn, o.kind), Excerpt: o.text()}}}
	if _, err := s.db.Assert(ctx, spec); err != nil {
		return err
	}
	s.book.wrote(spec.Subject + "." + spec.Predicate)
	return nil
}

// recall reads every signal, for the run, in the order they came: by turn, a disturbance
// (sensed at the start of a turn) before the turn's result.
func (s *naive) recall(ctx context.Context) ([]mql.Claim, error) {
	cs, err := s.db.As(seekerName).ForRun(s.run).Live(ctx, "*")
	if err != nil {
		return nil, err
	}
	s.book.serve(claimRefs(cs))
	s.list = s.list[:0]
	for _, c := range cs {
		turn, err := strconv.Atoi(strings.TrimPrefix(c.Predicate, "signal_t"))
		if err != nil {
			return nil, fmt.Errorf("naive memory: %s is not a signal", c.Ref)
		}
		s.list = append(s.list, observation{kind: c.Value.Str, loc: slices.Index(locations, c.Subject), turn: turn})
	}
	order := func(o observation) int { return 2*o.turn + min(o.loc+1, 1) }
	slices.SortStableFunc(s.list, func(a, b observation) int { return order(a) - order(b) })
	return cs, nil
}

func (s *naive) decide(ctx context.Context, turn int) (decision, error) {
	// Read the whole list, every signal with equal standing. "Something was moved" is in the
	// list too, but with no notion of age the seeker cannot tell which signals it makes stale.
	cs, err := s.recall(ctx)
	if err != nil {
		return decision{}, err
	}
	bs := make([]belief, len(locations))
	for i := range bs {
		bs[i] = belief{true, prior}
	}
	lastPos := make([]int, len(locations))
	for i := range lastPos {
		lastPos[i] = -1
	}
	size := 0 // narrative characters
	for _, o := range s.list {
		size += len(o.text()) + 1
		if o.loc >= 0 {
			bs[o.loc] = fold(s.g, bs[o.loc], o.kind)
			if o.kind == "positive" {
				lastPos[o.loc] = o.turn
			}
		}
	}
	top, pTop, _, dec := distribution(bs, s.gate)
	d := decision{branch: dec}
	d.attack, d.loc, d.onEvidence = policy(true, dec, top, pTop, func() int { return leastKnown(s.rng, bs) })
	d.evidence = lastPos[d.loc]
	s.header = fmt.Sprintf("Task: find and destroy the Horcrux. Turn %d of %d. Every signal so far:\n", turn, s.g.Turns)
	d.chars = len(s.header) + size
	d.tokens = mql.EstimateTokens(s.header) + (size+3)/4
	if d.attack {
		// The attack rests on every signal about the location; on a location no signal
		// touched, on the signals that ruled the others out.
		var cites, others []string
		for _, c := range cs {
			switch c.Subject {
			case locations[d.loc]:
				cites = append(cites, c.Ref)
			case "World":
			default:
				others = append(others, c.Ref)
			}
		}
		if len(cites) == 0 {
			cites = others
		}
		if err := decideInRun(ctx, s.db, &s.book, s.run, d.loc, cites); err != nil {
			return decision{}, err
		}
	}
	return d, nil
}

func (s *naive) lastContext() string {
	var b strings.Builder
	b.WriteString(s.header)
	for _, o := range s.list {
		b.WriteString(o.text())
		b.WriteByte('\n')
	}
	return b.String()
}

func (s *naive) finish(ctx context.Context, result mql.OutcomeResult) (mem, book runRecord, err error) {
	return finishRun(ctx, s.db, &s.book, s.run, result)
}

// decideInRun records an attack on loc as a decision of the run, citing what it rests on.
func decideInRun(ctx context.Context, db *mql.DB, l *ledger, run string, loc int, cites []string) error {
	_, err := db.Derive(ctx, mql.DeriveSpec{Artifact: "attack:" + locations[loc], From: cites, By: seekerName, Run: run})
	if err == nil {
		l.decide(cites)
	}
	return err
}

// finishRun records the run's outcome and reads the run back.
func finishRun(ctx context.Context, db *mql.DB, l *ledger, run string, result mql.OutcomeResult) (mem, book runRecord, err error) {
	if _, err := db.Outcome(ctx, mql.OutcomeSpec{Run: run, Result: result, By: seekerName}); err != nil {
		return mem, book, err
	}
	book = l.close(result)
	mem, err = runOf(ctx, db, run)
	return mem, book, err
}

func claimRefs(cs []mql.Claim) []string {
	refs := make([]string, len(cs))
	for i, c := range cs {
		refs[i] = c.Ref
	}
	return refs
}

// ---------------------------------------------------------------------------------------------
// The mql seeker: signals as observed claims with decay, supersession on relocation, and the
// entropy gate.

type mqlOpts struct {
	halfLife  time.Duration // 0: no decay
	supersede bool          // reset beliefs when a relocation is sensed
	gate      bool          // decide with the entropy gate (false: attack when p ≥ 0.5)
	bounds    [2]float64
	dir       string // keep each game's store as storeFile(dir, seed); "": memory:
}

// storeFile is where -store-dir keeps the mql seeker's memory of game seed.
func storeFile(dir string, seed uint64) string {
	return filepath.Join(dir, fmt.Sprintf("mql-game-%d.db", seed))
}

type mqlSeeker struct {
	g       game
	o       mqlOpts
	db      *mql.DB
	rng     *rand.Rand
	now     time.Time
	start   time.Time
	lastPos []int
	beliefs []belief // as read for this turn's decision
	context string   // handed to a model at the last decision
	run     string
	book    ledger
}

// rules is the source of the prior.
var rules = mql.Source{ID: "rules:hidden-uniformly", Excerpt: "The Horcrux is hidden in one of 15 locations, each equally likely."}

func newMQL(o mqlOpts) func(ctx context.Context, g game, seed uint64) (seeker, error) {
	return func(ctx context.Context, g game, seed uint64) (seeker, error) {
		s := &mqlSeeker{g: g, o: o, rng: rand.New(rand.NewPCG(seed, 0x9a1e)), lastPos: make([]int, len(locations)),
			run: runName(seed), book: newLedger()}
		for i := range s.lastPos {
			s.lastPos[i] = -1
		}
		s.start = time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
		s.now = s.start
		dsn := "memory:"
		if o.dir != "" {
			// run checked every game's file before the first game: it is new or holds
			// nothing but its genesis.
			dsn = storeFile(o.dir, seed)
		}
		db, err := mql.Open(ctx, dsn, mql.Options{Clock: func() time.Time { return s.now }})
		if err != nil {
			return nil, err
		}
		s.db = db
		if err := s.setup(ctx); err != nil {
			db.Close()
			return nil, err
		}
		return s, nil
	}
}

func (s *mqlSeeker) setup(ctx context.Context) error {
	owner := s.db.Owner()
	if _, err := s.db.AddPrincipal(ctx, mql.PrincipalSpec{Name: seekerName, Type: mql.Agent, By: owner}); err != nil {
		return err
	}
	if s.o.halfLife > 0 {
		// One turn is one simulated minute.
		if _, err := s.db.SetDecay(ctx, mql.DecaySpec{Predicate: "holds_horcrux", HalfLife: s.o.halfLife, By: owner}); err != nil {
			return err
		}
	}
	return s.reset(ctx, []mql.Source{rules}, -1)
}

// reset asserts the prior for every location but skip, on the given evidence.
func (s *mqlSeeker) reset(ctx context.Context, src []mql.Source, skip int) error {
	specs := make([]mql.AssertSpec, 0, len(locations))
	for i := range locations {
		if i != skip {
			specs = append(specs, s.spec(i, belief{true, prior}, src))
			s.lastPos[i] = -1
		}
	}
	return s.assert(ctx, specs...)
}

// assert writes specs in one transaction, and notes each new version in the ledger.
func (s *mqlSeeker) assert(ctx context.Context, specs ...mql.AssertSpec) error {
	if _, err := s.db.AssertBatch(ctx, seekerName, specs); err != nil {
		return err
	}
	for _, sp := range specs {
		s.book.wrote(sp.Subject + "." + sp.Predicate)
	}
	return nil
}

// relocated supersedes every belief held before a sensed relocation, on the evidence of that
// observation: where the target looked likely is where it no longer is (it left, and the
// adversary leaves decoys behind), and where it looked unlikely tells nothing about where it
// went, so those go back to the prior. History keeps the old claims; they are no longer live.
func (s *mqlSeeker) relocated(ctx context.Context, src []mql.Source) error {
	bs, err := s.read(ctx)
	if err != nil {
		return err
	}
	specs := make([]mql.AssertSpec, 0, len(locations))
	for i, b := range bs {
		if b.positive && b.conf > prior {
			specs = append(specs, s.spec(i, belief{false, 0.5}, src))
			s.lastPos[i] = -1
		}
	}
	if len(specs) == 0 {
		return nil
	}
	return s.assert(ctx, specs...)
}

func (s *mqlSeeker) spec(loc int, b belief, src []mql.Source) mql.AssertSpec {
	return mql.AssertSpec{Subject: locations[loc], Predicate: "holds_horcrux", Value: mql.Bool(b.positive),
		Confidence: mql.Confidence(b.conf), By: seekerName, Sources: src}
}

func (s *mqlSeeker) close() error { return s.db.Close() }

// at moves the simulated clock to the given turn (one turn is one minute).
func (s *mqlSeeker) at(turn int) { s.now = s.start.Add(time.Duration(turn) * time.Minute) }

// read returns every location's live belief, with effective (decayed) confidences.
func (s *mqlSeeker) read(ctx context.Context) ([]belief, error) {
	live, err := s.db.Live(ctx, "*.holds_horcrux")
	if err != nil {
		return nil, err
	}
	bs := make([]belief, len(locations))
	for i := range bs {
		bs[i] = belief{true, prior}
	}
	for _, c := range live {
		if i := slices.Index(locations, c.Subject); i >= 0 {
			bs[i] = belief{c.Value.Bool, c.Effective}
		}
	}
	return bs, nil
}

func (s *mqlSeeker) observe(ctx context.Context, o observation) error {
	s.at(o.turn)
	src := []mql.Source{{ID: fmt.Sprintf("signal:t%d:%s", o.turn, o.kind), Excerpt: o.text()}}
	if o.kind == "disturbance" {
		if !s.o.supersede {
			return nil
		}
		return s.relocated(ctx, src)
	}
	bs := s.beliefs
	if bs == nil {
		var err error
		if bs, err = s.read(ctx); err != nil {
			return err
		}
	}
	s.beliefs = nil
	nb := fold(s.g, bs[o.loc], o.kind)
	if o.kind == "positive" {
		s.lastPos[o.loc] = o.turn
	} else if !nb.positive {
		s.lastPos[o.loc] = -1
	}
	return s.assert(ctx, s.spec(o.loc, nb, src))
}

func (s *mqlSeeker) decide(ctx context.Context, turn int) (decision, error) {
	s.at(turn)
	bs, err := s.read(ctx)
	if err != nil {
		return decision{}, err
	}
	// Forget what has decayed away: a positive belief that fell to half the prior, or a
	// negative one whose certainty fell below forgetBelow, goes back to the prior (so does the
	// prior itself, which decays like every claim of the predicate).
	var forget []mql.AssertSpec
	for i, b := range bs {
		if (b.positive && b.conf < prior/2) || (!b.positive && b.conf < forgetBelow) {
			bs[i] = belief{true, prior}
			forget = append(forget, s.spec(i, bs[i], []mql.Source{rules}))
			s.lastPos[i] = -1
		}
	}
	if len(forget) > 0 {
		if err := s.assert(ctx, forget...); err != nil {
			return decision{}, err
		}
	}
	s.beliefs = bs
	gate := s.o.bounds
	b, err := s.db.Beliefs(ctx, "*.holds_horcrux", &gate)
	if err != nil {
		return decision{}, err
	}
	top, pTop := slices.Index(locations, b.Top), 0.0
	if len(b.Candidates) > 0 {
		pTop = b.Candidates[0].Probability
	}
	d := decision{branch: b.Decision}
	d.attack, d.loc, d.onEvidence = policy(s.o.gate, b.Decision, top, pTop, func() int { return leastKnown(s.rng, bs) })
	d.evidence = s.lastPos[d.loc]
	// What a model would be handed: the gate's summary and the top candidates' live claims.
	var subjects []string
	for _, c := range b.Candidates {
		if len(subjects) == 5 {
			break
		}
		subjects = append(subjects, c.Subject)
	}
	header := fmt.Sprintf("Task: find and destroy the Horcrux. Turn %d of %d. Entropy %.2f bits, gate says %s.\n", turn, s.g.Turns, b.Entropy, b.Decision)
	s.context = header
	if len(subjects) > 0 {
		// Read for the game's run: the run records what the model was handed.
		cx, err := s.db.As(seekerName).ForRun(s.run).Context(ctx, subjects, 80)
		if err != nil {
			return decision{}, err
		}
		s.book.serve(cx.Refs)
		s.context += cx.Text
	}
	d.chars, d.tokens = len(s.context), mql.EstimateTokens(s.context)
	if d.attack {
		// The attack rests on the belief in the top location.
		if err := decideInRun(ctx, s.db, &s.book, s.run, d.loc, []string{b.Candidates[0].Claim.Ref}); err != nil {
			return decision{}, err
		}
	}
	return d, nil
}

func (s *mqlSeeker) lastContext() string { return s.context }

func (s *mqlSeeker) finish(ctx context.Context, result mql.OutcomeResult) (mem, book runRecord, err error) {
	return finishRun(ctx, s.db, &s.book, s.run, result)
}

// ---------------------------------------------------------------------------------------------
// Running arms and reporting.

type armResult struct {
	name     string
	games    int
	wins     int
	turns    int // turns played, summed
	decide   int
	attacks  int
	stale    int
	staleAtt int
	branches map[string]int
	chars    int
	tokens   int
	maxTok   int
	relocs   int
	elapsed  time.Duration
	// runs are the games' runs as mql's run records measure them, one per game in seed
	// order; books the same from the seekers' ledgers.
	runs, books []runRecord
}

func (r armResult) winRate() float64 { return float64(r.wins) / float64(r.games) }

// estimate is a rate with its 95% interval.
type estimate struct {
	k, n   int // the rate is k/n
	lo, hi float64
}

func (e estimate) rate() float64 {
	if e.n == 0 {
		return 0
	}
	return float64(e.k) / float64(e.n)
}

func (e estimate) String() string {
	return fmt.Sprintf("%s (%.1f–%.1f%%)", pct(e.rate()), 100*e.lo, 100*e.hi)
}

// staleMemory is mql's stale-memory rate over the arm's runs: served versions no longer live
// at their run's decision ÷ served versions that were live when served.
func (r armResult) staleMemory() estimate {
	return ratioOverRuns(r.runs, func(x runRecord) (int, int) { return x.stale, x.liveServed })
}

// utilization is mql's context utilization: served versions an attack cited ÷ versions
// served, over the runs that attacked.
func (r armResult) utilization() estimate {
	return ratioOverRuns(r.runs, func(x runRecord) (int, int) { return x.cited, x.decidedServed })
}

// declineRate is the share of runs that ended declined (lost, the gate's last word decline).
func (r armResult) declineRate() estimate {
	e := estimate{n: len(r.runs)}
	for _, x := range r.runs {
		if x.result == mql.Declined {
			e.k++
		}
	}
	e.lo, e.hi = wilson(e.k, e.n)
	return e
}

// memoryFailures is the share of failed runs that were memory failures (served a version
// stale at their decision); the rest failed downstream of the memory.
func (r armResult) memoryFailures() estimate {
	var e estimate
	for _, x := range r.runs {
		if x.result == mql.Failed {
			e.n++
			if x.memoryFailure {
				e.k++
			}
		}
	}
	e.lo, e.hi = wilson(e.k, e.n)
	return e
}

// ratioOverRuns pools k and n over runs into k/n. The versions of one run are not independent
// trials, so the interval is not Wilson's over versions (far too narrow) but the ratio
// estimator's over runs: the delta method, with the run as the unit.
func ratioOverRuns(runs []runRecord, kn func(runRecord) (int, int)) estimate {
	var e estimate
	for _, x := range runs {
		k, n := kn(x)
		e.k += k
		e.n += n
	}
	m := len(runs)
	if e.n == 0 || m < 2 {
		e.lo, e.hi = 0, 1
		return e
	}
	rate := e.rate()
	ss := 0.0
	for _, x := range runs {
		k, n := kn(x)
		d := float64(k) - rate*float64(n)
		ss += d * d
	}
	const z = 1.959964
	se := math.Sqrt(ss*float64(m)/float64(m-1)) / float64(e.n)
	return estimate{k: e.k, n: e.n, lo: math.Max(0, rate-z*se), hi: math.Min(1, rate+z*se)}
}

// wilson is the 95% Wilson score interval of k successes in n trials.
func wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959964
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}

// runArm plays games seeded base, base+1, … on every core.
func runArm(ctx context.Context, g game, a arm, games int, base uint64) (armResult, error) {
	start := time.Now()
	res := armResult{name: a.name, games: games, branches: map[string]int{}}
	outs := make([]outcome, games)
	errs := make([]error, games)
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				seed := base + uint64(i)
				s, err := a.new(ctx, g, seed)
				if err != nil {
					errs[i] = err
					continue
				}
				outs[i], errs[i] = play(ctx, g, seed, s)
				if err := s.close(); err != nil && errs[i] == nil {
					errs[i] = err
				}
			}
		}()
	}
	for i := range games {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	for i, err := range errs {
		if err != nil {
			return res, fmt.Errorf("%s, game seed %d: %w", a.name, base+uint64(i), err)
		}
	}
	for _, o := range outs {
		if o.won {
			res.wins++
		}
		res.turns += o.turns
		res.decide += o.decisions
		res.attacks += o.attacks
		res.stale += o.stale
		res.staleAtt += o.staleAtt
		for k, v := range o.branches {
			res.branches[k] += v
		}
		res.chars += o.chars
		res.tokens += o.tokens
		res.maxTok = max(res.maxTok, o.maxTokens)
		res.relocs += o.relocs
		res.runs = append(res.runs, o.mem)
		res.books = append(res.books, o.book)
	}
	res.elapsed = time.Since(start)
	return res, nil
}

// report is everything the program measured.
type report struct {
	game       game
	games      int
	opts       mqlOpts
	naive      armResult
	mql        armResult
	aa         [2]armResult
	ablations  []armResult
	sample     [2]string // a model's context at one decision: mql, naive
	sampleAt   int
	sampleSeed uint64
}

func (a armResult) staleRate() float64 { return float64(a.stale) / float64(a.decide) }

func (a armResult) share(branch string) float64 {
	return float64(a.branches[branch]) / float64(a.decide)
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// Limits of the flags: what fits the game's 15 locations and 50 turns, and a run that ends within
// about four hours on two cores (a game takes ~19 ms of CPU per arm, and a run plays eight arms).
const (
	maxGames    = 100_000
	maxHalfLife = 100_000 // turns; far beyond a game's 50, so as good as no decay
	// maxDecoys leaves the target a location to move to that holds no decoy: with a decoy in
	// each of the other 14, a relocation would look for one for ever.
	maxDecoys = 13
	// minFalsePositive keeps the likelihood ratios of a signal finite.
	minFalsePositive = 0.0001
)

// maxGateBits bounds the gate: a belief over 15 locations has at most log2(15) ≈ 3.91 bits of
// entropy (every location equally likely), so a bound of 4 is never crossed.
const maxGateBits = 4

// config is what the command line asked for.
type config struct {
	games    int
	seed     uint64
	halfLife int
	low      float64
	high     float64
	ablate   bool
	storeDir string
	game     game
}

// parse reads and checks the command line; a value out of range is refused with its flag, its
// value and the range.
func parse(args []string, stderr io.Writer) (config, error) {
	flags := flag.NewFlagSet("horcrux", flag.ContinueOnError)
	flags.SetOutput(stderr)
	c := config{game: defaultGame}
	g := &c.game
	flags.IntVar(&c.games, "games", 300, fmt.Sprintf("seeded games per arm, 1 to %d", maxGames))
	flags.Uint64Var(&c.seed, "seed", 1, "first game seed, any 64-bit unsigned integer; the A/A run's second arm starts at seed+1000000")
	flags.IntVar(&c.halfLife, "half-life", 12, fmt.Sprintf("decay half-life of holds_horcrux in turns (one turn = one simulated minute), 0 (no decay) to %d", maxHalfLife))
	flags.Float64Var(&c.low, "gate-low", 2.0, fmt.Sprintf("entropy (bits) at or below which the gate says act, 0 to %d and at most -gate-high (15 locations have at most 3.91 bits)", maxGateBits))
	flags.Float64Var(&c.high, "gate-high", 3.0, fmt.Sprintf("entropy (bits) at or below which the gate says retrieve; above it, decline; -gate-low to %d", maxGateBits))
	flags.BoolVar(&c.ablate, "ablations", true, "also run the mql design with one part removed at a time")
	flags.StringVar(&c.storeDir, "store-dir", "", "keep each mql game's memory as the bbolt file mql-game-SEED.db in this directory, created if missing;\n"+
		"every such file must be new or hold nothing but its genesis, and nothing is deleted (default: memory: stores)")
	flags.IntVar(&g.MaxRelocations, "relocations", g.MaxRelocations, fmt.Sprintf("most relocations per game, 0 to %d (one a turn)", g.Turns))
	flags.Float64Var(&g.RelocateProb, "relocate-prob", g.RelocateProb, "chance the adversary relocates when a search finds the target, 0 to 1")
	flags.Float64Var(&g.WanderProb, "wander-prob", g.WanderProb, "chance per turn the adversary relocates anyway, 0 to 1")
	flags.IntVar(&g.Cooldown, "cooldown", g.Cooldown, fmt.Sprintf("turns between relocations, 0 to %d", g.Turns))
	flags.Float64Var(&g.AnnounceProb, "announce-prob", g.AnnounceProb, "chance the seeker senses a relocation, 0 to 1")
	flags.Float64Var(&g.PTarget, "true-positive", g.PTarget, "chance a search of the target's (or a decoy's) location reports positive, 0 to 1")
	flags.Float64Var(&g.PEmpty, "false-positive", g.PEmpty, fmt.Sprintf("chance a search of an empty location reports positive, %g to %g (0 or 1 would make one signal proof)", minFalsePositive, 1-minFalsePositive))
	flags.IntVar(&g.MaxDecoys, "decoys", g.MaxDecoys, fmt.Sprintf("most decoys per game, 0 to %d (the target needs a free location to move to)", maxDecoys))
	if err := exflag.Parse(flags, args); err != nil {
		return c, err
	}
	g.PDecoy = g.PTarget
	var check exflag.Check
	check.Int("games", c.games, 1, maxGames, "games")
	check.Int("half-life", c.halfLife, 0, maxHalfLife, "turns")
	check.Float("gate-low", c.low, 0, maxGateBits, "bits")
	check.Float("gate-high", c.high, 0, maxGateBits, "bits")
	if c.low > c.high {
		check.Failf("-gate-low %g is above -gate-high %g: the gate acts at or below -gate-low and retrieves up to -gate-high", c.low, c.high)
	}
	check.Int("relocations", g.MaxRelocations, 0, g.Turns, "relocations")
	check.Prob("relocate-prob", g.RelocateProb)
	check.Prob("wander-prob", g.WanderProb)
	check.Int("cooldown", g.Cooldown, 0, g.Turns, "turns")
	check.Prob("announce-prob", g.AnnounceProb)
	check.Prob("true-positive", g.PTarget)
	check.Float("false-positive", g.PEmpty, minFalsePositive, 1-minFalsePositive, "(a probability)")
	check.Int("decoys", g.MaxDecoys, 0, maxDecoys, "decoys")
	return c, check.Err()
}

// prepareStoreDir refuses a -store-dir that is not a directory, or in which a game's file exists
// and is anything but an mql store holding nothing but its genesis, before any game is played;
// then it creates the directory if it is missing.
func prepareStoreDir(ctx context.Context, dir string, seed uint64, games int) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case !fi.IsDir():
		return exflag.Usagef("-store-dir %s: it is not a directory", dir)
	}
	for i := range games {
		path := storeFile(dir, seed+uint64(i))
		if _, err := exstore.Check(ctx, path, exstore.Policy{}); err != nil {
			return fmt.Errorf("-store-dir %s: %s: %w", dir, filepath.Base(path), err)
		}
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	opts := mqlOpts{halfLife: time.Duration(c.halfLife) * time.Minute, supersede: true, gate: true, bounds: [2]float64{c.low, c.high}, dir: c.storeDir}
	if c.storeDir != "" {
		if err := prepareStoreDir(ctx, c.storeDir, c.seed, c.games); err != nil {
			return err
		}
	}
	rep, err := measure(ctx, c.game, c.games, c.seed, opts, c.ablate)
	if err != nil {
		return err
	}
	rep.print(stdout)
	return nil
}

func measure(ctx context.Context, g game, games int, seed uint64, full mqlOpts, ablate bool) (report, error) {
	rep := report{game: g, games: games, opts: full}
	var err error
	if rep.naive, err = runArm(ctx, g, arm{"naive", newNaive(full.bounds)}, games, seed); err != nil {
		return rep, err
	}
	if rep.mql, err = runArm(ctx, g, arm{"mql", newMQL(full)}, games, seed); err != nil {
		return rep, err
	}
	// A/A: the same mql arm on other seeds; the gap between the two is the noise floor.
	rep.aa[0] = rep.mql
	rep.aa[0].name = fmt.Sprintf("mql, seeds %d…", seed)
	noStore := full
	noStore.dir = ""
	if rep.aa[1], err = runArm(ctx, g, arm{fmt.Sprintf("mql, seeds %d…", seed+1_000_000), newMQL(noStore)}, games, seed+1_000_000); err != nil {
		return rep, err
	}
	if ablate {
		noDecay, noSup, noGate, defGate := noStore, noStore, noStore, noStore
		noDecay.halfLife, noSup.supersede, noGate.gate, defGate.bounds = 0, false, false, mql.DefaultGate
		for _, a := range []arm{
			{"mql without decay", newMQL(noDecay)},
			{"mql without supersession", newMQL(noSup)},
			{"mql without the gate (attack at p ≥ 0.5)", newMQL(noGate)},
			{fmt.Sprintf("mql, default gate %.1f/%.1f", mql.DefaultGate[0], mql.DefaultGate[1]), newMQL(defGate)},
			{fmt.Sprintf("naive, default gate %.1f/%.1f", mql.DefaultGate[0], mql.DefaultGate[1]), newNaive(mql.DefaultGate)},
		} {
			r, err := runArm(ctx, g, a, games, seed)
			if err != nil {
				return rep, err
			}
			rep.ablations = append(rep.ablations, r)
		}
	}
	rep.sampleAt, rep.sample, err = sampleContexts(ctx, g, noStore, seed)
	rep.sampleSeed = seed
	return rep, err
}

// capture records a seeker's context at its first decision that matches want.
type capture struct {
	seeker
	want func(turn int, d decision) bool
	turn int
	text string
}

func (c *capture) decide(ctx context.Context, turn int) (decision, error) {
	d, err := c.seeker.decide(ctx, turn)
	if err == nil && c.text == "" && c.want(turn, d) {
		c.turn, c.text = turn, c.seeker.lastContext()
	}
	return d, err
}

// sampleContexts replays game seed with both seekers and returns what each would hand a model
// at the mql seeker's first decision to attack after turn 10 (or at turn 20 if there is none).
func sampleContexts(ctx context.Context, g game, o mqlOpts, seed uint64) (turn int, out [2]string, err error) {
	m, err := newMQL(o)(ctx, g, seed)
	if err != nil {
		return 0, out, err
	}
	defer m.close()
	c := &capture{seeker: m, want: func(t int, d decision) bool { return t > 10 && d.attack }}
	if _, err := play(ctx, g, seed, c); err != nil {
		return 0, out, err
	}
	if c.text == "" {
		m2, err := newMQL(o)(ctx, g, seed)
		if err != nil {
			return 0, out, err
		}
		defer m2.close()
		c = &capture{seeker: m2, want: func(t int, _ decision) bool { return t == 20 }}
		if _, err := play(ctx, g, seed, c); err != nil {
			return 0, out, err
		}
	}
	n, _ := newNaive(o.bounds)(ctx, g, seed)
	cn := &capture{seeker: n, want: func(t int, _ decision) bool { return t == c.turn }}
	if _, err := play(ctx, g, seed, cn); err != nil {
		return 0, out, err
	}
	return c.turn, [2]string{c.text, cn.text}, nil
}

func (r report) print(w io.Writer) {
	g := r.game
	fmt.Fprintf(w, "Horcrux Hunt: %d locations, %d turns, %d seeded games per arm (one turn = one simulated minute).\n", len(locations), g.Turns, r.games)
	fmt.Fprintf(w, "A search reports positive %.0f%% of the time at the target or a decoy, %.0f%% at an empty location.\n", 100*g.PTarget, 100*g.PEmpty)
	fmt.Fprintf(w, "The adversary relocates the target right after a search finds it (p=%.1f) or at random (p=%.2f a turn), at most\n", g.RelocateProb, g.WanderProb)
	fmt.Fprintf(w, "%d times, %d turns apart, leaving a decoy behind; the seeker senses a relocation with p=%.1f. Decoys (at most %d)\n", g.MaxRelocations, g.Cooldown, g.AnnounceProb, g.MaxDecoys)
	fmt.Fprintf(w, "are also planted where a search just gave a false positive (p=%.1f).\n", g.DecoyOnFalsePositive)
	fmt.Fprintf(w, "Both seekers fold signals by the same rule and decide with the same gate (%.1f/%.1f bits); mql adds decay\n", r.opts.bounds[0], r.opts.bounds[1])
	fmt.Fprintf(w, "(half-life %s), forgetting, and supersession on a sensed relocation.\n\n", fmtHalfLife(r.opts.halfLife))

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\twins\twin rate (95% CI)\tstale decisions\tattacks/game\tctx tokens/decision\tmax ctx tokens\tact / retrieve / decline")
	row := func(a armResult) {
		lo, hi := wilson(a.wins, a.games)
		fmt.Fprintf(tw, "%s\t%d/%d\t%s (%.1f–%.1f%%)\t%s\t%.1f\t%.0f\t%d\t%s / %s / %s\n", a.name, a.wins, a.games, pct(a.winRate()), 100*lo, 100*hi,
			pct(a.staleRate()), float64(a.attacks)/float64(a.games), float64(a.tokens)/float64(a.decide), a.maxTok,
			pct(a.share(mql.Act)), pct(a.share(mql.Retrieve)), pct(a.share(mql.Decline)))
	}
	row(r.naive)
	row(r.mql)
	tw.Flush()
	fmt.Fprintln(w, "stale decision: an attack or re-check picked for positive signals that all predate the target's last relocation.")
	fmt.Fprintln(w, "act: attack the top location; retrieve: search it first; decline: explore the least-known location.")

	fmt.Fprintf(w, "\nMemory, from mql's run records (each game is one run; 95%% intervals):\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "arm\tstale memory\tcontext utilization\tdeclined runs\tfailed runs: memory / downstream")
	for _, a := range []armResult{r.naive, r.mql, r.aa[1]} {
		mf := a.memoryFailures()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d / %d, memory %s\n", a.name, a.staleMemory(), a.utilization(), a.declineRate(), mf.k, mf.n-mf.k, mf)
	}
	tw.Flush()
	fmt.Fprintln(w, "stale memory: served versions no longer live at the run's decision (its first attack, else its end) ÷ versions served live.")
	fmt.Fprintln(w, "context utilization: served versions an attack cited ÷ versions served. declined: lost, the gate's last word decline.")
	fmt.Fprintln(w, "memory failure: a failed run served a version stale at its decision; downstream: everything it was served was live then.")

	gap := math.Abs(r.aa[0].winRate() - r.aa[1].winRate())
	diff := r.mql.winRate() - r.naive.winRate()
	fmt.Fprintf(w, "\nA/A (same arm, other seeds): %s %s vs %s %s, gap %.1f points. mql − naive: %+.1f points.\n",
		r.aa[0].name, pct(r.aa[0].winRate()), r.aa[1].name, pct(r.aa[1].winRate()), 100*gap, 100*diff)

	if len(r.ablations) > 0 {
		fmt.Fprintln(w, "\nAblations (same seeds as the mql arm):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "arm\twin rate (95% CI)\tstale decisions\tattacks/game\tstale memory\tdeclined runs")
		for _, a := range append([]armResult{r.mql}, r.ablations...) {
			lo, hi := wilson(a.wins, a.games)
			fmt.Fprintf(tw, "%s\t%s (%.1f–%.1f%%)\t%s\t%.1f\t%s\t%s\n", a.name, pct(a.winRate()), 100*lo, 100*hi, pct(a.staleRate()), float64(a.attacks)/float64(a.games),
				pct(a.staleMemory().rate()), pct(a.declineRate().rate()))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "\nRelocations per game: %.2f (naive), %.2f (mql).\n", float64(r.naive.relocs)/float64(r.games), float64(r.mql.relocs)/float64(r.games))
	fmt.Fprintf(w, "\nWhat each seeker would hand a model at turn %d of game %d (the mql seeker's first attack after turn 10):\n", r.sampleAt, r.sampleSeed)
	fmt.Fprintf(w, "-- mql (%d chars) --\n%s", len(r.sample[0]), r.sample[0])
	lines := strings.Split(strings.TrimRight(r.sample[1], "\n"), "\n")
	fmt.Fprintf(w, "-- naive (%d chars, %d lines; first 2 and last 2) --\n", len(r.sample[1]), len(lines))
	for i, l := range lines {
		if i < 2 || i >= len(lines)-2 {
			fmt.Fprintln(w, l)
		} else if i == 2 {
			fmt.Fprintln(w, "…")
		}
	}
}

func fmtHalfLife(d time.Duration) string {
	if d == 0 {
		return "none"
	}
	return fmt.Sprintf("%.0f turns", d.Minutes())
}
