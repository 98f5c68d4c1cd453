package index

import (
	"slices"
	"testing"

	"github.com/mql-dev/mql/graphstore/encoding"

	"github.com/mql-dev/mql/analysis"
)

// The write handle's terms, with its names remembered, are the analyzer's: whatever it
// remembers, and however often it forgets.
func TestTextWriterTermsAreTheAnalyzers(t *testing.T) {
	tw := &textAnalyzer{an: analysis.New()}
	docs := []analysis.Document{
		{Subject: "Klarveld", Predicate: "price_per_seat", Value: "EU pricing", Excerpts: []string{"billed yearly"}},
		{Subject: "Klarveld", Predicate: "pricePerSeat"},
		{Subject: "Player7", Predicate: "price_per_seat", Value: "東京タワー"},
	}
	for round := range 2 * maxNames {
		d := docs[round%len(docs)]
		if round%7 == 0 {
			d.Subject = "S" + string(rune('a'+round%26)) + "_" + string(rune('A'+round%26))
		}
		if got, want := tw.terms(d), analysis.New().DocumentTerms(d); !slices.Equal(got, want) {
			t.Fatalf("round %d: %q, want %q", round, got, want)
		}
	}
	if len(tw.names) > maxNames {
		t.Errorf("the writer remembers %d names, more than %d", len(tw.names), maxNames)
	}
}

// A block of postings decodes to what was encoded, and a block that breaks its own rules
// (seqs out of order, an audience it does not list) is refused as corrupt.
func TestTextBlockRoundTrip(t *testing.T) {
	for _, b := range []*textBlock{
		{audiences: []string{"", "worker-3"}, posts: []textPost{
			{seq: 4, keySeq: 1, version: 2, tf: 1, length: 7},
			{seq: 9, keySeq: 0, version: 1, tf: 3, length: 12, audience: 1},
			{seq: 1 << 40, keySeq: 1 << 35, version: 1 << 20, tf: 1, length: 0},
		}},
		{audiences: []string{""}, posts: []textPost{{seq: 1, keySeq: 7, version: 1, tf: 1, length: 3}, {seq: 2, keySeq: 8, version: 1, tf: 1, length: 30}}},
	} {
		got, err := decodeTextBlock(b.appendTo(nil))
		if err != nil || !slices.Equal(got.audiences, b.audiences) || !slices.Equal(got.posts, b.posts) {
			t.Fatalf("decode = %+v, %v; want %+v", got, err, b)
		}
		// A block written before the compact form decodes to the same postings.
		if got, err := decodeTextBlock(firstForm(b)); err != nil || !slices.Equal(got.posts, b.posts) {
			t.Errorf("the first form of %+v decodes to %+v, %v", b, got, err)
		}
		if !SameEntry(bText, []byte("term\x00"), encoding.Seal(firstForm(b)), encoding.Seal(b.appendTo(nil))) {
			t.Errorf("the two forms of %+v are not the same entry", b)
		}
	}
	// A single-audience block of common postings (tf 1, version 1, keys in a row) spends three
	// bytes on each.
	b := &textBlock{audiences: []string{""}}
	for i := range 100 {
		b.posts = append(b.posts, textPost{seq: uint64(1000 + 3*i), keySeq: uint64(500 + i), version: 1, tf: 1, length: 20})
	}
	if n := len(b.appendTo(nil)); n > 3*100+10 {
		t.Errorf("100 common postings take %d bytes", n)
	}
	for _, bad := range []*textBlock{
		{audiences: []string{""}, posts: []textPost{{seq: 4, tf: 1, version: 1}, {seq: 4, tf: 1, version: 1}}},
		{audiences: []string{"", "a"}, posts: []textPost{{seq: 4, tf: 1, version: 1, audience: 2}}},
		{audiences: []string{""}, posts: []textPost{{seq: 4, tf: 0, version: 1}}},
		{posts: []textPost{{seq: 4, tf: 1, version: 1}}},
	} {
		if _, err := decodeTextBlock(bad.appendTo(nil)); err == nil {
			t.Errorf("decodeTextBlock(%+v) accepted it", bad)
		}
		if _, err := decodeTextBlock(firstForm(bad)); err == nil && len(bad.audiences) > 0 {
			t.Errorf("decodeTextBlock(first form of %+v) accepted it", bad)
		}
	}
	if SameEntry(bText, []byte("term\x00"), encoding.Seal(b.appendTo(nil)), encoding.Seal((&textBlock{audiences: []string{""}, posts: b.posts[1:]}).appendTo(nil))) {
		t.Error("blocks of different postings are the same entry")
	}
}

// firstForm is a block as mql wrote it before the compact form: every field of every posting.
func firstForm(b *textBlock) []byte {
	e := enc{}
	e.Strings(b.audiences)
	e.Uvarint(uint64(len(b.posts)))
	var last uint64
	for _, p := range b.posts {
		e.Uvarint(p.seq - last)
		last = p.seq
		e.Uvarint(p.keySeq)
		e.Uvarint(uint64(p.version))
		e.Uvarint(uint64(p.tf))
		e.Uvarint(uint64(p.length))
		e.Uvarint(uint64(p.audience))
	}
	return e.B
}

func TestMergePostings(t *testing.T) {
	p := func(seq uint64, tf uint32) textPost {
		return textPost{seq: seq, keySeq: seq * 10, version: 1, tf: tf, length: 7}
	}
	for _, c := range []struct {
		name       string
		a, b, want []textPost
	}{
		{"both empty", nil, nil, nil},
		{"one empty", []textPost{p(1, 1)}, nil, []textPost{p(1, 1)}},
		{"interleaved", []textPost{p(1, 1), p(4, 2)}, []textPost{p(2, 1), p(9, 1)}, []textPost{p(1, 1), p(2, 1), p(4, 2), p(9, 1)}},
		{"one claim in both: its counts add", []textPost{p(3, 1), p(5, 2)}, []textPost{p(5, 1)}, []textPost{p(3, 1), p(5, 3)}},
	} {
		if got := mergePostings(c.a, c.b); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
