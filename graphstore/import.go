package graphstore

// Import creates a store from an N-Quads export, exactly: the file's genesis (its owner,
// strict flag and time) becomes the store's, every transaction keeps its id and time, and an
// export of the new store is byte-identical to the file it came from (when that file was
// written by an export). It streams: each transaction is read, checked against everything
// before it (the same checker `mql check` runs, plus the caller's rules), and written before
// the next is read, so its memory is bounded by the largest transaction and the checker's
// compact state, not by the file. Nothing is visible until everything was checked: a bbolt
// store is written to a temporary file and moved into place at the end; a PostgreSQL store is
// written in one transaction at the end.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cayleygraph/quad"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// ImportSummary says what an import created.
type ImportSummary struct {
	Transactions int
	Claims       int
	Quads        int
}

// importBatchQuads is how many quads a bbolt import writes per Cayley transaction. Each quad
// lands on random pages of several B+trees, which stay mapped into the process until the batch
// is committed and dropMapped releases them: at a million claims, batches of 16k quads kept
// about 600 MB of the file mapped. At 100k claims batches of 4k were no slower than of 16k.
const importBatchQuads = 4 << 10

// ImportStore creates the store named by dsn (see Open) from an N-Quads export read from r.
// The store must not exist yet: a bbolt file must not exist (not even as an empty store), and
// a PostgreSQL database must hold no quads; otherwise the error wraps ErrNotEmpty. "memory:"
// is checked and written, then gone (an import that only checks the file).
//
// Every transaction must be what an export writes: its quads together in its graph, ids from
// the genesis (tx 1) on without gaps, times that never go backwards, and everything `mql check`
// checks, plus copts.Rules. A file that fails is refused with an *ImportError (wrapping
// ErrBadImport) naming the line of the first problem, and the store is not created: on any
// failure, an interrupt (ctx) included, the target is left as it was.
func ImportStore(ctx context.Context, dsn string, r io.Reader, opts Options, copts CheckOptions) (ImportSummary, error) {
	if err := ctx.Err(); err != nil {
		return ImportSummary{}, err
	}
	standalone(&opts, &copts)
	switch {
	case dsn == "memory:" || dsn == "memory":
		b := openMemory()
		defer b.close()
		return importTxs(ctx, r, copts, func(_ *record.Tx, quads []quad.Quad) error { return b.apply(ctx, quads) }, nil)
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		return importPostgres(ctx, dsn, r, opts, copts)
	}
	if path, ok := bboltPath(dsn); ok {
		return importBBolt(ctx, path, r, opts, copts)
	}
	_, err := openBackend(ctx, dsn, opts) // names what is wrong with the DSN
	if err == nil {
		err = fmt.Errorf("cannot import into %q: %w", dsn, ErrBadDSN)
	}
	return ImportSummary{}, err
}

