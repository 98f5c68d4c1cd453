package mql_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mql-dev/mql"
)

// A team is set up in one transaction: a new agent, its right and its first claim commit
// together, under one id. Reads through tx.Reader() see the writes before they commit.
func ExampleDB_Tx() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{Clock: tick(), Strict: true})
	defer db.Close()
	id, err := db.Tx(ctx, "owner", func(tx *mql.Tx) error {
		if _, err := tx.AddPrincipal(mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"}); err != nil {
			return err
		}
		if _, err := tx.Grant(mql.GrantSpec{Grantee: "worker-3", Right: mql.RightAssert, Scope: "Klarveld.*", By: "owner"}); err != nil {
			return err
		}
		rc, err := tx.Assert(mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3"})
		if err != nil {
			return err
		}
		live, err := tx.Reader().Live(ctx, "Klarveld.price_per_seat")
		if err != nil {
			return err
		}
		fmt.Println(rc.Ref, "in tx", rc.Tx, "; live inside:", live[0].Value)
		return nil
	})
	fmt.Println("committed tx", id, err)
	live, _ := db.Live(ctx, "Klarveld.price_per_seat")
	fmt.Println(live[0].Ref, live[0].By, "tx", live[0].Tx)
	// Output:
	// Klarveld.price_per_seat@1 in tx 2 ; live inside: 44
	// committed tx 2 <nil>
	// Klarveld.price_per_seat@1 worker-3 tx 2
}

// A transaction whose function returns an error writes nothing: not even the writes that
// were accepted before the error.
func ExampleDB_Tx_abandoned() {
	db, ctx := procurement()
	before, _ := db.Head(ctx)
	id, err := db.Tx(ctx, "owner", func(tx *mql.Tx) error {
		if _, err := tx.Assert(mql.AssertSpec{Subject: "Brimsole", Predicate: "price_per_seat", Value: mql.Number(52), By: "worker-3"}); err != nil {
			return err
		}
		_, err := tx.Revoke(mql.RevokeSpec{Claim: "Klarveld.price_per_seat@9", By: "owner"})
		return err
	})
	fmt.Println(id, err)
	after, _ := db.Head(ctx)
	live, _ := db.Live(ctx, "Brimsole")
	fmt.Println("head", before, "→", after, "; Brimsole claims:", len(live))
	// Output:
	// 0 Klarveld.price_per_seat@9: not found: no such version; the newest is Klarveld.price_per_seat@2
	// head 10 → 10 ; Brimsole claims: 0
}

// A bulk load: three claims, one transaction. A batch with one bad claim records none of them.
func ExampleDB_AssertBatch() {
	db, ctx := procurement()
	rcs, err := db.AssertBatch(ctx, "owner", []mql.AssertSpec{
		{Subject: "Brimsole", Predicate: "price_per_seat", Value: mql.Number(52), By: "worker-3"},
		{Subject: "Brimsole", Predicate: "region", Value: mql.String("EU"), By: "worker-3"},
		{Subject: "Brimsole", Predicate: "soc2", Value: mql.Bool(true), By: "worker-3"},
	})
	for _, rc := range rcs {
		fmt.Println(rc.Ref, rc.State, "tx", rc.Tx)
	}
	fmt.Println(err)

	_, err = db.AssertBatch(ctx, "owner", []mql.AssertSpec{
		{Subject: "Ostwik", Predicate: "price_per_seat", Value: mql.Number(39), By: "worker-3"},
		{Subject: "Ostwik", Predicate: "region", Value: mql.String("EU"), By: "worker-9"},
	})
	fmt.Println(err)
	live, _ := db.Live(ctx, "Ostwik")
	fmt.Println("Ostwik claims:", len(live))
	// Output:
	// Brimsole.price_per_seat@1 live tx 11
	// Brimsole.region@1 live tx 11
	// Brimsole.soc2@1 live tx 11
	// <nil>
	// claim 2: "worker-9": unknown principal: record it first, e.g. `principal worker-9 agent`
	// Ostwik claims: 0
}

