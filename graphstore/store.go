// Package graphstore stores mql's transactions as quads in Cayley and reads them back: Open
// and the Store (group commits, staged writes, catching up with other processes), the
// backends (memory, bbolt with its file checks, PostgreSQL with its transaction log and
// writer; backend_cayley.go holds what they share), the snapshot of a bbolt store, the check
// of a whole store (check.go, checker.go, checkstate.go), import, and inspection. It is the
// only package that imports Cayley.
//
// What is stored is not defined here: the records are package record's, their quads package
// codec's, and the in-memory index, its views and a claim's state package index's.
package graphstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// Options configure Open.
type Options struct {
	Owner       string           // owner principal recorded at genesis; default "owner"
	Strict      bool             // recorded at genesis
	Clock       func() time.Time // transaction time source; default time.Now; the Store stores UTC
	OpenTimeout time.Duration    // bbolt: how long to wait for a file held by another process; default 1s
	// MustExist makes Open fail with ErrNoStore instead of creating a store: a bbolt path that
	// does not exist, an empty file, a bbolt file without Cayley's buckets, a PostgreSQL
	// database without Cayley's tables, or any store without a genesis transaction. Nothing is
	// created or initialised. A memory: store always exists.
	MustExist bool

	// WriteLockTimeout (PostgreSQL) bounds how long a write waits for the writer lock that
	// another process holds; the write then fails with an error wrapping ErrInUse that names
	// the holder. Default 10s.
	WriteLockTimeout time.Duration
	// WriteIdleTimeout (PostgreSQL) bounds how long this process may hold the writer lock
	// without sending PostgreSQL anything (PostgreSQL's idle_in_transaction_session_timeout):
	// past it PostgreSQL ends the session, rolls its write back and frees the lock, so a
	// paused or hung writer blocks the others for at most this long, and its write fails.
	// Default 5s, less than WriteLockTimeout's default so that a stalled writer delays the
	// writers behind it without failing them.
	WriteIdleTimeout time.Duration
}

// Store is an mql memory persisted in a Cayley quad store, with the in-memory Index of every
// transaction it holds. It is safe for concurrent use.
//
// Lock order: writer mutex, then the cross-process writer lock (PostgreSQL), then the index
// mutex (which Refresh also takes), then Index. Callers must not call Write, Import or Refresh
// while holding the Index lock, nor from inside a build function.
type Store struct {
	be    backend
	clock func() time.Time

	life   sync.RWMutex // Close takes it for writing
	closed bool

	wmu    sync.Mutex // serialises writers in this process: the group-commit leader holds it
	qmu    sync.Mutex // guards queue
	queue  []*writer  // writers waiting for the next group commit
	broken bool       // a write failed; reopen the Cayley handle before the next one (trap 1)

	imu   sync.Mutex // serialises extending the index (Refresh and commits)
	ix    *index.Index
	chain *codec.Chain

	// The snapshot (see snapshot.go) holds transactions 1..snapHead; snapClaims claims were
	// committed after it. Guarded by imu.
	snapHead     record.TxID
	snapClaims   int
	fromSnapshot bool // the index was loaded from the snapshot at open (tests check it)
	snapBroken   bool // Check found the snapshot wrong: write no more of it until reopened

	created bool // this Open wrote the genesis

	commits notifier // tells subscribers that the head moved

	// stopWatch ends the goroutine that loads other processes' commits as PostgreSQL announces
	// them (watchDone closes when it has); nil where nobody else writes.
	stopWatch func()
	watchDone chan struct{}
}

