package query_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// lenEmbedder embeds each text as its length, records the texts, and fails or gives no vector
// when told to.
type lenEmbedder struct {
	asked []string
	err   error
	none  bool
}

func (e *lenEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.asked = append(e.asked, texts...)
	if e.err != nil || e.none {
		return nil, e.err
	}
	var out [][]float32
	for _, t := range texts {
		out = append(out, []float32{float32(len(t)), 1})
	}
	return out, nil
}

// A claim without a vector is embedded as its key, value and excerpts, one a line; a search's
// text when it has text and no vector and may rank by vector. Without an embedder, or with
// what needs none, nothing is asked. The embedder's failure is said as the write's or the
// search's.
func TestEmbedClaimAndSearch(t *testing.T) {
	ctx := context.Background()
	claim := mql.AssertSpec{Subject: "K", Predicate: "note", Value: mql.String("EU pricing"), Sources: []mql.Source{{ID: "s", Excerpt: "billed yearly"}, {ID: "t"}}}
	for _, tc := range []struct {
		name  string
		spec  mql.AssertSpec
		e     *lenEmbedder
		asked []string
		vec   []float32
		err   string
	}{
		{"string value", claim, &lenEmbedder{}, []string{"K note\nEU pricing\nbilled yearly"}, []float32{31, 1}, ""},
		{"number value", mql.AssertSpec{Subject: "K", Predicate: "n", Value: mql.Number(4.5)}, &lenEmbedder{}, []string{"K n\n4.5"}, []float32{7, 1}, ""},
		{"own vector", mql.AssertSpec{Subject: "K", Predicate: "n", Value: mql.Number(4.5), Vector: []float32{0, 1}}, &lenEmbedder{}, nil, []float32{0, 1}, ""},
		{"no embedder", claim, nil, nil, nil, ""},
		{"failing", claim, &lenEmbedder{err: errors.New("down")}, []string{"K note\nEU pricing\nbilled yearly"}, nil, "embedding K.note: down; nothing was written"},
		{"no vector back", claim, &lenEmbedder{none: true}, []string{"K note\nEU pricing\nbilled yearly"}, nil, "embedding K.note: the embedder gave 0 vectors for one text; nothing was written"},
	} {
		var e query.Embedder
		if tc.e != nil {
			e = tc.e
		}
		got, err := query.EmbedClaim(ctx, e, tc.spec)
		if msg := errText(err); msg != tc.err || (err == nil && !slices.Equal(got.Vector, tc.vec)) {
			t.Errorf("claim, %s: vector %v, error %q; want %v, %q", tc.name, got.Vector, msg, tc.vec, tc.err)
		}
		if tc.e != nil && !slices.Equal(tc.e.asked, tc.asked) {
			t.Errorf("claim, %s: asked %q, want %q", tc.name, tc.e.asked, tc.asked)
		}
	}

	for _, tc := range []struct {
		name  string
		text  string
		opts  mql.SearchOptions
		e     *lenEmbedder
		asked bool
		vec   []float32
		err   string
	}{
		{"text", "EU", mql.SearchOptions{Limit: 3}, &lenEmbedder{}, true, []float32{2, 1}, ""},
		{"signals with vector", "EU", mql.SearchOptions{Signals: []string{"text", "vector"}}, &lenEmbedder{}, true, []float32{2, 1}, ""},
		{"signals text", "EU", mql.SearchOptions{Signals: []string{"text"}}, &lenEmbedder{}, false, nil, ""},
		{"no signals", "EU", mql.SearchOptions{Signals: []string{}}, &lenEmbedder{}, false, nil, ""},
		{"own vector", "EU", mql.SearchOptions{Vector: []float32{0, 1}}, &lenEmbedder{}, false, []float32{0, 1}, ""},
		{"blank text", "  ", mql.SearchOptions{}, &lenEmbedder{}, false, nil, ""},
		{"no embedder", "EU", mql.SearchOptions{}, nil, false, nil, ""},
		{"failing", "EU", mql.SearchOptions{}, &lenEmbedder{err: errors.New("down")}, true, nil, "embedding the search text: down; search with `signals text` to rank by text alone"},
	} {
		var e query.Embedder
		if tc.e != nil {
			e = tc.e
		}
		got, err := query.EmbedSearch(ctx, e, tc.text, tc.opts)
		if msg := errText(err); msg != tc.err || (err == nil && (!slices.Equal(got.Vector, tc.vec) || got.Limit != tc.opts.Limit)) {
			t.Errorf("search, %s: %+v, error %q; want vector %v, %q", tc.name, got, msg, tc.vec, tc.err)
		}
		var asked []string
		if tc.asked {
			asked = []string{tc.text}
		}
		if tc.e != nil && !slices.Equal(tc.e.asked, asked) {
			t.Errorf("search, %s: asked %q, want %q", tc.name, tc.e.asked, asked)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
