// Package walkv puts a write-ahead log in front of a kv store (the bbolt file): a commit is
// one append to the log and one fdatasync, and what the log holds is applied to the store
// below in batches (checkpoints), each one transaction of that store.
//
// Why: bbolt makes a commit durable with two fdatasyncs (its pages, then its meta page) and
// rewrites every page on the path to each entry it changed, some seventeen pages for one claim;
// SQLite's WAL appends the pages it changed and syncs once. A claim's entries in a log are
// about a kilobyte, written in one sequential append: a commit costs one sync of one or two
// pages, and bbolt's page writes and syncs are paid once per checkpoint for thousands of
// commits.
//
// What a reader sees is the store below overlaid with the entries logged since its last
// checkpoint, held in memory in copy-on-write B-trees (layers); the log is what makes them
// durable. The log is never larger than about a checkpoint's worth of commits, and opening
// replays it and checkpoints it at once, so opening stays a matter of milliseconds and the
// memory of the overlay stays bounded.
//
// The log's files are PATH-log-N, N the generation: a checkpoint starts a new generation, so
// that commits go on while the one before is applied, and removes the files of the
// generations it applied. Replaying them again is harmless: a checkpoint writes the newest
// value of each key it holds, which the store below may already have.
package walkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tidwall/btree"

	"github.com/mql-dev/mql/graphstore/kv"
)

// Options configure a Store.
type Options struct {
	// Path names the log: its files are Path+"-log-N".
	Path string
	// NoSync leaves out the fdatasync of each commit (an import, a test).
	NoSync bool
	// ReadOnly replays the log into memory and never writes: no commit, no checkpoint, no file.
	ReadOnly bool
	// CheckpointEntries is how many logged entries start a checkpoint (default 16384).
	CheckpointEntries int
	// MaxPending is how many entries the log may hold beyond what the store below does before a
	// new write transaction waits for a checkpoint to finish (default 4 × CheckpointEntries):
	// what bounds the overlay's memory when commits come faster than checkpoints apply them.
	MaxPending int
	// CheckpointAfter is how long the first commit after a checkpoint waits for the next one
	// at most (default 1 s): a store at rest holds everything in the store below.
	CheckpointAfter time.Duration
	// MaxKey, if set, is the longest key the store below takes (bbolt's): a longer one is
	// refused when it is written, never acknowledged in the log and then refused by the
	// checkpoint, which would leave a log that no open could apply.
	MaxKey int
	// Guard, if set, runs every call into the store below (the bbolt backend's guard against a
	// damaged file's panics).
	Guard func(func() error) error
	// Checkpointed, if set, is called after each checkpoint (the bbolt backend releases the
	// pages the checkpoint read).
	Checkpointed func()
	// Failed, if set, is called with the error of a checkpoint that failed; the checkpoint is
	// tried again at the next commit and at Close, and until one succeeds the log keeps
	// everything.
	Failed func(error)
}

// ErrLog is wrapped by the errors of a log that cannot be written or read.
var ErrLog = errors.New("walkv: the write-ahead log")

// ErrKeyTooLarge is returned by a write of a key longer than Options.MaxKey.
var ErrKeyTooLarge = errors.New("walkv: key too large")

// item is an entry of a layer: a value, or the deletion of a key (del). Keys carry their
// bucket's number as their first byte, as in boltkv.
type item struct {
	k, v []byte
	del  bool
}

func less(a, b item) bool { return bytes.Compare(a.k, b.k) < 0 }

type tree = btree.BTreeG[item]

// newTree returns a layer, without the tree's lock: a published layer is only read, and only
// the writer (holding the writer's token) copies one, the newest (Copy marks the tree it
// copies); an iterator of a locked tree would hold its read lock through a scan's callbacks.
func newTree() *tree { return btree.NewBTreeGOptions(less, btree.Options{NoLocks: true}) }

