package legacy

// Cayley's log, read as the old mql's check read it (graphstore/boltlog.go at 05cc83f): a
// bbolt store keeps every value and every quad under its id in the bucket "log", and reads
// skip an entry they cannot find under its id, so a damaged entry makes its quad (or every
// quad using its value) vanish or change without an error. The scan also counts the quads, so
// that Read can tell that it read every one of them.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	cproto "github.com/cayleygraph/cayley/graph/proto"
	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/pquads"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
)

// maxLogProblems bounds what scanLog lists; the rest are counted.
const maxLogProblems = 20

var (
	cayleyLogBucket  = []byte("log")
	cayleyMetaBucket = []byte("meta")
)

// logScan is a reading of Cayley's log in id order.
type logScan struct {
	next     uint64   // the id the next entry should have
	horizon  uint64   // the last id Cayley gave
	isValue  []uint64 // a bit per id: the entry is a value
	quads    int      // live quads
	problems []string
	more     int // problems beyond maxLogProblems
	// Ids missing from the log, and whether a quad is marked dead. Cayley deletes a quad by
	// marking it dead, and then the entries of the values no quad uses any more: gaps that
	// only a deletion explains. mql never deletes, so gaps are damage only when no quad is
	// dead (a dead quad is reported by itself).
	gaps []string
	dead int
}

func (s *logScan) add(format string, args ...any) {
	if len(s.problems) < maxLogProblems {
		s.problems = append(s.problems, fmt.Sprintf(format, args...))
	} else {
		s.more++
	}
}

// scanLog reads Cayley's log in id order and returns what is wrong with it, and how many live
// quads it holds. Cayley gives ids from one counter (its horizon), one per value and one per
// quad, in the transaction that writes them, and mql never deletes: on a sound store the log
// holds every id from 1 to the horizon, each entry decodes to the record of its own id, every
// value is found again under its hash, and every quad refers to values written before it.
// release is called between batches of entries (each batch is its own bbolt read
// transaction), to release the pages read.
func scanLog(ctx context.Context, db *bolt.DB, release func()) (problems []string, quads int, err error) {
	s := &logScan{next: 1}
	var after []byte // the last key read, to resume from
	for done := false; !done; {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		err := db.View(func(tx *bolt.Tx) error {
			if s.isValue == nil {
				meta := tx.Bucket(cayleyMetaBucket)
				if meta == nil {
					s.add("the file has no bucket %q: it is not a Cayley store", cayleyMetaBucket)
					done = true
					return nil
				}
				h := meta.Get([]byte("horizon"))
				if len(h) != 8 || binary.LittleEndian.Uint64(h) > 1<<40 {
					s.add("Cayley's horizon (the last id it gave) is unreadable (%x)", h)
					done = true
					return nil
				}
				s.horizon = binary.LittleEndian.Uint64(h)
				s.isValue = make([]uint64, s.horizon/64+1)
			}
			log := tx.Bucket(cayleyLogBucket)
			if log == nil {
				s.add("the file has no bucket %q, where Cayley keeps its values and quads", cayleyLogBucket)
				done = true
				return nil
			}
			c := log.Cursor()
			var k, v []byte
			if after == nil {
				k, v = c.First()
			} else if k, v = c.Seek(after); bytes.Equal(k, after) {
				k, v = c.Next()
			}
			for n := 0; k != nil; n++ {
				if n == 1<<14 {
					after = bytes.Clone(after) // it lives in the mapped file only during the transaction
					return nil
				}
				after = k
				s.entry(tx, k, v)
				k, v = c.Next()
			}
			done = true
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
		release()
	}
	if s.horizon > 0 && s.next <= s.horizon {
		s.gap(s.next, s.horizon)
	}
	if s.dead > 0 {
		s.add("%d quads are marked deleted: mql never deletes a quad, so another program wrote to this store", s.dead)
	} else {
		for _, g := range s.gaps {
			s.add("%s", g)
		}
	}
	if s.more > 0 {
		s.problems = append(s.problems, fmt.Sprintf("and %d more problems in the log", s.more))
	}
	return s.problems, s.quads, nil
}

// gap notes that the ids from to to are missing from the log.
func (s *logScan) gap(from, to uint64) {
	if len(s.gaps) == maxLogProblems {
		s.gaps = append(s.gaps, "and more ids are missing")
	}
	if len(s.gaps) > maxLogProblems {
		return
	}
	if from == to {
		s.gaps = append(s.gaps, fmt.Sprintf("id %d is missing from the log", from))
	} else {
		s.gaps = append(s.gaps, fmt.Sprintf("the ids %d to %d are missing from the log", from, to))
	}
}

// entry checks one entry of the log and moves past it.
func (s *logScan) entry(tx *bolt.Tx, k, v []byte) {
	if len(k) != 8 {
		s.add("an entry under a key of %d bytes (%x): the log's keys are 8-byte ids", len(k), k[:min(len(k), 16)])
		return
	}
	id := binary.BigEndian.Uint64(k)
	switch {
	case id > s.horizon:
		s.add("entry %d is beyond Cayley's horizon (%d), the last id it gave", id, s.horizon)
		return
	case id > s.next:
		s.gap(s.next, id-1)
	}
	s.next = id + 1
	var p cproto.Primitive
	if err := proto.Unmarshal(v, &p); err != nil {
		s.add("entry %d does not decode: %v", id, err)
		return
	}
	if p.ID != id {
		s.add("entry %d holds the record of id %d", id, p.ID)
		return
	}
	if p.Deleted {
		s.dead++
		return
	}
	if p.IsNode() {
		val, err := pquads.UnmarshalValue(p.Value)
		if err != nil || val == nil {
			s.add("value %d does not decode: %v", id, err)
			return
		}
		h := quad.HashOf(val)
		var ref []byte
		if bk := tx.Bucket([]byte{'v', h[0], h[1]}); bk != nil {
			ref = bk.Get(h)
		}
		if got, n := binary.Uvarint(ref); n <= 0 || got != id {
			s.add("value %d (%.80s) is not found under its hash: its bytes changed since it was written", id, quad.StringOf(val))
			return
		}
		s.isValue[id/64] |= 1 << (id % 64)
		return
	}
	s.quads++
	for _, d := range []struct {
		name string
		ref  uint64
	}{{"subject", p.Subject}, {"predicate", p.Predicate}, {"object", p.Object}, {"graph", p.Label}} {
		if d.ref == 0 && d.name == "graph" {
			s.add("quad %d lies in the default graph, outside every transaction graph", id)
			return
		}
		if d.ref >= id || s.isValue[d.ref/64]&(1<<(d.ref%64)) == 0 {
			s.add("quad %d names as its %s the id %d, which is not a value written before it", id, d.name, d.ref)
			return
		}
	}
}
