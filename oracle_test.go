package mql_test

// Oracles (issue 11, items 3 and 4 and the hunt after them): nothing a principal may not see
// may change what it is told. Each case writes the same visible history into two stores and
// hidden records into the first only (see twins in twins_test.go), then compares what the
// observer gets: the answer to its own write, and every read.

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

func assertSpec(subj, pred string, v mql.Value, by string, seen ...string) mql.AssertSpec {
	return mql.AssertSpec{Subject: subj, Predicate: pred, Value: v, By: by, SeenBy: seen}
}

func TestOracles(t *testing.T) {
	type write = func(f *fixture) (mql.Receipt, error)
	assert := func(s mql.AssertSpec) write {
		return func(f *fixture) (mql.Receipt, error) { return f.db.Assert(f.ctx, s) }
	}
	derive := func(s mql.DeriveSpec) write {
		return func(f *fixture) (mql.Receipt, error) { return f.db.Derive(f.ctx, s) }
	}
	review := func(ref, by string) write {
		return func(f *fixture) (mql.Receipt, error) {
			return f.db.Review(f.ctx, mql.ReviewSpec{Artifact: ref, By: by})
		}
	}
	revoke := func(ref, by, replacement string) write {
		return func(f *fixture) (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: ref, By: by, ReplacedBy: replacement})
		}
	}
	confirm := func(ref, by string) write {
		return func(f *fixture) (mql.Receipt, error) {
			return f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: ref, By: by})
		}
	}
	outcome := func(run string, result mql.OutcomeResult, by string) write {
		return func(f *fixture) (mql.Receipt, error) {
			return f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: run, Result: result, By: by, Because: "the " + string(result) + " run"})
		}
	}
	type read = func(f *fixture, r mql.Reader) (any, error)
	why := func(ref string) read {
		return func(f *fixture, r mql.Reader) (any, error) { return r.Why(f.ctx, ref) }
	}
	live := func(pat string) read {
		return func(f *fixture, r mql.Reader) (any, error) { return r.Live(f.ctx, pat) }
	}
	contextOf := func(subjects ...string) read {
		return func(f *fixture, r mql.Reader) (any, error) { return r.Context(f.ctx, subjects, 0) }
	}
	src := func(id, excerpt string) []mql.Source { return []mql.Source{{ID: id, Excerpt: excerpt}} }
	// The observer is worker-3 (and alice, a user, for confirmations); the hidden records are
	// worker-7's, seen by worker-7 only.
	const w3, w7 = "worker-3", "worker-7"
	type step struct {
		hidden bool
		what   string
		w      write
		want   error // for a visible step: the error both stores must give (nil: success)
		// A read for run, as who, instead of a write (run also names the run of an outcome).
		read     read
		who, run string
	}
	cases := []struct {
		name  string
		steps []step
		keys  []string
		arts  []string
	}{
		{"item 3: an artifact version in another audience neither supersedes nor is superseded", []step{
			{what: "K.p", w: assert(assertSpec("K", "p0", mql.Number(1), w3))},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "plan:secret", From: []string{"K.p0"}, By: w7, SeenBy: []string{w7}})},
			{what: "derive plan:secret by worker-3", w: derive(mql.DeriveSpec{Artifact: "plan:secret", From: []string{"K.p0"}, By: w3})},
			{what: "derive d from plan:secret", w: derive(mql.DeriveSpec{Artifact: "d", From: []string{"plan:secret"}, By: w3})},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "plan:secret", From: []string{"K.p0"}, By: w7, SeenBy: []string{w7}})},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "d", From: []string{"plan:secret"}, By: w7, SeenBy: []string{w7}})},
			{what: "(c) review plan:secret", w: review("plan:secret", "alice")},
			{what: "derive plan:secret again", w: derive(mql.DeriveSpec{Artifact: "plan:secret", From: []string{"K.p0", "plan:secret"}, By: w3})},
			{what: "review d", w: review("d", "alice")},
		}, []string{"K.p0"}, []string{"plan:secret", "d"}},
		{"item 4: the value type of a hidden claim", []step{
			{hidden: true, w: assert(assertSpec("K", "p0", mql.String("s"), w7, w7))},
			{what: "assert a number", w: assert(assertSpec("K", "p0", mql.Number(5), w3))},
			{what: "assert a string after it", w: assert(assertSpec("K", "p0", mql.String("t"), w3)), want: mql.ErrValueType},
			{hidden: true, w: assert(assertSpec("J", "p1", mql.Bool(true), w7, w7))},
			{what: "assert J.p0 a string", w: assert(assertSpec("J", "p0", mql.String("u"), w3)), want: mql.ErrValueType},
			{what: "assert J.p0 a number", w: assert(assertSpec("J", "p0", mql.Number(7), w3, w3))},
			{what: "assert J.p1 a string", w: assert(assertSpec("J", "p1", mql.String("u"), w3))},
			{what: "assert K.p1 a bool", w: assert(assertSpec("K", "p1", mql.Bool(true), w3)), want: mql.ErrValueType},
		}, []string{"K.p0", "J.p0", "J.p1"}, nil},
		{"(a) a source recorded by a hidden claim", []step{
			{hidden: true, w: assert(mql.AssertSpec{Subject: "J", Predicate: "p1", Value: mql.String("a"), By: w7, SeenBy: []string{w7}, Sources: src("src:s1", "the secret excerpt")})},
			{hidden: true, w: assert(mql.AssertSpec{Subject: "J", Predicate: "p1", Value: mql.String("b"), By: w7, SeenBy: []string{w7}, Sources: src("src:s2", "same")})},
			{hidden: true, w: assert(mql.AssertSpec{Subject: "J", Predicate: "p0", Value: mql.String("d"), By: w7, SeenBy: []string{w7}, Sources: src("src:s4", "secret four")})},
			{what: "cite src:s4 without details", w: assert(mql.AssertSpec{Subject: "M", Predicate: "p0", Value: mql.String("m"), By: w3, Sources: src("src:s4", "")})},
			{what: "cite src:s1 with other details", w: assert(mql.AssertSpec{Subject: "K", Predicate: "p1", Value: mql.String("x"), By: w3, Sources: src("src:s1", "mine")})},
			{what: "cite src:s1 again, without details", w: assert(mql.AssertSpec{Subject: "K", Predicate: "p0", Value: mql.String("y"), By: w3, Sources: src("src:s1", "")})},
			{what: "cite src:s1 with another excerpt", w: assert(mql.AssertSpec{Subject: "L", Predicate: "p0", Value: mql.String("z"), By: w3, Sources: src("src:s1", "other")})},
			{what: "cite src:s1 with another URI", w: assert(mql.AssertSpec{Subject: "L", Predicate: "p0", Value: mql.String("z2"), By: w3, Sources: []mql.Source{{ID: "src:s1", URI: "https://other.example"}}}), want: mql.ErrConflict},
			{what: "cite src:s2 with the same details", w: assert(mql.AssertSpec{Subject: "L", Predicate: "p1", Value: mql.String("w"), By: w3, Sources: src("src:s2", "same")})},
			{what: "cite src:s3 without details", w: assert(mql.AssertSpec{Subject: "L", Predicate: "p1", Value: mql.String("v"), By: w3, Sources: src("src:s3", "")})},
			{hidden: true, w: assert(mql.AssertSpec{Subject: "J", Predicate: "p0", Value: mql.String("c"), By: w7, SeenBy: []string{w7}, Sources: src("src:s3", "filled in later")})},
			{what: "cite one source twice in a private claim", w: assert(mql.AssertSpec{Subject: "N", Predicate: "p0", Value: mql.String("n"), By: w3, SeenBy: []string{w3},
				Sources: []mql.Source{{ID: "src:s1", Excerpt: "private"}, {ID: "src:s1"}}})},
		}, []string{"K.p0", "K.p1", "L.p0", "L.p1", "M.p0"}, nil},
		{"(b) the cycle check walks what the deriver may see", []step{
			{what: "K.p0", w: assert(assertSpec("K", "p0", mql.Number(1), w3))},
			{what: "derive x", w: derive(mql.DeriveSpec{Artifact: "x", From: []string{"K.p0"}, By: w3})},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "y", From: []string{"x"}, By: w7, SeenBy: []string{w7}})},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "z", From: []string{"y"}, By: w7, SeenBy: []string{w7}})},
			{what: "derive z from x", w: derive(mql.DeriveSpec{Artifact: "z", From: []string{"x"}, By: w3})},
			{what: "derive x from z: a cycle the deriver sees", w: derive(mql.DeriveSpec{Artifact: "x", From: []string{"z"}, By: w3}), want: mql.ErrCycle},
			{what: "derive x from y, hidden", w: derive(mql.DeriveSpec{Artifact: "x", From: []string{"y"}, By: w3}), want: mql.ErrNotFound},
			{what: "derive x folding x", w: derive(mql.DeriveSpec{Artifact: "x", From: []string{"x", "K.p0"}, By: w3})},
		}, []string{"K.p0"}, []string{"x", "y", "z"}},
		{"(d, e) not found reads the same for a hidden version and for none", []step{
			{what: "K.p0", w: assert(assertSpec("K", "p0", mql.String("a"), w3))},
			{what: "plan", w: derive(mql.DeriveSpec{Artifact: "plan", From: []string{"K.p0"}, By: w3})},
			{hidden: true, w: assert(assertSpec("K", "p0", mql.String("h"), w7, w7))},
			{hidden: true, w: assert(assertSpec("H", "p0", mql.String("h"), w7, w7))},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "plan", From: []string{"K.p0"}, By: w7, SeenBy: []string{w7}})},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "hplan", From: []string{"H.p0"}, By: w7})},
			{what: "revoke K.p0@2", w: revoke("K.p0@2", w3, ""), want: mql.ErrNotFound},
			{what: "revoke H.p0@1 by worker-3", w: revoke("H.p0@1", w3, ""), want: mql.ErrNotFound},
			{what: "revoke K.p0@1 replaced by K.p0@2", w: revoke("K.p0@1", w3, "K.p0@2"), want: mql.ErrNotFound},
			{what: "confirm H.p0", w: confirm("H.p0", "alice"), want: mql.ErrNotFound},
			{what: "confirm K.p0@2", w: confirm("K.p0@2", "alice"), want: mql.ErrNotFound},
			{what: "review hplan", w: review("hplan", w3), want: mql.ErrNotFound},
			{what: "review plan@2", w: review("plan@2", w3), want: mql.ErrNotFound},
			{what: "derive from K.p0@2", w: derive(mql.DeriveSpec{Artifact: "q", From: []string{"K.p0@2"}, By: w3}), want: mql.ErrNotFound},
			{what: "derive from plan@2", w: derive(mql.DeriveSpec{Artifact: "q", From: []string{"plan@2"}, By: w3}), want: mql.ErrNotFound},
			{what: "revoke K.p0@1", w: revoke("K.p0@1", w3, "")},
			{what: "confirm K.p0 with no live claim", w: confirm("K.p0", "alice"), want: mql.ErrNotFound},
			{what: "revoke K.p0@1 again", w: revoke("K.p0@1", w3, ""), want: mql.ErrConflict},
		}, []string{"K.p0", "H.p0"}, []string{"plan", "hplan"}},
		{"(f) counts and listing order", []step{
			{hidden: true, w: assert(mql.AssertSpec{Subject: "S9", Predicate: "p0", Value: mql.Number(9), By: w7, SeenBy: []string{w7}, Sources: src("src:a", "")})},
			{hidden: true, w: assert(assertSpec("S9", "p1", mql.Number(9), w7, w7))},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "art:z", From: []string{"S9.p0"}, By: w7})},
			{hidden: true, w: revoke("S9.p1@1", w7, "")},
			{what: "S1.p0", w: assert(assertSpec("S1", "p0", mql.Number(3), w3))},
			{what: "S9.p0", w: assert(assertSpec("S9", "p0", mql.Number(3), w3))},
			{what: "S1.p1", w: assert(assertSpec("S1", "p1", mql.Number(1), w3))},
			{what: "S9.p1", w: assert(assertSpec("S9", "p1", mql.Number(2), w3, w3))},
			{what: "art:a", w: derive(mql.DeriveSpec{Artifact: "art:a", From: []string{"S1.p0"}, By: w3})},
			{what: "art:z", w: derive(mql.DeriveSpec{Artifact: "art:z", From: []string{"S9.p0"}, By: w3})},
			{hidden: true, w: assert(assertSpec("S0", "p0", mql.Number(3), w7, w7))},
		}, []string{"S1.p0", "S9.p0", "S9.p1"}, []string{"art:a", "art:z"}},
		{"(h) runs: what another principal's run was served, decided and how it ended", []step{
			{what: "K.p0", w: assert(assertSpec("K", "p0", mql.Number(1), w3))},
			{hidden: true, who: w7, run: "r1", read: why("K.p0")},
			{what: "context K for run r1", who: w3, run: "r1", read: contextOf("K")},
			{hidden: true, w: derive(mql.DeriveSpec{Artifact: "plan:x", From: []string{"K.p0"}, By: w7, SeenBy: []string{w7}, Run: "r1"})},
			{hidden: true, run: "r1", w: outcome("r1", mql.Failed, w7)},
			{what: "derive plan:y in run r1", w: derive(mql.DeriveSpec{Artifact: "plan:y", From: []string{"K.p0"}, By: w3, Run: "r1"})},
			{hidden: true, w: assert(assertSpec("K", "p0", mql.Number(2), w7, w7))},
			{hidden: true, who: w7, run: "r2", read: live("*")},
			{what: "live * for run r3", who: w3, run: "r3", read: live("*")},
			{hidden: true, w: assert(assertSpec("J", "p0", mql.Number(5), w7, w7))},
			{what: "K.p0 again: run r1's served version goes stale after its decision", w: assert(assertSpec("K", "p0", mql.Number(3), w3))},
			{what: "outcome r1 failed", run: "r1", w: outcome("r1", mql.Failed, w3)},
			{hidden: true, who: w7, run: "r3", read: contextOf("*")},
			{what: "why K.p0 for run r3", who: w3, run: "r3", read: why("K.p0")},
			{what: "outcome r3 declined: its decision point, after K.p0@1 went stale", run: "r3", w: outcome("r3", mql.Declined, w3)},
			{hidden: true, run: "r3", w: outcome("r3", mql.Succeeded, w7)},
			{what: "derive plan:z in run r2", w: derive(mql.DeriveSpec{Artifact: "plan:z", From: []string{"K.p0"}, By: w3, Run: "r2"})},
			{what: "why plan:x for run r2: not found, it is hidden", who: w3, run: "r2", read: why("plan:x")},
		}, []string{"K.p0", "J.p0"}, []string{"plan:x", "plan:y", "plan:z"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tw := newTwins(t, mql.Options{})
			for _, p := range []struct {
				name string
				typ  mql.PrincipalType
			}{{"alice", mql.User}, {w3, mql.Agent}, {w7, mql.Agent}} {
				tw.setup(func(f *fixture) (mql.Receipt, error) {
					return f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: p.name, Type: p.typ, By: "owner"})
				})
			}
			tw.setup(func(f *fixture) (mql.Receipt, error) {
				return f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "*", By: "owner"})
			})
			for _, s := range tc.steps {
				tw.noteRun(s.run)
				if s.read != nil {
					if s.hidden {
						if err := tw.hiddenForRun(s.who, s.run, s.read); err != nil {
							t.Fatalf("hidden read for run %s: %v", s.run, err)
						}
					} else {
						tw.forRun(s.what, s.who, s.run, s.read)
					}
					tw.reads(w3, tc.keys, tc.arts, 0)
					continue
				}
				if s.hidden {
					if _, err := tw.hidden(s.w); err != nil {
						t.Fatalf("hidden write: %v", err)
					}
					continue
				}
				_, errs := tw.visible(s.what, s.w)
				if !errors.Is(errs[0], s.want) || (s.want == nil) != (errs[0] == nil) {
					t.Fatalf("%s: %v, want %v", s.what, errs[0], s.want)
				}
				tw.reads(w3, tc.keys, tc.arts, 0)
			}
			tw.reads(w3, tc.keys, tc.arts, 0)
			tw.reads("alice", tc.keys, tc.arts, 0)
			tw.reads(w3, tc.keys, tc.arts, 1)
			for _, f := range tw.f {
				if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
					t.Fatalf("check: %v %v", err, rep.Problems)
				}
			}
		})
	}
}

