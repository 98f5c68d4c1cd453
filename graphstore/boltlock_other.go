//go:build !unix

package graphstore

import (
	"os"
	"time"
)

// lockFile does nothing here: bbolt locks the file itself when it opens it, after Open has
// inspected it, so a file being written by another process at that moment may be reported
// damaged instead of in use.
func lockFile(*os.File, time.Duration) error { return nil }

func unlockFile(*os.File) {}
