package query

import (
	"context"
	"fmt"

	"github.com/mql-dev/mql"
)

// EmbedClaim is spec with the vector e gives its text (its key, value and excerpts), if it has
// no vector and e is not nil: what a Session with an embedder (EmbedWith) writes for an assert,
// and what a surface that calls the library itself writes the same way. Embed before the write,
// so that the claim and its vector are committed together; an error of e is the write's, and
// says that nothing was written.
func EmbedClaim(ctx context.Context, e Embedder, spec mql.AssertSpec) (mql.AssertSpec, error) {
	if spec.Vector != nil || e == nil {
		return spec, nil
	}
	v, err := embedOne(ctx, e, claimText(spec))
	if err != nil {
		return spec, fmt.Errorf("embedding %s.%s: %w; nothing was written", spec.Subject, spec.Predicate, err)
	}
	spec.Vector = v
	return spec, nil
}

// EmbedSearch is opts with the vector e gives text, if e is not nil and the search embeds its
// text: it has text, no vector, and may rank by vector (opts.Signals). It is what a Session with
// an embedder searches with, and what a surface that calls the library itself searches with.
func EmbedSearch(ctx context.Context, e Embedder, text string, opts mql.SearchOptions) (mql.SearchOptions, error) {
	if e == nil || !embedsSearch(&Search{Text: text, Vector: opts.Vector, Signals: opts.Signals}) {
		return opts, nil
	}
	v, err := embedOne(ctx, e, text)
	if err != nil {
		return opts, fmt.Errorf("embedding the search text: %w; search with `signals text` to rank by text alone", err)
	}
	opts.Vector = v
	return opts, nil
}

// embedOne is e's vector of text.
func embedOne(ctx context.Context, e Embedder, text string) ([]float32, error) {
	vs, err := e.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		return nil, fmt.Errorf("the embedder gave %d vectors for one text", len(vs))
	}
	return vs[0], nil
}
