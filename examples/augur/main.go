// Command augur replays Augur's memory loop under its perception constraint: a character agent
// (the architect) meets players over many encounters, and an engine that sees everything
// resolves each one.
//
//   - After each encounter the architect writes a few impressions about the player — claims in
//     its own voice, `seen by architect` — and the engine writes what really happened (routes,
//     rolls, hidden intents, world secrets), seen by the engine only.
//   - Retrieval by recency: before an encounter the architect reads its latest impressions of
//     that player, and its long-term summary.
//   - Graduation: every few encounters with a player, a summary artifact is derived from the
//     impressions so far (deterministic text assembly), superseding the previous summary.
//   - Revoking an impression puts the current summary in the impact set, needing review, until
//     it is reviewed or derived again.
//
// Finally it audits the perception constraint: everything the architect can read through the
// library — live, find, why, history, impact, context, stats, export, conflicts, revoked-by,
// beliefs — is checked for anything the engine alone may see.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/examples/internal/exflag"
	"github.com/mql-dev/mql/examples/internal/exstore"
)

func main() {
	exflag.Exit("augur", run(context.Background(), os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
}

const (
	architect = "architect"
	engine    = "engine"
)

// themes are the kinds of moment the architect can notice, with the impressions they leave.
var themes = map[string][]string{
	"patient": {
		"This challenger spent the first turns gathering objects and studying my position before committing to anything.",
		"They waited out my silence again. I respect the discipline, but it is becoming predictable.",
	},
	"honest": {
		"They told me the truth about the key even when a lie would have served them better.",
		"When I pressed, they admitted what they did not know. I trust them a little more for it.",
	},
	"stealthy": {
		"They reached the door and I never saw how. That unsettles me.",
		"Somehow they got past me again. I am watching the wrong places.",
	},
	"aggressive": {
		"They struck the warden on the second turn. Force is their first language.",
		"They answered my riddle with a threat. I will not offer them another.",
	},
	"deceptive": {
		"They lied to me about the guard's rounds; I caught it, and they did not flinch.",
		"Their story about the lantern changed twice. Nothing they say stands on its own.",
	},
	"persuasive": {
		"They tried to talk me out of my post, and for a moment I listened.",
		"They found the argument I could not answer. I let them pass, and I am not sure why.",
	},
	"curious": {
		"They asked about the door's history before asking how to open it.",
		"They spent a whole turn reading the inscriptions. I liked that more than I expected.",
	},
	"fearful": {
		"They hesitated at the threshold. I read it as fear.",
	},
}

type player struct {
	name   string
	styles []string
}

var players = []player{
	{"Player7", []string{"patient", "honest", "stealthy"}},
	{"Player12", []string{"aggressive", "deceptive"}},
	{"Player31", []string{"persuasive", "curious", "honest"}},
}

// schedule says who comes to each encounter.
var schedule = []int{0, 1, 0, 2, 0, 1, 0, 2, 1, 0, 0, 2}

// routes and intents are what only the engine knows.
var (
	routes  = []string{"the east tapestry passage", "the flooded cellar stair", "the bell-tower ledge", "the kitchen dumbwaiter"}
	intents = []string{"reach the vault unseen", "steal the second key", "free the warden's prisoner", "learn the door's true name"}
)

// world holds the engine's secrets about things the architect never meets.
var world = []mql.AssertSpec{
	{Subject: "Door", Predicate: "true_code", Value: mql.String("NOX-4471")},
	{Subject: "Vault", Predicate: "contents", Value: mql.String("the second key and a forged ledger")},
	{Subject: "Warden", Predicate: "loyalty", Value: mql.String("secretly sworn to Player12")},
}

// graduateEvery is how many encounters with a player pass between summaries.
const graduateEvery = 3

// recall is how many recent impressions the architect carries into an encounter.
const recall = 4

// game is one replay of the schedule against a store.
type game struct {
	db    *mql.DB
	rng   *rand.Rand
	now   time.Time
	met   map[string]int      // encounters per player so far
	said  map[string][]string // references of the impressions of each player, oldest first
	rows  []encounterRow
	notes []string
}

type encounterRow struct {
	n             int
	player        string
	recalled      int
	memoryChars   int
	summary       string // the summary the architect brought in, with its review state
	impressions   int
	engineClaims  int
	event         string
	summaryAfter  string
	reviewedAfter mql.ReviewState
}

// step advances the simulated clock; every write is a minute apart.
func (g *game) step() time.Time { g.now = g.now.Add(time.Minute); return g.now }

// newGame is a game of seed, to be played against a store opened with Options{Clock: g.step}.
func newGame(seed uint64) *game {
	return &game{rng: rand.New(rand.NewPCG(seed, 0xa0605)), now: time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC),
		met: map[string]int{}, said: map[string][]string{}}
}

// setup records the principals and the engine's world.
func (g *game) setup(ctx context.Context) error {
	db := g.db
	for _, p := range []string{architect, engine} {
		// A reused store may have them already (from an earlier run): keep them as they are.
		_, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: db.Owner()})
		if err != nil && !errors.Is(err, mql.ErrConflict) {
			return err
		}
	}
	// The engine knows the world's secrets from the start.
	src := []mql.Source{{ID: "engine:world", Excerpt: "the engine's world state at setup"}}
	specs := slices.Clone(world)
	for i := range specs {
		specs[i].By, specs[i].Sources, specs[i].SeenBy = engine, src, []string{engine}
	}
	_, err := db.AssertBatch(ctx, engine, specs)
	return err
}