// Open opens or creates the store named by dsn:
//
//	memory:                   a Cayley memstore; gone when the Store is closed
//	bbolt:PATH, or PATH       a bbolt file, created if missing; one process at a time
//	postgres://… postgresql://…  a PostgreSQL database shared by any number of processes
//
// It loads every transaction into a fresh Index. A new store gets its genesis transaction
// (tx 1: the owner principal and the strict flag from opts); an existing store keeps the
// owner and strict flag it was created with, whatever opts say.
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.Owner == "" {
		opts.Owner = "owner"
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = time.Second
	}
	be, err := openBackend(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	ix := index.New()
	s := &Store{be: be, clock: opts.Clock, ix: ix, chain: indexChain(ix)}
	if err := s.load(ctx, opts); err != nil {
		be.close()
		return nil, err
	}
	if lg, ok := be.(txLog); ok {
		s.watch(lg)
	}
	return s, nil
}

// watch loads other processes' commits as soon as PostgreSQL announces them, so that
// subscribers hear of them without polling. Reads do not depend on it: each one still asks
// for what was committed before it (Refresh).
func (s *Store) watch(lg txLog) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatch, s.watchDone = cancel, make(chan struct{})
	go func() {
		defer close(s.watchDone)
		lg.watchCommits(ctx, func(head record.TxID) {
			if head > 0 {
				s.ix.RLock()
				known := s.ix.Head() >= head
				s.ix.RUnlock()
				if known {
					return // our own commit, or one loaded already
				}
			}
			s.Refresh(ctx) // a failure is retried by the next read, write or announcement
		})
	}()
}

// history returns the committed transactions from..to, for the PostgreSQL log. Caller holds
// imu.
func (s *Store) history(from, to record.TxID) []*record.Tx {
	s.ix.RLock()
	defer s.ix.RUnlock()
	out := make([]*record.Tx, 0, max(0, int(to-from+1)))
	for id := from; id <= to; id++ {
		out = append(out, s.ix.Tx(id))
	}
	return out
}

func openBackend(ctx context.Context, dsn string, opts Options) (backend, error) {
	switch {
	case dsn == "memory:" || dsn == "memory":
		return openMemory(), nil
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn, opts.MustExist, opts.WriteLockTimeout, opts.WriteIdleTimeout)
	case strings.HasPrefix(dsn, "bbolt:"):
		path := strings.TrimPrefix(dsn, "bbolt:")
		if path == "" {
			break
		}
		return openBBoltFile(path, opts.OpenTimeout, opts.MustExist)
	case dsn != "" && !strings.Contains(dsn, "://") && !hasScheme(dsn):
		return openBBoltFile(dsn, opts.OpenTimeout, opts.MustExist)
	}
	return nil, fmt.Errorf("graphstore: cannot open %q: %w; use memory:, bbolt:PATH, a file path, or postgres://user@host:port/db", dsn, ErrBadDSN)
}

// FilePath is the file a bbolt DSN names (a plain path or bbolt:PATH); ok is false for the
// other backends.
func FilePath(dsn string) (path string, ok bool) { return bboltPath(dsn) }

// hasScheme reports whether dsn starts with an unknown "word:" scheme (a Windows drive letter
// like C: is a path, not a scheme).
func hasScheme(dsn string) bool {
	i := strings.IndexByte(dsn, ':')
	if i <= 1 {
		return false
	}
	for _, r := range dsn[:i] {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.') {
			return false
		}
	}
	return !strings.ContainsAny(dsn[:i], "/\\")
}

