// Package graphstore stores mql's transactions and reads them back: Open and the Store (group
// commits, staged writes, snapshots for reads, catching up with other processes), the backends
// behind it (backend.go: memory, a bbolt file with its file checks, PostgreSQL), the check of
// a whole store (check.go, checker.go, checkstate.go), import, export as N-Quads, and
// inspection.
//
// What is stored is not defined here: the records are package record's, their binary form
// package encoding's, their layout with the persisted index package index's, the key-value
// interface the backends implement package kv's; the N-Quads form (import, export) is package
// codec's.
package graphstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// Options configure Open.
type Options struct {
	Owner       string           // owner principal recorded at genesis; default "owner"
	Strict      bool             // recorded at genesis
	Clock       func() time.Time // transaction time source; default time.Now; the Store stores UTC
	OpenTimeout time.Duration    // bbolt: how long to wait for a file held by another process; default 1s
	// MustExist makes Open fail with ErrNoStore instead of creating a store: a bbolt path that
	// does not exist, an empty file, a bbolt file that holds no mql store, a PostgreSQL
	// database without mql's tables, or any store without a genesis transaction. Nothing is
	// created or initialised. A memory: store always exists.
	MustExist bool
	// CacheBytes bounds the process's cache of decoded index entries (default 128 MiB).
	CacheBytes int
	// VectorIndex are the parameters of the vector index, if this process writes the store's
	// first vector; zero fields take their defaults. A store keeps the ones it was given first.
	VectorIndex index.VectorIndex

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
	// OnCommit, if set, is told of every group commit this process makes, once it ends
	// (Commit). It runs on the committing goroutine, with writers waiting: it must be quick
	// and must not call the Store.
	OnCommit func(Commit)
	// Requests (PostgreSQL) builds the writes other processes queued for the holder of the
	// writer lock (WriteRequest). Without it this process neither queues its writes nor
	// builds others'.
	Requests Requests
}

// Commit is what a group commit did, for metrics: how many transactions it committed, how
// long it waited for the writer lock (on PostgreSQL, the advisory lock other processes'
// writers hold; on bbolt, this process's log), how long it took from that wait's start to
// durable, and whether it failed.
//
// On PostgreSQL a group commit may build other processes' writes (ForOthers, counted in
// Transactions), or find this process's writes built by another process (Elsewhere, not
// counted in Transactions): see Store.WriteRequest.
type Commit struct {
	Transactions int
	ForOthers    int
	Elsewhere    int
	LockWait     time.Duration
	Duration     time.Duration
	Failed       bool
}

// Store is an open mql memory: its records and persisted index in one kv store. It is safe for
// concurrent use. Reads run on snapshots (Read) and never wait for writers; writers are
// serialised, and writers that arrive while a commit is under way share the next one.
type Store struct {
	be    backend
	clock func() time.Time
	cache *index.Cache
	// vectorIndex are the vector index's parameters, should this process write the first vector.
	vectorIndex index.VectorIndex

	life   sync.RWMutex // Close takes it for writing
	closed bool

	wmu   sync.Mutex // serialises writers in this process: the group-commit leader holds it
	qmu   sync.Mutex // guards queue
	queue []*writer  // writers waiting for the next group commit

	meta    record.StoreMeta // what the genesis recorded
	created bool             // this Open wrote the genesis
	head    atomic.Int64     // the last transaction this process knows committed
	lmu     sync.Mutex       // serialises learning of other processes' commits

	commits  notifier     // tells subscribers that the head moved
	onCommit func(Commit) // Options.OnCommit

	requests     Requests      // Options.Requests
	requestToken []byte        // names this process's requests
	requestSeq   atomic.Uint64 // numbers them
	contended    atomic.Bool   // other processes were writing at this process's last write

	// stopWatch ends the goroutine that learns of other processes' commits as PostgreSQL
	// announces them (watchDone closes when it has); nil where nobody else writes.
	stopWatch func()
	watchDone chan struct{}
}

