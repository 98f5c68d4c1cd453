package graphstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	"github.com/cayleygraph/quad"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// bboltBackend is Cayley's key-value quad store (graph/kv) on one bbolt file.
//
// Cayley's registered "bbolt" store (graph/kv/bbolt) treats its path as a directory holding
// indexes.bolt and opens it with no timeout, so a second process blocks forever. This backend
// does what that registration does — hidalgo's bbolt KV under graph/kv's Init and New — but on
// the file itself and with a lock timeout, so a file held by another process is reported as
// ErrInUse instead of hanging.
//
// It also defends the process against a damaged file (see boltfile.go and guard.go): the file
// is locked and inspected before bbolt maps it, every call into bbolt and Cayley runs guarded,
// and once damage is seen every write is refused with ErrDamaged.
type bboltBackend struct {
	path      string
	timeout   time.Duration
	mustExist bool // never create the file nor initialise it (Options.MustExist)
	qs        graph.QuadStore
	db        *bolt.DB // the file under qs, for the snapshot bucket
	file      *os.File // bbolt's file, opened and locked by us: fstat before each write
	layout    *boltLayout
	recorded  string // the verdict of an earlier check recorded in the file (damageBucket)

	mu sync.Mutex // guards damaged and poisoned: readers and writers consult them
	// damaged is the first damage seen, wrapping ErrDamaged; nil while none was. It outlives
	// reopen: a file found damaged stays refused for writes until the Store is opened again.
	damaged error
	// poisoned is set when bbolt panicked or faulted: it may have left its own locks held
	// (a fault while a transaction begins leaves its meta lock locked), so it is not called
	// again, not even to close it; reads the index answers go on.
	poisoned bool
	noSync   bool // an import: the file is synced once, at the end
}

// walkOnOpenBytes bounds the files whose every page Open checks (walkBolt). The walk reads the
// whole file: 0.7–0.9 s for the 520 MB of a 100k-claim store on the development machine (2
// busy cores; bbolt's own check took 1.1–1.3 s), so about 0.1 s for 64 MiB (some 12k claims),
// and seconds at a million claims, which Open cannot afford. Larger files get the meta-page and
// freelist checks only; their pages are checked by `mql check`, and by bbolt as it reads them.
const walkOnOpenBytes = 64 << 20

func openBBolt(path string, timeout time.Duration) (*bboltBackend, error) {
	return openBBoltFile(path, timeout, false)
}

