package syntax

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

func fp(f float64) *float64 { return &f }
func ip(i int) *int         { return &i }
func sp(s string) *string   { return &s }
func ip64(i int64) *int64   { return &i }
func i64p(i int64) *int64   { return &i }

func mustTime(s string) time.Time {
	layout := time.RFC3339Nano
	if len(s) == 10 {
		layout = "2006-01-02"
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func tp(s string) *time.Time { t := mustTime(s); return &t }

// ref builds a Ref from its printed form: Subject[.predicate][@N].
func ref(s string) Ref {
	var r Ref
	if i := strings.LastIndex(s, "@"); i >= 0 {
		fmt.Sscan(s[i+1:], &r.Version)
		s = s[:i]
	}
	r.Subject, r.Predicate, _ = strings.Cut(s, ".")
	return r
}

func refp(s string) *Ref { r := ref(s); return &r }

func vstr(s string) Value     { return Value{Kind: KindString, Str: s} }
func vnum(f float64) Value    { return Value{Kind: KindNumber, Num: f} }
func vbool(b bool) Value      { return Value{Kind: KindBool, Bool: b} }
func vtime(s string) Value    { return Value{Kind: KindTime, Time: mustTime(s)} }
func vref(s string) Value     { return Value{Kind: KindRef, Ref: ref(s)} }
func pat(s, p string) Pattern { return Pattern{Subject: s, Predicate: p} }
func scope(s, p string) Scope { return Scope{Subject: s, Predicate: p} }
func src(id string) Source    { return Source{ID: id} }
func refs(ss ...string) []Ref {
	out := make([]Ref, len(ss))
	for i, s := range ss {
		out[i] = ref(s)
	}
	return out
}

// stripPos zeroes every Position in v, in place, so that ASTs can be
// compared regardless of where they came from.
func stripPos(v any) {
	strip(reflect.ValueOf(v))
}

var positionType = reflect.TypeOf(Position{})

func strip(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			strip(v.Elem())
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			strip(v.Index(i))
		}
	case reflect.Struct:
		if v.Type() == positionType {
			if v.CanSet() {
				v.Set(reflect.Zero(positionType))
			}
			return
		}
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				strip(v.Field(i))
			}
		}
	}
}

type stmtCase struct {
	src   string
	want  Stmt
	canon string // the printed form, when it differs from src
}

