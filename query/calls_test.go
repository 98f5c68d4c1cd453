package query_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// The result of a library call has the kind and the canonical text of the statement that makes
// the same call: a statement of the language, which parses back to itself. A spec's references
// are printed typed or, when it holds them as text, as the library reads that text.
func TestResultOf(t *testing.T) {
	conf := 0.5
	day := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	rc := mql.Receipt{Tx: 7, Ref: "x"}
	for _, tc := range []struct {
		r    *query.Result
		want string
	}{
		{query.ResultOfAssert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(44), By: "w"}, rc), `assert K.p = 44 by w`},
		{query.ResultOfAssert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("a \"b\""), By: "w",
			Sources: []mql.Source{{ID: "s1"}, {ID: "s2", Excerpt: "e", URI: "u", Revision: "r"}}, Confidence: &conf, Kind: mql.Inferred,
			ValidFrom: day, ValidUntil: day.Add(90 * time.Minute), SeenBy: []string{"w", "v"}, Vector: []float32{1, 0.5}}, rc),
			`assert K.p = "a \"b\"" by w from "s1", "s2" excerpt "e" uri "u" revision "r" confidence 0.5 kind inferred valid from 2027-01-01 valid until 2027-01-01T01:30:00Z seen by w, v vector "1 0.5"`},
		{query.ResultOfAssert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Bool(true), By: "w"}, rc), `assert K.p = true by w`},
		{query.ResultOfAssert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Time(day), By: "w"}, rc), `assert K.p = 2027-01-01 by w`},
		{query.ResultOfAssert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Ref("B.q@2"), By: "w"}, rc), `assert K.p = B.q@2 by w`},
		{query.ResultOfAssert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Ref("plan:x"), By: "w"}, rc), `assert K.p = plan:x by w`},
		{query.ResultOfRevoke(mql.RevokeSpec{Ref: mql.ClaimRef{Subject: "K", Predicate: "p", Version: 1}, By: "w"}, rc), `revoke K.p@1 by w`},
		{query.ResultOfRevoke(mql.RevokeSpec{Claim: "K.p@1", ReplacedBy: "K.p@3", Because: "wrong", By: "w"}, rc), `revoke K.p@1 by w because "wrong" replaced by K.p@3`},
		{query.ResultOfRevoke(mql.RevokeSpec{Ref: mql.ClaimRef{Subject: "K", Predicate: "p", Version: 1}, ReplacedByRef: mql.ClaimRef{Subject: "K", Predicate: "p", Version: 2}, By: "w"}, rc),
			`revoke K.p@1 by w replaced by K.p@2`},
		{query.ResultOfDerive(mql.DeriveSpec{Artifact: "plan:x", FromRefs: []mql.NodeRef{mql.ClaimRef{Subject: "K", Predicate: "p"}, mql.ArtifactRef{Name: "plan:y", Version: 2}},
			By: "w", Confidence: &conf, SeenBy: []string{"w"}, Run: "r-1"}, rc), `derive plan:x from K.p, plan:y@2 by w confidence 0.5 seen by w in run r-1`},
		{query.ResultOfDerive(mql.DeriveSpec{Artifact: "plan:x", From: []string{"K.p@1", "plan:y"}, By: "w"}, rc), `derive plan:x from K.p@1, plan:y by w`},
		{query.ResultOfReview(mql.ReviewSpec{Ref: mql.ArtifactRef{Name: "plan:x"}, By: "w", Because: "ok"}, rc), `review plan:x by w because "ok"`},
		{query.ResultOfReview(mql.ReviewSpec{Artifact: "plan:x@2", By: "w"}, rc), `review plan:x@2 by w`},
		{query.ResultOfOutcome(mql.OutcomeSpec{Run: "r-1", Result: mql.Declined, By: "w", Because: "no evidence"}, rc), `outcome run r-1 declined by w because "no evidence"`},
		{query.ResultOfWhy(mql.ClaimRef{Subject: "K", Predicate: "p"}, "", nil), `why K.p`},
		{query.ResultOfWhy(mql.ArtifactRef{Name: "plan:x", Version: 1}, "r-1", nil), `why plan:x@1 for run r-1`},
		{query.ResultOfImpact(mql.ClaimRef{Subject: "K", Predicate: "p", Version: 1}, 0, mql.ImpactResult{}), `impact K.p@1`},
		{query.ResultOfImpact(mql.ArtifactRef{Name: "plan:x"}, 2, mql.ImpactResult{}), `impact plan:x depth 2`},
		{query.ResultOfSearch("EU", mql.SearchOptions{}, "", mql.SearchResult{}), `search "EU"`},
		{query.ResultOfSearch("EU \"x\"", mql.SearchOptions{On: []string{"K.*", "*.p", "*.*", "K.p"}, Vector: []float32{0, 1}, Signals: []string{"text", "vector"}, Limit: 3, History: true}, "r-1", mql.SearchResult{}),
			`search "EU \"x\"" on K, *.p, *, K.p vector "0 1" signals text, vector limit 3 history for run r-1`},
		{query.ResultOfContext([]string{"K", "B"}, 60, "", mql.ContextResult{}), `context K, B budget 60`},
		{query.ResultOfContext([]string{"*"}, 0, "r-1", mql.ContextResult{}), `context * for run r-1`},
		{query.ResultOfContextFor(`the "EU" plan`, 0, "", mql.ContextResult{}), `context for "the \"EU\" plan"`},
	} {
		if tc.r.Statement != tc.want {
			t.Errorf("statement\n %s\nwant\n %s", tc.r.Statement, tc.want)
			continue
		}
		st, err := query.ParseStmt("x", tc.want)
		if err != nil {
			t.Errorf("%s: %v", tc.want, err)
			continue
		}
		if st.String() != tc.want || tc.r.Kind != query.KindOf(st) {
			t.Errorf("%s: prints back as %s, kind %s, want %s", tc.want, st, tc.r.Kind, query.KindOf(st))
		}
		if tc.r.Receipt != nil && *tc.r.Receipt != rc {
			t.Errorf("%s: receipt %+v", tc.want, tc.r.Receipt)
		}
	}
}

// A program that calls the library itself answers as the language would have: here, the
// result of an assert made through an Actor, as `mql --format json` would print it.
func ExampleResultOfAssert() {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer db.Close()
	spec := mql.AssertSpec{Subject: "Klarveld", Predicate: "price_per_seat", Value: mql.Number(44), By: db.Owner(),
		Sources: []mql.Source{{ID: "src:Klarveld:rev0"}}}
	rc, err := db.ActAs(db.Owner()).Assert(ctx, spec)
	if err != nil {
		fmt.Println(err)
		return
	}
	r := query.ResultOfAssert(spec, rc)
	fmt.Println(r.Kind, r.Receipt.Ref)
	fmt.Println(r.Statement)
	// Output:
	// assert Klarveld.price_per_seat@1
	// assert Klarveld.price_per_seat = 44 by owner from "src:Klarveld:rev0"
}