// openBBoltFile opens the file at path; with mustExist it neither creates nor initialises it,
// and a file that is missing, empty or not a Cayley store is ErrNoStore.
func openBBoltFile(path string, timeout time.Duration, mustExist bool) (*bboltBackend, error) {
	if mustExist {
		// bolt.Open creates a missing file and initialises an empty one: look first.
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, errNoStore(err, "%s does not exist", path)
		case err != nil:
			return nil, fmt.Errorf("graphstore: cannot open bbolt file %s: %w: %w", path, ErrStorage, err)
		case fi.IsDir():
			return nil, errNoStore(nil, "%s is a directory, not an mql store", path)
		case fi.Size() == 0:
			return nil, errNoStore(nil, "%s is an empty file, not an mql store", path)
		}
	}
	b := &bboltBackend{path: path, timeout: timeout, mustExist: mustExist}
	if err := b.open(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bboltBackend) open() error {
	flags := os.O_RDWR | os.O_CREATE
	if b.mustExist {
		flags = os.O_RDWR
	}
	f, err := os.OpenFile(b.path, flags, 0o600)
	if err != nil {
		return fmt.Errorf("graphstore: cannot open bbolt file %s: %w: %w", b.path, ErrStorage, err)
	}
	fail := func(err error) error {
		// Unlocked explicitly: a mapping bbolt made before it failed keeps the file open.
		unlockFile(f)
		f.Close()
		return err
	}
	if err := lockFile(f, b.timeout); err != nil {
		if errors.Is(err, errLockTimeout) {
			return fail(b.inUse())
		}
		return fail(fmt.Errorf("graphstore: cannot lock bbolt file %s: %w: %w", b.path, ErrStorage, err))
	}
	st, err := f.Stat()
	if err != nil {
		return fail(fmt.Errorf("graphstore: cannot open bbolt file %s: %w: %w", b.path, ErrStorage, err))
	}
	if st.Size() > 0 {
		l, err := inspectBolt(f, st.Size())
		if err != nil {
			return fail(b.damagedErr(err.Error()))
		}
		b.layout = l
		problems := l.problems
		if st.Size() <= walkOnOpenBytes {
			problems = append(problems, walkBolt(context.Background(), f, l)...)
		}
		if len(problems) > 0 {
			msg := problems[0]
			if len(problems) > 1 {
				msg += fmt.Sprintf(" (and %d more problems)", len(problems)-1)
			}
			b.markDamaged(msg)
		}
	}
	var db *bolt.DB
	err = b.guard(func() error {
		var err error
		db, err = bolt.Open(b.path, 0o600, &bolt.Options{
			Timeout:  b.timeout,
			NoSync:   b.noSync,
			OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil },
		})
		return err
	})
	switch {
	case errors.Is(err, ErrDamaged):
		return fail(err)
	case errors.Is(err, berrors.ErrTimeout):
		return fail(b.inUse())
	case err != nil:
		return fail(fmt.Errorf("graphstore: cannot open bbolt file %s: %w: %w", b.path, ErrStorage, err))
	}
	b.db, b.file = db, f
	if b.layout == nil { // a new file: bbolt chose the page size
		b.layout = &boltLayout{pageSize: db.Info().PageSize}
	}
	kv := hbolt.New(db)
	var qs graph.QuadStore
	err = b.guard(func() error {
		// Init creates the buckets of a new file and reports ErrDatabaseExists for an existing
		// one. A damaged file is never written, not even to initialise it.
		// A file that must exist is not initialised either: it may be another program's.
		if b.damage() == nil && !b.mustExist {
			if err := ckv.Init(kv, nil); err != nil && !errors.Is(err, graph.ErrDatabaseExists) {
				return fmt.Errorf("graphstore: cannot initialise %s as a Cayley store: %w: %w", b.path, ErrStorage, err)
			}
		}
		var err error
		qs, err = ckv.New(kv, graph.Options{ckv.OptNoBloom: true})
		if errors.Is(err, graph.ErrNotInitialized) {
			return errNoStore(nil, "%s is a bbolt file but not an mql store", b.path)
		}
		if err != nil {
			return fmt.Errorf("graphstore: %s is not a Cayley store: %w: %w", b.path, ErrStorage, err)
		}
		return nil
	})
	if err != nil {
		b.close()
		return err
	}
	b.qs = qs
	recorded, err := b.readDamage()
	if err != nil {
		b.close()
		return err
	}
	if b.recorded = recorded; recorded != "" {
		b.markDamaged(recorded)
	}
	return nil
}

func (b *bboltBackend) inUse() error {
	return fmt.Errorf("graphstore: %s is held by another process (its lock was not released within %s); close the other mql session using it, or open another file: %w", b.path, b.timeout, ErrInUse)
}

// damagedErr is the error for damage described by what, saying what to do.
func (b *bboltBackend) damagedErr(what string) error {
	what = strings.TrimPrefix(what, ErrDamaged.Error()+": ")
	return fmt.Errorf("%s is damaged: %s; run `mql check %s` to see what is wrong, and restore the store from an export or a backup: %w", b.path, what, b.path, ErrDamaged)
}

// markDamaged records damage (the first is kept) and returns the error every write now gets.
func (b *bboltBackend) markDamaged(what string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.damaged == nil {
		b.damaged = b.damagedErr(what)
	}
	return b.damaged
}

// damage returns the damage seen, or nil.
func (b *bboltBackend) damage() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.damaged
}