// Open opens or creates the store named by dsn:
//
//	memory:                   in memory; gone when the Store is closed
//	bbolt:PATH, or PATH       a bbolt file, created if missing; one process at a time
//	postgres://… postgresql://…  a PostgreSQL database shared by any number of processes
//
// Opening reads the store's state and nothing else. A new store gets its genesis transaction
// (tx 1: the owner principal and the strict flag from opts); an existing store keeps the owner
// and strict flag it was created with, whatever opts say.
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
	s := &Store{be: be, clock: opts.Clock, onCommit: opts.OnCommit, requests: opts.Requests, vectorIndex: opts.VectorIndex}
	if opts.Requests != nil {
		s.requestToken = make([]byte, 8)
		rand.Read(s.requestToken)
	}
	if err := s.load(ctx, opts); err != nil {
		be.close()
		return nil, err
	}
	if w, ok := be.(watcher); ok {
		s.watch(w)
	}
	return s, nil
}

func openBackend(ctx context.Context, dsn string, opts Options) (backend, error) {
	switch {
	case dsn == "memory:" || dsn == "memory":
		return openMemory(), nil
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		return openPostgres(ctx, dsn, opts)
	case strings.HasPrefix(dsn, "bbolt:"):
		path := strings.TrimPrefix(dsn, "bbolt:")
		if path == "" {
			break
		}
		return openBBoltFile(path, opts.OpenTimeout, opts.MustExist)
	case dsn != "" && !strings.Contains(dsn, "://") && !hasScheme(dsn):
		return openBBoltFile(dsn, opts.OpenTimeout, opts.MustExist)
	}
	return nil, fmt.Errorf("cannot open %q: %w; use memory:, bbolt:PATH, a file path, or postgres://user@host:port/db", dsn, ErrBadDSN)
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

// load reads the store's state and writes the genesis of a new store. Deciding that the store
// is new needs the writer lock: processes opening one new PostgreSQL database at once must
// agree on one genesis.
func (s *Store) load(ctx context.Context, opts Options) error {
	head, err := s.readHead(ctx)
	if err != nil {
		return err
	}
	s.cache = index.NewCache(head, opts.CacheBytes)
	s.head.Store(int64(head))
	if head > 0 {
		return s.Read(ctx, func(ix *index.Index) error { s.meta = ix.Meta(); return nil })
	}
	if opts.MustExist && s.be.kind() != "memory" {
		return errNoStore(nil, "%s holds no mql memory (no genesis transaction)", s.be.name())
	}
	_, err = s.write(&writer{ctx: ctx, by: opts.Owner, genesis: true, build: func(_ *index.Index, tx *record.Tx) error {
		tx.Meta = &record.StoreMeta{Owner: opts.Owner, Strict: opts.Strict}
		tx.Principals = []*record.Principal{{Name: opts.Owner, Type: record.User, Tx: tx.ID}}
		return nil
	}})
	if errors.Is(err, errNotGenesis) {
		// Another process wrote it first.
		return s.Read(ctx, func(ix *index.Index) error { s.meta = ix.Meta(); return nil })
	}
	if err == nil {
		s.created = true
	}
	if err != nil {
		return err
	}
	return s.Read(ctx, func(ix *index.Index) error { s.meta = ix.Meta(); return nil })
}

// Meta is what the store's genesis recorded: its owner and strict flag.
func (s *Store) Meta() record.StoreMeta { return s.meta }

// QuadCount is the number of quads an export of the whole store holds (its Graph's). It reads
// every transaction.
func (s *Store) QuadCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.Read(ctx, func(ix *index.Index) error {
		for id := record.TxID(1); id <= ix.Head(); id++ {
			q, err := codec.EncodeTx(ix.Tx(id))
			if err != nil {
				return err
			}
			n += int64(len(q))
			if id%256 == 0 {
				ix.Release()
			}
		}
		return nil
	})
	return n, err
}

// errNotGenesis aborts a genesis when the store turned out to hold one.
var errNotGenesis = errors.New("the store has a genesis")

