package mql_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// vec is a vector of the test's dimension 4.
func vec(xs ...float32) []float32 { return xs }

// vectorStory writes claims with vectors (one seen by worker-3 only, one in a transaction of
// several, one superseded) and one without.
func vectorStory(f *fixture) {
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "note", Value: mql.String("EU pricing for teams"), By: "worker-3", Vector: vec(1, 0, 0, 0)}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "note", Value: mql.String("secret EU pricing"), By: "worker-3", SeenBy: []string{"worker-3"}, Vector: vec(0.9, 0.1, 0, 0)}))
	if _, err := f.db.AssertBatch(f.ctx, "worker-7", []mql.AssertSpec{
		{Subject: "Ostwind", Predicate: "note", Value: mql.String("ship sensors"), By: "worker-7", Vector: vec(0, 1, 0, 0)},
		{Subject: "Player7", Predicate: "note", Value: mql.String("moves in stealth"), By: "worker-7"},
		{Subject: "Player7", Predicate: "mood", Value: mql.String("calm"), By: "worker-7", Vector: vec(0, 0, 1, 1e-7)},
	}); err != nil {
		f.t.Fatal(err)
	}
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Ostwind", Predicate: "note", Value: mql.String("ship and drone sensors"), By: "worker-7", Vector: vec(0, 0.8, 0.6, 0)}))
}

func vectorRefs(res mql.SearchResult, err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	rows := []string{}
	for _, h := range res.Hits {
		rows = append(rows, fmt.Sprintf("%s %s %.4f", h.Ref, strings.Join(h.Signals, "+"), h.Score))
	}
	return rows
}

// Vectors are stored with their claims on every backend, survive reopening, are checked, and
// an export holds them so that its import exports the same bytes.
func TestVectorsStoredExportedImported(t *testing.T) {
	for name, dsnOf := range graphBackends(t) {
		t.Run(name, func(t *testing.T) {
			dsn := dsnOf(t)
			f := openDSN(t, dsn, mql.Options{}).team()
			vectorStory(f)
			// Player7.mood@1 and Ostwind.note@2 are orthogonal to the query: in the order recorded.
			want := []string{"Klarveld.note@1 vector 1.0000", "Brimsole.note@1 vector 0.9939", "Player7.mood@1 vector 0.0000", "Ostwind.note@2 vector 0.0000"}
			if got := vectorRefs(f.db.Search(f.ctx, "", mql.SearchOptions{Vector: vec(1, 0, 0, 0)})); !slices.Equal(got, want) {
				t.Errorf("owner's vector search = %q, want %q", got, want)
			}
			rep, err := f.db.Check(f.ctx)
			if err != nil || !rep.OK() {
				t.Fatalf("check: %v, %+v", err, rep)
			}
			var exp bytes.Buffer
			if err := f.db.Export(f.ctx, &exp); err != nil {
				t.Fatal(err)
			}
			for _, line := range []string{
				`<urn:mql:claim:Klarveld.note@1> <urn:mql:vector> "1 0 0 0"^^<urn:mql:Vector>`,
				`<urn:mql:claim:Player7.mood@1> <urn:mql:vector> "0 0 1 1e-07"^^<urn:mql:Vector>`,
				`<urn:mql:claim:Ostwind.note@2> <urn:mql:vector> "0 0.8 0.6 0"^^<urn:mql:Vector>`,
			} {
				if !strings.Contains(exp.String(), line) {
					t.Errorf("the export lacks %s", line)
				}
			}
			if strings.Contains(exp.String(), "<urn:mql:claim:Player7.note@1> <urn:mql:vector>") {
				t.Errorf("the export gives a vector to the claim written without one")
			}
			path := filepath.Join(t.TempDir(), "copy.db")
			if _, err := mql.ImportStore(f.ctx, path, bytes.NewReader(exp.Bytes()), mql.Options{}); err != nil {
				t.Fatal(err)
			}
			cp := openDSN(t, path, mql.Options{})
			var again bytes.Buffer
			if err := cp.db.Export(cp.ctx, &again); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(again.Bytes(), exp.Bytes()) {
				t.Fatalf("the import exports differently:\n%s\nwant\n%s", again.String(), exp.String())
			}
			if got := vectorRefs(cp.db.Search(cp.ctx, "", mql.SearchOptions{Vector: vec(1, 0, 0, 0)})); !slices.Equal(got, want) {
				t.Errorf("the import's vector search = %q, want %q", got, want)
			}
			if rep, err := cp.db.Check(cp.ctx); err != nil || !rep.OK() {
				t.Fatalf("check of the import: %v, %+v", err, rep)
			}
			if name == "memory" {
				return
			}
			f.db.Close()
			g := openDSN(t, dsn, mql.Options{})
			if got := vectorRefs(g.db.Search(g.ctx, "", mql.SearchOptions{Vector: vec(1, 0, 0, 0)})); !slices.Equal(got, want) {
				t.Errorf("after reopening: %q, want %q", got, want)
			}
			// The dimension is persisted: after reopening, it still refuses another.
			if _, err := g.db.Assert(g.ctx, mql.AssertSpec{Subject: "X", Predicate: "y", Value: mql.Bool(true), By: "owner", Vector: vec(1, 2)}); !errors.Is(err, mql.ErrVector) {
				t.Errorf("a 2-dimensional vector after reopening: %v, want ErrVector", err)
			}
		})
	}
}