// Item 3 as the attacker found it, and what each principal and the owner see after it.
func TestArtifactVersionsKeepToTheirAudience(t *testing.T) {
	f := open(t, mql.Options{}).team()
	w3, w7 := f.db.As("worker-3"), f.db.As("worker-7")
	f.assert("K", "p", mql.Number(1), "worker-3")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan:secret", From: []string{"K.p"}, By: "worker-7", SeenBy: []string{"worker-7"}}))
	if _, err := w3.History(f.ctx, "plan:secret"); !errors.Is(err, mql.ErrNotFound) {
		t.Fatalf("history as worker-3: %v", err)
	}
	rc := f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan:secret", From: []string{"K.p"}, By: "worker-3"}))
	if rc.Ref != "plan:secret@2" || rc.State != mql.Live || rc.Supersedes != "" {
		t.Fatalf("worker-3's derive: %+v (it must not supersede worker-7's private version)", rc)
	}
	h, err := w7.History(f.ctx, "plan:secret")
	if err != nil || len(h.Artifacts) != 2 || h.Artifacts[0].State != mql.Live || h.Artifacts[0].Review != mql.ReviewOK {
		t.Fatalf("worker-7's version after worker-3's derive: %+v %v", h, err)
	}
	// worker-7 revises its own version: it supersedes @1, not worker-3's @2.
	rc = f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan:secret", From: []string{"K.p"}, By: "worker-7", SeenBy: []string{"worker-7"}}))
	if rc.Ref != "plan:secret@3" || rc.Supersedes != "plan:secret@1" {
		t.Fatalf("worker-7's revision: %+v", rc)
	}
	mine, err := w3.History(f.ctx, "plan:secret")
	if err != nil || len(mine.Artifacts) != 1 || mine.Artifacts[0].Ref != "plan:secret@2" || mine.Artifacts[0].State != mql.Live {
		t.Fatalf("worker-3's history: %+v %v", mine, err)
	}
	// The owner sees each audience's live version; an unversioned reference is the newest.
	all, _ := f.db.History(f.ctx, "plan:secret")
	var states []string
	for _, a := range all.Artifacts {
		states = append(states, a.Ref+" "+string(a.State))
	}
	if got := strings.Join(states, ", "); got != "plan:secret@1 superseded, plan:secret@2 live, plan:secret@3 live" {
		t.Fatalf("owner's history: %s", got)
	}
	why, err := f.db.Why(f.ctx, "plan:secret")
	if err != nil || why.Artifact.Ref != "plan:secret@3" {
		t.Fatalf("owner's why plan:secret: %+v %v", why, err)
	}
	if why, err := w3.Why(f.ctx, "plan:secret"); err != nil || why.Artifact.Ref != "plan:secret@2" {
		t.Fatalf("worker-3's why plan:secret: %+v %v", why, err)
	}
	imp, err := f.db.Impact(f.ctx, "plan:secret@1", 0)
	if err != nil || imp.Changes[0].State != mql.Superseded || imp.Changes[0].ReplacedBy != "plan:secret@3" {
		t.Fatalf("owner's impact of @1: %+v %v", imp, err)
	}
	if st, _ := f.db.Stats(f.ctx); st.Artifacts != 2 {
		t.Errorf("owner's stats count %d live artifacts, want 2", st.Artifacts)
	}
	if st, _ := w3.Stats(f.ctx); st.Artifacts != 1 {
		t.Errorf("worker-3's stats count %d live artifacts, want 1", st.Artifacts)
	}
	// The versions survive export and import with their supersession.
	g := imported(t, f.export())
	again, _ := g.db.History(g.ctx, "plan:secret")
	var states2 []string
	for _, a := range again.Artifacts {
		states2 = append(states2, a.Ref+" "+string(a.State))
	}
	if strings.Join(states2, ", ") != strings.Join(states, ", ") {
		t.Fatalf("after import: %v, before: %v", states2, states)
	}
}

