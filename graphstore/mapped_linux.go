package graphstore

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// dropMapped tells the kernel that this process no longer needs the pages of db's memory map
// it has read: a scan of a large bbolt file (a check, an import) would otherwise keep every
// page it touched mapped, and the process's resident memory would grow to the size of the
// file. The pages stay in the page cache and are read again from there if needed. It runs
// under a read transaction, which holds off a writer's remapping of the file: it may run while
// another goroutine writes (not while this one holds a write transaction that remaps).
func dropMapped(db *bolt.DB) {
	if db == nil {
		return
	}
	db.View(func(tx *bolt.Tx) error {
		if size := tx.Size(); size > 0 {
			syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
		}
		return nil
	})
}
