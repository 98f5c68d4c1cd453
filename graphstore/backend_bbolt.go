package graphstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mql-dev/mql/graphstore/boltfile"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/graphstore/kv/walkv"
)

// bboltBackend is mql's kv store (package boltkv) on one bbolt file.
//
// It defends the process against a damaged file (see package boltfile, boltfile.go and guard.go): the file is
// locked and inspected before bbolt maps it, with a timeout on the lock so that a file held by
// another process is reported as ErrInUse instead of hanging, every call into bbolt runs
// guarded, and once damage is seen every write is refused with ErrDamaged.
type bboltBackend struct {
	path      string
	timeout   time.Duration
	mustExist bool // never create the file nor initialise it (Options.MustExist)
	readOnly  bool // never write the file nor a log beside it (openBBoltReadOnly)
	db        *bolt.DB
	store     *boltkv.Store // the file's kv store, under the log
	wal       *walkv.Store  // the write-ahead log in front of store (none for an import)
	file      *os.File      // bbolt's file, opened and locked by us: fstat before each write
	layout    *boltfile.Layout
	recorded  string // the verdict of an earlier check recorded in the file (damageBucket)

	mu sync.Mutex // guards damaged and poisoned: readers and writers consult them
	// damaged is the first damage seen, wrapping ErrDamaged; nil while none was. A file found
	// damaged stays refused for writes until the Store is opened again.
	damaged error
	// poisoned is set when bbolt panicked or faulted: it may have left its own locks held
	// (a fault while a transaction begins leaves its meta lock locked), so it is not called
	// again, not even to close it.
	poisoned bool
	noSync   bool // an import: the file is synced once, at the end
}

// walkOnOpenBytes bounds the files whose every page Open checks (boltfile.Walk). The walk reads the
// whole file: about 0.1 s for 64 MiB on the development machine, and seconds for a store of
// millions of claims, which Open cannot afford. Larger files get the meta-page and freelist
// checks only; their pages are checked by `mql check`, and by bbolt as it reads them.
const walkOnOpenBytes = 16 << 20

// ErrOldFormat is wrapped by Open's error for a store written in an earlier format, which
// `mql migrate OLD NEW` converts: the format of mql before its records and index were stored
// in their own buckets (Cayley's quads, a gob snapshot), or an earlier key-value format
// (mql-kv/1, mql-kv/2: no text index).
var ErrOldFormat = errors.New("store is in an old format")

// openBBoltFile opens the file at path; with mustExist it neither creates nor initialises it,
// and a file that is missing, empty or not an mql store is ErrNoStore.
func openBBoltFile(path string, timeout time.Duration, mustExist bool) (*bboltBackend, error) {
	return openBBolt(&bboltBackend{path: path, timeout: timeout, mustExist: mustExist})
}

// openBBoltReadOnly opens the store at path, which must exist, to read it and nothing else
// (ReadEarlier): the file is opened read-only, its log replayed into memory only, and no
// commit, checkpoint or log file is written. It holds the lock bbolt takes to read, which
// keeps every writer out.
func openBBoltReadOnly(path string, timeout time.Duration) (*bboltBackend, error) {
	return openBBolt(&bboltBackend{path: path, timeout: timeout, mustExist: true, readOnly: true})
}

