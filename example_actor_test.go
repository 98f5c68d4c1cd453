package mql_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/mql-dev/mql"
)

// An agent's tools get an Actor, not the DB: what they write is by worker-3 whatever a spec
// says, and they read what worker-3 may see.
func ExampleDB_ActAs() {
	db, ctx := procurement()
	defer db.Close()
	w3 := db.ActAs("worker-3")

	rc, err := w3.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "price_per_seat", Value: mql.Number(52)})
	fmt.Println(rc.Ref, err)

	_, err = w3.Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "region", Value: mql.String("EU"), By: "worker-7"})
	fmt.Println(errors.Is(err, mql.ErrActAs), err)

	live, _ := w3.Reader().Live(ctx, "Brimsole.*")
	fmt.Println(live[0].Ref, "by", live[0].By)

	// The owner's Actor writes on others' behalf, as a DB does.
	rc, err = db.ActAs("owner").Assert(ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "region", Value: mql.String("EU"), By: "worker-7"})
	fmt.Println(rc.Ref, err)
	// Output:
	// Brimsole.price_per_seat@1 <nil>
	// true cannot act as another principal: acting as worker-3, cannot write by worker-7; only the owner (owner) writes on others' behalf
	// Brimsole.price_per_seat@1 by worker-3
	// Brimsole.region@1 <nil>
}

// An Actor's transaction is bound as the Actor is: its writes are by its principal, and its
// reader reads as it.
func ExampleActor_Tx() {
	db, ctx := procurement()
	defer db.Close()
	id, err := db.ActAs("worker-3").Tx(ctx, func(tx *mql.Tx) error {
		if _, err := tx.Assert(mql.AssertSpec{Subject: "Brimsole", Predicate: "price_per_seat", Value: mql.Number(52)}); err != nil {
			return err
		}
		_, err := tx.Outcome(mql.OutcomeSpec{Run: "pick-vendor", Result: mql.Succeeded})
		return err
	})
	fmt.Println("committed tx", id, err)
	runs, _ := db.Runs(ctx, "worker-3", time.Time{})
	fmt.Println(runs[0].Run, "by", runs[0].By)
	// Output:
	// committed tx 11 <nil>
	// pick-vendor by worker-3
}

// A reader an Actor hands out cannot be turned into another principal's: Err says so before
// anything is read, and so does every read.
func ExampleReader_Err() {
	db, ctx := procurement()
	defer db.Close()
	r := db.ActAs("worker-3").Reader().As("orchestrator")
	fmt.Println(r.Err())
	_, err := r.Live(ctx, "*")
	fmt.Println(errors.Is(err, mql.ErrActAs))
	fmt.Println(db.ActAs("owner").Reader().As("orchestrator").Err())
	// Output:
	// cannot act as another principal: acting as worker-3, cannot read as orchestrator; only the owner (owner) reads as others
	// true
	// <nil>
}
