package graphstore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/quad"
	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// genExport writes a sound export of n claims, perTx to a transaction, without building a
// store: every key gets two versions (the second supersedes the first), every claim its own
// source. Its own memory does not grow with n.
func genExport(w io.Writer, n, perTx int) error {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := record.TxID(0)
	emit := func(tx *record.Tx) error {
		id++
		tx.ID, tx.Time = id, t0.Add(time.Duration(id)*time.Second)
		return codec.WriteNQuads(w, []*record.Tx{tx})
	}
	if err := emit(&record.Tx{By: "owner", Meta: &record.StoreMeta{Owner: "owner"}, Principals: []*record.Principal{{Name: "owner", Type: record.User, Tx: 1}}}); err != nil {
		return err
	}
	if err := emit(&record.Tx{By: "owner", Principals: []*record.Principal{{Name: "a1", Type: record.Agent, Tx: 2}}}); err != nil {
		return err
	}
	for j := 0; j < n; {
		tx := &record.Tx{By: "a1"}
		next := id + 1
		for ; j < n && len(tx.Claims) < perTx; j++ {
			c := &record.Claim{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("S%d", j/2), Predicate: "p"}, Version: j%2 + 1},
				Value: record.Value{Type: record.Number, Num: float64(j)}, By: "a1", Kind: record.Observed, Confidence: 1, Tx: next,
				Sources: []string{fmt.Sprintf("s%d", j)}}
			if c.ID.Version == 2 {
				c.Supersedes = &record.ClaimID{Key: c.ID.Key, Version: 1}
			}
			tx.Sources = append(tx.Sources, &record.Source{ID: c.Sources[0], URI: "https://example.com/" + c.ID.Subject, Tx: next})
			tx.Claims = append(tx.Claims, c)
		}
		if err := emit(tx); err != nil {
			return err
		}
	}
	return nil
}