// load reads every stored transaction into the index and writes the genesis of a new store.
// A bbolt store's snapshot, when it checks out, replaces the scan of every quad: only the
// transactions after it are read from the quads. Deciding that the store is new needs the
// writer lock: processes opening one new PostgreSQL database at once must agree on one
// genesis. (imu before the writer lock inverts Write's order, harmlessly: nobody else has s.)
func (s *Store) load(ctx context.Context, opts Options) error {
	s.imu.Lock()
	defer s.imu.Unlock()
	invalid := func(err error) error {
		return fmt.Errorf("graphstore: the store does not hold a valid mql memory: %w: %v", ErrStorage, err)
	}
	fromSnapshot := false
	if sn, ok := s.be.(snapshotter); ok {
		var err error
		if fromSnapshot, err = s.loadSnapshot(ctx, sn); err != nil {
			return err
		}
	}
	s.fromSnapshot = fromSnapshot
	if fromSnapshot {
		if err := s.loadNewer(ctx); err != nil {
			return err
		}
		s.saveSnapshot(ctx, true)
	} else {
		quads, err := s.be.all(ctx)
		if err != nil {
			return storageErr("reading the store", err)
		}
		txs, err := codec.DecodeTxs(quads)
		if err != nil {
			return invalid(err)
		}
		quads = nil // the decoded transactions are all that is kept
		s.ix.Reserve(txs)
		for _, tx := range txs {
			if err := s.index(tx); err != nil {
				return invalid(err)
			}
		}
		if s.chain.Head() > 0 {
			s.rewriteSnapshot(ctx)
		}
	}
	if s.chain.Head() > 0 {
		return nil
	}
	unlock, err := s.be.lockWriters(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.refreshLocked(ctx); err != nil || s.chain.Head() > 0 {
		return err
	}
	if opts.MustExist && s.be.kind() != "memory" {
		return errNoStore(nil, "%s holds no mql memory (no genesis transaction)", s.be.name())
	}
	_, err = s.commit(ctx, opts.Owner, func(_ *index.Index, tx *record.Tx) error {
		tx.Meta = &record.StoreMeta{Owner: opts.Owner, Strict: opts.Strict}
		tx.Principals = []*record.Principal{{Name: opts.Owner, Type: record.User, Tx: tx.ID}}
		return nil
	})
	if err == nil {
		s.created = true
		s.saveSnapshot(ctx, true)
	}
	return err
}

// index checks tx against what is indexed and adds it. Caller holds imu.
func (s *Store) index(tx *record.Tx) error {
	if err := s.chain.Check(tx); err != nil {
		return err
	}
	if err := addToIndex(s.ix, tx); err != nil {
		return err
	}
	s.chain.Add(tx)
	return nil
}

func addPending(ix *index.Index, tx *record.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tx %d cannot be indexed: %v", tx.ID, r)
		}
	}()
	ix.Lock()
	defer ix.Unlock()
	ix.AddPending(tx)
	return nil
}

func addToIndex(ix *index.Index, tx *record.Tx) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tx %d cannot be indexed: %v", tx.ID, r)
		}
	}()
	ix.Lock()
	defer ix.Unlock()
	ix.Add(tx)
	return nil
}

// Close closes the store. It waits for a write in progress; later calls return ErrClosed.
func (s *Store) Close() error {
	if s.stopWatch != nil {
		s.stopWatch()
		<-s.watchDone
	}
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	s.imu.Lock()
	s.saveSnapshot(context.Background(), true)
	s.imu.Unlock()
	if err := s.be.close(); err != nil {
		return storageErr("closing", err)
	}
	return nil
}

// Backend names the kind of store: "memory", "bbolt" or "postgres".
func (s *Store) Backend() string { return s.be.kind() }

// Created reports whether this Open created the store: it held no transaction, and Open wrote
// its genesis.
func (s *Store) Created() bool { return s.created }

// Index is the live index. Lock it (RLock) for the whole of a read; call Refresh first, not
// while holding it.
func (s *Store) Index() *index.Index { return s.ix }

func (s *Store) enter() error {
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return fmt.Errorf("graphstore: %w; open it again to use it", ErrClosed)
	}
	return nil
}

func (s *Store) leave() { s.life.RUnlock() }

