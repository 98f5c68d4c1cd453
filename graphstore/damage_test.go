package graphstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	cproto "github.com/cayleygraph/cayley/graph/proto"
	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/pquads"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// geo is the geometry of a sound bbolt file: its page size, pages in use, freelist page, and
// the highest page that holds data.
type geo struct {
	ps                  int
	hwm, freelist, data uint64
}

func geometry(t *testing.T, path string) geo {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	l, err := inspectBolt(f, st.Size())
	if err != nil || len(l.problems) > 0 {
		t.Fatalf("not a sound file: %v %v", err, l)
	}
	data := l.meta.hwm - 1
	for data == l.meta.freelist || slices.Contains(l.free, data) {
		data--
	}
	return geo{l.pageSize, l.meta.hwm, l.meta.freelist, data}
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
	}{
		{"truncated below its pages in use", func(t *testing.T, d []byte, g geo) []byte {
			return d[:int(g.hwm-1)*g.ps]
		}, true, "it was truncated"},
		{"truncated inside a meta page", func(t *testing.T, d []byte, g geo) []byte {
			return d[:g.ps+100]
		}, true, "meta"},
		{"both meta pages zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[:2*g.ps])
			return d
		}, true, "neither meta page is valid"},
		{"freelist page zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[int(g.freelist)*g.ps : int(g.freelist+1)*g.ps])
			return d
		}, true, "freelist"},
		{"freelist lists a page twice", func(t *testing.T, d []byte, g geo) []byte {
			p := d[int(g.freelist)*g.ps:]
			if boltOrder.Uint16(p[10:]) < 2 {
				t.Skip("the freelist holds fewer than two pages")
			}
			copy(p[boltHeaderSize+8:boltHeaderSize+16], p[boltHeaderSize:boltHeaderSize+8])
			return d
		}, true, "out of order, or twice"},
		{"one meta page zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[:g.ps])
			return d
		}, false, "meta page 0 is not valid"},
		{"meta pages swapped", func(t *testing.T, d []byte, g geo) []byte {
			m0 := append([]byte(nil), d[:g.ps]...)
			copy(d[:g.ps], d[g.ps:2*g.ps])
			copy(d[g.ps:2*g.ps], m0)
			return d
		}, false, "which belongs on page"},
		{"a page in use zeroed", func(t *testing.T, d []byte, g geo) []byte {
			clear(d[int(g.data)*g.ps : int(g.data+1)*g.ps])
			return d
		}, false, "page"},
		{"a page header says another id", func(t *testing.T, d []byte, g geo) []byte {
			d[int(g.data)*g.ps] ^= 0x40
			return d
		}, false, "says it is page"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, want := closedSample(t)
			g := geometry(t, path)
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
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Open: %v, want ErrDamaged saying %q", err, c.want)
				}
				return
			}
			defer s.Close()
			if err := writeOne(s); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("a write on a damaged store: %v, want ErrDamaged saying %q", err, c.want)
			}
			if got := txsOf(s); len(got) != len(want) {
				t.Fatalf("the index holds %d transactions, want %d", len(got), len(want))
			}
			r, err := s.Check(ctx, CheckOptions{})
			if err != nil || r.OK() || r.Problems[0].Kind != ProblemFile {
				t.Fatalf("Check: %v %+v", err, r)
			}
		})
	}
}

// A file truncated under an open store: reads through the storage engine and writes fail with
// ErrDamaged instead of a SIGBUS, reads the index answers go on, and Close returns.
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
	if got := txsOf(s); len(got) != len(want) {
		t.Fatalf("the index holds %d transactions, want %d", len(got), len(want))
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
// invisible to an Open that loads the snapshot. The check that finds it records its verdict in
// the file, so that every later Open refuses writes as the check refused the store.
func TestCheckRecordsUnreadableQuads(t *testing.T) {
	ctx := context.Background()
	path, want := closedSample(t)
	editLog(t, path, func(b *bolt.Bucket, log []logEntry) error {
		// A record in the middle: Open, loading the snapshot, reads only the first and last
		// transactions' nodes.
		return b.Put(log[len(log)/2].key, []byte{0xff, 0xff, 0xff, 0xff})
	})

	for range 2 { // the second check finds the damage again, and keeps the verdict
		r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
		if err != nil || r.OK() || r.Problems[0].Kind != ProblemFile || !strings.Contains(r.Problems[0].Msg, "quads cannot be read") {
			t.Fatalf("CheckDSN: %v %+v", err, r)
		}
	}
	s := mustOpen(t, path, Options{})
	defer s.Close()
	if got := txsOf(s); len(got) != len(want) {
		t.Fatalf("the index holds %d transactions, want %d", len(got), len(want))
	}
	if err := writeOne(s); !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "a check on ") {
		t.Fatalf("a write after a check found the quads unreadable: %v, want ErrDamaged naming the check", err)
	}
}

