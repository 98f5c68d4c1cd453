package graphstore

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/graphstore/record/recordtest"
	"github.com/mql-dev/mql/internal/pgtest"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cayleygraph/quad"
	_ "github.com/lib/pq"
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

func txsOf(s *Store) []*record.Tx {
	ix := s.Index()
	ix.RLock()
	defer ix.RUnlock()
	return append([]*record.Tx(nil), ix.Txs()...)
}

func head(s *Store) record.TxID {
	ix := s.Index()
	ix.RLock()
	defer ix.RUnlock()
	return ix.Head()
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
		if m := s.Index().Meta(); m.Owner != "boss" || !m.Strict {
			t.Fatalf("meta after reopen %+v", m)
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

// failingBackend makes apply fail on demand, to test what Store does when Cayley fails.
type failingBackend struct {
	backend
	fail    bool
	reopens int
}

func (f *failingBackend) apply(ctx context.Context, q []quad.Quad) error {
	if f.fail {
		f.fail = false
		return errors.New("injected failure")
	}
	return f.backend.apply(ctx, q)
}

func (f *failingBackend) reopen(ctx context.Context) error {
	f.reopens++
	return f.backend.reopen(ctx)
}

func TestApplyFailure(t *testing.T) {
	eachBackend(t, func(t *testing.T, bc backendCase) {
		ctx := context.Background()
		s := mustOpen(t, bc.newDSN(t), Options{})
		defer s.Close()
		fb := &failingBackend{backend: s.be}
		s.be = fb
		writeSample(t, s)
		n, h := quadCount(t, s), head(s)
		fb.fail = true
		_, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
			tx.Principals = []*record.Principal{{Name: "bob", Type: record.User}}
			return nil
		})
		if !errors.Is(err, ErrStorage) {
			t.Fatalf("failed apply: %v", err)
		}
		if quadCount(t, s) != n || head(s) != h || fb.reopens != 0 {
			t.Fatal("failed apply changed the store or reopened too early")
		}
		tx, err := s.Write(ctx, "owner", func(_ *index.Index, tx *record.Tx) error {
			tx.Principals = []*record.Principal{{Name: "bob", Type: record.User}}
			return nil
		})
		if err != nil || tx.ID != h+1 || fb.reopens != 1 {
			t.Fatalf("write after failure: %v %v, %d reopens", tx, err, fb.reopens)
		}
		if got := txsOf(s); got[len(got)-1] != tx {
			t.Fatal("index does not end with the new tx")
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
	})
}

// countingClaim writes version `version` of subject.n whose value is the number of claims the
// index held when build ran: with serialised writers, exactly the claims of all earlier txs.
func countingClaim(subject string, version int) func(ix *index.Index, tx *record.Tx) error {
	return func(ix *index.Index, tx *record.Tx) error {
		n := 0
		for _, t := range ix.Txs() {
			n += len(t.Claims)
		}
		tx.Claims = []*record.Claim{{ID: record.ClaimID{Key: record.Key{Subject: subject, Predicate: "n"}, Version: version},
			Value: record.Value{Type: record.Number, Num: float64(n)}, By: "owner", Kind: record.Inferred, Confidence: 1}}
		return nil
	}
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