// readHead returns the head of the store as stored, 0 for a store not yet initialised.
func (s *Store) readHead(ctx context.Context) (record.TxID, error) {
	var head record.TxID
	err := s.be.guard(func() error {
		rt, err := s.be.kv().Read(ctx)
		if err != nil {
			return err
		}
		defer rt.End()
		ix, err := index.Open(rt, nil)
		switch {
		case errors.Is(err, index.ErrNotStore) && !strings.Contains(err.Error(), "format"):
			return nil
		case err != nil:
			return err
		}
		head = ix.Head()
		return nil
	})
	if err != nil {
		return 0, s.readErr("reading the store's state", err)
	}
	return head, nil
}

// readErr is the error of a read of the store that failed with err.
func (s *Store) readErr(what string, err error) error {
	switch {
	case errors.Is(err, ErrDamaged), errors.Is(err, ErrClosed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, index.ErrEarlierFormat):
		return earlierFormatErr(s.be.name(), err)
	case errors.Is(err, index.ErrNotStore):
		return StorageFailure(fmt.Errorf("%s: %w", s.be.name(), err))
	}
	var f *index.Fault
	if errors.As(err, &f) || errors.Is(err, encoding.ErrCorrupt) {
		if b, ok := s.be.(*bboltBackend); ok {
			return b.markDamaged(fmt.Sprintf("%s: %v", what, err))
		}
	}
	return storageErr(what, err)
}

// watch learns of other processes' commits as soon as PostgreSQL announces them, so that
// subscribers hear of them without polling (the backend listens only while someone
// subscribes). Reads do not depend on it: each one reads the newest committed state.
func (s *Store) watch(w watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	s.stopWatch, s.watchDone = cancel, make(chan struct{})
	go func() {
		defer close(s.watchDone)
		w.watchCommits(ctx, &s.commits, func(head record.TxID) {
			if head > 0 && record.TxID(s.head.Load()) >= head {
				return // our own commit, or one known already
			}
			if !s.commits.watched() {
				return // nobody waits for it: the next read or write learns it
			}
			s.Refresh(ctx) // a failure is retried by the next read, write or announcement
		})
	}()
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

// Head is the last transaction this process knows committed.
func (s *Store) Head() record.TxID { return record.TxID(s.head.Load()) }

// Size is how many bytes the store takes where it is kept: a bbolt file with its write-ahead
// log, PostgreSQL's tables of the store (with their indexes), 0 for a memory store.
func (s *Store) Size(ctx context.Context) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	n, err := s.be.size(ctx)
	if err != nil {
		return 0, storageErr("measuring the store's size", err)
	}
	return n, nil
}

// Writable returns the error a write would get now for the store's state, or nil: the damage
// it has seen or that its file shows now (ErrDamaged: on bbolt, a file truncated under it or
// whose meta pages are no longer valid), or ErrClosed. It writes nothing, and on bbolt reads
// the file's two meta pages and its size: cheap enough for a readiness probe.
func (s *Store) Writable() error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	return s.be.writable()
}

func (s *Store) enter() error {
	s.life.RLock()
	if s.closed {
		s.life.RUnlock()
		return fmt.Errorf("%w; open it again to use it", ErrClosed)
	}
	return nil
}

func (s *Store) leave() { s.life.RUnlock() }

// Read runs fn on a snapshot of the newest committed state: every transaction committed before
// Read began, and nothing committed after. fn must not keep the Index, nor anything it handed
// out, past its return. A storage failure in fn (a damaged page, a record that does not
// decode, a lost connection) ends it, and Read returns it as an error wrapping ErrStorage or
// ErrDamaged.
func (s *Store) Read(ctx context.Context, fn func(ix *index.Index) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	err := s.be.guard(func() error {
		rt, err := s.be.kv().Read(ctx)
		if err != nil {
			return err
		}
		defer rt.End()
		ix, err := index.Open(rt, s.cache)
		if err != nil {
			return err
		}
		if h := ix.Head(); h > s.Head() && s.be.shared() {
			s.learn(ctx, h)
		}
		return index.Guard(func() error {
			if err := fn(ix); err != nil {
				return &readerError{err}
			}
			return nil
		})
	})
	if re, ok := err.(*readerError); ok {
		return re.err
	}
	if err != nil {
		return s.readErr("reading the store", err)
	}
	return nil
}

// readerError carries the error of a read's own function through the guards, which return
// it as it is, to be told from the store's: it is the caller's, unchanged. (A variable the
// function's closure set would be one more allocation on every read.)
type readerError struct{ err error }