// Write commits one transaction. Writers are serialised: in this process by a mutex and, on
// PostgreSQL, across processes by an advisory lock held by the SQL transaction that writes
// the quads (waited for at most Options.WriteLockTimeout, then ErrInUse; lost, with the write,
// after Options.WriteIdleTimeout without a word to PostgreSQL). Under the lock Write first
// loads what other processes committed (Refresh), then calls build with a new Tx whose ID (head+1), Time
// (the clock, in UTC) and By are set; build fills in records and may read the index (Write
// holds its read lock while build runs; build must not call back into the Store). Record Tx
// fields left zero are set to the transaction's id, and times are stored in UTC.
//
// Group commit: writers that arrive while another group is being stored queue up, and the next
// leader builds all of them in arrival order, each as its own transaction with its own id, and
// stores them with one Cayley transaction (one sync). Each build sees the transactions built
// before it in the group: they are in the index, pending, and a View as of tx.ID-1 includes
// them, while readers (whose views stop at the committed head) do not see them until the group
// is stored. Every writer returns only once its transaction is durable.
//
// If build returns an error nothing is written for that writer and that error is returned
// unchanged; the other writers of its group are unaffected. If the transaction is malformed
// (see codec.EncodeTx) or refers to claims, artifacts or sources that were never recorded, nothing is
// written for it and the error says why. If Cayley fails, every writer of the group gets an
// error wrapping ErrStorage, nothing of the group is recorded or indexed, and the Cayley handle
// is reopened before the next write. (On PostgreSQL, if the connection fails during the commit
// itself, the store asks PostgreSQL whether it committed; only if it cannot be asked does the
// error say the group may have been recorded, and the next Refresh or Write loads it if it was.)
func (s *Store) Write(ctx context.Context, by string, build func(ix *index.Index, tx *record.Tx) error) (*record.Tx, error) {
	return s.write(&writer{ctx: ctx, by: by, build: build})
}

// write queues w and waits until a group commit stored or failed it.
func (s *Store) write(w *writer) (*record.Tx, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	s.qmu.Lock()
	s.queue = append(s.queue, w)
	s.qmu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if !w.done { // else a leader stored (or failed) it while we waited for wmu
		s.qmu.Lock()
		group := s.queue
		s.queue = nil
		s.qmu.Unlock()
		s.commitGroup(context.WithoutCancel(w.ctx), group)
	}
	if w.panicked != nil {
		panic(w.panicked) // the build panicked: re-raise it in its own writer's goroutine
	}
	return w.tx, w.err
}

// WriteStaged is Write for a transaction built in steps, each of which must see the steps
// before it: build gets, besides the index and the new Tx, stage, which checks the records
// build added to tx since the last call and indexes them as pending, so that from then on ix
// (and every View made from it, as of tx.ID) shows them; readers, whose views stop at the
// committed head, do not. Records not yet staged when build returns are staged then. A stage
// that fails changes nothing and returns the error; build may remove the records it refused
// (only those not yet staged) and go on. If build returns an error, or the transaction fails
// later, nothing of it is written and the index forgets it.
//
// Unlike Write's build, this build runs without the index's read lock (the group commit's
// leader holds the lock that serialises every change to the index, so nothing else changes it
// meanwhile) and must not call back into the Store. Forgetting a failed staged transaction
// rebuilds the index from memory, which costs time in proportion to the store.
func (s *Store) WriteStaged(ctx context.Context, by string, build func(ix *index.Index, tx *record.Tx, stage func() error) error) (*record.Tx, error) {
	return s.write(&writer{ctx: ctx, by: by, staged: build})
}

// writer is one queued Write.
type writer struct {
	ctx      context.Context
	by       string
	build    func(ix *index.Index, tx *record.Tx) error
	staged   func(ix *index.Index, tx *record.Tx, stage func() error) error // WriteStaged's build, instead of build
	indexed  bool                                                           // the staged build indexed its tx already
	tx       *record.Tx
	err      error
	panicked any  // what build panicked with, re-raised by Write
	done     bool // set under wmu
}

// maxGroup bounds how many writers one group commit takes, so that a group's latency stays
// bounded under a flood; the rest wait for the next group.
const maxGroup = 512

