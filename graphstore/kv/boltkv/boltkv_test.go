package boltkv_test

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/graphstore/kv/kvtest"
)

func TestKV(t *testing.T) {
	// Run holds a snapshot while it commits: a commit that grows bbolt's memory map waits for
	// every open read transaction, its own goroutine's included, so the map starts big enough.
	db, err := bolt.Open(filepath.Join(t.TempDir(), "kv.db"), 0o600, &bolt.Options{InitialMmapSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := boltkv.Init(db); err != nil {
		t.Fatal(err)
	}
	kvtest.Run(t, boltkv.New(db, kvtest.Schema))
}
