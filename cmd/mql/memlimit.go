package main

import (
	"os"
	"runtime/debug"
)

// streamMemoryLimit is the soft memory limit of the commands that read a whole store or file
// one transaction at a time (import, check).
const streamMemoryLimit = 768 << 20

// boundMemory gives such a command a soft memory limit, unless the user set one (GOMEMLIMIT):
// it holds one transaction and a few words per record, but without a limit the Go runtime
// lets the heap grow to twice what is live before it collects. Past the limit the runtime
// collects more often; it never fails for it.
func boundMemory() {
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(streamMemoryLimit)
	}
}
