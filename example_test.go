package mql_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mql-dev/mql"
)

// tick is a deterministic clock for examples: each call is one second later. A reader
// following the feed calls it from its own goroutine, hence the lock.
func tick() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

// procurement opens a memory store holding the README's story: a price, a plan derived from it,
// and a revision of the price.
func procurement() (*mql.DB, context.Context) {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{Clock: tick()})
	if err != nil {
		panic(err)
	}
	for _, p := range []string{"worker-3", "worker-7", "orchestrator"} {
		must(db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}))
	}
	must(db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "alice", Type: mql.User, By: "owner"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3", Sources: []mql.Source{{ID: "src:Klarveld:rev0"}}}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("EU"), By: "worker-3", Sources: []mql.Source{{ID: "src:Klarveld:rev0"}}}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "soc2", Value: mql.Bool(true), By: "worker-3", Sources: []mql.Source{{ID: "src:Klarveld:rev0"}}}))
	must(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(89), By: "worker-7", Sources: []mql.Source{{ID: "src:Klarveld:rev1"}}}))
	return db, ctx
}

func must(rc mql.Receipt, err error) mql.Receipt {
	if err != nil {
		panic(err)
	}
	return rc
}

// The library in twenty lines: record a price, derive a plan from it, revise the price, and
// ask what is true now and what must be reviewed.
func Example() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{})
	defer db.Close()
	db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"})
	db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "orchestrator", Type: mql.Agent, By: "owner"})

	src := func(id string) []mql.Source { return []mql.Source{{ID: id}} }
	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3", Sources: src("src:Klarveld:rev0")})
	db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"})
	rc, _ := db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(89), By: "worker-3", Sources: src("src:Klarveld:rev1")})
	fmt.Println(rc.Ref, rc.State, "supersedes", rc.Supersedes)

	live, _ := db.Live(ctx, "Klarveld.price_per_seat")
	fmt.Println("live:", live[0].Ref, "=", live[0].Value)

	impact, _ := db.Impact(ctx, "Klarveld.price_per_seat@1", 0)
	for _, d := range impact.Dependents {
		fmt.Println(d.Artifact.Ref, d.Artifact.Review, strings.Join(d.Path, " → "))
	}
	// Output:
	// Klarveld.price_per_seat@2 live supersedes Klarveld.price_per_seat@1
	// live: Klarveld.price_per_seat@2 = 89
	// plan:pick-vendor@1 needs review Klarveld.price_per_seat@1 → plan:pick-vendor@1
}

func ExampleOpen() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mql-example")
	defer os.RemoveAll(dir)
	db, err := mql.Open(ctx, dir+"/team.db", mql.Options{Owner: "alice"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	fmt.Println(db.Backend(), db.Owner())
	// Output: bbolt alice
}

func ExampleDB_AddPrincipal() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{})
	rc, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"})
	fmt.Println(rc.Ref, rc.Tx, err)
	// Output: worker-3 2 <nil>
}

func ExampleDB_Grant() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{Strict: true})
	db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"})
	_, err := db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3"})
	fmt.Println(err)
	db.Grant(ctx, mql.GrantSpec{Grantee: "worker-3", Right: mql.RightAssert, Scope: "price_per_seat", By: "owner"})
	rc, err := db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3"})
	fmt.Println(rc.Ref, err)
	// Output:
	// worker-3 has no assert right on Klarveld.price_per_seat: ask the owner or a principal holding grant there to run `grant worker-3 assert on Klarveld.price_per_seat by …`
	// Klarveld.price_per_seat@1 <nil>
}

func ExampleDB_Assert() {
	db, ctx := procurement()
	rc, _ := db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(45), By: "orchestrator", Kind: mql.Inferred})
	fmt.Println(rc.Ref, rc.State, rc.Contests)
	// Output: Klarveld.price_per_seat@3 contested Klarveld.price_per_seat@2
}

func ExampleDB_Revoke() {
	db, ctx := procurement()
	rc, _ := db.Revoke(ctx, mql.RevokeSpec{Claim: "Klarveld.price_per_seat@2", By: "worker-7", Because: "misread the page"})
	fmt.Println(rc.Ref, rc.State)
	_, err := db.Revoke(ctx, mql.RevokeSpec{Claim: "Klarveld.region@1", By: "worker-7"})
	fmt.Println(err)
	// Output:
	// Klarveld.price_per_seat@2 revoked
	// worker-7 has no revoke right on Klarveld.region: ask the owner or a principal holding grant there to run `grant worker-7 revoke on Klarveld.region by …`
}

