package mql

import (
	"context"
	"io"
)

// Backup writes a consistent copy of a bbolt store to w while the store stays open for
// readers and writers: a bbolt file that holds every commit acknowledged before Backup was
// called (it checkpoints the write-ahead log first, then copies the file in one read
// transaction). Restoring is opening the copy; `mql backup` writes it to a file atomically and
// checks it. A PostgreSQL or memory: store has no file to copy: the error wraps
// errors.ErrUnsupported (back PostgreSQL up with its own tools, docs/SERVE.md). A damaged
// store is refused with ErrDamaged.
func (db *DB) Backup(ctx context.Context, w io.Writer) (int64, error) {
	n, err := db.store.Backup(ctx, w)
	return n, err
}