// Item 4: the value type a principal must give is fixed by the first claim of the predicate it
// may see, so the owner may see a predicate hold several types; every read copes.
func TestValueTypeFollowsVisibility(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, assertSpec("K", "secret", mql.String("s"), "worker-7", "worker-7")))
	// The attacker's probe: a number where worker-7 holds strings. Accepted: nothing visible
	// to worker-3 fixes the type.
	rc := f.ok(f.db.Assert(f.ctx, assertSpec("K", "secret", mql.Number(5), "worker-3")))
	if rc.Ref != "K.secret@2" || rc.State != mql.Live || rc.Supersedes != "" || rc.Contests != "" {
		t.Fatalf("worker-3's claim: %+v", rc)
	}
	// From now on worker-3, and everyone who sees only public claims, gives numbers.
	err := f.refused(mql.ErrValueType, func() (mql.Receipt, error) {
		return f.db.Assert(f.ctx, assertSpec("K", "secret", mql.String("t"), "worker-3"))
	})
	if !strings.Contains(err.Error(), "secret holds number values") {
		t.Errorf("worker-3's refusal: %v", err)
	}
	f.refused(mql.ErrValueType, func() (mql.Receipt, error) {
		return f.db.Assert(f.ctx, assertSpec("J", "secret", mql.Bool(true), "orchestrator"))
	})
	// worker-7's first visible claim is its own string; the owner's is the very first claim.
	f.refused(mql.ErrValueType, func() (mql.Receipt, error) {
		return f.db.Assert(f.ctx, assertSpec("K", "secret", mql.Number(6), "worker-7", "worker-7"))
	})
	f.ok(f.db.Assert(f.ctx, assertSpec("J", "secret", mql.String("u"), "worker-7", "worker-7")))
	f.refused(mql.ErrValueType, func() (mql.Receipt, error) {
		return f.db.Assert(f.ctx, assertSpec("J", "secret", mql.Number(1), "owner"))
	})
	f.ok(f.db.Assert(f.ctx, assertSpec("J", "secret", mql.Number(8), "worker-3")))
	f.ok(f.db.Assert(f.ctx, assertSpec("L", "secret", mql.Number(1), "worker-3")))
	// A batch checks each claim against the ones before it, as separate writes would.
	if _, err := f.db.AssertBatch(f.ctx, "owner", []mql.AssertSpec{
		assertSpec("M", "fresh", mql.Number(1), "architect", "architect"),
		assertSpec("M", "fresh", mql.String("x"), "engine", "engine"),
	}); err != nil {
		t.Fatalf("batch in two audiences: %v", err)
	}
	if _, err := f.db.AssertBatch(f.ctx, "owner", []mql.AssertSpec{
		assertSpec("N", "fresh", mql.Number(1), "engine", "engine"),
	}); !errors.Is(err, mql.ErrValueType) {
		t.Fatalf("batch against an earlier batch: %v", err)
	}

	// The owner sees strings and numbers in one predicate; every read answers.
	live, err := f.db.Live(f.ctx, "*.secret")
	if err != nil || len(live) != 5 {
		t.Fatalf("live *.secret: %d claims, %v", len(live), err)
	}
	if live, _ := f.db.Live(f.ctx, "*.secret", mql.Filter{Op: ">", Value: mql.Number(4)}); len(live) != 2 {
		t.Errorf("live where value > 4: %+v (a string is never greater than a number)", live)
	}
	if live, _ := f.db.Live(f.ctx, "*.secret", mql.Filter{Op: "!=", Value: mql.Number(5)}); len(live) != 4 {
		t.Errorf("live where value != 5: %d claims (values of other types are unequal)", len(live))
	}
	res, err := f.db.Find(f.ctx, mql.FindQuery{Select: []string{"?s", "?v"},
		Where:   []mql.Cond{{Subject: mql.Var("s"), Predicate: "secret", Op: "=", Object: mql.Var("v")}},
		OrderBy: []mql.Order{{Var: "?v"}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, r.Values[0].Str+"="+r.Values[1].String())
	}
	// Ordered by type name (number < string), then by value.
	if want := `L=1, K=5, J=8, K="s", J="u"`; strings.Join(got, ", ") != want {
		t.Errorf("find order by across types: %s, want %s", strings.Join(got, ", "), want)
	}
	res, _ = f.db.Find(f.ctx, mql.FindQuery{Select: []string{"?s"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: "secret", Op: "=", Object: mql.Const(mql.String("s"))}}})
	if len(res.Rows) != 1 || res.Rows[0].Values[0].Str != "K" {
		t.Errorf("find by a string value: %+v", res.Rows)
	}
	res, _ = f.db.Find(f.ctx, mql.FindQuery{Select: []string{"?s"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: "secret", Op: "=", Object: mql.Const(mql.Number(5))}}})
	if len(res.Rows) != 1 || res.Rows[0].Values[0].Str != "K" {
		t.Errorf("find by a number value: %+v", res.Rows)
	}
	cx, _ := f.db.Context(f.ctx, []string{"K"}, 0)
	if !strings.Contains(cx.Text, `secret="s" @1`) || !strings.Contains(cx.Text, "secret=5 @2") {
		t.Errorf("context: %q", cx.Text)
	}
	if b, err := f.db.Beliefs(f.ctx, "K.secret", nil); err != nil || len(b.Candidates) != 2 {
		t.Errorf("beliefs: %+v %v", b, err)
	}
	// worker-3 sees only numbers.
	if live, _ := f.db.As("worker-3").Live(f.ctx, "*.secret"); len(live) != 3 {
		t.Errorf("worker-3 sees %d claims", len(live))
	}
	// The store checks, and survives export and import with every type.
	if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
		t.Fatalf("check: %v %v", err, rep.Problems)
	}
	exp := f.export()
	g := imported(t, exp)
	again, _ := g.db.Live(g.ctx, "*.secret")
	if len(again) != len(live) {
		t.Fatalf("after import: %d claims, before %d", len(again), len(live))
	}
	for i := range live {
		if again[i].Ref != live[i].Ref || !again[i].Value.Equal(live[i].Value) {
			t.Errorf("after import: %s = %s, before %s = %s", again[i].Ref, again[i].Value, live[i].Ref, live[i].Value)
		}
	}
	// Reopening a file store rebuilds the index (and the snapshot) with both types.
	path := t.TempDir() + "/mixed.db"
	if _, err := mql.ImportStore(context.Background(), path, strings.NewReader(exp), mql.Options{}); err != nil {
		t.Fatal(err)
	}
	h := openDSN(t, path, mql.Options{})
	if again, _ := h.db.Live(h.ctx, "*.secret"); len(again) != len(live) {
		t.Fatalf("after reopening: %d claims", len(again))
	}
	if _, err := h.db.Assert(h.ctx, assertSpec("K", "secret", mql.Number(6), "worker-3")); err != nil {
		t.Fatalf("after reopening, worker-3's number: %v", err)
	}
}

