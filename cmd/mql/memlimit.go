package main

import (
	"os"
	"runtime/debug"
)

// streamGCPercent is the garbage collector's target for the commands that read a whole store
// or file one transaction at a time (import, check): the heap may grow to 1.5 times what is
// live, not twice (the default), which bounds their memory more tightly for a little more
// collection work, and scales with the store, as a fixed limit would not.
const streamGCPercent = 50

// boundMemory sets streamGCPercent, unless the user tuned the collector (GOGC, GOMEMLIMIT).
func boundMemory() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(streamGCPercent)
	}
}