// commitGroup stores the queued writers' transactions, as many groups as needed. Caller holds
// wmu; ctx is not cancelled by any one writer.
func (s *Store) commitGroup(ctx context.Context, group []*writer) {
	for len(group) > maxGroup {
		s.commitGroup(ctx, group[:maxGroup])
		group = group[maxGroup:]
	}
	fail := func(ws []*writer, err error) {
		for _, w := range ws {
			if !w.done {
				w.err, w.done = err, true
			}
		}
	}
	// Catch up with other processes before taking the writer lock, so that under it only
	// what they committed meanwhile is left to load: on PostgreSQL a writer that is silent
	// for WriteIdleTimeout while holding the lock loses it.
	if s.be.shared() {
		s.imu.Lock()
		err := s.refreshLocked(ctx)
		s.imu.Unlock()
		if err != nil {
			fail(group, err)
			return
		}
	}
	// The wait for the writer lock ends when every writer of the group has given up; the
	// store's work after it runs to the end whatever any one writer's context does.
	waitCtx, stopWait := waitAll(group)
	unlock, err := s.be.lockWriters(waitCtx)
	stopWait()
	if err != nil {
		fail(group, err)
		return
	}
	defer unlock()
	for _, w := range group {
		if err := w.ctx.Err(); err != nil {
			w.err, w.done = err, true // gave up while waiting: nothing of it is written
		}
	}
	s.imu.Lock()
	defer s.imu.Unlock()
	if err := s.refreshLocked(ctx); err != nil {
		fail(group, err)
		return
	}
	if s.broken {
		if err := s.be.reopen(ctx); err != nil {
			fail(group, storageErr("reopening after a failed write", err))
			return
		}
		s.broken = false
	}
	var quads []quad.Quad
	var built []*writer
	for _, w := range group {
		if w.done {
			continue
		}
		tx, q, err := s.buildGuarded(w)
		if err != nil {
			w.err, w.done = err, true
			continue
		}
		if w.indexed {
			s.chain.Add(tx)
			w.tx = tx
			quads = append(quads, q...)
			built = append(built, w)
			continue
		}
		if err := addPending(s.ix, tx); err != nil {
			// The index may be half-changed: drop everything pending and fail the group.
			s.dropPending()
			fail(group, fmt.Errorf("graphstore: tx %d cannot be indexed, nothing of its group was written: %v: %w", tx.ID, err, ErrStorage))
			return
		}
		s.chain.Add(tx)
		w.tx = tx
		quads = append(quads, q...)
		built = append(built, w)
	}
	if len(built) == 0 {
		return
	}
	txs := make([]*record.Tx, len(built))
	for i, w := range built {
		txs[i] = w.tx
	}
	if err := s.apply(ctx, quads, txs); err != nil {
		s.broken = true
		s.dropPending()
		first, last := built[0].tx.ID, built[len(built)-1].tx.ID
		for _, w := range built {
			w.tx = nil
		}
		fail(group, applyErr(err, fmt.Sprintf("tx %d..%d", first, last)))
		return
	}
	s.ix.Lock()
	s.ix.CommitTo(built[len(built)-1].tx.ID)
	s.ix.Unlock()
	for _, w := range built {
		w.done = true
		s.snapClaims += len(w.tx.Claims)
	}
	s.saveSnapshot(ctx, false)
	s.commits.notify()
}

// apply stores the quads of txs. On PostgreSQL the transaction log gets txs in the same
// database transaction, unless a check found the log wrong since this Store was opened: the
// index may then hold what the log said, and must not be written back (the others read the
// quads until a process opened since rewrites the log). Caller holds the writer lock and imu.
func (s *Store) apply(ctx context.Context, quads []quad.Quad, txs []*record.Tx) error {
	if lg, ok := s.be.(txLog); ok && !s.snapBroken {
		return lg.applyLogged(ctx, quads, txs, s.history)
	}
	return s.be.apply(ctx, quads)
}

// applyErr is the error of a failed apply of txs. A store found damaged refuses every write
// before it begins, and its error says what to do; any other failure may have left the
// backend's handle in a state of its own, so the store reopens it before the next write.
func applyErr(err error, txs string) error {
	if errors.Is(err, ErrDamaged) {
		return fmt.Errorf("graphstore: nothing was written: %w", err)
	}
	return fmt.Errorf("graphstore: writing %s failed %s; the store will be reopened before the next write: %w: %w", txs, outcome(err), ErrStorage, err)
}

