package walkv

import (
	"bytes"

	"github.com/tidwall/btree"

	"github.com/mql-dev/mql/graphstore/kv"
)

// overlay walks the entries of several layers under one prefix in one direction, in key order,
// the newest layer's entry standing for a key that several hold. cur is the entry it stands
// on while ok.
type overlay struct {
	its     []btree.IterG[item] // newest first
	live    []bool
	prefix  []byte
	reverse bool
	cur     item
	ok      bool
}

// newOverlay starts at the first entry of layers (oldest first) with prefix, from from (nil:
// the prefix's first, or last when reverse; from includes the bucket's byte, as prefix does).
func newOverlay(layers []*tree, prefix, from []byte, reverse bool) *overlay {
	o := &overlay{prefix: prefix, reverse: reverse}
	for i := len(layers) - 1; i >= 0; i-- {
		it := layers[i].Iter()
		var ok bool
		if !reverse {
			start := from
			if start == nil || bytes.Compare(start, prefix) < 0 {
				start = prefix
			}
			ok = it.Seek(item{k: start})
		} else {
			end, inclusive := from, true
			if end == nil {
				end, inclusive = kv.PrefixEnd(prefix), false
			}
			switch {
			case end == nil:
				ok = it.Last()
			case !it.Seek(item{k: end}):
				ok = it.Last()
			case !inclusive || !bytes.Equal(it.Item().k, end):
				ok = it.Prev()
			default:
				ok = true
			}
		}
		ok = ok && bytes.HasPrefix(it.Item().k, prefix)
		o.its = append(o.its, it)
		o.live = append(o.live, ok)
	}
	o.pick()
	return o
}

// pick sets cur to the first of the iterators' entries in the walk's order.
func (o *overlay) pick() {
	o.ok = false
	for i := range o.its {
		if !o.live[i] {
			continue
		}
		k := o.its[i].Item()
		if !o.ok {
			o.cur, o.ok = k, true
			continue
		}
		c := bytes.Compare(k.k, o.cur.k)
		if o.reverse {
			c = -c
		}
		if c < 0 { // ties go to the newer layer, met first
			o.cur = k
		}
	}
}

// next moves past cur in every layer that holds its key.
func (o *overlay) next() {
	key := o.cur.k
	for i := range o.its {
		if !o.live[i] || !bytes.Equal(o.its[i].Item().k, key) {
			continue
		}
		var ok bool
		if o.reverse {
			ok = o.its[i].Prev()
		} else {
			ok = o.its[i].Next()
		}
		o.live[i] = ok && bytes.HasPrefix(o.its[i].Item().k, o.prefix)
	}
	o.pick()
}

func (o *overlay) release() {
	for i := range o.its {
		o.its[i].Release()
	}
}
