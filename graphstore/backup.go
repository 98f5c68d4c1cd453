package graphstore

import (
	"context"
	"errors"
	"fmt"
	"io"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/boltfile"
)

// Backup writes a consistent copy of a bbolt store's file to w, while writers go on: a file
// that opens, with no log beside it, as of a state at least as new as every commit
// acknowledged before Backup was called.
//
// The file alone is not the store: commits are acknowledged once they are in the write-ahead
// log, and reach the file at the next checkpoint. So Backup first checkpoints (every commit
// acknowledged so far goes into the file, in one bbolt transaction), then copies the file as
// one bbolt read transaction sees it. Commits that arrive meanwhile go to the log as always;
// the copy may hold some of them (a later checkpoint), never part of one. While the copy is
// written, a checkpoint that must grow the file's memory map waits for it to end, and writers
// wait once the log holds a checkpoint's worth of entries: copy to a fast destination.
//
// A store that is not a bbolt file has nothing to copy (errors.ErrUnsupported: PostgreSQL's
// own tools back it up); a damaged one is refused (ErrDamaged): its log cannot be applied.
func (s *Store) Backup(ctx context.Context, w io.Writer) (int64, error) {
	if err := s.enter(); err != nil {
		return 0, err
	}
	defer s.leave()
	b, ok := s.be.(*bboltBackend)
	if !ok {
		return 0, fmt.Errorf("a %s store is not a file to copy: %w", s.be.kind(), errors.ErrUnsupported)
	}
	if err := b.damage(); err != nil {
		return 0, err
	}
	if b.wal != nil {
		if err := b.wal.Checkpoint(ctx); err != nil {
			return 0, storageErr("checkpointing the log before the copy", err)
		}
	}
	var n int64
	err := b.guard(func() error {
		return b.db.View(func(tx *bolt.Tx) error {
			mw := &metaWriter{w: ctxWriter{ctx: ctx, w: w}, ps: tx.DB().Info().PageSize}
			var err error
			if n, err = tx.WriteTo(mw); err == nil {
				err = mw.flush()
			}
			return err
		})
	})
	if err != nil {
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		return n, storageErr("copying the file", err)
	}
	return n, nil
}

// ctxWriter stops a copy when its context ends.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// metaWriter puts the two meta pages of a copy bbolt writes (Tx.WriteTo: the transaction's
// meta on page 0, the same meta with the previous transaction id on page 1) each on the page
// bbolt itself would write it to, transaction t's on page t%2. On the wrong pages, the
// copy's first commit would overwrite its newest meta, and a crash during that commit would
// leave it with none that points at a whole tree; mql check reports it as damage.
type metaWriter struct {
	w    io.Writer
	ps   int
	head []byte // the first two pages, until both are here
	done bool
}

func (m *metaWriter) Write(p []byte) (int, error) {
	if m.done {
		return m.w.Write(p)
	}
	n := len(p)
	need := 2*m.ps - len(m.head)
	if len(p) < need {
		m.head = append(m.head, p...)
		return n, nil
	}
	m.head = append(m.head, p[:need]...)
	if err := m.flush(); err != nil {
		return 0, err
	}
	if _, err := m.w.Write(p[need:]); err != nil {
		return 0, err
	}
	return n, nil
}

// flush writes the meta pages, swapped if the newest is odd.
func (m *metaWriter) flush() error {
	if m.done {
		return nil
	}
	m.done = true
	if len(m.head) != 2*m.ps {
		return fmt.Errorf("the copy ended within its meta pages (%d bytes)", len(m.head))
	}
	p0, p1 := m.head[:m.ps], m.head[m.ps:]
	if boltfile.ParseMeta(p0, 0).TxID%2 == 1 {
		swapped := make([]byte, 0, 2*m.ps)
		swapped = append(append(swapped, p1...), p0...)
		// The page header's id is outside the meta's checksum: only it changes.
		boltfile.Order.PutUint64(swapped[0:], 0)
		boltfile.Order.PutUint64(swapped[m.ps:], 1)
		m.head = swapped
	}
	_, err := m.w.Write(m.head)
	return err
}
