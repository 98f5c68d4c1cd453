package graphstore

import (
	"bytes"
	"os"
	"strconv"
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
		dropHeld(db, tx.Size())
		return nil
	})
}

// dropHeld is dropMapped for a db of which the caller holds a read transaction that saw the
// file at size bytes: that transaction keeps the map where and as large as it is (a writer that
// must map more waits for it to end), so no other is begun, which would wait behind such a
// writer, itself waiting for the caller's: a deadlock.
func dropHeld(db *bolt.DB, size int64) {
	if db != nil && size > 0 {
		syscall.Syscall(syscall.SYS_MADVISE, db.Info().Data, uintptr(size), syscall.MADV_DONTNEED)
	}
}

// mappedGauge reads how much of the process's resident memory is file-backed: the third field
// of /proc/self/statm, in pages (the executable's own pages included).
type mappedGauge struct {
	f   *os.File
	buf [128]byte
}

func openMappedGauge() *mappedGauge {
	f, _ := os.Open("/proc/self/statm")
	return &mappedGauge{f: f}
}

// read returns the file-backed resident bytes, or false if the system does not say.
func (g *mappedGauge) read() (int64, bool) {
	if g.f == nil {
		return 0, false
	}
	n, err := g.f.ReadAt(g.buf[:], 0)
	if n == 0 && err != nil {
		return 0, false
	}
	fields := bytes.Fields(g.buf[:n])
	if len(fields) < 3 {
		return 0, false
	}
	pages, err := strconv.ParseInt(string(fields[2]), 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}

func (g *mappedGauge) close() {
	if g.f != nil {
		g.f.Close()
	}
}
