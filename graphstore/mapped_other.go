//go:build !linux

package graphstore

import bolt "go.etcd.io/bbolt"

// dropMapped releases the pages of db's memory map a scan has read, where the system allows
// it (Linux); elsewhere they stay mapped until the file is closed.
func dropMapped(*bolt.DB) {}