var stmtCases = []stmtCase{
	// principal
	{src: "principal alice user", want: &Principal{Name: "alice", Kind: User}},
	{src: "principal worker-3 agent", want: &Principal{Name: "worker-3", Kind: Agent}},
	{src: "principal scraper tool", want: &Principal{Name: "scraper", Kind: Tool}},

	// grant: every right, every scope
	{src: "grant worker-3 assert on price_per_seat by alice", want: &Grant{Grantee: "worker-3", Right: RightAssert, Scope: scope("", "price_per_seat"), By: "alice"}},
	{src: "grant bob revoke on * by owner", want: &Grant{Grantee: "bob", Right: RightRevoke, Scope: scope("", ""), By: "owner"}},
	{src: "grant bob confirm on Klarveld.* by owner", want: &Grant{Grantee: "bob", Right: RightConfirm, Scope: scope("Klarveld", ""), By: "owner"}},
	{src: "grant bob grant on Klarveld.soc2 by owner", want: &Grant{Grantee: "bob", Right: RightGrant, Scope: scope("Klarveld", "soc2"), By: "owner"}},

	// assert: every kind of value
	{src: `assert Klarveld.region = "EU" by worker-3`, want: &Assert{Key: ref("Klarveld.region"), Value: vstr("EU"), By: "worker-3"}},
	{src: `assert Klarveld.price_per_seat = 44 by worker-3`, want: &Assert{Key: ref("Klarveld.price_per_seat"), Value: vnum(44), By: "worker-3"}},
	{src: `assert K.delta = -0.25 by w`, want: &Assert{Key: ref("K.delta"), Value: vnum(-0.25), By: "w"}},
	{src: `assert K.big = 12345678901234567890 by w`, want: &Assert{Key: ref("K.big"), Value: vnum(12345678901234567890), By: "w"}, canon: `assert K.big = 12345678901234567000 by w`},
	{src: `assert K.n = 007.50 by w`, want: &Assert{Key: ref("K.n"), Value: vnum(7.5), By: "w"}, canon: `assert K.n = 7.5 by w`},
	{src: `assert Brimsole.soc2 = true by w`, want: &Assert{Key: ref("Brimsole.soc2"), Value: vbool(true), By: "w"}},
	{src: `assert Brimsole.soc2 = false by w`, want: &Assert{Key: ref("Brimsole.soc2"), Value: vbool(false), By: "w"}},
	{src: `assert K.renewal = 2027-01-01 by w`, want: &Assert{Key: ref("K.renewal"), Value: vtime("2027-01-01"), By: "w"}},
	{src: `assert K.seen = 2026-11-29T10:00:00.5+02:00 by w`, want: &Assert{Key: ref("K.seen"), Value: vtime("2026-11-29T08:00:00.5Z"), By: "w"}, canon: `assert K.seen = 2026-11-29T08:00:00.5Z by w`},
	{src: `assert K.seen = 2026-11-29t10:00:00z by w`, want: &Assert{Key: ref("K.seen"), Value: vtime("2026-11-29T10:00:00Z"), By: "w"}, canon: `assert K.seen = 2026-11-29T10:00:00Z by w`},
	{src: `assert K.midnight = 2026-11-29T00:00:00Z by w`, want: &Assert{Key: ref("K.midnight"), Value: vtime("2026-11-29"), By: "w"}, canon: `assert K.midnight = 2026-11-29 by w`},
	{src: `assert plan:x.vendor = Brimsole by w`, want: &Assert{Key: ref("plan:x.vendor"), Value: vref("Brimsole"), By: "w"}},
	{src: `assert K.same_as = Klarveld.price_per_seat by w`, want: &Assert{Key: ref("K.same_as"), Value: vref("Klarveld.price_per_seat"), By: "w"}},
	{src: `assert K.based_on = Klarveld.price_per_seat@3 by w`, want: &Assert{Key: ref("K.based_on"), Value: vref("Klarveld.price_per_seat@3"), By: "w"}},
	{src: `assert K.plan = plan:pick-vendor@2 by w`, want: &Assert{Key: ref("K.plan"), Value: vref("plan:pick-vendor@2"), By: "w"}},
	{src: `assert K.note = "tab\there \"quoted\" é \u00e9\n" by w`, want: &Assert{Key: ref("K.note"), Value: vstr("tab\there \"quoted\" é é\n"), By: "w"}, canon: `assert K.note = "tab\there \"quoted\" é é\n" by w`},
	{src: "assert K.note = \"two\nlines\" by w", want: &Assert{Key: ref("K.note"), Value: vstr("two\nlines"), By: "w"}, canon: `assert K.note = "two\nlines" by w`},

	// assert: every clause
	{src: `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0" confidence 0.9`,
		want: &Assert{Key: ref("Klarveld.price_per_seat"), Value: vnum(44), By: "worker-3", Sources: []Source{src("src:Klarveld:rev0")}, Confidence: fp(0.9)}},
	{src: `assert Klarveld.region = "EU" by worker-3 from "src:Klarveld:rev0" valid until 2027-01-01`,
		want: &Assert{Key: ref("Klarveld.region"), Value: vstr("EU"), By: "worker-3", Sources: []Source{src("src:Klarveld:rev0")}, ValidUntil: tp("2027-01-01")}},
	{src: `assert Player7.style = "patient" by architect kind inferred seen by architect`,
		want: &Assert{Key: ref("Player7.style"), Value: vstr("patient"), By: "architect", Kind: Inferred, SeenBy: []string{"architect"}}},
	{src: `assert K.p = 1 by w kind observed`, want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", Kind: Observed}},
	{src: `assert K.p = 1 by w valid from 2026-01-01`, want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", ValidFrom: tp("2026-01-01")}},
	{src: `assert K.p = 1 by w confidence 0`, want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", Confidence: fp(0)}},
	{src: `assert K.p = 1 by w confidence 1`, want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", Confidence: fp(1)}},
	{src: `assert K.p = 1 by w seen by a, b, worker-3`, want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", SeenBy: []string{"a", "b", "worker-3"}}},
	{src: `assert K.p = 1 by w vector "1,2 , 3e2" seen by a`, want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", SeenBy: []string{"a"}, Vector: []float32{1, 2, 300}},
		canon: `assert K.p = 1 by w seen by a vector "1 2 300"`},
	{src: `assert K.p = 1 by w from "s1" revision "r1" uri "https://k.example/pricing" excerpt "44 EUR per seat", "s2"`,
		want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", Sources: []Source{
			{ID: "s1", Excerpt: "44 EUR per seat", URI: "https://k.example/pricing", Revision: "r1"}, src("s2")}},
		canon: `assert K.p = 1 by w from "s1" excerpt "44 EUR per seat" uri "https://k.example/pricing" revision "r1", "s2"`},
	{src: `assert K.p = 1 by w seen by a valid until 2027-01-01 valid from 2026-01-01 kind observed confidence 0.5 from "s"`,
		want: &Assert{Key: ref("K.p"), Value: vnum(1), By: "w", Sources: []Source{src("s")}, Confidence: fp(0.5), Kind: Observed,
			ValidFrom: tp("2026-01-01"), ValidUntil: tp("2027-01-01"), SeenBy: []string{"a"}},
		canon: `assert K.p = 1 by w from "s" confidence 0.5 kind observed valid from 2026-01-01 valid until 2027-01-01 seen by a`},
	// keywords are not reserved
	{src: `assert Player7.kind = "from" by by`, want: &Assert{Key: ref("Player7.kind"), Value: vstr("from"), By: "by"}},

	// revoke
	{src: `revoke Klarveld.price_per_seat@2 by alice because "misread the page" replaced by Klarveld.price_per_seat@3`,
		want: &Revoke{Claim: ref("Klarveld.price_per_seat@2"), By: "alice", Because: "misread the page", ReplacedBy: refp("Klarveld.price_per_seat@3")}},
	{src: `revoke K.p@1 by alice`, want: &Revoke{Claim: ref("K.p@1"), By: "alice"}},
	{src: `revoke K.p@1 by alice replaced by K.p@2 because "x"`, want: &Revoke{Claim: ref("K.p@1"), By: "alice", Because: "x", ReplacedBy: refp("K.p@2")},
		canon: `revoke K.p@1 by alice because "x" replaced by K.p@2`},

	// confirm
	{src: `confirm Brimsole.soc2 by alice`, want: &Confirm{Claim: ref("Brimsole.soc2"), By: "alice"}},
	{src: `confirm Brimsole.soc2@4 by alice`, want: &Confirm{Claim: ref("Brimsole.soc2@4"), By: "alice"}},

	// derive
	{src: `derive plan:pick-vendor from Klarveld.price_per_seat, Brimsole.price_per_seat by orchestrator`,
		want: &Derive{Artifact: "plan:pick-vendor", From: refs("Klarveld.price_per_seat", "Brimsole.price_per_seat"), By: "orchestrator"}},
	{src: `derive decision:x from plan:pick-vendor@2, Klarveld.soc2@1, summary:q by orch confidence 0.7 seen by orch, alice`,
		want: &Derive{Artifact: "decision:x", From: refs("plan:pick-vendor@2", "Klarveld.soc2@1", "summary:q"), By: "orch", Confidence: fp(0.7), SeenBy: []string{"orch", "alice"}}},
	{src: `derive d from a.b by o seen by o confidence 0.25`, want: &Derive{Artifact: "d", From: refs("a.b"), By: "o", Confidence: fp(0.25), SeenBy: []string{"o"}},
		canon: `derive d from a.b by o confidence 0.25 seen by o`},

	// review
	{src: `review plan:pick-vendor by alice because "re-checked against the new price"`,
		want: &Review{Artifact: ref("plan:pick-vendor"), By: "alice", Because: "re-checked against the new price"}},
	{src: `review plan:pick-vendor@2 by alice`, want: &Review{Artifact: ref("plan:pick-vendor@2"), By: "alice"}},

	// decay
	{src: `decay signal half-life 10m`, want: &Decay{Predicate: "signal", HalfLife: 10 * time.Minute}},
	{src: `decay price_per_seat half-life 2d`, want: &Decay{Predicate: "price_per_seat", HalfLife: 48 * time.Hour}},
	{src: `decay p half-life 1h30m`, want: &Decay{Predicate: "p", HalfLife: 90 * time.Minute}},
	{src: `decay p half-life 500ms`, want: &Decay{Predicate: "p", HalfLife: 500 * time.Millisecond}},
	{src: `decay p half-life 36h`, want: &Decay{Predicate: "p", HalfLife: 36 * time.Hour}},
	{src: `decay p half-life 1.5h`, want: &Decay{Predicate: "p", HalfLife: 90 * time.Minute}, canon: `decay p half-life 1h30m`},
	{src: `decay p half-life 1d12h`, want: &Decay{Predicate: "p", HalfLife: 36 * time.Hour}, canon: `decay p half-life 36h`},
	{src: `decay p half-life 90s`, want: &Decay{Predicate: "p", HalfLife: 90 * time.Second}, canon: `decay p half-life 1m30s`},
	{src: `decay p half-life 1500us`, want: &Decay{Predicate: "p", HalfLife: 1500 * time.Microsecond}, canon: `decay p half-life 1ms500us`},

	// live
	{src: `live Klarveld`, want: &Live{Pattern: pat("Klarveld", "")}},
	{src: `live Klarveld.*`, want: &Live{Pattern: pat("Klarveld", "")}, canon: `live Klarveld`},
	{src: `live Klarveld.price_per_seat`, want: &Live{Pattern: pat("Klarveld", "price_per_seat")}},
	{src: `live *.soc2 where value = true`, want: &Live{Pattern: pat("", "soc2"), Where: []Filter{{Op: OpEq, Value: vbool(true)}}}},
	{src: `live *`, want: &Live{Pattern: pat("", "")}},
	{src: `live *.*`, want: &Live{Pattern: pat("", "")}, canon: `live *`},
	{src: `live *.price_per_seat where value != 44`, want: &Live{Pattern: pat("", "price_per_seat"), Where: []Filter{{Op: OpNe, Value: vnum(44)}}}},
	{src: `live *.price_per_seat where value < 50`, want: &Live{Pattern: pat("", "price_per_seat"), Where: []Filter{{Op: OpLt, Value: vnum(50)}}}},
	{src: `live *.price_per_seat where value <= 50`, want: &Live{Pattern: pat("", "price_per_seat"), Where: []Filter{{Op: OpLe, Value: vnum(50)}}}},
	{src: `live *.renewal where value > 2026-12-01`, want: &Live{Pattern: pat("", "renewal"), Where: []Filter{{Op: OpGt, Value: vtime("2026-12-01")}}}},
	{src: `live *.region where value >= "EU"`, want: &Live{Pattern: pat("", "region"), Where: []Filter{{Op: OpGe, Value: vstr("EU")}}}},
	{src: `live *.vendor where value = Brimsole`, want: &Live{Pattern: pat("", "vendor"), Where: []Filter{{Op: OpEq, Value: vref("Brimsole")}}}},
	{src: `live *.price_per_seat where value > 10, value <= 89`, want: &Live{Pattern: pat("", "price_per_seat"), Where: []Filter{{Op: OpGt, Value: vnum(10)}, {Op: OpLe, Value: vnum(89)}}}},
	{src: "live *.price_per_seat where value > 10,\n  value != 50", want: &Live{Pattern: pat("", "price_per_seat"), Where: []Filter{{Op: OpGt, Value: vnum(10)}, {Op: OpNe, Value: vnum(50)}}}, canon: `live *.price_per_seat where value > 10, value != 50`},

	// modifiers, on every read, in any order
	{src: `as of 2026-11-29T10:00:00Z live Klarveld`, want: &Live{Mods: Mods{AsOfTime: tp("2026-11-29T10:00:00Z")}, Pattern: pat("Klarveld", "")}},
	{src: `as of tx 42 live Klarveld`, want: &Live{Mods: Mods{AsOfTx: i64p(42)}, Pattern: pat("Klarveld", "")}},
	{src: `as architect live Player7`, want: &Live{Mods: Mods{As: "architect"}, Pattern: pat("Player7", "")}},
	{src: `as architect as of tx 0 stats`, want: &Stats{Mods: Mods{AsOfTx: i64p(0), As: "architect"}}, canon: `as of tx 0 as architect stats`},
	{src: `as of tx 9223372036854775807 stats`, want: &Stats{Mods: Mods{AsOfTx: i64p(9223372036854775807)}}},
	{src: `as of 2026-11-29 as alice why Klarveld.price_per_seat`, want: &Why{Mods: Mods{AsOfTime: tp("2026-11-29"), As: "alice"}, Node: ref("Klarveld.price_per_seat")}},

	// find
	{src: `find ?v, ?p where ?v.soc2 = true, ?v.region = "EU", ?v.price_per_seat = ?p order by ?p limit 1`,
		want: &Find{Vars: []string{"v", "p"}, Where: []Cond{
			{SubjectVar: "v", Predicate: "soc2", Op: OpEq, Object: vbool(true)},
			{SubjectVar: "v", Predicate: "region", Op: OpEq, Object: vstr("EU")},
			{SubjectVar: "v", Predicate: "price_per_seat", Op: OpEq, ObjectVar: "p"},
		}, OrderBy: []OrderKey{{Var: "p"}}, Limit: 1}},
	{src: `find ?v where ?v.price_per_seat = ?p, ?p < 50, Klarveld.competitor = ?v limit 3 order by ?p desc, ?v asc`,
		want: &Find{Vars: []string{"v"}, Where: []Cond{
			{SubjectVar: "v", Predicate: "price_per_seat", Op: OpEq, ObjectVar: "p"},
			{SubjectVar: "p", Op: OpLt, Object: vnum(50)},
			{Subject: "Klarveld", Predicate: "competitor", Op: OpEq, ObjectVar: "v"},
		}, OrderBy: []OrderKey{{Var: "p", Desc: true}, {Var: "v"}}, Limit: 3},
		canon: `find ?v where ?v.price_per_seat = ?p, ?p < 50, Klarveld.competitor = ?v order by ?p desc, ?v limit 3`},
	{src: `find ?a, ?b where ?a.price = ?x, ?b.price = ?y, ?x < ?y, ?a.vendor != Brimsole`,
		want: &Find{Vars: []string{"a", "b"}, Where: []Cond{
			{SubjectVar: "a", Predicate: "price", Op: OpEq, ObjectVar: "x"},
			{SubjectVar: "b", Predicate: "price", Op: OpEq, ObjectVar: "y"},
			{SubjectVar: "x", Op: OpLt, ObjectVar: "y"},
			{SubjectVar: "a", Predicate: "vendor", Op: OpNe, Object: vref("Brimsole")},
		}}},
	{src: `as of tx 7 find ?v where ?v.renewal >= 2027-01-01`, want: &Find{Mods: Mods{AsOfTx: i64p(7)}, Vars: []string{"v"}, Where: []Cond{
		{SubjectVar: "v", Predicate: "renewal", Op: OpGe, Object: vtime("2027-01-01")}}}},

	// why
	{src: `why Klarveld.price_per_seat`, want: &Why{Node: ref("Klarveld.price_per_seat")}},
	{src: `why Klarveld.price_per_seat@1`, want: &Why{Node: ref("Klarveld.price_per_seat@1")}},
	{src: `why plan:pick-vendor`, want: &Why{Node: ref("plan:pick-vendor")}},
	{src: `why plan:pick-vendor@2`, want: &Why{Node: ref("plan:pick-vendor@2")}},

	// revoked-by
	{src: `revoked-by Klarveld.price_per_seat@2`, want: &RevokedBy{Claim: ref("Klarveld.price_per_seat@2")}},
	{src: `as alice revoked-by Klarveld.price_per_seat@2`, want: &RevokedBy{Mods: Mods{As: "alice"}, Claim: ref("Klarveld.price_per_seat@2")}},

	// impact
	{src: `impact Klarveld.price_per_seat@1`, want: &Impact{Node: ref("Klarveld.price_per_seat@1")}},
	{src: `impact Klarveld.price_per_seat depth 2`, want: &Impact{Node: ref("Klarveld.price_per_seat"), Depth: ip(2)}},
	{src: `impact plan:pick-vendor@1 depth 0`, want: &Impact{Node: ref("plan:pick-vendor@1"), Depth: ip(0)}},

	// history
	{src: `history Klarveld.price_per_seat`, want: &History{Node: ref("Klarveld.price_per_seat")}},
	{src: `history plan:pick-vendor`, want: &History{Node: ref("plan:pick-vendor")}},

	// conflicts
	{src: `conflicts`, want: &Conflicts{}},
	{src: `conflicts Klarveld`, want: &Conflicts{Subjects: []string{"Klarveld"}}},
	{src: `conflicts Klarveld, Brimsole`, want: &Conflicts{Subjects: []string{"Klarveld", "Brimsole"}}},

	// beliefs
	{src: `beliefs *.holds_horcrux`, want: &Beliefs{Pattern: pat("", "holds_horcrux")}},
	{src: `beliefs *.holds_horcrux gate 1.0 2.5`, want: &Beliefs{Pattern: pat("", "holds_horcrux"), Gate: &Gate{Low: 1, High: 2.5}}, canon: `beliefs *.holds_horcrux gate 1 2.5`},
	{src: `beliefs Harry.* gate 0 0`, want: &Beliefs{Pattern: pat("Harry", ""), Gate: &Gate{Low: 0, High: 0}}, canon: `beliefs Harry gate 0 0`},

	// search
	{src: `search "EU pricing for the team plan"`, want: &Search{Text: "EU pricing for the team plan"}},
	{src: `search "stealth" on Player7.*, *.mood, Architect limit 5 history`, want: &Search{Text: "stealth", On: []Pattern{pat("Player7", ""), pat("", "mood"), pat("Architect", "")}, Limit: 5, History: true},
		canon: `search "stealth" on Player7, *.mood, Architect limit 5 history`},
	{src: `search "x" history limit 3 on *`, want: &Search{Text: "x", On: []Pattern{pat("", "")}, Limit: 3, History: true}, canon: `search "x" on * limit 3 history`},
	{src: `search "x" signals vector, text vector "0.50, -1 3.5e-05" limit 2`, want: &Search{Text: "x", Vector: []float32{0.5, -1, 3.5e-05}, Signals: []string{"vector", "text"}, Limit: 2},
		canon: `search "x" vector "0.5 -1 3.5e-05" signals vector, text limit 2`},
	{src: `search "" vector "1 0"`, want: &Search{Vector: []float32{1, 0}}},
	{src: `as of tx 4 as worker-3 search "say \"hi\"" for run r-1`, want: &Search{Mods: Mods{AsOfTx: i64p(4), As: "worker-3", ForRun: "r-1"}, Text: `say "hi"`}},

	// context
	{src: `context Klarveld, Brimsole budget 60`, want: &Context{Subjects: []string{"Klarveld", "Brimsole"}, Budget: 60}},
	{src: `context Klarveld`, want: &Context{Subjects: []string{"Klarveld"}}},
	{src: `context *`, want: &Context{All: true}},
	{src: `as worker-3 context * budget 200`, want: &Context{Mods: Mods{As: "worker-3"}, All: true, Budget: 200}},
	{src: `context for "EU pricing for the team plan" budget 60`, want: &Context{Question: sp("EU pricing for the team plan"), Budget: 60}},
	{src: `as of tx 4 as worker-3 context for "say \"hi\"" for run r-1`, want: &Context{Mods: Mods{AsOfTx: i64p(4), As: "worker-3", ForRun: "r-1"}, Question: sp(`say "hi"`)}},
	{src: `context for ""`, want: &Context{Question: sp("")}},
	{src: `context for`, want: &Context{Subjects: []string{"for"}}},
	{src: `context for, Klarveld budget 5`, want: &Context{Subjects: []string{"for", "Klarveld"}, Budget: 5}},

	// stats
	{src: `stats`, want: &Stats{}},

	// catalogue reads
	{src: `principals`, want: &Principals{}},
	{src: `principals work*`, want: &Principals{Pattern: "work*"}},
	{src: `grants`, want: &Grants{}},
	{src: `as of tx 3 grants worker-3`, want: &Grants{Mods: Mods{AsOfTx: i64p(3)}, Grantee: "worker-3"}},
	{src: `subjects`, want: &Subjects{}},
	{src: `subjects Kl*`, want: &Subjects{Pattern: "Kl*"}},
	{src: `as architect subjects *vendor*`, want: &Subjects{Mods: Mods{As: "architect"}, Pattern: "*vendor*"}},
	{src: `predicates price_per_seat`, want: &Predicates{Pattern: "price_per_seat"}},
	{src: `artifacts plan:*`, want: &Artifacts{Pattern: "plan:*"}},
	{src: `sources "src:Kl arveld*"`, want: &Sources{Pattern: "src:Kl arveld*"}},
	{src: `sources src:Klarveld:*`, want: &Sources{Pattern: "src:Klarveld:*"}},
	{src: `sources "src:Klarveld:*"`, want: &Sources{Pattern: "src:Klarveld:*"}, canon: `sources src:Klarveld:*`},
	{src: `describe Klarveld`, want: &Describe{Name: "Klarveld"}},

	// runs
	{src: `context Klarveld, Brimsole budget 60 for run r-17`, want: &Context{Mods: Mods{ForRun: "r-17"}, Subjects: []string{"Klarveld", "Brimsole"}, Budget: 60}},
	{src: `as worker-3 live Klarveld for run r-17`, want: &Live{Mods: Mods{As: "worker-3", ForRun: "r-17"}, Pattern: pat("Klarveld", "")}},
	{src: `as of tx 4 why plan:x for run r1`, want: &Why{Mods: Mods{AsOfTx: ip64(4), ForRun: "r1"}, Node: ref("plan:x")}},
	{src: `impact K.p@1 depth 2 for run r1`, want: &Impact{Mods: Mods{ForRun: "r1"}, Node: ref("K.p@1"), Depth: ip(2)}},
	{src: `find ?s where ?s.p = 1 limit 3 for run r1`, want: &Find{Mods: Mods{ForRun: "r1"}, Vars: []string{"s"}, Where: []Cond{{SubjectVar: "s", Predicate: "p", Op: OpEq, Object: vnum(1)}}, Limit: 3}},
	{src: `derive pick from K.p by w in run r-17`, want: &Derive{Artifact: "pick", From: refs("K.p"), By: "w", Run: "r-17"}},
	{src: `derive pick from K.p by w in run r1 confidence 0.5`, want: &Derive{Artifact: "pick", From: refs("K.p"), By: "w", Confidence: fp(0.5), Run: "r1"},
		canon: `derive pick from K.p by w confidence 0.5 in run r1`},
	{src: `outcome run r-17 failed by w because "paid too much"`, want: &Outcome{Run: "r-17", Result: "failed", By: "w", Because: "paid too much"}},
	{src: `outcome run r-17 declined`, want: &Outcome{Run: "r-17", Result: "declined"}},
	{src: `outcome run r1 succeeded because "x" by w`, want: &Outcome{Run: "r1", Result: "succeeded", By: "w", Because: "x"},
		canon: `outcome run r1 succeeded by w because "x"`},
	{src: `run r-17`, want: &Run{Name: "r-17"}},
	{src: `as w run r-17`, want: &Run{Mods: Mods{As: "w"}, Name: "r-17"}},
	{src: `runs`, want: &Runs{}},
	{src: `runs worker-3 since 2026-11-01`, want: &Runs{By: "worker-3", Since: tp("2026-11-01")}},
	{src: `runs since 2026-11-01`, want: &Runs{Since: tp("2026-11-01")}},
	{src: `stats for worker-3 since 2026-11-01`, want: &Stats{For: "worker-3", Since: tp("2026-11-01")}},
	{src: `stats since 2026-11-01`, want: &Stats{Since: tp("2026-11-01")}},

	// transactions
	{src: `begin`, want: &Begin{}},
	{src: `commit`, want: &Commit{}},
	{src: `rollback`, want: &Rollback{}},
}

func TestParseStmt(t *testing.T) {
	for _, tc := range stmtCases {
		t.Run(tc.src, func(t *testing.T) {
			got, err := ParseStmt("t.mql", tc.src)
			if err != nil {
				t.Fatalf("ParseStmt: %v", err)
			}
			stripPos(got)
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
			canon := tc.canon
			if canon == "" {
				canon = tc.src
			}
			if s := got.String(); s != canon {
				t.Fatalf("String:\ngot  %s\nwant %s", s, canon)
			}
			if s := tc.want.String(); s != canon {
				t.Fatalf("want.String:\ngot  %s\nwant %s", s, canon)
			}
		})
	}
}

// TestRoundTrip prints every statement form and parses the output again.
func TestRoundTrip(t *testing.T) {
	for _, tc := range stmtCases {
		first, err := ParseStmt("a", tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		printed := first.String()
		second, err := ParseStmt("b", printed)
		if err != nil {
			t.Fatalf("%s: printed %q does not parse: %v", tc.src, printed, err)
		}
		stripPos(first)
		stripPos(second)
		if !reflect.DeepEqual(first, second) {
			t.Errorf("%s: round trip differs\nfirst  %#v\nsecond %#v", tc.src, first, second)
		}
		if again := second.String(); again != printed {
			t.Errorf("%s: printing is not stable: %q then %q", tc.src, printed, again)
		}
	}
	// The whole table as one script, printed and parsed back.
	var b strings.Builder
	for _, tc := range stmtCases {
		b.WriteString(tc.src + "\n")
	}
	s1, err := Parse("all", b.String())
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse("all2", s1.String())
	if err != nil {
		t.Fatal(err)
	}
	stripPos(s1)
	stripPos(s2)
	if !reflect.DeepEqual(s1, s2) {
		t.Error("script round trip differs")
	}
	if len(s1.Stmts) != len(stmtCases) {
		t.Errorf("got %d statements, want %d", len(s1.Stmts), len(stmtCases))
	}
}

// A question after a name other than "for" is blamed on the name: it is where the input stops
// being either form of context.
func TestContextForNamesTheWrongWord(t *testing.T) {
	_, err := ParseStmt("q.mql", `context Klarveld "EU pricing"`)
	var e *Error
	if !errors.As(err, &e) || e.Pos.Column != 9 || e.Msg != `unexpected "Klarveld"; expected "for" before the question: context for "QUESTION"` {
		t.Errorf("context Klarveld \"EU pricing\": %v", err)
	}
}

func TestPositions(t *testing.T) {
	src := "stats\n  -- a comment\n\tas of tx 3 live Klarveld.price\nassert K.p = \"é\" by w; why plan:x\n"
	s, err := Parse("pos.mql", src)
	if err != nil {
		t.Fatal(err)
	}
	want := []Position{
		{Filename: "pos.mql", Offset: 0, Line: 1, Column: 1},
		{Filename: "pos.mql", Offset: 22, Line: 3, Column: 2},
		{Filename: "pos.mql", Offset: 53, Line: 4, Column: 1},
		{Filename: "pos.mql", Offset: 77, Line: 4, Column: 24},
	}
	if len(s.Stmts) != len(want) {
		t.Fatalf("got %d statements", len(s.Stmts))
	}
	for i, st := range s.Stmts {
		if st.Pos() != want[i] {
			t.Errorf("statement %d (%s): pos %+v, want %+v", i, st, st.Pos(), want[i])
		}
	}
	live := s.Stmts[1].(*Live)
	if p := live.Pattern.Pos; p.Line != 3 || p.Column != 18 {
		t.Errorf("pattern pos %v", p)
	}
	as := s.Stmts[2].(*Assert)
	if p := as.Value.Pos; p.Line != 4 || p.Column != 14 {
		t.Errorf("value pos %v", p)
	}
	if got := as.Key.Pos.String(); got != "pos.mql:4:8" {
		t.Errorf("key pos %s", got)
	}
}

func TestStatementBoundaries(t *testing.T) {
	cases := []struct {
		src  string
		want []string // printed statements
	}{
		{"stats\nlive X", []string{"stats", "live X"}},
		{"stats; live X;", []string{"stats", "live X"}},
		{"stats;;\n;\n\nlive X\n\n", []string{"stats", "live X"}},
		{"derive plan:x from A.b,\n  C.d by orch", []string{"derive plan:x from A.b, C.d by orch"}},
		{"assert K.p =\n 44\n by w\nstats", []string{"assert K.p = 44 by w", "stats"}},
		{"as of tx 3\nlive X", []string{"as of tx 3 live X"}},
		{"find ?v where\n  ?v.a = 1,\n  ?v.b = 2\n", []string{"find ?v where ?v.a = 1, ?v.b = 2"}},
		{"conflicts\nKlarveld", nil}, // "Klarveld" alone is not a statement
		{"live K -- trailing comment\nstats -- another", []string{"live K", "stats"}},
		{"stats--no space before the comment", []string{"stats"}},
		{"assert K.note = \"line one\nline two\" by w", []string{`assert K.note = "line one\nline two" by w`}},
		{"assert K.p = 1 by w confidence 0.5 confidence\n0.6", nil},
		// A line that begins with a clause keyword continues the statement above it, complete
		// or not, across blank and comment lines: nothing ends a write before its clauses.
		{"assert B.p = 39\nby w1\nfrom \"src:b0\"", []string{`assert B.p = 39 by w1 from "src:b0"`}},
		{"assert B.p = 39 by w1\n\n  -- its source:\n  from \"s\"\n  excerpt \"e\"\nstats", []string{`assert B.p = 39 by w1 from "s" excerpt "e"`, "stats"}},
		{"revoke K.p@1 by w\nbecause \"wrong\"", []string{`revoke K.p@1 by w because "wrong"`}},
		{"live X\nwhere value > 3\nfor run r-1", []string{"live X where value > 3 for run r-1"}},
		{"stats\nfor w\nsince 2026-11-29", []string{"stats for w since 2026-11-29"}},
		{"derive plan:x from A.b by w\nin run r-1", []string{"derive plan:x from A.b by w in run r-1"}},
		{"impact K.p\ndepth 2\nlive X", []string{"impact K.p depth 2", "live X"}},
		// A ";" ends a statement: a clause after it begins nothing.
		{"assert B.p = 39 by w1;\nfrom \"s\"", nil},
		// A clause the statement cannot take is an error of the statement, which then does not run.
		{"stats\nby w1", nil},
	}
	for _, tc := range cases {
		s, err := Parse("b", tc.src)
		if tc.want == nil {
			if err == nil {
				t.Errorf("%q: want an error, got %v", tc.src, s)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.src, err)
			continue
		}
		var got []string
		for _, st := range s.Stmts {
			got = append(got, st.String())
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\ngot  %q\nwant %q", tc.src, got, tc.want)
		}
	}
}

func TestComplete(t *testing.T) {
	cases := []struct {
		src  string
		want bool
	}{
		{"", true},
		{"   \n\n", true},
		{"-- only a comment", true},
		{"stats", true},
		{"stats\n", true},
		{"stats;", true},
		{"assert K.p = ", false},
		{"assert K.p = 44", false},
		{"assert K.p = 44 by", false},
		{"assert K.p = 44 by w", true},
		{"assert K.p = 44 by w from", false},
		{"assert K.p = 44 by w valid", false},
		{"derive plan:x from A.b,", false},
		{"derive plan:x from A.b,\n", false},
		{"derive plan:x from A.b,\nC.d by orch", true},
		{"stats\nlive", false},
		{"live X where value", false},
		{"as of tx 3", false},
		{"as", false},
		{"impact K.p@", false},
		{"beliefs *.h gate 1.0", false},
		{`assert K.p = "abc`, false},
		{"assert K.p = \"abc\nstill in the string", false},
		{`assert K.p = "abc" by w`, true},
		{"asert K.p", true},      // an error: more input cannot fix it
		{"assert K.p = ;", true}, // an error before ";"
		{"assert K.p = 1 by w x", true},
		{"stats\nassert K.p =", false},
		{"assert K.p =\n", false},
		{"assert K.p = 44\nby w\nfrom", false},
		{"assert K.p = 44 by w\n\nfrom", false},
	}
	for _, tc := range cases {
		if got := Complete(tc.src); got != tc.want {
			t.Errorf("Complete(%q) = %v, want %v", tc.src, got, tc.want)
		}
	}
}

// TestErrorsAtEnd checks errors that are found at the end of the input,
// which the testdata harness cannot express: they are reported just after
// the last token.
func TestErrorsAtEnd(t *testing.T) {
	cases := []struct {
		src, want string
	}{
		{"assert K.p = 1", `e.mql:1:15: expected "by" and a principal name, found end of input`},
		{"assert K.p = 1\n", `e.mql:1:15: expected "by" and a principal name, found end of input`},
		{"assert K.p =\n\n", `e.mql:1:13: expected a value after "=", found end of input`},
		{"impact K.p@", `e.mql:1:12: expected version number after "@", found end of input`},
		{"derive plan:x from A.b,\n", `e.mql:1:24: expected a claim or an artifact after ",", found end of input`},
		{"live X where value > 3,", `e.mql:1:24: expected "value" after "," (where value OP LITERAL, value OP LITERAL), found end of input`},
		{"live X where value > 3, value", `e.mql:1:30: expected a comparison operator (=, !=, <, <=, >, >=) after "value", found end of input`},
		{"beliefs *.h gate 1.0", `e.mql:1:21: expected a second number after "gate" (gate LOW HIGH), found end of input`},
		{"as of tx 3", `e.mql:1:11: expected a read statement after the modifiers, found end of input`},
		{"principal alice;", `e.mql:1:16: expected a principal kind (user, agent or tool), found ";"`},
		{"outcome run r1", `e.mql:1:15: expected the run's result (succeeded, failed or declined) after its name, found end of input`},
		{"outcome run", `e.mql:1:12: expected a run's name after "run", found end of input`},
		{"run", `e.mql:1:4: expected a run's name after "run", found end of input`},
		{"outcome run r1 failed because", `e.mql:1:30: expected a string after "because", found end of input`},
		{"outcome run r1 failed by", `e.mql:1:25: expected a principal name after "by", found end of input`},
		{`assert K.p = "abc`, `e.mql:1:14: unterminated string literal`},
		{"", ""},
	}
	for _, tc := range cases {
		_, err := Parse("e.mql", tc.src)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("Parse(%q):\ngot  %s\nwant %s", tc.src, got, tc.want)
		}
	}
}

func TestParseStmtCount(t *testing.T) {
	if _, err := ParseStmt("x", "  -- nothing\n"); err == nil || !strings.Contains(err.Error(), "expected a statement") {
		t.Errorf("empty: %v", err)
	}
	if _, err := ParseStmt("x", "stats; stats"); err == nil || err.Error() != "x:1:8: expected one statement, found more" {
		t.Errorf("two: %v", err)
	}
	if st, err := ParseStmt("x", "\n-- c\nstats;\n"); err != nil || st.String() != "stats" {
		t.Errorf("one: %v %v", st, err)
	}
}

func TestErrorTypes(t *testing.T) {
	_, err := Parse("f.mql", "asert x")
	if !errors.Is(err, ErrSyntax) {
		t.Fatalf("errors.Is(%v, ErrSyntax) = false", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Pos.Line != 1 || e.Pos.Column != 1 || e.Pos.Filename != "f.mql" {
		t.Fatalf("errors.As: %#v", e)
	}
	if !strings.HasPrefix(e.Msg, `unknown statement "asert"; expected one of principal, grant, assert, revoke,`) {
		t.Errorf("message %q", e.Msg)
	}

	s, err := Parse("f.mql", "asert x\nstats\nlive K where value ~ 3\nlive K.\n")
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 3 {
		t.Fatalf("want an ErrorList of 3, got %T %v", err, err)
	}
	if !errors.Is(err, ErrSyntax) {
		t.Error("ErrorList is not ErrSyntax")
	}
	if !errors.As(err, &e) || e.Pos.Line != 1 {
		t.Errorf("errors.As through the list: %v", e)
	}
	if len(s.Stmts) != 1 || s.Stmts[0].String() != "stats" {
		t.Errorf("partial script %v", s)
	}
	if got := err.Error(); !strings.HasSuffix(got, "(and 2 more errors)") {
		t.Errorf("list message %q", got)
	}
	for i := 1; i < len(list); i++ {
		if list[i-1].Pos.Offset > list[i].Pos.Offset {
			t.Error("errors not sorted")
		}
	}

	// At most 10 errors, then "too many errors".
	_, err = Parse("many", strings.Repeat("bogus\n", 50))
	if !errors.As(err, &list) || len(list) != 11 || list[10].Msg != "too many errors" {
		t.Errorf("error cap: %d errors", len(list))
	}
	_, err = Parse("lex", strings.Repeat("$\n", 50))
	if !errors.As(err, &list) || len(list) != 11 || list[10].Msg != "too many errors" || list[10].Pos.Line != 11 {
		t.Errorf("lexical error cap: %v", err)
	}
	// Parse errors first, then lexical ones: the first ten in the input.
	_, err = Parse("mixed", strings.Repeat("bogus\n", 5)+strings.Repeat("$\n", 20))
	if !errors.As(err, &list) || len(list) != 11 {
		t.Fatalf("mixed error cap: %v", err)
	}
	for i, e := range list[:10] {
		if e.Pos.Line != i+1 {
			t.Errorf("mixed error %d at line %d: %v", i, e.Pos.Line, e)
		}
	}
	if (ErrorList{}).Err() != nil {
		t.Error("empty list Err() != nil")
	}
}

func TestLimits(t *testing.T) {
	big := strings.Repeat("x", MaxStringBytes)
	_, err := Parse("big", "stats\nassert K.p = \""+big+"\" by w\nstats")
	if err == nil || err.Error() != "big:2:14: string literal is longer than 1 MiB (1048578 bytes)" {
		t.Errorf("long string: %v", err)
	}
	// A string just under the limit is fine.
	ok := strings.Repeat("y", MaxStringBytes-64)
	if _, err := Parse("ok", "assert K.p = \""+ok+"\" by w"); err != nil {
		t.Errorf("string at the limit: %v", err)
	}

	// A statement over 1 MiB, built from short tokens across lines.
	var b strings.Builder
	b.WriteString("stats\nconflicts a")
	long := strings.Repeat("a", 4000)
	for b.Len() < MaxStmtBytes+10 {
		b.WriteString(",\n " + long)
	}
	b.WriteString("\nstats\n")
	s, err := Parse("long", b.String())
	if err == nil || err.Error() != "long:2:1: statement is longer than 1 MiB" {
		t.Errorf("long statement: %v", err)
	}
	if s == nil || len(s.Stmts) < 1 {
		t.Errorf("statements around the long one: %v", s)
	}

	for _, tc := range []struct{ src, want string }{
		{"stats\nlive K\x00", "nul:2:7: NUL byte in input"},
		{"stats\nlive \xffK", "nul:2:6: invalid UTF-8 encoding"},
		{"live K where value = \"a\\x00\"", "nul:1:22: string contains a NUL character"},
		{"live K where value = \"a\\xff\"", "nul:1:22: string is not valid UTF-8 after its escapes"},
		{"live K where value = \"a\\q\"", `nul:1:24: invalid escape sequence "\\q" in string`},
	} {
		_, err := Parse("nul", tc.src)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%q: got %v, want %s", tc.src, err, tc.want)
		}
	}
}

// TestConcurrent parses from many goroutines: the package-level parser is
// shared (run with -race).
func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, tc := range stmtCases {
				if _, err := ParseStmt("c", tc.src); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestReadStmt(t *testing.T) {
	s, err := Parse("r", "as alice stats\nprincipal a user\nlive K")
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := s.Stmts[0].(ReadStmt); !ok || r.Modifiers().As != "alice" {
		t.Error("stats is not a ReadStmt with its modifiers")
	}
	if _, ok := s.Stmts[1].(ReadStmt); ok {
		t.Error("principal is a ReadStmt")
	}
	if r := s.Stmts[2].(ReadStmt); !r.Modifiers().IsZero() {
		t.Error("modifiers not zero")
	}
}