// runStory is a run: worker-3 reads the price for run r-1, decides from it, and the price is
// revised before the run ends.
func runStory() (*mql.DB, context.Context) {
	db, ctx := procurement()
	w3 := db.As("worker-3")
	w3.ForRun("r-1").Live(ctx, "Klarveld.price_per_seat")
	must(db.Derive(ctx, mql.DeriveSpec{Artifact: "po:Klarveld", From: []string{"Klarveld.price_per_seat"}, By: "worker-3", Run: "r-1"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(95), By: "worker-7", Sources: []mql.Source{{ID: "src:Klarveld:rev2"}}}))
	return db, ctx
}

// The run ends: it failed. The last outcome a run records is the one that counts.
func ExampleDB_Outcome() {
	db, ctx := runStory()
	rc, err := db.Outcome(ctx, mql.OutcomeSpec{Run: "r-1", Result: mql.Failed, Because: "invoice said 95", By: "worker-3"})
	fmt.Println(rc.Ref, err)
	_, err = db.Outcome(ctx, mql.OutcomeSpec{Run: "r-1", Result: "abandoned", By: "worker-3"})
	fmt.Println(errors.Is(err, mql.ErrInvalid))
	reps, _ := db.As("worker-3").Run(ctx, "r-1")
	fmt.Println(reps[0].Outcome, reps[0].Because)
	// Output:
	// r-1 <nil>
	// true
	// failed invoice said 95
}

// The report of one run: what each read served, what was decided from it, how it ended, and
// whether the memory is to blame.
func ExampleReader_Run() {
	db, ctx := runStory()
	must(db.Outcome(ctx, mql.OutcomeSpec{Run: "r-1", Result: mql.Failed, Because: "invoice said 95", By: "worker-3"}))
	reps, _ := db.As("worker-3").Run(ctx, "r-1")
	r := reps[0]
	fmt.Println(r.Run, r.By, "decided", r.Decisions, "at tx", r.DecisionTx)
	for _, s := range r.Served {
		fmt.Printf("%s: %s when served, %s at the decision, %s now (stale %s), cited %v\n", s.Ref, s.WhenServed, s.AtDecision, s.Now, s.Stale, s.Cited)
	}
	fmt.Println(r.Outcome, "memory failure:", r.MemoryFailure)
	_, err := db.As("worker-7").Run(ctx, "r-1")
	fmt.Println(errors.Is(err, mql.ErrNotFound))
	// Output:
	// r-1 worker-3 decided [po:Klarveld@1] at tx 12
	// Klarveld.price_per_seat@2: live when served, live at the decision, superseded now (stale later), cited true
	// failed memory failure: false
	// true
}

// The list of runs, one line each.
func ExampleReader_Runs() {
	db, ctx := runStory()
	must(db.Outcome(ctx, mql.OutcomeSpec{Run: "r-1", Result: mql.Succeeded, By: "worker-3"}))
	db.As("worker-7").ForRun("r-2").Context(ctx, []string{"Klarveld"}, 0)
	must(db.Outcome(ctx, mql.OutcomeSpec{Run: "r-2", Result: mql.Declined, By: "worker-7"}))
	runs, _ := db.Reader().Runs(ctx, "", time.Time{})
	for _, s := range runs {
		fmt.Println(s.Run, s.By, "served", s.Served, "cited", s.Cited, "stale", s.Stale, s.Outcome)
	}
	mine, _ := db.As("worker-3").Runs(ctx, "", time.Time{})
	fmt.Println("worker-3 sees", len(mine))
	// Output:
	// r-1 worker-3 served 1 cited 1 stale 0 succeeded
	// r-2 worker-7 served 3 cited 0 stale 0 declined
	// worker-3 sees 1
}

