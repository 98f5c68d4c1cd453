package mql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// contextForStore: three vendors' notes, one superseded, one revoked, one that only worker-3
// may see, and a number with decayed-looking confidence.
func contextForStore(t *testing.T) *fixture {
	f := open(t, mql.Options{}).team()
	f.assert("Klarveld", "pricing_note", mql.String("EU pricing for the team plan: 44 a seat"), "worker-3")
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3", Confidence: new(0.8)}))
	f.assert("Brimsole", "pricing_note", mql.String("US pricing only"), "worker-7")
	f.assert("Brimsole", "pricing_note", mql.String("EU and US pricing, 52 a seat"), "worker-7") // supersedes @1
	f.assert("Ostwind", "pricing_note", mql.String("EU pricing, withdrawn"), "worker-7")
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Ostwind.pricing_note@1", By: "owner"}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Secret", Predicate: "pricing_note", Value: mql.String("EU pricing we may not tell"), By: "worker-3", SeenBy: []string{"worker-3"}}))
	return f
}

func TestContextFor(t *testing.T) {
	f := contextForStore(t)
	for _, c := range []struct {
		name     string
		r        mql.Reader
		question string
		budget   int
		want     string
		omitted  []string
	}{
		{"best first, matching claims only", f.db.As("worker-7"), "EU team plan", 0,
			"Klarveld: pricing_note=\"EU pricing for the team plan: 44 a seat\" @1\n" +
				"Brimsole: pricing_note=\"EU and US pricing, 52 a seat\" @2\n", nil},
		{"a subject's claims in one line, best first, with confidence", f.db.As("worker-7"), "Klarveld price per seat", 0,
			"Klarveld: price_per_seat=44 @1 (0.80), pricing_note=\"EU pricing for the team plan: 44 a seat\" @1\n" +
				"Brimsole: pricing_note=\"EU and US pricing, 52 a seat\" @2\n", nil},
		{"what the principal may see only", f.db.As("worker-3"), "EU pricing we may not tell", 0,
			"Secret: pricing_note=\"EU pricing we may not tell\" @1\n" +
				"Brimsole: pricing_note=\"EU and US pricing, 52 a seat\" @2\n" +
				"Klarveld: pricing_note=\"EU pricing for the team plan: 44 a seat\" @1, price_per_seat=44 @1 (0.80)\n", nil},
		{"the budget cuts, and says what it left out", f.db.As("worker-7"), "EU team plan", 31,
			"Klarveld: pricing_note=\"EU pricing for the team plan: 44 a seat\" @1\n" +
				"(left out for the token budget: 1 subjects: Brimsole)\n", []string{"Brimsole"}},
		{"a budget too small for any line", f.db.As("worker-7"), "EU pricing", 3,
			"(2 subjects left out for the token budget)\n", []string{"Brimsole", "Klarveld"}},
		{"nothing matches", f.db.As("worker-7"), "stealth trackers", 0,
			"(nothing visible: no live claims match the question)\n", nil},
		{"nothing visible matches", f.db.As("worker-7"), "tell", 0,
			"(nothing visible: no live claims match the question)\n", nil},
		{"as of tx: the claims live then", f.db.AsOfTx(11).As("worker-7"), "pricing only", 0,
			"Brimsole: pricing_note=\"US pricing only\" @1\n" +
				"Klarveld: pricing_note=\"EU pricing for the team plan: 44 a seat\" @1, price_per_seat=44 @1 (0.80)\n", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.r.ContextFor(f.ctx, c.question, c.budget)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != c.want || !slices.Equal(got.Omitted, c.omitted) {
				t.Errorf("ContextFor(%q, %d):\n%s(omitted %q)\nwant\n%s(omitted %q)", c.question, c.budget, got.Text, got.Omitted, c.want, c.omitted)
			}
			if got.Question != c.question || got.Budget != c.budget || got.Tokens != mql.EstimateTokens(got.Text) {
				t.Errorf("ContextFor(%q, %d) = %+v: question, budget or tokens wrong", c.question, c.budget, got)
			}
			if c.budget > 0 && len(got.Lines) > 0 && got.Tokens > c.budget {
				t.Errorf("ContextFor(%q, %d) is %d tokens, over the budget", c.question, c.budget, got.Tokens)
			}
		})
	}
}

