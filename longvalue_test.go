package mql_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// A claim's value may be larger than a key of the file's B-tree (bbolt: 32 KiB): the index of
// live claims by value keys a value that large by its digest. Such a claim is acknowledged,
// survives closing and reopening, is found by its value, and stops being found once superseded.
func TestValueLargerThanAKey(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "big.db")
	big := strings.Repeat("x", 40_000)
	other := strings.Repeat("x", 39_999) + "y"
	db, err := mql.Open(ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []mql.AssertSpec{
		{Subject: "Doc", Predicate: "text", Value: mql.String(big), By: "owner"},
		{Subject: "Other", Predicate: "text", Value: mql.String(other), By: "owner"},
		{Subject: "Old", Predicate: "text", Value: mql.String(big), By: "owner"},
		{Subject: "Old", Predicate: "text", Value: mql.String("short"), By: "owner"},
	} {
		if _, err := db.Assert(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	db, err = mql.Open(ctx, path, mql.Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	live, err := db.Live(ctx, "Doc.text")
	if err != nil || len(live) != 1 || live[0].Value.Str != big {
		t.Fatalf("live Doc.text after reopening: %d claims, %v", len(live), err)
	}
	res, err := db.Find(ctx, mql.FindQuery{Select: []string{"?s"}, Where: []mql.Cond{
		{Subject: mql.Var("s"), Predicate: "text", Op: "=", Object: mql.Const(mql.String(big))}}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, r.Values[0].Str)
	}
	if len(got) != 1 || got[0] != "Doc" {
		t.Fatalf("find text = the 40,000-byte value: %v, want [Doc] (not Other, whose value differs in its last byte, nor Old, superseded)", got)
	}
	rep, err := db.Check(ctx)
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v %+v", err, rep)
	}
}
