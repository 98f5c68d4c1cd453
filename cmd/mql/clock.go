package main

import (
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// testClockEnv names a hidden environment variable, for tests only: set to an RFC 3339 time,
// it makes the store's clock start there and advance one second per reading, so that golden
// output is stable. It is documented as such in docs/CLI.md.
const testClockEnv = "MQL_TEST_CLOCK"

// testClock returns the clock $MQL_TEST_CLOCK asks for, or nil (the real clock).
func testClock() (func() time.Time, error) {
	v := os.Getenv(testClockEnv)
	if v == "" {
		return nil, nil
	}
	start, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", testClockEnv, err)
	}
	var n atomic.Int64
	return func() time.Time {
		return start.Add(time.Duration(n.Add(1)-1) * time.Second).UTC()
	}, nil
}
