package mql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// searchRows is a search's answers as rows "Ref state score terms", for comparing.
func searchRows(res mql.SearchResult, err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	rows := []string{}
	for _, h := range res.Hits {
		rows = append(rows, fmt.Sprintf("%s %s %v %s", h.Ref, h.State, h.Score, strings.Join(h.Terms, ",")))
	}
	return rows
}

func refsOf(res mql.SearchResult) []string {
	var refs []string
	for _, h := range res.Hits {
		refs = append(refs, h.Ref)
	}
	return refs
}

func TestSearchLiveClaimsBestFirst(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "pricing_note", Value: mql.String("EU pricing for the team plan is 44 a seat"), By: "worker-3",
		Sources: []mql.Source{{ID: "src:Klarveld:rev0", Excerpt: "Team plan: 44 EUR per seat, billed yearly"}}}))
	f.assert("Brimsole", "pricing_note", mql.String("US pricing only"), "worker-3")
	f.assert("Klarveld", "price_per_seat", mql.Number(44), "worker-3")
	f.assert("Ostwind", "summary", mql.String("a vendor of stealth trackers"), "worker-3")
	f.assert("Ostwind", "summary", mql.String("a vendor of ship sensors"), "worker-7") // supersedes the stealth one
	f.assert("Player7", "note", mql.String("moves in stealth"), "worker-3")
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Player7.note@1", By: "worker-3"}))

	res, err := f.db.Search(f.ctx, "EU pricing for the team plan", mql.SearchOptions{})
	got := refsOf(res)
	if err != nil || len(got) < 2 || got[0] != "Klarveld.pricing_note@1" {
		t.Fatalf("search EU pricing = %v, %v; want Klarveld.pricing_note@1 first", got, err)
	}
	if h := res.Hits[0]; h.Score <= res.Hits[1].Score || !slices.Equal(h.Signals, []string{"text"}) || !slices.Contains(h.Terms, "eu") || h.State != mql.Live {
		t.Errorf("first hit %+v: want the best score, signal text, term eu, live", h)
	}
	// The excerpt of a source is part of a claim's text.
	if got := refsOf(must2(f.db.Search(f.ctx, "billed yearly", mql.SearchOptions{}))); !slices.Equal(got, []string{"Klarveld.pricing_note@1"}) {
		t.Errorf("search billed yearly = %v, want the claim whose source says it", got)
	}
	// Names are words: the predicate's parts find the claim.
	if got := refsOf(must2(f.db.Search(f.ctx, "price per seat", mql.SearchOptions{On: []string{"*.price_per_seat"}}))); !slices.Equal(got, []string{"Klarveld.price_per_seat@1"}) {
		t.Errorf("search price per seat on *.price_per_seat = %v", got)
	}
	// Superseded and revoked claims are no answers; history gives them with their state.
	if got := refsOf(must2(f.db.Search(f.ctx, "stealth", mql.SearchOptions{}))); len(got) != 0 {
		t.Errorf("search stealth = %v, want nothing live", got)
	}
	rows := searchRows(f.db.Search(f.ctx, "stealth", mql.SearchOptions{History: true}))
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "") || !slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "Ostwind.summary@1 superseded") }) ||
		!slices.ContainsFunc(rows, func(r string) bool { return strings.HasPrefix(r, "Player7.note@1 revoked") }) {
		t.Errorf("search stealth history = %q", rows)
	}
	// on narrows to keys of the patterns; limit cuts.
	if got := refsOf(must2(f.db.Search(f.ctx, "pricing", mql.SearchOptions{On: []string{"Brimsole"}}))); !slices.Equal(got, []string{"Brimsole.pricing_note@1"}) {
		t.Errorf("search pricing on Brimsole = %v", got)
	}
	if got := refsOf(must2(f.db.Search(f.ctx, "pricing", mql.SearchOptions{Limit: 1}))); len(got) != 1 {
		t.Errorf("search pricing limit 1 = %v", got)
	}
}

func must2[T any](x T, err error) T {
	if err != nil {
		panic(err)
	}
	return x
}

