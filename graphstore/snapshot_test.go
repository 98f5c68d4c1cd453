package graphstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// snapshotChunks returns the first tx id of every chunk in the file's snapshot bucket. The
// store must be closed.
func snapshotChunks(t *testing.T, path string) []record.TxID {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ids []record.TxID
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(snapshotBucket)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			ids = append(ids, record.TxID(binary.BigEndian.Uint64(k)))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// editSnapshot changes the snapshot bucket of a closed store's file.
func editSnapshot(t *testing.T, path string, edit func(b *bolt.Bucket) error) {
	t.Helper()
	updateFile(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(snapshotBucket)
		if err != nil {
			return err
		}
		return edit(b)
	})
}

// updateFile runs update in one write transaction on the closed bbolt file at path.
func updateFile(t *testing.T, path string, update func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(update); err != nil {
		t.Fatal(err)
	}
}

// loadedBy opens path, reports whether the index came from the snapshot, and returns its
// transactions (compared with the ones a scan of the quads gives).
func loadedBy(t *testing.T, path string) (fromSnapshot bool, txs []*record.Tx) {
	t.Helper()
	s := mustOpen(t, path, Options{})
	defer s.Close()
	return s.fromSnapshot, txsOf(s)
}

func scanned(t *testing.T, path string) []*record.Tx {
	t.Helper()
	be, err := openBBolt(path, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	quads, err := be.all(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	txs, err := codec.DecodeTxs(quads)
	if err != nil {
		t.Fatal(err)
	}
	return txs
}

// closedSample writes the sample history into a new bbolt file, closes it (writing the
// snapshot) and returns the file and its transactions.
func closedSample(t *testing.T) (string, []*record.Tx) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpen(t, path, Options{})
	writeSample(t, s)
	want := txsOf(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, want
}

func TestSnapshotOpen(t *testing.T) {
	path, want := closedSample(t)
	if got := snapshotChunks(t, path); len(got) == 0 || got[0] != 1 {
		t.Fatalf("snapshot chunks start at %v, want a snapshot from tx 1", got)
	}
	fromSnapshot, got := loadedBy(t, path)
	if !fromSnapshot {
		t.Fatal("the store was scanned, not loaded from its snapshot")
	}
	sameTxs(t, got, want)
	sameTxs(t, got, scanned(t, path))
}

// A crash between snapshot flushes leaves transactions that only the quads hold: the next
// open loads them from the quads, and writes them to the snapshot.
func TestSnapshotTailFromQuads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpen(t, path, Options{})
	writeSample(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, path, Options{})
	for i := range 5 {
		if _, err := s.Write(context.Background(), "owner", countingClaim("tail", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	want := txsOf(s)
	s.be.close() // no Close: the tail is not in the snapshot
	last := snapshotChunks(t, path)
	fromSnapshot, got := loadedBy(t, path)
	if !fromSnapshot {
		t.Fatal("the store was scanned, not loaded from its snapshot and the tail")
	}
	sameTxs(t, got, want)
	after := snapshotChunks(t, path)
	if len(after) != len(last)+1 || after[len(after)-1] != want[len(want)-5].ID {
		t.Fatalf("chunks %v after reopening, want %v plus one from tx %d", after, last, want[len(want)-5].ID)
	}
}

// Flushes happen while writing, not only at Close.
func TestSnapshotFlushThreshold(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpen(t, path, Options{})
	defer s.Close()
	for i := range snapshotEveryTxs + 1 {
		if _, err := s.Write(context.Background(), "owner", countingClaim("k", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if s.snapHead < snapshotEveryTxs {
		t.Fatalf("snapshot head %d after %d writes, want a flush at %d", s.snapHead, snapshotEveryTxs+1, snapshotEveryTxs)
	}
}

// Anything wrong with the snapshot means a scan of the quads, and a rewritten snapshot;
// never a wrong index.
func TestSnapshotDistrusted(t *testing.T) {
	cases := map[string]func(t *testing.T, b *bolt.Bucket, txs []*record.Tx) error{
		"garbage chunk": func(_ *testing.T, b *bolt.Bucket, _ []*record.Tx) error {
			return b.Put(binary.BigEndian.AppendUint64(nil, 1), []byte("not a chunk"))
		},
		"other format": func(_ *testing.T, b *bolt.Bucket, txs []*record.Tx) error {
			data, _ := encodeChunk(txs)
			data[len(snapshotMagic)] = snapshotFormat + 1
			return b.Put(binary.BigEndian.AppendUint64(nil, 1), data)
		},
		"other record shape": func(_ *testing.T, b *bolt.Bucket, txs []*record.Tx) error {
			data, _ := encodeChunk(txs)
			data[len(snapshotMagic)+1] ^= 0xff
			return b.Put(binary.BigEndian.AppendUint64(nil, 1), data)
		},
		// One byte changed inside a value of a middle transaction still decodes, and the
		// chunk's ends still match the quads: only the checksum tells.
		"a byte changed inside": func(t *testing.T, b *bolt.Bucket, txs []*record.Tx) error {
			if err := clearBucket(b); err != nil {
				return err
			}
			data, _ := encodeChunk(txs)
			i := bytes.Index(data, []byte("https://k.example/p"))
			if i < 0 {
				t.Fatal("the sample's source URI is not in the chunk")
			}
			data[i] = 'H'
			return b.Put(binary.BigEndian.AppendUint64(nil, 1), data)
		},
		"a gap": func(_ *testing.T, b *bolt.Bucket, txs []*record.Tx) error {
			if err := clearBucket(b); err != nil {
				return err
			}
			head, _ := encodeChunk(txs[:2])
			tail, _ := encodeChunk(txs[3:])
			if err := b.Put(binary.BigEndian.AppendUint64(nil, 1), head); err != nil {
				return err
			}
			return b.Put(binary.BigEndian.AppendUint64(nil, uint64(txs[3].ID)), tail)
		},
		// Chunks are decoded in parallel with the read and indexed as they arrive: one bad
		// chunk after good ones, while others are still being decoded, still discards it all.
		"a garbage chunk among good ones": func(_ *testing.T, b *bolt.Bucket, txs []*record.Tx) error {
			if err := clearBucket(b); err != nil {
				return err
			}
			for i, tx := range txs {
				data, _ := encodeChunk([]*record.Tx{tx})
				if i == len(txs)/2 {
					data = []byte("not a chunk")
				}
				if err := b.Put(binary.BigEndian.AppendUint64(nil, uint64(tx.ID)), data); err != nil {
					return err
				}
			}
			return nil
		},
		"a tx the quads do not hold": func(_ *testing.T, b *bolt.Bucket, txs []*record.Tx) error {
			extra := &record.Tx{ID: txs[len(txs)-1].ID + 1, Time: txs[0].Time, By: "owner",
				Principals: []*record.Principal{{Name: "ghost", Type: record.Agent}}}
			normalize(extra)
			data, _ := encodeChunk([]*record.Tx{extra})
			return b.Put(binary.BigEndian.AppendUint64(nil, uint64(extra.ID)), data)
		},
	}
	for name, edit := range cases {
		t.Run(name, func(t *testing.T) {
			path, want := closedSample(t)
			editSnapshot(t, path, func(b *bolt.Bucket) error { return edit(t, b, want) })
			fromSnapshot, got := loadedBy(t, path)
			if fromSnapshot {
				t.Fatal("a bad snapshot was trusted")
			}
			sameTxs(t, got, want)
			// The rewritten snapshot is good again.
			fromSnapshot, got = loadedBy(t, path)
			if !fromSnapshot {
				t.Fatal("the rewritten snapshot was not used")
			}
			sameTxs(t, got, want)
			if chunks := snapshotChunks(t, path); len(chunks) != 1 || chunks[0] != 1 {
				t.Fatalf("snapshot after the rewrite has chunks %v, want one from tx 1", chunks)
			}
		})
	}
}

func clearBucket(b *bolt.Bucket) error {
	var keys [][]byte
	if err := b.ForEach(func(k, _ []byte) error {
		keys = append(keys, append([]byte(nil), k...))
		return nil
	}); err != nil {
		return err
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// BenchmarkOpen opens a bbolt store of n claims (in transactions of 1,000), from its snapshot
// and by scanning the quads (the snapshot removed before each open).
func BenchmarkOpen(b *testing.B) {
	for _, n := range benchOpenSizes {
		path := filepath.Join(b.TempDir(), "open.db")
		s := mustOpen(b, path, Options{})
		for i := 0; i < n; i += 1000 {
			if _, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
				for j := i; j < i+1000 && j < n; j++ {
					tx.Claims = append(tx.Claims, &record.Claim{ID: record.ClaimID{Key: record.Key{Subject: fmt.Sprintf("V%d", j/4), Predicate: fmt.Sprintf("p%d", j%4)}, Version: 1},
						Value: record.Value{Type: record.Number, Num: float64(j % 97)}, By: "owner", Kind: record.Observed, Confidence: 1})
				}
				return nil
			}); err != nil {
				b.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"snapshot", "scan"} {
			b.Run(fmt.Sprintf("%s/%dk", mode, n/1000), func(b *testing.B) {
				for range b.N {
					if mode == "scan" {
						b.StopTimer()
						be, err := openBBolt(path, 0)
						if err != nil {
							b.Fatal(err)
						}
						if err := be.resetSnapshot(context.Background()); err != nil {
							b.Fatal(err)
						}
						be.close()
						b.StartTimer()
					}
					s, err := Open(context.Background(), path, Options{})
					if err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					// What an open store keeps: the heap after a collection.
					var ms runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&ms)
					b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "heap-MiB")
					s.Close()
					b.StartTimer()
				}
			})
		}
	}
}

var benchOpenSizes = []int{10_000, 100_000}

// Open checks the snapshot's ends against the transaction nodes, not every record: a snapshot
// whose records were changed is found by Check, which removes it so that the next open scans.
func TestCheckFindsForgedSnapshot(t *testing.T) {
	for _, viaDSN := range []bool{false, true} {
		t.Run(fmt.Sprintf("dsn=%t", viaDSN), func(t *testing.T) {
			path, want := closedSample(t)
			editSnapshot(t, path, func(b *bolt.Bucket) error {
				forged := *want[2]
				c := *forged.Claims[0]
				c.Value.Num++
				forged.Claims = append([]*record.Claim{&c}, forged.Claims[1:]...)
				data, _ := encodeChunk(append([]*record.Tx{want[0], want[1], &forged}, want[3:]...))
				if err := clearBucket(b); err != nil {
					return err
				}
				return b.Put(binary.BigEndian.AppendUint64(nil, 1), data)
			})
			var r *Report
			var err error
			if viaDSN {
				r, err = CheckDSN(context.Background(), path, Options{}, CheckOptions{})
			} else {
				s := mustOpen(t, path, Options{})
				r, err = s.Check(context.Background(), CheckOptions{})
				s.Close()
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Problems) != 1 || r.Problems[0].Kind != ProblemSnapshot || r.Problems[0].Tx != want[2].ID {
				t.Fatalf("problems %v, want one snapshot problem at tx %d", r.Problems, want[2].ID)
			}
			fromSnapshot, got := loadedBy(t, path)
			if fromSnapshot {
				t.Fatal("the forged snapshot was used after Check removed it")
			}
			sameTxs(t, got, want)
		})
	}
}

// TestRecordShapeStable pins the fingerprint of the record types that every snapshot carries.
// It changes only when a record type changes (and then every existing snapshot is rebuilt from
// the quads at the next open): a change that leaves the records alone, such as moving them to
// another package, must not change it. Update the constant only with a record type.
func TestRecordShapeStable(t *testing.T) {
	if recordShape != 0x84f266d8a760cf04 {
		t.Fatalf("recordShape = %#x: did a record type change? If so, update this test", recordShape)
	}
}