func (e *readerError) Error() string { return e.err.Error() }

// learn moves the process's head to at least head, which another process committed: the cache
// drops what changed meanwhile, and subscribers are told.
func (s *Store) learn(ctx context.Context, head record.TxID) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	old := s.Head()
	if head <= old {
		return
	}
	if sh, ok := s.be.(sharer); ok {
		newest, touched, ok, err := sh.changes(ctx, old)
		switch {
		case err != nil || !ok:
			s.cache.Reset(max(head, newest))
		default:
			head = max(head, newest)
			s.cache.Advance(head, touched)
		}
	} else {
		s.cache.Reset(head)
	}
	s.head.Store(int64(head))
	s.commits.notify()
}

// Write commits one transaction. Writers are serialised: in this process by a mutex and, on
// PostgreSQL, across processes by the writer lock held by the SQL transaction that writes it
// (waited for at most Options.WriteLockTimeout, then ErrInUse; lost, with the write, after
// Options.WriteIdleTimeout without a word to PostgreSQL). Under the lock Write calls build with
// a write handle over the newest state (what other processes committed included) and a new Tx
// whose ID (head+1), Time (the clock, in UTC) and By are set; build fills in records and may
// read the handle (it must not call back into the Store). Record Tx fields left zero are set
// to the transaction's id, and times are stored in UTC.
//
// Group commit: writers that arrive while another group is being stored queue up, and the next
// leader builds all of them in arrival order, each as its own transaction with its own id, in
// one kv transaction (one sync). Each build sees the transactions built before it in the group;
// readers see none of them until the group is stored. Every writer returns only once its
// transaction is durable.
//
// If build returns an error nothing is written for that writer and that error is returned
// unchanged; the other writers of its group are unaffected. If the transaction is malformed
// (see codec.EncodeTx) or refers to claims, artifacts or sources that were never recorded,
// nothing is written for it and the error says why. If the storage fails, every writer of the
// group gets an error wrapping ErrStorage and nothing of the group is recorded. (On
// PostgreSQL, if the connection fails during the commit itself, the store asks PostgreSQL
// whether it committed; only if it cannot be asked does the error say the group may have been
// recorded, and the next read loads it if it was.)
func (s *Store) Write(ctx context.Context, by string, build func(ix *index.Index, tx *record.Tx) error) (*record.Tx, error) {
	return s.write(&writer{ctx: ctx, by: by, build: build})
}

// WriteStaged is Write for a transaction built in steps, each of which must see the steps
// before it: build gets, besides the handle and the new Tx, stage, which checks the records
// build added to tx since the last call and applies them, so that from then on the handle (and
// every View made from it) shows them; readers do not. Records not yet staged when build
// returns are staged then. A stage that fails changes nothing and returns the error; build may
// remove the records it refused (only those not yet staged) and go on. If build returns an
// error, or the transaction fails later, nothing of it is written.
//
// Like Write's build, this build must not call back into the Store: it runs while every other
// writer waits.
func (s *Store) WriteStaged(ctx context.Context, by string, build func(ix *index.Index, tx *record.Tx, stage func() error) error) (*record.Tx, error) {
	return s.write(&writer{ctx: ctx, by: by, staged: build})
}

