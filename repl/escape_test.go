package repl

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// The strings of issue 11, item 5, and their kin: what an agent may write into a source id, an
// excerpt, a URI, a revision, a reason or a string value, to paint the auditor's screen.
var attacks = []struct{ name, s string }{
	{"fake row (CSI erase, cursor up, colour)", "\x1b[2K\x1b[1A\x1b[31mFAKE ROW\x1b[0m"},
	{"newline splits a row", "oops\nrevoked by   owner"},
	{"carriage return overwrites", "ok\rFAKE"},
	{"C1 CSI (0x9b)", "a\u009b31mred"},
	{"C1 NEL (0x85)", "a\u0085b"},
	{"DEL", "a\x7fb"},
	{"bidi override", "invoice\u202egpj.exe"},
	{"bidi isolate", "\u2066evil\u2069 ok"},
	{"bell and backspace", "a\a\bb"},
	{"looks quoted", `"\x1b[31m"`},
}

// unsafeIn returns the first rune of out that must not reach a terminal raw, apart from the
// newlines that lay the output out.
func unsafeIn(out string) (rune, bool) {
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRuneInString(out[i:])
		if r != '\n' && ((r == utf8.RuneError && size == 1) || !strconv.IsPrint(r)) {
			return r, true
		}
		i += size
	}
	return 0, false
}

// attackStore records every attack in every agent-written field.
func attackStore(t *testing.T) *mql.DB {
	t.Helper()
	ctx := context.Background()
	db := newDB(t)
	for _, p := range []string{"w1", "w2"} {
		if _, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range attacks {
		key := fmt.Sprintf("K.p%d", i)
		src := mql.Source{ID: a.s, Excerpt: a.s, URI: a.s, Revision: a.s}
		if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "K", Predicate: fmt.Sprintf("p%d", i), Value: mql.String(a.s), By: "w1", Sources: []mql.Source{src}}); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "K", Predicate: fmt.Sprintf("p%d", i), Value: mql.String(a.s + "2"), By: "w2", Confidence: mql.Confidence(0.5), Kind: mql.Inferred}); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if _, err := db.Derive(ctx, mql.DeriveSpec{Artifact: fmt.Sprintf("plan:%d", i), From: []string{key + "@1"}, By: "w1"}); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if _, err := db.Review(ctx, mql.ReviewSpec{Artifact: fmt.Sprintf("plan:%d", i), By: "w1", Because: a.s}); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
		if _, err := db.Revoke(ctx, mql.RevokeSpec{Claim: key + "@1", By: "w1", Because: a.s}); err != nil {
			t.Fatalf("%s: %v", a.name, err)
		}
	}
	return db
}

// TestEscapeAttacks renders every read of a store whose agent-written strings are the attacks,
// in every format a terminal shows: table, tree, json, and csv on a terminal. No unprintable
// rune reaches the output, a newline in a reason never adds a row, and JSON (and CSV for a
// program) still carry the exact strings.
func TestEscapeAttacks(t *testing.T) {
	db := attackStore(t)
	var reads []string
	for i := range attacks {
		reads = append(reads, fmt.Sprintf("why K.p%d@1", i), fmt.Sprintf("revoked-by K.p%d@1", i), fmt.Sprintf("history K.p%d", i),
			fmt.Sprintf("why plan:%d", i), fmt.Sprintf("impact K.p%d@1", i))
	}
	reads = append(reads, "live K", "find ?s, ?v where ?s.p0 = ?v", "conflicts", "beliefs K.p1", "context K", "stats", "history plan:0")
	src := strings.Join(reads, "\n")

	for _, f := range []struct {
		format   output.Format
		terminal bool
	}{{output.FormatTable, false}, {output.FormatTree, false}, {output.FormatJSON, false}, {output.FormatCSV, true}} {
		t.Run(string(f.format), func(t *testing.T) {
			var out bytes.Buffer
			sh := New(Config{Session: Local(query.NewSession(db, ""), "memory:"), Stdout: &out, Format: f.format, Terminal: f.terminal})
			if err := sh.RunScript(context.Background(), "attack", strings.NewReader(src)); err != nil {
				t.Fatal(err)
			}
			got := out.String()
			if r, bad := unsafeIn(got); bad {
				t.Fatalf("%U reached the output:\n%s", r, got)
			}
			for _, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, "revoked by   owner") || strings.HasPrefix(l, "FAKE") {
					t.Errorf("a reason or id made its own line: %q", l)
				}
			}
			switch f.format {
			case output.FormatTable:
				if n := strings.Count(got, "\nrevoked by "); n != len(attacks) {
					t.Errorf("%d 'revoked by' rows for %d revocations", n, len(attacks))
				}
			case output.FormatCSV:
				for _, block := range strings.Split(strings.TrimSpace(got), "\n\n") {
					cr := csv.NewReader(strings.NewReader(block))
					cr.FieldsPerRecord = -1 // a result of a header alone is not set apart
					recs, err := cr.ReadAll()
					if err != nil {
						t.Fatalf("csv: %v\n%s", err, block)
					}
					for _, rec := range recs {
						for _, cell := range rec {
							if strings.ContainsAny(cell, "\n\r") {
								t.Errorf("a cell on a terminal holds a line break: %q", cell)
							}
						}
					}
				}
			case output.FormatJSON:
				// The data is unchanged: every attack decodes back exactly.
				found := map[string]bool{}
				dec := json.NewDecoder(strings.NewReader(got))
				for dec.More() {
					var v any
					if err := dec.Decode(&v); err != nil {
						t.Fatal(err)
					}
					walkStrings(v, func(s string) { found[s] = true })
				}
				for _, a := range attacks {
					if !found[a.s] {
						t.Errorf("%s: the exact string is not in the JSON", a.name)
					}
				}
			}
		})
	}

	// CSV for a program (not a terminal) keeps the exact strings, RFC 4180 quoted.
	var out bytes.Buffer
	sh := New(Config{Session: Local(query.NewSession(db, ""), "memory:"), Stdout: &out, Format: output.FormatCSV})
	if err := sh.RunScript(context.Background(), "attack", strings.NewReader("revoked-by K.p1@1")); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&out).ReadAll()
	if err != nil || len(recs) != 2 || recs[1][7] != attacks[1].s {
		t.Errorf("csv for a program: %q %v", recs, err)
	}
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, e := range x {
			walkStrings(e, f)
		}
	case map[string]any:
		for _, e := range x {
			walkStrings(e, f)
		}
	}
}
