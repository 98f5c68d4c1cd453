package graphstore

import (
	"context"
	"os"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// scratch is a throwaway store in a temporary bbolt file, never synced: a check replays a
// store's records into it to compare the entries they give with the ones the store holds.
type scratch struct {
	path    string
	db      *bolt.DB
	kv      *boltkv.Store
	wt      kv.WriteTx
	h       *index.Index
}

// batchPuts is about how many entries a kv transaction written in bulk (a scratch store, an
// import) holds before it commits. bbolt splits a page only when it commits, and inserts into
// one in-memory page move everything after the key: a transaction of tens of thousands of
// entries into a small tree was quadratic (a check of 20k claims spent 35 of its 38 s there).
const batchPuts = 4 << 10

func newScratch() (*scratch, error) {
	f, err := os.CreateTemp("", "mql-check-*.db")
	if err != nil {
		return nil, err
	}
	path := f.Name()
	f.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{NoSync: true, NoFreelistSync: true})
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	if err := boltkv.Init(db); err != nil {
		db.Close()
		os.Remove(path)
		return nil, err
	}
	s := &scratch{path: path, db: db, kv: boltkv.New(db, index.Schema)}
	return s, nil
}

func (s *scratch) apply(tx *record.Tx) error {
	if s.wt == nil {
		wt, err := s.kv.Write(context.Background())
		if err != nil {
			return err
		}
		s.wt = wt
		h, err := index.Writer(wt, nil)
		if err == index.ErrNotStore {
			if err = index.Init(wt); err == nil {
				h, err = index.Writer(wt, nil)
			}
		}
		if err != nil {
			return err
		}
		s.h = h
	}
	if err := s.h.Apply(tx, index.Mark{}); err != nil {
		return err
	}
	if s.h.Puts() >= batchPuts {
		return s.flush()
	}
	return nil
}

func (s *scratch) flush() error {
	if s.wt == nil {
		return nil
	}
	err := s.wt.Commit(context.Background())
	s.wt, s.h = nil, nil
	dropMapped(s.db)
	return err
}

func (s *scratch) read() (kv.ReadTx, error) { return s.kv.Read(context.Background()) }

func (s *scratch) close() {
	if s.wt != nil {
		s.wt.Rollback()
	}
	s.db.Close()
	os.Remove(s.path)
}
