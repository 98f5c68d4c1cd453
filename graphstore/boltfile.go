package graphstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/boltfile"
)

// ProblemFile is the kind of problem a check reports for a damaged file: a page, a meta page
// or the freelist that is not what the storage engine needs. A file with such problems has its
// records left unread: what they would say cannot be trusted.
const ProblemFile = "file"

// storageReport checks the backend's file itself, before any record is read: for bbolt, the meta
// pages and the freelist, every page in use (boltfile.Walk), then bbolt's own check. It returns the
// problems as a report, or nil when the file is sound (or the backend has no file).
func storageReport(ctx context.Context, be backend) *Report {
	b, ok := be.(*bboltBackend)
	if !ok {
		return nil
	}
	problems := b.verify(ctx)
	if len(problems) == 0 {
		return nil
	}
	r := &Report{}
	for _, p := range problems {
		r.Add(Problem{Kind: ProblemFile, Msg: p})
	}
	r.Add(Problem{Kind: ProblemFile, Msg: "the records were not read, since the file holding them is damaged; restore the store from an export or a backup"})
	return r
}

// verify checks the whole file as it is now and returns what is wrong; anything wrong marks
// the store damaged. The caller keeps writers out.
func (b *bboltBackend) verify(ctx context.Context) []string {
	if b.file == nil || b.db == nil {
		return []string{fmt.Sprintf("%s is not open", b.path)}
	}
	st, err := b.file.Stat()
	if err != nil {
		return []string{fmt.Sprintf("the file cannot be read: %v", err)}
	}
	l, err := boltfile.Inspect(b.file, st.Size())
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), ErrDamaged.Error()+": ")
		b.markDamaged(msg)
		return []string{msg}
	}
	// bbolt's own check (Tx.Check) finds nothing the walk does not: pages out of bounds,
	// referenced twice, both free and in use, or neither; keys out of order. It reads the pages
	// through the memory map, which maps a file in the page cache faster than any release can
	// unmap it (a 1M-claim store: 430 MiB resident within 100 ms), where the walk reads each
	// page once into one buffer.
	problems := append(l.Problems, boltfile.Walk(ctx, b.file, l)...)
	if len(problems) > 0 {
		b.markDamaged(problems[0])
		return problems
	}
	return nil
}

// damageBucket holds the verdict of a check that found a file's pages sound but its records
// or index unsound: damage inside the data, which Open cannot see without reading every entry.
// Every later Open finds it and refuses writes, as the check refused the store. Only a check
// that reads the store again and finds it sound removes it (verify); the remedy is a store restored from an export or
// a backup, which does not carry it.
var damageBucket = []byte("mql.damaged")

// readDamage returns the verdict recorded in the file, or "".
func (b *bboltBackend) readDamage() (what string, err error) {
	err = b.guard(func() error {
		return b.db.View(func(tx *bolt.Tx) error {
			if bk := tx.Bucket(damageBucket); bk != nil {
				what = fmt.Sprintf("a check on %s found that %s", bk.Get([]byte("at")), bk.Get([]byte("what")))
			}
			return nil
		})
	})
	return what, err
}

// update runs fn in a bbolt write transaction outside the log's checkpoints, with none of the
// log's read transactions kept idle meanwhile (walkv.Store.Exclusive).
func (b *bboltBackend) update(fn func(tx *bolt.Tx) error) error {
	if b.wal == nil {
		return b.db.Update(fn)
	}
	return b.wal.Exclusive(func() error { return b.db.Update(fn) })
}

// recordDamage records a check's verdict in the file (damageBucket), so that every later Open
// refuses writes, and marks the store damaged now.
func (b *bboltBackend) recordDamage(what string) {
	if b.damage() == nil && b.db != nil {
		_ = b.guard(func() error {
			return b.update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists(damageBucket)
				if err != nil {
					return err
				}
				if err := bk.Put([]byte("at"), []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
					return err
				}
				return bk.Put([]byte("what"), []byte(what))
			})
		})
	}
	b.markDamaged(what)
}

// recordVerdict records, in a bbolt file, a check that found the store unsound in a way that
// Open does not see: Open reads one value, while the check decodes every record and compares
// every index entry with a replay, so damage to an entry (an index entry that no longer agrees
// with the records) passes Open and not the check. Writes on such a store would build on what
// is wrong, so from now on they are refused, as for a file whose records cannot be read.
// Problems that do not make writes unsafe (standings, authors) record nothing.
func recordVerdict(be backend, r *Report) {
	b, ok := be.(*bboltBackend)
	if !ok || r == nil {
		return
	}
	for _, p := range r.Problems {
		switch p.Kind {
		case ProblemStanding, ProblemAuthor, ProblemFile:
			continue
		}
		// damagedErr, which every refused write returns, adds what to do.
		b.recordDamage("its records are unsound (" + p.String() + ")")
		return
	}
	if b.recorded != "" {
		// An earlier check found the records unsound; they read and check now (the damage
		// was in the storage under the file, since repaired): the verdict goes, and writes
		// are allowed again.
		err := b.guard(func() error {
			return b.update(func(tx *bolt.Tx) error { return tx.DeleteBucket(damageBucket) })
		})
		if err == nil {
			b.recorded = ""
			b.mu.Lock()
			b.damaged = nil
			b.mu.Unlock()
		}
	}
}

// unreadable is what a check whose read of the records failed with err reports. On a bbolt
// file whose pages are sound (the check verified them just before) that is damage inside the
// data, which Open does not see (it reads one value): it is recorded in
// the file (damageBucket), the store is marked damaged, and the check reports it as a problem.
func unreadable(be backend, err error) (*Report, error) {
	b, ok := be.(*bboltBackend)
	if !ok || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, storageErr("reading the store", err)
	}
	what := err.Error()
	if len(what) > 300 {
		what = what[:300] + "…"
	}
	what = "its records cannot be read (" + what + ")"
	b.recordDamage(what)
	r := &Report{}
	r.Add(Problem{Kind: ProblemFile, Msg: what + "; mql refuses writes to this file from now on: restore the store from an export or a backup"})
	return r, nil
}