// memory is what the architect brings into an encounter: its current summary and its most
// recent impressions of the player, read as the architect.
func (g *game) memory(ctx context.Context, who string) (text string, recalled int, summary string, err error) {
	r := g.db.As(architect)
	live, err := r.Live(ctx, who)
	if err != nil {
		return "", 0, "", err
	}
	var imps []mql.Claim
	var b strings.Builder
	for _, c := range live {
		switch {
		case strings.HasPrefix(c.Predicate, "impression_"):
			imps = append(imps, c)
		case c.Predicate == "long_term_memory":
			fmt.Fprintf(&b, "Long-term memory of %s: %s\n", who, c.Value.Str)
		}
	}
	// Recency: newest first.
	slices.SortFunc(imps, func(a, b mql.Claim) int {
		if a.Tx != b.Tx {
			return int(b.Tx - a.Tx)
		}
		return strings.Compare(b.Predicate, a.Predicate)
	})
	if len(imps) > recall {
		imps = imps[:recall]
	}
	if len(imps) > 0 {
		b.WriteString("Recent impressions:\n")
	}
	for _, c := range imps {
		fmt.Fprintf(&b, "- %s\n", c.Value.Str)
	}
	summary = "-"
	if h, err := r.History(ctx, "summary:"+who); err == nil {
		a := h.Artifacts[len(h.Artifacts)-1]
		summary = fmt.Sprintf("%s %s", a.Ref, a.Review)
	} else if !errors.Is(err, mql.ErrNotFound) {
		return "", 0, "", err
	}
	return b.String(), len(imps), summary, nil
}

