//go:build !unix

package legacy

import (
	"errors"
	"os"
	"time"
)

var errLockTimeout = errors.New("lock timeout")

// lockShared leaves the locking to bbolt (its Timeout) where flock is not available.
func lockShared(*os.File, time.Duration) error { return nil }
