package index

import (
	"slices"
	"testing"

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
	b := &textBlock{audiences: []string{"", "worker-3"}, posts: []textPost{
		{seq: 4, keySeq: 1, version: 2, tf: 1, length: 7},
		{seq: 9, keySeq: 0, version: 1, tf: 3, length: 12, audience: 1},
	}}
	got, err := decodeTextBlock(b.encode())
	if err != nil || !slices.Equal(got.audiences, b.audiences) || !slices.Equal(got.posts, b.posts) {
		t.Fatalf("decode = %+v, %v; want %+v", got, err, b)
	}
	for _, bad := range []*textBlock{
		{audiences: []string{""}, posts: []textPost{{seq: 4, tf: 1, version: 1}, {seq: 4, tf: 1, version: 1}}},
		{audiences: []string{""}, posts: []textPost{{seq: 4, tf: 1, version: 1, audience: 1}}},
		{audiences: []string{""}, posts: []textPost{{seq: 4, tf: 0, version: 1}}},
	} {
		if _, err := decodeTextBlock(bad.encode()); err == nil {
			t.Errorf("decodeTextBlock(%+v) accepted it", bad)
		}
	}
}
