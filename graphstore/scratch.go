package graphstore

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/cayleygraph/quad"
	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// scratch is a throwaway store in a temporary bbolt file, never synced: a check replays a
// store's records into it, as the state it checks each transaction against (CheckState) and
// to compare the entries they give with the ones the store holds.
type scratch struct {
	path string
	db   *bolt.DB
	kv   *boltkv.Store
	sp   *bulkSpool // the entries of index.BulkBuckets, written in at the end
	wt   kv.WriteTx
	h    *index.Index
	// tick, if set, is called every few hundred entries written (the check's releaser).
	tick func()
	// label is the format the replay is labelled with: a check replays a store of an earlier
	// format (ReadEarlier) under its own label, which keeps the replay to what that format
	// holds (index.InitAs).
	label string
	// filing is how the store checked files its vectors, which its replay copies.
	filing index.Filing
}

// batchPuts is about how many entries a kv transaction written in bulk (a scratch store, an
// import) holds before it commits. bbolt splits a page only when it commits, and inserts into
// one in-memory page move everything after the key: a transaction of tens of thousands of
// entries into a small tree was quadratic (a check of 20k claims spent 35 of its 38 s there).
const batchPuts = 4 << 10

func newScratch() (*scratch, error) {
	f, err := os.CreateTemp("", "mql-check-*.db")
	if err != nil {
		return nil, err
	}
	path := f.Name()
	f.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	if err := boltkv.Init(db); err != nil {
		db.Close()
		os.Remove(path)
		return nil, err
	}
	s := &scratch{path: path, db: db, kv: boltkv.New(db, index.Schema),
		sp: newBulkSpool(filepath.Dir(path), filepath.Base(path)+".spool-*")}
	return s, nil
}

// handle is the write handle over every transaction added so far, the ones of the batch not
// yet committed included: a check's state (CheckState) reads it.
func (s *scratch) handle() (*index.Index, error) {
	if s.h != nil {
		return s.h, nil
	}
	wt, err := spoolStore{s.kv, s.sp}.Write(context.Background())
	if err != nil {
		return nil, err
	}
	// WriterEarlier: the replay of a store of an earlier format is labelled with it.
	h, err := index.WriterEarlier(wt)
	if err == index.ErrNotStore {
		if err = index.InitAs(wt, s.label); err == nil {
			h, err = index.WriterEarlier(wt)
		}
	}
	if err != nil {
		wt.Rollback()
		return nil, err
	}
	h.FileVectorsAs(s.filing)
	if s.tick != nil {
		h.Every(s.tick)
	}
	s.wt, s.h = wt, h
	return h, nil
}

// add applies tx after the transactions added before, committing the batch when it is full.
func (s *scratch) add(tx *record.Tx, _ []quad.Quad) error {
	h, err := s.handle()
	if err != nil {
		return err
	}
	if err := h.Apply(tx, index.Mark{}); err != nil {
		return err
	}
	if s.sp.passed >= batchPuts {
		return s.flush()
	}
	return nil
}

func (s *scratch) flush() error {
	if s.wt == nil {
		return nil
	}
	err := s.wt.Commit(context.Background())
	s.wt, s.h = nil, nil
	return err
}

// finish commits what is pending and writes the spooled entries in: the replay is whole.
func (s *scratch) finish(ctx context.Context) error {
	if err := s.flush(); err != nil {
		return err
	}
	return s.sp.finish(ctx, s.kv, s.tick)
}

func (s *scratch) read() (kv.ReadTx, error) { return s.kv.Read(context.Background()) }

func (s *scratch) close() {
	if s.wt != nil {
		s.wt.Rollback()
	}
	s.db.Close()
	os.Remove(s.path)
	s.sp.close()
}

// A check or an import releases the pages of the bbolt files it reads and writes
// (dropMapped) once more than mappedBudget of them are resident. Every read of a page not
// mapped yet maps the 64 KiB around it that the page cache holds (the kernel's fault-around,
// which madvise(MADV_RANDOM) does not turn off): the lookups and index entries of one
// transaction of a thousand claims map a hundred megabytes or more of a large file, far more
// than its batch or a count of transactions can bound. Releasing on a timer instead (every
// 10 ms) spent a tenth of an import's time unmapping pages and faulting them in again. The
// budget is 32 MiB, not more, because a commit maps pages faster than the releaser runs (see
// trim): an import of the 1M-claim export peaked at 257-281 MiB with 64 MiB, 225 MiB with 32
// MiB and trim.
const (
	mappedBudget = 32 << 20
	releasePoll  = 2 * time.Millisecond
)

// releaser drops the mapped pages of its files (dropMapped) whenever the process's
// file-backed resident pages have grown by more than mappedBudget since it started: checked
// every releasePoll by a goroutine of its own, and by the scan itself wherever it calls check
// (between transactions), which bounds the growth however late the goroutine runs on a busy
// machine. Where the system does not say how much is mapped, every check drops.
type releaser struct {
	mu     sync.Mutex // the gauge's buffer, budget
	g      *mappedGauge
	base   int64
	budget int64
	dbs    []*bolt.DB
	held   *bolt.DB // a db whose snapshot the releaser's user holds until after stop
	size   int64    // the held snapshot's file size
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// releasing starts a releaser of dbs. Stop it before closing them.
func releasing(dbs ...*bolt.DB) *releaser { return releasingHeld(nil, 0, dbs...) }

// releasingHeld is releasing that also drops the pages of held, of which the caller holds a
// read snapshot that saw the file at size bytes, until after stop (dropHeld).
func releasingHeld(held *bolt.DB, size int64, dbs ...*bolt.DB) *releaser {
	r := &releaser{g: openMappedGauge(), budget: mappedBudget, dbs: dbs, held: held, size: size, done: make(chan struct{})}
	r.base, _ = r.g.read()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(releasePoll)
		defer t.Stop()
		for {
			select {
			case <-r.done:
				return
			case <-t.C:
				r.check()
			}
		}
	}()
	return r
}

// check drops the files' mapped pages if more than the budget are resident.
func (r *releaser) check() { r.dropOver(1) }

// dropOver drops the files' mapped pages if more than the budget's part-th part of them are
// resident.
func (r *releaser) dropOver(part int64) {
	r.mu.Lock()
	n, ok := r.g.read()
	within := ok && n-r.base <= r.budget/part
	r.mu.Unlock()
	if !within {
		r.drop()
	}
}

// trim drops the files' mapped pages if more than a quarter of the budget is resident: before
// a commit of a large batch. The commit reads the old page of every node it rewrites (to free
// it), and those reads map tens of megabytes within milliseconds, before the releaser's
// goroutine gets a core on a busy machine; what is resident when the commit begins is the floor
// that burst stands on.
func (r *releaser) trim() { r.dropOver(4) }

func (r *releaser) drop() {
	dropHeld(r.held, r.size)
	for _, db := range r.dbs {
		dropMapped(db)
	}
}

// stop ends the goroutine and drops what is still mapped: a check in a server leaves nothing
// of its scan resident.
func (r *releaser) stop() {
	r.once.Do(func() {
		close(r.done)
		r.wg.Wait()
		r.g.close()
		r.drop()
	})
}
