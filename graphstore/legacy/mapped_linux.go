package legacy

import (
	"syscall"

	bolt "go.etcd.io/bbolt"
)

// dropMapped tells the kernel that this process no longer needs the pages of db's memory map
// it has read (as graphstore's dropMapped does): a read of every quad of a large file would
// otherwise keep every page it touched resident. The pages stay in the page cache. The file
// is open read-only, so no write transaction remaps it meanwhile.
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
