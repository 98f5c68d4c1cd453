package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/examples/internal/exflag"
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
	if a.wins != b.wins || a.turns != b.turns || a.stale != b.stale || a.tokens != b.tokens || !slices.Equal(a.runs, b.runs) {
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

// The memory figures come from mql's run records; each seeker's ledger keeps the same
// quantities from what it knows itself (what it wrote, was handed and cited). Game by game, in
// every arm, the two agree — and between them the arms exercise every branch of the metrics.
func TestRunRecordsAgreeWithTheSeekersLedger(t *testing.T) {
	games := 16
	if raceEnabled || testing.Short() {
		games = 4
	}
	ctx := context.Background()
	noSup, noDecay, noGate := fullOpts(), fullOpts(), fullOpts()
	noSup.supersede, noDecay.halfLife, noGate.gate = false, 0, false
	seen := map[string]int{}
	for _, a := range []arm{
		{"naive", newNaive(fullOpts().bounds)},
		{"mql", newMQL(fullOpts())},
		{"mql without supersession", newMQL(noSup)},
		{"mql without decay", newMQL(noDecay)},
		{"mql without the gate", newMQL(noGate)},
	} {
		res, err := runArm(ctx, defaultGame, a, games, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i, mem := range res.runs {
			if book := res.books[i]; mem != book {
				t.Errorf("%s, game %d: mql's run records say %+v, the seeker's ledger %+v", a.name, 1+i, mem, book)
			}
			if mem.served == 0 || mem.result == "" {
				t.Errorf("%s, game %d: the run recorded nothing: %+v", a.name, 1+i, mem)
			}
			seen[string(mem.result)]++
			if mem.stale > 0 {
				seen["stale"]++
			}
			if mem.cited > 0 {
				seen["cited"]++
			}
			if mem.decidedServed == 0 {
				seen["no decision"]++
			}
			if mem.result == mql.Failed && mem.memoryFailure {
				seen["memory failure"]++
			}
			if mem.result == mql.Failed && !mem.memoryFailure {
				seen["downstream failure"]++
			}
		}
	}
	t.Logf("%d games per arm: %v", games, seen)
	for _, want := range []string{"succeeded", "failed", "declined", "stale", "cited", "memory failure", "downstream failure"} {
		if seen[want] == 0 && !raceEnabled && !testing.Short() {
			t.Errorf("no run with %s: the comparison never exercised it (%v)", want, seen)
		}
	}
}

// A game's run as `run game-N` shows it: what was served, the attacks as its decisions, and
// how it ended, the same as the game.
func TestGameIsARun(t *testing.T) {
	ctx := context.Background()
	s, err := newMQL(fullOpts())(ctx, defaultGame, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	out, err := play(ctx, defaultGame, 3, s)
	if err != nil {
		t.Fatal(err)
	}
	m := s.(*mqlSeeker)
	reps, err := m.db.Run(ctx, "game-3")
	if err != nil || len(reps) != 1 {
		t.Fatalf("run game-3: %+v, %v", reps, err)
	}
	rep := reps[0]
	if rep.By != "seeker" || len(rep.Decisions) != out.attacks {
		t.Errorf("run game-3 by %s with %d decisions; the game made %d attacks", rep.By, len(rep.Decisions), out.attacks)
	}
	if won := rep.Outcome == mql.Succeeded; won != out.won || rep.Outcome == "" {
		t.Errorf("the game won %v; the run's outcome is %q", out.won, rep.Outcome)
	}
	// One retrieval per decision that had candidates to hand a model: at most one a turn.
	if n := len(rep.Retrievals); n == 0 || n > out.decisions {
		t.Errorf("%d retrievals in %d decisions", n, out.decisions)
	}
	for _, d := range rep.Decisions {
		if !strings.HasPrefix(d, "attack:") {
			t.Errorf("decision %s", d)
		}
	}
}

func TestRatioOverRuns(t *testing.T) {
	// k/n per run: 1/4, 3/4, 2/2, 0/2: pooled 6/12. Residuals k − n/2: −1, 1, 1, −1; their
	// squares sum to 4; se = sqrt(4·4/3)/12 = 0.19245.
	runs := []runRecord{{stale: 1, liveServed: 4}, {stale: 3, liveServed: 4}, {stale: 2, liveServed: 2}, {stale: 0, liveServed: 2}}
	e := armResult{runs: runs}.staleMemory()
	if e.k != 6 || e.n != 12 || math.Abs(e.lo-(0.5-1.959964*0.19245)) > 1e-4 || math.Abs(e.hi-(0.5+1.959964*0.19245)) > 1e-4 {
		t.Errorf("stale memory %+v", e)
	}
	if e := (armResult{runs: []runRecord{{liveServed: 3}, {liveServed: 5}}}).staleMemory(); e.rate() != 0 || e.lo != 0 || e.hi != 0 {
		t.Errorf("nothing stale: %+v", e)
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
	out, errOut, code := runCmd(t, "-games", "2", "-store-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"win rate (95% CI)", "naive", "mql without decay", "A/A", "act / retrieve / decline", "-- mql (",
		"stale memory", "context utilization", "declined runs", "failed runs: memory / downstream"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// runCmd runs the program as main does: its output, its errors and its exit status.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		fmt.Fprintf(&errOut, "horcrux: %v\n", err)
	}
	return out.String(), errOut.String(), exflag.Code(err)
}

// The defaults are the game the figures in docs/EXAMPLES.md were measured with, and pass the
// checks.
func TestDefaultFlags(t *testing.T) {
	c, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{games: 300, seed: 1, halfLife: 12, low: 2, high: 3, ablate: true, game: defaultGame}
	if c != want {
		t.Errorf("defaults: %+v, want %+v", c, want)
	}
}

// Every flag has a range; a value outside it is refused before a game is played, with exit
// status 2 and a message naming the flag, the value and the range.
func TestFlagRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-games", "9223372036854775807"}, "-games 9223372036854775807 is out of range: give 1 to 100000 games"},
		{[]string{"-games", "0"}, "-games 0 is out of range: give 1 to 100000 games"},
		{[]string{"-games", "-3"}, "-games -3 is out of range"},
		{[]string{"-games", "99999999999999999999"}, "value out of range"},
		{[]string{"-games", "many"}, "invalid value \"many\" for flag -games"},
		{[]string{"-relocate-prob", "5"}, "-relocate-prob 5 is out of range: give a probability from 0 to 1"},
		{[]string{"-relocate-prob", "NaN"}, "-relocate-prob NaN is out of range"},
		{[]string{"-wander-prob", "-0.1"}, "-wander-prob -0.1 is out of range"},
		{[]string{"-announce-prob", "1.5"}, "-announce-prob 1.5 is out of range"},
		{[]string{"-true-positive", "Inf"}, "-true-positive +Inf is out of range"},
		{[]string{"-false-positive", "0"}, "-false-positive 0 is out of range: give 0.0001 to 0.9999"},
		{[]string{"-false-positive", "1"}, "-false-positive 1 is out of range"},
		{[]string{"-decoys", "-5"}, "-decoys -5 is out of range: give 0 to 13 decoys"},
		{[]string{"-decoys", "14"}, "-decoys 14 is out of range"}, // it hung: no free location to relocate to
		{[]string{"-gate-low", "Inf"}, "-gate-low +Inf is out of range: give 0 to 4 bits"},
		{[]string{"-gate-low", "Inf", "-gate-high", "Inf"}, "-gate-high +Inf is out of range"},
		{[]string{"-gate-high", "NaN"}, "-gate-high NaN is out of range"},
		{[]string{"-gate-low", "-1"}, "-gate-low -1 is out of range"},
		{[]string{"-gate-high", "4.5"}, "-gate-high 4.5 is out of range"},
		{[]string{"-gate-low", "3", "-gate-high", "2"}, "-gate-low 3 is above -gate-high 2"},
		{[]string{"-half-life", "-1"}, "-half-life -1 is out of range: give 0 to 100000 turns"},
		{[]string{"-half-life", "9223372036854775807"}, "-half-life 9223372036854775807 is out of range"},
		{[]string{"-relocations", "-1"}, "-relocations -1 is out of range: give 0 to 50 relocations"},
		{[]string{"-cooldown", "51"}, "-cooldown 51 is out of range: give 0 to 50 turns"},
		{[]string{"-seed", "-1"}, "invalid value \"-1\" for flag -seed"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{"-ablations=false"}, tc.args...)
			out, errOut, code := runCmd(t, args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("a refused command line played:\n%s", out)
			}
		})
	}
	// Every bad flag is named at once.
	_, errOut, _ := runCmd(t, "-games", "0", "-decoys", "99")
	if !strings.Contains(errOut, "-games 0") || !strings.Contains(errOut, "-decoys 99") {
		t.Errorf("two bad flags, one named:\n%s", errOut)
	}
	if _, _, code := runCmd(t, "-help"); code != 0 {
		t.Errorf("-help: exit %d", code)
	}
}

// -store-dir writes only files it creates, or mql stores that hold nothing but their genesis,
// and deletes nothing: anything else at a game's path refuses the run before the first game.
func TestStoreDirRefusals(t *testing.T) {
	ctx := context.Background()
	withData := func(path string) {
		db, err := mql.Open(ctx, path, mql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "Ledger", Predicate: "balance", Value: mql.Number(1200), By: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string) string // returns the -store-dir
		want  string
	}{
		{"a file", func(dir string) string {
			p := filepath.Join(dir, "notes")
			os.WriteFile(p, []byte("keep me"), 0o600)
			return p
		}, "it is not a directory"},
		{"a game's file holds other data", func(dir string) string {
			withData(filepath.Join(dir, "mql-game-2.db"))
			return dir
		}, "mql-game-2.db: it is an mql store that already holds 1 transactions besides its genesis"},
		{"a game's file is not a store", func(dir string) string {
			os.WriteFile(filepath.Join(dir, "mql-game-1.db"), []byte("keep me"), 0o600)
			return dir
		}, "mql-game-1.db: it is a file that is not a bbolt database"},
		{"a game's path is an empty directory", func(dir string) string {
			os.Mkdir(filepath.Join(dir, "mql-game-1.db"), 0o755)
			return dir
		}, "mql-game-1.db: it is a directory, not an mql store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			dir := tc.setup(root)
			before := snapshot(t, root)
			out, errOut, code := runCmd(t, "-games", "2", "-ablations=false", "-store-dir", dir)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("a refused run played:\n%s", out)
			}
			if after := snapshot(t, root); !maps.Equal(before, after) {
				t.Errorf("the run changed what it refused:\nbefore %v\nafter  %v", before, after)
			}
		})
	}

	// A game's file that holds nothing but its genesis is written into; other files are left
	// alone.
	dir := t.TempDir()
	db, err := mql.Open(ctx, filepath.Join(dir, "mql-game-1.db"), mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("keep me"), 0o600)
	if _, errOut, code := runCmd(t, "-games", "2", "-ablations=false", "-store-dir", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, name := range []string{"mql-game-1.db", "mql-game-2.db"} {
		info, err := mql.Inspect(ctx, filepath.Join(dir, name))
		if err != nil || !info.MQL || info.Transactions < 10 {
			t.Errorf("%s after the run: %+v, %v", name, info, err)
		}
	}
	// Each file holds its game's run.
	kept, err := mql.Open(ctx, filepath.Join(dir, "mql-game-2.db"), mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close()
	if reps, err := kept.Run(ctx, "game-2"); err != nil || len(reps) != 1 || reps[0].Outcome == "" || len(reps[0].Served) == 0 {
		t.Errorf("run game-2 in mql-game-2.db: %+v, %v", reps, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "keep me" {
		t.Errorf("keep.txt: %q, %v", b, err)
	}
}

// snapshot maps every path under root to its contents ("dir" for a directory).
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			m[path] = "dir"
			return nil
		}
		b, err := os.ReadFile(path)
		m[path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