// importTxs reads transactions from r, checks each one, and hands it (with its canonical
// quads) to emit. flush, if set, is called when the file ended and everything checked out.
func importTxs(ctx context.Context, r io.Reader, opts CheckOptions, emit func(tx *record.Tx, quads []quad.Quad) error, flush func() error) (ImportSummary, error) {
	var sum ImportSummary
	c := newChecker(opts)
	tr := newTxReader(newQuadReader(r), 1)
	for {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		g, err := tr.read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sum, err
		}
		before := len(c.r.Problems)
		tx, quads := c.addTx(g.id, g.quads)
		if len(c.r.Problems) > before {
			return sum, problemAt(c.r.Problems[before], g)
		}
		if err := emit(tx, quads); err != nil {
			return sum, err
		}
		sum.Transactions++
		sum.Claims += len(tx.Claims)
		sum.Quads += len(quads)
	}
	if sum.Transactions == 0 {
		return sum, &ImportError{Msg: "the file holds no transactions; an export starts with the genesis, tx 1"}
	}
	if rep := c.finish(); !rep.OK() {
		p := rep.Problems[0]
		more := ""
		if n := len(rep.Problems) + rep.Omitted - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more problems)", n)
		}
		return sum, &ImportError{Tx: p.Tx, Kind: p.Kind, Msg: p.String() + more + "; judged after the last transaction"}
	}
	if flush != nil {
		if err := flush(); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// problemAt is a problem the check found in transaction g, at the line of the quad or record
// it is about.
func problemAt(p Problem, g *txGroup) error {
	line := g.lines[0]
	switch {
	case p.quad != nil:
		line = g.lineOf(*p.quad)
	case p.Node != "":
		line = g.lineOfSubject(quad.IRI(p.Node))
	}
	msg := p.Msg
	if p.Node != "" {
		msg = p.Node + ": " + msg
	}
	if p.Tx > 0 {
		msg = fmt.Sprintf("tx %d: %s", p.Tx, msg)
	}
	return &ImportError{Line: line, Tx: p.Tx, Kind: p.Kind, Msg: msg}
}

// importBBolt writes the store into a temporary file beside path and links it into place
// only when every transaction was checked and written, so that path never holds a part of it.
func importBBolt(ctx context.Context, path string, r io.Reader, opts Options, copts CheckOptions) (ImportSummary, error) {
	if _, err := os.Lstat(path); err == nil {
		return ImportSummary{}, fmt.Errorf("import into %s: %w: the file exists, and an import creates a new store: name a file that does not exist", path, ErrNotEmpty)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return ImportSummary{}, fmt.Errorf("import into %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	removeStaleImports(dir, filepath.Base(path))
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".import-*")
	if err != nil {
		return ImportSummary{}, fmt.Errorf("import into %s: %w", path, err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(tmpPath)
		}
	}()
	// No sync per batch: the file is invisible until the end, which syncs once.
	be := &bboltBackend{path: tmpPath, timeout: opts.OpenTimeout, noSync: true}
	if err := be.open(); err != nil {
		return ImportSummary{}, err
	}
	defer be.close()

	var pending []quad.Quad
	var chunk []*record.Tx
	chunkClaims := 0
	writeQuads := func() error {
		if len(pending) == 0 {
			return nil
		}
		if err := be.apply(ctx, pending); err != nil {
			return storageErr("writing the imported store", err)
		}
		dropMapped(be.db)
		clear(pending)
		pending = pending[:0]
		return nil
	}
	// The snapshot is written as a store writes it: chunks of committed transactions, so that
	// the first open of the new store does not scan its quads.
	writeChunk := func() error {
		if len(chunk) == 0 {
			return nil
		}
		if err := writeQuads(); err != nil {
			return err
		}
		data, err := encodeChunk(chunk)
		if err == nil {
			err = be.appendSnapshot(ctx, []snapshotChunk{{first: chunk[0].ID, data: data}})
		}
		if err != nil {
			return storageErr("writing the snapshot", err)
		}
		clear(chunk)
		chunk, chunkClaims = chunk[:0], 0
		return nil
	}
	emit := func(tx *record.Tx, quads []quad.Quad) error {
		// A large transaction is written in several batches too: the file is invisible until
		// the end, so batches need not follow transactions, and one batch of a 1,000-claim
		// transaction (~20k quads) kept over 600 MB of the file mapped at a million claims.
		for len(quads) > 0 {
			n := min(len(quads), importBatchQuads-len(pending))
			pending = append(pending, quads[:n]...)
			quads = quads[n:]
			if len(pending) >= importBatchQuads {
				if err := writeQuads(); err != nil {
					return err
				}
			}
		}
		chunk = append(chunk, tx)
		chunkClaims += len(tx.Claims)
		if len(chunk) >= snapshotEveryTxs || chunkClaims >= snapshotEveryClaims {
			return writeChunk()
		}
		return nil
	}
	sum, err := importTxs(ctx, r, copts, emit, writeChunk)
	if err != nil {
		return sum, err
	}
	if err := be.db.Sync(); err != nil {
		return sum, storageErr("syncing the imported store", err)
	}
	if err := be.close(); err != nil {
		return sum, storageErr("closing the imported store", err)
	}
	if err := ctx.Err(); err != nil {
		return sum, err
	}
	// A link never replaces a file created meanwhile; a rename would.
	if err := os.Link(tmpPath, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return sum, fmt.Errorf("import into %s: %w: the file was created while importing; nothing was replaced", path, ErrNotEmpty)
		}
		if _, serr := os.Lstat(path); !errors.Is(serr, fs.ErrNotExist) {
			return sum, fmt.Errorf("import into %s: %w", path, err)
		}
		if err := os.Rename(tmpPath, path); err != nil { // a file system without hard links
			return sum, fmt.Errorf("import into %s: %w", path, err)
		}
	}
	done = true
	os.Remove(tmpPath)
	syncDir(dir)
	return sum, nil
}

// removeStaleImports removes the temporary files that imports into dir/base killed before they
// could clean up left behind. A running import holds its file's bbolt lock; a file whose lock
// can be taken is stale.
func removeStaleImports(dir, base string) {
	stale, _ := filepath.Glob(filepath.Join(dir, "."+base+".import-*"))
	for _, p := range stale {
		db, err := bolt.Open(p, 0o600, &bolt.Options{ReadOnly: true, Timeout: 10 * time.Millisecond})
		if errors.Is(err, berrors.ErrTimeout) {
			continue // an import in progress
		}
		if err == nil {
			db.Close()
		}
		os.Remove(p)
	}
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// importPostgres checks the whole file, holding its quads, then writes them (creating the
// schema if the database has none) in one write transaction under the writer lock, so that no
// other process creates a genesis meanwhile: it commits whole or not at all. The file is read
// before the lock is taken, because a writer silent for WriteIdleTimeout while it holds the
// lock loses it.
func importPostgres(ctx context.Context, dsn string, r io.Reader, opts Options, copts CheckOptions) (ImportSummary, error) {
	b, err := openPostgres(ctx, dsn, false, opts.WriteLockTimeout, opts.WriteIdleTimeout)
	if err != nil {
		return ImportSummary{}, err
	}
	defer b.close()
	notEmpty := func(q queryer) error {
		if !b.schema {
			return nil
		}
		var n int64
		if err := q.QueryRowContext(ctx, `SELECT count(*) FROM quads`).Scan(&n); err != nil {
			return storageErr("reading the database", err)
		}
		if n > 0 {
			return fmt.Errorf("import into %s: %w: it holds a store (%d quads); an import creates a new store: name an empty database", RedactDSN(dsn), ErrNotEmpty, n)
		}
		return nil
	}
	if err := notEmpty(b.db); err != nil { // before reading a large file for nothing
		return ImportSummary{}, err
	}
	var all []quad.Quad
	var txs []*record.Tx
	sum, err := importTxs(ctx, r, copts, func(tx *record.Tx, quads []quad.Quad) error {
		all = append(all, quads...)
		txs = append(txs, tx)
		return nil
	}, nil)
	if err != nil {
		return sum, err
	}
	unlock, err := b.lockWriters(ctx)
	if err != nil {
		return sum, err
	}
	defer unlock()
	if err := notEmpty(b.w.tx); err != nil { // someone may have written since
		return sum, err
	}
	// The log gets every transaction, so that the first process to open the store reads it
	// rather than the quads. The store is empty: there is no history before the import.
	noHistory := func(from, to record.TxID) []*record.Tx { return nil }
	if err := b.applyLogged(ctx, all, txs, noHistory); err != nil {
		return sum, fmt.Errorf("import into %s failed and nothing was written: %w", RedactDSN(dsn), err)
	}
	b.db.ExecContext(ctx, `ANALYZE quads; ANALYZE nodes`) // Cayley's planner counts rows
	return sum, nil
}

// Import replaces a new memory: store with the store an export describes, exactly (its
// genesis too), streaming and checking it as ImportStore does. The store must hold only its
// genesis (else ErrNotEmpty). A file or database store is created by ImportStore instead: its
// genesis is on disk, and an import never rewrites what a store holds, so Import refuses them
// with ErrNotEmpty. A refused import changes nothing.
func (s *Store) Import(ctx context.Context, r io.Reader, opts CheckOptions) (ImportSummary, error) {
	if err := ctx.Err(); err != nil {
		return ImportSummary{}, err
	}
	if err := s.enter(); err != nil {
		return ImportSummary{}, err
	}
	defer s.leave()
	mem, ok := s.be.(*memoryBackend)
	if !ok {
		return ImportSummary{}, fmt.Errorf("import: %w: this %s store exists with its own genesis, and an import creates a store: run `mql import FILE NEWDB`", ErrNotEmpty, s.be.kind())
	}
	if opts.Now.IsZero() {
		opts.Now = s.clock()
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.imu.Lock()
	defer s.imu.Unlock()
	if head := s.chain.Head(); head != 1 {
		return ImportSummary{}, fmt.Errorf("import: %w: it holds %d transactions; import only into a new store", ErrNotEmpty, head)
	}
	fresh := openMemory()
	ix := index.New()
	sum, err := importTxs(ctx, r, opts, func(tx *record.Tx, quads []quad.Quad) error {
		if err := addToIndex(ix, tx); err != nil {
			return &ImportError{Tx: tx.ID, Msg: err.Error()}
		}
		return fresh.apply(ctx, quads)
	}, nil)
	if err != nil {
		fresh.close()
		return sum, err
	}
	mem.mu.Lock()
	old := mem.qs
	mem.qs = fresh.qs
	mem.mu.Unlock()
	old.Close()
	s.ix.Lock()
	s.ix.Replace(ix)
	s.ix.Unlock()
	return sum, nil
}