// writer is one queued Write.
type writer struct {
	ctx      context.Context
	by       string
	build    func(ix *index.Index, tx *record.Tx) error
	staged   func(ix *index.Index, tx *record.Tx, stage func() error) error // WriteStaged's build, instead of build
	genesis  bool                                                           // the store's first transaction: only if it has none
	tx       *record.Tx
	err      error
	panicked any  // what build panicked with, re-raised by Write
	done     bool // set under wmu

	// A write another process may build (WriteRequest), and what became of it there.
	req    *Request
	remote *Remote
	qid    []byte // its row in mql_requests, once queued
	// result: what the build of another process's request returned (its receipt).
	result []byte
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
				w.tx = nil
			}
		}
	}
	if err := s.be.writable(); err != nil {
		fail(group, fmt.Errorf("nothing was written: %w", err))
		return
	}
	// The wait for the writer lock ends when every writer of the group has given up; the
	// store's work after it runs to the end whatever any one writer's context does.
	waitCtx, stopWait := waitAll(group)
	start := time.Now()
	var locked time.Duration
	var sh *shipment // the group's requests, when another process may build them
	if s.onCommit != nil {
		// Deferred before the wait: a wait that timed out (another process held the
		// lock) is a failed commit too.
		defer func() {
			c := Commit{LockWait: locked, Duration: time.Since(start)}
			if sh != nil {
				for _, w := range sh.foreign {
					if w.done && w.err == nil && w.tx != nil {
						c.ForOthers++
					}
				}
			}
			c.Transactions = c.ForOthers
			for _, w := range group {
				switch {
				case w.done && w.err == nil && w.tx != nil:
					c.Transactions++
				case w.done && w.err == nil && w.remote != nil:
					c.Elsewhere++
				case errors.Is(w.err, ErrStorage) || errors.Is(w.err, ErrDamaged) || errors.Is(w.err, ErrInUse):
					c.Failed = true
				}
			}
			if c.Transactions > 0 || c.Elsewhere > 0 || c.Failed {
				s.onCommit(c) // not a group whose every writer was refused: nothing to commit
			}
		}()
	}
	var wt *writeTx
	var err error
	if rq := s.requestsOf(group); rq != nil {
		wt, sh, err = s.lead(waitCtx, rq, group)
		if errors.Is(err, errNotQueued) {
			wt, err = s.beginWrite(waitCtx)
		}
	} else {
		wt, err = s.beginWrite(waitCtx)
	}
	locked = time.Since(start)
	stopWait()
	if errors.Is(err, errServed) {
		return // every writer has its outcome
	}
	if err != nil {
		fail(group, err)
		return
	}
	committed := false
	defer func() {
		// After the write transaction ends: the connection is free for the outcomes.
		if sh != nil {
			sh.settle(s, committed, StorageFailure(errors.New("the write was not committed")))
		}
	}()
	for _, w := range group {
		if err := w.ctx.Err(); err != nil && !w.done {
			w.err, w.done = err, true // gave up while waiting: nothing of it is written
		}
	}
	g := &group_{s: s, wt: wt}
	defer func() {
		if g.wt != nil {
			g.wt.rollback()
		}
	}()
	if err := g.begin(); err != nil {
		fail(group, err)
		return
	}
	all := group
	if sh != nil && len(sh.foreign) > 0 {
		all = append(slices.Clip(group), sh.foreign...)
	}
	var built []*writer
	for _, w := range all {
		if w.done {
			continue
		}
		if err := g.run(w); err != nil {
			if errors.Is(err, errGroupBroken) {
				fail(group, g.broken)
				return
			}
			w.err, w.done, w.tx = err, true, nil
			continue
		}
		built = append(built, w)
	}
	rc := sh.record(s)
	if len(built) == 0 {
		if !rc.empty() {
			// Refusals only: the requests' outcomes are committed all the same.
			err = g.wt.commitRequests(ctx, 0, nil, rc)
			g.wt = nil
			committed = err == nil
		}
		return
	}
	first, last := built[0].tx.ID, built[len(built)-1].tx.ID
	touched := g.h.Touched()
	err = g.wt.commitRequests(ctx, last, touched, rc)
	g.wt = nil
	if err != nil {
		fail(built, applyErr(err, fmt.Sprintf("tx %d..%d", first, last)))
		s.cache.Reset(record.TxID(s.head.Load()))
		return
	}
	committed = true
	s.lmu.Lock()
	s.head.Store(int64(last))
	s.cache.Advance(last, touched)
	s.lmu.Unlock()
	for _, w := range built {
		w.done = true
	}
	s.commits.notify()
}

// applyErr is the error of a failed commit of txs. A store found damaged refuses every write
// before it begins, and its error says what to do.
func applyErr(err error, txs string) error {
	if errors.Is(err, ErrDamaged) {
		return fmt.Errorf("nothing was written: %w", err)
	}
	return StorageFailure(fmt.Errorf("writing %s failed %s: %w", txs, outcome(err), err))
}