// guard runs fn, a call into bbolt or Cayley, unless bbolt was poisoned, and marks the store
// damaged and bbolt poisoned if fn panicked or faulted.
func (b *bboltBackend) guard(fn func() error) error {
	b.mu.Lock()
	poisoned, damaged := b.poisoned, b.damaged
	b.mu.Unlock()
	if poisoned {
		return damaged
	}
	err := guarded(fn)
	var pe *enginePanic
	if errors.As(err, &pe) {
		b.mu.Lock()
		b.poisoned = true
		b.mu.Unlock()
		return b.markDamaged(pe.Error())
	}
	return err
}

// writable reports the damage that forbids writing. It first checks, from the meta pages,
// that the file still holds every page in use: bbolt does not notice a file truncated under
// it until it faults on a missing page, and it would write a transaction into the gap.
func (b *bboltBackend) writable() error {
	if err := b.damage(); err != nil {
		return err
	}
	if b.db == nil || b.file == nil {
		return fmt.Errorf("graphstore: %s is not open: %w", b.path, ErrStorage)
	}
	st, err := b.file.Stat()
	if err != nil {
		return fmt.Errorf("graphstore: %s: %w: %w", b.path, ErrStorage, err)
	}
	m0 := readBoltMeta(b.file, 0)
	m0.page = 0
	m1 := readBoltMeta(b.file, int64(b.layout.pageSize))
	m := m0
	if m0.err != nil || (m1.err == nil && m1.txid > m0.txid) {
		m = m1
	}
	switch {
	case m.err != nil:
		return b.markDamaged(fmt.Sprintf("neither meta page is valid any more (page 0: %v; page 1: %v)", m0.err, m1.err))
	case uint64(st.Size()) < m.hwm*uint64(m.pageSize):
		return b.markDamaged(fmt.Sprintf("the file is %d bytes, shorter than its %d bytes of pages in use: it was truncated while open", st.Size(), m.hwm*uint64(m.pageSize)))
	}
	return nil
}

func (b *bboltBackend) kind() string { return "bbolt" }
func (b *bboltBackend) name() string { return b.path }
func (b *bboltBackend) shared() bool { return false }

