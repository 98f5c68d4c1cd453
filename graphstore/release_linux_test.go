package graphstore

import (
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A scan's mapped pages are released once more than the budget of them are resident, and not
// before: releasing on every call would fault them all in again.
func TestReleaserBudget(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "r.db"), 0o600, &bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	val := make([]byte, 64<<10)
	for i := range 4 {
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			for j := range 64 {
				if err := bk.Put([]byte{byte(i), byte(j)}, val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	dropMapped(db)
	touch := func() {
		db.View(func(tx *bolt.Tx) error {
			sum := 0
			tx.Bucket([]byte("b")).ForEach(func(k, v []byte) error {
				for i := 0; i < len(v); i += 4096 {
					sum += int(v[i])
				}
				return nil
			})
			return nil
		})
	}
	g := openMappedGauge()
	defer g.close()
	mapped := func() int64 {
		n, ok := g.read()
		if !ok {
			t.Skip("the system does not say how much is mapped")
		}
		return n
	}
	r := releasing(db)
	defer r.stop()
	r.mu.Lock()
	r.budget = 64 << 20 // above the 16 MiB the scan maps
	r.mu.Unlock()
	before := mapped()
	touch()
	grown := mapped() - before
	if grown < 12<<20 {
		t.Fatalf("the scan mapped %d KiB, want about 16 MiB", grown>>10)
	}
	r.check()
	if kept := mapped() - before; kept < grown/2 {
		t.Fatalf("within the budget, check released the pages (%d of %d KiB left)", kept>>10, grown>>10)
	}
	r.mu.Lock()
	r.budget = 4 << 20
	r.mu.Unlock()
	r.check()
	if left := mapped() - before; left > 4<<20 {
		t.Fatalf("over the budget, %d KiB stayed mapped after check", left>>10)
	}
}
