package index

// Reading many entries at once. A walk that reaches thousands of artifact versions in one step
// (the impact of a claim that thousands of artifacts were derived from) would look up each one
// on its own, four entries a version (its name, its record, its transaction's time, what was
// derived from it): a seek from the root of the tree for each, and on PostgreSQL a round trip
// each. Their keys mostly sit side by side (versions recorded together got neighbouring
// numbers), so prefetchArtifacts reads them in key order, in as few scans as the gaps between
// them allow, and hands each to the memo or the cache through the loader that would have read
// it (loadRaw, cached), where the lookups that follow find it. Nothing is decoded differently:
// a prefetched entry is the entry a lookup reads.

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// prefetchMin is the fewest versions worth a prefetch: below it the lookups are as cheap.
const prefetchMin = 16

// maxSkip is how many entries a scan passes without meeting a wanted key before it seeks to
// the next wanted key instead.
const maxSkip = 16

// prefetchChunk bounds the versions prefetched at once, so that what one prefetch reads stays
// within the memo (memoMax) until the lookups after it found it.
const prefetchChunk = 4096

// prefetchArtifacts reads what a read snapshot will look up next for the artifact versions
// refs, where it holds none of it yet. A write handle reads its own writes one at a time.
func (ix *Index) prefetchArtifacts(refs []ref) {
	if ix.w != nil || len(refs) < prefetchMin {
		return
	}
	if !ix.walking {
		ix.walking = true
		defer func() { ix.walking = false }()
	}
	for len(refs) > prefetchChunk {
		ix.prefetchArtifacts(refs[:prefetchChunk])
		refs = refs[prefetchChunk:]
	}
	// Names first: decoding a version's record takes its name.
	var names [][]byte
	for _, r := range refs {
		if k := u(nil, r.seq); !ix.holds(bArtName, k) {
			names = append(names, k)
		}
	}
	names = sortedKeys(names)
	ix.eachSorted(bArtName, names, false, func(_ int, k, v []byte) {
		seq := keyUint(k)
		loadRaw(ix, bArtName, k, v, func() string { return artNumber(seq) }, decodeArtName)
	})

	var versions [][]byte
	for _, r := range refs {
		if k := artVersionKey(r.seq, r.version); !ix.holds(bArtVersion, k) {
			versions = append(versions, k)
		}
	}
	versions = sortedKeys(versions)
	var nodes []*ArtifactNode
	ix.eachSorted(bArtVersion, versions, false, func(_ int, k, v []byte) {
		seq, version := artVersionOf(k)
		name := func() string { return ix.nameOf(seq) }
		what := func() string { return fmt.Sprintf("artifact %s@%d", name(), version) }
		n := loadRaw(ix, bArtVersion, k, v, what, ix.artifactDecoder(name, seq, version))
		nodes = append(nodes, n)
	})

	var txs, deps [][]byte
	for _, n := range nodes {
		if k := txTimeKey(n.Tx); !ix.holds(bTx, k) {
			txs = append(txs, txKey(n.Tx))
		}
		if k := nodeKey(true, n.nameSeq, n.ID.Version); !ix.holds(bDep, k) {
			deps = append(deps, k)
		}
	}
	txs = sortedKeys(txs)
	ix.eachSorted(bTx, txs, false, func(_ int, k, v []byte) {
		id := record.TxID(keyUint(k))
		cached(ix, bTx, txTimeKey(id), func() (*time.Time, int, bool) { return decodeTxTime(id, v), 16, true })
	})

	// What was derived from each: a list per node, empty for most (the walk's leaves), so every
	// node gets one, found entries or not.
	deps = sortedKeys(deps)
	lists := make([]*depList, len(deps))
	sizes := make([]int, len(deps))
	for i := range lists {
		lists[i] = &depList{}
	}
	ix.eachSorted(bDep, deps, true, func(i int, k, v []byte) { sizes[i] += lists[i].add(k, v) })
	for i, k := range deps {
		cached(ix, bDep, k, func() (*depList, int, bool) { return lists[i], sizes[i], true })
	}
}

// holds says whether the snapshot's memo or the cache it reads holds the entry of b under key.
func (ix *Index) holds(b kv.Bucket, key []byte) bool {
	_, ok, _ := ix.held(b, key)
	return ok
}

// sortedKeys sorts keys and drops repeats.
func sortedKeys(keys [][]byte) [][]byte {
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal)
}

// eachSorted calls fn(i, k, v) for every entry k → v of b whose key is keys[i] (with prefix:
// that starts with keys[i]), keys in ascending order and distinct (with prefix, none a prefix
// of another). It scans from the first key, seeking anew past a gap of more than maxSkip
// entries.
func (ix *Index) eachSorted(b kv.Bucket, keys [][]byte, prefix bool, fn func(i int, k, v []byte)) {
	i := 0
	for i < len(keys) {
		skipped, stopped := 0, false
		ix.scan(b, nil, kv.ScanOptions{From: keys[i]}, func(k, v []byte) bool {
			for i < len(keys) {
				want := keys[i]
				if bytes.HasPrefix(k, want) && (prefix || len(k) == len(want)) {
					fn(i, k, v)
					skipped = 0
					if !prefix {
						i++
					}
					break
				}
				if bytes.Compare(k, want) < 0 {
					// An entry between two wanted keys.
					if skipped++; skipped > maxSkip {
						stopped = true
						return false
					}
					return true
				}
				i++ // past keys[i]: it has no (more) entries
			}
			if i == len(keys) {
				stopped = true
				return false
			}
			return true
		})
		if !stopped {
			return // the bucket ended: no entry is left for the keys after i
		}
	}
}

// keyUint is the number a key made by u(nil, x) holds.
func keyUint(k []byte) uint64 {
	x, rest, ok := encoding.Uint(k)
	if !ok || len(rest) > 0 {
		corrupt("a numbered key", encoding.ErrCorrupt)
	}
	return x
}

// artVersionOf is what artVersionKey made k of.
func artVersionOf(k []byte) (nameSeq uint64, version int) {
	seq, rest, ok1 := encoding.Uint(k)
	v, rest, ok2 := encoding.Uint(rest)
	if !ok1 || !ok2 || len(rest) > 0 || v < 1 || v > 1<<31 {
		corrupt("an artifact version's key", encoding.ErrCorrupt)
	}
	return seq, int(v)
}

// PrefetchDependents reads ahead, in key order, what a walk will look up next for the versions
// derived directly from the artifact versions ns (a breadth-first walk's frontier): their
// names, records and times, and what was derived from each of them in turn.
func (v *View) PrefetchDependents(ns []*ArtifactNode) {
	ix := v.ix
	if ix.w != nil || len(ns) < prefetchMin {
		return
	}
	var refs []ref
	for _, n := range ns {
		l := follow(ix, n.deps.Load())
		if l == nil {
			l = ix.depsOf(nodeKey(true, n.nameSeq, n.ID.Version))
		}
		if l.nodes.Load() == nil {
			refs = append(refs, l.refs...)
		}
	}
	ix.prefetchArtifacts(refs)
}