// handle returns the open quad store; it is nil after a failed reopen.
func (b *bboltBackend) handle() (graph.QuadStore, error) {
	if b.qs == nil {
		if err := b.damage(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("graphstore: %s could not be reopened after a failed write: %w", b.path, ErrStorage)
	}
	return b.qs, nil
}

// read runs fn on the quad store, guarded.
func (b *bboltBackend) read(fn func(qs graph.QuadStore) error) error {
	qs, err := b.handle()
	if err != nil {
		return err
	}
	return b.guard(func() error { return fn(qs) })
}

func (b *bboltBackend) all(ctx context.Context) (out []quad.Quad, err error) {
	err = b.read(func(qs graph.QuadStore) error {
		out, err = allQuads(ctx, qs)
		return err
	})
	return out, err
}

func (b *bboltBackend) countGraphs(ctx context.Context) (counts graphCounts, err error) {
	err = b.read(func(qs graph.QuadStore) error {
		counts, err = countGraphs(ctx, qs, b.dropMapped)
		return err
	})
	return counts, err
}

func (b *bboltBackend) eachQuad(ctx context.Context, fn func(quad.Quad) error) error {
	return b.read(func(qs graph.QuadStore) error { return eachQuad(ctx, qs, fn) })
}

func (b *bboltBackend) graphQuads(ctx context.Context, id record.TxID) (out []quad.Quad, err error) {
	err = b.read(func(qs graph.QuadStore) error {
		out, err = graphQuadsOf(ctx, qs, id)
		return err
	})
	return out, err
}

func (b *bboltBackend) txQuads(ctx context.Context, id record.TxID) (out []quad.Quad, err error) {
	err = b.read(func(qs graph.QuadStore) error {
		out, err = txQuadsOf(ctx, qs, id)
		return err
	})
	return out, err
}

func (b *bboltBackend) apply(ctx context.Context, quads []quad.Quad) error {
	if err := b.writable(); err != nil {
		return err
	}
	return b.read(func(qs graph.QuadStore) error { return applyQuads(qs, quads) })
}

func (b *bboltBackend) count(ctx context.Context) (n int64, err error) {
	err = b.read(func(qs graph.QuadStore) error {
		n, err = statsCount(ctx, qs)
		return err
	})
	return n, err
}

func (b *bboltBackend) reopen(context.Context) error {
	if err := b.close(); err != nil && b.damage() == nil {
		return err
	}
	// A new bbolt instance has its own locks; the damage seen stays.
	b.mu.Lock()
	b.poisoned = false
	b.mu.Unlock()
	return b.open()
}

// dropMapped releases the pages of the file's memory map read so far (see dropMapped). The
// caller holds the writer lock.
func (b *bboltBackend) dropMapped() {
	b.guard(func() error { dropMapped(b.db); return nil })
}

func (b *bboltBackend) lockWriters(ctx context.Context) (func(), error) { return noLock(ctx) }

func (b *bboltBackend) close() error {
	var closeFn func() error
	switch {
	case b.qs != nil:
		closeFn = b.qs.Close // closes b.db
	case b.db != nil:
		closeFn = b.db.Close
	default:
		return nil
	}
	b.mu.Lock()
	poisoned := b.poisoned
	b.mu.Unlock()
	file := b.file
	b.qs, b.db, b.file = nil, nil, nil
	if poisoned {
		// bbolt's Close would wait for the locks a panic left held. The file's lock is
		// released and the file closed; the mapping goes with the process.
		unlockFile(file)
		file.Close()
		return nil
	}
	done := make(chan error, 1)
	go func() {
		// A goroutine of its own, so that Close cannot hang whatever state bbolt is in.
		done <- guarded(closeFn)
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		unlockFile(file)
		file.Close()
		return fmt.Errorf("closing %s did not finish; its file was closed: %w", b.path, ErrStorage)
	}
}

// snapshotBucket holds the snapshot's chunks keyed by their first transaction id (8 bytes,
// big-endian, so that bbolt's key order is id order). Cayley's own buckets have other names
// and Cayley never scans the file's root.
var snapshotBucket = []byte("mql.snapshot")

func (b *bboltBackend) eachSnapshotChunk(ctx context.Context, fn func([]byte) error) error {
	if b.db == nil {
		return nil
	}
	return b.guard(func() error {
		return b.db.View(func(tx *bolt.Tx) error {
			bk := tx.Bucket(snapshotBucket)
			if bk == nil {
				return nil
			}
			return bk.ForEach(func(_, v []byte) error {
				if err := ctx.Err(); err != nil {
					return err
				}
				return fn(bytes.Clone(v)) // v lives in the mapped file only during the transaction
			})
		})
	})
}

func (b *bboltBackend) appendSnapshot(_ context.Context, chunks []snapshotChunk) error {
	if err := b.writable(); err != nil {
		return err
	}
	return b.guard(func() error {
		return b.db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists(snapshotBucket)
			if err != nil {
				return err
			}
			for _, c := range chunks {
				if err := bk.Put(binary.BigEndian.AppendUint64(nil, uint64(c.first)), c.data); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

func (b *bboltBackend) resetSnapshot(context.Context) error {
	if err := b.writable(); err != nil {
		return err
	}
	return b.guard(func() error {
		return b.db.Update(func(tx *bolt.Tx) error {
			if tx.Bucket(snapshotBucket) == nil {
				return nil
			}
			return tx.DeleteBucket(snapshotBucket)
		})
	})
}

func (b *bboltBackend) txNodeQuads(ctx context.Context, id record.TxID) (out []quad.Quad, err error) {
	err = b.read(func(qs graph.QuadStore) error {
		own, err := subjectQuads(ctx, qs, codec.TxIRI(id))
		if err != nil {
			return err
		}
		out = slices.DeleteFunc(own, func(q quad.Quad) bool { return q.Label != codec.TxIRI(id) })
		return nil
	})
	return out, err
}
