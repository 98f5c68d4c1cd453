package mql_test

import (
	"context"
	"fmt"
	"github.com/mql-dev/mql/internal/pgtest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "github.com/lib/pq"

	"github.com/mql-dev/mql"
)

// postgresDSN gives one test a PostgreSQL database of its own, or skips.
func postgresDSN(t *testing.T) string { return pgtest.Database(t) }

// The rules hold on every backend, and a reopened store answers as before.
func TestBackends(t *testing.T) {
	for _, name := range []string{"memory", "bbolt", "postgres"} {
		t.Run(name, func(t *testing.T) {
			var dsn string
			switch name {
			case "memory":
				dsn = "memory:"
			case "bbolt":
				dsn = filepath.Join(t.TempDir(), "team.db")
			case "postgres":
				dsn = postgresDSN(t)
			}
			f := openDSN(t, dsn, mql.Options{}).team()
			f.assert("Klarveld", "price_per_seat", mql.Number(44), "worker-3", "src:Klarveld:rev0")
			f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: []string{"Klarveld.price_per_seat"}, By: "orchestrator"}))
			f.assert("Klarveld", "price_per_seat", mql.Number(89), "worker-7", "src:Klarveld:rev1")
			f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Player7", Predicate: "style", Value: mql.String("patient"), By: "architect", SeenBy: []string{"architect"}}))
			if _, err := f.db.As("worker-7").ForRun("r-1").Context(f.ctx, []string{"Klarveld"}, 0); err != nil {
				t.Fatal(err)
			}
			f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "pick", From: []string{"Klarveld.price_per_seat@2"}, By: "worker-7", Run: "r-1"}))
			f.ok(f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: "r-1", Result: mql.Failed, Because: "late", By: "worker-7"}))
			f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Klarveld.price_per_seat@1", By: "owner", Because: "old page"}))
			answers := func(db *mql.DB) string {
				var b strings.Builder
				h, err := db.History(f.ctx, "Klarveld.price_per_seat")
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range h.Claims {
					fmt.Fprintln(&b, c.Ref, c.Value, c.State, c.By, c.Sources, c.Tx)
				}
				imp, _ := db.Impact(f.ctx, "Klarveld.price_per_seat@1", 0)
				for _, d := range imp.Dependents {
					fmt.Fprintln(&b, d.Artifact.Ref, d.Artifact.Review, d.Path)
				}
				rb, _ := db.RevokedBy(f.ctx, "Klarveld.price_per_seat@1")
				fmt.Fprintln(&b, rb.Revocation.By, rb.Revocation.Because, rb.Revocation.Standing)
				live, _ := db.As("worker-3").Live(f.ctx, "*")
				fmt.Fprintln(&b, len(live))
				reps, err := db.Run(f.ctx, "r-1")
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range reps {
					fmt.Fprintln(&b, "run", r.Run, r.By, r.Outcome, r.Because, r.Decisions, len(r.Retrievals), r.MemoryFailure)
					for _, s := range r.Served {
						fmt.Fprintln(&b, " ", s.Ref, s.WhenServed, s.AtDecision, s.Now, s.Cited)
					}
				}
				return b.String()
			}
			before := answers(f.db)
			if !strings.Contains(before, "plan:pick-vendor@1 needs review") || !strings.Contains(before, "Klarveld.price_per_seat@1 44 revoked") ||
				!strings.Contains(before, "run r-1 worker-7 failed late [pick@1] 1 false\n  Klarveld.price_per_seat@2 live live live true") {
				t.Fatalf("answers:\n%s", before)
			}
			if name == "memory" {
				return
			}
			if err := f.db.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := mql.Open(f.ctx, dsn, mql.Options{Clock: f.clk.Now})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if after := answers(db); after != before {
				t.Fatalf("after reopen:\n%s\nbefore:\n%s", after, before)
			}
		})
	}
}

// Several OS processes writing one PostgreSQL-backed memory get unique, gapless references and
// leave exactly one live claim per key.
func TestPostgresProcesses(t *testing.T) {
	if dsn := os.Getenv("MQL_TEST_WRITER_DSN"); dsn != "" {
		t.Skip("child process")
	}
	dsn := postgresDSN(t)
	f := openDSN(t, dsn, mql.Options{}).team()
	f.db.Close()
	const procs, each = 4, 15
	cmds := make([]*exec.Cmd, procs)
	for i := range cmds {
		cmds[i] = exec.Command(os.Args[0], "-test.run=^TestPostgresWriterProcess$", "-test.count=1")
		cmds[i].Env = append(os.Environ(), "MQL_TEST_WRITER_DSN="+dsn, "MQL_TEST_WRITER_ID="+strconv.Itoa(i), "MQL_TEST_WRITER_N="+strconv.Itoa(each))
		cmds[i].Stderr = os.Stderr
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("writer process: %v", err)
		}
	}
	db, err := mql.Open(context.Background(), dsn, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, key := range []string{"Shared.price", fmt.Sprintf("P%d.price", 0)} {
		h, err := db.History(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		live := 0
		for i, c := range h.Claims {
			if c.Version != i+1 {
				t.Fatalf("%s: version %d at position %d", key, c.Version, i+1)
			}
			if c.State == mql.Live {
				live++
			}
		}
		want := procs * each
		if key != "Shared.price" {
			want = each
		}
		if len(h.Claims) != want || live != 1 {
			t.Fatalf("%s: %d versions (want %d), %d live", key, len(h.Claims), want, live)
		}
	}
}

// TestPostgresWriterProcess is the body of one writer process of TestPostgresProcesses.
func TestPostgresWriterProcess(t *testing.T) {
	dsn := os.Getenv("MQL_TEST_WRITER_DSN")
	if dsn == "" {
		t.Skip("run by TestPostgresProcesses")
	}
	id, _ := strconv.Atoi(os.Getenv("MQL_TEST_WRITER_ID"))
	n, _ := strconv.Atoi(os.Getenv("MQL_TEST_WRITER_N"))
	ctx := context.Background()
	db, err := mql.Open(ctx, dsn, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range n {
		for _, subj := range []string{"Shared", fmt.Sprintf("P%d", id)} {
			if _, err := db.Assert(ctx, mql.AssertSpec{Subject: subj, Predicate: "price", Value: mql.Number(float64(id*1000 + i)), By: "worker-3"}); err != nil {
				t.Fatal(err)
			}
		}
	}
}