// A vector that is not one is refused, naming the claim and what is wrong, and nothing is
// written: not the claim, not the rest of its batch.
func TestVectorsRefused(t *testing.T) {
	f := open(t, mql.Options{}).team()
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	cases := []struct {
		v    []float32
		want string
	}{
		{[]float32{}, "empty"},
		{vec(0, 0, 0, 0), "no direction"},
		{vec(1, nan, 0, 0), "component 1 is NaN"},
		{vec(1, 0, inf, 0), "component 2 is -Inf"},
		{make([]float32, mql.MaxVectorDim+1), "at most 8192"},
	}
	for _, c := range cases {
		head, _ := f.db.Head(f.ctx)
		_, err := f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "note", Value: mql.String("x"), By: "worker-3", Vector: c.v})
		if !errors.Is(err, mql.ErrVector) || !errors.Is(err, mql.ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Klarveld.note") {
			t.Errorf("vector %v: %v, want ErrVector saying %q and naming Klarveld.note", c.v, err, c.want)
		}
		if h, _ := f.db.Head(f.ctx); h != head {
			t.Errorf("vector %v: the head moved from %d to %d", c.v, head, h)
		}
	}
	// The first vector fixes the dimension, within its own batch too.
	_, err := f.db.AssertBatch(f.ctx, "worker-3", []mql.AssertSpec{
		{Subject: "A", Predicate: "n", Value: mql.Number(1), By: "worker-3", Vector: vec(1, 2, 3)},
		{Subject: "B", Predicate: "n", Value: mql.Number(1), By: "worker-3", Vector: vec(1, 2, 3, 4)},
	})
	if !errors.Is(err, mql.ErrVector) || !strings.Contains(err.Error(), "B.n") || !strings.Contains(err.Error(), "4 dimensions, and the store's vectors have 3") {
		t.Errorf("a batch of two dimensions: %v", err)
	}
	if res, _ := f.db.Live(f.ctx, "A.n"); len(res) != 0 {
		t.Errorf("the refused batch wrote %v", res)
	}
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "A", Predicate: "n", Value: mql.Number(1), By: "worker-3", Vector: vec(1, 2, 3, 4, 5)}))
	_, err = f.db.Assert(f.ctx, mql.AssertSpec{Subject: "B", Predicate: "n", Value: mql.Number(1), By: "worker-3", Vector: vec(1, 2, 3)})
	if !errors.Is(err, mql.ErrVector) || !strings.Contains(err.Error(), "3 dimensions, and the store's vectors have 5") {
		t.Errorf("a vector of another dimension: %v", err)
	}
	_, err = f.db.Search(f.ctx, "", mql.SearchOptions{Vector: vec(1, 2)})
	if !errors.Is(err, mql.ErrVector) || !strings.Contains(err.Error(), "2 dimensions") {
		t.Errorf("a search vector of another dimension: %v", err)
	}
	if _, err := f.db.Search(f.ctx, "", mql.SearchOptions{Vector: vec(0, 0, 0, 0, 0)}); !errors.Is(err, mql.ErrVector) {
		t.Errorf("a zero search vector: %v", err)
	}
	if _, err := f.db.Search(f.ctx, "", mql.SearchOptions{}); !errors.Is(err, mql.ErrInvalid) {
		t.Errorf("a search of nothing: %v", err)
	}
	if _, err := f.db.Search(f.ctx, "note", mql.SearchOptions{Signals: []string{"vector"}}); !errors.Is(err, mql.ErrInvalid) || !strings.Contains(err.Error(), "no vector") {
		t.Errorf("signal vector without a vector: %v", err)
	}
	if _, err := f.db.Search(f.ctx, "note", mql.SearchOptions{Signals: []string{"colour"}}); !errors.Is(err, mql.ErrInvalid) {
		t.Errorf("an unknown signal: %v", err)
	}
	if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
		t.Fatalf("check: %v, %+v", err, rep)
	}
}

