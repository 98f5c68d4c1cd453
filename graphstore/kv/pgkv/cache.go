package pgkv

import "sync"

// Cache keeps, across write transactions, the entries they read from the tables and the ones
// they committed, so that a write reads again only what another process changed. It is for a
// caller that knows every entry other processes write: at the start of each write transaction
// (Options.Begin) it drops the entries written since the cache was last right (Drop), or
// empties it (Reset). Write transactions that commit put what they wrote; one whose commit
// fails empties it. Snapshots do not use it.
type Cache struct {
	mu    sync.Mutex
	m     map[string][]byte // entryKey → value; nil: no entry
	bytes int
	max   int
}

// NewCache returns a cache of about maxBytes.
func NewCache(maxBytes int) *Cache { return &Cache{m: map[string][]byte{}, max: maxBytes} }

// Write is one entry a write transaction wrote (WriteTx.Written): its value (nil, with Del,
// when it deleted the entry), or, when Known is false, only its key.
type Write struct {
	Key   string // as Drop takes it
	Value []byte
	Del   bool
	Known bool
}

// Apply brings the cache up to date with another process's writes, in order: an entry whose
// value is known is kept as written, one whose value is not is dropped.
func (c *Cache) Apply(ws []Write) {
	for _, w := range ws {
		switch {
		case !w.Known:
			c.Drop([]string{w.Key})
		case w.Del:
			c.put(w.Key, nil)
		default:
			c.put(w.Key, w.Value)
		}
	}
}

// Drop removes the entries named by keys (as Written names them).
func (c *Cache) Drop(keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if v, ok := c.m[k]; ok {
			c.bytes -= len(k) + len(v) + 64
			delete(c.m, k)
		}
	}
}

// Reset empties the cache.
func (c *Cache) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.m)
	c.bytes = 0
}

func (c *Cache) get(k string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[k]
	return v, ok
}

func (c *Cache) put(k string, v []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		c.bytes -= len(k) + len(old) + 64
	}
	size := len(k) + len(v) + 64
	for c.bytes+size > c.max && len(c.m) > 0 {
		for key, old := range c.m { // about a quarter, in the map's own order
			delete(c.m, key)
			c.bytes -= len(key) + len(old) + 64
			if c.bytes <= c.max*3/4 {
				break
			}
		}
	}
	c.m[k] = v
	c.bytes += size
}