// One name, everything it is: Klarveld is a subject; price_per_seat is a predicate.
func ExampleReader_Describe() {
	db, ctx := procurement()
	d, _ := db.Reader().Describe(ctx, "Klarveld")
	fmt.Println(d.Subject.Keys, "keys,", d.Subject.Claims, "versions")
	for _, c := range d.Live {
		fmt.Println(c.Ref, c.Value)
	}
	d, _ = db.Reader().Describe(ctx, "price_per_seat")
	fmt.Println("price_per_seat:", d.Predicate.ValueType, "on", d.Predicate.Subjects, "subject; a subject too:", d.Subject != nil)
	_, err := db.Reader().Describe(ctx, "Brimsole")
	fmt.Println(errors.Is(err, mql.ErrNotFound))
	// Output:
	// 3 keys, 4 versions
	// Klarveld.price_per_seat@2 89
	// Klarveld.region@1 "EU"
	// Klarveld.soc2@1 true
	// price_per_seat: number on 1 subject; a subject too: false
	// true
}

// Who is in the store, and what each may do beyond its own claims (the owner may do anything).
func ExampleReader_Principals() {
	db, ctx := procurement()
	must(db.Grant(ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "Klarveld.*", By: "owner"}))
	ps, _ := db.Reader().Principals(ctx, "")
	for _, p := range ps {
		fmt.Println(p.Name, p.Type, p.Owner, len(p.Rights))
	}
	workers, _ := db.Reader().Principals(ctx, "worker-*")
	fmt.Println(len(workers))
	// Output:
	// owner user true 0
	// worker-3 agent false 0
	// worker-7 agent false 0
	// orchestrator agent false 0
	// alice user false 1
	// 2
}

// Every right given, oldest first, or one principal's.
func ExampleReader_Grants() {
	db, ctx := procurement()
	must(db.Grant(ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "Klarveld.*", By: "owner"}))
	must(db.Grant(ctx, mql.GrantSpec{Grantee: "worker-7", Right: mql.RightRevoke, Scope: "price_per_seat", By: "owner"}))
	gs, _ := db.Reader().Grants(ctx, "")
	for _, g := range gs {
		fmt.Println(g.ID, g.Grantee, g.Right, g.Scope, "by", g.By)
	}
	gs, _ = db.Reader().Grants(ctx, "alice")
	fmt.Println(len(gs))
	_, err := db.Reader().Grants(ctx, "bob")
	fmt.Println(errors.Is(err, mql.ErrUnknownPrincipal))
	// Output:
	// g11.1 alice confirm Klarveld.* by owner
	// g12.1 worker-7 revoke price_per_seat by owner
	// 1
	// true
}

// What each reader may see is what it is told about: a claim kept to architect is counted for
// architect only.
func ExampleReader_Subjects() {
	db, ctx := procurement()
	must(db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "architect", Type: mql.Agent, By: "owner"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "price_per_seat", Value: mql.Number(52), By: "architect", SeenBy: []string{"architect"}}))
	for _, who := range []string{"architect", "worker-3"} {
		ss, _ := db.As(who).Subjects(ctx, "")
		for _, s := range ss {
			fmt.Println(who, "sees", s.Subject, s.Keys, "keys,", s.Live, "live of", s.Claims)
		}
	}
	// Output:
	// architect sees Klarveld 3 keys, 3 live of 4
	// architect sees Brimsole 1 keys, 1 live of 1
	// worker-3 sees Klarveld 3 keys, 3 live of 4
}

// Each predicate with the type its values must have and how fast it fades.
func ExampleReader_Predicates() {
	db, ctx := procurement()
	must(db.SetDecay(ctx, mql.DecaySpec{Predicate: "price_per_seat", HalfLife: 720 * time.Hour, By: "owner"}))
	ps, _ := db.Reader().Predicates(ctx, "")
	for _, p := range ps {
		fmt.Println(p.Predicate, p.ValueType, p.HalfLife, p.Live, "live of", p.Claims)
	}
	// Output:
	// price_per_seat number 720h0m0s 1 live of 2
	// region string 0s 1 live of 1
	// soc2 bool 0s 1 live of 1
}