func TestSearchExpiredAndContestedAreNoAnswers(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Deal", Predicate: "offer", Value: mql.String("discount offer for spring"), By: "worker-3",
		ValidUntil: t0.Add(time.Hour)}))
	if got := refsOf(must2(f.db.Search(f.ctx, "discount", mql.SearchOptions{}))); len(got) != 1 {
		t.Fatalf("before expiry: %v", got)
	}
	f.clk.Add(2 * time.Hour)
	if got := refsOf(must2(f.db.Search(f.ctx, "discount", mql.SearchOptions{}))); len(got) != 0 {
		t.Errorf("after expiry: %v, want nothing", got)
	}
	f.assert("Vendor", "note", mql.String("reliable shipping partner"), "worker-3", "src:a")
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Vendor", Predicate: "note", Value: mql.String("unreliable shipping partner"), By: "worker-7", Kind: mql.Inferred}))
	for _, h := range must2(f.db.Search(f.ctx, "shipping partner", mql.SearchOptions{})).Hits {
		if h.State != mql.Live {
			t.Errorf("search shipping partner gave %s, %s", h.Ref, h.State)
		}
	}
}

func TestSearchRefusesBadInput(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("K", "note", mql.String("some text"), "worker-3")
	for _, c := range []struct {
		text string
		opts mql.SearchOptions
		want string
	}{
		{"", mql.SearchOptions{}, "empty"},
		{" \t\n", mql.SearchOptions{}, "empty"},
		{"a\x00b", mql.SearchOptions{}, "NUL"},
		{strings.Repeat("word ", 1<<20/5), mql.SearchOptions{}, "at most 4096 bytes"},
		{"the of and", mql.SearchOptions{}, "no word to search for"},
		{"!!! ???", mql.SearchOptions{}, "no word to search for"},
		{"text", mql.SearchOptions{Limit: -1}, "limit -1"},
		{"text", mql.SearchOptions{Limit: mql.MaxSearchLimit + 1}, "runs from 1 to"},
		{"text", mql.SearchOptions{On: []string{"K.a.b c"}}, "search on"},
	} {
		head, _ := f.db.Head(f.ctx)
		_, err := f.db.Search(f.ctx, c.text, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Search(%.20q, %+v) = %v, want an error saying %q", c.text, c.opts, err, c.want)
		}
		if c.want != "search on" && !errors.Is(err, mql.ErrInvalid) {
			t.Errorf("Search(%.20q): %v is not ErrInvalid", c.text, err)
		}
		if h, _ := f.db.Head(f.ctx); h != head {
			t.Errorf("a refused search wrote: head %d → %d", head, h)
		}
	}
}

// A search for a run records what it served, as every read for a run does.
func TestSearchForRunRecordsWhatItServed(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("K", "note", mql.String("vendor pricing"), "worker-3")
	res, err := f.db.As("worker-3").ForRun("r1").Search(f.ctx, "pricing", mql.SearchOptions{})
	if err != nil || len(res.Hits) != 1 {
		t.Fatalf("search for run = %v, %v", res, err)
	}
	run, err := f.db.As("worker-3").Run(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("%+v", run)
	if !strings.Contains(s, "K.note@1") || !strings.Contains(s, `search \"pricing\"`) && !strings.Contains(s, `search "pricing"`) {
		t.Errorf("the run's record %s does not name the search and what it served", s)
	}
}

// The text index is part of the store on every backend: written with the claims, checked by
// check, and found again after the store is closed and opened.
func TestSearchOnEveryBackend(t *testing.T) {
	for name, dsnOf := range graphBackends(t) {
		t.Run(name, func(t *testing.T) {
			dsn := dsnOf(t)
			f := openDSN(t, dsn, mql.Options{}).team()
			f.assert("Klarveld", "pricing_note", mql.String("EU pricing for teams"), "worker-3")
			f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "pricing_note", Value: mql.String("secret EU pricing"), By: "worker-3", SeenBy: []string{"worker-3"}}))
			want := searchRows(f.db.Search(f.ctx, "EU pricing", mql.SearchOptions{}))
			if len(want) != 2 {
				t.Fatalf("owner's search = %q", want)
			}
			if got := searchRows(f.db.As("worker-7").Search(f.ctx, "EU pricing", mql.SearchOptions{})); len(got) != 1 || !strings.HasPrefix(got[0], "Klarveld.") {
				t.Errorf("worker-7's search = %q: want the claim it may see only", got)
			}
			rep, err := f.db.Check(f.ctx)
			if err != nil || len(rep.Problems) != 0 {
				t.Fatalf("check: %v, %+v", err, rep)
			}
			if name == "memory" {
				return
			}
			f.db.Close()
			g := openDSN(t, dsn, mql.Options{})
			if got := searchRows(g.db.Search(g.ctx, "EU pricing", mql.SearchOptions{})); !slices.Equal(got, want) {
				t.Errorf("after reopening: %q, want %q", got, want)
			}
		})
	}
}

