//go:build race

package main

// raceEnabled shrinks the sweeps: the race detector makes every store write ~15× slower.
const raceEnabled = true