func sampleExportText(t *testing.T) string {
	t.Helper()
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	s := mustOpen(t, "memory:", Options{Clock: func() time.Time { at = at.Add(time.Minute); return at }})
	defer s.Close()
	writeSample(t, s)
	var b bytes.Buffer
	if err := codec.WriteNQuads(&b, txsOf(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// dirEntries lists what is in dir (an import leaves nothing behind when it fails).
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func wantImportError(t *testing.T, err error, line int, msg string) {
	t.Helper()
	var ie *ImportError
	if !errors.As(err, &ie) || !errors.Is(err, ErrBadImport) {
		t.Fatalf("got %v, want an *ImportError", err)
	}
	if ie.Line != line || !strings.Contains(err.Error(), msg) {
		t.Fatalf("got %v, want line %d and %q", err, line, msg)
	}
}

// The quads of a transaction must be together, transactions in order: a file that
// interleaves them is refused at the line where it does, and nothing is created.
func TestImportInterleaved(t *testing.T) {
	lines := strings.SplitAfter(sampleExportText(t), "\n")
	var tx3, tx4 []int
	for i, l := range lines {
		if strings.HasSuffix(l, "<urn:mql:tx:3> .\n") {
			tx3 = append(tx3, i)
		}
		if strings.HasSuffix(l, "<urn:mql:tx:4> .\n") {
			tx4 = append(tx4, i)
		}
	}
	repeated := func(from, after int) (string, int) {
		var out []string
		at := 0
		for i, l := range lines {
			out = append(out, l)
			if i == after {
				out = append(out, lines[from])
				at = len(out)
			}
		}
		return strings.Join(out, ""), at
	}
	// A quad of tx 3 repeated after the last quad of tx 4.
	mixed, at := repeated(tx3[2], tx4[len(tx4)-1])
	// Tx 4, with its comment line, before tx 3.
	var swapped []string
	swapped = append(swapped, lines[:tx3[0]-1]...)
	swapped = append(swapped, lines[tx4[0]-1:tx4[len(tx4)-1]+1]...)
	swapped = append(swapped, lines[tx3[0]-1:tx3[len(tx3)-1]+1]...)
	swapped = append(swapped, lines[tx4[len(tx4)-1]+1:]...)
	cases := []struct {
		name, text string
		line       int
		msg        string
	}{
		{"a quad of tx 3 among tx 4's", mixed, at, "a quad of tx 3 after the quads of tx 4"},
		{"tx 4 before tx 3", strings.Join(swapped, ""), tx3[0] + 1, "transaction ids jump from 2 to 4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := ImportStore(context.Background(), filepath.Join(dir, "x.db"), strings.NewReader(tc.text), Options{}, CheckOptions{})
			wantImportError(t, err, tc.line, tc.msg)
			if got := dirEntries(t, dir); len(got) != 0 {
				t.Fatalf("a refused import left %v", got)
			}
			if _, err := ReadNQuads(strings.NewReader(tc.text)); !errors.Is(err, ErrBadImport) || !strings.Contains(err.Error(), fmt.Sprintf("line %d: ", tc.line)) {
				t.Fatalf("ReadNQuads: %v", err)
			}
		})
	}
}

// A refused import leaves no store behind (the target absent, no temporary file), so a
// correct import into the same path then succeeds; an existing file, even an empty one, is
// never imported into.
func TestImportTarget(t *testing.T) {
	ctx := context.Background()
	good := sampleExportText(t)
	bad := strings.Replace(good, `<urn:mql:kind> "inferred"`, `<urn:mql:kind> "guessed"`, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "new.db")
	_, err := ImportStore(ctx, path, strings.NewReader(bad), Options{}, CheckOptions{})
	if !errors.Is(err, ErrBadImport) || !strings.Contains(err.Error(), `unknown kind "guessed"`) {
		t.Fatalf("bad file: %v", err)
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Fatalf("a refused import left %v", got)
	}
	sum, err := ImportStore(ctx, path, strings.NewReader(good), Options{}, CheckOptions{})
	if err != nil {
		t.Fatalf("a correct import after a refused one: %v", err)
	}
	if sum.Transactions != 7 || sum.Claims != 7 {
		t.Errorf("summary %+v", sum)
	}
	if got := dirEntries(t, dir); len(got) != 1 || got[0] != "new.db" {
		t.Fatalf("the directory holds %v", got)
	}
	// The new store is exact, and sound: its records and every index entry are the ones the
	// check's replay gives.
	s := mustOpen(t, path, Options{MustExist: true})
	var again bytes.Buffer
	if err := codec.WriteNQuads(&again, txsOf(s)); err != nil || again.String() != good {
		t.Fatalf("export of the import differs from the file (%v)", err)
	}
	if s.Created() {
		t.Error("opening the imported store created it")
	}
	s.Close()
	if r, err := CheckDSN(ctx, path, Options{}, CheckOptions{}); err != nil || !r.OK() {
		t.Fatalf("check of the imported store: %v %+v", err, r)
	}
	// An existing store, or an existing empty file, is refused and left as it was.
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, empty} {
		before, _ := os.ReadFile(p)
		_, err := ImportStore(ctx, "bbolt:"+p, strings.NewReader(good), Options{}, CheckOptions{})
		if !errors.Is(err, ErrNotEmpty) || !strings.Contains(err.Error(), "the file exists") {
			t.Fatalf("import into existing %s: %v", p, err)
		}
		if after, _ := os.ReadFile(p); !bytes.Equal(before, after) {
			t.Fatalf("a refused import changed %s", p)
		}
	}
	if got := dirEntries(t, dir); len(got) != 2 {
		t.Fatalf("the directory holds %v", got)
	}
}

// A temporary file left by an import that was killed is removed by the next import into the
// same path; one that a running import holds is not.
func TestImportRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, ".x.db.import-1")
	if err := os.WriteFile(stale, []byte("half an import"), 0o600); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(dir, ".x.db.import-2")
	held, err := bolt.Open(live, 0o600, nil) // holds the file's lock, as a running import does
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := ImportStore(context.Background(), filepath.Join(dir, "x.db"), strings.NewReader(sampleExportText(t)), Options{}, CheckOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(dirEntries(t, dir), " "); got != ".x.db.import-2 x.db" {
		t.Fatalf("the directory holds %s", got)
	}
}