func ExampleDB_Confirm() {
	db, ctx := procurement()
	db.Grant(ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "Klarveld.*", By: "owner"})
	db.Confirm(ctx, mql.ConfirmSpec{Claim: "Klarveld.soc2", By: "alice"})
	live, _ := db.Live(ctx, "Klarveld.soc2")
	fmt.Println(live[0].Ref, live[0].Kind)
	// Output: Klarveld.soc2@1 confirmed
}

func ExampleDB_Derive() {
	db, ctx := procurement()
	rc, _ := db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat", "Klarveld.region"}, By: "orchestrator"})
	fmt.Println(rc.Ref, "supersedes", rc.Supersedes)
	// Output: plan:pick-vendor@2 supersedes plan:pick-vendor@1
}

func ExampleDB_Review() {
	db, ctx := procurement()
	db.Review(ctx, mql.ReviewSpec{Artifact: "plan:pick-vendor", By: "alice", Because: "re-checked against the new price"})
	h, _ := db.History(ctx, "plan:pick-vendor")
	fmt.Println(h.Artifacts[0].Ref, h.Artifacts[0].Review, h.Artifacts[0].LastReview.Because)
	// Output: plan:pick-vendor@1 ok re-checked against the new price
}

func ExampleDB_SetDecay() {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{Clock: func() time.Time { return now }})
	db.SetDecay(ctx, mql.DecaySpec{Predicate: "signal", HalfLife: 10 * time.Minute, By: "owner"})
	db.Assert(ctx, mql.AssertSpec{Subject: "L4", Predicate: "signal", Value: mql.Bool(true), By: "owner", Confidence: mql.Confidence(0.8)})
	now = now.Add(20 * time.Minute)
	live, _ := db.Live(ctx, "L4.signal")
	fmt.Printf("%.2f → %.2f\n", live[0].Confidence, live[0].Effective)
	// Output: 0.80 → 0.20
}

func ExampleDB_Live() {
	db, ctx := procurement()
	live, _ := db.Live(ctx, "*.soc2", mql.Filter{Op: "=", Value: mql.Bool(true)})
	for _, c := range live {
		fmt.Println(c.Ref, c.Value, c.State, c.By, c.Sources[0].ID)
	}
	// Output: Klarveld.soc2@1 true live worker-3 src:Klarveld:rev0
}

