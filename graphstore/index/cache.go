package index

import (
	"sync"
	"sync/atomic"

	"github.com/mql-dev/mql/graphstore/record"
)

// Cache keeps decoded entries for the snapshots of one process, so that hot entries are not
// read and decoded again by every read. It is bounded (Options.CacheBytes, roughly: what the
// entries took stored), and safe for concurrent use.
//
// It holds, for its head transaction, entries exactly as a snapshot at that head reads them.
// A commit, or a transaction another process committed, moves the head forward (Advance) and
// drops every entry that transaction changed (Touched), so an entry in the cache is never older
// than the cache's head. A snapshot whose head is the cache's may read and add entries; an
// older snapshot (one that began before the last commit) may read entries that are newer than
// it, which a View reads as of its own transaction like any other, but adds none; a newer one
// (begun between a commit and its Advance) does not use the cache.
type Cache struct {
	mu    sync.RWMutex
	head  record.TxID
	m     map[string]cacheEntry
	bytes int
	max   int
	// last is what Open read from the newest snapshot whose kv said its version (kv.Versioned):
	// a snapshot of the same version reads nothing to open.
	last struct {
		ok      bool
		version uint64
		st      storeState
	}
}

// opened returns the state Open read from a snapshot of the given version, if it was the last.
func (c *Cache) opened(version uint64) (storeState, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.last.ok || c.last.version != version {
		return storeState{}, false
	}
	return c.last.st, true
}

// open keeps st as what a snapshot of the given version opens to, unless a newer one is kept.
func (c *Cache) open(version uint64, st storeState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last.ok && c.last.version > version {
		return
	}
	c.last.ok, c.last.version, c.last.st = true, version, st
}

type cacheEntry struct {
	x    any
	size int
}

// Links. An entry the cache holds may point straight at other entries the cache holds (an
// artifact version at its inputs and its dependents), so that a read following them — an
// impact over ten thousand artifacts — does not look each one up again. Such a pointer is good
// while its target is in the cache: the cache marks every entry it drops (a write changed it,
// or room was needed) as gone, before it moves its head, and whoever follows a link checks the
// mark and looks the target up again if it is set. Only entries the cache holds are linked,
// and only to entries it holds, so a link never leads to an entry older than the cache's head.

// shared is the bookkeeping an entry that can be linked carries.
type shared struct {
	inCache atomic.Bool // the cache holds it (or held it: see gone)
	gone    atomic.Bool // the cache dropped it: links to it are stale
}

func (s *shared) share() *shared { return s }

type linkable interface{ share() *shared }

// linkable reports whether x may be linked to, or hold links: the cache holds it, still.
func isShared(x linkable) bool {
	sh := x.share()
	return sh.inCache.Load() && !sh.gone.Load()
}

func drop(x any) {
	if l, ok := x.(linkable); ok {
		l.share().gone.Store(true)
	}
}

// NewCache returns a cache of about maxBytes (0: a default of 128 MiB) whose head is head.
// The default holds an impact of 10,000 dependents (40,000 entries) beside what the other
// reads of a working set keep: at 32 and 64 MiB the reads between two such impacts pushed the
// walk out, and each was read again from pages (docs/BENCHMARKS.md, at 10M claims).
func NewCache(head record.TxID, maxBytes int) *Cache {
	if maxBytes <= 0 {
		maxBytes = 128 << 20
	}
	return &Cache{head: head, m: map[string]cacheEntry{}, max: maxBytes}
}

// Head is the transaction the cache's entries are valid for.
func (c *Cache) Head() record.TxID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.head
}

func (c *Cache) get(k string) (any, bool) {
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	return e.x, ok
}

// entryOverhead approximates what a decoded entry takes beyond twice its stored bytes (its
// strings and slices decoded, its struct, the map's slot): measured heaps were about twice
// what counting the stored bytes alone said.
const entryOverhead = 256

// put keeps x under k if the cache is at head, and reports whether it did.
func (c *Cache) put(head record.TxID, k string, x any, size int) bool {
	size = 2*size + entryOverhead + len(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if head != c.head || size > c.max/16 {
		return false
	}
	if _, ok := c.m[k]; ok {
		return false
	}
	for c.bytes+size > c.max && len(c.m) > 0 {
		// Drop about a quarter, in the map's own random order: cheaper than keeping an order,
		// and good enough for a cache whose misses cost a page read.
		goal := c.max * 3 / 4
		for key, e := range c.m {
			delete(c.m, key)
			drop(e.x)
			c.bytes -= e.size
			if c.bytes <= goal {
				break
			}
		}
	}
	c.m[k] = cacheEntry{x, size}
	c.bytes += size
	if l, ok := x.(linkable); ok {
		l.share().inCache.Store(true)
	}
	return true
}

// Advance moves the cache to head, dropping the entries named by touched (see Touched), which
// the transactions after the old head changed.
func (c *Cache) Advance(head record.TxID, touched []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range touched {
		if e, ok := c.m[k]; ok {
			delete(c.m, k)
			drop(e.x)
			c.bytes -= e.size
		}
	}
	c.head = head
}

// Reset drops everything and moves the cache to head: for a process that cannot tell what
// changed (it fell too far behind, or a write failed half-way).
func (c *Cache) Reset(head record.TxID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.m {
		drop(e.x)
	}
	clear(c.m)
	c.bytes = 0
	c.head = head
	c.last.ok = false
}
