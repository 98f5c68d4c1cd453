package legacy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/legacy"
	"github.com/mql-dev/mql/graphstore/record"
)

// The fixture: a store written by the mql before the storage rewrite, and its export by that
// mql (cmd/mql/testdata/oldformat/make.sh).
const (
	fixtureDB     = "../../cmd/mql/testdata/oldformat/old.db"
	fixtureExport = "../../cmd/mql/testdata/oldformat/old.nq"
)

// copyFixture copies the fixture into a temporary directory (the tests never touch the
// committed file) and returns its path.
func copyFixture(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(fixtureDB)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "old.db")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// exportOf reads dsn's transactions and writes them as an export does.
func exportOf(t *testing.T, dsn string) ([]byte, legacy.Summary, error) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := legacy.Read(context.Background(), dsn, legacy.Options{}, func(tx *record.Tx) error {
		return codec.WriteNQuads(&buf, []*record.Tx{tx})
	})
	return buf.Bytes(), sum, err
}

func TestReadFixture(t *testing.T) {
	path := copyFixture(t)
	before, _ := os.ReadFile(path)
	got, sum, err := exportOf(t, path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(fixtureExport)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the transactions read differ from the old mql's export:\n%s", firstDiff(got, want))
	}
	if sum.Backend != "bbolt" || sum.Transactions != 36 || sum.Claims != 11 || sum.Quads != 518 || !sum.Snapshot {
		t.Errorf("summary %+v; want bbolt, 36 transactions, 11 claims, 518 quads, a snapshot", sum)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("reading the old store changed its file")
	}
	// bbolt:PATH names the same file.
	if again, _, err := exportOf(t, "bbolt:"+path); err != nil || !bytes.Equal(again, want) {
		t.Errorf("bbolt:PATH: %v", err)
	}
}

func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n got  " + a + "\n want " + b
		}
	}
	return "(no line differs)"
}

// TestFnError: an error of fn ends the read and comes back as it is.
func TestFnError(t *testing.T) {
	path := copyFixture(t)
	stop := errors.New("stop")
	n := 0
	_, err := legacy.Read(context.Background(), path, legacy.Options{}, func(*record.Tx) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Fatalf("err %v after %d transactions; want stop after 3", err, n)
	}
}