// cancelAfter cancels its context once n bytes were read through it.
type cancelAfter struct {
	r      io.Reader
	n      int
	cancel func()
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= n; c.n <= 0 {
		c.cancel()
	}
	return n, err
}

// An import interrupted midway (its context cancelled) creates nothing.
func TestImportInterrupted(t *testing.T) {
	var exp bytes.Buffer
	if err := genExport(&exp, 3000, 20); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			dir := t.TempDir()
			dsn := filepath.Join(dir, "x.db")
			if backend == "postgres" {
				dsn = newPGDatabase(t)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r := &cancelAfter{r: bytes.NewReader(exp.Bytes()), n: exp.Len() / 2, cancel: cancel}
			if _, err := ImportStore(ctx, dsn, r, Options{}, CheckOptions{}); !errors.Is(err, context.Canceled) {
				t.Fatalf("interrupted import: %v", err)
			}
			if backend == "bbolt" {
				if got := dirEntries(t, dir); len(got) != 0 {
					t.Fatalf("an interrupted import left %v", got)
				}
				return
			}
			if has, err := pgHasSchema(t, dsn); err != nil || has {
				t.Fatalf("an interrupted import left tables (%v)", err)
			}
		})
	}
}

// pgHasSchema reports whether the database holds any of mql's tables (mql_<bucket>, see
// docs/FORMAT.md).
func pgHasSchema(t *testing.T, dsn string) (bool, error) {
	t.Helper()
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return false, err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(context.Background(), `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name LIKE 'mql\_%'`).Scan(&n)
	return n > 0, err
}

// PostgreSQL: an import creates the store in an empty database, exactly; a database that
// holds a store is refused; a refused import leaves no tables.
func TestImportPostgres(t *testing.T) {
	ctx := context.Background()
	good := sampleExportText(t)
	dsn := newPGDatabase(t)
	bad := strings.Replace(good, "<urn:mql:principal:alice> <urn:mql:principalType>", "<urn:mql:principal:alice> <urn:mql:kindOf>", 1)
	if _, err := ImportStore(ctx, dsn, strings.NewReader(bad), Options{}, CheckOptions{}); !errors.Is(err, ErrBadImport) {
		t.Fatalf("bad file: %v", err)
	}
	if has, err := pgHasSchema(t, dsn); err != nil || has {
		t.Fatalf("a refused import left tables (%v)", err)
	}
	if _, err := ImportStore(ctx, dsn, strings.NewReader(good), Options{}, CheckOptions{}); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, dsn, Options{})
	defer s.Close()
	var again bytes.Buffer
	if err := codec.WriteNQuads(&again, txsOf(s)); err != nil || again.String() != good {
		t.Fatalf("export of the import differs from the file (%v)", err)
	}
	if _, err := ImportStore(ctx, dsn, strings.NewReader(good), Options{}, CheckOptions{}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("import into a database holding a store: %v", err)
	}
	// A database opened by mql holds its genesis: it is not new either.
	other := newPGDatabase(t)
	mustOpen(t, other, Options{}).Close()
	if _, err := ImportStore(ctx, other, strings.NewReader(good), Options{}, CheckOptions{}); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("import into an opened database: %v", err)
	}
}

