package query_test

import (
	"context"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// TestRecordedStatementsParse: every read made for a run records the statement it answered,
// in the language, so that an auditor can run it again. Each one, made through the library
// with every clause it takes (and with none), must parse back into the statement it describes.
func TestRecordedStatementsParse(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	s := query.NewSession(db, "")
	if err := s.Exec(ctx, "story", story, func(*query.Result) error { return nil }); err != nil {
		t.Fatal(err)
	}
	r := db.As("worker-3").ForRun("r1")
	v, p := mql.Var("v"), mql.Var("p")
	reads := []struct {
		want string // the statement as the language writes it
		read func() error
	}{
		{`live Klarveld.*`, func() error { _, err := r.Live(ctx, "Klarveld.*"); return err }},
		{`live *.price_per_seat where value > 10`, func() error {
			_, err := r.Live(ctx, "*.price_per_seat", mql.Filter{Op: ">", Value: mql.Number(10)})
			return err
		}},
		{`live *.price_per_seat where value > 10, value <= 89, value != 50`, func() error {
			_, err := r.Live(ctx, "*.price_per_seat", mql.Filter{Op: ">", Value: mql.Number(10)}, mql.Filter{Op: "<=", Value: mql.Number(89)}, mql.Filter{Op: "!=", Value: mql.Number(50)})
			return err
		}},
		{`find ?v, ?p where ?v.soc2 = true, ?v.region = "EU", ?v.price_per_seat = ?p, ?p < 100 order by ?p desc limit 3`, func() error {
			_, err := r.Find(ctx, mql.FindQuery{Select: []string{"?v", "?p"}, Where: []mql.Cond{
				{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
				{Subject: v, Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
				{Subject: v, Predicate: "price_per_seat", Op: "=", Object: p},
				{Subject: p, Op: "<", Object: mql.Const(mql.Number(100))},
			}, OrderBy: []mql.Order{{Var: "?p", Desc: true}}, Limit: 3})
			return err
		}},
		{`find ?v where Klarveld.region = ?v, ?v != "US \"west\""`, func() error {
			_, err := r.Find(ctx, mql.FindQuery{Select: []string{"?v"}, Where: []mql.Cond{
				{Subject: mql.Const(mql.Ref("Klarveld")), Predicate: "region", Op: "=", Object: mql.Var("v")},
				{Subject: mql.Var("v"), Op: "!=", Object: mql.Const(mql.String(`US "west"`))},
			}})
			return err
		}},
		{`live Klarveld.region where value != "US \"west\"", value >= Klarveld`, func() error {
			_, err := r.Live(ctx, "Klarveld.region", mql.Filter{Op: "!=", Value: mql.String(`US "west"`)}, mql.Filter{Op: ">=", Value: mql.Ref("Klarveld")})
			return err
		}},
		{`why Klarveld.price_per_seat`, func() error { _, err := r.Why(ctx, "Klarveld.price_per_seat"); return err }},
		{`revoked-by Klarveld.price_per_seat@1`, func() error { _, err := r.RevokedBy(ctx, "Klarveld.price_per_seat@1"); return err }},
		{`impact Klarveld.price_per_seat`, func() error { _, err := r.Impact(ctx, "Klarveld.price_per_seat", 0); return err }},
		{`context Klarveld, Brimsole`, func() error { _, err := r.Context(ctx, []string{"Klarveld", "Brimsole"}, 0); return err }},
		{`conflicts`, func() error { _, err := r.Conflicts(ctx); return err }},
		{`beliefs Klarveld.*`, func() error { _, err := r.Beliefs(ctx, "Klarveld.*", nil); return err }},
		{`search "EU"`, func() error { _, err := r.Search(ctx, "EU", mql.SearchOptions{}); return err }},
		{`history Klarveld.price_per_seat`, func() error { _, err := r.History(ctx, "Klarveld.price_per_seat"); return err }},
		{`impact Klarveld.price_per_seat@1 depth 2`, func() error { _, err := r.Impact(ctx, "Klarveld.price_per_seat@1", 2); return err }},
		{`context Klarveld budget 60`, func() error { _, err := r.Context(ctx, []string{"Klarveld"}, 60); return err }},
		{`context for "EU \"pricing\" per seat" budget 60`, func() error { _, err := r.ContextFor(ctx, `EU "pricing" per seat`, 60); return err }},
		{`context for "price per seat"`, func() error { _, err := r.ContextFor(ctx, "price per seat", 0); return err }},
		{`conflicts Klarveld`, func() error { _, err := r.Conflicts(ctx, "Klarveld"); return err }},
		{`beliefs Klarveld.price_per_seat gate 0.5 0.9`, func() error {
			_, err := r.Beliefs(ctx, "Klarveld.price_per_seat", &[2]float64{0.5, 0.9})
			return err
		}},
		{`search "EU \"pricing\"" on Klarveld.* limit 5 history`, func() error {
			_, err := r.Search(ctx, `EU "pricing"`, mql.SearchOptions{On: []string{"Klarveld.*"}, Limit: 5, History: true})
			return err
		}},
	}
	for _, x := range reads {
		if err := x.read(); err != nil {
			t.Fatalf("%s: %v", x.want, err)
		}
	}
	reps, err := db.As("worker-3").Run(ctx, "r1")
	if err != nil || len(reps) != 1 {
		t.Fatal(reps, err)
	}
	got := reps[0].Retrievals
	if len(got) != len(reads) {
		t.Fatalf("%d retrievals recorded for %d reads", len(got), len(reads))
	}
	for i, ret := range got {
		want, err := query.ParseStmt("want", reads[i].want)
		if err != nil {
			t.Fatalf("the test's own statement %q: %v", reads[i].want, err)
		}
		st, err := query.ParseStmt("recorded", ret.Statement)
		if err != nil {
			t.Errorf("recorded %q does not parse: %v", ret.Statement, err)
			continue
		}
		if st.String() != want.String() {
			t.Errorf("recorded %q reads as %q, want %q", ret.Statement, st, want)
		}
	}
}
