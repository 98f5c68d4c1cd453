package mql_test

// Hostile input through the API and the query layer: every bad input yields a clear error
// (with a position, for statements) or completes in bounded time, never panics, and a refused
// write changes nothing. cmd/mql/hostile_test.go runs the same kinds of input through the
// command, measuring its time and memory.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/query"
)

var hostilePos = regexp.MustCompile(`^bad:\d+:\d+: `)

// Statements through the query layer: parse errors and evaluation errors carry a position and
// change nothing.
func TestHostileStatements(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("K", "p", mql.String("x"), "worker-3")
	sess := query.NewSession(f.db, "")
	cases := []struct {
		name, src string
		syntax    bool // a parse error (else an evaluation error)
		want      string
	}{
		{"unterminated string", `assert K.p = "abc by worker-3`, true, "unterminated string"},
		// (The command's test feeds a 10 MB literal and times it; lexing it under the race
		// detector here would take half a minute.)
		{"2 MB literal", `assert K.p = "` + strings.Repeat("x", 2<<20) + `" by worker-3`, true, "longer than 1 MiB"},
		{"invalid UTF-8 in a string", "assert K.p = \"\xff\xfe\" by worker-3", true, "invalid UTF-8"},
		{"invalid UTF-8 in a name", "assert K\xff.p = \"x\" by worker-3", true, "invalid UTF-8"},
		{"NUL byte", "assert K.p = \"a\x00b\" by worker-3", true, "NUL"},
		{"NUL escape", `assert K.p = "a\u0000b" by worker-3`, true, "NUL"},
		{"number out of range", `assert K.q = 1e400 by worker-3`, true, "1e400"},
		{"negative number out of range", `assert K.q = -1e400 by worker-3`, true, "1e400"},
		{"confidence out of range", `assert K.p = "y" by worker-3 confidence 1e400`, true, "1e400"},
		{"confidence above 1", `assert K.p = "y" by worker-3 confidence 1.5`, true, "between 0 and 1"},
		{"huge depth", `impact K.p depth 99999999999999999999`, true, "too large"},
		{"huge transaction", `as of tx 99999999999999999999 stats`, true, "too large"},
		{"transaction beyond the head", `as of tx 999999 stats`, false, "transactions run from 1"},
		{"huge budget", `context * budget 99999999999999999999`, true, "too large"},
		{"huge limit", `find ?s where ?s.p = ?v limit 99999999999999999999`, true, "too large"},
		{"huge half-life", `decay p half-life 999999999999999999d`, true, "too large"},
		{"unknown keyword", `frobnicate K`, true, `unknown statement "frobnicate"`},
		{"2 MB reference", `why ` + strings.Repeat("a", 2<<20) + `.p`, true, "longer than 1 MiB"},
		{"50,000-token reference", `why ` + strings.Repeat("a.", 25_000) + `p`, true, "more than 20,000 tokens"},
		{"25,000 subjects", `context ` + strings.Repeat("a,", 25_000) + `p`, true, "more than 20,000 tokens"},
		{"deep nesting", `live ` + strings.Repeat("(", 100_000), true, `unexpected character "("`},
		{"name over 256 bytes", `assert ` + strings.Repeat("A", 300) + `.p = "x" by worker-3`, false, "at most 256 bytes"},
		{"as of the zero time", `as of 0001-01-01T00:00:00Z stats`, false, "the store was created at"},
		{"as of before the store", `as of 1970-01-01 live *`, false, "the store was created at"},
		{"100,000 errors", strings.Repeat("@@@ ;", 100_000), true, "(and 10 more errors)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q0, _ := f.db.QuadCount(f.ctx)
			h0, _ := f.db.Head(f.ctx)
			start := time.Now()
			err := sess.Exec(f.ctx, "bad", tc.src, nil)
			elapsed := time.Since(start)
			if err == nil {
				t.Fatal("accepted")
			}
			if errors.Is(err, query.ErrSyntax) != tc.syntax {
				t.Errorf("syntax error: %v, want %v: %v", errors.Is(err, query.ErrSyntax), tc.syntax, err)
			}
			msg := err.Error()
			if !hostilePos.MatchString(msg) || !strings.Contains(msg, tc.want) {
				t.Errorf("error %.300q: want a position and %q", msg, tc.want)
			}
			if len(msg) > 2000 {
				t.Errorf("the error is %d bytes long", len(msg))
			}
			if q, _ := f.db.QuadCount(f.ctx); q != q0 {
				t.Error("the store changed")
			}
			if h, _ := f.db.Head(f.ctx); h != h0 {
				t.Error("the head moved")
			}
			if elapsed > time.Minute {
				t.Errorf("took %s", elapsed)
			}
		})
	}
}