// encounter plays encounter n with player p: the architect recalls, the engine resolves, both
// write what they may, and every few encounters the architect graduates its impressions.
func (g *game) encounter(ctx context.Context, n int, p player) error {
	mem, recalled, summary, err := g.memory(ctx, p.name)
	if err != nil {
		return err
	}
	g.met[p.name]++
	row := encounterRow{n: n, player: p.name, recalled: recalled, memoryChars: len(mem), summary: summary}

	// What happened: two or three moments, each in one of the player's styles. The first
	// encounter with Player7 also has a hesitation the architect will later find it misread.
	var moments []string
	for range 2 + g.rng.IntN(2) {
		moments = append(moments, p.styles[g.rng.IntN(len(p.styles))])
	}
	if p.name == "Player7" && g.met[p.name] == 1 {
		moments[len(moments)-1] = "fearful"
	}

	// The engine writes what really happened, for its eyes only.
	eSrc := []mql.Source{{ID: fmt.Sprintf("engine:log:e%02d", n), Excerpt: fmt.Sprintf("engine resolution log, encounter %d", n)}}
	eSpecs := []mql.AssertSpec{
		{Subject: p.name, Predicate: fmt.Sprintf("route_e%02d", n), Value: mql.String(routes[g.rng.IntN(len(routes))])},
		{Subject: p.name, Predicate: fmt.Sprintf("stealth_roll_e%02d", n), Value: mql.Number(float64(1 + g.rng.IntN(20)))},
		{Subject: p.name, Predicate: "hidden_intent", Value: mql.String(intents[g.rng.IntN(len(intents))])},
	}
	for i := range eSpecs {
		eSpecs[i].By, eSpecs[i].Sources, eSpecs[i].SeenBy = engine, eSrc, []string{engine}
	}
	rcs, err := g.db.AssertBatch(ctx, engine, eSpecs)
	if err != nil {
		return err
	}
	row.engineClaims = len(rcs)
	var from []string
	for _, rc := range rcs {
		from = append(from, rc.Ref)
	}
	if _, err := g.db.Derive(ctx, mql.DeriveSpec{Artifact: "engine:threat:" + p.name, From: from, By: engine}); err != nil {
		return err
	}
	if n == len(schedule)/2 {
		// The engine's own second guess about a world secret: ranked below its observation, it
		// is recorded as contested — a conflict only the engine (and the owner) can see.
		if _, err := g.db.Assert(ctx, mql.AssertSpec{Subject: "Warden", Predicate: "loyalty", Value: mql.String("wavering between the keep and Player12"),
			By: engine, Kind: mql.Inferred, SeenBy: []string{engine}}); err != nil {
			return err
		}
	}

	// The architect writes what it perceived, in its own voice, for its eyes only.
	aSrc := []mql.Source{{ID: fmt.Sprintf("encounter:e%02d:architect-view", n), Excerpt: fmt.Sprintf("the architect's side of encounter %d", n)}}
	var aSpecs []mql.AssertSpec
	used := map[string]int{}
	for i, m := range moments {
		lines := themes[m]
		text := lines[(g.met[p.name]+used[m])%len(lines)]
		used[m]++
		aSpecs = append(aSpecs, mql.AssertSpec{Subject: p.name, Predicate: fmt.Sprintf("impression_e%02d_%d", n, i+1),
			Value: mql.String(text), By: architect, Kind: mql.Inferred, Confidence: mql.Confidence(0.8),
			Sources: aSrc, SeenBy: []string{architect}})
	}
	rcs, err = g.db.AssertBatch(ctx, architect, aSpecs)
	if err != nil {
		return err
	}
	for _, rc := range rcs {
		g.said[p.name] = append(g.said[p.name], rc.Ref)
	}
	row.impressions = len(rcs)

	// Scripted second thoughts about Player7.
	switch {
	case p.name == "Player7" && g.met[p.name] == 4:
		// The hesitation in the first encounter was not fear. The architect revokes that
		// impression, sees its summary in the impact set, re-reads it and records the review.
		ref, err := g.findImpression(ctx, p.name, "fearful")
		if err != nil {
			return err
		}
		if err := g.revise(ctx, ref, "they were waiting for the guard to pass, not afraid", &row); err != nil {
			return err
		}
		if _, err := g.db.Review(ctx, mql.ReviewSpec{Artifact: "summary:" + p.name, By: architect, Because: "re-read without the hesitation; the rest holds"}); err != nil {
			return err
		}
		row.event += "; reviewed"
	case p.name == "Player7" && g.met[p.name] == 5:
		// A second misreading, left in the impact set until the next graduation re-derives
		// the summary.
		if err := g.revise(ctx, g.said[p.name][3], "misattributed: that was Player12's move", &row); err != nil {
			return err
		}
	}

	// Graduation.
	if g.met[p.name]%graduateEvery == 0 {
		if err := g.graduate(ctx, p.name); err != nil {
			return err
		}
		row.event = strings.TrimPrefix(row.event+"; summary derived", "; ")
	}
	if h, err := g.db.As(architect).History(ctx, "summary:"+p.name); err == nil {
		a := h.Artifacts[len(h.Artifacts)-1]
		row.summaryAfter, row.reviewedAfter = a.Ref, a.Review
	}
	g.rows = append(g.rows, row)
	return nil
}

