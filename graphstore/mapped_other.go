//go:build !linux

package graphstore

import bolt "go.etcd.io/bbolt"

// dropMapped releases the pages of db's memory map a scan has read, where the system allows
// it (Linux); elsewhere they stay mapped until the file is closed.
func dropMapped(*bolt.DB) {}

func dropHeld(*bolt.DB, int64) {}

// mappedGauge would say how much of the process's memory is file-backed; here it cannot.
type mappedGauge struct{}

func openMappedGauge() *mappedGauge        { return &mappedGauge{} }
func (g *mappedGauge) read() (int64, bool) { return 0, false }
func (g *mappedGauge) close()              {}