// A transaction whose time goes backwards, or that names a principal recorded only later
// (here as seen-by), is refused with its line; the store can then be imported as it was.
func TestImportRefusesTimeAndLaterPrincipals(t *testing.T) {
	good := sampleExportText(t)
	lines := strings.SplitAfter(good, "\n")
	find := func(substr string) int {
		for i, l := range lines {
			if strings.Contains(l, substr) {
				return i
			}
		}
		t.Fatalf("no line holds %s", substr)
		return 0
	}
	edit := func(i int, with ...string) string {
		out := append(append(append([]string(nil), lines[:i]...), with...), lines[i+1:]...)
		return strings.Join(out, "")
	}
	timeLine := find("<urn:mql:tx:4> <http://www.w3.org/ns/prov#endedAtTime>")
	backwards := edit(timeLine, `<urn:mql:tx:4> <http://www.w3.org/ns/prov#endedAtTime> "2001-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:mql:tx:4> .`+"\n")
	// Klarveld.soc2@1 (tx 3) becomes seen by a principal recorded in a new last transaction.
	ord := find("<urn:mql:claim:Klarveld.soc2@1> <urn:mql:ord>")
	ghost := edit(ord, lines[ord], "<urn:mql:claim:Klarveld.soc2@1> <urn:mql:seenBy> <urn:mql:principal:ghost> <urn:mql:tx:3> .\n") +
		exportOf(t, []*record.Tx{{ID: 8, Time: time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC), By: "owner", Principals: []*record.Principal{{Name: "ghost", Type: record.Agent, Tx: 8}}}})
	cases := []struct {
		name, text string
		line       int
		msg        string
	}{
		{"time going backwards", backwards, timeLine + 1, "transaction: tx 4: urn:mql:tx:4: its time 2001-01-01T00:00:00Z is before tx 3's"},
		{"seen by a principal recorded later", ghost, ord + 2, "reference: tx 3: urn:mql:claim:Klarveld.soc2@1: its seen-by principal <urn:mql:principal:ghost> is not recorded before it"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := ImportStore(context.Background(), filepath.Join(dir, "x.db"), strings.NewReader(tc.text), Options{}, CheckOptions{})
			wantImportError(t, err, tc.line, tc.msg)
			if got := dirEntries(t, dir); len(got) != 0 {
				t.Fatalf("a refused import left %v", got)
			}
		})
	}
}