// Damage to an entry of Cayley's log (where a bbolt store keeps each value and quad under its
// id) is invisible to reads, which skip an id they do not find: a quad vanishes, or a value
// changes, and every read agrees. Only the snapshot, written when the quads were whole, still
// holds what was lost. The check reads the log itself: it reports the damage, keeps the
// snapshot, and records its verdict, so that every later Open refuses writes and still loads
// the transactions as they were written.
func TestCheckFindsDamagedLog(t *testing.T) {
	// edit damages one entry chosen among the log's entries, in id order.
	cases := []struct {
		name string
		edit func(t *testing.T, b *bolt.Bucket, log []logEntry) error
	}{
		{"a quad's key lengthened by a byte of its value", func(t *testing.T, b *bolt.Bucket, log []logEntry) error {
			// What a flipped key size in a page's element table does: the CI failure of 2026-11-30.
			e := middle(t, log, func(p *cproto.Primitive) bool { return !p.IsNode() })
			v := bytes.Clone(b.Get(e.key))
			if err := b.Delete(e.key); err != nil {
				return err
			}
			return b.Put(append(bytes.Clone(e.key), v[0]), v[1:])
		}},
		{"a quad's entry gone", func(t *testing.T, b *bolt.Bucket, log []logEntry) error {
			return b.Delete(middle(t, log, func(p *cproto.Primitive) bool { return !p.IsNode() }).key)
		}},
		{"a byte of a value changed, the value still decoding", func(t *testing.T, b *bolt.Bucket, log []logEntry) error {
			e := middle(t, log, func(p *cproto.Primitive) bool {
				v, err := pquads.UnmarshalValue(p.Value)
				s, ok := v.(quad.String)
				return err == nil && ok && len(s) > 2
			})
			v := bytes.Clone(b.Get(e.key))
			v[len(v)-1] ^= 1 // the last byte of the string: another ASCII letter
			return b.Put(e.key, v)
		}},
		{"a quad naming a quad as its object", func(t *testing.T, b *bolt.Bucket, log []logEntry) error {
			quads := slices.DeleteFunc(slices.Clone(log), func(e logEntry) bool { return e.p.IsNode() })
			e := middle(t, quads, func(*cproto.Primitive) bool { return true })
			p := proto.Clone(e.p).(*cproto.Primitive)
			p.Object = quads[0].p.ID
			v, err := proto.Marshal(p)
			if err != nil {
				return err
			}
			return b.Put(e.key, v)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path, want := closedSample(t)
			editLog(t, path, func(b *bolt.Bucket, log []logEntry) error { return tc.edit(t, b, log) })

			for i := range 2 { // a second check finds the damage again
				r, err := CheckDSN(ctx, path, Options{}, CheckOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.ContainsFunc(r.Problems, func(p Problem) bool { return p.Kind == ProblemLog || p.Kind == ProblemFile }) {
					t.Fatalf("check %d: no problem of kind log or file: %+v", i+1, r)
				}
				for _, p := range r.Problems {
					if p.Kind == ProblemSnapshot && !strings.Contains(p.Msg, "it was kept") {
						t.Fatalf("check %d removed the snapshot, the one whole copy: %s", i+1, p)
					}
				}
			}
			s := mustOpen(t, path, Options{})
			defer s.Close()
			// The write is refused before it begins: its error is the damage, with what to do.
			if err := writeOne(s); !errors.Is(err, ErrDamaged) || errors.Is(err, ErrStorage) ||
				!strings.Contains(err.Error(), "nothing was written") || !strings.Contains(err.Error(), "restore the store") {
				t.Fatalf("a write after the check: %v, want ErrDamaged saying nothing was written and what to do", err)
			}
			if !s.fromSnapshot {
				t.Fatal("Open scanned the damaged quads instead of loading the snapshot")
			}
			sameTxs(t, txsOf(s), want)
		})
	}
}

// logEntry is an entry of Cayley's log, as a test reads it.
type logEntry struct {
	key []byte
	p   *cproto.Primitive
}

// editLog calls edit, in a write transaction on the closed bbolt file at path, with Cayley's
// log bucket and its entries in id order.
func editLog(t *testing.T, path string, edit func(b *bolt.Bucket, log []logEntry) error) {
	t.Helper()
	updateFile(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket(cayleyLogBucket)
		var log []logEntry
		if err := b.ForEach(func(k, v []byte) error {
			var p cproto.Primitive
			if err := proto.Unmarshal(v, &p); err != nil {
				return err
			}
			log = append(log, logEntry{bytes.Clone(k), &p})
			return nil
		}); err != nil {
			return err
		}
		return edit(b, log)
	})
}

// middle returns the entry of log halfway through those that match.
func middle(t *testing.T, log []logEntry, match func(*cproto.Primitive) bool) logEntry {
	t.Helper()
	var found []logEntry
	for _, e := range log {
		if match(e.p) {
			found = append(found, e)
		}
	}
	if len(found) == 0 {
		t.Fatal("no entry of the log matches")
	}
	return found[len(found)/2]
}
