// Command horcrux replays the Horcrux Hunt memory stress test: a seeker hunts a hidden target
// across 15 locations for 50 turns while an adversary relocates it, plants decoys where the
// seeker is looking and times its moves for right after the seeker commits.
//
// Two seekers play the same seeded games. Both fold a signal into a location's belief by the
// same likelihood rule and decide with the same entropy gate — act (attack the top location),
// retrieve (search it first) or decline (explore the least-known location instead of
// attacking). They differ only in memory:
//
//   - naive keeps every signal forever, with no notion of age, and decides from the whole list;
//   - mql stores each signal as an observed claim `Location.holds_horcrux` with a confidence,
//     lets the predicate decay with a half-life (forgetting what decayed away), supersedes its
//     beliefs when it senses a relocation, and decides with `beliefs *.holds_horcrux`.
//
// It prints win rates with 95% Wilson intervals, the share of decisions made on stale signals,
// the context each seeker would hand a model, the gate's branches, ablations of the mql design
// and an A/A run (the same arm twice, different seeds) that shows the noise floor.
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
}

// play runs one seeded game.
func play(ctx context.Context, g game, seed uint64, s seeker) (outcome, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := outcome{branches: map[string]int{}}
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
			if err := s.observe(ctx, observation{kind: "disturbance", loc: -1, turn: turn}); err != nil {
				return out, err
			}
		}
		d, err := s.decide(ctx, turn)
		if err != nil {
			return out, err
		}
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
				return out, nil
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
		if err := s.observe(ctx, o); err != nil {
			return out, err
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
	return out, nil
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
// The naive seeker: every signal forever, no notion of age, decide from the whole list.

type naive struct {
	g       game
	gate    [2]float64
	rng     *rand.Rand
	list    []observation
	lastPos []int
	size    int // narrative characters
	header  string
}

func newNaive(gate [2]float64) func(context.Context, game, uint64) (seeker, error) {
	return func(_ context.Context, g game, seed uint64) (seeker, error) {
		s := &naive{g: g, gate: gate, rng: rand.New(rand.NewPCG(seed, 0x9a1e)), lastPos: make([]int, len(locations))}
		for i := range s.lastPos {
			s.lastPos[i] = -1
		}
		return s, nil
	}
}

func (s *naive) close() error { return nil }

func (s *naive) observe(_ context.Context, o observation) error {
	s.list = append(s.list, o)
	s.size += len(o.text()) + 1
	if o.kind == "positive" {
		s.lastPos[o.loc] = o.turn
	}
	return nil
}

func (s *naive) decide(_ context.Context, turn int) (decision, error) {
	// Read the whole list, every signal with equal standing. "Something was moved" is in the
	// list too, but with no notion of age the seeker cannot tell which signals it makes stale.
	bs := make([]belief, len(locations))
	for i := range bs {
		bs[i] = belief{true, prior}
	}
	for _, o := range s.list {
		if o.loc >= 0 {
			bs[o.loc] = fold(s.g, bs[o.loc], o.kind)
		}
	}
	top, pTop, _, dec := distribution(bs, s.gate)
	d := decision{branch: dec}
	d.attack, d.loc, d.onEvidence = policy(true, dec, top, pTop, func() int { return leastKnown(s.rng, bs) })
	d.evidence = s.lastPos[d.loc]
	s.header = fmt.Sprintf("Task: find and destroy the Horcrux. Turn %d of %d. Every signal so far:\n", turn, s.g.Turns)
	d.chars = len(s.header) + s.size
	d.tokens = mql.EstimateTokens(s.header) + (s.size+3)/4
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
}

// rules is the source of the prior.
var rules = mql.Source{ID: "rules:hidden-uniformly", Excerpt: "The Horcrux is hidden in one of 15 locations, each equally likely."}

func newMQL(o mqlOpts) func(ctx context.Context, g game, seed uint64) (seeker, error) {
	return func(ctx context.Context, g game, seed uint64) (seeker, error) {
		s := &mqlSeeker{g: g, o: o, rng: rand.New(rand.NewPCG(seed, 0x9a1e)), lastPos: make([]int, len(locations))}
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
	if _, err := s.db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "seeker", Type: mql.Agent, By: owner}); err != nil {
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
	_, err := s.db.AssertBatch(ctx, "seeker", specs)
	return err
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
	_, err = s.db.AssertBatch(ctx, "seeker", specs)
	return err
}

func (s *mqlSeeker) spec(loc int, b belief, src []mql.Source) mql.AssertSpec {
	return mql.AssertSpec{Subject: locations[loc], Predicate: "holds_horcrux", Value: mql.Bool(b.positive),
		Confidence: mql.Confidence(b.conf), By: "seeker", Sources: src}
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
	_, err := s.db.Assert(ctx, s.spec(o.loc, nb, src))
	return err
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
		if _, err := s.db.AssertBatch(ctx, "seeker", forget); err != nil {
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
		cx, err := s.db.Context(ctx, subjects, 80)
		if err != nil {
			return decision{}, err
		}
		s.context += cx.Text
	}
	d.chars, d.tokens = len(s.context), mql.EstimateTokens(s.context)
	return d, nil
}

func (s *mqlSeeker) lastContext() string { return s.context }

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
}

func (r armResult) winRate() float64 { return float64(r.wins) / float64(r.games) }

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
// about two hours on two cores (a game takes ~8 ms per arm, and a run plays eight arms).
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

	gap := math.Abs(r.aa[0].winRate() - r.aa[1].winRate())
	diff := r.mql.winRate() - r.naive.winRate()
	fmt.Fprintf(w, "\nA/A (same arm, other seeds): %s %s vs %s %s, gap %.1f points. mql − naive: %+.1f points.\n",
		r.aa[0].name, pct(r.aa[0].winRate()), r.aa[1].name, pct(r.aa[1].winRate()), 100*gap, 100*diff)

	if len(r.ablations) > 0 {
		fmt.Fprintln(w, "\nAblations (same seeds as the mql arm):")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "arm\twin rate (95% CI)\tstale decisions\tattacks/game")
		for _, a := range append([]armResult{r.mql}, r.ablations...) {
			lo, hi := wilson(a.wins, a.games)
			fmt.Fprintf(tw, "%s\t%s (%.1f–%.1f%%)\t%s\t%.1f\n", a.name, pct(a.winRate()), 100*lo, 100*hi, pct(a.staleRate()), float64(a.attacks)/float64(a.games))
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
