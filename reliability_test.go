package mql_test

// Concurrency: many writers on one store, in goroutines (bbolt) and in OS processes
// (PostgreSQL). Durations are set by environment variables so that CI can run them longer:
//
//	MQL_CONCURRENCY_DURATION  how long the writers write (default 5s; .ci/run uses 30s)
//	MQL_CONCURRENCY_SEED      seed of the writers' choices (default 1)
//
// docs/RELIABILITY.md reports the figures of real runs.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

func relDuration(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("MQL_CONCURRENCY_DURATION")
	if v == "" {
		return 5 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("MQL_CONCURRENCY_DURATION=%q: want a positive duration such as 30s", v)
	}
	return d
}

func relSeed(t *testing.T) uint64 {
	t.Helper()
	v := os.Getenv("MQL_CONCURRENCY_SEED")
	if v == "" {
		return 1
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("MQL_CONCURRENCY_SEED=%q", v)
	}
	return n
}

var (
	relSubjects   = []string{"S0", "S1", "S2", "S3"}
	relPredicates = []string{"price", "note"}
	relArtifacts  = 4
)

// relReceipt is one acknowledged write.
type relReceipt struct {
	Op      string         `json:"op"` // assert, revoke, derive, review
	Worker  int            `json:"worker"`
	Receipt mql.Receipt    `json:"receipt"`
	Value   string         `json:"value,omitempty"`  // an assert's value, as Value.String gives it
	Counts  map[string]int `json:"counts,omitempty"` // the last line of a worker: what it did`
}