// A question is refused as a search's text is, and so is a negative budget: with nothing read
// and, for a run, nothing recorded.
func TestContextForRefusesBadInput(t *testing.T) {
	f := contextForStore(t)
	for _, c := range []struct {
		question string
		budget   int
		want     string
	}{
		{"", 0, `search text "": invalid input: it is empty`},
		{" \t\n", 10, "it is empty"},
		{"a\x00b", 0, "NUL"},
		{strings.Repeat("word ", 1000), 0, "at most 4096 bytes"},
		{"the of and", 0, "no word to search for"},
		{"pricing", -1, "budget -1: invalid input"},
	} {
		for _, r := range []mql.Reader{f.db.Reader(), f.db.As("worker-3").ForRun("r-1")} {
			head, _ := f.db.Head(f.ctx)
			_, err := r.ContextFor(f.ctx, c.question, c.budget)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, mql.ErrInvalid) {
				t.Errorf("ContextFor(%.20q, %d) = %v, want an invalid-input error saying %q", c.question, c.budget, err, c.want)
			}
			if h, _ := f.db.Head(f.ctx); h != head {
				t.Errorf("a refused ContextFor(%.20q, %d) wrote: head %d → %d", c.question, c.budget, head, h)
			}
		}
	}
}

// A context for a question made for a run records exactly the claims that fit the budget, and
// the statement it answered.
func TestContextForRunRecordsWhatFit(t *testing.T) {
	f := contextForStore(t)
	c, err := f.db.As("worker-7").ForRun("r-1").ContextFor(f.ctx, "EU team plan", 31)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := f.db.As("worker-7").Run(f.ctx, "r-1")
	if err != nil || len(runs) != 1 || len(runs[0].Retrievals) != 1 {
		t.Fatalf("run r-1 = %+v, %v", runs, err)
	}
	got := runs[0].Retrievals[0]
	served := got.Served
	if got.Statement != `context for "EU team plan" budget 31` || !slices.Equal(served, c.Refs) || !slices.Equal(c.Refs, []string{"Klarveld.pricing_note@1"}) {
		t.Errorf("recorded %q serving %q; the context gave %q", got.Statement, served, c.Refs)
	}
}

// versions are what a hidden write may change in a visible claim's line (docs/MODEL.md, "What
// a principal can infer"): its version number.
var versions = regexp.MustCompile(`@[0-9]+`)