// mustDamage reads path and wants an error wrapping ErrDamaged that says want.
func mustDamage(t *testing.T, path, want string) {
	t.Helper()
	_, _, err := exportOf(t, path)
	if !errors.Is(err, graphstore.ErrDamaged) {
		t.Fatalf("err %v; want ErrDamaged", err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("err %q; want it to say %q", err, want)
	}
	t.Log(err)
}

func TestTruncated(t *testing.T) {
	path := copyFixture(t)
	fi, _ := os.Stat(path)
	if err := os.Truncate(path, fi.Size()/2); err != nil {
		t.Fatal(err)
	}
	mustDamage(t, path, "truncated")
}

func TestGarbledPage(t *testing.T) {
	path := copyFixture(t)
	b, _ := os.ReadFile(path)
	// Overwrite the middle of the file (pages in use) with garbage.
	for i := len(b) / 3; i < len(b)/3+4096; i++ {
		b[i] = byte(i * 7)
	}
	os.WriteFile(path, b, 0o600)
	mustDamage(t, path, "is damaged")
}

// editBolt changes the fixture's copy with bbolt, as damage inside the data would.
func editBolt(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestLostLogEntry: a quad gone from Cayley's log vanishes from every read without an error.
func TestLostLogEntry(t *testing.T) {
	path := copyFixture(t)
	editBolt(t, path, func(tx *bolt.Tx) error {
		log := tx.Bucket([]byte("log"))
		k, _ := log.Cursor().Last()
		return log.Delete(k)
	})
	mustDamage(t, path, "Cayley's log")
}

// TestChangedValue: a value whose bytes changed is no longer found under its hash.
func TestChangedValue(t *testing.T) {
	path := copyFixture(t)
	editBolt(t, path, func(tx *bolt.Tx) error {
		log := tx.Bucket([]byte("log"))
		c := log.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if i := bytes.Index(v, []byte("Klarveld")); i >= 0 {
				nv := bytes.Clone(v)
				copy(nv[i:], "Klarfeld")
				return log.Put(bytes.Clone(k), nv)
			}
		}
		t.Fatal("no value holds Klarveld")
		return nil
	})
	mustDamage(t, path, "not found under its hash")
}

// TestLostTxNode: the transactions stop where a transaction node's quads are gone from the
// subject index, and the quads after them are reported instead of migrating a part.
func TestLostTxNode(t *testing.T) {
	path := copyFixture(t)
	editBolt(t, path, func(tx *bolt.Tx) error {
		// Cayley's "sp" index: subject id, predicate id (8 bytes each, big-endian) → quad ids.
		// Drop the entries of the subject <urn:mql:tx:20>: find its value id in the log.
		id := valueID(t, tx, string(codec.TxIRI(20)))
		sp := tx.Bucket([]byte("sp"))
		c := sp.Cursor()
		prefix := binary.BigEndian.AppendUint64(nil, id)
		var keys [][]byte
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		if len(keys) == 0 {
			t.Fatal("no sp entries for tx 20")
		}
		for _, k := range keys {
			if err := sp.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
	mustDamage(t, path, "tx 20 cannot be read through its transaction node")
}

// valueID finds the id Cayley gave the IRI iri, by its hash bucket.
func valueID(t *testing.T, tx *bolt.Tx, iri string) uint64 {
	t.Helper()
	log := tx.Bucket([]byte("log"))
	c := log.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if bytes.Contains(v, []byte(iri)) && !bytes.Contains(v, []byte(iri+"0")) && !bytes.Contains(v, []byte(iri+"1")) {
			return binary.BigEndian.Uint64(k)
		}
	}
	t.Fatalf("no value %s", iri)
	return 0
}

func TestNotOld(t *testing.T) {
	dir := t.TempDir()
	_, _, err := exportOf(t, filepath.Join(dir, "missing.db"))
	if !errors.Is(err, graphstore.ErrNoStore) {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty.db")
	os.WriteFile(empty, nil, 0o600)
	if _, _, err := exportOf(t, empty); !errors.Is(err, graphstore.ErrNoStore) {
		t.Errorf("empty file: %v", err)
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Error("reading an empty file wrote to it")
	}
	// A store of the current format.
	cur := filepath.Join(dir, "current.db")
	s, err := graphstore.Open(context.Background(), cur, graphstore.Options{})
	if err != nil {
		t.Skipf("graphstore.Open: %v", err)
	}
	s.Close()
	_, _, err = exportOf(t, cur)
	if !errors.Is(err, legacy.ErrNotOld) || !strings.Contains(err.Error(), encoding.Format) {
		t.Errorf("current format: %v", err)
	}
	if _, _, err := exportOf(t, "memory:"); !errors.Is(err, graphstore.ErrNoStore) {
		t.Errorf("memory: %v", err)
	}
}

// TestHeld: a file an old mql holds (an exclusive lock) is in use.
func TestHeld(t *testing.T) {
	path := copyFixture(t)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = legacy.Read(context.Background(), path, legacy.Options{OpenTimeout: 100e6}, func(*record.Tx) error { return nil })
	if !errors.Is(err, graphstore.ErrInUse) {
		t.Fatalf("err %v; want ErrInUse", err)
	}
}

// TestVerdict: a store an earlier check found damaged (its verdict recorded in the file) is
// refused, with the verdict.
func TestVerdict(t *testing.T) {
	path := copyFixture(t)
	editBolt(t, path, func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucket([]byte("mql.damaged"))
		if err != nil {
			return err
		}
		bk.Put([]byte("at"), []byte("2026-11-30T10:00:00Z"))
		return bk.Put([]byte("what"), []byte("tx 5 does not decode"))
	})
	mustDamage(t, path, "a check on 2026-11-30T10:00:00Z found that tx 5 does not decode")
}

// TestUnreachableRecord: a record whose quads the subject index lost is missing from its
// transaction, which then does not decode.
func TestUnreachableRecord(t *testing.T) {
	path := copyFixture(t)
	editBolt(t, path, func(tx *bolt.Tx) error {
		id := valueID(t, tx, "urn:mql:claim:Brimsole.soc2@1")
		sp := tx.Bucket([]byte("sp"))
		prefix := binary.BigEndian.AppendUint64(nil, id)
		c := sp.Cursor()
		var keys [][]byte
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			keys = append(keys, bytes.Clone(k))
		}
		if len(keys) == 0 {
			t.Fatal("no sp entries for the claim")
		}
		for _, k := range keys {
			sp.Delete(k)
		}
		return nil
	})
	mustDamage(t, path, "tx 15 does not decode")
}
