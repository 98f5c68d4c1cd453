//go:build race

package main

// The race detector is on: TestTerminal builds the binary with -race too, which reuses the
// packages this test binary was compiled from instead of compiling them all again.
func init() { raceBuild = true }
