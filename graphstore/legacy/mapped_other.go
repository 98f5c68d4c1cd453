//go:build !linux

package legacy

import bolt "go.etcd.io/bbolt"

// dropMapped releases the pages of db's memory map a read has touched where the system allows
// it (Linux); elsewhere they stay mapped until the file is closed.
func dropMapped(*bolt.DB) {}
