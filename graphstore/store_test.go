package graphstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/lib/pq"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/graphstore/record/recordtest"
	"github.com/mql-dev/mql/internal/pgtest"
)

// ---- backends under test -------------------------------------------------------------------

type backendCase struct {
	name       string
	persistent bool
	newDSN     func(t *testing.T) string // a fresh, empty store
}

func backendCases() []backendCase {
	return []backendCase{
		{name: "memory", newDSN: func(*testing.T) string { return "memory:" }},
		{name: "bbolt", persistent: true, newDSN: func(t *testing.T) string {
			return "bbolt:" + filepath.Join(t.TempDir(), "mql.db")
		}},
		{name: "postgres", persistent: true, newDSN: newPGDatabase},
	}
}

// eachBackend runs f against every backend; PostgreSQL only when MQL_TEST_POSTGRES is set.
func eachBackend(t *testing.T, f func(t *testing.T, bc backendCase)) {
	for _, bc := range backendCases() {
		t.Run(bc.name, func(t *testing.T) { f(t, bc) })
	}
}

// newPGDatabase gives one test a PostgreSQL database of its own, or skips.
func newPGDatabase(t *testing.T) string { return pgtest.Database(t) }

func mustOpen(t testing.TB, dsn string, opts Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("open %s: %v", dsn, err)
	}
	return s
}

// readTxs reads every transaction of the store, 1 to its head, in one snapshot. A
// transaction the snapshot does not hold (its header is missing) is an error.
func readTxs(s *Store) ([]*record.Tx, error) {
	var txs []*record.Tx
	err := s.Read(context.Background(), func(ix *index.Index) error {
		txs = nil
		for id := record.TxID(1); id <= ix.Head(); id++ {
			tx := ix.Tx(id)
			if tx == nil {
				return fmt.Errorf("tx %d is missing from a store whose head is %d", id, ix.Head())
			}
			txs = append(txs, tx)
		}
		return nil
	})
	return txs, err
}

// txsOf is readTxs for a store that must read: it panics if the read fails.
func txsOf(s *Store) []*record.Tx {
	txs, err := readTxs(s)
	if err != nil {
		panic(fmt.Sprintf("reading the transactions: %v", err))
	}
	return txs
}

// head is the head of the store as a read sees it; it must equal the head the Store knows.
func head(s *Store) record.TxID {
	var h record.TxID
	if err := s.Read(context.Background(), func(ix *index.Index) error { h = ix.Head(); return nil }); err != nil {
		panic(fmt.Sprintf("reading the head: %v", err))
	}
	if h != s.Head() {
		panic(fmt.Sprintf("a read sees head %d, the Store says %d", h, s.Head()))
	}
	return h
}

func quadCount(t testing.TB, s *Store) int64 {
	t.Helper()
	n, err := s.QuadCount(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func sameTxs(t *testing.T, got, want []*record.Tx) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d transactions, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("tx %d differs:\n got %s\nwant %s", want[i].ID, showTx(got[i]), showTx(want[i]))
		}
	}
}