// ---- twins: what a principal is told does not depend on what it may not see -----------------

// The words of the random texts: subjects among them, so that the subject signal weighs, and
// irregular forms ("buy", "bought"), so that a word's forms are merged.
var searchWords = strings.Fields("price pricing seat team plan vendor stealth ship sensor EU US yearly discount partner shipping contract renewal risk audit Klarveld Ostwind buy bought went go child children")

func randomText(rng *rand.Rand) string {
	n := 1 + rng.IntN(6)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = searchWords[rng.IntN(len(searchWords))]
	}
	return strings.Join(ws, " ")
}

// twinRows is a search's answers without what a hidden write may change by the rules
// (docs/MODEL.md, "What a principal can infer"): version numbers and transaction ids.
func twinRows(res mql.SearchResult, err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	rows := []string{}
	for _, h := range res.Hits {
		rows = append(rows, fmt.Sprintf("%s.%s=%s %s %v %s", h.Subject, h.Predicate, h.Value, h.State, h.Score, strings.Join(h.Terms, ",")))
	}
	return rows
}

// TestSearchTwins: two stores get the same writes of a visible team; the first also gets a
// hidden principal's claims (under the same subjects, with the same words, superseding and
// revoking among themselves). Every search of a visible principal, rows, order and scores (to
// the bit: %v prints a float64 exactly enough to tell any two apart), must be the same in both.
func TestSearchTwins(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 21))
			a, b := open(t, mql.Options{}).team(), open(t, mql.Options{}).team()
			for _, f := range []*fixture{a, b} {
				f.ok(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "spy", Type: mql.Agent, By: "owner"}))
			}
			subjects := []string{"Klarveld", "Brimsole", "Ostwind", "Player7"}
			preds := []string{"note", "summary", "pricing_note"}
			visible := []string{"worker-3", "worker-7"}
			for range 60 {
				subj, pred := subjects[rng.IntN(len(subjects))], preds[rng.IntN(len(preds))]
				if rng.IntN(3) == 0 {
					// A hidden write, in the first store only; its clock ticks in both, so that
					// the visible claims keep the same times.
					s := mql.AssertSpec{Subject: subj, Predicate: pred + "_h", Value: mql.String(randomText(rng)), By: "spy", SeenBy: []string{"spy"}}
					if rng.IntN(2) == 0 {
						s.Predicate = pred // the same key as the visible claims, another audience
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
				if rng.IntN(3) == 0 {
					s.Sources = []mql.Source{{ID: "src:" + subj, Excerpt: randomText(rng)}}
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
				text := randomText(rng)
				opts := mql.SearchOptions{History: rng.IntN(3) == 0, Limit: rng.IntN(8)}
				if rng.IntN(3) == 0 {
					opts.On = []string{subjects[rng.IntN(len(subjects))]}
				}
				for _, who := range visible {
					ra := twinRows(a.db.As(who).Search(a.ctx, text, opts))
					rb := twinRows(b.db.As(who).Search(b.ctx, text, opts))
					if !slices.Equal(ra, rb) {
						t.Fatalf("search %q %+v as %s:\nwith hidden claims    %q\nwithout hidden claims %q", text, opts, who, ra, rb)
					}
				}
			}
		})
	}
}

