package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

func fullOpts() mqlOpts {
	return mqlOpts{halfLife: 12 * time.Minute, supersede: true, gate: true, bounds: [2]float64{2, 3}}
}

// The acceptance test: over seeded games, mql's win rate beats naive's by more than the
// A/A gap (two identical mql arms on different seeds), and it decides on stale signals less.
func TestMQLBeatsNaiveBeyondNoiseFloor(t *testing.T) {
	games := 200
	if raceEnabled || testing.Short() {
		games = 100
	}
	rep, err := measure(context.Background(), defaultGame, games, 1, fullOpts(), false)
	if err != nil {
		t.Fatal(err)
	}
	gap := math.Abs(rep.aa[0].winRate() - rep.aa[1].winRate())
	diff := rep.mql.winRate() - rep.naive.winRate()
	t.Logf("%d games: naive %.1f%%, mql %.1f%%, A/A gap %.1f points; stale naive %.1f%%, mql %.1f%%",
		games, 100*rep.naive.winRate(), 100*rep.mql.winRate(), 100*gap, 100*rep.naive.staleRate(), 100*rep.mql.staleRate())
	if diff <= gap {
		t.Errorf("mql − naive = %.1f points, not beyond the A/A gap of %.1f points", 100*diff, 100*gap)
	}
	if rep.mql.staleRate() >= rep.naive.staleRate() {
		t.Errorf("stale-decision rate: mql %.2f%% ≥ naive %.2f%%", 100*rep.mql.staleRate(), 100*rep.naive.staleRate())
	}
	// The compact context stays small and flat; the narrative grows with the game.
	if rep.mql.maxTok >= rep.naive.maxTok/4 {
		t.Errorf("max context tokens: mql %d, naive %d; want mql well under naive", rep.mql.maxTok, rep.naive.maxTok)
	}
	// Every gate branch is used.
	for _, b := range []string{mql.Act, mql.Retrieve, mql.Decline} {
		if rep.mql.branches[b] == 0 {
			t.Errorf("gate branch %s never taken", b)
		}
	}
}

// Games are reproducible: the same seed gives the same game, whichever goroutine plays it.
func TestDeterministic(t *testing.T) {
	ctx := context.Background()
	a, err := runArm(ctx, defaultGame, arm{"mql", newMQL(fullOpts())}, 6, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runArm(ctx, defaultGame, arm{"mql", newMQL(fullOpts())}, 6, 42)
	if err != nil {
		t.Fatal(err)
	}
	if a.wins != b.wins || a.turns != b.turns || a.stale != b.stale || a.tokens != b.tokens {
		t.Errorf("same seeds, different results: %+v vs %+v", a, b)
	}
}

// The mql seeker's memory is an audit trail: a sensed relocation supersedes what it believed,
// and why shows the superseded version with its own source.
func TestRelocationSupersedes(t *testing.T) {
	ctx := context.Background()
	s, err := newMQL(fullOpts())(ctx, defaultGame, 1)
	if err != nil {
		t.Fatal(err)
	}
	m := s.(*mqlSeeker)
	defer m.close()
	hog := 0 // Hogwarts
	for turn, kind := range []string{"positive", "positive"} {
		if _, err := m.decide(ctx, turn+1); err != nil {
			t.Fatal(err)
		}
		if err := m.observe(ctx, observation{kind: kind, loc: hog, turn: turn + 1}); err != nil {
			t.Fatal(err)
		}
	}
	live, err := m.db.Live(ctx, "Hogwarts.holds_horcrux")
	if err != nil || len(live) != 1 || !live[0].Value.Bool || live[0].Confidence <= prior {
		t.Fatalf("after two positives: %+v, %v", live, err)
	}
	if err := m.observe(ctx, observation{kind: "disturbance", loc: -1, turn: 3}); err != nil {
		t.Fatal(err)
	}
	why, err := m.db.Why(ctx, "Hogwarts.holds_horcrux")
	if err != nil {
		t.Fatal(err)
	}
	if why.Claim.Value.Bool || why.Claim.Sources[0].ID != "signal:t3:disturbance" {
		t.Errorf("live claim after the disturbance: %+v", why.Claim)
	}
	var sup *mql.Node
	for _, c := range why.Children {
		if c.Relation == "supersedes" {
			sup = c
		}
	}
	if sup == nil || !sup.Claim.Value.Bool || sup.Claim.Sources[0].ID != "signal:t2:positive" {
		t.Fatalf("why does not show the superseded positive belief: %+v", why)
	}
	// Decay: the same claim read later has lower effective confidence.
	m.at(3 + 12)
	later, _ := m.db.Live(ctx, "Hogwarts.holds_horcrux")
	if got, want := later[0].Effective, later[0].Confidence/2; math.Abs(got-want) > 1e-9 {
		t.Errorf("effective confidence one half-life later = %v, want %v", got, want)
	}
}

func TestWilson(t *testing.T) {
	lo, hi := wilson(50, 100)
	if math.Abs(lo-0.4038) > 1e-3 || math.Abs(hi-0.5962) > 1e-3 {
		t.Errorf("wilson(50,100) = %.4f–%.4f", lo, hi)
	}
	if lo, hi := wilson(0, 10); lo != 0 || hi < 0.27 || hi > 0.28 {
		t.Errorf("wilson(0,10) = %.4f–%.4f", lo, hi)
	}
}

func TestRunPrintsTables(t *testing.T) {
	var out bytes.Buffer
	args := []string{"-games", "2", "-store-dir", t.TempDir()}
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"win rate (95% CI)", "naive", "mql without decay", "A/A", "act / retrieve / decline", "-- mql ("} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(context.Background(), []string{"-games", "0"}, &out); err == nil {
		t.Error("-games 0 accepted")
	}
}