// A principal writes only into audiences it is in; only the owner writes for others. Writing
// into another's audience would supersede or contest what the writer may not read, and the
// receipt would say what it held.
func TestWritersStayInTheirAudience(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.ok(f.db.Assert(f.ctx, assertSpec("K", "p", mql.String("mine"), "worker-7", "worker-7")))
	for _, tc := range []struct {
		name  string
		write func() (mql.Receipt, error)
	}{
		{"assert seen by another", func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("mine"), By: "worker-3", Kind: mql.Inferred, SeenBy: []string{"worker-7"}})
		}},
		{"batch seen by another", func() (mql.Receipt, error) {
			_, err := f.db.AssertBatch(f.ctx, "worker-3", []mql.AssertSpec{assertSpec("K", "p", mql.String("x"), "worker-3", "worker-7")})
			return mql.Receipt{}, err
		}},
		{"derive seen by another", func() (mql.Receipt, error) {
			return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"K.p"}, By: "worker-7", SeenBy: []string{"worker-3"}})
		}},
	} {
		err := f.refused(mql.ErrInvalid, tc.write)
		if !strings.Contains(err.Error(), "would not see what it writes") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// With the writer in the audience, or by the owner, it is a shared memory.
	f.ok(f.db.Assert(f.ctx, assertSpec("K", "p", mql.String("ours"), "worker-3", "worker-3", "worker-7")))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"K.p"}, By: "worker-7", SeenBy: []string{"worker-3", "worker-7"}}))
	rc := f.ok(f.db.Assert(f.ctx, assertSpec("K", "p", mql.String("owner's"), "owner", "worker-7")))
	if rc.Supersedes != "K.p@1" {
		t.Errorf("the owner's claim for worker-7: %+v", rc)
	}
}

// (b) A derivation is refused as a cycle only through what the deriver may see. Here worker-7
// shares z (derived from its private y, which rests on x) with worker-3: worker-3 may fold z
// into x, since for it z rests on nothing it could name; the version graph stays acyclic.
func TestCycleCheckThroughWhatTheDeriverSees(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("K", "p", mql.Number(1), "worker-3")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "x", From: []string{"K.p"}, By: "worker-3"}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "y", From: []string{"x"}, By: "worker-7", SeenBy: []string{"worker-7"}}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "z", From: []string{"y"}, By: "worker-7", SeenBy: []string{"worker-3", "worker-7"}}))
	rc := f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "x", From: []string{"z"}, By: "worker-3"}))
	if rc.Ref != "x@2" || rc.Supersedes != "" {
		t.Fatalf("x from z: %+v (seen by worker-3 and worker-7, like z, it supersedes nothing)", rc)
	}
	// worker-7, who sees y, is refused the same derivation.
	f.refused(mql.ErrCycle, func() (mql.Receipt, error) {
		return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "x", From: []string{"z"}, By: "worker-7", SeenBy: []string{"worker-3", "worker-7"}})
	})
	if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
		t.Fatalf("check: %v %v", err, rep.Problems)
	}
}