// TestSearchAsOfTxTwins: a search as of tx N gives the rows, order and scores that a store
// holding only the first N transactions gives.
func TestSearchAsOfTxTwins(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2121))
			type write func(f *fixture) (mql.Receipt, error)
			var writes []write
			subjects := []string{"Klarveld", "Brimsole", "Ostwind"}
			for range 40 {
				subj, text := subjects[rng.IntN(len(subjects))], randomText(rng)
				by := []string{"worker-3", "worker-7"}[rng.IntN(2)]
				switch rng.IntN(5) {
				case 0:
					writes = append(writes, func(f *fixture) (mql.Receipt, error) {
						return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: subj + ".note", By: "owner"})
					})
				default:
					writes = append(writes, func(f *fixture) (mql.Receipt, error) {
						return f.db.Assert(f.ctx, mql.AssertSpec{Subject: subj, Predicate: "note", Value: mql.String(text), By: by})
					})
				}
			}
			full := open(t, mql.Options{}).team()
			for _, w := range writes {
				w(full)
				full.clk.Add(time.Second)
			}
			head, _ := full.db.Head(full.ctx)
			for n := int64(8); n <= head; n += 1 + int64(rng.IntN(6)) {
				part := open(t, mql.Options{}).team()
				for _, w := range writes {
					if h, _ := part.db.Head(part.ctx); h >= n {
						break
					}
					w(part)
					part.clk.Add(time.Second)
				}
				if h, _ := part.db.Head(part.ctx); h != n {
					t.Fatalf("the partial store's head is %d, want %d", h, n)
				}
				for range 5 {
					text := randomText(rng)
					opts := mql.SearchOptions{History: rng.IntN(2) == 0}
					for _, who := range []string{"", "worker-3"} {
						rf, rp := full.db.AsOfTx(n), part.db.AsOfTx(n)
						if who != "" {
							rf, rp = rf.As(who), rp.As(who)
						}
						got := searchRows(rf.Search(context.Background(), text, opts))
						want := searchRows(rp.Search(context.Background(), text, opts))
						if !slices.Equal(got, want) {
							t.Fatalf("search %q %+v as %q as of tx %d:\nthe full store    %q\nthe first %d txs %q", text, opts, who, n, got, n, want)
						}
					}
				}
			}
		})
	}
}