// Store is a kv.Store: the store below with the log in front of it. It is safe for concurrent
// use.
type Store struct {
	base kv.Store
	n    int // buckets
	opts Options

	mu sync.Mutex
	// layers overlay base, oldest first. The last is where commits go; the ones before it are
	// being applied to base by a checkpoint. Published trees are never changed: a writer
	// changes a copy and publishes it; nor is the slice (a snapshot shares it): it is replaced.
	layers []*tree
	closed bool

	wmu chan struct{} // the writer's token: a write transaction, a log rotation
	// gen is the generation commits go to, and log its file once the first commit created it
	// (a store only read writes no log); both change holding wmu.
	gen uint64
	log *logFile
	// record is the buffer the last write transaction built its log record in, kept for the
	// next (held with wmu): a bulk load's records are megabytes each, and building each in a
	// new, growing buffer was a tenth of what it allocated.
	record []byte
	logs   []*logFile // the files of generations not yet checkpointed, oldest first; guarded by mu
	// entries is how many entries were logged into the newest layer: a checkpoint starts
	// past opts.CheckpointEntries.
	entries int

	kick chan struct{} // wakes the checkpointer
	stop chan struct{}
	done chan struct{}
	cmu  sync.Mutex // one checkpoint at a time (the checkpointer's, Close's)
	err  error      // the last checkpoint's failure, guarded by mu
	// drained is closed when a checkpoint ends (and replaced): writers held back by MaxPending
	// wait for it. Guarded by mu.
	drained chan struct{}
	// rotations counts the generations started, guarded by mu: a snapshot taken across one is
	// taken again (view).
	rotations uint64
	// version counts the commits published since Open, guarded by mu (kv.Versioned).
	version uint64

	// idle holds read transactions of the store below that ended while it had not changed
	// since they began, for the next snapshots to reuse: a live lookup served from the cache
	// then begins nothing in bbolt (Begin, its meta page, the bucket's root) and ends nothing.
	// baseGen counts the changes to the store below (each checkpoint's apply moves it at its
	// start and at its end, as does Exclusive); a transaction is only kept, or reused, while
	// baseGen is what it was when the transaction began and nothing is changing the store
	// below (exclusive == 0). All guarded by mu.
	idle      []kv.ReadTx
	baseGen   uint64
	exclusive int
}

// maxIdle bounds the read transactions kept for reuse: about the readers that run at once.
const maxIdle = 8

// Open opens the log in front of base, replays it, and (unless read-only) checkpoints what
// it replayed, so that base holds every commit the log acknowledged before it returns.
func Open(ctx context.Context, base kv.Store, schema kv.Schema, opts Options) (*Store, error) {
	if opts.CheckpointEntries <= 0 {
		opts.CheckpointEntries = 16384
	}
	if opts.MaxPending <= 0 {
		opts.MaxPending = 4 * opts.CheckpointEntries
	}
	if opts.CheckpointAfter <= 0 {
		opts.CheckpointAfter = time.Second
	}
	s := &Store{base: base, n: len(schema.Buckets), opts: opts, wmu: make(chan struct{}, 1), drained: make(chan struct{}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	found, err := findLogs(opts.Path)
	if err != nil {
		return nil, err
	}
	t := newTree()
	var next uint64 = 1
	for _, f := range found {
		if err := f.replay(func(op op) { t.Set(item(op)) }); err != nil {
			return nil, err
		}
		next = f.gen + 1
	}
	s.layers = []*tree{t}
	if opts.ReadOnly {
		close(s.done)
		return s, nil
	}
	s.logs = found
	if t.Len() > 0 {
		// What the log acknowledged goes into base now: the files of a crash end with a torn
		// record, which a new commit must not be appended behind.
		if err := s.apply(ctx, []*tree{t}); err != nil {
			return nil, err
		}
		s.layers = []*tree{newTree()}
	}
	for _, f := range s.logs {
		if err := f.remove(); err != nil {
			return nil, err
		}
	}
	s.logs, s.gen = nil, next
	go s.checkpointer()
	return s, nil
}

// guard runs fn on the store below under the caller's guard.
func (s *Store) guard(fn func() error) error {
	if s.opts.Guard != nil {
		return s.opts.Guard(fn)
	}
	return fn()
}

// view is what a transaction reads: base's snapshot and the layers as they were. gen is the
// generation of the store below that the snapshot of base reads, or 0 if it may not be kept
// for reuse.
func (s *Store) view(ctx context.Context) (rt kv.ReadTx, layers []*tree, version, gen uint64, err error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, nil, 0, 0, kv.ErrClosed
		}
		layers, version = s.layers, s.version
		rot, gen0, stable := s.rotations, s.baseGen, s.exclusive == 0
		if n := len(s.idle); n > 0 && stable {
			// The store below has not changed since it began (see idle), so it reads what a
			// new one would: base as the layers expect it.
			rt = s.idle[n-1]
			s.idle[n-1] = nil
			s.idle = s.idle[:n-1]
			s.mu.Unlock()
			return rt, layers, version, gen0 + 1, nil
		}
		s.mu.Unlock()
		// Not under mu: bbolt's Begin waits while a checkpoint's commit remaps the file, which
		// waits for every open read transaction to end, a writer's included, and the writer
		// needs mu to publish its commit.
		err = s.guard(func() error {
			var err error
			rt, err = s.base.Read(ctx)
			return err
		})
		if err != nil {
			return nil, nil, 0, 0, err
		}
		// The snapshot of base and the layers go together unless a new generation started
		// meanwhile: a checkpoint of it may have put in base commits newer than the layers
		// taken. A checkpoint of layers taken is harmless: they hold what it put in base.
		s.mu.Lock()
		same := s.rotations == rot
		// Kept for reuse only if base did not change while it began: it then reads base as it
		// is until the next change.
		keep := stable && s.exclusive == 0 && s.baseGen == gen0
		s.mu.Unlock()
		if same {
			if !keep {
				return rt, layers, version, 0, nil
			}
			return rt, layers, version, gen0 + 1, nil
		}
		s.guard(func() error { rt.End(); return nil })
	}
}

