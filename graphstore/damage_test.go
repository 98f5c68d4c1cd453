package graphstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/boltfile"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// closedSample writes the sample history (writeSample) into a new bbolt file, closes it and
// returns the file and its transactions.
func closedSample(t *testing.T) (string, []*record.Tx) {
	t.Helper()
	return closedStore(t, writeSample)
}

// closedStore is closedSample for the history write writes.
func closedStore(t *testing.T, write func(testing.TB, *Store)) (string, []*record.Tx) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpen(t, path, Options{})
	write(t, s)
	want := txsOf(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, want
}

// entry is one key and value of a kv bucket, as a test reads it.
type entry struct{ k, v []byte }

// bucketOf is the kv bucket named name (docs/FORMAT.md) in mql's schema.
func bucketOf(t *testing.T, name string) kv.Bucket {
	t.Helper()
	for i, b := range index.Schema.Buckets {
		if b.Name == name {
			return kv.Bucket(i)
		}
	}
	t.Fatalf("mql's schema has no bucket %q", name)
	return 0
}

// editBucket calls edit, in one write transaction on the closed bbolt file at path, with the
// kv bucket named name and its entries in key order; what edit writes through w is committed
// straight into the file, past every check of the Store. The file is opened with bbolt and
// read and written through package boltkv, so that the edit names entries as docs/FORMAT.md
// does, whichever bbolt buckets boltkv keeps them in.
func editBucket(t *testing.T, path, name string, edit func(w kv.Writer, b kv.Bucket, es []entry) error) {
	t.Helper()
	b := bucketOf(t, name)
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	wt, err := boltkv.New(db, index.Schema).Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Rollback()
	var es []entry
	if err := wt.Scan(b, nil, kv.ScanOptions{}, func(k, v []byte) (bool, error) {
		es = append(es, entry{bytes.Clone(k), bytes.Clone(v)})
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := edit(wt, b, es); err != nil {
		t.Fatalf("editing %s: %v", name, err)
	}
	if err := wt.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// castagnoli is the CRC-32C table: a stored value may end with the CRC-32C of what precedes
// it (a checksum the store verifies when it reads the value).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// unseal returns the fields of a stored value, without the checksum it ends with if it has
// one, and whether it had: an edit that must leave the value readable changes the fields and
// seals them again (reseal), as a writer that wrote the wrong value would.
func unseal(v []byte) (fields []byte, sealed bool) {
	if n := len(v) - 4; n > 0 && binary.LittleEndian.Uint32(v[n:]) == crc32.Checksum(v[:n], castagnoli) {
		return bytes.Clone(v[:n]), true
	}
	return bytes.Clone(v), false
}

func reseal(fields []byte, sealed bool) []byte {
	if !sealed || len(fields) == 0 {
		return fields
	}
	return binary.LittleEndian.AppendUint32(fields, crc32.Checksum(fields, castagnoli))
}

// getEntry is the value under key in the kv bucket name of the closed file at path, or nil.
func getEntry(t *testing.T, path, name string, key []byte) []byte {
	t.Helper()
	var v []byte
	editBucket(t, path, name, func(w kv.Writer, b kv.Bucket, _ []entry) error {
		got, err := w.Get(b, key)
		v = bytes.Clone(got)
		return err
	})
	return v
}

// keyOf is the key of a claim's key (subject NUL predicate), claimKeyOf a claim's
// (u(keySeq) u(version)), txKeyOf a transaction's (u(tx)).
func keyOf(subject, predicate string) []byte {
	return append(encoding.AppendName(nil, subject), predicate...)
}

func claimKeyOf(keySeq uint64, version int) []byte {
	return encoding.AppendUint(encoding.AppendUint(nil, keySeq), uint64(version))
}

func txKeyOf(id record.TxID) []byte { return encoding.AppendUint(nil, uint64(id)) }

// keySeqOf reads the number of a key from its entry in the closed file at path (the first
// field of a `key` value).
func keySeqOf(t *testing.T, path, subject, predicate string) uint64 {
	t.Helper()
	v := getEntry(t, path, "key", keyOf(subject, predicate))
	if v == nil {
		t.Fatalf("no key %s.%s", subject, predicate)
	}
	d := encoding.NewDec(v)
	seq := d.Uvarint()
	if d.Err != nil {
		t.Fatal(d.Err)
	}
	return seq
}

// geo is the geometry of a sound bbolt file: its page size, pages in use, freelist page, the
// root bucket's page, and the highest page that holds data other than the root bucket's.
type geo struct {
	ps                        int
	hwm, freelist, root, data uint64
	leaf                      uint64 // a page whose loss Open survives (openablePage), if set
}

func geometry(t *testing.T, path string) geo {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	l, err := boltfile.Inspect(f, st.Size())
	if err != nil || len(l.Problems) > 0 {
		t.Fatalf("not a sound file: %v %v", err, l)
	}
	data := l.Meta.HWM - 1
	for data == l.Meta.Freelist || data == l.Meta.Root || slices.Contains(l.Free, data) {
		data--
	}
	return geo{ps: l.PageSize, hwm: l.Meta.HWM, freelist: l.Meta.Freelist, root: l.Meta.Root, data: data}
}

// openablePage is a page of the sound file at path that holds data and whose loss still lets
// Open take the store (a leaf that holds none of what Open reads), found by trying; 0 if
// there is none.
func openablePage(t *testing.T, path string, g geo) uint64 {
	t.Helper()
	sound, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := boltfile.Inspect(f, int64(len(sound)))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	try := filepath.Join(t.TempDir(), "try.db")
	for p := g.hwm - 1; p >= 2; p-- {
		if p == g.freelist || p == g.root || slices.Contains(l.Free, p) {
			continue
		}
		d := bytes.Clone(sound)
		clear(d[int(p)*g.ps : int(p+1)*g.ps])
		if err := os.WriteFile(try, d, 0o600); err != nil {
			t.Fatal(err)
		}
		if s, err := Open(context.Background(), try, Options{}); err == nil {
			s.Close()
			return p
		}
	}
	return 0
}

// damagedSample is the store TestOpenDamagedFile damages: the sample history and enough
// claims after it for the file to hold several pages of data and a few free ones.
func damagedSample(t *testing.T) (string, []*record.Tx) {
	t.Helper()
	return closedStore(t, func(t testing.TB, s *Store) {
		writeSample(t, s)
		for i := range 120 {
			if _, err := s.Write(context.Background(), "owner", countingClaim(fmt.Sprintf("D%d", i%30), i/30+1)); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func damageFile(t *testing.T, path string, edit func(data []byte) []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edit(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func writeOne(s *Store) error {
	_, err := s.Write(context.Background(), "owner", func(_ *index.Index, tx *record.Tx) error {
		tx.Principals = []*record.Principal{{Name: "late", Type: record.Agent}}
		return nil
	})
	return err
}

// Open refuses a file bbolt cannot read safely with ErrDamaged, before bbolt maps it; a file
// it can read but that is damaged opens for reading, refuses writes, and fails Check with
// problems of kind "file". None of it may panic or fault.
func TestOpenDamagedFile(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name       string
		edit       func(t *testing.T, data []byte, g geo) []byte
		unopenable bool
		want       string // in the error or the first problem
		readable   bool   // every transaction reads as it was written
	}{
		{"truncated below its pages in use", func(t *testing.T, d []byte, g geo) []byte {
			return d[:int(g.hwm-1)*g.ps]
		}, true, "it was truncated", false},
		{"truncated inside a meta page", func(t *testing.T, d []byte, g geo) []byte {
			return d[:g.ps+100]
		}, true, "meta", false},
		{"both meta pages zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[:2*g.ps])
			return d
		}, true, "neither meta page is valid", false},
		{"freelist page zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[int(g.freelist)*g.ps : int(g.freelist+1)*g.ps])
			return d
		}, true, "freelist", false},
		{"freelist lists a page twice", func(t *testing.T, d []byte, g geo) []byte {
			p := d[int(g.freelist)*g.ps:]
			if boltfile.Order.Uint16(p[10:]) < 2 {
				t.Skip("the freelist holds fewer than two pages")
			}
			copy(p[boltfile.HeaderSize+8:boltfile.HeaderSize+16], p[boltfile.HeaderSize:boltfile.HeaderSize+8])
			return d
		}, true, "out of order, or twice", false},
		{"one meta page zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[:g.ps])
			return d
		}, false, "meta page 0 is not valid", true},
		{"meta pages swapped", func(t *testing.T, d []byte, g geo) []byte {
			m0 := append([]byte(nil), d[:g.ps]...)
			copy(d[:g.ps], d[g.ps:2*g.ps])
			copy(d[g.ps:2*g.ps], m0)
			return d
		}, false, "which belongs on page", true},
		{"the root bucket's page zeroed", func(t *testing.T, d []byte, g geo) []byte {
			// bbolt reads it to find mql's buckets: neither Open nor the check gets further.
			clear(d[int(g.root)*g.ps : int(g.root+1)*g.ps])
			return d
		}, true, "the root bucket", false},
		{"a page in use zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[int(g.data)*g.ps : int(g.data+1)*g.ps])
			return d
		}, false, "page", false},
		{"a page header says another id", func(t *testing.T, d []byte, g geo) []byte {
			d[int(g.data)*g.ps] ^= 0x40
			return d
		}, false, "says it is page", false},
		{"a leaf page zeroed that Open does not read", func(t *testing.T, d []byte, g geo) []byte {
			if g.leaf == 0 {
				t.Skip("every page of the file holds something Open reads")
			}
			clear(d[int(g.leaf)*g.ps : int(g.leaf+1)*g.ps])
			return d
		}, false, "page", false},
	}
	samplePath, want := damagedSample(t)
	sample, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.db")
			if err := os.WriteFile(path, sample, 0o600); err != nil {
				t.Fatal(err)
			}
			g := geometry(t, path)
			if strings.Contains(c.name, "Open does not read") {
				g.leaf = openablePage(t, path, g)
			}
			damageFile(t, path, func(d []byte) []byte { return c.edit(t, d, g) })
			_, checkErr := CheckDSN(ctx, path, Options{}, CheckOptions{})
			s, err := Open(ctx, path, Options{})
			if c.unopenable {
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "mql check") {
					t.Fatalf("Open: %v, want ErrDamaged saying %q and what to do", err, c.want)
				}
				if !errors.Is(checkErr, ErrDamaged) {
					t.Fatalf("CheckDSN: %v, want ErrDamaged", checkErr)
				}
				return
			}
			if checkErr != nil {
				t.Fatalf("CheckDSN: %v", checkErr)
			}
			if err != nil {
				// Open may need what the damage destroyed; then it refuses the store.
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) || g.leaf != 0 {
					t.Fatalf("Open: %v, want ErrDamaged saying %q", err, c.want)
				}
				t.Logf("Open: %v", err)
				return
			}
			defer s.Close()
			if err := writeOne(s); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("a write on a damaged store: %v, want ErrDamaged saying %q", err, c.want)
			}
			// Reads go on where they can: every transaction as it was written, or an error
			// wrapping ErrDamaged where a read needs a damaged page.
			got, err := readTxs(s)
			t.Logf("read: %d transactions, %v", len(got), err)
			switch {
			case err == nil:
				sameTxs(t, got, want)
			case !c.readable && errors.Is(err, ErrDamaged):
			default:
				t.Fatalf("reading the damaged store: %v", err)
			}
			r, err := s.Check(ctx, CheckOptions{})
			if err != nil || r.OK() || r.Problems[0].Kind != ProblemFile {
				t.Fatalf("Check: %v %+v", err, r)
			}
		})
	}
}

