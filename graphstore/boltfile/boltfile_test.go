package boltfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// sound returns the bytes of a bbolt file holding enough keys for branch pages, and its page size.
func sound(t *testing.T) ([]byte, int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			if err := b.Put(fmt.Appendf(nil, "key%06d", i), bytes.Repeat([]byte{'v'}, 40)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	ps := db.Info().PageSize
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data, ps
}

func TestInspectAndWalk(t *testing.T) {
	data, ps := sound(t)
	l, err := Inspect(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The leaf page holding the first key of the bucket, for the damage below.
	leaf := -1
	for p := 2; p*ps < len(data); p++ {
		pg := data[p*ps:]
		if Order.Uint16(pg[8:]) == leafPage && Order.Uint16(pg[10:]) > 2 && bytes.Contains(pg[:ps], []byte("key000000")) {
			leaf = p
		}
	}
	if leaf < 0 {
		t.Fatal("no leaf page holds key000000")
	}
	damage := func(f func(d []byte) []byte) []byte { return f(bytes.Clone(data)) }
	zeroMeta := func(page int) func(d []byte) []byte {
		return func(d []byte) []byte { clear(d[page*ps+HeaderSize : page*ps+HeaderSize+8]); return d }
	}
	tests := []struct {
		name      string
		file      []byte
		magic     bool
		refused   string // what Inspect's error says, or "" for none
		problem   string // what a problem of Inspect or Walk says, or "" for none
		unchanged bool   // the layout is the sound file's
	}{
		{name: "sound", file: data, magic: true, unchanged: true},
		{name: "not bbolt", file: bytes.Repeat([]byte("x"), 8*ps), refused: "neither meta page is valid"},
		{name: "meta page 0 damaged", file: damage(zeroMeta(0)), magic: true, problem: "meta page 0 is not valid"},
		{name: "both meta pages damaged", file: damage(func(d []byte) []byte { return zeroMeta(1)(zeroMeta(0)(d)) }), refused: "neither meta page is valid"},
		{name: "truncated", file: data[:3*ps], magic: true, refused: "it was truncated"},
		{name: "keys out of order", file: damage(func(d []byte) []byte {
			// The first leaf element's key swapped for one after every other key.
			p := d[leaf*ps:]
			pos := Order.Uint32(p[HeaderSize+4:])
			copy(p[HeaderSize+int(pos):], "key999999")
			return d
		}), magic: true, problem: "lies after the range its parent gives it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := bytes.NewReader(tt.file)
			if got := HasMagic(r, int64(len(tt.file))); got != tt.magic {
				t.Errorf("HasMagic = %v, want %v", got, tt.magic)
			}
			got, err := Inspect(r, int64(len(tt.file)))
			if tt.refused != "" {
				if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), tt.refused) {
					t.Fatalf("Inspect: %v, want ErrDamaged saying %q", err, tt.refused)
				}
				return
			}
			if err != nil {
				t.Fatalf("Inspect: %v", err)
			}
			problems := append(got.Problems, Walk(context.Background(), r, got)...)
			switch {
			case tt.problem == "" && len(problems) > 0:
				t.Errorf("problems %q in a sound file", problems)
			case tt.problem != "" && !strings.Contains(strings.Join(problems, "\n"), tt.problem):
				t.Errorf("problems %q, want one saying %q", problems, tt.problem)
			}
			if tt.unchanged && (got.PageSize != l.PageSize || got.Meta != l.Meta || len(got.Free) != len(l.Free)) {
				t.Errorf("layout %+v, want %+v", got, l)
			}
		})
	}
}

func TestWalkStopsWithItsContext(t *testing.T) {
	data, _ := sound(t)
	r := bytes.NewReader(data)
	l, err := Inspect(r, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if problems := Walk(ctx, r, l); len(problems) == 0 || !strings.Contains(problems[len(problems)-1], "interrupted") {
		t.Errorf("Walk with a cancelled context: %q, want it to say it was interrupted", problems)
	}
}
