package mql_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

func TestParseClaimRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want mql.ClaimRef
		err  string // "" for success; else a part of the message
	}{
		{in: "Klarveld.price_per_seat@2", want: mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat", Version: 2}},
		{in: "Klarveld.price_per_seat", want: mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat"}},
		{in: "vendor:brim/eu.region@10", want: mql.ClaimRef{Subject: "vendor:brim/eu", Predicate: "region", Version: 10}},
		{in: "Zu\u0308rich.population", want: mql.ClaimRef{Subject: "Zürich", Predicate: "population"}}, // made NFC
		{in: "Klarveld", err: `claim reference "Klarveld": bad reference: write Subject.predicate@N`},
		{in: "Klarveld@2", err: "write Subject.predicate@N"},
		{in: "", err: "write Subject.predicate@N"},
		{in: "Klarveld.", err: `predicate "": bad reference`},
		{in: ".price", err: `subject "": bad reference`},
		{in: "Klar veld.price", err: `subject "Klar veld": bad reference`},
		{in: "Klarveld.a.b", err: `predicate "a.b": bad reference`},
		{in: "Klarveld.price@0", err: `claim reference "Klarveld.price@0": bad reference: the version after @ must be a positive integer`},
		{in: "Klarveld.price@-1", err: "the version after @ must be a positive integer"},
		{in: "Klarveld.price@two", err: "the version after @ must be a positive integer"},
		{in: "Klarveld.price@", err: "the version after @ must be a positive integer"},
		{in: "Klarveld.price@1@2", err: "the version after @ must be a positive integer"},
	} {
		got, err := mql.ParseClaimRef(tc.in)
		if tc.err != "" {
			if err == nil || !errors.Is(err, mql.ErrBadReference) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseClaimRef(%q) = %v, %v; want an ErrBadReference containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseClaimRef(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
		if back, err := mql.ParseClaimRef(got.String()); err != nil || back != got {
			t.Errorf("%q does not parse back: %#v, %v", got.String(), back, err)
		}
	}
}

func TestParseArtifactRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want mql.ArtifactRef
		err  string
	}{
		{in: "plan:pick-vendor@3", want: mql.ArtifactRef{Name: "plan:pick-vendor", Version: 3}},
		{in: "plan:pick-vendor", want: mql.ArtifactRef{Name: "plan:pick-vendor"}},
		{in: "plan:x.y", err: `artifact "plan:x.y": bad reference`},
		{in: "", err: `artifact "": bad reference`},
		{in: "plan@0", err: `artifact reference "plan@0": bad reference: the version after @ must be a positive integer`},
		{in: "plan@x", err: "the version after @ must be a positive integer"},
	} {
		got, err := mql.ParseArtifactRef(tc.in)
		if tc.err != "" {
			if err == nil || !errors.Is(err, mql.ErrBadReference) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseArtifactRef(%q) = %v, %v; want an ErrBadReference containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseArtifactRef(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
		if back, err := mql.ParseArtifactRef(got.String()); err != nil || back != got {
			t.Errorf("%q does not parse back: %#v, %v", got.String(), back, err)
		}
	}
}

func TestParseNodeRef(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want mql.NodeRef
		err  string
	}{
		{in: "Klarveld.price_per_seat@2", want: mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat", Version: 2}},
		{in: "Klarveld.price_per_seat", want: mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat"}},
		{in: "plan:pick-vendor@1", want: mql.ArtifactRef{Name: "plan:pick-vendor", Version: 1}},
		{in: "plan:pick-vendor", want: mql.ArtifactRef{Name: "plan:pick-vendor"}},
		{in: "plan@1.5", err: `artifact reference "plan@1.5"`}, // the dot is after @: not a claim
		{in: "Klarveld.price@0", err: `claim reference "Klarveld.price@0"`},
		{in: "bad name", err: `artifact "bad name": bad reference`},
	} {
		got, err := mql.ParseNodeRef(tc.in)
		if tc.err != "" {
			if got != nil || !errors.Is(err, mql.ErrBadReference) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseNodeRef(%q) = %v, %v; want nil and an ErrBadReference containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseNodeRef(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
		if got.String() != tc.in {
			t.Errorf("ParseNodeRef(%q).String() = %q", tc.in, got.String())
		}
	}
}

// Writes given typed references do what the same writes given text do.
func TestTypedSpecs(t *testing.T) {
	run := func(typed bool) []mql.Receipt {
		f := open(t, mql.Options{}).team()
		f.ok(f.db.Grant(f.ctx, mql.GrantSpec{Grantee: "bob", Right: mql.RightConfirm, Scope: "*", By: "owner"}))
		f.assert("Klarveld", "price", mql.Number(44), "worker-3")
		f.assert("Klarveld", "price", mql.Number(89), "worker-3")
		price1 := mql.ClaimRef{Subject: "Klarveld", Predicate: "price", Version: 1}
		price2 := mql.ClaimRef{Subject: "Klarveld", Predicate: "price", Version: 2}
		revoke := mql.RevokeSpec{Claim: "Klarveld.price@2", ReplacedBy: "Klarveld.price@1", By: "worker-3", Because: "misread"}
		confirm := mql.ConfirmSpec{Claim: "Klarveld.price", By: "bob"}
		derive := mql.DeriveSpec{Artifact: "plan", From: []string{"Klarveld.price", "Klarveld.price@2"}, By: "orchestrator"}
		again := mql.DeriveSpec{Artifact: "report", From: []string{"plan@1"}, By: "orchestrator"}
		review := mql.ReviewSpec{Artifact: "plan", By: "alice", Because: "checked"}
		if typed {
			revoke.Claim, revoke.ReplacedBy, revoke.Ref, revoke.ReplacedByRef = "", "", price2, price1
			confirm.Claim, confirm.Ref = "", mql.ClaimRef{Subject: "Klarveld", Predicate: "price"}
			derive.From, derive.FromRefs = nil, []mql.NodeRef{mql.ClaimRef{Subject: "Klarveld", Predicate: "price"}, price2}
			again.From, again.FromRefs = nil, []mql.NodeRef{mql.ArtifactRef{Name: "plan", Version: 1}}
			review.Artifact, review.Ref = "", mql.ArtifactRef{Name: "plan"}
		}
		return []mql.Receipt{
			f.ok(f.db.Revoke(f.ctx, revoke)), f.ok(f.db.Confirm(f.ctx, confirm)), f.ok(f.db.Derive(f.ctx, derive)),
			f.ok(f.db.Derive(f.ctx, again)), f.ok(f.db.Review(f.ctx, review)),
		}
	}
	text, typed := run(false), run(true)
	if !reflect.DeepEqual(text, typed) {
		t.Errorf("typed references wrote\n%+v\nthe text wrote\n%+v", typed, text)
	}

	f := open(t, mql.Options{}).team()
	f.assert("Klarveld", "price", mql.Number(44), "worker-3")
	for _, write := range []func() (mql.Receipt, error){
		func() (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Ref: mql.ClaimRef{Subject: "Klarveld", Predicate: "price"}, By: "worker-3"})
		},
		func() (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Ref: mql.ClaimRef{Subject: "Klarveld", Predicate: "price@1"}, By: "worker-3"})
		},
		func() (mql.Receipt, error) {
			return f.db.Confirm(f.ctx, mql.ConfirmSpec{Ref: mql.ClaimRef{Subject: "Klarveld", Predicate: "price", Version: -1}, By: "alice"})
		},
		func() (mql.Receipt, error) {
			return f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan", FromRefs: []mql.NodeRef{nil}, By: "orchestrator"})
		},
		func() (mql.Receipt, error) {
			return f.db.Review(f.ctx, mql.ReviewSpec{Ref: mql.ArtifactRef{Name: "plan.x"}, By: "alice"})
		},
	} {
		f.refused(mql.ErrBadReference, write)
	}
}

// Reads given typed references read what the same reads given text do, and record the same
// statement for a run.
func TestTypedReads(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("Klarveld", "price", mql.Number(44), "worker-3")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan", From: []string{"Klarveld.price"}, By: "orchestrator"}))
	f.assert("Klarveld", "price", mql.Number(89), "worker-3")
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Klarveld.price@2", By: "worker-3"}))
	key := mql.ClaimRef{Subject: "Klarveld", Predicate: "price"}
	v1 := mql.ClaimRef{Subject: "Klarveld", Predicate: "price", Version: 1}
	plan := mql.ArtifactRef{Name: "plan"}
	for _, r := range []mql.Reader{f.db.Reader(), f.db.Reader().ForRun("r1")} {
		same := func(what string, text, typed any, err1, err2 error) {
			t.Helper()
			if err1 != nil || err2 != nil || !reflect.DeepEqual(text, typed) {
				t.Errorf("%s: typed %+v (%v), text %+v (%v)", what, typed, err2, text, err1)
			}
		}
		for _, n := range []mql.NodeRef{key, v1, plan, mql.ArtifactRef{Name: "plan", Version: 1}} {
			w1, err1 := r.Why(f.ctx, n.String())
			w2, err2 := r.WhyRef(f.ctx, n)
			same("why "+n.String(), w1, w2, err1, err2)
			i1, err1 := r.Impact(f.ctx, n.String(), 0)
			i2, err2 := r.ImpactRef(f.ctx, n, 0)
			same("impact "+n.String(), i1, i2, err1, err2)
		}
		for _, n := range []mql.NodeRef{key, plan} {
			h1, err1 := r.History(f.ctx, n.String())
			h2, err2 := r.HistoryRef(f.ctx, n)
			same("history "+n.String(), h1, h2, err1, err2)
		}
		b1, err1 := r.RevokedBy(f.ctx, "Klarveld.price@2")
		b2, err2 := r.RevokedByRef(f.ctx, mql.ClaimRef{Subject: "Klarveld", Predicate: "price", Version: 2})
		same("revoked-by", b1, b2, err1, err2)
	}
	runs, err := f.db.Reader().Run(f.ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	got := runs[0].Retrievals
	if len(got) != 2*(4*2+2+1) {
		t.Fatalf("%d retrievals recorded, want one for each read", len(got))
	}
	for i := 0; i < len(got); i += 2 {
		if a, b := got[i].Statement, got[i+1].Statement; a != b {
			t.Errorf("recorded %q for the text, %q for the typed reference", a, b)
		}
	}

	r := f.db.Reader()
	for what, err := range map[string]error{
		"why nil":      func() error { _, err := r.WhyRef(f.ctx, nil); return err }(),
		"why bad name": func() error { _, err := r.WhyRef(f.ctx, mql.ArtifactRef{Name: "plan.x"}); return err }(),
		"impact version": func() error {
			_, err := r.ImpactRef(f.ctx, mql.ClaimRef{Subject: "K", Predicate: "p", Version: -2}, 0)
			return err
		}(),
		"history version": func() error { _, err := r.HistoryRef(f.ctx, v1); return err }(),
		"revoked-by key":  func() error { _, err := r.RevokedByRef(f.ctx, mql.ClaimRef{Subject: "K"}); return err }(),
	} {
		if !errors.Is(err, mql.ErrBadReference) {
			t.Errorf("%s: %v, want ErrBadReference", what, err)
		}
	}
}

func ExampleParseClaimRef() {
	for _, s := range []string{"Klarveld.price_per_seat@2", "Klarveld.price_per_seat", "Klarveld"} {
		c, err := mql.ParseClaimRef(s)
		if err != nil {
			fmt.Println(errors.Is(err, mql.ErrBadReference), err)
			continue
		}
		fmt.Printf("%s: subject %s, predicate %s, version %d\n", c, c.Subject, c.Predicate, c.Version)
	}
	// Output:
	// Klarveld.price_per_seat@2: subject Klarveld, predicate price_per_seat, version 2
	// Klarveld.price_per_seat: subject Klarveld, predicate price_per_seat, version 0
	// true claim reference "Klarveld": bad reference: write Subject.predicate@N
}

func ExampleParseArtifactRef() {
	a, err := mql.ParseArtifactRef("plan:pick-vendor@3")
	fmt.Println(a.Name, a.Version, err)
	a, err = mql.ParseArtifactRef("plan:pick-vendor")
	fmt.Println(a.Name, a.Version, err)
	// Output:
	// plan:pick-vendor 3 <nil>
	// plan:pick-vendor 0 <nil>
}

func ExampleParseNodeRef() {
	for _, s := range []string{"Klarveld.price_per_seat@2", "plan:pick-vendor"} {
		n, err := mql.ParseNodeRef(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		switch n := n.(type) {
		case mql.ClaimRef:
			fmt.Println("claim", n.Subject, n.Predicate, n.Version)
		case mql.ArtifactRef:
			fmt.Println("artifact", n.Name, n.Version)
		}
	}
	// Output:
	// claim Klarveld price_per_seat 2
	// artifact plan:pick-vendor 0
}

func ExampleClaimRef_String() {
	fmt.Println(mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat", Version: 2})
	fmt.Println(mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat"})
	// Output:
	// Klarveld.price_per_seat@2
	// Klarveld.price_per_seat
}

func ExampleArtifactRef_String() {
	fmt.Println(mql.ArtifactRef{Name: "plan:pick-vendor", Version: 1})
	fmt.Println(mql.ArtifactRef{Name: "plan:pick-vendor"})
	// Output:
	// plan:pick-vendor@1
	// plan:pick-vendor
}

func ExampleDB_Derive_typedReferences() {
	db, ctx := procurement()
	rc, _ := db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", By: "orchestrator", FromRefs: []mql.NodeRef{
		mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat"},
		mql.ClaimRef{Subject: "Klarveld", Predicate: "region", Version: 1},
	}})
	fmt.Println(rc.Ref, "supersedes", rc.Supersedes)
	// Output: plan:pick-vendor@2 supersedes plan:pick-vendor@1
}

func ExampleReader_WhyRef() {
	db, ctx := procurement()
	why, _ := db.Reader().WhyRef(ctx, mql.ArtifactRef{Name: "plan:pick-vendor"})
	fmt.Println(why.Artifact.Ref)
	for _, c := range why.Children {
		fmt.Println(" ", c.Relation, c.Claim.Ref)
	}
	// Output:
	// plan:pick-vendor@1
	//   derived from Klarveld.price_per_seat@1
}

func ExampleReader_RevokedByRef() {
	db, ctx := procurement()
	db.Revoke(ctx, mql.RevokeSpec{Ref: mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat", Version: 2}, By: "owner", Because: "misread the page"})
	rb, _ := db.Reader().RevokedByRef(ctx, mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat", Version: 2})
	fmt.Println(rb.Revocation.By, rb.Revocation.Because)
	// Output: owner misread the page
}

func ExampleReader_ImpactRef() {
	db, ctx := procurement()
	imp, _ := db.Reader().ImpactRef(ctx, mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat"}, 0)
	fmt.Println(imp.Of)
	for _, d := range imp.Dependents {
		fmt.Println(d.Artifact.Ref, d.Artifact.Review)
	}
	// Output:
	// [Klarveld.price_per_seat@1 Klarveld.price_per_seat@2]
	// plan:pick-vendor@1 needs review
}

func ExampleReader_HistoryRef() {
	db, ctx := procurement()
	h, _ := db.Reader().HistoryRef(ctx, mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat"})
	for _, c := range h.Claims {
		fmt.Println(c.Ref, c.Value, c.State)
	}
	_, err := db.Reader().HistoryRef(ctx, mql.ClaimRef{Subject: "Klarveld", Predicate: "price_per_seat", Version: 1})
	fmt.Println(err)
	// Output:
	// Klarveld.price_per_seat@1 44 superseded
	// Klarveld.price_per_seat@2 89 live
	// history Klarveld.price_per_seat@1: bad reference: name the key or artifact without @N
}
