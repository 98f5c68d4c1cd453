package graphstore

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// dropMapped tells the kernel that this process no longer needs the pages of db's memory map
// it has read: a scan of a large bbolt file (a check, an import) would otherwise keep every
// page it touched mapped, and the process's resident memory would grow to the size of the
// file. The pages stay in the page cache and are read again from there if needed. The caller
// makes sure that no write transaction (which may remap the file) runs meanwhile.
func dropMapped(db *bolt.DB) {
	if db == nil {
		return
	}
	var size int64
	if err := db.View(func(tx *bolt.Tx) error { size = tx.Size(); return nil }); err != nil || size <= 0 {
		return
	}
	syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
}