// Text and vector signals fuse by reciprocal rank; each can be switched off.
func TestVectorSearchFusion(t *testing.T) {
	f := open(t, mql.Options{}).team()
	vectorStory(f)
	q := vec(0, 1, 0.1, 0)
	// By text, "EU pricing" ranks Klarveld then Brimsole (which the rest do not hold); by
	// vector, Ostwind@2 (cosine 0.856), Brimsole (0.110), Player7.mood (0.0995), Klarveld (0).
	both := vectorRefs(f.db.Search(f.ctx, "EU pricing", mql.SearchOptions{Vector: q}))
	r := func(ranks ...int) string {
		s := 0.0
		for _, k := range ranks {
			s += 1 / float64(mql.RRFK+k)
		}
		return fmt.Sprintf("%.4f", s)
	}
	want := []string{
		"Brimsole.note@1 text+vector " + r(2, 2),
		"Klarveld.note@1 text+vector " + r(1, 4),
		"Ostwind.note@2 vector " + r(1),
		"Player7.mood@1 vector " + r(3),
	}
	if !slices.Equal(both, want) {
		t.Errorf("fused = %q\nwant    %q", both, want)
	}
	text := vectorRefs(f.db.Search(f.ctx, "EU pricing", mql.SearchOptions{Vector: q, Signals: []string{"text"}}))
	if len(text) != 2 || !strings.HasPrefix(text[0], "Klarveld.note@1 text ") {
		t.Errorf("text only = %q", text)
	}
	if plain := vectorRefs(f.db.Search(f.ctx, "EU pricing", mql.SearchOptions{})); !slices.Equal(plain, text) {
		t.Errorf("text signal switched on %q, a search without a vector %q", text, plain)
	}
	vector := vectorRefs(f.db.Search(f.ctx, "EU pricing", mql.SearchOptions{Vector: q, Signals: []string{"vector"}, Limit: 1}))
	if !slices.Equal(vector, []string{"Ostwind.note@2 vector 0.8557"}) {
		t.Errorf("vector only, limit 1 = %q", vector)
	}
	// The superseded version's vector answers only with history; on narrows both signals.
	hist := vectorRefs(f.db.Search(f.ctx, "", mql.SearchOptions{Vector: vec(0, 1, 0, 0), History: true, On: []string{"Ostwind"}}))
	if !slices.Equal(hist, []string{"Ostwind.note@1 vector 1.0000", "Ostwind.note@2 vector 0.8000"}) {
		t.Errorf("history on Ostwind = %q", hist)
	}
	// worker-7 may not see Brimsole's claim: it is neither ranked nor counted in the ranks.
	w7 := vectorRefs(f.db.As("worker-7").Search(f.ctx, "EU pricing", mql.SearchOptions{Vector: q}))
	want7 := []string{"Klarveld.note@1 text+vector " + r(1, 3), "Ostwind.note@2 vector " + r(1), "Player7.mood@1 vector " + r(2)}
	if !slices.Equal(w7, want7) {
		t.Errorf("worker-7's fused = %q\nwant              %q", w7, want7)
	}
	// A search for a run records a statement that gives the same answer.
	res, err := f.db.As("worker-3").ForRun("r1").Search(f.ctx, "EU pricing", mql.SearchOptions{Vector: q, Limit: 2})
	if err != nil || len(res.Hits) != 2 {
		t.Fatalf("search for a run: %v, %+v", err, res)
	}
	run, err := f.db.As("worker-3").Run(f.ctx, "r1")
	if s := fmt.Sprintf("%+v", run); err != nil || !strings.Contains(s, `search "EU pricing" vector "0 1 0.1 0" limit 2`) {
		t.Errorf("the run's record: %v, %s", err, s)
	}
}

// vectorOf is a random unit-ish vector near one of a few directions, so that searches rank
// many claims closely.
func vectorOf(rng *rand.Rand) []float32 {
	v := make([]float32, 8)
	v[rng.IntN(8)] = 1
	for i := range v {
		v[i] += float32(rng.IntN(5)) / 10
	}
	return v
}