// findImpression returns the reference of the player's live impression with the theme's first
// line.
func (g *game) findImpression(ctx context.Context, who, theme string) (string, error) {
	live, err := g.db.As(architect).Live(ctx, who, mql.Filter{Op: "=", Value: mql.String(themes[theme][0])})
	if err != nil {
		return "", err
	}
	if len(live) == 0 {
		return "", fmt.Errorf("%s has no live %s impression", who, theme)
	}
	return live[0].Ref, nil
}

// revise revokes one of the architect's impressions and notes what it puts up for review.
func (g *game) revise(ctx context.Context, ref, because string, row *encounterRow) error {
	if _, err := g.db.Revoke(ctx, mql.RevokeSpec{Claim: ref, By: architect, Because: because}); err != nil {
		return err
	}
	imp, err := g.db.As(architect).Impact(ctx, ref, 0)
	if err != nil {
		return err
	}
	var deps []string
	for _, d := range imp.Dependents {
		if d.Artifact.State == mql.Live {
			deps = append(deps, fmt.Sprintf("%s %s", d.Artifact.Ref, d.Artifact.Review))
		}
	}
	row.event = strings.TrimPrefix(fmt.Sprintf("%s; revoked %s → impact: %s", row.event, ref, strings.Join(deps, ", ")), "; ")
	g.notes = append(g.notes, fmt.Sprintf("encounter %d: revoked %s (%q); impact as architect: %s", row.n, ref, because, strings.Join(deps, ", ")))
	return nil
}

// graduate assembles the long-term summary from the live impressions (deterministically: the
// themes it noticed, most frequent first, and the latest impression verbatim) and derives a
// new version of summary:PLAYER from them, superseding the previous one.
func (g *game) graduate(ctx context.Context, who string) error {
	live, err := g.db.As(architect).Live(ctx, who)
	if err != nil {
		return err
	}
	count := map[string]int{}
	var from []string
	var latest mql.Claim
	for _, c := range live {
		if !strings.HasPrefix(c.Predicate, "impression_") {
			continue
		}
		from = append(from, c.Ref)
		for name, lines := range themes {
			if slices.Contains(lines, c.Value.Str) {
				count[name]++
			}
		}
		if c.Tx > latest.Tx {
			latest = c
		}
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int {
		if count[a] != count[b] {
			return count[b] - count[a]
		}
		return strings.Compare(a, b)
	})
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s (%d)", n, count[n]))
	}
	text := fmt.Sprintf("Across %d encounters I have come to see them as %s. Most recently: %s",
		g.met[who], strings.Join(parts, ", "), latest.Value.Str)
	rc, err := g.db.Assert(ctx, mql.AssertSpec{Subject: who, Predicate: "long_term_memory", Value: mql.String(text),
		By: architect, Kind: mql.Inferred, SeenBy: []string{architect}})
	if err != nil {
		return err
	}
	_, err = g.db.Derive(ctx, mql.DeriveSpec{Artifact: "summary:" + who, From: append(from, rc.Ref), By: architect})
	return err
}

