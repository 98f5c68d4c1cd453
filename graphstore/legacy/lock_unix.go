//go:build unix

package legacy

import (
	"errors"
	"os"
	"syscall"
	"time"
)

var errLockTimeout = errors.New("lock timeout")

// lockShared takes a shared lock on f (flock, as bbolt does for a read-only file), waiting up
// to timeout. The old mql held its file with an exclusive lock.
func lockShared(f *os.File, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if time.Now().After(deadline) {
			return errLockTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}