// outcome says what a failed commit left: nothing, unless the connection to PostgreSQL failed
// during the commit and PostgreSQL could not then say whether it committed.
func outcome(err error) string {
	if errors.Is(err, errCommitUnknown) {
		return "and may or may not have been recorded"
	}
	return "and nothing was recorded"
}

// errCommitUnknown is wrapped by a commit whose outcome PostgreSQL could not be asked about.
var errCommitUnknown = errors.New("the outcome of the commit is unknown")

// errGroupBroken says that the group's kv transaction failed: every writer of it fails.
var errGroupBroken = errors.New("the group's transaction failed")

// group_ is one group commit in progress: its kv write transaction, the write handle over it,
// and the transactions applied so far, which it applies again to a new kv transaction if one
// writer's staged build has to be taken back.
type group_ struct {
	s       *Store
	wt      *writeTx
	h       *index.Index
	chain   *codec.Chain
	applied []*record.Tx
	broken  error
}

func (g *group_) begin() error {
	var err error
	err = g.s.be.guard(func() error {
		g.h, err = index.Writer(g.wt.tx, g.s.cache)
		if errors.Is(err, index.ErrNotStore) && !strings.Contains(err.Error(), "format") {
			if err = index.Init(g.wt.tx); err == nil {
				g.h, err = index.Writer(g.wt.tx, g.s.cache)
			}
		}
		if err == nil && g.s.be.shared() && g.h.Head() > g.s.Head() {
			// Another process committed since this one last looked: learn what it changed
			// first, so that the cache drops it (the commit below advances the cache over this
			// group's transactions only) and the handle, made again, may use the cache.
			g.s.learn(context.Background(), g.h.Head())
			g.h, err = index.Writer(g.wt.tx, g.s.cache)
		}
		return err
	})
	if err != nil {
		return g.s.readErr("beginning a write", err)
	}
	g.h.JudgeRelations()
	g.h.FileVectorsWith(g.s.vectorIndex)
	g.chain = codec.ChainOver(indexRecords{g.h})
	return nil
}

// restart takes back what the kv transaction holds and applies g.applied again to a new one.
func (g *group_) restart() error {
	g.wt.rollback()
	g.wt = nil
	wt, err := g.s.beginWrite(context.Background())
	if err != nil {
		g.broken = err
		return errGroupBroken
	}
	g.wt = wt
	if err := g.begin(); err != nil {
		g.broken = err
		return errGroupBroken
	}
	for _, tx := range g.applied {
		if err := g.apply(tx, index.Mark{}); err != nil {
			g.broken = fmt.Errorf("tx %d cannot be applied again, nothing of its group was written: %w", tx.ID, err)
			return errGroupBroken
		}
	}
	return nil
}

// applyRefusal is the error of a transaction Apply refused: one that does not follow from the
// store (index.ErrInvalid) is the writer's to correct; anything else is the storage's.
func applyRefusal(tx *record.Tx, err error) error {
	if errors.Is(err, index.ErrInvalid) {
		return fmt.Errorf("refusing to write: %w", err)
	}
	return StorageFailure(fmt.Errorf("tx %d cannot be indexed, nothing of it was written: %v", tx.ID, err))
}

func (g *group_) apply(tx *record.Tx, m index.Mark) error {
	return g.s.be.guard(func() error { return g.h.Apply(tx, m) })
}

// run builds and applies one writer's transaction. A build error (or a refusal) fails the
// writer alone; errGroupBroken fails the group.
func (g *group_) run(w *writer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(*index.Fault); ok {
				g.broken = g.s.readErr("writing", f)
				err = errGroupBroken
				return
			}
			w.panicked = r
			err = fmt.Errorf("build panicked: %v", r)
			if rerr := g.restart(); rerr != nil {
				err = rerr
			}
		}
	}()
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if w.genesis && g.h.Head() > 0 {
		return errNotGenesis
	}
	tx := &record.Tx{ID: g.h.Top() + 1, Time: g.s.clock().UTC(), By: w.by}
	// Transaction times never go backwards (reads as of a time search them, and a check
	// refuses a store whose times do): a clock stepped back stamps the previous time.
	if prev := g.h.TxTime(g.h.Top()); tx.Time.Before(prev) {
		tx.Time = prev
	}
	if w.staged != nil {
		return g.runStaged(w, tx)
	}
	if err := w.build(g.h, tx); err != nil {
		return err
	}
	normalize(tx)
	if err := codec.ValidateTx(tx); err != nil {
		return fmt.Errorf("refusing to write: %w", err)
	}
	if err := g.chain.Check(tx); err != nil {
		return fmt.Errorf("refusing to write: %w", err)
	}
	if err := g.apply(tx, index.Mark{}); err != nil {
		if rerr := g.restart(); rerr != nil {
			return rerr
		}
		return applyRefusal(tx, err)
	}
	g.applied = append(g.applied, tx)
	w.tx = tx
	return nil
}