// A file truncated under an open store: reads (which all go through the storage engine now)
// and writes fail with ErrDamaged instead of a SIGBUS, the check reports the file, and Close
// returns.
func TestTruncatedWhileOpen(t *testing.T) {
	ctx := context.Background()
	path, want := closedSample(t)
	g := geometry(t, path)
	s := mustOpen(t, path, Options{})
	if err := os.Truncate(path, int64(2*g.ps)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.QuadCount(ctx); !errors.Is(err, ErrDamaged) {
		t.Fatalf("QuadCount on a truncated file: %v, want ErrDamaged", err)
	}
	if err := writeOne(s); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a write on a truncated file: %v, want ErrDamaged", err)
	}
	if r, err := s.Check(ctx, CheckOptions{}); err != nil || r.OK() || r.Problems[0].Kind != ProblemFile {
		t.Fatalf("Check: %v %+v", err, r)
	}
	if got, err := readTxs(s); !errors.Is(err, ErrDamaged) {
		t.Fatalf("reading a truncated file: %d transactions of %d, %v; want ErrDamaged", len(got), len(want), err)
	}
	if h := s.Head(); h != want[len(want)-1].ID {
		t.Fatalf("the Store's head is %d, want %d", h, want[len(want)-1].ID)
	}
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung")
	}
	if _, err := Open(ctx, path, Options{}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("reopening: %v, want ErrDamaged", err)
	}
}