// Bad values through the API: refused with the sentinel, nothing written.
func TestHostileAPI(t *testing.T) {
	f := open(t, mql.Options{}).team()
	f.assert("K", "p", mql.String("x"), "worker-3")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "a", From: []string{"K.p"}, By: "worker-3"}))
	big := strings.Repeat("x", 10<<20)
	cases := []struct {
		name  string
		want  error
		write func() (mql.Receipt, error)
	}{
		{"10 MB value", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String(big), By: "worker-3"})
		}},
		{"10 MB excerpt", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("y"), By: "worker-3", Sources: []mql.Source{{ID: "s", Excerpt: big}}})
		}},
		{"10 MB review reason", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Review(f.ctx, mql.ReviewSpec{Artifact: "a", By: "alice", Because: big})
		}},
		// (Refused by the encoder, so nothing is written; the error wraps no sentinel.)
		{"invalid UTF-8 value", nil, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("\xff\xfe"), By: "worker-3"})
		}},
		{"NUL in a value", nil, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("a\x00b"), By: "worker-3"})
		}},
		{"NUL in a name", mql.ErrBadReference, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K\x00", Predicate: "p", Value: mql.String("y"), By: "worker-3"})
		}},
		{"infinite number", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "n", Value: mql.Number(math.Inf(1)), By: "worker-3"})
		}},
		{"NaN", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "n", Value: mql.Number(math.NaN()), By: "worker-3"})
		}},
		{"NaN confidence", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("y"), By: "worker-3", Confidence: mql.Confidence(math.NaN())})
		}},
		{"long name", mql.ErrBadReference, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: strings.Repeat("A", 1<<20), Predicate: "p", Value: mql.String("y"), By: "worker-3"})
		}},
		{"long reference", mql.ErrBadReference, func() (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: strings.Repeat("a.", 1<<19) + "p@1", By: "owner"})
		}},
		{"version out of range", mql.ErrBadReference, func() (mql.Receipt, error) {
			return f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "K.p@99999999999999999999", By: "owner"})
		}},
		{"NUL in a source id", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("y"), By: "worker-3", Sources: []mql.Source{{ID: "s\x00worker-3"}}})
		}},
		{"long source id", mql.ErrInvalid, func() (mql.Receipt, error) {
			return f.db.Assert(f.ctx, mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.String("y"), By: "worker-3", Sources: []mql.Source{{ID: strings.Repeat("s", 2000)}}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.want == nil {
				q0, _ := f.db.QuadCount(f.ctx)
				if _, err = tc.write(); err == nil {
					t.Fatal("accepted")
				}
				if q, _ := f.db.QuadCount(f.ctx); q != q0 {
					t.Fatal("the store changed")
				}
			} else {
				err = f.refused(tc.want, tc.write)
			}
			if len(err.Error()) > 2000 {
				t.Errorf("the error is %d bytes long", len(err.Error()))
			}
		})
	}
	// Reads with out-of-range arguments answer or refuse; they never panic.
	if _, err := f.db.AsOf(time.Time{}).Stats(f.ctx); !errors.Is(err, mql.ErrNotFound) {
		t.Errorf("as of the zero time: %v", err)
	}
	if _, err := f.db.Impact(f.ctx, "K.p", math.MaxInt); err != nil {
		t.Errorf("impact with the largest depth: %v", err)
	}
	if _, err := f.db.Impact(f.ctx, "K.p", -1); !errors.Is(err, mql.ErrInvalid) {
		t.Errorf("impact with a negative depth: %v", err)
	}
	if _, err := f.db.Context(f.ctx, []string{"*"}, math.MaxInt); err != nil {
		t.Errorf("context with the largest budget: %v", err)
	}
	if _, err := f.db.Find(f.ctx, mql.FindQuery{Select: []string{"?s"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: "p", Op: "=", Object: mql.Var("v")}}, Limit: math.MaxInt}); err != nil {
		t.Errorf("find with the largest limit: %v", err)
	}
	if _, err := f.db.Beliefs(f.ctx, "*.p", &[2]float64{math.NaN(), math.Inf(1)}); !errors.Is(err, mql.ErrInvalid) {
		t.Errorf("beliefs with a NaN gate: %v", err)
	}
}

