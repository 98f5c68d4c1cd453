package graphstore

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/cayleygraph/quad"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// What the tests read exports and check quads with: a user imports a file (ImportStore, which
// streams and checks it) or checks a store (mql check); these hold a whole file or a store's
// quads in memory, which only a test can afford.

// ReadNQuads reads an export written by WriteNQuads into memory (an import streams instead:
// see ImportStore). The quads of each transaction must be one contiguous run in its graph
// <urn:mql:tx:N>, transactions in id order without gaps; a line that breaks this, or is not an
// N-Quad in a transaction graph, is reported by number ("line 17: …"). Each transaction must
// decode, and when the file starts at the genesis every reference must resolve to something
// recorded earlier in the file. Every error wraps ErrBadImport.
func ReadNQuads(r io.Reader) ([]*record.Tx, error) {
	tr := newTxReader(newQuadReader(r), 0)
	var txs []*record.Tx
	for {
		g, err := tr.read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		tx, err := codec.DecodeTx(g.id, canonQuads(g.quads))
		if err != nil {
			line := g.lines[0]
			if de, ok := err.(*codec.DecodeError); ok && de.Quad != nil {
				line = g.lineOf(*de.Quad)
			}
			return nil, &ImportError{Line: line, Tx: g.id, Msg: err.Error()}
		}
		txs = append(txs, tx)
	}
	if err := checkSequence(txs); err != nil {
		return nil, err
	}
	return txs, nil
}

// checkSequence checks that txs, when they start at the genesis, each only refer to what came
// before them (the reader checked that their ids follow on).
func checkSequence(txs []*record.Tx) error {
	if len(txs) == 0 || txs[0].ID != 1 {
		return nil
	}
	c := codec.NewChain()
	for _, tx := range txs {
		if err := c.Check(tx); err != nil {
			return fmt.Errorf("%w: %v", ErrBadImport, err)
		}
		c.Add(tx)
	}
	return nil
}

func canonQuads(qs []quad.Quad) []quad.Quad {
	out := make([]quad.Quad, len(qs))
	for i, q := range qs {
		out[i] = codec.CanonQuad(q)
	}
	return out
}

// CheckQuads checks a store's quads (see the file comment) and returns what it found: the
// same checks as Check, for quads held in memory. now is the time at which liveness is judged.
func CheckQuads(quads []quad.Quad, opts CheckOptions) *Report {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	// The checker's state is an index in memory, as a check's is in a scratch file.
	sink := &kvImporter{kv: memkv.New(index.Schema)}
	defer sink.abort()
	c := newChecker(opts, sink)
	c.deferDangling = true
	groups := map[record.TxID][]quad.Quad{}
	var other []quad.Quad
	for _, q := range quads {
		if id, ok := codec.ParseTxIRI(q.Label); ok {
			groups[id] = append(groups[id], q)
		} else {
			other = append(other, q)
		}
	}
	ids := make([]record.TxID, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, q := range other {
		c.add(ProblemLabel, 0, "", "quad %s is not in a transaction graph <%sN>", formatQuadShort(codec.CanonQuad(q)), codec.PrefTx)
	}
	next := record.TxID(1)
	for _, id := range ids {
		if id > next {
			c.missing(next, id-1, ids[len(ids)-1])
		}
		next = id + 1
		c.addTx(id, groups[id])
	}
	c.r.Quads += len(other)
	r := c.finish()
	if c.err != nil {
		panic(c.err) // the index in memory cannot fail
	}
	return r
}