// relSetup records the writers' principals and grants: even-numbered workers may revoke any
// price claim; odd-numbered ones only their own claims.
func relSetup(t *testing.T, db *mql.DB, workers int) {
	t.Helper()
	ctx := context.Background()
	must := func(_ mql.Receipt, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(db.AddPrincipal(ctx, mql.PrincipalSpec{Name: "alice", Type: mql.User, By: "owner"}))
	for w := range workers {
		must(db.AddPrincipal(ctx, mql.PrincipalSpec{Name: fmt.Sprintf("w%d", w), Type: mql.Agent, By: "owner"}))
		if w%2 == 0 {
			must(db.Grant(ctx, mql.GrantSpec{Grantee: fmt.Sprintf("w%d", w), Right: mql.RightRevoke, Scope: "price", By: "owner"}))
		}
	}
}

// relWorker writes revisions, revocations, derivations and reviews of overlapping keys until
// the deadline, and reports every acknowledged write. A refused write must be refused for a
// reason the worker could foresee (a race with another writer, or no standing); anything else
// is an error.
func relWorker(ctx context.Context, db *mql.DB, w int, seed uint64, deadline time.Time, emit func(relReceipt)) error {
	rng := rand.New(rand.NewPCG(seed, uint64(w)))
	me := fmt.Sprintf("w%d", w)
	counts := map[string]int{}
	for n := 0; time.Now().Before(deadline); n++ {
		subj := relSubjects[rng.IntN(len(relSubjects))]
		pred := relPredicates[rng.IntN(len(relPredicates))]
		key := subj + "." + pred
		switch r := rng.IntN(100); {
		case r < 50:
			spec := mql.AssertSpec{Subject: subj, Predicate: pred, By: me}
			if pred == "price" {
				spec.Value = mql.Number(float64(rng.IntN(100)))
			} else {
				spec.Value = mql.String(fmt.Sprintf("note %d by %s", rng.IntN(20), me))
			}
			if rng.IntN(2) == 0 {
				spec.Sources = []mql.Source{{ID: fmt.Sprintf("src:%s:%d", me, n)}}
			}
			rc, err := db.Assert(ctx, spec)
			if err != nil {
				return fmt.Errorf("%s: assert %s: %w", me, key, err)
			}
			emit(relReceipt{Op: "assert", Worker: w, Receipt: rc, Value: spec.Value.String()})
			counts["assert"]++
		case r < 75:
			h, err := db.History(ctx, key)
			if errors.Is(err, mql.ErrNotFound) {
				continue
			}
			if err != nil {
				return fmt.Errorf("%s: history %s: %w", me, key, err)
			}
			c := h.Claims[rng.IntN(len(h.Claims))]
			spec := mql.RevokeSpec{Claim: c.Ref, By: me, Because: "concurrency test"}
			if rng.IntN(3) == 0 {
				spec.ReplacedBy = h.Claims[rng.IntN(len(h.Claims))].Ref
			}
			standing := c.By == me || (w%2 == 0 && pred == "price")
			rc, err := db.Revoke(ctx, spec)
			switch {
			case err == nil && !standing:
				return fmt.Errorf("%s revoked %s (asserted by %s) without standing", me, c.Ref, c.By)
			case err == nil:
				emit(relReceipt{Op: "revoke", Worker: w, Receipt: rc})
				counts["revoke"]++
			case !standing && errors.Is(err, mql.ErrNoStanding):
				counts["refused: no standing"]++
			case errors.Is(err, mql.ErrConflict), errors.Is(err, mql.ErrBadReference) && spec.ReplacedBy == c.Ref:
				counts["refused: conflict"]++
			default:
				return fmt.Errorf("%s: revoke %s replaced by %q (standing %v): %w", me, c.Ref, spec.ReplacedBy, standing, err)
			}
		case r < 95:
			i := rng.IntN(relArtifacts)
			h, err := db.History(ctx, key)
			if errors.Is(err, mql.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			from := []string{h.Claims[rng.IntN(len(h.Claims))].Ref}
			if j := rng.IntN(relArtifacts); j < i {
				from = append(from, fmt.Sprintf("a%d", j)) // lower-numbered only: never a cycle
			}
			rc, err := db.Derive(ctx, mql.DeriveSpec{Artifact: fmt.Sprintf("a%d", i), From: from, By: me})
			switch {
			case err == nil:
				emit(relReceipt{Op: "derive", Worker: w, Receipt: rc})
				counts["derive"]++
			case errors.Is(err, mql.ErrNotFound) && len(from) == 2:
				counts["refused: input not derived yet"]++
			default:
				return fmt.Errorf("%s: derive a%d from %v: %w", me, i, from, err)
			}
		default:
			rc, err := db.Review(ctx, mql.ReviewSpec{Artifact: fmt.Sprintf("a%d", rng.IntN(relArtifacts)), By: "alice", Because: me})
			switch {
			case err == nil:
				emit(relReceipt{Op: "review", Worker: w, Receipt: rc})
				counts["review"]++
			case errors.Is(err, mql.ErrNotFound):
				counts["refused: nothing to review"]++
			default:
				return fmt.Errorf("%s: review: %w", me, err)
			}
		}
	}
	emit(relReceipt{Worker: w, Counts: counts})
	return nil
}

// relVerify checks the store after the writers stopped: no acknowledged write is lost, every
// transaction is accounted for by exactly one receipt, versions are unique and gapless, each
// key has at most one live claim (and exactly one after a final assert), and Check is clean.
func relVerify(t *testing.T, db *mql.DB, setupHead int64, receipts []relReceipt) map[string]int {
	t.Helper()
	ctx := context.Background()
	head, err := db.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	var txs []int64
	for _, r := range receipts {
		if r.Counts != nil {
			for k, n := range r.Counts {
				counts[k] += n
			}
			continue
		}
		txs = append(txs, r.Receipt.Tx)
	}
	slices.Sort(txs)
	if int64(len(txs)) != head-setupHead {
		t.Fatalf("%d acknowledged writes, %d transactions committed", len(txs), head-setupHead)
	}
	for i, tx := range txs {
		if tx != setupHead+1+int64(i) {
			t.Fatalf("transaction ids are not one per acknowledged write: position %d holds tx %d", i, tx)
		}
	}
	// Every acknowledged write is in history, as acknowledged.
	refs := map[string]bool{}
	for _, r := range receipts {
		rc := r.Receipt
		switch r.Op {
		case "assert", "derive":
			if refs[rc.Ref] {
				t.Fatalf("%s handed out twice", rc.Ref)
			}
			refs[rc.Ref] = true
		}
		switch r.Op {
		case "assert":
			rb, err := db.RevokedBy(ctx, rc.Ref)
			if err != nil || rb.Claim.Tx != rc.Tx || rb.Claim.Value.String() != r.Value || rb.Claim.By != fmt.Sprintf("w%d", r.Worker) {
				t.Fatalf("acknowledged %s (tx %d) is not in history as written: %+v %v", rc.Ref, rc.Tx, rb.Claim, err)
			}
		case "revoke":
			rb, err := db.RevokedBy(ctx, rc.Ref)
			if err != nil || rb.Revocation == nil || rb.Revocation.Tx != rc.Tx || rb.Revocation.By != fmt.Sprintf("w%d", r.Worker) {
				t.Fatalf("acknowledged revocation of %s (tx %d) is not recorded: %+v %v", rc.Ref, rc.Tx, rb.Revocation, err)
			}
		case "derive":
			name, ver, _ := strings.Cut(rc.Ref, "@")
			h, err := db.History(ctx, name)
			n, _ := strconv.Atoi(ver)
			if err != nil || n < 1 || n > len(h.Artifacts) || h.Artifacts[n-1].Tx != rc.Tx {
				t.Fatalf("acknowledged %s (tx %d) is not in history: %v", rc.Ref, rc.Tx, err)
			}
		}
	}
	// Versions unique and gapless; at most one live claim per key.
	finals := 0
	for _, s := range relSubjects {
		for _, p := range relPredicates {
			key := s + "." + p
			h, err := db.History(ctx, key)
			if errors.Is(err, mql.ErrNotFound) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			live := 0
			for i, c := range h.Claims {
				if c.Version != i+1 || c.Ref != fmt.Sprintf("%s@%d", key, i+1) {
					t.Fatalf("%s: version %d at position %d", key, c.Version, i+1)
				}
				if c.State == mql.Live {
					live++
				}
			}
			if live > 1 {
				t.Fatalf("%s has %d live claims", key, live)
			}
			// A final observed claim makes exactly one live claim.
			v := mql.Number(1)
			if p == "note" {
				v = mql.String("final")
			}
			if _, err := db.Assert(ctx, mql.AssertSpec{Subject: s, Predicate: p, Value: v, By: "owner", Sources: []mql.Source{{ID: "src:final:" + key}}}); err != nil {
				t.Fatal(err)
			}
			finals++
			ls, err := db.Live(ctx, key)
			if err != nil || len(ls) != 1 {
				t.Fatalf("%s: %d live claims after a final assert: %v", key, len(ls), err)
			}
		}
	}
	rep, err := db.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		for _, p := range rep.Problems {
			t.Errorf("%s: %s", p.Kind, p)
		}
		t.Fatal("check found problems after the concurrent writes")
	}
	counts["transactions"] = int(head - setupHead)
	counts["keys"] = finals
	return counts
}

// 16 goroutines write revisions, revocations, derivations and reviews of overlapping keys into
// one bbolt store; meanwhile another process trying to open the store gets ErrInUse in time.
func TestConcurrentWritersBBolt(t *testing.T) {
	if os.Getenv("MQL_REL_CHILD") != "" {
		t.Skip("child process")
	}
	const workers = 16
	dur, seed := relDuration(t), relSeed(t)
	path := filepath.Join(t.TempDir(), "concurrent.db")
	ctx := context.Background()
	db, err := mql.Open(ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	relSetup(t, db, workers)
	setupHead, _ := db.Head(ctx)

	var mu sync.Mutex
	var receipts []relReceipt
	emit := func(r relReceipt) { mu.Lock(); receipts = append(receipts, r); mu.Unlock() }
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := relWorker(ctx, db, w, seed, deadline, emit); err != nil {
				errs <- err
			}
		}()
	}
	// Another process opens the store while it is written: a clear ErrInUse in time, no hang.
	inUse := make(chan string, 1)
	go func() {
		time.Sleep(dur / 3)
		cmd := exec.Command(os.Args[0], "-test.run=^TestRelChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MQL_REL_CHILD=open", "MQL_REL_DSN="+path)
		start := time.Now()
		out, _ := cmd.CombinedOutput()
		inUse <- fmt.Sprintf("%s|%s", time.Since(start), out)
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	got := <-inUse
	elapsed, out, _ := strings.Cut(got, "|")
	if !strings.Contains(out, "open: ErrInUse after") {
		t.Fatalf("a second process opening the store in use: %s", out)
	}
	counts := relVerify(t, db, setupHead, receipts)
	// The store reopens and passes the check from its file.
	db.Close()
	rep, err := mql.CheckStore(ctx, path, mql.Options{})
	if err != nil || !rep.OK() {
		t.Fatalf("check after close: %v %+v", err, rep.Problems)
	}
	t.Logf("%d goroutines for %s (seed %d): %v; second process got ErrInUse (process ran %s)", workers, dur, seed, counts, elapsed)
}

// TestRelChildProcess is not a test: the reliability tests run the test binary again as a
// second process.
func TestRelChildProcess(t *testing.T) {
	role := os.Getenv("MQL_REL_CHILD")
	if role == "" {
		t.Skip("child process of the reliability tests")
	}
	ctx := context.Background()
	dsn := os.Getenv("MQL_REL_DSN")
	switch role {
	case "open":
		start := time.Now()
		db, err := mql.Open(ctx, dsn, mql.Options{OpenTimeout: 500 * time.Millisecond})
		if err == nil {
			db.Close()
			t.Fatal("open: the store opened while another process held it")
		}
		if !errors.Is(err, mql.ErrInUse) {
			t.Fatalf("open: %v", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("open: ErrInUse only after %s", d)
		}
		fmt.Printf("open: ErrInUse after %s: %v\n", time.Since(start).Round(time.Millisecond), err)
	case "write":
		w, _ := strconv.Atoi(os.Getenv("MQL_REL_WORKER"))
		seed, _ := strconv.ParseUint(os.Getenv("MQL_REL_SEED"), 10, 64)
		until, _ := time.Parse(time.RFC3339Nano, os.Getenv("MQL_REL_DEADLINE"))
		db, err := mql.Open(ctx, dsn, mql.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		out := bufio.NewWriter(os.Stdout)
		enc := json.NewEncoder(out)
		var mu sync.Mutex
		emit := func(r relReceipt) { mu.Lock(); enc.Encode(r); mu.Unlock() }
		err = relWorker(ctx, db, w, seed, until, emit)
		out.Flush()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// 8 OS processes do the same against one PostgreSQL-backed store.
func TestConcurrentProcessesPostgres(t *testing.T) {
	if os.Getenv("MQL_REL_CHILD") != "" {
		t.Skip("child process")
	}
	const procs = 8
	dsn := postgresDSN(t)
	dur, seed := relDuration(t), relSeed(t)
	ctx := context.Background()
	db, err := mql.Open(ctx, dsn, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	relSetup(t, db, procs)
	setupHead, _ := db.Head(ctx)
	deadline := time.Now().Add(dur)
	var receipts []relReceipt
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRelChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MQL_REL_CHILD=write", "MQL_REL_DSN="+dsn, "MQL_REL_WORKER="+strconv.Itoa(w),
			"MQL_REL_SEED="+strconv.FormatUint(seed, 10), "MQL_REL_DEADLINE="+deadline.Format(time.RFC3339Nano))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				var r relReceipt
				if json.Unmarshal(sc.Bytes(), &r) == nil && (r.Op != "" || r.Counts != nil) {
					mu.Lock()
					receipts = append(receipts, r)
					mu.Unlock()
				}
			}
			if err := cmd.Wait(); err != nil {
				t.Errorf("writer process %d: %v\n%s", w, err, stderr.String())
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	counts := relVerify(t, db, setupHead, receipts)
	t.Logf("%d processes for %s (seed %d): %v", procs, dur, seed, counts)
}