func ExampleDB_Find() {
	db, ctx := procurement()
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "price_per_seat", Value: mql.Number(52), By: "worker-3"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "region", Value: mql.String("EU"), By: "worker-3"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "soc2", Value: mql.Bool(true), By: "worker-3"}))
	res, _ := db.Find(ctx, mql.FindQuery{
		Select: []string{"?v", "?p"},
		Where: []mql.Cond{
			{Subject: mql.Var("v"), Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
			{Subject: mql.Var("v"), Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
			{Subject: mql.Var("v"), Predicate: "price_per_seat", Op: "=", Object: mql.Var("p")},
		},
		OrderBy: []mql.Order{{Var: "?p"}},
		Limit:   1,
	})
	fmt.Println(res.Rows[0].Values[0], res.Rows[0].Values[1])
	// Output: Brimsole 52
}

func ExampleDB_Why() {
	db, ctx := procurement()
	why, _ := db.Why(ctx, "Klarveld.price_per_seat")
	var walk func(n *mql.Node, indent string)
	walk = func(n *mql.Node, indent string) {
		switch n.Kind {
		case mql.NodeClaim:
			fmt.Printf("%s%s %s = %s by %s\n", indent, n.Relation, n.Claim.Ref, n.Claim.Value, n.Claim.By)
		case mql.NodeSource:
			fmt.Printf("%sfrom %s\n", indent, n.Source.ID)
		}
		for _, c := range n.Children {
			walk(c, indent+"  ")
		}
	}
	walk(why, "")
	// Output:
	//  Klarveld.price_per_seat@2 = 89 by worker-7
	//   from src:Klarveld:rev1
	//   supersedes Klarveld.price_per_seat@1 = 44 by worker-3
	//     from src:Klarveld:rev0
}

func ExampleDB_RevokedBy() {
	db, ctx := procurement()
	db.Revoke(ctx, mql.RevokeSpec{Claim: "Klarveld.price_per_seat@2", By: "owner", Because: "misread the page"})
	rb, _ := db.RevokedBy(ctx, "Klarveld.price_per_seat@2")
	fmt.Println(rb.Revocation.By, rb.Revocation.Standing, rb.Revocation.Because)
	rb, _ = db.RevokedBy(ctx, "Klarveld.price_per_seat@1")
	fmt.Println(rb.Revocation == nil, rb.Claim.State)
	// Output:
	// owner owner misread the page
	// true superseded
}

func ExampleDB_Impact() {
	db, ctx := procurement()
	imp, _ := db.Impact(ctx, "Klarveld.price_per_seat@1", 0)
	for _, d := range imp.Dependents {
		fmt.Println(d.Artifact.Ref, d.Artifact.Review, d.Artifact.Stale)
	}
	// Output: plan:pick-vendor@1 needs review [Klarveld.price_per_seat@1]
}

func ExampleDB_History() {
	db, ctx := procurement()
	h, _ := db.History(ctx, "Klarveld.price_per_seat")
	for _, c := range h.Claims {
		fmt.Println(c.Ref, c.Value, c.State, c.By)
	}
	// Output:
	// Klarveld.price_per_seat@1 44 superseded worker-3
	// Klarveld.price_per_seat@2 89 live worker-7
}

func ExampleDB_Conflicts() {
	db, ctx := procurement()
	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("US"), By: "orchestrator"})
	cs, _ := db.Conflicts(ctx, "Klarveld")
	fmt.Println(cs[0].Live.Ref, cs[0].Live.Value, "contested by", cs[0].Contested[0].Ref, cs[0].Contested[0].Value)
	// Output: Klarveld.region@1 "EU" contested by Klarveld.region@2 "US"
}

func ExampleDB_Beliefs() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{})
	for loc, c := range map[string]float64{"L1": 0.9, "L2": 0.05, "L3": 0.05} {
		db.Assert(ctx, mql.AssertSpec{Subject: loc, Predicate: "holds_horcrux", Value: mql.Bool(true), By: "owner", Confidence: mql.Confidence(c)})
	}
	b, _ := db.Beliefs(ctx, "*.holds_horcrux", nil)
	fmt.Printf("%s %.2f bits → %s %s\n", b.Top, b.Entropy, b.Decision, b.Pattern)
	// Output: L1 0.57 bits → act *.holds_horcrux
}

func ExampleDB_Context() {
	db, ctx := procurement()
	c, _ := db.Context(ctx, []string{"Klarveld"}, 60)
	fmt.Print(c.Text)
	fmt.Println(c.Tokens, "tokens")
	// Output:
	// Klarveld: price_per_seat=89 @2, region="EU" @1, soc2=true @1
	// 16 tokens
}

// A context for a question, when the subjects are not known: the claims search finds for it,
// one line per subject, the best match first, within the budget.
func ExampleDB_ContextFor() {
	db, ctx := procurement()
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "region", Value: mql.String("EU and US"), By: "worker-7"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Ostwind", Predicate: "region", Value: mql.String("US"), By: "worker-7"}))
	c, _ := db.ContextFor(ctx, "which vendors sell in the EU region", 24)
	fmt.Print(c.Text)
	fmt.Println(c.Tokens, "tokens", c.Refs)
	// Output:
	// Klarveld: region="EU" @1
	// (left out for the token budget: 2 subjects: Brimsole, Ostwind)
	// 22 tokens [Klarveld.region@1]
}

func ExampleDB_Stats() {
	db, ctx := procurement()
	s, _ := db.Stats(ctx)
	fmt.Println(s.Claims, s.ByState[mql.Live], s.ByState[mql.Superseded], s.Artifacts, s.NeedsReview, s.StaleRate)
	// Output: 4 3 1 1 1 1
}

func ExampleDB_As() {
	db, ctx := procurement()
	db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "architect", Type: mql.Agent, By: "owner"})
	db.Assert(ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("patient"), By: "architect", SeenBy: []string{"architect"}})
	mine, _ := db.As("architect").Live(ctx, "Player7")
	theirs, _ := db.As("worker-3").Live(ctx, "Player7")
	fmt.Println(len(mine), len(theirs))
	// Output: 1 0
}

