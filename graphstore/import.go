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
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// ImportSummary says what an import created.
type ImportSummary struct {
	Transactions int
	Claims       int
	Quads        int
}

// ImportStore creates the store named by dsn (see Open) from an N-Quads export read from r.
// The store must not exist yet: a bbolt file must not exist (not even as an empty store), and
// a PostgreSQL database must hold no quads; otherwise the error wraps ErrNotEmpty. "memory:"
// is checked and written, then gone (an import that only checks the file).
//
// Every transaction must be what an export writes: its quads together in its graph, ids from
// the genesis (tx 1) on without gaps, times that never go backwards, and everything `mql check`
// checks, plus copts.Rules. A file that fails is refused with an *ImportError (wrapping
// ErrBadImport) naming the line of the first problem, and the store is not created: on any
// failure, an interrupt (ctx) included, the target is left as it was. It reads r one
// transaction ahead of the one it checks, and never after it returned.
func ImportStore(ctx context.Context, dsn string, r io.Reader, opts Options, copts CheckOptions) (ImportSummary, error) {
	if err := ctx.Err(); err != nil {
		return ImportSummary{}, err
	}
	standalone(&opts, &copts)
	switch {
	case dsn == "memory:" || dsn == "memory":
		b := openMemory()
		defer b.close()
		w := &kvImporter{kv: b.kv(), vectors: opts.VectorIndex}
		defer w.abort()
		return importTxs(ctx, r, copts, w, w.flush)
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

// importTxs reads transactions from r, checks each one, and applies it (with its canonical
// quads) to sink, whose index is what the checker checks the next one against. flush, if set,
// is called when the file ended and everything checked out.
func importTxs(ctx context.Context, r io.Reader, opts CheckOptions, sink indexSink, flush func() error) (ImportSummary, error) {
	var sum ImportSummary
	c := newChecker(opts, sink)
	if w, ok := sink.(*kvImporter); ok {
		c.tick = w.committed // a bbolt file's releaser
	}
	next, stop := readAhead(newTxReader(newQuadReader(r), 1))
	defer stop()
	for {
		if err := ctx.Err(); err != nil {
			return sum, err
		}
		g, p, err := next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return sum, err
		}
		before := len(c.r.Problems)
		tx, quads := c.addPrepared(p) // which applies it to sink if it decodes and chains
		if c.err != nil {
			return sum, storageErr("reading the imported store", c.err)
		}
		if len(c.r.Problems) > before {
			return sum, problemAt(c.r.Problems[before], g)
		}
		if c.applyErr != nil {
			return sum, c.applyErr
		}
		sum.Transactions++
		sum.Claims += len(tx.Claims)
		sum.Quads += len(quads)
	}
	if sum.Transactions == 0 {
		return sum, &ImportError{Msg: "the file holds no transactions; an export starts with the genesis, tx 1"}
	}
	rep := c.finish()
	if c.err != nil {
		return sum, storageErr("reading the imported store", c.err)
	}
	if !rep.OK() {
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

// readAhead parses and prepares (prepareTx: groups and decodes) the next transaction while
// the one before it is checked and written: that was two fifths of an import's time on the
// goroutine that writes, and a machine has another core. It holds at most one transaction
// ahead. stop ends it and waits for the read in progress, so that nothing reads r after the
// import returns.
func readAhead(tr *txReader) (next func() (*txGroup, *preparedTx, error), stop func()) {
	type result struct {
		g   *txGroup
		p   *preparedTx
		err error
	}
	out := make(chan result)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			g, err := tr.read()
			var p *preparedTx
			if err == nil {
				p = prepareTx(g.id, g.quads)
			}
			select {
			case out <- result{g, p, err}:
			case <-quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var ended error
	next = func() (*txGroup, *preparedTx, error) {
		if ended != nil {
			return nil, nil, ended
		}
		r := <-out
		if r.err != nil {
			ended = r.err
		}
		return r.g, r.p, r.err
	}
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			close(quit)
			<-done
		}
	}
	return next, stop
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
	rel := releasing(be.db)
	defer rel.stop()
	sp := newBulkSpool(dir, "."+filepath.Base(path)+".spool-*")
	defer sp.close()
	w := &kvImporter{kv: spoolStore{be.kv(), sp}, spool: sp, guard: be.guard, committed: rel.check, committing: rel.trim, vectors: opts.VectorIndex}
	defer w.abort() // before the file is closed: bbolt's Close waits for a write transaction
	sum, err := importTxs(ctx, r, copts, w, w.flush)
	if err == nil {
		err = be.guard(func() error { return sp.finish(ctx, be.kv(), rel.check) })
		if err != nil && ctx.Err() == nil {
			err = storageErr("writing the imported store", err)
		}
	}
	rel.stop()
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
	if head := s.Head(); head != 1 {
		return ImportSummary{}, fmt.Errorf("import: %w: it holds %d transactions; import only into a new store", ErrNotEmpty, head)
	}
	fresh := openMemory()
	w := &kvImporter{kv: fresh.kv(), vectors: s.vectorIndex}
	defer w.abort()
	sum, err := importTxs(ctx, r, opts, w, w.flush)
	if err != nil {
		fresh.close()
		return sum, err
	}
	old := mem.swap(fresh.s.Load())
	old.Close()
	s.cache.Reset(w.head)
	s.head.Store(int64(w.head))
	s.Read(ctx, func(ix *index.Index) error { s.meta = ix.Meta(); return nil })
	s.commits.notify()
	return sum, nil
}

// kvImporter writes imported transactions into a kv store, a batch of them per kv
// transaction: the store being created is invisible until the import ends, so batches need
// not follow transactions. Its write handle, which sees the batch not yet committed, is the
// importing checker's state.
type kvImporter struct {
	kv         kv.Store
	guard      func(func() error) error // the backend's, or nil
	committed  func()                   // after each batch and every few hundred entries (a bbolt file releases its mapped pages)
	committing func()                   // before each batch's commit (a bbolt file trims its mapped pages)
	spool      *bulkSpool               // kv's, if it spools: a batch is counted by the entries that reach the store
	wt         kv.WriteTx
	h          *index.Index
	head       record.TxID
	vectors    index.VectorIndex // the vector index's parameters (Options.VectorIndex)
}

func (w *kvImporter) run(fn func() error) error {
	if w.guard != nil {
		return w.guard(fn)
	}
	return fn()
}

// handle is the write handle over every transaction added so far.
func (w *kvImporter) handle() (*index.Index, error) {
	if w.h != nil {
		return w.h, nil
	}
	err := w.run(func() error {
		wt, err := w.kv.Write(context.Background())
		if err != nil {
			return err
		}
		h, err := index.Writer(wt, nil)
		if errors.Is(err, index.ErrNotStore) {
			if err = index.Init(wt); err == nil {
				h, err = index.Writer(wt, nil)
			}
		}
		if err != nil {
			wt.Rollback()
			return err
		}
		h.FileVectorsWith(w.vectors)
		if w.committed != nil {
			h.Every(w.committed)
		}
		w.wt, w.h = wt, h
		return nil
	})
	if err != nil {
		return nil, storageErr("writing the imported store", err)
	}
	return w.h, nil
}

func (w *kvImporter) add(tx *record.Tx, _ []quad.Quad) error {
	h, err := w.handle()
	if err != nil {
		return err
	}
	if err := w.run(func() error { return h.Apply(tx, index.Mark{}) }); err != nil {
		return storageErr("writing the imported store", err)
	}
	w.head = tx.ID
	puts := h.Puts()
	if w.spool != nil {
		puts = w.spool.passed
	}
	if puts >= batchPuts {
		return w.flush()
	}
	return nil
}

// abort takes back the batch not yet committed, if any: an import that failed.
func (w *kvImporter) abort() {
	if w.wt != nil {
		w.run(func() error { w.wt.Rollback(); return nil })
		w.wt, w.h = nil, nil
	}
}

func (w *kvImporter) flush() error {
	if w.wt == nil {
		return nil
	}
	if w.committing != nil {
		w.committing()
	}
	err := w.run(func() error { return w.wt.Commit(context.Background()) })
	w.wt, w.h = nil, nil
	if err != nil {
		return storageErr("writing the imported store", err)
	}
	if w.committed != nil {
		w.committed()
	}
	return nil
}