func openBBolt(b *bboltBackend) (*bboltBackend, error) {
	if b.mustExist {
		// bolt.Open creates a missing file and initialises an empty one: look first.
		fi, err := os.Stat(b.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, errNoStore(err, "%s does not exist", b.path)
		case err != nil:
			return nil, StorageFailure(fmt.Errorf("cannot open bbolt file %s: %w", b.path, err))
		case fi.IsDir():
			return nil, errNoStore(nil, "%s is a directory, not an mql store", b.path)
		case fi.Size() == 0:
			return nil, errNoStore(nil, "%s is an empty file, not an mql store", b.path)
		}
	}
	if err := b.open(); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bboltBackend) open() error {
	flags := os.O_RDWR | os.O_CREATE
	switch {
	case b.readOnly:
		flags = os.O_RDONLY
	case b.mustExist:
		flags = os.O_RDWR
	}
	f, err := os.OpenFile(b.path, flags, 0o600)
	if err != nil {
		return StorageFailure(fmt.Errorf("cannot open bbolt file %s: %w", b.path, err))
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
		return fail(StorageFailure(fmt.Errorf("cannot lock bbolt file %s: %w", b.path, err)))
	}
	st, err := f.Stat()
	if err != nil {
		return fail(StorageFailure(fmt.Errorf("cannot open bbolt file %s: %w", b.path, err)))
	}
	if st.Size() > 0 {
		l, err := boltfile.Inspect(f, st.Size())
		if err != nil {
			return fail(b.damagedErr(err.Error()))
		}
		b.layout = l
		problems := l.Problems
		if st.Size() <= walkOnOpenBytes {
			problems = append(problems, boltfile.Walk(context.Background(), f, l)...)
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
			ReadOnly: b.readOnly,
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
		return fail(StorageFailure(fmt.Errorf("cannot open bbolt file %s: %w", b.path, err)))
	}
	b.db, b.file = db, f
	if b.layout == nil { // a new file: bbolt chose the page size
		b.layout = &boltfile.Layout{PageSize: db.Info().PageSize}
	}
	var kind string
	err = b.guard(func() error {
		var err error
		kind, err = boltKind(db)
		if err != nil || kind != "" {
			return err
		}
		// A new file: create mql's buckets. A damaged file is never written, not even to
		// initialise it, nor a file that must exist: it may be another program's.
		if b.damage() != nil || b.mustExist {
			return nil
		}
		return boltkv.Init(db)
	})
	if err == nil {
		switch kind {
		case "cayley":
			err = fmt.Errorf("%s: %w: it was written by an earlier mql, as Cayley quads; convert it with `mql migrate %s NEW.db` (the new file is checked, and the old one left as it is)", b.path, ErrOldFormat, b.path)
		case "other":
			err = errNoStore(nil, "%s is a bbolt file but not an mql store", b.path)
		case "damaged":
			err = b.damagedErr(fmt.Sprintf("it holds buckets named as mql names its own, but not %s, which every mql store has (its name damaged?)", boltkv.Bucket))
		case "":
			if b.mustExist {
				err = errNoStore(nil, "%s is a bbolt file but not an mql store", b.path)
			}
		}
	}
	if err != nil {
		b.close()
		return err
	}
	b.store = boltkv.New(db, index.Schema)
	recorded, err := b.readDamage()
	if err != nil {
		b.close()
		return err
	}
	if b.recorded = recorded; recorded != "" {
		b.markDamaged(recorded)
	}
	if b.noSync {
		return nil // an import writes the file directly and syncs it once
	}
	// The log: what it holds goes into the file now, unless the file is damaged (never
	// written): then it is read into memory only.
	// The log lives beside the file itself: a store opened through a symbolic link one day
	// and by its own name the next finds the same log.
	logPath, lerr := filepath.EvalSymlinks(b.path)
	if lerr != nil {
		logPath = b.path
	}
	b.wal, err = walkv.Open(context.Background(), b.store, index.Schema, walkv.Options{
		Path:     logPath,
		ReadOnly: b.damage() != nil || b.readOnly,
		MaxKey:   kv.MaxKey,
		Guard:    b.guard,
	})
	if err != nil {
		b.close()
		if errors.Is(err, walkv.ErrLog) && !errors.Is(err, ErrDamaged) {
			return fmt.Errorf("%s: %w; move the log aside to open the store as of its last checkpoint (the commits logged since are then lost): %w", b.path, err, ErrDamaged)
		}
		return err
	}
	return nil
}

// boltKind says what a bbolt file holds: "mql" (its buckets), "cayley" (an mql store of the
// old format), "" (no buckets: new), "other" (another program's buckets), or "damaged": only
// buckets named as mql names its own, but not the one every store has. Only a file with no
// bucket at all is new: one byte flipped in the name of mql's bucket once made a store look
// new, and the next write started a store over the history in it.
func boltKind(db *bolt.DB) (string, error) {
	kind := ""
	err := db.View(func(tx *bolt.Tx) error {
		switch {
		case boltkv.Has(tx):
			kind = "mql"
		case tx.Bucket([]byte("log")) != nil && tx.Bucket([]byte("sp")) != nil && tx.Bucket([]byte("ops")) != nil:
			kind = "cayley"
		default:
			return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
				if !strings.HasPrefix(string(name), "mql.") {
					kind = "other"
				} else if kind == "" {
					kind = "damaged"
				}
				return nil
			})
		}
		return nil
	})
	return kind, err
}