// writeSample records a small history with every record type through Write.
func writeSample(t testing.TB, s *Store) {
	t.Helper()
	ctx := context.Background()
	steps := []func(ix *index.Index, tx *record.Tx) error{
		func(_ *index.Index, tx *record.Tx) error {
			tx.Principals = []*record.Principal{{Name: "alice", Type: record.User}, {Name: "worker-3", Type: record.Agent}, {Name: "scraper/v2", Type: record.Tool}}
			tx.Grants = []*record.Grant{{ID: fmt.Sprintf("g%d.1", tx.ID), Grantee: "worker-3", Right: record.RightAssert, Scope: "price_per_seat", By: "owner"}}
			tx.Sources = []*record.Source{{ID: "src:Klarveld:rev0", Excerpt: "44 €/seat \\x00 \"q\"", URI: "https://k.example/p", Revision: "rev0"}}
			return nil
		},
		func(_ *index.Index, tx *record.Tx) error {
			tx.Claims = []*record.Claim{
				{ID: *recordtest.ID("Klarveld.price_per_seat@1"), Value: record.Value{Type: record.Number, Num: 44}, By: "worker-3", Sources: []string{"src:Klarveld:rev0"}, Kind: record.Observed, Confidence: 0.9, Grant: "g2.1"},
				{ID: *recordtest.ID("Klarveld.region@1"), Value: record.Value{Type: record.String, Str: `EU \x00 \x\x0000 \`}, By: "worker-3", Kind: record.Observed, Confidence: 0.8,
					ValidUntil: time.Date(2027, 1, 1, 0, 0, 0, 5, time.FixedZone("X", 3600))},
				{ID: *recordtest.ID("Klarveld.founded@1"), Value: record.Value{Type: record.Time, Time: time.Date(1999, 1, 2, 3, 4, 5, 6, time.UTC)}, By: "alice", Kind: record.Inferred, Confidence: 0.5, SeenBy: []string{"alice", "worker-3"}},
				{ID: *recordtest.ID("Klarveld.soc2@1"), Value: record.Value{Type: record.Bool, Bool: true}, By: "alice", Kind: record.Observed, Confidence: 1},
				{ID: *recordtest.ID("Klarveld.parent@1"), Value: record.Value{Type: record.Ref, Str: "Brimsole"}, By: "alice", Kind: record.Inferred, Confidence: 0.3},
			}
			return nil
		},
		func(_ *index.Index, tx *record.Tx) error {
			tx.Claims = []*record.Claim{
				{ID: *recordtest.ID("Klarveld.price_per_seat@2"), Value: record.Value{Type: record.Number, Num: 4.4}, By: "worker-3", Sources: []string{"src:Klarveld:rev0"}, Kind: record.Observed, Confidence: 0.9, Supersedes: recordtest.ID("Klarveld.price_per_seat@1")},
				{ID: *recordtest.ID("Klarveld.price_per_seat@3"), Value: record.Value{Type: record.Number, Num: 44}, By: "worker-3", Kind: record.Inferred, Confidence: 0.6, Contests: recordtest.ID("Klarveld.price_per_seat@2")},
			}
			return nil
		},
		func(_ *index.Index, tx *record.Tx) error {
			tx.Revocations = []*record.Revocation{{ID: fmt.Sprintf("r%d.1", tx.ID), Claim: *recordtest.ID("Klarveld.price_per_seat@2"), By: "alice", Because: "misread the page", Standing: "owner", ReplacedBy: recordtest.ID("Klarveld.price_per_seat@3")}}
			tx.Confirmations = []*record.Confirmation{{ID: fmt.Sprintf("c%d.1", tx.ID), Claim: *recordtest.ID("Klarveld.soc2@1"), By: "alice", Standing: "owner"}}
			tx.Decays = []*record.Decay{{Predicate: "signal", HalfLife: 10 * time.Minute, By: "owner"}}
			return nil
		},
		func(_ *index.Index, tx *record.Tx) error {
			tx.Artifacts = []*record.Artifact{{ID: record.ArtifactID{Name: "plan:pick-vendor", Version: 1}, DerivedFrom: []record.NodeRef{{Claim: recordtest.ID("Klarveld.price_per_seat@3")}, {Claim: recordtest.ID("Klarveld.soc2@1")}}, By: "worker-3", Confidence: 1}}
			return nil
		},
		func(_ *index.Index, tx *record.Tx) error {
			tx.Reviews = []*record.Review{{ID: fmt.Sprintf("v%d.1", tx.ID), Artifact: record.ArtifactID{Name: "plan:pick-vendor", Version: 1}, By: "alice", Because: "re-checked"}}
			tx.Artifacts = []*record.Artifact{{ID: record.ArtifactID{Name: "plan:pick-vendor", Version: 2}, DerivedFrom: []record.NodeRef{{Artifact: &record.ArtifactID{Name: "plan:pick-vendor", Version: 1}}}, By: "worker-3", Confidence: 0.5, SeenBy: []string{"worker-3"}}}
			return nil
		},
	}
	for i, step := range steps {
		by := "owner"
		if i == 1 {
			by = "worker-3"
		}
		if _, err := s.Write(ctx, by, step); err != nil {
			t.Fatalf("sample step %d: %v", i, err)
		}
	}
}

// ---- suite ---------------------------------------------------------------------------------

func TestGenesis(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		dsn := bc.newDSN(t)
		s := mustOpen(t, dsn, Options{Owner: "boss", Strict: true})
		if s.Backend() != bc.name {
			t.Errorf("Backend() = %q", s.Backend())
		}
		txs := txsOf(s)
		if len(txs) != 1 {
			t.Fatalf("%d transactions after creation", len(txs))
		}
		g := txs[0]
		want := &record.Tx{ID: 1, Time: g.Time, By: "boss", Meta: &record.StoreMeta{Owner: "boss", Strict: true}, Principals: []*record.Principal{{Name: "boss", Type: record.User, Tx: 1}}}
		if !reflect.DeepEqual(g, want) || g.Time.Location() != time.UTC || time.Since(g.Time) > time.Minute {
			t.Fatalf("genesis %s", showTx(g))
		}
		n := quadCount(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !bc.persistent {
			return
		}
		// Reopening does not write a second genesis, and the recorded meta wins over Options.
		s = mustOpen(t, dsn, Options{Owner: "someone-else"})
		defer s.Close()
		sameTxs(t, txsOf(s), []*record.Tx{g})
		if got := quadCount(t, s); got != n {
			t.Fatalf("reopen: %d quads, had %d", got, n)
		}
		if m := s.Meta(); m.Owner != "boss" || !m.Strict {
			t.Fatalf("meta after reopen %+v", m)
		}
		if err := s.Read(context.Background(), func(ix *index.Index) error {
			if m := ix.Meta(); m.Owner != "boss" || !m.Strict {
				t.Errorf("meta read after reopen %+v", m)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestReopenLoadsEverything(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		if !bc.persistent {
			t.Skip("memory stores do not outlive Close")
		}
		dsn := bc.newDSN(t)
		s := mustOpen(t, dsn, Options{})
		writeSample(t, s)
		want := txsOf(s)
		n := quadCount(t, s)
		s.Close()

		s = mustOpen(t, dsn, Options{})
		defer s.Close()
		sameTxs(t, txsOf(s), want)
		if got := quadCount(t, s); got != n {
			t.Fatalf("%d quads after reopen, want %d", got, n)
		}
		// The region claim's time was given in another zone; it is stored in UTC.
		if vu := want[2].Claims[1].ValidUntil; vu.Location() != time.UTC {
			t.Errorf("valid-until not normalised to UTC: %v", vu)
		}
		if got := want[2].Claims[1].Value.Str; got != `EU \x00 \x\x0000 \` {
			t.Errorf("text changed: %q", got)
		}
		// And a write after reopening continues the ids.
		tx, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
			tx.Decays = []*record.Decay{{Predicate: "p", HalfLife: time.Hour, By: "owner"}}
			return nil
		})
		if err != nil || tx.ID != want[len(want)-1].ID+1 {
			t.Fatalf("write after reopen: %v %v", tx, err)
		}
	})
}

func TestWriteAtomicity(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		ctx := context.Background()
		s := mustOpen(t, bc.newDSN(t), Options{})
		defer s.Close()
		writeSample(t, s)
		n, h := quadCount(t, s), head(s)

		boom := errors.New("boom")
		tx, err := s.Write(ctx, "owner", func(ix *index.Index, tx *record.Tx) error {
			tx.Claims = []*record.Claim{{ID: *recordtest.ID("X.p@1"), Value: record.Value{Type: record.String, Str: "x"}, By: "owner", Kind: record.Inferred, Confidence: 1}}
			return boom
		})
		if err != boom || tx != nil {
			t.Fatalf("build error came back as %v, %v", tx, err)
		}
		// A transaction that refers to a claim never recorded is refused before writing.
		_, err = s.Write(ctx, "owner", func(ix *index.Index, tx *record.Tx) error {
			tx.Revocations = []*record.Revocation{{ID: "r", Claim: *recordtest.ID("Nobody.p@1"), By: "owner"}}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), "never recorded") {
			t.Fatalf("dangling reference: %v", err)
		}
		// A malformed one too.
		_, err = s.Write(ctx, "owner", func(ix *index.Index, tx *record.Tx) error {
			tx.Claims = []*record.Claim{{ID: *recordtest.ID("X.p@1"), Value: record.Value{Type: record.String, Str: "x"}, By: "owner", Kind: "guess", Confidence: 1}}
			return nil
		})
		if err == nil {
			t.Fatal("malformed claim written")
		}
		// A cancelled context writes nothing.
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Write(cctx, "owner", func(*index.Index, *record.Tx) error { return nil }); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled write: %v", err)
		}
		if got := quadCount(t, s); got != n {
			t.Fatalf("quad count %d, want %d", got, n)
		}
		if got := head(s); got != h {
			t.Fatalf("head %d, want %d", got, h)
		}
		// The next good write gets the next id.
		tx, err = s.Write(ctx, "owner", func(*index.Index, *record.Tx) error { return nil })
		if err != nil || tx.ID != h+1 {
			t.Fatalf("next write %v %v", tx, err)
		}
	})
}

// failingBackend wraps a Store's backend so that its kv commits fail on demand, to test what
// the Store does when the storage fails under a group commit.
type failingBackend struct {
	backend
	fkv *failingKV
}

func newFailingBackend(be backend) *failingBackend {
	return &failingBackend{backend: be, fkv: &failingKV{Store: be.kv()}}
}

func (f *failingBackend) kv() kv.Store { return f.fkv }

// failingKV lets skip commits through, then fails the next fail ones (after rolling them
// back: a failed commit leaves nothing); a write transaction that begins while gate is set
// waits until it is closed.
type failingKV struct {
	kv.Store
	mu         sync.Mutex
	skip, fail int
	commits    int           // commits attempted
	failed     int           // commits failed
	gate       chan struct{} // Write waits until it is closed
	entered    chan struct{} // closed when a Write reached the gate
}

// failAfter makes the commit after the next skip ones fail.
func (f *failingKV) failAfter(skip int) {
	f.mu.Lock()
	f.skip, f.fail = skip, 1
	f.mu.Unlock()
}

func (f *failingKV) counts() (commits, failed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commits, f.failed
}

func (f *failingKV) Write(ctx context.Context) (kv.WriteTx, error) {
	f.mu.Lock()
	gate, entered := f.gate, f.entered
	f.gate, f.entered = nil, nil
	f.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
	wt, err := f.Store.Write(ctx)
	if err != nil {
		return nil, err
	}
	return &failingWriteTx{WriteTx: wt, f: f}, nil
}

// hold makes the next Write wait until release is called; wait returns once it waits.
func (f *failingKV) hold() (wait, release func()) {
	gate, entered := make(chan struct{}), make(chan struct{})
	f.mu.Lock()
	f.gate, f.entered = gate, entered
	f.mu.Unlock()
	return func() { <-entered }, func() { close(gate) }
}

type failingWriteTx struct {
	kv.WriteTx
	f *failingKV
}

func (w *failingWriteTx) Commit(ctx context.Context) error {
	f := w.f
	f.mu.Lock()
	f.commits++
	fail := false
	switch {
	case f.skip > 0:
		f.skip--
	case f.fail > 0:
		f.fail--
		f.failed++
		fail = true
	}
	f.mu.Unlock()
	if fail {
		w.WriteTx.Rollback()
		return errors.New("injected commit failure")
	}
	return w.WriteTx.Commit(ctx)
}

// TestApplyFailure: when the kv commit of a group fails, every writer of the group gets an
// error wrapping ErrStorage that says nothing was recorded, nothing of the group is recorded
// (neither in the store nor in what reads see through the cache), and the next write succeeds
// with the next id.
func TestApplyFailure(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		ctx := context.Background()
		s := mustOpen(t, bc.newDSN(t), Options{})
		defer s.Close()
		fb := newFailingBackend(s.be)
		s.be = fb
		writeSample(t, s)
		before := txsOf(s)
		n, h := quadCount(t, s), head(s)
		principal := func(name string) func(*index.Index, *record.Tx) error {
			return func(_ *index.Index, tx *record.Tx) error {
				tx.Principals = []*record.Principal{{Name: name, Type: record.User}}
				return nil
			}
		}
		sees := func(name string) bool {
			var p *record.Principal
			if err := s.Read(ctx, func(ix *index.Index) error { p = ix.View(ix.Head(), time.Now(), "").Principal(name); return nil }); err != nil {
				t.Fatal(err)
			}
			return p != nil
		}
		unchanged := func(what string) {
			t.Helper()
			if quadCount(t, s) != n || head(s) != h {
				t.Fatalf("%s changed the store: %d quads, head %d; had %d, %d", what, quadCount(t, s), head(s), n, h)
			}
			sameTxs(t, txsOf(s), before)
		}

		// One writer.
		fb.fkv.failAfter(0)
		_, err := s.Write(ctx, "owner", principal("bob"))
		if !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "nothing was recorded") {
			t.Fatalf("failed commit: %v", err)
		}
		if _, failed := fb.fkv.counts(); failed != 1 {
			t.Fatalf("%d commits failed", failed)
		}
		unchanged("a failed commit")
		if sees("bob") {
			t.Fatal("a read sees the principal of the failed commit")
		}

		// A group of three writers, queued behind a commit that succeeds: the group's one
		// commit fails, and fails all three.
		wait, release := fb.fkv.hold()
		first := make(chan error, 1)
		go func() { _, err := s.Write(ctx, "owner", principal("first")); first <- err }()
		wait() // the first writer leads its own group, and waits to begin its kv write
		group := make(chan error, 3)
		for i := range 3 {
			go func() { _, err := s.Write(ctx, "owner", principal(fmt.Sprintf("g%d", i))); group <- err }()
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			s.qmu.Lock()
			queued := len(s.queue)
			s.qmu.Unlock()
			if queued == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d writers queued, want 3", queued)
			}
		}
		commits, _ := fb.fkv.counts()
		fb.fkv.failAfter(1) // the first writer's commit succeeds, the group's fails
		release()
		if err := <-first; err != nil {
			t.Fatalf("the first writer: %v", err)
		}
		for range 3 {
			if err := <-group; !errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), "nothing was recorded") {
				t.Fatalf("a writer of the failed group: %v", err)
			}
		}
		if got, failed := fb.fkv.counts(); got != commits+2 || failed != 2 {
			t.Fatalf("%d commits for the first writer and the group of three (%d failed in all), want 2", got-commits, failed)
		}
		h++ // the first writer's
		if head(s) != h {
			t.Fatalf("head %d after the failed group, want %d", head(s), h)
		}
		for i := range 3 {
			if sees(fmt.Sprintf("g%d", i)) {
				t.Fatalf("a read sees g%d, of the failed group", i)
			}
		}
		if !sees("first") {
			t.Fatal("the first writer's principal is not recorded")
		}

		// The next write succeeds, with the next id, and reads end with it.
		tx, err := s.Write(ctx, "owner", principal("bob"))
		if err != nil || tx.ID != h+1 {
			t.Fatalf("write after failure: %v %v", tx, err)
		}
		got := txsOf(s)
		if len(got) != int(h+1) || showTx(got[len(got)-1]) != showTx(tx) {
			t.Fatalf("the store does not end with the new tx: %d transactions, last %s", len(got), showTx(got[len(got)-1]))
		}
		sameTxs(t, got[:len(before)], before)
		if !sees("bob") {
			t.Fatal("a read does not see the principal written after the failure")
		}
		if r, err := s.Check(ctx, CheckOptions{}); err != nil || !r.OK() {
			t.Fatalf("check after the failures: %v %v", err, r)
		}
	})
}

func TestConcurrentWriters(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		s := mustOpen(t, bc.newDSN(t), Options{})
		defer s.Close()
		const writers, each = 16, 5
		var wg sync.WaitGroup
		errs := make(chan error, writers*each)
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 1; i <= each; i++ {
					_, err := s.Write(context.Background(), "owner", countingClaim(fmt.Sprintf("w%d", w), i))
					if err != nil {
						errs <- err
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		checkCounting(t, txsOf(s), 1+writers*each)
		checkSound(t, s)
	})
}

// countingClaim writes version `version` of subject.n whose value is the number of claims the
// index held when build ran: with serialised writers, exactly the claims of all earlier txs.
// A version after the first supersedes the one before (versions of one subject are written in
// order), as mql's writer records it (lifecycle.Relate: same kind, same rank), so that the
// store stays sound.
func countingClaim(subject string, version int) func(ix *index.Index, tx *record.Tx) error {
	return func(ix *index.Index, tx *record.Tx) error {
		n := ix.ClaimCount()
		key := record.Key{Subject: subject, Predicate: "n"}
		c := &record.Claim{ID: record.ClaimID{Key: key, Version: version},
			Value: record.Value{Type: record.Number, Num: float64(n)}, By: "owner", Kind: record.Inferred, Confidence: 1}
		if version > 1 {
			c.Supersedes = &record.ClaimID{Key: key, Version: version - 1}
		}
		tx.Claims = []*record.Claim{c}
		return nil
	}
}

// checkSound runs the store's check and fails the test on any problem.
func checkSound(t *testing.T, s *Store) {
	t.Helper()
	r, err := s.Check(context.Background(), CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ckOK(t, r)
}

func checkCounting(t *testing.T, txs []*record.Tx, want int) {
	t.Helper()
	if len(txs) != want {
		t.Fatalf("%d transactions, want %d", len(txs), want)
	}
	claims := 0
	for i, tx := range txs {
		if tx.ID != record.TxID(i+1) {
			t.Fatalf("tx at %d has id %d", i, tx.ID)
		}
		for _, c := range tx.Claims {
			if int(c.Value.Num) != claims {
				t.Fatalf("tx %d saw %v claims, but %d were committed before it", tx.ID, c.Value.Num, claims)
			}
		}
		claims += len(tx.Claims)
	}
}

func TestClosedAndBadDSN(t *testing.T) {
	ctx := context.Background()
	s := mustOpen(t, "memory:", Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "owner", func(*index.Index, *record.Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Errorf("write after close: %v", err)
	}
	if err := s.Refresh(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("refresh after close: %v", err)
	}
	if _, err := s.QuadCount(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("count after close: %v", err)
	}
	if _, err := s.Import(ctx, strings.NewReader(""), CheckOptions{}); !errors.Is(err, ErrClosed) {
		t.Errorf("import after close: %v", err)
	}
	for _, dsn := range []string{"", "mysql://x", "sqlite:x.db", "bbolt:", "http://x"} {
		_, err := Open(ctx, dsn, Options{})
		if !errors.Is(err, ErrBadDSN) || !strings.Contains(err.Error(), "bbolt:PATH") {
			t.Errorf("Open(%q): %v", dsn, err)
		}
	}
	// A plain path is a bbolt file.
	p := filepath.Join(t.TempDir(), "plain.mql")
	s = mustOpen(t, p, Options{})
	if s.Backend() != "bbolt" {
		t.Errorf("plain path opened %s", s.Backend())
	}
	s.Close()
	if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("bbolt store is not one file: %v", err)
	}
}

func TestBBoltInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	s := mustOpen(t, "bbolt:"+path, Options{})
	defer s.Close()

	// A second open in this process conflicts too: flock locks belong to open file
	// descriptions, and bbolt opens the file anew.
	start := time.Now()
	_, err := Open(context.Background(), "bbolt:"+path, Options{OpenTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("second open: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("second open took %s", d)
	}
}

func TestBBoltInUseByOtherProcess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "held.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), "MQL_HELPER=bbolt-hold", "MQL_HELPER_DSN=bbolt:"+path)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("helper said %q, %v", line, err)
	}
	start := time.Now()
	_, err = Open(context.Background(), "bbolt:"+path, Options{OpenTimeout: 300 * time.Millisecond})
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("open of a file held by another process: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("open took %s", d)
	}
	// Once the other process is gone the file opens.
	stdin.Close()
	cmd.Wait()
	s := mustOpen(t, "bbolt:"+path, Options{})
	if head(s) != 2 {
		t.Errorf("head %d after the helper's write", head(s))
	}
	s.Close()
}

// TestHelperProcess is not a test: other tests run the test binary again with MQL_HELPER set
// to get a second process.
func TestHelperProcess(t *testing.T) {
	role := os.Getenv("MQL_HELPER")
	if role == "" {
		t.Skip("helper process for the multi-process tests")
	}
	dsn := os.Getenv("MQL_HELPER_DSN")
	ctx := context.Background()
	switch role {
	case "bbolt-hold":
		s := mustOpen(t, dsn, Options{})
		if _, err := s.Write(ctx, "owner", func(*index.Index, *record.Tx) error { return nil }); err != nil {
			t.Fatal(err)
		}
		fmt.Println("ready")
		io.Copy(io.Discard, os.Stdin) // hold the file until the parent closes stdin
		s.Close()
	case "pg-writer":
		s := mustOpen(t, dsn, Options{})
		defer s.Close()
		n, _ := strconv.Atoi(os.Getenv("MQL_HELPER_WRITES"))
		subject := os.Getenv("MQL_HELPER_SUBJECT")
		for i := 1; i <= n; i++ {
			if _, err := s.Write(ctx, "owner", countingClaim(subject, i)); err != nil {
				t.Fatal(err)
			}
		}
	default:
		t.Fatalf("unknown helper role %q", role)
	}
}

// importInto creates a store of backend bc from an export: with ImportStore for a file or a
// database, with Store.Import for memory:. It returns the store, open, and its DSN.
func importInto(t *testing.T, bc backendCase, data []byte) (*Store, string) {
	t.Helper()
	ctx := context.Background()
	dsn := bc.newDSN(t)
	if !bc.persistent {
		s := mustOpen(t, dsn, Options{})
		if _, err := s.Import(ctx, bytes.NewReader(data), CheckOptions{}); err != nil {
			t.Fatalf("import: %v", err)
		}
		return s, dsn
	}
	if _, err := ImportStore(ctx, dsn, bytes.NewReader(data), Options{}, CheckOptions{}); err != nil {
		t.Fatalf("import: %v", err)
	}
	return mustOpen(t, dsn, Options{}), dsn
}

func TestExportImport(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		ctx := context.Background()
		// A strict store created in 2001: the store it is imported into would be neither.
		created := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
		src := mustOpen(t, "memory:", Options{Strict: true, Clock: func() time.Time { created = created.Add(time.Second); return created }})
		defer src.Close()
		writeSample(t, src)
		var buf bytes.Buffer
		if err := codec.WriteNQuads(&buf, txsOf(src)); err != nil {
			t.Fatal(err)
		}
		txs, err := ReadNQuads(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		sameTxs(t, txs, txsOf(src))

		// The import is the exported store: the genesis (owner, strict flag, time) included.
		dst, dsn := importInto(t, bc, buf.Bytes())
		defer dst.Close()
		sameTxs(t, txsOf(dst), txsOf(src))
		if a, b := quadCount(t, src), quadCount(t, dst); a != b {
			t.Fatalf("quads: source %d, imported %d", a, b)
		}
		var again bytes.Buffer
		if err := codec.WriteNQuads(&again, txsOf(dst)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), buf.Bytes()) {
			t.Fatal("export → import → export is not byte-identical")
		}
		if r, err := dst.Check(ctx, CheckOptions{}); err != nil || !r.OK() {
			t.Fatalf("the imported store does not check: %v %v", err, r.Problems)
		}
		// A second import into the same store is refused: an import creates a store.
		if bc.persistent {
			_, err = ImportStore(ctx, dsn, bytes.NewReader(buf.Bytes()), Options{}, CheckOptions{})
		} else {
			_, err = dst.Import(ctx, bytes.NewReader(buf.Bytes()), CheckOptions{})
		}
		if !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("second import: %v", err)
		}
		sameTxs(t, txsOf(dst), txsOf(src))
	})
}

// A store opened on a file or a database is not replaced by Store.Import: ImportStore creates
// one.
func TestStoreImportOnlyMemory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	_, err := s.Import(context.Background(), strings.NewReader(ckExport(t)), CheckOptions{})
	if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "mql import FILE NEWDB") {
		t.Fatalf("import into an open bbolt store: %v", err)
	}
	if head(s) != 1 || quadCount(t, s) != quadCount(t, mustOpenMemory(t)) {
		t.Fatal("the refused import changed the store")
	}
}

func mustOpenMemory(t *testing.T) *Store {
	s := mustOpen(t, "memory:", Options{})
	t.Cleanup(func() { s.Close() })
	return s
}

func TestImportBadLine(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		src := mustOpen(t, "memory:", Options{})
		writeSample(t, src)
		var buf bytes.Buffer
		if err := codec.WriteNQuads(&buf, txsOf(src)); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(buf.String(), "\n")
		lines[16] = `<urn:mql:claim:X.p@1> <urn:mql:kind> "observed <urn:mql:tx:3> .`
		bad := strings.Join(lines, "\n")
		_, err := ReadNQuads(strings.NewReader(bad))
		if !errors.Is(err, ErrBadImport) || !strings.Contains(err.Error(), "line 17, column 38: ") {
			t.Fatalf("bad line: %v", err)
		}
		dsn := bc.newDSN(t)
		if bc.persistent {
			_, err = ImportStore(context.Background(), dsn, strings.NewReader(bad), Options{}, CheckOptions{})
		} else {
			_, err = mustOpenMemory(t).Import(context.Background(), strings.NewReader(bad), CheckOptions{})
		}
		var ie *ImportError
		if !errors.As(err, &ie) || ie.Line != 17 || !errors.Is(err, ErrBadImport) {
			t.Fatalf("import of a bad line: %v", err)
		}
	})
}

func showTx(tx *record.Tx) string {
	var b strings.Builder
	if err := codec.WriteNQuads(&b, []*record.Tx{tx}); err != nil {
		return err.Error()
	}
	return b.String()
}

// A write through the graphstore API whose claim records another relation than the rule gives
// is refused, whatever the API allows: no write leaves two live claims of one key.
func TestWriteJudgesRelations(t *testing.T) {
	ctx := context.Background()
	s := mustOpenMemory(t)
	num := func(n float64) record.Value { return record.Value{Type: record.Number, Num: n} }
	write := func(c *record.Claim) error {
		_, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
			tx.Claims = []*record.Claim{c}
			return nil
		})
		return err
	}
	k := record.Key{Subject: "K", Predicate: "p"}
	id := func(v int) *record.ClaimID { return &record.ClaimID{Key: k, Version: v} }
	if err := write(&record.Claim{ID: *id(1), Value: num(1), By: "owner", Kind: record.Observed, Confidence: 1}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		claim *record.Claim
		want  string
	}{
		{"live with a live claim before it", &record.Claim{ID: *id(2), Value: num(2), By: "owner", Kind: record.Observed, Confidence: 1},
			"is recorded as a claim that is live with no live claim before it, where the rule says it supersedes the live claim"},
		{"contesting at an equal rank", &record.Claim{ID: *id(2), Value: num(2), By: "owner", Kind: record.Observed, Confidence: 1, Contests: id(1)},
			"where the rule says it supersedes the live claim"},
		{"superseding at a lower rank", &record.Claim{ID: *id(2), Value: num(2), By: "owner", Kind: record.Inferred, Confidence: 1, Supersedes: id(1)},
			"where the rule says it contests the live claim"},
	} {
		err := write(c.claim)
		if err == nil || !errors.Is(err, index.ErrInvalid) || errors.Is(err, ErrStorage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := write(&record.Claim{ID: *id(2), Value: num(2), By: "owner", Kind: record.Observed, Confidence: 1, Supersedes: id(1)}); err != nil {
		t.Fatalf("the claim as the rule records it: %v", err)
	}
	if r, err := s.Check(ctx, CheckOptions{}); err != nil || !r.OK() {
		t.Fatalf("check: %v %+v", err, r)
	}
}