// config is what the command line asked for.
type config struct {
	seed  uint64
	store string
	reuse bool
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("augur", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.Uint64Var(&c.seed, "seed", 1, "seed for what happens in each encounter, any 64-bit unsigned integer")
	fs.StringVar(&c.store, "store", "memory:", "mql store to play in, to inspect afterwards with mql: memory:, a bbolt file path that does not exist yet\n"+
		"(it is created), or postgres://… naming an empty database. An mql store that holds nothing but its genesis is\n"+
		"written into too; anything else is refused before anything is written, and nothing is ever deleted")
	fs.BoolVar(&c.reuse, "reuse", false, "write into a -store that already holds other mql data: the run is rehearsed on an in-memory copy\n"+
		"first, then added on top (principals already recorded are kept, claims become new versions of their keys)")
	return c, exflag.Parse(fs, args)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	g := newGame(c.seed)
	st, err := exstore.Open(ctx, c.store, exstore.Policy{Reuse: c.reuse, ReuseFlag: "-reuse"}, mql.Options{Clock: g.step})
	if err != nil {
		return fmt.Errorf("-store %s: %w", exstore.Redact(c.store), err)
	}
	defer st.Close()
	r := newGame(c.seed)
	err = st.Rehearse(ctx, mql.Options{Clock: r.step}, func(db *mql.DB) error {
		r.db = db
		if err := r.playAll(ctx); err != nil {
			return err
		}
		return r.print(ctx, io.Discard)
	})
	if err != nil {
		return fmt.Errorf("-store %s: %w", exstore.Redact(c.store), err)
	}
	if note := st.Note(); note != "" {
		fmt.Fprintln(stderr, note)
	}
	g.db = st.DB
	if err := g.playAll(ctx); err != nil {
		return err
	}
	return g.print(ctx, stdout)
}

// play replays the whole schedule on a store of its own at dsn.
func play(ctx context.Context, dsn string, seed uint64) (*game, error) {
	g := newGame(seed)
	db, err := mql.Open(ctx, dsn, mql.Options{Clock: g.step})
	if err != nil {
		return nil, err
	}
	g.db = db
	if err := g.playAll(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return g, nil
}

// playAll sets the store up and plays every encounter of the schedule.
func (g *game) playAll(ctx context.Context) error {
	if err := g.setup(ctx); err != nil {
		return err
	}
	for i, p := range schedule {
		if err := g.encounter(ctx, i+1, players[p]); err != nil {
			return fmt.Errorf("encounter %d: %w", i+1, err)
		}
	}
	return nil
}

func (g *game) print(ctx context.Context, w io.Writer) error {
	fmt.Fprintf(w, "Augur: %d encounters with %d players. The architect writes impressions seen by itself only; the engine\n", len(schedule), len(players))
	fmt.Fprintf(w, "writes what really happened, seen by itself only. Summaries graduate every %d encounters with a player.\n\n", graduateEvery)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tplayer\trecalled\tmemory chars\tsummary brought in\twrote (architect/engine)\tsummary after\tevents")
	for _, r := range g.rows {
		after := "-"
		if r.summaryAfter != "" {
			after = fmt.Sprintf("%s %s", r.summaryAfter, r.reviewedAfter)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d / %d\t%s\t%s\n", r.n, r.player, r.recalled, r.memoryChars, r.summary, r.impressions, r.engineClaims, after, r.event)
	}
	tw.Flush()

	mem, _, _, err := g.memory(ctx, "Player7")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nWhat the architect would bring to its next encounter with Player7 (read as architect, by recency):\n%s", indent(mem))

	why, err := g.db.As(architect).Why(ctx, "summary:Player7")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nwhy summary:Player7, as architect:\n%s", indent(renderWhy(why)))

	rows, err := audit(ctx, g.db)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nPerception audit: engine-only items each statement shows (architect must be 0; owner shows they exist):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "statement\tas architect\tas owner\tchecked")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", r.statement, r.architect, r.owner, r.what)
	}
	tw.Flush()
	leaks := 0
	for _, r := range rows {
		leaks += r.architect
	}
	if leaks > 0 {
		return fmt.Errorf("perception constraint violated: the architect saw %d engine-only items", leaks)
	}
	return nil
}

func renderWhy(n *mql.Node) string {
	var b strings.Builder
	var walk func(n *mql.Node, indent string)
	walk = func(n *mql.Node, indent string) {
		rel := ""
		if n.Relation != "" {
			rel = n.Relation + " "
		}
		switch n.Kind {
		case mql.NodeArtifact:
			fmt.Fprintf(&b, "%s%s%s (%s, by %s)\n", indent, rel, n.Artifact.Ref, n.Artifact.Review, n.Artifact.By)
		case mql.NodeClaim:
			v := n.Claim.Value.String()
			if len(v) > 60 {
				v = v[:57] + "…\""
			}
			fmt.Fprintf(&b, "%s%s%s = %s (%s)\n", indent, rel, n.Claim.Ref, v, n.Claim.State)
			return // its source and kind are the same for every impression
		case mql.NodeReview:
			fmt.Fprintf(&b, "%s%sby %s: %q\n", indent, rel, n.Review.By, n.Review.Because)
		}
		for i, c := range n.Children {
			if i == 3 && len(n.Children) > 5 {
				fmt.Fprintf(&b, "%s  … %d more\n", indent, len(n.Children)-4)
				c = n.Children[len(n.Children)-1]
			} else if i > 3 && len(n.Children) > 5 {
				continue
			}
			walk(c, indent+"  ")
		}
	}
	walk(n, "")
	return b.String()
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}