// outcome says what a failed apply left: nothing, unless the connection to PostgreSQL failed
// during the commit and PostgreSQL could not then say whether it committed.
func outcome(err error) string {
	if errors.Is(err, errCommitUnknown) {
		return "and may or may not have been recorded"
	}
	return "and nothing was recorded"
}

// dropPending forgets the transactions of a group that was not stored: the index (and with it
// the chain, which asks the index) goes back to the committed head. Caller holds imu.
func (s *Store) dropPending() {
	s.ix.Lock()
	s.ix.DropPending()
	s.ix.Unlock()
}

// buildGuarded runs buildOne for a queued writer, catching a panic in its build so that it
// fails only that writer (Write re-raises it in the writer's goroutine).
func (s *Store) buildGuarded(w *writer) (tx *record.Tx, quads []quad.Quad, err error) {
	defer func() {
		if r := recover(); r != nil {
			w.panicked = r
			tx, quads, err = nil, nil, fmt.Errorf("graphstore: build panicked: %v", r)
		}
	}()
	if w.staged != nil {
		return s.buildStaged(w)
	}
	return s.buildOne(w.ctx, w.by, w.build)
}

// buildStaged runs a WriteStaged build (see there). Caller holds imu. On success the tx is
// indexed as pending (w.indexed); on failure the index is as it was before.
func (s *Store) buildStaged(w *writer) (*record.Tx, []quad.Quad, error) {
	if err := w.ctx.Err(); err != nil {
		return nil, nil, err
	}
	h := s.ix.BuildHandle()
	tx := &record.Tx{ID: h.Head() + 1, Time: s.clock().UTC(), By: w.by}
	var done index.Mark // what is indexed of tx
	appended, ok := false, false
	var broken error // indexing failed: the index may be half-changed
	defer func() {   // also when build panics
		if !ok && appended {
			s.ix.Lock()
			s.ix.DropFrom(tx.ID)
			s.ix.Unlock()
		}
	}()
	stage := func() error {
		if broken != nil {
			return broken
		}
		part := index.Since(tx, done)
		normalize(part)
		if err := s.chain.CheckPart(part, appended); err != nil {
			return fmt.Errorf("graphstore: refusing to write: %w", err)
		}
		s.ix.Lock()
		defer s.ix.Unlock()
		if !appended {
			s.ix.AppendStaged(h, tx)
			appended = true
		}
		if err := addRecordsGuarded(s.ix, tx, done); err != nil {
			broken = err
			return err
		}
		done = index.MarkOf(tx)
		return nil
	}
	if err := w.staged(h, tx, stage); err != nil {
		return nil, nil, err
	}
	if err := stage(); err != nil {
		return nil, nil, err
	}
	if broken != nil {
		return nil, nil, broken
	}
	normalize(tx)
	quads, err := codec.EncodeTx(tx)
	if err != nil {
		return nil, nil, fmt.Errorf("graphstore: refusing to write: %w", err)
	}
	ok, w.indexed = true, true
	return tx, quads, nil
}

// addRecordsGuarded is ix.AddRecords, with a panic (a reference the chain check let through)
// returned as an error. Caller holds ix's write lock.
func addRecordsGuarded(ix *index.Index, tx *record.Tx, m index.Mark) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("graphstore: tx %d cannot be indexed, nothing of it was written: %v: %w", tx.ID, r, ErrStorage)
		}
	}()
	ix.AddRecords(tx, m)
	return nil
}