// The plans, by name, each with its newest version.
func ExampleReader_Artifacts() {
	db, ctx := procurement()
	must(db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	must(db.Derive(ctx, mql.DeriveSpec{Artifact: "memo:soc2", From: []string{"Klarveld.soc2"}, By: "orchestrator"}))
	as, _ := db.Reader().Artifacts(ctx, "plan:*")
	for _, a := range as {
		fmt.Println(a.Name, a.Versions, "versions; latest", a.Latest.Ref, a.Latest.Review)
	}
	// Output: plan:pick-vendor 2 versions; latest plan:pick-vendor@2 ok
}

// The evidence: each source and how many claim versions cite it.
func ExampleReader_Sources() {
	db, ctx := procurement()
	ss, _ := db.Reader().Sources(ctx, "src:Klarveld:*")
	for _, s := range ss {
		fmt.Println(s.ID, "cited by", s.Claims)
	}
	// Output:
	// src:Klarveld:rev0 cited by 3
	// src:Klarveld:rev1 cited by 1
}

// A token lets `mql serve` know who is calling. The secret is shown once; the store keeps its
// hash only, and the token's id names it from then on.
func ExampleDB_CreateToken() {
	db, ctx := procurement()
	secret, tok, err := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	fmt.Println(tok.ID, tok.Principal, tok.Tx, err)
	fmt.Println(strings.HasPrefix(secret, "mql_"+tok.ID+"_"))
	who, err := db.Authenticate(ctx, secret)
	fmt.Println(who, err)
	_, _, err = db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-7", By: "alice"})
	fmt.Println(errors.Is(err, mql.ErrNoStanding))
	// Output:
	// t11.1 worker-3 11 <nil>
	// true
	// worker-3 <nil>
	// true
}

// Authenticate says who a token was issued to, and nothing at all about a token it refuses.
func ExampleDB_Authenticate() {
	db, ctx := procurement()
	secret, _, _ := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	who, err := db.Authenticate(ctx, secret)
	fmt.Println(who, err)
	for _, bad := range []string{"", "hunter2", secret[:len(secret)-1] + "x"} {
		_, err := db.Authenticate(ctx, bad)
		fmt.Println(errors.Is(err, mql.ErrUnauthorized))
	}
	// Output:
	// worker-3 <nil>
	// true
	// true
	// true
}

// A revoked token stops working at once, and the owner's list says who revoked it.
func ExampleDB_RevokeToken() {
	db, ctx := procurement()
	secret, tok, _ := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	rc, err := db.RevokeToken(ctx, tok.ID, "owner")
	fmt.Println(rc.Ref, err)
	_, err = db.Authenticate(ctx, secret)
	fmt.Println(err)
	_, err = db.RevokeToken(ctx, tok.ID, "owner")
	fmt.Println(errors.Is(err, mql.ErrConflict))
	// Output:
	// t11.1 <nil>
	// unauthorized
	// true
}

// The owner's list of tokens: ids and states, never secrets. Nobody else sees it.
func ExampleReader_Tokens() {
	db, ctx := procurement()
	_, t1, _ := db.CreateToken(ctx, mql.TokenSpec{Principal: "worker-3", By: "owner"})
	db.CreateToken(ctx, mql.TokenSpec{Principal: "orchestrator", By: "owner", Expires: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)})
	db.RevokeToken(ctx, t1.ID, "owner")
	toks, _ := db.Reader().Tokens(ctx)
	for _, t := range toks {
		state := "valid until " + t.Expires.Format(time.DateOnly)
		if t.Expires.IsZero() {
			state = "valid, no expiry"
		}
		if t.Revoked != nil {
			state = "revoked by " + t.RevokedBy
		}
		fmt.Println(t.ID, t.Principal, state)
	}
	toks, _ = db.As("worker-3").Tokens(ctx)
	fmt.Println("worker-3 sees", len(toks))
	// Output:
	// t11.1 worker-3 revoked by owner
	// t12.1 orchestrator valid until 2027-01-01
	// worker-3 sees 0
}