// Truncated to nothing, the same: no SIGBUS, writes refused.
func TestTruncatedToNothingWhileOpen(t *testing.T) {
	path, _ := closedSample(t)
	s := mustOpen(t, path, Options{})
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := writeOne(s); !errors.Is(err, ErrDamaged) {
		t.Fatalf("a write on a file truncated to nothing: %v, want ErrDamaged", err)
	}
	if _, err := s.QuadCount(context.Background()); !errors.Is(err, ErrDamaged) {
		t.Fatalf("QuadCount: %v, want ErrDamaged", err)
	}
	s.Close()
	// What is left is no store at all, as every command says of an empty file.
	if _, err := CheckDSN(context.Background(), path, Options{}, CheckOptions{}); !errors.Is(err, ErrNoStore) {
		t.Fatalf("CheckDSN of an empty file: %v, want ErrNoStore", err)
	}
}

// Damage inside the data (a record that no longer decodes, the pages around it sound) is
// invisible to Open, which reads the store's state and nothing else. The check that finds it
// records its verdict in the file, so that every later Open refuses writes as the check
// refused the store; reads that do not need the damaged record go on, and one that does fails
// with ErrDamaged instead of crashing.
func TestCheckRecordsUnreadableRecords(t *testing.T) {
	ctx := context.Background()
	path, want := closedSample(t)
	// A claim of a transaction in the middle (tx 3's first, Klarveld.price_per_seat@1).
	seq := keySeqOf(t, path, "Klarveld", "price_per_seat")
	editBucket(t, path, "claim", func(w kv.Writer, b kv.Bucket, _ []entry) error {
		if v, err := w.Get(b, claimKeyOf(seq, 1)); v == nil || err != nil {
			return fmt.Errorf("no claim Klarveld.price_per_seat@1 (%v)", err)
		}
		return w.Put(b, claimKeyOf(seq, 1), []byte{0xff, 0xff, 0xff, 0xff})
	})

	for i := range 2 { // the second check finds the damage again, and keeps the verdict
		r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
		if err != nil || r.OK() || !ckFound(r, ProblemRecord, "tx 3: the transaction's records cannot be read") {
			if r != nil {
				ckLogProblems(t, r)
			}
			t.Fatalf("check %d: %v", i+1, err)
		}
	}
	s := mustOpen(t, path, Options{})
	defer s.Close()
	if head(s) != want[len(want)-1].ID {
		t.Fatalf("head %d, want %d", head(s), want[len(want)-1].ID)
	}
	if err := writeOne(s); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "a check on ") {
		t.Fatalf("a write after a check found the records unreadable: %v, want ErrDamaged naming the check", err)
	}
	// Every transaction but tx 3 reads as it was written; tx 3 fails with ErrDamaged.
	for _, w := range want {
		var got *record.Tx
		err := s.Read(ctx, func(ix *index.Index) error { got = ix.Tx(w.ID); return nil })
		switch {
		case w.ID == 3:
			if !errors.Is(err, ErrDamaged) {
				t.Fatalf("reading tx 3, whose claim is damaged: %v, want ErrDamaged", err)
			}
		case err != nil:
			t.Fatalf("reading tx %d: %v", w.ID, err)
		case showTx(got) != showTx(w):
			t.Fatalf("tx %d reads\n%s\nwant\n%s", w.ID, showTx(got), showTx(w))
		}
	}
	if _, err := s.QuadCount(ctx); !errors.Is(err, ErrDamaged) {
		t.Fatalf("QuadCount, which reads every transaction: %v, want ErrDamaged", err)
	}
	// The open store's own check says the same, and keeps the verdict.
	if r, err := s.Check(ctx, CheckOptions{}); err != nil || !ckFound(r, ProblemRecord, "cannot be read") {
		t.Fatalf("Store.Check: %v %+v", err, r)
	}
}

