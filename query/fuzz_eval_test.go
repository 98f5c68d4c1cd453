package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// evalSeed is the store every FuzzEval input runs against: the procurement script of
// syntax/testdata/scripts (principals, grants, decays, claims with sources, seen-by, revocations,
// confirmations, derivations, reviews), exported once and imported for each input.
var (
	evalSeedOnce sync.Once
	evalSeedNQ   []byte
	evalSeedErr  error
)

var evalClock = func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) }

func evalSeed(t testing.TB) []byte {
	evalSeedOnce.Do(func() {
		ctx := context.Background()
		src, err := os.ReadFile(filepath.Join("syntax", "testdata", "scripts", "procurement.mql"))
		if err != nil {
			evalSeedErr = err
			return
		}
		db, err := mql.Open(ctx, "memory:", mql.Options{Clock: evalClock})
		if err != nil {
			evalSeedErr = err
			return
		}
		defer db.Close()
		if err := query.NewSession(db, "").Exec(ctx, "seed", string(src), nil); err != nil {
			evalSeedErr = err
			return
		}
		var b bytes.Buffer
		evalSeedErr = db.Export(ctx, &b)
		evalSeedNQ = b.Bytes()
	})
	if evalSeedErr != nil {
		t.Fatal(evalSeedErr)
	}
	return evalSeedNQ
}

// evalActors are who a fuzzed session acts as: the owner, principals of the seed store, and
// one that does not exist.
var evalActors = []string{"", "owner", "alice", "worker-3", "orchestrator", "scraper", "ghost"}

// FuzzEval parses fuzzed source and evaluates every statement that parses against a small
// seeded store, acting as one of several principals. Evaluation must never panic; errors are
// fine, but a statement that fails must change nothing (quad count and head unchanged), a read
// must write nothing, and every result must render in every output format (JSON that parses).
// The committed corpus is testdata/fuzz/FuzzEval.
func FuzzEval(f *testing.F) {
	evalSeed(f)
	var files []string
	for _, glob := range []string{"syntax/testdata/scripts/*.mql", "../cmd/mql/testdata/*.mql"} {
		m, _ := filepath.Glob(glob)
		files = append(files, m...)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "--") {
				f.Add(line, uint8(i))
			}
		}
	}
	for _, s := range []string{
		"impact Klarveld.price_per_seat depth 1000000",
		"as of tx 1 as worker-3 live *",
		"find ?v, ?p, ?q where ?v.price_per_seat = ?p, ?w.price_per_seat = ?q order by ?p desc limit 3",
		"context * budget 1",
		"beliefs *.price_per_seat gate 0 0",
		"why plan:pick-vendor",
		"revoke Klarveld.price_per_seat@1 by alice replaced by Klarveld.price_per_seat@1",
		"derive plan:pick-vendor from plan:pick-vendor by orchestrator",
		"as of 1970-01-01T00:00:00Z stats",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, src string, actor uint8) {
		if len(src) > 1<<12 {
			return // the parser's size limits are tested on their own
		}
		wd := time.AfterFunc(time.Minute, func() { panic("FuzzEval: one input ran for a minute") })
		defer wd.Stop()
		ctx := context.Background()
		db, err := mql.Open(ctx, "memory:", mql.Options{Clock: evalClock})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Import(ctx, bytes.NewReader(evalSeed(t))); err != nil {
			t.Fatal(err)
		}
		sess := query.NewSession(db, evalActors[int(actor)%len(evalActors)])
		script, _ := query.Parse("fuzz", src)
		for _, st := range script.Stmts {
			q0, _ := db.QuadCount(ctx)
			h0, _ := db.Head(ctx)
			res, err := sess.Eval(ctx, st)
			q1, _ := db.QuadCount(ctx)
			h1, _ := db.Head(ctx)
			if err != nil {
				if q1 != q0 || h1 != h0 {
					t.Fatalf("%q failed (%v) but changed the store: quads %d → %d, head %d → %d", st.String(), err, q0, q1, h0, h1)
				}
				continue
			}
			if res == nil {
				t.Fatalf("%q: no result and no error", st.String())
			}
			if query.IsRead(st) && (q1 != q0 || h1 != h0) {
				t.Fatalf("read %q changed the store", st.String())
			}
			// A read for a run records one retrieval: one transaction, never more.
			if rs, ok := st.(query.ReadStmt); ok && rs.Modifiers().ForRun != "" && h1 != h0+1 {
				t.Fatalf("read %q for a run: head %d → %d, want one transaction", st.String(), h0, h1)
			}
			for _, format := range output.Formats {
				var out bytes.Buffer
				if err := output.NewPrinter(&out, format).Print(res); err != nil {
					// dot draws why and impact; it refuses other reads, and only them.
					if format == output.FormatDOT && errors.Is(err, output.ErrNoGraph) && res.Why == nil && res.Impact == nil && res.Receipt == nil {
						continue
					}
					t.Fatalf("%q does not render as %s: %v", st.String(), format, err)
				}
				if format == output.FormatJSON {
					for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
						if !json.Valid([]byte(line)) {
							t.Fatalf("%q renders invalid JSON: %s", st.String(), line)
						}
					}
				}
			}
		}
	})
}