// A search inside a transaction sees the transaction's own claims, as every read there does.
func TestSearchInsideATransaction(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("Klarveld", "note", mql.String("first pricing note"), "worker-3")
	_, err := f.db.Tx(f.ctx, "owner", func(tx *mql.Tx) error {
		if _, err := tx.Assert(mql.AssertSpec{Subject: "Brimsole", Predicate: "note", Value: mql.String("second pricing note"), By: "worker-3"}); err != nil {
			return err
		}
		res, err := tx.Reader().Search(f.ctx, "pricing", mql.SearchOptions{})
		if err != nil {
			return err
		}
		if got := refsOf(res); len(got) != 2 {
			t.Errorf("inside the transaction: %v, want both claims", got)
		}
		if _, err := tx.Assert(mql.AssertSpec{Subject: "Ostwind", Predicate: "note", Value: mql.String("third pricing note"), By: "worker-3"}); err != nil {
			return err
		}
		if got := refsOf(must2(tx.Reader().Search(f.ctx, "pricing", mql.SearchOptions{}))); len(got) != 3 {
			t.Errorf("after a second write: %v, want the three claims", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := refsOf(must2(f.db.Search(f.ctx, "pricing", mql.SearchOptions{}))); len(got) != 3 {
		t.Errorf("after the commit: %v", got)
	}
	rep, err := f.db.Check(f.ctx)
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("check: %v %+v", err, rep.Problems)
	}
}

// An irregular word's forms are one word to a search (analysis.Forms): "buy" finds "bought",
// and a claim holding both forms holds the word twice, once for each.
func TestSearchIrregularForms(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("Ingrid", "s1_t4", mql.String("I just bought a used Subaru Outback"), "worker-3")
	f.assert("Ingrid", "s2_t9", mql.String("The children went to the lake"), "worker-3")
	f.assert("Ingrid", "s3_t2", mql.String("We buy what we bought before"), "worker-3")
	f.assert("Ingrid", "s4_t1", mql.String("buy, buy the same"), "worker-3")
	res := must2(f.db.Search(f.ctx, "What car did she buy?", mql.SearchOptions{Signals: []string{mql.SignalText}}))
	if got := refsOf(res); !slices.Contains(got, "Ingrid.s1_t4@1") {
		t.Errorf("search buy = %v, want the claim that says bought", got)
	}
	for _, h := range res.Hits {
		if h.Ref == "Ingrid.s1_t4@1" && !slices.Equal(h.Terms, []string{"car", "buy"}) && !slices.Equal(h.Terms, []string{"buy"}) {
			t.Errorf("the bought claim matched %q, want the search's word buy", h.Terms)
		}
	}
	if got := refsOf(must2(f.db.Search(f.ctx, "go with the child", mql.SearchOptions{}))); !slices.Equal(got, []string{"Ingrid.s2_t9@1"}) {
		t.Errorf("search go with the child = %v, want the claim that says went and children", got)
	}
	// buy and bought in one search are one word, scored once; a claim holding buy once and
	// bought once scores as one holding buy twice (same length).
	one := searchRows(f.db.Search(f.ctx, "buy", mql.SearchOptions{Signals: []string{mql.SignalText}}))
	both := searchRows(f.db.Search(f.ctx, "buy bought", mql.SearchOptions{Signals: []string{mql.SignalText}}))
	if !slices.Equal(one, both) {
		t.Errorf("search buy = %q, search buy bought = %q: want the same rows and scores", one, both)
	}
	var mixed, twice float64
	for _, h := range must2(f.db.Search(f.ctx, "buy", mql.SearchOptions{Signals: []string{mql.SignalText}})).Hits {
		switch h.Ref {
		case "Ingrid.s3_t2@1":
			mixed = h.Score
		case "Ingrid.s4_t1@1":
			twice = h.Score
		}
	}
	if mixed == 0 || mixed != twice {
		t.Errorf("buy and bought scored %v, buy twice %v: want equal", mixed, twice)
	}
}

// The subject signal: a word of the search that a claim's subject holds weighs more, so a
// question naming a person finds what that person said before what others said to them.
func TestSearchSubjectSignal(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("Melanie", "s1_t3", mql.String("Caroline, did you adopt the puppy you told me about?"), "worker-3")
	f.assert("Caroline", "s1_t4", mql.String("I adopted a puppy and named him Oscar"), "worker-3")
	q := "What did Caroline name the puppy she adopted?"
	res := must2(f.db.Search(f.ctx, q, mql.SearchOptions{}))
	if got := refsOf(res); len(got) != 2 || got[0] != "Caroline.s1_t4@1" {
		t.Fatalf("search %q = %v, want Caroline's claim first", q, got)
	}
	if !slices.Equal(res.Signals, []string{"text", "subject"}) || !slices.Equal(res.Hits[0].Signals, []string{"text", "subject"}) || !slices.Equal(res.Hits[1].Signals, []string{"text"}) {
		t.Errorf("signals: search %q, hits %q and %q; want text and subject, the first hit both, the second text", res.Signals, res.Hits[0].Signals, res.Hits[1].Signals)
	}
	// Switched off, the claim's subject counts as any other word of its text.
	textOnly := must2(f.db.Search(f.ctx, q, mql.SearchOptions{Signals: []string{mql.SignalText}}))
	for _, h := range textOnly.Hits {
		if !slices.Equal(h.Signals, []string{"text"}) {
			t.Errorf("signals text: hit %s ranked by %q", h.Ref, h.Signals)
		}
		if h.Ref == "Caroline.s1_t4@1" && !(h.Score < res.Hits[0].Score) {
			t.Errorf("signals text: Caroline's claim scored %v, with the subject %v; want less", h.Score, res.Hits[0].Score)
		}
	}
	for _, c := range []struct {
		text string
		opts mql.SearchOptions
		want string
	}{
		{q, mql.SearchOptions{Signals: []string{mql.SignalSubject}}, "name text too"},
		{"", mql.SearchOptions{Vector: []float32{1, 0}, Signals: []string{mql.SignalSubject}}, "no text"},
		{q, mql.SearchOptions{Signals: []string{"recency"}}, "text, subject and vector"},
	} {
		if _, err := f.db.Search(f.ctx, c.text, c.opts); err == nil || !errors.Is(err, mql.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Search(%q, %+v) = %v, want ErrInvalid saying %q", c.text, c.opts, err, c.want)
		}
	}
}