// Writers never stamp a transaction before the previous one, whatever the clock says.
func TestWriteTimeNeverGoesBack(t *testing.T) {
	at := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { at = at.Add(-time.Hour); return at } // a clock stepped back at every reading
	s := mustOpen(t, filepath.Join(t.TempDir(), "x.db"), Options{Clock: clock})
	defer s.Close()
	for i := range 3 {
		if _, err := s.Write(context.Background(), "owner", countingClaim(fmt.Sprintf("C%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	txs := txsOf(s)
	for i := 1; i < len(txs); i++ {
		if txs[i].Time.Before(txs[i-1].Time) {
			t.Fatalf("tx %d at %s, before tx %d at %s", txs[i].ID, txs[i].Time, txs[i-1].ID, txs[i-1].Time)
		}
	}
	if r, err := s.Check(context.Background(), CheckOptions{}); err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r.Problems)
	}
}

// heapLive is the live heap as of the last garbage collection.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// An import streams: it holds the transaction it reads and the checker's state (the index it
// applies the transactions to, on disk), never the file. The test imports generated exports of
// n and 4n claims through the whole pipeline (reading, grouping, checking, encoding) into a
// scratch store, sampling the live heap after each transaction, and checks that the peak
// grows by less than 1 KiB per added claim — the file grows by about 1,700 bytes per claim,
// and holding its quads (as ReadNQuads does) costs several kilobytes per claim.
func TestImportStreamsInBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(25)) // collect often, so that samples see the live heap
	peak := func(n int) (peakLive uint64, fileBytes int) {
		pr, pw := io.Pipe()
		counted := &countingReader{r: pr}
		go func() { pw.CloseWithError(genExport(pw, n, 200)) }()
		runtime.GC()
		base := heapLive()
		peakLive = base
		sc, err := newScratch() // the checker's state: its index, in a file
		if err != nil {
			t.Fatal(err)
		}
		defer sc.close()
		sum, err := importTxs(context.Background(), counted, CheckOptions{Now: time.Now()}, sampledSink{sc, func() {
			peakLive = max(peakLive, heapLive())
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if sum.Claims != n {
			t.Fatalf("%d claims imported, want %d", sum.Claims, n)
		}
		return peakLive - base, counted.n
	}
	const n = 2000
	small, _ := peak(n)
	large, file := peak(4 * n)
	perClaim := float64(int64(large)-int64(small)) / float64(3*n)
	t.Logf("peak live heap: %d KiB for %d claims, %d KiB for %d (%.0f bytes per added claim); the file of %d claims is %d KiB (%.0f bytes per claim)",
		small>>10, n, large>>10, 4*n, perClaim, 4*n, file>>10, float64(file)/float64(4*n))
	if perClaim > 1024 {
		t.Fatalf("the import holds %.0f bytes per claim: it does not stream", perClaim)
	}
}

// sampledSink applies transactions to a scratch store, calling sample after each.
type sampledSink struct {
	*scratch
	sample func()
}

func (s sampledSink) add(tx *record.Tx, quads []quad.Quad) error {
	err := s.scratch.add(tx, quads)
	s.sample()
	return err
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestImportSplitsLargeTransactions: an import writes in batches, and a transaction larger
// than a batch (here 6,000 claims with their sources, beside small ones) is imported exactly,
// whatever the batching: the store reopened from the file exports to the same bytes, holds as
// many quads as the file, and the check (records and every index entry) finds nothing wrong.
func TestImportSplitsLargeTransactions(t *testing.T) {
	var file bytes.Buffer
	if err := genExport(&file, 6000, 6000); err != nil {
		t.Fatal(err)
	}
	// Small transactions after the large one: the batches after it go on from where it ended.
	small := exportOf(t, []*record.Tx{
		{ID: 4, Time: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), By: "owner", Principals: []*record.Principal{{Name: "a2", Type: record.Agent, Tx: 4}}},
		{ID: 5, Time: time.Date(2027, 1, 1, 0, 0, 1, 0, time.UTC), By: "a1", Claims: []*record.Claim{{ID: record.ClaimID{Key: record.Key{Subject: "S0", Predicate: "p"}, Version: 3},
			Value: record.Value{Type: record.Number, Num: -1}, By: "a1", Kind: record.Observed, Confidence: 1, Supersedes: &record.ClaimID{Key: record.Key{Subject: "S0", Predicate: "p"}, Version: 2}, Tx: 5}}},
	})
	file.WriteString(small)
	quads := 0
	for _, line := range strings.Split(file.String(), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			quads++
		}
	}
	path := filepath.Join(t.TempDir(), "big.db")
	ctx := context.Background()
	sum, err := ImportStore(ctx, path, bytes.NewReader(file.Bytes()), Options{}, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Transactions != 5 || sum.Claims != 6001 || sum.Quads != quads {
		t.Fatalf("summary %+v, want 5 transactions, 6001 claims, %d quads", sum, quads)
	}
	s := mustOpen(t, path, Options{MustExist: true})
	defer s.Close()
	var again bytes.Buffer
	if err := codec.WriteNQuads(&again, txsOf(s)); err != nil || again.String() != file.String() {
		t.Fatalf("the records of the imported store differ from the file (%v)", err)
	}
	if n, err := s.QuadCount(ctx); err != nil || n != int64(quads) {
		t.Fatalf("the store holds %d quads (%v), the file %d", n, err, quads)
	}
	r, err := s.Check(ctx, CheckOptions{})
	if err != nil || !r.OK() {
		t.Fatalf("check: %v %v", err, r)
	}
	if r.Claims != 6001 || r.Keys != 3000 {
		t.Fatalf("the check counts %d claims of %d keys, want 6001 of 3000", r.Claims, r.Keys)
	}
}

// A refused import returns as soon as it found the problem, and leaves nothing behind.
func TestImportRefusedPromptly(t *testing.T) {
	good := sampleExportText(t)
	bad := strings.Replace(good, `<urn:mql:kind> "inferred"`, `<urn:mql:kind> "guessed"`, 1)
	dir := t.TempDir()
	start := time.Now()
	_, err := ImportStore(context.Background(), filepath.Join(dir, "x.db"), strings.NewReader(bad), Options{}, CheckOptions{})
	took := time.Since(start)
	if !errors.Is(err, ErrBadImport) {
		t.Fatalf("bad file: %v", err)
	}
	if took > 2*time.Second {
		t.Errorf("the refused import took %s", took.Round(time.Millisecond))
	}
	if got := dirEntries(t, dir); len(got) != 0 {
		t.Fatalf("a refused import left %v", got)
	}
}