// runStaged runs a WriteStaged build (see there).
func (g *group_) runStaged(w *writer, tx *record.Tx) error {
	var done index.Mark // what is applied of tx
	applied := false
	var broken error // applying failed: the kv transaction holds a part of it
	stage := func() error {
		if broken != nil {
			return broken
		}
		part := index.Since(tx, done)
		normalize(part)
		if err := g.chain.CheckPart(part, applied); err != nil {
			return fmt.Errorf("refusing to write: %w", err)
		}
		if err := g.apply(tx, done); err != nil {
			broken = applyRefusal(tx, err)
			return broken
		}
		applied = true
		done = index.MarkOf(tx)
		return nil
	}
	err := w.staged(g.h, tx, stage)
	if err == nil {
		err = stage()
	}
	if err == nil && broken != nil {
		err = broken
	}
	if err == nil {
		normalize(tx)
		if eerr := codec.ValidateTx(tx); eerr != nil {
			err = fmt.Errorf("refusing to write: %w", eerr)
		}
	}
	if err != nil {
		if applied {
			if rerr := g.restart(); rerr != nil {
				return rerr
			}
		}
		return err
	}
	g.applied = append(g.applied, tx)
	w.tx = tx
	return nil
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

// Refresh learns what other processes committed since this process's head (PostgreSQL); for
// memory and bbolt it does nothing. Reads do not need it (each reads the newest committed
// state); it tells subscribers.
func (s *Store) Refresh(ctx context.Context) error {
	if err := s.enter(); err != nil {
		return err
	}
	defer s.leave()
	if !s.be.shared() {
		return nil
	}
	head, err := s.readHead(ctx)
	if err != nil {
		return err
	}
	if head > s.Head() {
		s.learn(ctx, head)
	}
	return nil
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

// indexRecords answers a chain's questions from a write handle.
type indexRecords struct{ ix *index.Index }

func (r indexRecords) Top() record.TxID                      { return r.ix.Top() }
func (r indexRecords) HasClaim(id record.ClaimID) bool       { return r.ix.HasClaim(id) }
func (r indexRecords) HasArtifact(id record.ArtifactID) bool { return r.ix.HasArtifact(id) }
func (r indexRecords) Add(*record.Tx)                        {}
func (r indexRecords) HasToken(id string) bool               { return r.ix.HasToken(id) }
func (r indexRecords) VectorDim() int                        { return r.ix.VectorDim() }
func (r indexRecords) HasSource(id string) bool              { return r.ix.HasSource(id) }
func (r indexRecords) KeyVersion(k record.Key) int           { return r.ix.KeyVersion(k) }
func (r indexRecords) ArtifactVersion(name string) int       { return r.ix.ArtifactVersion(name) }

// storageErr wraps a storage failure.
func storageErr(what string, err error) error {
	if errors.Is(err, ErrDamaged) || errors.Is(err, ErrInUse) || errors.Is(err, ErrClosed) || errors.Is(err, kv.ErrClosed) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return StorageFailure(fmt.Errorf("%s: %w", what, err))
}

// ReleaseMapped tells the system that the pages of a bbolt file read so far need not stay in
// this process's memory (they stay in the page cache): a scan of a whole store, an export,
// would otherwise keep the file's every page resident. It does nothing on other backends.
func (s *Store) ReleaseMapped() {
	if b, ok := s.be.(*bboltBackend); ok {
		b.dropMapped()
	}
}
