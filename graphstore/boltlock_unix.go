//go:build unix

package graphstore

import (
	"errors"
	"os"
	"syscall"
	"time"
)

// lockFile takes the exclusive lock bbolt takes on f (flock), waiting up to timeout. Taking it
// before bbolt does lets Open inspect the file while no other process writes it; bbolt's own
// flock on the same open file then succeeds at once.
func lockFile(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return errLockTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unlockFile releases the lock on f. Closing f alone would not while bbolt's memory mapping
// of it lasts: the mapping keeps the open file, and so its lock, alive.
func unlockFile(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