// A subscriber is told that something was committed, then reads what from the feed.
func ExampleDB_Subscribe() {
	db, ctx := procurement()
	head, _ := db.Head(ctx)
	signal, stop := db.Subscribe()
	defer stop()
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("EU+UK"), By: "worker-3", Sources: []mql.Source{{ID: "src:Klarveld:rev2"}}}))
	select {
	case <-signal:
	case <-time.After(5 * time.Second):
		fmt.Println("no signal")
		return
	}
	events, last, _ := db.Reader().Events(ctx, head, "")
	for _, e := range events {
		fmt.Println(e.Tx, e.Kind, e.Ref, "supersedes", e.Supersedes)
	}
	fmt.Println("read up to", last)
	// Output:
	// 11 claim Klarveld.region@2 supersedes Klarveld.region@1
	// read up to 11
}

// The change feed of a key, from the start.
func ExampleReader_Events() {
	db, ctx := procurement()
	events, last, _ := db.As("worker-3").Events(ctx, 0, "Klarveld.price_per_seat")
	for _, e := range events {
		fmt.Println(e.Tx, e.By, e.Kind, e.Ref)
	}
	events, _, _ = db.Reader().Events(ctx, 0, "plan:*")
	for _, e := range events {
		fmt.Println(e.Tx, e.Kind, e.Ref, e.Because)
	}
	fmt.Println("up to", last)
	// Output:
	// 6 worker-3 claim Klarveld.price_per_seat@1
	// 10 worker-7 claim Klarveld.price_per_seat@2
	// 9 artifact plan:pick-vendor@1 []
	// 10 needs review plan:pick-vendor@1 [Klarveld.price_per_seat@1]
	// up to 10
}

// Follow hands over every event as it is committed, until its context ends.
func ExampleReader_Follow() {
	db, ctx := procurement()
	head, _ := db.Head(ctx)
	follow, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	done := make(chan error)
	go func() {
		done <- db.Reader().Follow(follow, head, "Klarveld.*", 0, func(e mql.Event) error {
			fmt.Println(e.Tx, e.Kind, e.Ref, e.Claim.Value)
			stop() // one event is all this example waits for
			return nil
		})
	}()
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "region", Value: mql.String("EU"), By: "worker-3"}))
	must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("EU+UK"), By: "worker-3", Sources: []mql.Source{{ID: "src:Klarveld:rev2"}}}))
	fmt.Println(<-done)
	// Output:
	// 12 claim Klarveld.region@2 "EU+UK"
	// <nil>
}

// An owner's export imported into a new memory: store is the same store: same transactions,
// same claims, same answers.
func ExampleDB_Import() {
	db, ctx := procurement()
	var buf bytes.Buffer
	if err := db.Export(ctx, &buf); err != nil {
		fmt.Println(err)
		return
	}
	copyDB, _ := mql.Open(ctx, "memory:", mql.Options{Clock: tick()})
	defer copyDB.Close()
	fmt.Println(copyDB.Import(ctx, &buf))
	a, _ := db.Stats(ctx)
	b, _ := copyDB.Stats(ctx)
	fmt.Println(a.Claims, b.Claims, a.Artifacts, b.Artifacts)
	h1, _ := db.Head(ctx)
	h2, _ := copyDB.Head(ctx)
	fmt.Println(h1, h2)
	live, _ := copyDB.Live(ctx, "Klarveld.price_per_seat")
	fmt.Println(live[0].Ref, live[0].Value, live[0].By)
	fmt.Println(errors.Is(copyDB.Import(ctx, strings.NewReader("")), mql.ErrNotEmpty))
	// Output:
	// <nil>
	// 4 4 1 1
	// 10 10
	// Klarveld.price_per_seat@2 89 worker-7
	// true
}

