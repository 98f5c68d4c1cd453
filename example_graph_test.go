package mql_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/cayleygraph/cayley"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql"
)

// The memory is Cayley's graph: Cayley's path API walks it. Impact is the artifacts reached
// backwards along prov:wasDerivedFrom; why is the versions reached along prov:wasRevisionOf and
// their prov:hadPrimarySource. The graph is as of the moment Graph was called.
func ExampleDB_Graph() {
	ctx := context.Background()
	db, _ := mql.Open(ctx, "memory:", mql.Options{Clock: tick()})
	defer db.Close()
	db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "worker-3", Type: mql.Agent, By: "owner"})
	src := func(id string) []mql.Source { return []mql.Source{{ID: id}} }
	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: "worker-3", Sources: src("src:Klarveld:rev0")})
	db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "worker-3"})
	db.Derive(ctx, mql.DeriveSpec{Artifact: "report:q3", From: []string{"plan:pick-vendor"}, By: "worker-3"})
	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(89), By: "worker-3", Sources: src("src:Klarveld:rev1")})

	qs, err := db.Graph(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer qs.Close()
	const prov = "http://www.w3.org/ns/prov#"
	v1 := quad.IRI("urn:mql:claim:Klarveld.price_per_seat@1")
	v2 := quad.IRI("urn:mql:claim:Klarveld.price_per_seat@2")

	impact := cayley.StartPath(qs, v1).FollowRecursive(cayley.StartMorphism().In(quad.IRI(prov+"wasDerivedFrom")), 0, nil)
	impact.Iterate(ctx).EachValue(qs, func(v quad.Value) error {
		fmt.Println("impact of @1:", v)
		return nil
	})

	versions := cayley.StartPath(qs, v2).FollowRecursive(quad.IRI(prov+"wasRevisionOf"), 0, nil).Or(cayley.StartPath(qs, v2))
	sources, _ := versions.Out(quad.IRI(prov + "hadPrimarySource")).Iterate(ctx).AllValues(qs)
	slices.SortFunc(sources, func(a, b quad.Value) int { return strings.Compare(a.String(), b.String()) })
	fmt.Println("why @2, sources:", sources)

	value, _ := cayley.StartPath(qs, v2).Out(quad.IRI("urn:mql:value")).Iterate(ctx).FirstValue(qs)
	fmt.Println("@2 =", quad.NativeOf(value))

	db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(52), By: "worker-3"})
	quads, _ := qs.Stats(ctx, true)
	now, _ := db.QuadCount(ctx)
	fmt.Println("quads in the graph:", quads.Quads.Value, "- in the store since:", now)
	// Output:
	// impact of @1: <urn:mql:artifact:plan:pick-vendor@1>
	// impact of @1: <urn:mql:artifact:report:q3@1>
	// why @2, sources: [<urn:mql:source:src:Klarveld:rev0> <urn:mql:source:src:Klarveld:rev1>]
	// @2 = 89
	// quads in the graph: 94 - in the store since: 110
}