// Exclusive runs fn, which changes the store below outside a checkpoint, with no read
// transaction kept idle: bbolt's commit may have to remap the file, which waits for every open
// read transaction to end, and an idle one never would. Snapshots taken meanwhile read base
// fresh, and none is kept.
func (s *Store) Exclusive(fn func() error) error {
	s.hold()
	defer s.release()
	return fn()
}

// hold stops the reuse of base's read transactions and ends the idle ones: base is about to
// change.
func (s *Store) hold() {
	s.mu.Lock()
	s.exclusive++
	s.baseGen++
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	s.endAll(idle)
}

// release ends a hold: transactions begun from now on read base as changed.
func (s *Store) release() {
	s.mu.Lock()
	s.exclusive--
	s.baseGen++
	s.mu.Unlock()
}

func (s *Store) endAll(txs []kv.ReadTx) {
	if len(txs) == 0 {
		return
	}
	s.guard(func() error {
		for _, rt := range txs {
			rt.End()
		}
		return nil
	})
}

// endBase ends a transaction's snapshot of base, or keeps it for the next snapshot if base has
// not changed since it began (gen, from view).
func (s *Store) endBase(rt kv.ReadTx, gen uint64) {
	if gen != 0 {
		s.mu.Lock()
		if !s.closed && s.exclusive == 0 && s.baseGen+1 == gen && len(s.idle) < maxIdle {
			s.idle = append(s.idle, rt)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
	s.guard(func() error { rt.End(); return nil })
}

// Read begins a snapshot.
func (s *Store) Read(ctx context.Context) (kv.ReadTx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt, all, version, gen, err := s.view(ctx)
	if err != nil {
		return nil, err
	}
	// The empty layers left out (all is shared: it is copied only when one is).
	layers := all
	for i, l := range all {
		if l.Len() == 0 {
			layers = slices.Clone(all[:i])
			for _, l := range all[i+1:] {
				if l.Len() > 0 {
					layers = append(layers, l)
				}
			}
			break
		}
	}
	return &snapshot{readTx{s: s, base: rt, gen: gen, layers: layers}, version}, nil
}

// snapshot is a read transaction; a write transaction is not one (it has no version of its
// own until it commits).
type snapshot struct {
	readTx
	version uint64
}

// Version implements kv.Versioned: the commits published before the snapshot began.
func (t *snapshot) Version() uint64 { return t.version }

// Write begins the write transaction, waiting for the one in progress to end.
func (s *Store) Write(ctx context.Context) (kv.WriteTx, error) {
	if s.opts.ReadOnly {
		return nil, fmt.Errorf("%w: opened read-only", ErrLog)
	}
	if err := s.throttle(ctx); err != nil {
		return nil, err
	}
	select {
	case s.wmu <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rt, layers, _, gen, err := s.view(ctx)
	if err != nil {
		<-s.wmu
		return nil, err
	}
	// The newest layer, copied: the transaction's writes go into the copy, which Commit
	// publishes.
	layers = slices.Clone(layers)
	cur := layers[len(layers)-1].Copy()
	layers[len(layers)-1] = cur
	return &writeTx{readTx: readTx{s: s, base: rt, gen: gen, layers: layers}, cur: cur, ops: append(s.record[:0], make([]byte, recHeader)...)}, nil
}

// maxKeptRecord is the largest record buffer a store keeps between write transactions.
const maxKeptRecord = 16 << 20

// throttle waits while the log holds more than MaxPending entries the store below does not,
// until a checkpoint ends. A checkpoint that failed holds nobody back: the log keeps what the
// writes add, and a full disk refuses them there.
func (s *Store) throttle(ctx context.Context) error {
	for {
		s.mu.Lock()
		n := 0
		for _, l := range s.layers {
			n += l.Len()
		}
		if n <= s.opts.MaxPending || s.closed || s.err != nil {
			s.mu.Unlock()
			return nil
		}
		ch := s.drained
		s.mu.Unlock()
		select {
		case s.kick <- struct{}{}:
		default:
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close checkpoints what the log holds and removes its files; if that fails, the files stay
// and the next Open replays them.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	if s.opts.ReadOnly {
		s.mu.Lock()
		s.closed, s.layers = true, nil
		idle := s.idle
		s.idle = nil
		s.mu.Unlock()
		s.endAll(idle)
		return nil
	}
	close(s.stop)
	<-s.done
	s.wmu <- struct{}{} // no writer from here on
	err := s.checkpoint(context.Background(), false)
	s.mu.Lock()
	s.closed = true
	// Ended before the store below closes, which waits for every read transaction.
	idle := s.idle
	s.idle = nil
	s.mu.Unlock()
	s.endAll(idle)
	s.mu.Lock()
	for _, f := range s.logs {
		f.close()
	}
	s.mu.Unlock()
	return err
}

// Pending reports how many entries the log holds that the store below does not.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, l := range s.layers {
		n += l.Len()
	}
	return n
}

// Checkpoint applies what the log holds to the store below now.
func (s *Store) Checkpoint(ctx context.Context) error {
	if s.opts.ReadOnly {
		return nil
	}
	return s.checkpoint(ctx, true)
}

func (s *Store) checkpointer() {
	defer close(s.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	armed := false
	for {
		select {
		case <-s.stop:
			timer.Stop()
			return
		case <-s.kick:
			s.mu.Lock()
			full := s.entries >= s.opts.CheckpointEntries
			s.mu.Unlock()
			if !full {
				if !armed {
					timer.Reset(s.opts.CheckpointAfter)
					armed = true
				}
				continue
			}
		case <-timer.C:
		}
		timer.Stop()
		armed = false
		if err := s.checkpoint(context.Background(), true); err != nil && s.opts.Failed != nil {
			s.opts.Failed(err)
		}
	}
}

// checkpoint applies every layer but a new, empty one to base, then drops them and removes
// their logs. rotate takes the writer's token to start a new generation; without it, the
// caller holds the token and no new generation is started (Close).
func (s *Store) checkpoint(ctx context.Context, rotate bool) error {
	s.cmu.Lock()
	defer s.cmu.Unlock()
	if rotate {
		select {
		case s.wmu <- struct{}{}:
		case <-s.stop:
			return nil // Close checkpoints
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		if rotate {
			<-s.wmu
		}
		return kv.ErrClosed
	}
	frozen := append([]*tree(nil), s.layers...)
	s.mu.Unlock()
	empty := true
	for _, l := range frozen {
		empty = empty && l.Len() == 0
	}
	if empty {
		if rotate {
			<-s.wmu
			return nil
		}
		s.retire(^uint64(0)) // Close: nothing to replay
		return nil
	}
	upTo := ^uint64(0) // Close: every file goes
	if rotate {
		s.mu.Lock()
		s.layers = append(frozen, newTree())
		s.entries = 0
		s.rotations++
		s.mu.Unlock()
		// The next commit starts the next generation's file.
		s.gen++
		s.log = nil
		upTo = s.gen
		<-s.wmu // commits go on into the new generation while base takes the frozen layers
	}
	if err := s.apply(ctx, frozen); err != nil {
		return s.failed(err)
	}
	s.mu.Lock()
	s.layers = s.layers[len(frozen):]
	if len(s.layers) == 0 {
		s.layers = []*tree{newTree()}
	}
	s.err = nil
	close(s.drained)
	s.drained = make(chan struct{})
	s.mu.Unlock()
	s.retire(upTo)
	if s.opts.Checkpointed != nil {
		s.opts.Checkpointed()
	}
	return nil
}

// retire removes the files of the generations before upTo, which base holds. A file left
// behind is replayed once more at the next open: harmless.
func (s *Store) retire(upTo uint64) {
	s.mu.Lock()
	var gone []*logFile
	keep := s.logs[:0:0]
	for _, f := range s.logs {
		if f.gen < upTo {
			gone = append(gone, f)
		} else {
			keep = append(keep, f)
		}
	}
	s.logs = keep
	s.mu.Unlock()
	for _, f := range gone {
		f.remove()
	}
}

func (s *Store) failed(err error) error {
	s.mu.Lock()
	s.err = err
	close(s.drained)
	s.drained = make(chan struct{})
	s.mu.Unlock()
	return err
}

// apply writes the newest entry of each key of layers (oldest first) into base, in one
// transaction.
func (s *Store) apply(ctx context.Context, layers []*tree) error {
	merged := layers[len(layers)-1]
	if len(layers) > 1 {
		// A new tree rather than a Copy of the newest: only the writer copies layers.
		merged = newTree()
		for i := len(layers) - 1; i >= 0; i-- {
			layers[i].Scan(func(it item) bool {
				if _, ok := merged.Get(it); !ok {
					merged.Set(it)
				}
				return true
			})
		}
	}
	s.hold()
	defer s.release()
	return s.guard(func() error {
		wt, err := s.base.Write(ctx)
		if err != nil {
			return err
		}
		var werr error
		merged.Scan(func(it item) bool {
			b, k := kv.Bucket(it.k[0]), it.k[1:]
			if it.del {
				werr = wt.Delete(b, k)
			} else {
				werr = wt.Put(b, k, it.v)
			}
			return werr == nil
		})
		if werr != nil {
			wt.Rollback()
			return werr
		}
		return wt.Commit(ctx)
	})
}

type readTx struct {
	s      *Store
	base   kv.ReadTx
	gen    uint64  // base's generation, if it may be kept for reuse (view)
	layers []*tree // oldest first
	buf    []byte
}

// Size is the base snapshot's Size, when it has one (a bbolt file's): see boltkv.
func (t *readTx) Size() int64 {
	if s, ok := t.base.(interface{ Size() int64 }); ok {
		return s.Size()
	}
	return 0
}

func (t *readTx) End() {
	if t.base != nil {
		t.s.endBase(t.base, t.gen)
		t.base, t.layers = nil, nil
	}
}

// key is b's number and key, in a buffer the next call reuses.
func (t *readTx) key(b kv.Bucket, key []byte) ([]byte, error) {
	if t.base == nil {
		return nil, kv.ErrClosed
	}
	if int(b) >= t.s.n {
		return nil, fmt.Errorf("walkv: no bucket %d", b)
	}
	t.buf = append(append(t.buf[:0], byte(b)), key...)
	return t.buf, nil
}

func (t *readTx) Get(b kv.Bucket, key []byte) ([]byte, error) {
	k, err := t.key(b, key)
	if err != nil {
		return nil, err
	}
	for i := len(t.layers) - 1; i >= 0; i-- {
		if it, ok := t.layers[i].Get(item{k: k}); ok {
			if it.del {
				return nil, nil
			}
			return it.v, nil
		}
	}
	return t.base.Get(b, key)
}

func (t *readTx) Scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) (bool, error)) error {
	p, err := t.key(b, prefix)
	if err != nil {
		return err
	}
	if len(t.layers) == 0 {
		return t.base.Scan(b, prefix, opts, fn)
	}
	full := bytes.Clone(p)
	var from []byte
	if opts.From != nil {
		from = append([]byte{byte(b)}, opts.From...)
	}
	ov := newOverlay(t.layers, full, from, opts.Reverse)
	defer ov.release()
	// before reports whether overlay key a comes before base key k in the scan's order.
	before := func(a, k []byte) int {
		c := bytes.Compare(a, k)
		if opts.Reverse {
			return -c
		}
		return c
	}
	stopped := false
	var ferr error
	emit := func(it item) bool {
		if it.del {
			return true
		}
		more, err := fn(it.k[1:], it.v)
		if err != nil {
			ferr = err
		}
		if !more || err != nil {
			stopped = true
			return false
		}
		return true
	}
	var kb []byte
	err = t.base.Scan(b, prefix, opts, func(k, v []byte) (bool, error) {
		kb = append(append(kb[:0], byte(b)), k...)
		for ov.ok {
			c := before(ov.cur.k, kb)
			if c > 0 {
				break
			}
			it := ov.cur
			ov.next()
			if c == 0 {
				// The overlay's entry replaces base's.
				return emit(it), ferr
			}
			if !emit(it) {
				return false, ferr
			}
		}
		more, err := fn(k, v)
		if !more || err != nil {
			stopped = true
		}
		return more, err
	})
	if err != nil || stopped {
		return err
	}
	for ov.ok {
		it := ov.cur
		ov.next()
		if !emit(it) {
			return ferr
		}
	}
	return nil
}

type writeTx struct {
	readTx
	cur     *tree  // the newest layer's copy, holding this transaction's writes
	ops     []byte // its log record: a header's room (recHeader), then its entries
	entries int
	done    bool
}

func (t *writeTx) Put(b kv.Bucket, key, value []byte) error {
	return t.write(b, key, op{v: value})
}

func (t *writeTx) Delete(b kv.Bucket, key []byte) error {
	return t.write(b, key, op{del: true})
}

// write records o (a put or a deletion) under b's key in the transaction's layer and its log
// record.
func (t *writeTx) write(b kv.Bucket, key []byte, o op) error {
	if m := t.s.opts.MaxKey; m > 0 && len(key) > m {
		return fmt.Errorf("%w: %d bytes, and the store takes keys of at most %d", ErrKeyTooLarge, len(key), m)
	}
	k, err := t.key(b, key)
	if err != nil {
		return err
	}
	o.k = bytes.Clone(k)
	t.cur.Set(item(o))
	t.ops = appendOp(t.ops, o)
	t.entries++
	return nil
}

// Commit appends the transaction's entries to the log, syncs it, and publishes them.
func (t *writeTx) Commit(ctx context.Context) error {
	if t.done || t.base == nil {
		return kv.ErrClosed
	}
	t.done = true
	s := t.s
	defer func() { <-s.wmu }()
	defer t.End()
	if t.entries == 0 {
		return nil
	}
	if s.log == nil {
		lf, err := createLog(s.opts.Path, s.gen, !s.opts.NoSync)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.logs = append(s.logs, lf)
		s.mu.Unlock()
		s.log = lf
	}
	err := s.log.appendRecord(t.ops)
	if cap(t.ops) <= maxKeptRecord {
		s.record = t.ops[:0] // held with wmu, which the deferred release gives back after this
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return kv.ErrClosed
	}
	layers := slices.Clone(s.layers)
	layers[len(layers)-1] = t.cur
	s.layers = layers
	s.entries += t.entries
	s.version++
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
	return nil
}

func (t *writeTx) Rollback() {
	if t.done {
		return
	}
	t.done = true
	t.End()
	<-t.s.wmu
}