// hostileChain is an export of a store holding one claim and a chain of n artifacts, each
// derived from the one before (a0 from K.p@1): built as transactions and imported, since
// deriving them one by one costs time quadratic in n.
func hostileChain(t testing.TB, n int) string {
	t.Helper()
	at := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	txs := []*record.Tx{
		{ID: 1, Time: at, By: "owner", Meta: &record.StoreMeta{Owner: "owner"}, Principals: []*record.Principal{{Name: "owner", Type: mql.User, Tx: 1}}},
		{ID: 2, Time: at, By: "owner", Principals: []*record.Principal{{Name: "x", Type: mql.Agent, Tx: 2}}},
	}
	k, _ := record.ParseClaimID("K.p@1")
	txs = append(txs, &record.Tx{ID: 3, Time: at, By: "x", Claims: []*record.Claim{{ID: k, Value: mql.String("v"), By: "x", Kind: mql.Inferred, Confidence: 1, Tx: 3}}})
	for i := range n {
		from := record.NodeRef{Claim: &k}
		if i > 0 {
			from = record.NodeRef{Artifact: &record.ArtifactID{Name: fmt.Sprintf("a%d", i-1), Version: 1}}
		}
		id := record.TxID(4 + i)
		txs = append(txs, &record.Tx{ID: id, Time: at.Add(time.Duration(i) * time.Millisecond), By: "x", Artifacts: []*record.Artifact{
			{ID: record.ArtifactID{Name: fmt.Sprintf("a%d", i), Version: 1}, DerivedFrom: []record.NodeRef{from}, By: "x", Confidence: 1, Tx: id}}})
	}
	var b bytes.Buffer
	if err := codec.WriteNQuads(&b, txs); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A derivation that would close a cycle over a chain of 10,000 artifacts is refused with
// ErrCycle in bounded time, and writes nothing.
func TestHostileDerivationCycle(t *testing.T) {
	const n = 10_000
	f := open(t, mql.Options{})
	start := time.Now()
	if err := f.db.Import(f.ctx, strings.NewReader(hostileChain(t, n))); err != nil {
		t.Fatal(err)
	}
	built := time.Since(start)
	sess := query.NewSession(f.db, "")
	q0, _ := f.db.QuadCount(f.ctx)
	start = time.Now()
	err := sess.Exec(f.ctx, "bad", fmt.Sprintf("derive a0 from a%d by x", n-1), nil)
	elapsed := time.Since(start)
	if !errors.Is(err, mql.ErrCycle) || !hostilePos.MatchString(err.Error()) {
		t.Fatalf("cycle: %v", err)
	}
	if q, _ := f.db.QuadCount(f.ctx); q != q0 {
		t.Fatal("a refused derivation changed the store")
	}
	if elapsed > 30*time.Second {
		t.Fatalf("refusing the cycle took %s", elapsed)
	}
	// Bounded reads over the chain: impact with a depth, history, and the newest artifact.
	start = time.Now()
	imp, err := f.db.Impact(f.ctx, "K.p@1", 10)
	if err != nil || len(imp.Dependents) != 10 || !imp.Truncated {
		t.Fatalf("impact depth 10: %d dependents, truncated %v, %v", len(imp.Dependents), imp.Truncated, err)
	}
	if _, err := f.db.History(f.ctx, "a0"); err != nil {
		t.Fatal(err)
	}
	reads := time.Since(start)
	t.Logf("chain of %d artifacts imported in %s; cycle refused in %s; bounded reads in %s", n, built.Round(time.Millisecond), elapsed.Round(time.Millisecond), reads.Round(time.Millisecond))
}