func (b *bboltBackend) inUse() error {
	return fmt.Errorf("%s is held by another process (its lock was not released within %s); close the other mql session using it, or open another file: %w", b.path, b.timeout, ErrInUse)
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

// guard runs fn, a call into bbolt, unless bbolt was poisoned, and marks the store
// damaged and bbolt poisoned if fn panicked or faulted.
func (b *bboltBackend) guard(fn func() error) error {
	b.mu.Lock()
	poisoned, damaged := b.poisoned, b.damaged
	b.mu.Unlock()
	if poisoned {
		return damaged
	}
	err := guarded(fn)
	if pe, ok := asEnginePanic(err); ok {
		b.mu.Lock()
		b.poisoned = true
		b.mu.Unlock()
		return b.markDamaged(pe.Error())
	}
	return err
}

// asEnginePanic is errors.As for an *enginePanic, called only with an error: its variable
// escapes, and a guard runs on every read.
func asEnginePanic(err error) (*enginePanic, bool) {
	if err == nil {
		return nil, false
	}
	var pe *enginePanic
	return pe, errors.As(err, &pe)
}

// writable reports the damage that forbids writing. It first checks, from the meta pages,
// that the file still holds every page in use: bbolt does not notice a file truncated under
// it until it faults on a missing page, and it would write a transaction into the gap.
func (b *bboltBackend) writable() error {
	if err := b.damage(); err != nil {
		return err
	}
	if b.db == nil || b.file == nil {
		return StorageFailure(fmt.Errorf("%s is not open", b.path))
	}
	// The meta pages before the size: a checkpoint may commit to bbolt meanwhile, and bbolt
	// grows the file before it writes a meta page naming the new pages, so the size read
	// after a meta page always holds its pages. Read the other way round, a commit between
	// the two would look like a file truncated under the store.
	m0 := boltfile.ReadMeta(b.file, 0)
	m0.Page = 0
	m1 := boltfile.ReadMeta(b.file, int64(b.layout.PageSize))
	m := m0
	if m0.Err != nil || (m1.Err == nil && m1.TxID > m0.TxID) {
		m = m1
	}
	st, err := b.file.Stat()
	if err != nil {
		return StorageFailure(fmt.Errorf("%s: %w", b.path, err))
	}
	switch {
	case m.Err != nil:
		return b.markDamaged(fmt.Sprintf("neither meta page is valid any more (page 0: %v; page 1: %v)", m0.Err, m1.Err))
	case uint64(st.Size()) < m.HWM*uint64(m.PageSize):
		return b.markDamaged(fmt.Sprintf("the file is %d bytes, shorter than its %d bytes of pages in use: it was truncated while open", st.Size(), m.HWM*uint64(m.PageSize)))
	}
	return nil
}

func (b *bboltBackend) kind() string { return "bbolt" }
func (b *bboltBackend) name() string { return b.path }

func (b *bboltBackend) size(context.Context) (int64, error) {
	fi, err := os.Stat(b.path)
	if err != nil {
		return 0, err
	}
	n := fi.Size()
	logs, _ := filepath.Glob(b.path + "-log-*")
	for _, l := range logs {
		if fi, err := os.Stat(l); err == nil { // a log a checkpoint removed meanwhile counts nothing
			n += fi.Size()
		}
	}
	return n, nil
}
func (b *bboltBackend) shared() bool { return false }
func (b *bboltBackend) kv() kv.Store {
	if b.wal != nil {
		return b.wal
	}
	return b.store
}

// dropMapped releases the pages of the file's memory map read so far (see dropMapped). The
// caller holds the writer lock.
func (b *bboltBackend) dropMapped() {
	b.guard(func() error { dropMapped(b.db); return nil })
}

func (b *bboltBackend) close() error {
	if b.db == nil {
		return nil
	}
	var walErr error
	if b.wal != nil {
		b.mu.Lock()
		poisoned := b.poisoned
		b.mu.Unlock()
		if !poisoned {
			// What the log holds goes into the file, and the log away; if that fails, the
			// next open replays the log.
			walErr = b.wal.Close()
		}
		b.wal = nil
	}
	b.mu.Lock()
	poisoned := b.poisoned
	b.mu.Unlock()
	file := b.file
	db := b.db
	closeFn := func() error { return errors.Join(walErr, db.Close()) }
	b.db, b.file, b.store = nil, nil, nil
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
		return StorageFailure(fmt.Errorf("closing %s did not finish; its file was closed", b.path))
	}
}