// TestVectorSearchTwins is TestSearchTwins with vectors: a hidden principal's claims carry
// vectors too, and every search of a visible principal — by text, by vector, fused — gives the
// same rows, order and scores with and without them.
func TestVectorSearchTwins(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 2121))
			a, b := open(t, mql.Options{}).team(), open(t, mql.Options{}).team()
			for _, f := range []*fixture{a, b} {
				f.ok(f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: "spy", Type: mql.Agent, By: "owner"}))
				// A visible vector first: the store's dimension is the store's, and so is
				// whether it holds a vector at all.
				f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "seed", Value: mql.String("price"), By: "worker-3", Vector: vectorOf(rand.New(rand.NewPCG(1, 1)))}))
			}
			subjects := []string{"Klarveld", "Brimsole", "Ostwind", "Player7"}
			preds := []string{"note", "summary", "pricing_note"}
			visible := []string{"worker-3", "worker-7"}
			for range 60 {
				subj, pred := subjects[rng.IntN(len(subjects))], preds[rng.IntN(len(preds))]
				if rng.IntN(3) == 0 {
					s := mql.AssertSpec{Subject: subj, Predicate: pred + "_h", Value: mql.String(randomText(rng)), By: "spy", SeenBy: []string{"spy"}, Vector: vectorOf(rng)}
					if rng.IntN(2) == 0 {
						s.Predicate = pred
					}
					a.ok(a.db.Assert(a.ctx, s))
					b.clk.Add(time.Second)
					continue
				}
				by := visible[rng.IntN(2)]
				s := mql.AssertSpec{Subject: subj, Predicate: pred, Value: mql.String(randomText(rng)), By: by}
				if rng.IntN(4) != 0 {
					s.Vector = vectorOf(rng)
				}
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
			for i := range 40 {
				text := randomText(rng)
				opts := mql.SearchOptions{History: rng.IntN(3) == 0, Limit: rng.IntN(8), Vector: vectorOf(rng)}
				switch i % 3 {
				case 1:
					text = ""
				case 2:
					opts.Signals = []string{"vector"}
				}
				if rng.IntN(3) == 0 {
					opts.On = []string{subjects[rng.IntN(len(subjects))]}
				}
				for _, who := range visible {
					ra := twinRows(a.db.As(who).Search(a.ctx, text, opts))
					rb := twinRows(b.db.As(who).Search(b.ctx, text, opts))
					if !slices.Equal(ra, rb) {
						t.Fatalf("search %q %+v as %s:\nwith hidden claims    %q\nwithout hidden claims %q", text, opts, who, ra, rb)
					}
					if len(ra) == 0 {
						t.Fatalf("search %q %+v as %s found nothing: the twins compare nothing", text, opts, who)
					}
				}
			}
			for _, f := range []*fixture{a, b} {
				if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
					t.Fatalf("check: %v, %+v", err, rep)
				}
			}
		})
	}
}

// An import reads vectors as the export writes them and refuses one that is not a vector of
// the store's dimension, naming its line; nothing is imported.
func TestImportRefusesBadVectors(t *testing.T) {
	f := open(t, mql.Options{}).team()
	vectorStory(f)
	var exp bytes.Buffer
	if err := f.db.Export(f.ctx, &exp); err != nil {
		t.Fatal(err)
	}
	good := `"0 0.8 0.6 0"^^<urn:mql:Vector>`
	if !strings.Contains(exp.String(), good) {
		t.Fatalf("the export lacks %s", good)
	}
	for bad, want := range map[string]string{
		`"0 0.8 NaN 0"^^<urn:mql:Vector>`:  "component 2 is NaN",
		`"0 0.8 0.60 0"^^<urn:mql:Vector>`: `not in its shortest form "0.6"`,
		`"0 0.8 0.6"^^<urn:mql:Vector>`:    "3 dimensions; the store's vectors have 4",
		`"0 0 0 0"^^<urn:mql:Vector>`:      "no direction",
		`"0 0.8 0.6 0"`:                    "must be a literal of datatype <urn:mql:Vector>",
	} {
		path := filepath.Join(t.TempDir(), "copy.db")
		_, err := mql.ImportStore(f.ctx, path, strings.NewReader(strings.Replace(exp.String(), good, bad, 1)), mql.Options{})
		var ie *mql.ImportError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), want) || ie.Line < 1 {
			t.Errorf("import with %s: %v; want an ImportError naming its line and saying %q", bad, err, want)
		}
	}
}