// The store's meta entries (the owner and strict flag, or the state, what Open reads besides the
// format) no longer decode: Open refuses the store with ErrDamaged or ErrStorage, never a
// panic; the check, which cannot read the records without them, reports it as a problem of
// kind "file" and records its verdict.
func TestCheckUnreadableMeta(t *testing.T) {
	ctx := context.Background()
	path, _ := closedSample(t)
	editBucket(t, path, "meta", func(w kv.Writer, b kv.Bucket, es []entry) error {
		n := 0
		for _, e := range es {
			if string(e.k) == "format" || len(e.v) < 2 {
				continue
			}
			if err := w.Put(b, e.k, e.v[:len(e.v)/2]); err != nil {
				return err
			}
			n++
		}
		if n == 0 {
			return errors.New("no meta entry to damage")
		}
		return nil
	})
	for i := range 2 {
		r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
		if err != nil || r.OK() || !ckFound(r, ProblemFile, "records cannot be read") {
			if r != nil {
				ckLogProblems(t, r)
			}
			t.Fatalf("check %d: %v", i+1, err)
		}
	}
	s, err := Open(ctx, path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open took a store whose state does not decode")
	}
	if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrStorage) {
		t.Fatalf("Open: %v, want ErrDamaged or ErrStorage", err)
	}
}