// A sound store passes every check; the report says what it holds.
func ExampleDB_Check() {
	db, ctx := procurement()
	r, err := db.Check(ctx)
	fmt.Println(r.OK(), err)
	fmt.Println(r.Transactions, "transactions,", r.Principals, "principals,", r.Claims, "claims,", r.Keys, "keys,", r.Artifacts, "artifact")
	// Output:
	// true <nil>
	// 10 transactions, 5 principals, 4 claims, 3 keys, 1 artifact
}

// The head is the last committed transaction: every write moves it by one.
func ExampleDB_Head() {
	db, ctx := procurement()
	head, _ := db.Head(ctx)
	rc := must(db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "region", Value: mql.String("EU+UK"), By: "worker-3", Sources: []mql.Source{{ID: "src:Klarveld:rev2"}}}))
	now, _ := db.Head(ctx)
	fmt.Println(head, rc.Tx, now)
	// Output: 10 11 11
}

// Names feeds completion: every name a reader could type, versions included.
func ExampleReader_Names() {
	db, ctx := procurement()
	names, _ := db.Reader().Names(ctx)
	var versions []string
	for _, n := range names {
		if strings.HasPrefix(n, "Klarveld.price_per_seat@") {
			versions = append(versions, n)
		}
	}
	fmt.Println(versions)
	// Output: [Klarveld.price_per_seat@1 Klarveld.price_per_seat@2]
}

// A file store made from an export: the same transactions, checked on the way in, and sound
// when checked again from its quads.
func ExampleImportStore() {
	db, ctx := procurement()
	var buf bytes.Buffer
	db.Export(ctx, &buf)
	dir, _ := os.MkdirTemp("", "mql-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "copy.db")
	sum, err := mql.ImportStore(ctx, path, &buf, mql.Options{})
	fmt.Println(sum.Transactions, "transactions,", sum.Claims, "claims", err)
	r, err := mql.CheckStore(ctx, path, mql.Options{})
	fmt.Println(r.OK(), r.Head, err)
	_, err = mql.ImportStore(ctx, path, strings.NewReader(""), mql.Options{})
	fmt.Println(errors.Is(err, mql.ErrNotEmpty))
	// Output:
	// 10 transactions, 4 claims <nil>
	// true 10 <nil>
	// true
}

// Feed patterns: a subject, a key, or a glob over references.
func ExampleMatchRef() {
	for _, pattern := range []string{"Klarveld", "Klarveld.region", "*.price_per_seat", "plan:*"} {
		fmt.Println(pattern, mql.MatchRef(pattern, "Klarveld.price_per_seat@2"), mql.MatchRef(pattern, "plan:pick-vendor@1"))
	}
	// Output:
	// Klarveld true false
	// Klarveld.region false false
	// *.price_per_seat true false
	// plan:* false true
}

// A store's size where it is kept, as an operator's dashboard shows it (mql serve --metrics
// reports it as mql_store_bytes). A bbolt file and its log grow in steps of megabytes, ahead
// of what they hold; 5 MB of values take them past their first.
func ExampleDB_Size() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "mql-example")
	defer os.RemoveAll(dir)
	db, err := mql.Open(ctx, filepath.Join(dir, "team.db"), mql.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	before, _ := db.Size(ctx)
	specs := make([]mql.AssertSpec, 5000)
	for i := range specs {
		specs[i] = mql.AssertSpec{Subject: fmt.Sprintf("Vendor%d", i), Predicate: "note", Value: mql.String(strings.Repeat("x", 1000)), By: "owner"}
	}
	if _, err := db.AssertBatch(ctx, "owner", specs); err != nil {
		fmt.Println(err)
		return
	}
	after, err := db.Size(ctx)
	fmt.Println(err, before > 0, after > before)
	// Output: <nil> true true
}
