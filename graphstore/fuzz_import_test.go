package graphstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// ckExport is the N-Quads export of a store holding ckSample.
func ckExport(t testing.TB) string {
	t.Helper()
	s := mustOpen(t, "memory:", Options{})
	defer s.Close()
	ckSample(t, s)
	var b bytes.Buffer
	if err := WriteNQuads(&b, txsOf(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// FuzzImport reads N-Quads and imports them into a new store. It must never panic; an import
// is all or nothing (a refused one leaves the store with its genesis and nothing else); and
// what is imported is structurally sound (every reference resolves, versions are gapless,
// every transaction is canonical) and exports back to the same transactions.
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
		txs, err := ReadNQuads(strings.NewReader(in))
		if err == nil {
			err = s.Import(ctx, txs)
		}
		if err != nil {
			if !errors.Is(err, ErrBadImport) && !errors.Is(err, ErrNotEmpty) {
				t.Fatalf("import error wraps neither ErrBadImport nor ErrNotEmpty: %v", err)
			}
			if q := quadCount(t, s); q != q0 || head(s) != 1 {
				t.Fatalf("a refused import changed the store: %d quads → %d, head %d", q0, q, head(s))
			}
			return
		}
		r, err := s.Check(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Problems {
			// Liveness is a rule of the writers, which an import does not replay; package
			// mql's Import checks it (and standings) before importing.
			if p.Kind != ProblemLive {
				t.Fatalf("an accepted import is not sound: %s: %s", p.Kind, p)
			}
		}
		var out bytes.Buffer
		if err := WriteNQuads(&out, txsOf(s)[1:]); err != nil {
			t.Fatal(err)
		}
		again, err := ReadNQuads(&out)
		if err != nil || len(again) != len(txs)-1 {
			t.Fatalf("an accepted import does not export: %v", err)
		}
	})
}