// A store whose format entry is lost but whose transactions are there is damaged, not new:
// taking it for a store whose creation stopped before its genesis would write a genesis over
// the history it holds.
func TestOpenStoreWithoutFormat(t *testing.T) {
	ctx := context.Background()
	path, want := closedSample(t)
	editBucket(t, path, "meta", func(w kv.Writer, b kv.Bucket, es []entry) error {
		return w.Delete(b, []byte("format"))
	})
	for i := range 2 {
		s, err := Open(ctx, path, Options{})
		if err == nil {
			s.Close()
			t.Fatalf("open %d took a store with transactions and no format", i+1)
		}
		if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrStorage) {
			t.Fatalf("open %d: %v, want ErrDamaged or ErrStorage", i+1, err)
		}
	}
	n := 0
	editBucket(t, path, "tx", func(w kv.Writer, b kv.Bucket, es []entry) error {
		n = len(es)
		return nil
	})
	if n != len(want) {
		t.Fatalf("%d transactions left after the opens, want %d", n, len(want))
	}
}

// Damage to an index entry (the records whole) is invisible to the reads that do not use the
// entry, and wrong in those that do. The check replays the records and compares every entry
// with the one they give: it reports the damage (kind "index"), and records its verdict, so
// that every later Open refuses writes before they begin, while the transactions still read as
// they were written.
func TestCheckFindsDamagedIndex(t *testing.T) {
	// edit damages the closed file at path.
	cases := []struct {
		name string
		edit func(t *testing.T, path string)
		want string // in an index problem
		// reads, if set, gives the transactions a read sees from the ones written, when the
		// damage changed a record.
		reads func(t *testing.T, want []*record.Tx) []*record.Tx
	}{
		{"a key's length grown by a byte of its value", func(t *testing.T, path string) {
			// What a flipped key size in a page's element table does: the CI failure of
			// 2026-11-30, on a Cayley log then; here the entry of Klarveld.price_per_seat.
			editBucket(t, path, "key", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				k := keyOf("Klarveld", "price_per_seat")
				v, err := w.Get(b, k)
				if len(v) == 0 || err != nil {
					return fmt.Errorf("no key entry (%v)", err)
				}
				v = bytes.Clone(v)
				if err := w.Delete(b, k); err != nil {
					return err
				}
				return w.Put(b, append(bytes.Clone(k), v[0]), v[1:])
			})
		}, `key: the store lacks "Klarveld\x00price_per_seat"`, nil},
		{"a predicate's entry gone", func(t *testing.T, path string) {
			editBucket(t, path, "predkey", func(w kv.Writer, b kv.Bucket, es []entry) error {
				return w.Delete(b, es[len(es)/2].k)
			})
		}, "predkey: the store lacks", nil},
		{"a byte of a claim's value changed, the claim still decoding", func(t *testing.T, path string) {
			// Klarveld.soc2@1's value, true, becomes false (with its checksum, if values have
			// one: as a writer that wrote the wrong value would): the live claims by value say
			// true.
			seq := keySeqOf(t, path, "Klarveld", "soc2")
			editBucket(t, path, "claim", func(w kv.Writer, b kv.Bucket, _ []entry) error {
				raw, err := w.Get(b, claimKeyOf(seq, 1))
				if err != nil {
					return err
				}
				v, sealed := unseal(raw)
				i := bytes.Index(v, []byte{3, 1}) // a value: type byte 3 (bool), then true
				if i < 0 || bytes.Contains(v[i+1:], []byte{3, 1}) {
					return fmt.Errorf("the claim's value is not found once in % x", v)
				}
				v[i+1] = 0
				return w.Put(b, claimKeyOf(seq, 1), reseal(v, sealed))
			})
		}, "live: the store holds", func(t *testing.T, want []*record.Tx) []*record.Tx {
			// Tx 3 reads with the changed value: nothing but the index says it was true.
			tx := *want[2]
			tx.Claims = slices.Clone(tx.Claims)
			for i, c := range tx.Claims {
				if c.ID.String() == "Klarveld.soc2@1" {
					changed := *c
					changed.Value.Bool = false
					tx.Claims[i] = &changed
				}
			}
			return append(append(slices.Clone(want[:2]), &tx), want[3:]...)
		}},
		{"a live entry saying its value is -0", func(t *testing.T, path string) {
			editBucket(t, path, "live", func(w kv.Writer, b kv.Bucket, es []entry) error {
				v, sealed := unseal(es[0].v)
				v = append([]byte(nil), v...)
				v[len(v)-1] ^= 1 // the entry's last field: whether its value is a number -0
				return w.Put(b, es[0].k, reseal(v, sealed))
			})
		}, "is not what its records give", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path, want := closedSample(t)
			tc.edit(t, path)

			for i := range 2 { // a second check finds the damage again
				r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !ckFound(r, ProblemIndex, tc.want) || !ckFound(r, ProblemIndex, "copy it with `mql export` and `mql import`") {
					ckLogProblems(t, r)
					t.Fatalf("check %d: no index problem saying %q, and what to do", i+1, tc.want)
				}
			}
			s := mustOpen(t, path, Options{})
			defer s.Close()
			// The write is refused before it begins: its error is the damage, with what to do.
			if err := writeOne(s); !errors.Is(err, ErrDamaged) || errors.Is(err, ErrStorage) ||
				!strings.Contains(err.Error(), "nothing was written") || !strings.Contains(err.Error(), "restore the store") {
				t.Fatalf("a write after the check: %v, want ErrDamaged saying nothing was written and what to do", err)
			}
			if tc.reads != nil {
				want = tc.reads(t, want)
			}
			sameTxs(t, txsOf(s), want)
		})
	}
}

