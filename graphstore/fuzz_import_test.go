package graphstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore/codec"
)

// ckExport is the N-Quads export of a store holding ckSample.
func ckExport(t testing.TB) string {
	t.Helper()
	s := mustOpen(t, "memory:", Options{})
	defer s.Close()
	ckSample(t, s)
	var b bytes.Buffer
	if err := codec.WriteNQuads(&b, txsOf(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// FuzzImport imports N-Quads into a new store. It must never panic or hang; an import is all
// or nothing (a refused one leaves the store with its genesis and nothing else); what is
// imported passes the check; and its export imports again to the same bytes.
//
// The committed corpus is testdata/fuzz/FuzzImport; the seeds below are a whole export and
// variants of it (lines dropped, repeated or swapped).
func FuzzImport(f *testing.F) {
	exp := ckExport(f)
	f.Add(exp)
	lines := strings.SplitAfter(exp, "\n")
	for i := 0; i < len(lines); i += 7 {
		f.Add(strings.Join(append(append([]string(nil), lines[:i]...), lines[i+1:]...), ""))
		f.Add(strings.Join(append(append([]string(nil), lines[:i+1]...), lines[i:]...), ""))
	}
	f.Add(strings.Join(lines[:len(lines)/2], ""))
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 1<<16 {
			return // the import's own limits are not what this target explores
		}
		// No input may hang the import: a stuck one crashes the worker, which reports it.
		wd := time.AfterFunc(time.Minute, func() { panic("FuzzImport: one input ran for a minute") })
		defer wd.Stop()
		ctx := context.Background()
		s, err := Open(ctx, "memory:", Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		q0 := quadCount(t, s)
		if _, err := s.Import(ctx, strings.NewReader(in), CheckOptions{}); err != nil {
			if !errors.Is(err, ErrBadImport) {
				t.Fatalf("import error does not wrap ErrBadImport: %v", err)
			}
			if q := quadCount(t, s); q != q0 || head(s) != 1 {
				t.Fatalf("a refused import changed the store: %d quads → %d, head %d", q0, q, head(s))
			}
			return
		}
		r, err := s.Check(ctx, CheckOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Problems {
			t.Fatalf("an accepted import is not sound: %s: %s", p.Kind, p)
		}
		var out bytes.Buffer
		if err := codec.WriteNQuads(&out, txsOf(s)); err != nil {
			t.Fatal(err)
		}
		again, err := Open(ctx, "memory:", Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer again.Close()
		if _, err := again.Import(ctx, bytes.NewReader(out.Bytes()), CheckOptions{}); err != nil {
			t.Fatalf("the export of an accepted import does not import: %v", err)
		}
		var out2 bytes.Buffer
		if err := codec.WriteNQuads(&out2, txsOf(again)); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatal("export → import → export changed the file")
		}
	})
}