// buildOne builds, normalises, encodes and checks one transaction on top of everything indexed
// (committed or pending). Caller holds imu.
func (s *Store) buildOne(ctx context.Context, by string, build func(ix *index.Index, tx *record.Tx) error) (*record.Tx, []quad.Quad, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	var tx *record.Tx
	err := func() error {
		s.ix.RLock()
		defer s.ix.RUnlock() // even if build panics
		h := s.ix.BuildHandle()
		tx = &record.Tx{ID: h.Head() + 1, Time: s.clock().UTC(), By: by}
		// Transaction times never go backwards (reads as of a time search them, and a check
		// refuses a store whose times do): a clock stepped back stamps the previous time.
		if prev := h.Tx(h.Head()); prev != nil && tx.Time.Before(prev.Time) {
			tx.Time = prev.Time
		}
		return build(h, tx)
	}()
	if err != nil {
		return nil, nil, err
	}
	normalize(tx)
	quads, err := codec.EncodeTx(tx)
	if err != nil {
		return nil, nil, fmt.Errorf("graphstore: refusing to write: %w", err)
	}
	if err := s.chain.Check(tx); err != nil {
		return nil, nil, fmt.Errorf("graphstore: refusing to write: %w", err)
	}
	return tx, quads, nil
}

// commit builds, checks, applies and indexes one transaction on its own (the genesis). Caller
// holds the writer lock and imu, with the index up to date and nothing pending.
func (s *Store) commit(ctx context.Context, by string, build func(ix *index.Index, tx *record.Tx) error) (*record.Tx, error) {
	if s.broken {
		if err := s.be.reopen(ctx); err != nil {
			return nil, storageErr("reopening after a failed write", err)
		}
		s.broken = false
	}
	tx, quads, err := s.buildOne(ctx, by, build)
	if err != nil {
		return nil, err
	}
	if err := s.apply(ctx, quads, []*record.Tx{tx}); err != nil {
		s.broken = true
		return nil, applyErr(err, fmt.Sprintf("tx %d", tx.ID))
	}
	if err := addToIndex(s.ix, tx); err != nil {
		return nil, fmt.Errorf("graphstore: tx %d was stored but %v; reopen the store: %w", tx.ID, err, ErrStorage)
	}
	s.chain.Add(tx)
	return tx, nil
}

// normalize stamps records with their transaction and puts every time in UTC.
func normalize(tx *record.Tx) {
	stamp := func(t *record.TxID) {
		if *t == 0 {
			*t = tx.ID
		}
	}
	utc := func(t *time.Time) {
		if !t.IsZero() {
			*t = t.UTC()
		}
	}
	tx.Time = tx.Time.UTC()
	for _, p := range tx.Principals {
		if p != nil {
			stamp(&p.Tx)
		}
	}
	for _, g := range tx.Grants {
		if g != nil {
			stamp(&g.Tx)
		}
	}
	for _, x := range tx.Sources {
		if x != nil {
			stamp(&x.Tx)
		}
	}
	for _, c := range tx.Claims {
		if c != nil {
			stamp(&c.Tx)
			utc(&c.ValidFrom)
			utc(&c.ValidUntil)
			if c.Value.Type == record.Time {
				utc(&c.Value.Time)
			}
		}
	}
	for _, r := range tx.Revocations {
		if r != nil {
			stamp(&r.Tx)
		}
	}
	for _, c := range tx.Confirmations {
		if c != nil {
			stamp(&c.Tx)
		}
	}
	for _, a := range tx.Artifacts {
		if a != nil {
			stamp(&a.Tx)
		}
	}
	for _, r := range tx.Reviews {
		if r != nil {
			stamp(&r.Tx)
		}
	}
	for _, d := range tx.Decays {
		if d != nil {
			stamp(&d.Tx)
		}
	}
	for _, t := range tx.Tokens {
		if t != nil {
			stamp(&t.Tx)
			utc(&t.Expires)
		}
	}
	for _, r := range tx.TokenRevocations {
		if r != nil {
			stamp(&r.Tx)
		}
	}
	for _, r := range tx.Retrievals {
		if r != nil {
			stamp(&r.Tx)
		}
	}
	for _, o := range tx.Outcomes {
		if o != nil {
			stamp(&o.Tx)
		}
	}
}