// TestRandomDamage damages a store of the current format in seeded random ways (the damages
// of cmd/mql's TestDamagedStores, which runs the mql binary on 200 copies in CI; here in
// process, MQL_DAMAGE_CASES copies, 200 by default) and requires of every copy:
// nothing panics, faults or hangs (a panic or a fault that escaped the guards would crash the
// test binary; every step has a deadline); the check answers a report or an error that says
// why; if the check passes, the store reads exactly as before and takes a write; if the check
// rejects it, a write is refused.
func TestRandomDamage(t *testing.T) {
	cases := 200 // as many as CI gives cmd/mql's: in process, they take a second or two
	if v := os.Getenv("MQL_DAMAGE_CASES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("MQL_DAMAGE_CASES=%q", v)
		}
		cases = n
	}
	if testing.Short() {
		cases = min(cases, 10)
	}
	path := filepath.Join(t.TempDir(), "s.db")
	s := mustOpen(t, path, Options{VectorIndex: smallIVF}) // vectors in lists too
	writeSample(t, s)
	for i := range 150 { // enough for several pages per bucket
		if _, err := s.Write(context.Background(), "owner", countingClaim(fmt.Sprintf("R%d", i%40), i/40+1)); err != nil {
			t.Fatal(err)
		}
	}
	writeIVF(t, s, ivfHistory(9, 150), nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if r, err := CheckDSN(context.Background(), path, Options{}, CheckOptions{}); err != nil || !r.OK() {
		t.Fatalf("the sound store does not check: %v %s", err, firstProblem(r))
	}
	sound, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g := geometry(t, path)
	wantExport := exportFile(t, path)
	type damage func(rng *rand.Rand, d []byte) ([]byte, string)
	page := func(rng *rand.Rand) int { return 2 + rng.IntN(int(g.hwm)-2) }
	damages := []damage{
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			n := 1 + rng.IntN(8)
			for range n {
				d[rng.IntN(len(d))] ^= byte(1 + rng.IntN(255))
			}
			return d, fmt.Sprintf("%d bytes flipped", n)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			p := page(rng)
			clear(d[p*g.ps : (p+1)*g.ps])
			return d, fmt.Sprintf("page %d zeroed", p)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			p := page(rng)
			for i := p * g.ps; i < (p+1)*g.ps; i++ {
				d[i] = byte(rng.Uint32())
			}
			return d, fmt.Sprintf("page %d random", p)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			n := 1 + rng.IntN(len(d)-1)
			return d[:n], fmt.Sprintf("truncated to %d bytes", n)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			a, b := page(rng), page(rng)
			copy(d[b*g.ps:(b+1)*g.ps], d[a*g.ps:(a+1)*g.ps])
			return d, fmt.Sprintf("page %d copied over page %d", a, b)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			p := page(rng)
			i := p*g.ps + rng.IntN(16)
			d[i] ^= byte(1 + rng.IntN(255))
			return d, fmt.Sprintf("page %d: header byte %d flipped", p, i-p*g.ps)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			p := page(rng)
			i := p*g.ps + 16 + rng.IntN(64)
			d[i] ^= byte(1 + rng.IntN(255))
			return d, fmt.Sprintf("page %d: element byte %d flipped", p, i-p*g.ps)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			// A byte in the second half of a page: keys and values.
			p := page(rng)
			i := p*g.ps + g.ps/2 + rng.IntN(g.ps/2)
			d[i] ^= byte(1 + rng.IntN(255))
			return d, fmt.Sprintf("page %d: data byte %d flipped", p, i-p*g.ps)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			p := rng.IntN(2)
			i := p*g.ps + 16 + rng.IntN(64)
			d[i] ^= byte(1 + rng.IntN(255))
			return d, fmt.Sprintf("meta page %d: byte %d flipped", p, i-p*g.ps)
		},
		func(rng *rand.Rand, d []byte) ([]byte, string) {
			i := int(g.freelist)*g.ps + rng.IntN(64)
			d[i] ^= byte(1 + rng.IntN(255))
			return d, fmt.Sprintf("freelist: byte %d flipped", i-int(g.freelist)*g.ps)
		},
	}
	// within runs step, failing the test if it takes more than a minute.
	within := func(t *testing.T, what string, step func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); step() }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("%s hung", what)
		}
	}
	rng := rand.New(rand.NewPCG(1, 0x64616d))
	benign, rejected, unopenable := 0, 0, 0
	for i := range cases {
		data, what := damages[i%len(damages)](rng, bytes.Clone(sound))
		t.Run(fmt.Sprintf("%03d", i), func(t *testing.T) {
			t.Logf("damage: %s", what)
			p := filepath.Join(t.TempDir(), "d.db")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			var r *Report
			var checkErr error
			within(t, "the check", func() { r, checkErr = CheckDSN(ctx, p, Options{}, CheckOptions{}) })
			checked := checkErr == nil && r.OK()
			switch {
			case checked:
				benign++
			case checkErr != nil:
				unopenable++
				if !errors.Is(checkErr, ErrDamaged) && !errors.Is(checkErr, ErrNoStore) && !errors.Is(checkErr, ErrStorage) && !errors.Is(checkErr, ErrOldFormat) {
					t.Errorf("the check failed with %v, which says neither damaged, storage, no store nor old format", checkErr)
				}
			default:
				rejected++
			}
			var s *Store
			var openErr error
			within(t, "Open", func() { s, openErr = Open(ctx, p, Options{}) })
			if openErr != nil {
				if checked {
					t.Fatalf("the check passed, but Open refused the store: %v", openErr)
				}
				return
			}
			defer within(t, "Close", func() { s.Close() })
			var export string
			var readErr error
			within(t, "reading", func() {
				var txs []*record.Tx
				if txs, readErr = readTxs(s); readErr == nil {
					var b strings.Builder
					readErr = codec.WriteNQuads(&b, txs)
					export = b.String()
				}
			})
			var writeErr error
			within(t, "a write", func() { writeErr = writeOne(s) })
			if checked {
				if readErr != nil || export != wantExport {
					t.Errorf("the check passed, but the store does not read as before: %v", readErr)
				}
				if writeErr != nil {
					t.Errorf("the check passed, but a write was refused: %v", writeErr)
				}
				return
			}
			if writeErr == nil {
				t.Errorf("the check rejected the store (%v; %s), but a write was accepted", checkErr, firstProblem(r))
			}
		})
	}
	t.Logf("%d damaged copies: check passed %d, found problems in %d, could not check %d", cases, benign, rejected, unopenable)
}

func firstProblem(r *Report) string {
	if r == nil || len(r.Problems) == 0 {
		return "no problem"
	}
	return r.Problems[0].Kind + ": " + r.Problems[0].String()
}

// exportFile is the N-Quads export of the closed store at path.
func exportFile(t *testing.T, path string) string {
	t.Helper()
	s := mustOpen(t, path, Options{MustExist: true})
	defer s.Close()
	var b strings.Builder
	if err := codec.WriteNQuads(&b, txsOf(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