// TestContextForTwins: as TestSearchTwins, two stores get the same visible writes and the first
// also a hidden principal's; every context for a question of a visible principal, its text
// (but for version numbers), what it left out and what it served, must be the same in both.
func TestContextForTwins(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2121))
			a, b := open(t, mql.Options{}).team(), open(t, mql.Options{}).team()
			for _, f := range []*fixture{a, b} {
				f.ok(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "spy", Type: mql.Agent, By: "owner"}))
			}
			subjects := []string{"Klarveld", "Brimsole", "Ostwind", "Player7", "Spyhole"}
			preds := []string{"note", "summary", "pricing_note"}
			visible := []string{"worker-3", "worker-7"}
			for range 60 {
				subj, pred := subjects[rng.IntN(len(subjects))], preds[rng.IntN(len(preds))]
				if rng.IntN(3) == 0 {
					s := mql.AssertSpec{Subject: subj, Predicate: pred + "_h", Value: mql.String(randomText(rng)), By: "spy", SeenBy: []string{"spy"}}
					if rng.IntN(2) == 0 {
						s.Predicate = pred
					}
					a.ok(a.db.Assert(a.ctx, s))
					b.clk.Add(time.Second)
					continue
				}
				by := visible[rng.IntN(2)]
				s := mql.AssertSpec{Subject: subj, Predicate: pred, Value: mql.String(randomText(rng)), By: by}
				if rng.IntN(4) == 0 {
					s.SeenBy = []string{by}
				}
				_, errA := a.db.Assert(a.ctx, s)
				_, errB := b.db.Assert(b.ctx, s)
				if (errA == nil) != (errB == nil) {
					t.Fatalf("assert %+v: %v in the first store, %v in the second", s, errA, errB)
				}
				a.clk.Add(time.Second)
				b.clk.Add(time.Second)
			}
			for range 40 {
				text, budget := randomText(rng), []int{0, 12, 40, 120}[rng.IntN(4)]
				for _, who := range visible {
					ra, errA := a.db.As(who).ContextFor(a.ctx, text, budget)
					rb, errB := b.db.As(who).ContextFor(b.ctx, text, budget)
					ta, tb := versions.ReplaceAllString(ra.Text, "@N"), versions.ReplaceAllString(rb.Text, "@N")
					if ta != tb || fmt.Sprint(errA) != fmt.Sprint(errB) || !slices.Equal(ra.Omitted, rb.Omitted) || len(ra.Refs) != len(rb.Refs) {
						t.Fatalf("context for %q budget %d as %s:\nwith hidden claims    %q %q %v\nwithout hidden claims %q %q %v", text, budget, who, ta, ra.Omitted, errA, tb, rb.Omitted, errB)
					}
				}
			}
		})
	}
}

// TestContextForAsOfTxTwins: a context for a question as of tx N is the one a store holding
// only the first N transactions gives.
func TestContextForAsOfTxTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 21))
	subjects := []string{"Klarveld", "Brimsole", "Ostwind"}
	type write func(f *fixture)
	var writes []write
	for range 30 {
		subj, text := subjects[rng.IntN(len(subjects))], randomText(rng)
		if rng.IntN(5) == 0 {
			writes = append(writes, func(f *fixture) { f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: subj + ".note", By: "owner"}) })
			continue
		}
		writes = append(writes, func(f *fixture) {
			f.db.Assert(f.ctx, mql.AssertSpec{Subject: subj, Predicate: "note", Value: mql.String(text), By: "worker-3"})
		})
	}
	full := open(t, mql.Options{}).team()
	for _, w := range writes {
		w(full)
		full.clk.Add(time.Second)
	}
	head, _ := full.db.Head(full.ctx)
	for n := int64(9); n <= head; n += 4 {
		part := open(t, mql.Options{}).team()
		for _, w := range writes {
			if h, _ := part.db.Head(part.ctx); h >= n {
				break
			}
			w(part)
			part.clk.Add(time.Second)
		}
		for range 4 {
			text := randomText(rng)
			got, errF := full.db.AsOfTx(n).As("worker-3").ContextFor(full.ctx, text, 40)
			want, errP := part.db.AsOfTx(n).As("worker-3").ContextFor(part.ctx, text, 40)
			if got.Text != want.Text || fmt.Sprint(errF) != fmt.Sprint(errP) {
				t.Fatalf("context for %q as of tx %d:\nthe full store    %q %v\nthe first %d txs %q %v", text, n, got.Text, errF, n, want.Text, errP)
			}
		}
	}
}

// BenchmarkContextFor: a context for a question of three words on the store of BenchmarkSearch,
// within a budget of 200 tokens, beside the search of the same words that gives its first
// lines: the context ranks up to MaxSearchLimit claims to say what it left out.
func BenchmarkContextFor(b *testing.B) {
	db := ingest(b, benchClaims(), filepath.Join(b.TempDir(), "s.db"))
	rng := rand.New(rand.NewPCG(3, 4))
	z := rand.NewZipf(rng, 1.1, 2, 50_000)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		read func(text string) error
	}{
		{"search limit 20", func(text string) error { _, err := db.Search(ctx, text, mql.SearchOptions{}); return err }},
		{"context for budget 200", func(text string) error { _, err := db.ContextFor(ctx, text, 200); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.read(benchText(rng, z, 3)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