// testdata/kv3-before-vectors.db is a store of format mql-kv/3 written by mql before vectors
// (at 7e09da4: a claim with a source and excerpt, one seen by worker-3 only, a number). It
// opens as it is, checks clean, searches by text as before, and then takes vectors: the first
// fixes the dimension, and the store still checks clean and exports what it imports.
func TestStoreBeforeVectors(t *testing.T) {
	src, err := os.ReadFile("testdata/kv3-before-vectors.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "s.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	f := openDSN(t, path, mql.Options{})
	if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() || rep.Claims != 3 {
		t.Fatalf("check of the store before vectors: %v, %+v", err, rep)
	}
	if got := refsOf(must2(f.db.Search(f.ctx, "billed yearly", mql.SearchOptions{}))); !slices.Equal(got, []string{"Klarveld.pricing_note@1"}) {
		t.Errorf("search billed yearly = %v", got)
	}
	// No vector yet: a search by vector finds nothing, and says nothing of a dimension.
	if got := vectorRefs(f.db.Search(f.ctx, "", mql.SearchOptions{Vector: vec(1, 2)})); len(got) != 0 {
		t.Errorf("a search by vector in a store without vectors: %q", got)
	}
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "pricing_note", Value: mql.String("EU pricing, 48 a seat"), By: "worker-3",
		Sources: []mql.Source{{ID: "src:k"}}, Vector: vec(0, 1, 0)}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Ostwind", Predicate: "summary", Value: mql.String("ship sensors"), By: "worker-3", SeenBy: []string{"worker-3"}, Vector: vec(1, 0, 0)}))
	// Text ranks the pricing note, then price_per_seat ("price"); the vector, Ostwind's
	// summary (seen by worker-3), then the pricing note.
	want := []string{"Klarveld.pricing_note@2 text+vector 0.0325", "Ostwind.summary@2 vector 0.0164", "Klarveld.price_per_seat@1 text 0.0161"}
	if got := vectorRefs(f.db.As("worker-3").Search(f.ctx, "pricing", mql.SearchOptions{Vector: vec(1, 0.1, 0)})); !slices.Equal(got, want) {
		t.Errorf("fused search after the first vectors: %q", got)
	}
	if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
		t.Fatalf("check after the first vectors: %v, %+v", err, rep)
	}
	var exp bytes.Buffer
	if err := f.db.Export(f.ctx, &exp); err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "copy.db")
	if _, err := mql.ImportStore(f.ctx, cp, bytes.NewReader(exp.Bytes()), mql.Options{}); err != nil {
		t.Fatal(err)
	}
	g := openDSN(t, cp, mql.Options{})
	var again bytes.Buffer
	if err := g.db.Export(g.ctx, &again); err != nil || !bytes.Equal(again.Bytes(), exp.Bytes()) {
		t.Fatalf("the import exports differently (%v)", err)
	}
}

// A search by vector (and fused) as of tx N gives the rows, order and scores that a store
// holding only the first N transactions gives: a vector recorded later is not compared.
func TestVectorSearchAsOfTxTwins(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 2121))
	type write struct {
		spec   mql.AssertSpec
		revoke bool
	}
	var writes []write
	subjects := []string{"Klarveld", "Brimsole", "Ostwind"}
	for range 40 {
		subj := subjects[rng.IntN(len(subjects))]
		if rng.IntN(5) == 0 {
			writes = append(writes, write{spec: mql.AssertSpec{Subject: subj, Predicate: "note"}, revoke: true})
			continue
		}
		writes = append(writes, write{spec: mql.AssertSpec{Subject: subj, Predicate: "note", Value: mql.String(randomText(rng)), By: "worker-3", Vector: vectorOf(rng)}})
	}
	apply := func(f *fixture, w write) {
		if w.revoke {
			f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: w.spec.Subject + ".note", By: "owner"}) // may find none live
		} else {
			f.ok(f.db.Assert(f.ctx, w.spec))
		}
		f.clk.Add(time.Second)
	}
	full := open(t, mql.Options{}).team()
	for _, w := range writes {
		apply(full, w)
	}
	head, _ := full.db.Head(full.ctx)
	compared := 0
	for n := int64(10); n <= head; n += 1 + int64(rng.IntN(6)) {
		part := open(t, mql.Options{}).team()
		for _, w := range writes {
			if h, _ := part.db.Head(part.ctx); h >= n {
				break
			}
			apply(part, w)
		}
		for range 4 {
			text := randomText(rng)
			opts := mql.SearchOptions{History: rng.IntN(2) == 0, Vector: vectorOf(rng)}
			if rng.IntN(2) == 0 {
				text = ""
			}
			got := searchRows(full.db.AsOfTx(n).Search(full.ctx, text, opts))
			want := searchRows(part.db.AsOfTx(n).Search(part.ctx, text, opts))
			if !slices.Equal(got, want) {
				t.Fatalf("search %q %+v as of tx %d:\nthe full store    %q\nthe first %d txs %q", text, opts, n, got, n, want)
			}
			compared += len(got)
		}
	}
	if compared == 0 {
		t.Fatal("no rows compared")
	}
}
