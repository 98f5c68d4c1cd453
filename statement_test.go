package mql_test

import (
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query/syntax"
)

// TestRecordedStatements: a read made for a run records the statement it answered, in the
// language, so that an auditor can read it again. Every kind of read that may be made for a
// run, made through the library with each clause it takes (and with none), records the
// canonical statement: it parses with the language's parser and prints back identically.
func TestRecordedStatements(t *testing.T) {
	f := open(t, mql.Options{Owner: "owner"}).team()
	f.assert("Klarveld", "price_per_seat", mql.Number(44), "worker-3", "src:Klarveld:rev0")
	f.assert("Klarveld", "region", mql.String("EU"), "worker-3")
	f.assert("Klarveld", "soc2", mql.Bool(true), "worker-3")
	f.assert("Brimsole", "price_per_seat", mql.Number(50), "worker-7")
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "note", Value: mql.String(`EU "pricing" per seat`), By: "worker-3", Vector: []float32{1, 0}}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
	f.assert("Klarveld", "price_per_seat", mql.Number(89), "worker-7")

	ctx := f.ctx
	r := f.db.As("worker-3").ForRun("r1")
	v, p := mql.Var("v"), mql.Var("p")
	midnight := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	instant := time.Date(2026, 11, 29, 10, 0, 0, 500_000_000, time.FixedZone("CET", 3600))
	reads := []struct {
		want string // the statement recorded, as the language's printer writes it
		read func() error
	}{
		{`live Klarveld`, func() error { _, err := r.Live(ctx, "Klarveld.*"); return err }},
		{`live *`, func() error { _, err := r.Live(ctx, "*"); return err }},
		{`live *.price_per_seat where value > 10, value <= 89, value != -2.5`, func() error {
			_, err := r.Live(ctx, "*.price_per_seat", mql.Filter{Op: ">", Value: mql.Number(10)}, mql.Filter{Op: "<=", Value: mql.Number(89)}, mql.Filter{Op: "!=", Value: mql.Number(-2.5)})
			return err
		}},
		{`live Klarveld.price_per_seat where value < 1000000000000000000000, value > 0.0000001`, func() error {
			_, err := r.Live(ctx, "Klarveld.price_per_seat", mql.Filter{Op: "<", Value: mql.Number(1e21)}, mql.Filter{Op: ">", Value: mql.Number(1e-7)})
			return err
		}},
		{`live Klarveld.region where value != "US \"west\"", value >= Klarveld, value != Klarveld.region@1, value != false`, func() error {
			_, err := r.Live(ctx, "Klarveld.region", mql.Filter{Op: "!=", Value: mql.String(`US "west"`)}, mql.Filter{Op: ">=", Value: mql.Ref("Klarveld")},
				mql.Filter{Op: "!=", Value: mql.Ref("Klarveld.region@1")}, mql.Filter{Op: "!=", Value: mql.Bool(false)})
			return err
		}},
		{`live *.since where value >= 2026-01-01, value < 2026-11-29T09:00:00.5Z`, func() error {
			_, err := r.Live(ctx, "*.since", mql.Filter{Op: ">=", Value: mql.Time(midnight)}, mql.Filter{Op: "<", Value: mql.Time(instant)})
			return err
		}},
		{`find ?v, ?p where ?v.soc2 = true, ?v.region = "EU", ?v.price_per_seat = ?p, ?p < 100 order by ?p desc, ?v limit 3`, func() error {
			_, err := r.Find(ctx, mql.FindQuery{Select: []string{"?v", "?p"}, Where: []mql.Cond{
				{Subject: v, Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
				{Subject: v, Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
				{Subject: v, Predicate: "price_per_seat", Op: "=", Object: p},
				{Subject: p, Op: "<", Object: mql.Const(mql.Number(100))},
			}, OrderBy: []mql.Order{{Var: "?p", Desc: true}, {Var: "?v"}}, Limit: 3})
			return err
		}},
		{`find ?v where Klarveld.region = ?v, Brimsole.price_per_seat != ?v, ?v != "US \"west\""`, func() error {
			_, err := r.Find(ctx, mql.FindQuery{Select: []string{"?v"}, Where: []mql.Cond{
				{Subject: mql.Const(mql.Ref("Klarveld")), Predicate: "region", Op: "=", Object: mql.Var("v")},
				{Subject: mql.Const(mql.String("Brimsole")), Predicate: "price_per_seat", Op: "!=", Object: mql.Var("v")},
				{Subject: mql.Var("v"), Op: "!=", Object: mql.Const(mql.String(`US "west"`))},
			}})
			return err
		}},
		{`why Klarveld.price_per_seat`, func() error { _, err := r.Why(ctx, "Klarveld.price_per_seat"); return err }},
		{`why plan:pick-vendor@1`, func() error { _, err := r.Why(ctx, "plan:pick-vendor@1"); return err }},
		{`why Klarveld.price_per_seat@1`, func() error {
			_, err := r.WhyRef(ctx, mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat", Version: 1})
			return err
		}},
		{`revoked-by Klarveld.price_per_seat@1`, func() error { _, err := r.RevokedBy(ctx, "Klarveld.price_per_seat@1"); return err }},
		{`revoked-by Klarveld.region@1`, func() error {
			_, err := r.RevokedByRef(ctx, mql.ClaimRef{Subject: "Klarveld", Predicate: "region", Version: 1})
			return err
		}},
		{`impact Klarveld.price_per_seat`, func() error { _, err := r.Impact(ctx, "Klarveld.price_per_seat", 0); return err }},
		{`impact Klarveld.price_per_seat@1 depth 2`, func() error { _, err := r.Impact(ctx, "Klarveld.price_per_seat@1", 2); return err }},
		{`impact plan:pick-vendor depth 1`, func() error { _, err := r.ImpactRef(ctx, mql.ArtifactRef{Name: "plan:pick-vendor"}, 1); return err }},
		{`history Klarveld.price_per_seat`, func() error { _, err := r.History(ctx, "Klarveld.price_per_seat"); return err }},
		{`history plan:pick-vendor`, func() error { _, err := r.HistoryRef(ctx, mql.ArtifactRef{Name: "plan:pick-vendor"}); return err }},
		{`conflicts`, func() error { _, err := r.Conflicts(ctx); return err }},
		{`conflicts Klarveld, Brimsole`, func() error { _, err := r.Conflicts(ctx, "Klarveld", "Brimsole"); return err }},
		{`beliefs Klarveld`, func() error { _, err := r.Beliefs(ctx, "Klarveld.*", nil); return err }},
		{`beliefs *.price_per_seat gate 0.5 2.25`, func() error {
			_, err := r.Beliefs(ctx, "*.price_per_seat", &[2]float64{0.5, 2.25})
			return err
		}},
		{`context Klarveld, Brimsole`, func() error { _, err := r.Context(ctx, []string{"Klarveld", "Brimsole"}, 0); return err }},
		{`context Klarveld budget 60`, func() error { _, err := r.Context(ctx, []string{"Klarveld"}, 60); return err }},
		{`context * budget 40`, func() error { _, err := r.Context(ctx, []string{"*"}, 40); return err }},
		{`context for "price per seat"`, func() error { _, err := r.ContextFor(ctx, "price per seat", 0); return err }},
		{`context for "EU \"pricing\" per seat" budget 60`, func() error { _, err := r.ContextFor(ctx, `EU "pricing" per seat`, 60); return err }},
		{`search "EU"`, func() error { _, err := r.Search(ctx, "EU", mql.SearchOptions{}); return err }},
		{`search "EU \"pricing\"" on Klarveld, *.price_per_seat`, func() error {
			_, err := r.Search(ctx, `EU "pricing"`, mql.SearchOptions{On: []string{"Klarveld.*", "*.price_per_seat"}})
			return err
		}},
		{`search "" vector "0.25 1e-07"`, func() error {
			_, err := r.Search(ctx, "", mql.SearchOptions{Vector: []float32{0.25, 1e-7}})
			return err
		}},
		{`search "pricing" signals text, subject`, func() error {
			_, err := r.Search(ctx, "pricing", mql.SearchOptions{Signals: []string{mql.SignalText, mql.SignalSubject}})
			return err
		}},
		{`search "pricing" limit 5`, func() error { _, err := r.Search(ctx, "pricing", mql.SearchOptions{Limit: 5}); return err }},
		{`search "pricing" history`, func() error { _, err := r.Search(ctx, "pricing", mql.SearchOptions{History: true}); return err }},
		{`search "EU pricing" on Klarveld.note vector "1 0" signals vector, text limit 2 history`, func() error {
			_, err := r.Search(ctx, "EU pricing", mql.SearchOptions{On: []string{"Klarveld.note"}, Vector: []float32{1, 0},
				Signals: []string{mql.SignalVector, mql.SignalText}, Limit: 2, History: true})
			return err
		}},
	}
	for _, x := range reads {
		if err := x.read(); err != nil {
			t.Fatalf("%s: %v", x.want, err)
		}
	}
	reps, err := f.db.As("worker-3").Run(ctx, "r1")
	if err != nil || len(reps) != 1 {
		t.Fatal(reps, err)
	}
	got := reps[0].Retrievals
	if len(got) != len(reads) {
		t.Fatalf("%d retrievals recorded for %d reads", len(got), len(reads))
	}
	for i, ret := range got {
		if ret.Statement != reads[i].want {
			t.Errorf("recorded %q, want %q", ret.Statement, reads[i].want)
		}
		st, err := syntax.ParseStmt("recorded", ret.Statement)
		if err != nil {
			t.Errorf("recorded %q does not parse: %v", ret.Statement, err)
			continue
		}
		if st.String() != ret.Statement {
			t.Errorf("recorded %q prints back as %q", ret.Statement, st)
		}
	}
}
