// Package streammem bounds the heap of the commands that read a whole store or file one
// transaction at a time (mql import, check, migrate, and the bench's children that measure
// them as those commands run).
package streammem

import (
	"os"
	"runtime/debug"
)

// Limit is the soft limit on the Go runtime's memory those commands set. Their heap holds what
// the transaction being checked and its batch need (some 40-80 MiB at 1M claims), and their
// resident memory adds the pages of the store's file mapped at the moment (a budget of 32 MiB
// between commits, bursts of up to about 100 MiB during one): the limit keeps the sum under 256
// MiB however the heap grows. It is a limit, not a lower collector target (GOGC=50 before): a
// lower target made the collector run half again as often for the same bound, which cost an
// import of 1M claims a tenth of its time.
const Limit = 144 << 20

// Bound sets Limit, unless the user tuned the collector (GOGC, GOMEMLIMIT).
func Bound() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(Limit)
	}
}