// Refresh loads the transactions other processes committed since the index's head. Only a
// PostgreSQL store is shared; for memory and bbolt it does nothing. Read paths call it before
// taking the index lock.
func (s *Store) Refresh(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if !s.be.shared() {
		return nil
	}
	s.imu.Lock()
	defer s.imu.Unlock()
	return s.refreshLocked(ctx)
}

// refreshLocked loads what other processes committed. Caller holds imu.
func (s *Store) refreshLocked(ctx context.Context) error {
	if !s.be.shared() {
		return nil
	}
	return s.loadNewer(ctx)
}

// loadNewer loads the transactions after the index's head: from the PostgreSQL log when it
// holds them all, else by probing for transaction head+1 until there is none, reading each
// one's quads through its transaction node. Caller holds imu.
func (s *Store) loadNewer(ctx context.Context) error {
	loaded := false
	defer func() {
		if loaded {
			s.commits.notify()
		}
	}()
	if lg, ok := s.be.(txLog); ok {
		txs, ok, err := lg.txsAfter(ctx, s.chain.Head())
		if err != nil {
			return storageErr("reading the transaction log", err)
		}
		if ok {
			for _, tx := range txs {
				if err := s.index(tx); err != nil {
					return fmt.Errorf("graphstore: logged tx %d is not valid: %w: %v", tx.ID, ErrStorage, err)
				}
				loaded = true
			}
			return nil
		}
	}
	for {
		id := s.chain.Head() + 1
		quads, err := s.be.txQuads(ctx, id)
		if err != nil {
			return storageErr(fmt.Sprintf("loading tx %d", id), err)
		}
		if len(quads) == 0 {
			return nil
		}
		loaded = true
		txs, err := codec.DecodeTxs(quads)
		if err == nil && (len(txs) != 1 || txs[0].ID != id) {
			err = fmt.Errorf("tx %d decoded as %d transactions", id, len(txs))
		}
		if err == nil {
			err = s.index(txs[0])
		}
		if err != nil {
			return fmt.Errorf("graphstore: stored tx %d is not valid: %w: %v", id, ErrStorage, err)
		}
	}
}

// QuadCount returns the number of quads stored.
func (s *Store) QuadCount(ctx context.Context) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	n, err := s.be.count(ctx)
	if err != nil {
		return 0, storageErr("counting quads", err)
	}
	return n, nil
}

// waitAll returns a context that is done when every writer's context is done.
func waitAll(group []*writer) (context.Context, func()) {
	if len(group) == 1 {
		return group[0].ctx, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var left atomic.Int64
	left.Store(int64(len(group)))
	stops := make([]func() bool, len(group))
	for i, w := range group {
		stops[i] = context.AfterFunc(w.ctx, func() {
			if left.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// indexChain checks against ix, which the caller extends after each check (add does nothing).
// Whoever changes ix holds the lock that serialises that (the Store's imu), so the lookups need
// no index lock.
func indexChain(ix *index.Index) *codec.Chain { return codec.ChainOver(indexRecords{ix}) }

// indexRecords answers a chain's questions from an index.
type indexRecords struct{ ix *index.Index }

func (r indexRecords) Top() record.TxID                      { return r.ix.Top() }
func (r indexRecords) HasClaim(id record.ClaimID) bool       { return r.ix.HasClaim(id) }
func (r indexRecords) HasArtifact(id record.ArtifactID) bool { return r.ix.HasArtifact(id) }
func (r indexRecords) Add(*record.Tx)                        {}
func (r indexRecords) HasToken(id string) bool               { return r.ix.HasToken(id) }
func (r indexRecords) HasSource(id string) bool              { return r.ix.HasSource(id) }
func (r indexRecords) KeyVersion(k record.Key) int           { return r.ix.KeyVersion(k) }
func (r indexRecords) ArtifactVersion(name string) int       { return r.ix.ArtifactVersion(name) }