func ExampleDB_AsOfTx() {
	db, ctx := procurement()
	old, _ := db.AsOfTx(6).Live(ctx, "Klarveld.price_per_seat")
	fmt.Println(old[0].Value)
	// Output: 44
}

func ExampleDB_AsOf() {
	db, ctx := procurement()
	old, _ := db.AsOf(time.Date(2026, 11, 29, 10, 0, 8, 0, time.UTC)).Live(ctx, "Klarveld.price_per_seat")
	fmt.Println(old[0].Value)
	// Output: 44
}

func ExampleDB_Export() {
	db, ctx := procurement()
	var b strings.Builder
	db.Export(ctx, &b)
	fmt.Println(strings.Contains(b.String(), "<http://www.w3.org/ns/prov#wasRevisionOf>"))
	// Output: true
}

func ExampleReader_Catalog() {
	db, ctx := procurement()
	c, _ := db.As("worker-3").Catalog(ctx)
	fmt.Println(c.Keys)
	fmt.Println(c.Artifacts)
	// Output:
	// [Klarveld.price_per_seat Klarveld.region Klarveld.soc2]
	// [plan:pick-vendor]
}

func ExampleReader_ReviewQueue() {
	db, ctx := procurement()
	q, _ := db.Reader().ReviewQueue(ctx)
	fmt.Println(q[0].Ref, q[0].Review, q[0].Stale)
	// Output: plan:pick-vendor@1 needs review [Klarveld.price_per_seat@1]
}

// A run reads its context for the run, decides, and ends; the price it was served is then
// revised. The run's report says the served version went stale before its decision.
func ExampleReader_ForRun() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{Clock: tick()})
	defer db.Close()
	must(db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "orchestrator", Type: mql.Agent, By: "owner"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "owner"}))

	cx, _ := db.As("orchestrator").ForRun("r-17").Context(ctx, []string{"Klarveld"}, 60)
	fmt.Print(cx.Text)
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(89), By: "owner"}))
	must(db.Derive(ctx, mql.DeriveSpec{Artifact: "pick", From: []string{"Klarveld.price_per_seat@1"}, By: "orchestrator", Run: "r-17"}))
	must(db.Outcome(ctx, mql.OutcomeSpec{Run: "r-17", Result: mql.Failed, Because: "paid 89", By: "orchestrator"}))

	reps, _ := db.As("orchestrator").Run(ctx, "r-17")
	for _, s := range reps[0].Served {
		fmt.Printf("%s: %s when served, %s at the decision (stale %s), cited %v\n", s.Ref, s.WhenServed, s.AtDecision, s.Stale, s.Cited)
	}
	fmt.Println(reps[0].Outcome, "memory failure:", reps[0].MemoryFailure)
	// Output:
	// Klarveld: price_per_seat=44 @1
	// Klarveld.price_per_seat@1: live when served, superseded at the decision (stale at decision), cited true
	// failed memory failure: true
}

// The memory metrics over every run the reader may see (see docs/MODEL.md).
func ExampleReader_MemoryStats() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{Clock: tick()})
	defer db.Close()
	must(db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "owner"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "price_per_seat", Value: mql.Number(50), By: "owner"}))
	w3 := db.As("worker-3")
	w3.ForRun("r-1").Context(ctx, []string{"Klarveld", "Brimsole"}, 0)
	must(db.Derive(ctx, mql.DeriveSpec{Artifact: "pick", From: []string{"Brimsole.price_per_seat"}, By: "worker-3", Run: "r-1"}))
	must(db.Outcome(ctx, mql.OutcomeSpec{Run: "r-1", Result: mql.Succeeded, By: "worker-3"}))
	w3.ForRun("r-2").Live(ctx, "Klarveld")
	must(db.Outcome(ctx, mql.OutcomeSpec{Run: "r-2", Result: mql.Declined, By: "worker-3"}))

	m, _ := w3.MemoryStats(ctx, "", time.Time{})
	fmt.Printf("runs %d, stale-memory rate %.2f, context utilization %.2f, diversity %.1f, decline rate %.2f\n",
		m.Runs, m.StaleMemoryRate, m.ContextUtilization, m.RetrievalDiversity, m.DeclineRate)
	// Output:
	// runs 2, stale-memory rate 0.00, context utilization 0.50, diversity 1.5, decline rate 0.50
}
