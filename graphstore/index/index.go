// Package index is mql's persisted index and the place where what a reader sees is decided.
// The records of every transaction and the index entries the reads need (a key's versions and
// its live claim per audience, live claims by predicate and value, a node's dependents, the
// catalog lists, the runs) are stored side by side in one kv store (layout.go), written by
// Apply in the same transaction as the records (apply.go), and read on demand: an Index is one
// consistent snapshot of them, and a View (view.go) reads it as of one transaction, for one
// viewer. Opening a store reads nothing but its state; a read touches the entries it needs.
//
// A View sees only what its viewer may see, folds the events recorded about a claim into its
// State with package lifecycle's rule, and gives its kind after confirmations and its
// confidence after decay. Entries decoded by one snapshot are kept in it, so that one read
// sees one object per record; a Cache shared by the snapshots of a process keeps the hot ones
// across reads.
//
// Index methods never return storage errors: a read that fails (a damaged page, a record that
// does not decode, a lost connection) panics with a *Fault, which Guard turns back into an
// error at the boundary of the read.
package index

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/lifecycle"
	"github.com/mql-dev/mql/graphstore/record"
)

// State is the state of a claim at one point in time (package lifecycle's).
type State = lifecycle.State

const (
	Live       = lifecycle.Live
	Superseded = lifecycle.Superseded
	Revoked    = lifecycle.Revoked
	Expired    = lifecycle.Expired
	Contested  = lifecycle.Contested
)

// Fault is a storage failure met in the middle of a read: the kv store failed, or a stored
// record did not decode (Err wraps encoding.ErrCorrupt).
type Fault struct{ Err error }

func (f *Fault) Error() string { return f.Err.Error() }
func (f *Fault) Unwrap() error { return f.Err }

func fault(err error) { panic(&Fault{err}) }

// Guard runs fn and returns a *Fault it panicked with as an error; other panics go on.
func Guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*Fault)
			if !ok {
				panic(r)
			}
			err = f
		}
	}()
	return fn()
}

// ErrNotStore is returned by Open for a kv store that holds no mql index.
var ErrNotStore = errors.New("not an mql store")

// ErrEarlierFormat is returned by Open for a store of an earlier key-value format
// (encoding.Earlier), which lacks the text index: OpenEarlier reads one, to migrate it.
var ErrEarlierFormat = errors.New("the store is in an earlier format")

// EarlierFormatError is Open's error for a store of the earlier format f: it wraps
// ErrEarlierFormat and names f.
func EarlierFormatError(f string) error {
	return fmt.Errorf("%w, %q, written by an mql before the text index (this mql reads %q)", ErrEarlierFormat, f, encoding.Format)
}

// Index is one consistent snapshot of a store: every transaction up to its head (for a write
// handle, also the ones being written). It is used by one goroutine at a time, and only while
// the kv transaction it reads is open.
type Index struct {
	r     kv.Reader
	w     kv.Writer // set on a write handle
	st    storeState
	head  record.TxID // what a View shows at most
	cache *Cache
	// cached: the shared cache holds entries valid for this snapshot (its head is the cache's
	// head); insert: this snapshot may add to it.
	useCache, insert bool
	dirty            map[string]bool // a write handle's changed entries: read from r, never from the cache
	memo             map[string]any
	few              [memoFew]memoEntry // the first entries a snapshot decodes, before memo
	nfew             int
	kbuf             []byte
	fbuf             []byte // forget's
	keyBufs
	admitted int             // entries this snapshot added to the cache, but for a walk's
	walked   int             // entries a walk read ahead (prefetchArtifacts) and added to it
	walking  bool            // a walk is reading ahead: admitPerWalk bounds what it adds
	cur      *applying       // a write handle's transaction being applied
	judge    bool            // Apply judges claims' relations (JudgeRelations)
	puts     int             // entries a write handle wrote
	every    func()          // called every entriesPerCall entries read or written (Every)
	entries  int             // entries read or written, while every is set
	touched  map[string]bool // cache keys of the entries a write handle overwrote
	earlier  bool            // a write handle on a store of an earlier format (WriterEarlier): no text index
	text     *textWriter     // a write handle's text indexing (text.go)
	// The vector index's (ivf.go): the store's parameters (nil: exact search), whether they were
	// read, whether a replay keeps to exact search as the store it copies does, the centroids
	// decoded, by audience, and the parameters a write handle gives a store's first vector.
	ivf       *ivfParams
	ivfLoaded bool
	ivfExact  bool
	ivfCents  map[string][][]float32
	ivfWant   VectorIndex // a write handle's parameters for a store's first vector
	toFile    []toFile    // the vectors an Apply files when it ends
}

// keyBufs is room for the keys of the entries a read looks up, inside the Index (allocated
// once a read): kbuf's, and a key built to look one up (a key's, a source's, a predicate's, a
// claim's), which no decoder of that kind of entry reuses while the lookup is in progress.
type keyBufs struct {
	kbufs, kkey, skey, pkey, ckey [64]byte
}

// Open returns the snapshot read by r, or ErrNotStore if r holds no mql index; cache may be
// nil. A store that holds no transaction yet has head 0.
func Open(r kv.Reader, cache *Cache) (*Index, error) {
	v, versioned := r.(kv.Versioned)
	if versioned && cache != nil {
		if st, ok := cache.opened(v.Version()); ok {
			return open(r, cache, st), nil
		}
	}
	st, err := readState(r, cache == nil, false)
	if err != nil {
		return nil, err
	}
	if versioned && cache != nil {
		cache.open(v.Version(), st)
	}
	return open(r, cache, st), nil
}

// OpenEarlier is Open, without a cache, that also opens a store of an earlier format
// (encoding.Earlier), for the check and the migration of one. Such a store has no text index:
// a search of it finds nothing.
func OpenEarlier(r kv.Reader) (*Index, error) {
	st, err := readState(r, true, true)
	if err != nil {
		return nil, err
	}
	return open(r, nil, st), nil
}

func open(r kv.Reader, cache *Cache, st storeState) *Index {
	ix := &Index{r: r, st: st, head: st.head, cache: cache}
	ix.kbuf = ix.kbufs[:0]
	if cache != nil {
		h := cache.Head()
		ix.useCache = h >= st.head
		ix.insert = h == st.head
	}
	return ix
}

// readState reads the store's owner and its last transaction's counts; checkFormat also
// checks its format, which may be an earlier one (encoding.Earlier) only if earlier is set.
func readState(r kv.Reader, checkFormat, earlier bool) (storeState, error) {
	var st storeState
	m, err := r.Get(bMeta, metaStore)
	if err != nil {
		return st, err
	}
	if m == nil || checkFormat {
		// A store's format is checked when it is opened (without a cache), not at every read.
		f, err := r.Get(bMeta, metaFormat)
		if err != nil {
			return st, err
		}
		if f == nil {
			// No format and no transaction is a store whose creation stopped before Init, or no
			// store; no format beside transactions is damage (a bucket's name or the entry
			// lost), and writing a genesis over it would hide the history it holds.
			some := false
			if err := r.Scan(bTx, nil, kv.ScanOptions{}, func(k, v []byte) (bool, error) { some = true; return false, nil }); err != nil {
				return st, err
			}
			if some {
				return st, fmt.Errorf("the store holds transactions but no format entry: %w", encoding.ErrCorrupt)
			}
			return st, ErrNotStore
		}
		switch {
		case encoding.Earlier(string(f)):
			if !earlier {
				return st, EarlierFormatError(string(f))
			}
		case string(f) != encoding.Format:
			return st, fmt.Errorf("%w: the store is in format %q, and this mql reads %q (and migrates %q and %q)", ErrNotStore, f, encoding.Format, encoding.FormatKV1, encoding.FormatKV2)
		}
	}
	if m != nil {
		if m, err = encoding.Unseal(m); err == nil {
			err = decodeStoreMeta(m, &st)
		}
		if err != nil {
			return st, fmt.Errorf("the store's owner: %w", err)
		}
	}
	err = r.Scan(bTx, nil, kv.ScanOptions{Reverse: true}, func(k, v []byte) (bool, error) {
		id, rest, ok := encoding.Uint(k)
		if !ok || len(rest) > 0 || id == 0 {
			return false, fmt.Errorf("the last transaction's key: %w", encoding.ErrCorrupt)
		}
		st.head = record.TxID(id)
		v, err := encoding.Unseal(v)
		if err == nil {
			err = decodeCounts(v, &st)
		}
		if err != nil {
			return false, fmt.Errorf("tx %d: %w", id, err)
		}
		return false, nil
	})
	return st, err
}

// Init writes the format of an empty store into w.
func Init(w kv.Writer) error { return InitAs(w, encoding.Format) }

// InitAs is Init labelling the store format f: an earlier one (encoding.Earlier) for the
// replay a check of a store of that format compares it with (WriterEarlier); any other f is
// encoding.Format.
func InitAs(w kv.Writer, f string) error {
	if !encoding.Earlier(f) {
		f = encoding.Format
	}
	return w.Put(bMeta, slices.Clone(metaFormat), []byte(f))
}

// Format returns the format a kv store says it holds ("" for none).
func Format(r kv.Reader) (string, error) {
	f, err := r.Get(bMeta, metaFormat)
	return string(f), err
}

// Head is the last transaction the snapshot shows.
func (ix *Index) Head() record.TxID { return ix.head }

// Top is the last transaction indexed: the head, or for a write handle the transaction being
// written.
func (ix *Index) Top() record.TxID { return ix.st.head }

// Meta is what the genesis recorded.
func (ix *Index) Meta() record.StoreMeta {
	return record.StoreMeta{Owner: ix.st.owner, Strict: ix.st.strict}
}

// ArtifactCount is the number of artifact versions the index holds: every artifact's Seq is
// below it.
func (ix *Index) ArtifactCount() int { return int(ix.st.artifacts) }

// ClaimCount is the number of claims the index holds.
func (ix *Index) ClaimCount() int { return int(ix.st.claims) }

func (ix *Index) get(b kv.Bucket, key []byte) []byte {
	ix.counted()
	v, err := ix.r.Get(b, key)
	if err == nil {
		v, err = encoding.Unseal(v)
	}
	if err != nil {
		fault(fmt.Errorf("%s %q: %w", Schema.Buckets[b].Name, key, err))
	}
	return v
}

func (ix *Index) scan(b kv.Bucket, prefix []byte, opts kv.ScanOptions, fn func(k, v []byte) bool) {
	err := ix.r.Scan(b, prefix, opts, func(k, v []byte) (bool, error) {
		ix.counted()
		v, err := encoding.Unseal(v)
		if err != nil {
			return false, fmt.Errorf("%s %q: %w", Schema.Buckets[b].Name, k, err)
		}
		return fn(k, v), nil
	})
	if err != nil {
		fault(err)
	}
}

// scanKeys is scan for the keys alone (values are not read nor checked).
func (ix *Index) scanKeys(b kv.Bucket, prefix []byte, fn func(k []byte) bool) {
	err := ix.r.Scan(b, prefix, kv.ScanOptions{}, func(k, _ []byte) (bool, error) { return fn(k), nil })
	if err != nil {
		fault(err)
	}
}

func corrupt(what string, err error) {
	fault(fmt.Errorf("%s: %w", what, err))
}

// load returns the entry stored under key in b, decoded by decode: from the shared cache, this
// snapshot's memo, or the store (nil when there is none). A snapshot that may use the cache
// keeps what it decodes there; one that may not (a write handle's changed entries, a snapshot
// older or newer than the cache) keeps it in its memo, so that it decodes each record once.
func load[T any](ix *Index, b kv.Bucket, key []byte, what func() string, decode func([]byte) (T, error)) T {
	return cached(ix, b, key, func() (T, int, bool) {
		var zero T
		raw := ix.get(b, key)
		if raw == nil {
			return zero, 0, false
		}
		x, err := decode(raw)
		if err != nil {
			corrupt(what(), err)
		}
		return x, len(raw), true
	})
}

// cached returns what fetch reads for key in b (an entry, or, for a bucket scanned by prefix,
// a list), from the memo or the cache if they hold it. fetch returns its size stored, and false
// when there is nothing (which is not kept).
func cached[T any](ix *Index, b kv.Bucket, key []byte, fetch func() (T, int, bool)) T {
	if x, ok, fromCache := ix.held(b, key); ok {
		if _, miss := x.(absent); miss {
			var zero T
			return zero
		}
		if fromCache && ix.w != nil {
			// A write handle keeps one object per record: it compares them.
			ix.remember(string(ix.kbuf), x)
		}
		return x.(T)
	}
	cacheable := ix.useCache && !ix.dirty[string(ix.kbuf)]
	x, size, ok := fetch()
	ck := string(append([]byte{byte(b)}, key...))
	if !ok {
		if ix.w != nil {
			// A writer asks again about what it is about to record (an import's checker asks
			// about a new source once for each quad naming it): the put forgets the miss.
			ix.remember(ck, absent{})
		}
		return x
	}
	if cacheable && ix.insert && ix.admits() && ix.cache.put(ix.st.head, ck, x, size) {
		if ix.walking {
			ix.walked++
		} else {
			ix.admitted++
		}
		return x
	}
	ix.remember(ck, x)
	return x
}

// Pass makes the snapshot read through the process cache without adding to it: a read of
// every record once (an export) would push out what the other reads use, and hold as much
// heap as the cache's bound allows while it ran.
func (ix *Index) Pass() { ix.insert = false }

// absent is what a write handle's memo holds for an entry it looked up and did not find.
type absent struct{}

// held returns what the snapshot's memo, or the cache it may read, holds under key in b, and
// whether it came from the cache. It leaves b and key in ix.kbuf.
func (ix *Index) held(b kv.Bucket, key []byte) (x any, ok, fromCache bool) {
	ix.kbuf = append(append(ix.kbuf[:0], byte(b)), key...)
	if x, ok := ix.recall(ix.kbuf); ok {
		return x, true, false
	}
	if ix.useCache && !ix.dirty[string(ix.kbuf)] {
		if x, ok := ix.cache.get(string(ix.kbuf)); ok {
			return x, true, true
		}
	}
	return nil, false, false
}

// depsOf is the artifact versions derived directly from the node stored as key, in the order
// recorded.
func (ix *Index) depsOf(node []byte) *depList {
	return cached(ix, bDep, node, func() (*depList, int, bool) {
		l := &depList{}
		size := 0
		ix.scan(bDep, node, kv.ScanOptions{}, func(k, b []byte) bool {
			size += l.add(k, b)
			return true
		})
		return l, size, true
	})
}

// add appends the dependent that the bDep entry k → b names, and returns the entry's size.
func (l *depList) add(k, b []byte) int {
	d := dec{encoding.NewDec(b)}
	r := d.ref()
	if d.Err != nil {
		corrupt("dependents", d.Err)
	}
	l.refs = append(l.refs, r)
	return len(k) + len(b)
}

// follow is the target of a link, or nil when it has none, the cache dropped the target, or
// ix is a write handle: links lead to committed entries, and a write handle reads its own.
func follow[T linkable](ix *Index, x T) T {
	var zero T
	if ix.w != nil || any(x) == any(zero) || x.share().gone.Load() {
		return zero
	}
	return x
}

// depNodes is the artifact versions of l, through its links when it has them.
func (ix *Index) depNodes(l *depList) []*ArtifactNode {
	if p := l.nodes.Load(); p != nil && ix.w == nil {
		ns := *p
		for i, n := range ns {
			if n.gone.Load() {
				// A version the cache dropped: look it up again, and the rest after it.
				out := slices.Clone(ns[:i])
				for _, r := range l.refs[i:] {
					out = append(out, ix.artifactByRef(r))
				}
				return out
			}
		}
		return ns
	}
	ns := make([]*ArtifactNode, len(l.refs))
	linkable := isShared(l)
	ix.prefetchArtifacts(l.refs)
	for i, r := range l.refs {
		ns[i] = ix.artifactByRef(r)
		if ns[i] == nil {
			corrupt("dependents", encoding.ErrCorrupt)
		}
		linkable = linkable && isShared(ns[i])
	}
	if linkable {
		l.nodes.Store(&ns)
	}
	return ns
}

// admitPerRead bounds the entries one snapshot adds to the shared cache: a read that meets
// hundreds of thousands of entries once (a find over a large predicate, an export) would
// otherwise push out everything the other reads keep coming back to. The rest of what it
// decodes it keeps in its own memo.
const admitPerRead = 16 << 10

// admitPerWalk bounds, apart from admitPerRead, the entries a walk of the provenance graph
// reads ahead and adds to the cache: up to four entries an artifact version (an impact of
// 10,000 dependents is 40,000), which the next impact, review or why of the same artifacts reads
// again. Under admitPerRead alone such a walk was cached a part at a time, and each of the next
// few walks read a part of it again from pages (TestWalkIsCachedWhole).
const admitPerWalk = 64 << 10

// admits reports whether the snapshot may add one more entry to the cache.
func (ix *Index) admits() bool {
	if ix.walking {
		return ix.walked < admitPerWalk
	}
	return ix.admitted < admitPerRead
}

// memoFew entries are kept in an array before a snapshot makes its map: most reads decode a
// handful of entries, and a map per read cost more than the lookups.
const memoFew = 8

// memoMax bounds what a read snapshot keeps in its memo: past it, what it decodes it hands out
// and forgets (as after Release), so that a read meeting a million entries once (a find whose
// conditions match most of a large predicate) does not hold them all, nor pay for a map of
// them. A write handle keeps everything: it compares the objects of the records it changed.
const memoMax = 64 << 10

type memoEntry struct {
	k string
	x any
}

func (ix *Index) recall(k []byte) (any, bool) {
	for i := range ix.nfew {
		if ix.few[i].k == string(k) {
			return ix.few[i].x, true
		}
	}
	if ix.memo != nil {
		x, ok := ix.memo[string(k)]
		return x, ok
	}
	return nil, false
}

func (ix *Index) remember(k string, x any) {
	for i := range ix.nfew {
		if ix.few[i].k == k {
			ix.few[i].x = x
			return
		}
	}
	if ix.memo == nil && ix.nfew < memoFew {
		ix.few[ix.nfew] = memoEntry{k, x}
		ix.nfew++
		return
	}
	if ix.w == nil && len(ix.memo) >= memoMax {
		return
	}
	if ix.memo == nil {
		ix.memo = make(map[string]any, 4*memoFew)
		for _, e := range ix.few[:ix.nfew] {
			ix.memo[e.k] = e.x
		}
		ix.nfew = 0
	}
	ix.memo[k] = x
}

// forget drops what the memo holds under key in b, which a write changed.
func (ix *Index) forget(b kv.Bucket, key []byte) {
	// The key is built in a buffer and made a string only where a map keeps it: a string per
	// put was a twentieth of an import's allocations.
	ix.fbuf = append(append(ix.fbuf[:0], byte(b)), key...)
	k := ix.fbuf
	for i := range ix.nfew {
		if ix.few[i].k == string(k) {
			ix.few[i] = ix.few[ix.nfew-1]
			ix.few[ix.nfew-1] = memoEntry{}
			ix.nfew--
			break
		}
	}
	if ix.memo != nil {
		delete(ix.memo, string(k))
	}
	if ix.dirty != nil {
		ix.dirty[string(k)] = true
	}
}

// Entry loaders. Each returns nil when the store holds no such record.

func (ix *Index) txHeader(id record.TxID) *txHeader {
	if id < 1 || id > ix.st.head {
		return nil
	}
	return load(ix, bTx, txKey(id), func() string { return fmt.Sprintf("tx %d", id) },
		func(b []byte) (*txHeader, error) { return decodeTxHeader(id, b) })
}

// txTime is a transaction's time, read from the start of its header: a record's time is read
// for every record a read shows, and a bulk transaction's header lists thousands of records.
func (ix *Index) txTime(id record.TxID) time.Time {
	if id < 1 || id > ix.st.head {
		return time.Time{}
	}
	k := txTimeKey(id)
	t := cached(ix, bTx, k, func() (*time.Time, int, bool) {
		b := ix.get(bTx, k[:len(k)-1])
		if b == nil {
			return nil, 0, false
		}
		return decodeTxTime(id, b), 16, true
	})
	if t == nil {
		return time.Time{}
	}
	return *t
}

// txTimeKey is the cache's key of a transaction's time: a key of its own, since no stored key
// ends so.
func txTimeKey(id record.TxID) []byte { return append(txKey(id), 't') }

// decodeTxTime is the time in transaction id's header b.
func decodeTxTime(id record.TxID, b []byte) *time.Time {
	d := encoding.NewDec(b)
	t := d.Time()
	if d.Err != nil {
		corrupt(fmt.Sprintf("tx %d", id), d.Err)
	}
	return &t
}

func (ix *Index) principal(name string) *principalEntry {
	return load(ix, bPrincipal, []byte(name), func() string { return "principal " + name },
		func(b []byte) (*principalEntry, error) {
			p, n, err := decodePrincipal(name, b)
			return &principalEntry{p, n}, err
		})
}

type principalEntry struct {
	*record.Principal
	n int
}

func (ix *Index) source(id string) *record.Source {
	return load(ix, bSource, append(ix.skey[:0], id...), func() string { return fmt.Sprintf("source %q", id) },
		func(b []byte) (*record.Source, error) { return decodeSource(id, b) })
}

func (ix *Index) keyEntry(k record.Key) *keyEntry {
	return load(ix, bKey, appendKeyKey(ix.kkey[:0], k), func() string { return "key " + k.String() },
		func(b []byte) (*keyEntry, error) { return decodeKeyEntry(k, b) })
}

// keyList is the keys of one subject, in key order.
type keyList struct{ keys []record.Key }

// keysOf is the keys of subject, in key order: read by a scan once, then kept as a list the
// cache drops when the subject gains a key.
func (ix *Index) keysOf(subject string) *keyList {
	prefix := encoding.AppendName(nil, subject)
	return cached(ix, subjectKeys, prefix, func() (*keyList, int, bool) {
		l := &keyList{}
		size := 0
		ix.scanKeys(bKey, prefix, func(k []byte) bool {
			l.keys = append(l.keys, record.Key{Subject: subject, Predicate: string(k[len(prefix):])})
			size += len(k)
			return true
		})
		return l, size, true
	})
}

// keyOf is the key numbered seq.
func (ix *Index) keyOf(seq uint64) record.Key {
	k := load(ix, bKeyName, u(nil, seq), func() string { return fmt.Sprintf("key number %d", seq) },
		func(b []byte) (*record.Key, error) {
			for i, c := range b {
				if c == 0 {
					return &record.Key{Subject: string(b[:i]), Predicate: string(b[i+1:])}, nil
				}
			}
			return nil, fmt.Errorf("%w: key name without a NUL", encoding.ErrCorrupt)
		})
	if k == nil {
		corrupt(fmt.Sprintf("key number %d", seq), fmt.Errorf("%w: no such key", encoding.ErrCorrupt))
	}
	return *k
}

func (ix *Index) nameOf(seq uint64) string {
	n := load(ix, bArtName, u(nil, seq), func() string { return artNumber(seq) }, decodeArtName)
	if n == nil {
		corrupt(fmt.Sprintf("artifact number %d", seq), fmt.Errorf("%w: no such artifact", encoding.ErrCorrupt))
	}
	return *n
}

func artNumber(seq uint64) string { return fmt.Sprintf("artifact number %d", seq) }

func decodeArtName(b []byte) (*string, error) { s := string(b); return &s, nil }

// claimAt is version of the key numbered keySeq.
func (ix *Index) claimAt(k record.Key, keySeq uint64, version int) *ClaimEntry {
	return ix.claimOf(func() record.Key { return k }, keySeq, version)
}

// claimOf is version of the key numbered keySeq, which key names when the claim is decoded
// (a claim found in the cache needs no name).
func (ix *Index) claimOf(key func() record.Key, keySeq uint64, version int) *ClaimEntry {
	return load(ix, bClaim, u(u(ix.ckey[:0], keySeq), uint64(version)), func() string { return fmt.Sprintf("claim %s@%d", key(), version) },
		func(b []byte) (*ClaimEntry, error) {
			s, err := decodeClaim(record.ClaimID{Key: key(), Version: version}, b)
			if err != nil {
				return nil, err
			}
			return newClaimEntry(s, keySeq), nil
		})
}

// claimByRef is the claim (keySeq, version).
func (ix *Index) claimByRef(r ref) *ClaimEntry {
	return ix.claimOf(func() record.Key { return ix.keyOf(r.seq) }, r.seq, r.version)
}

// claim is the claim id, or nil.
func (ix *Index) claim(id record.ClaimID) *ClaimEntry {
	ke := ix.keyEntry(id.Key)
	if ke == nil || id.Version < 1 || id.Version > ke.n {
		return nil
	}
	return ix.claimAt(id.Key, ke.seq, id.Version)
}

func (ix *Index) pred(p string) *predEntry {
	return load(ix, bPred, append(ix.pkey[:0], p...), func() string { return "predicate " + p }, decodePred)
}

func (ix *Index) artEntry(name string) *artEntry {
	return load(ix, bArt, []byte(name), func() string { return "artifact " + name },
		func(b []byte) (*artEntry, error) { return decodeArtEntry(name, b) })
}

func (ix *Index) artifactAt(name string, nameSeq uint64, version int) *ArtifactNode {
	return ix.artifactOf(func() string { return name }, nameSeq, version)
}

func (ix *Index) artifactOf(name func() string, nameSeq uint64, version int) *ArtifactNode {
	return load(ix, bArtVersion, artVersionKey(nameSeq, version), func() string { return fmt.Sprintf("artifact %s@%d", name(), version) },
		ix.artifactDecoder(name, nameSeq, version))
}

// artifactDecoder decodes the record of version of the artifact numbered nameSeq, named name().
func (ix *Index) artifactDecoder(name func() string, nameSeq uint64, version int) func([]byte) (*ArtifactNode, error) {
	return func(b []byte) (*ArtifactNode, error) {
		s, err := decodeArtifact(record.ArtifactID{Name: name(), Version: version}, b)
		if err != nil {
			return nil, err
		}
		return ix.newArtifactNode(s, nameSeq), nil
	}
}

func (ix *Index) artifactByRef(r ref) *ArtifactNode {
	return ix.artifactOf(func() string { return ix.nameOf(r.seq) }, r.seq, r.version)
}

func (ix *Index) artifact(id record.ArtifactID) *ArtifactNode {
	ae := ix.artEntry(id.Name)
	if ae == nil || id.Version < 1 || id.Version > ae.n {
		return nil
	}
	return ix.artifactAt(id.Name, ae.seq, id.Version)
}

func (ix *Index) revocation(id string) *record.Revocation {
	s := load(ix, bRevocation, []byte(id), func() string { return "revocation " + id },
		func(b []byte) (*storedRevocation, error) { return decodeRevocation(id, b, ix.keyOf) })
	if s == nil {
		return nil
	}
	return s.r
}

func (ix *Index) confirmation(id string) *record.Confirmation {
	return load(ix, bConfirmation, []byte(id), func() string { return "confirmation " + id },
		func(b []byte) (*record.Confirmation, error) { return decodeConfirmation(id, b, ix.keyOf) })
}

func (ix *Index) review(id string) *record.Review {
	return load(ix, bReview, []byte(id), func() string { return "review " + id },
		func(b []byte) (*record.Review, error) { return decodeReview(id, b, ix.nameOf) })
}

func (ix *Index) grant(id string) *record.Grant {
	return load(ix, bGrant, []byte(id), func() string { return "grant " + id },
		func(b []byte) (*record.Grant, error) { return decodeGrant(id, b) })
}

func (ix *Index) decay(id string) *record.Decay {
	return load(ix, bDecay, []byte(id), func() string { return "decay " + id }, decodeDecay)
}

func (ix *Index) token(id string) *storedToken {
	return load(ix, bToken, []byte(id), func() string { return "token " + id },
		func(b []byte) (*storedToken, error) { return decodeToken(id, b) })
}

func (ix *Index) tokenRev(id string) *record.TokenRevocation {
	return load(ix, bTokenRev, []byte(id), func() string { return "token revocation " + id },
		func(b []byte) (*record.TokenRevocation, error) { return decodeTokenRev(id, b) })
}

func (ix *Index) retrieval(id string) *record.Retrieval {
	return load(ix, bRetrieval, []byte(id), func() string { return "retrieval " + id },
		func(b []byte) (*record.Retrieval, error) { return decodeRetrieval(id, b, ix.keyOf, ix.nameOf) })
}

func (ix *Index) outcome(id string) *record.Outcome {
	return load(ix, bOutcome, []byte(id), func() string { return "outcome " + id },
		func(b []byte) (*record.Outcome, error) { return decodeOutcome(id, b) })
}

func (ix *Index) runEntry(k RunKey) *runEntry {
	return load(ix, bRun, runKey(k.By, k.Name), func() string { return "run " + k.Name }, decodeRun)
}

// Tx returns transaction id with every record it holds, or nil. A record its header names
// that the store does not hold is damage (a Fault).
func (ix *Index) Tx(id record.TxID) *record.Tx {
	h := ix.txHeader(id)
	if h == nil {
		return nil
	}
	missing := func(what string) {
		corrupt(fmt.Sprintf("tx %d", id), fmt.Errorf("%w: its %s is missing", encoding.ErrCorrupt, what))
	}
	tx := &record.Tx{ID: id, Time: h.time, By: h.by, Meta: h.meta}
	var seqs, keySeqs []uint64 // of tx.Claims, for their vectors
	for _, name := range h.principals {
		p := ix.principal(name)
		if p == nil {
			missing("principal " + name)
		}
		tx.Principals = append(tx.Principals, p.Principal)
	}
	tx.Grants = numbered(h.grants, prefGrant, id, "grant", ix.grant, missing)
	for _, s := range h.sources {
		x := ix.source(s)
		if x == nil {
			missing(fmt.Sprintf("source %q", s))
		}
		tx.Sources = append(tx.Sources, x)
	}
	tx.Decays = numbered(h.decays, prefDecay, id, "decay", ix.decay, missing)
	for _, r := range h.claims {
		e := ix.claimByRef(r)
		if e == nil {
			missing(fmt.Sprintf("claim %s@%d", ix.keyOf(r.seq), r.version))
		}
		tx.Claims = append(tx.Claims, e.Claim)
		seqs, keySeqs = append(seqs, e.seq), append(keySeqs, r.seq)
	}
	if len(tx.Claims) > 0 {
		ix.txVectors(tx, seqs, keySeqs)
	}
	tx.Revocations = numbered(h.revocations, prefRevocation, id, "revocation", ix.revocation, missing)
	tx.Confirmations = numbered(h.confirmations, prefConfirmation, id, "confirmation", ix.confirmation, missing)
	for _, r := range h.artifacts {
		a := ix.artifactByRef(r)
		if a == nil {
			missing(fmt.Sprintf("artifact %s@%d", ix.nameOf(r.seq), r.version))
		}
		tx.Artifacts = append(tx.Artifacts, a.Artifact)
	}
	for _, t := range h.tokens {
		k := ix.token(t)
		if k == nil {
			missing("token " + t)
		}
		tx.Tokens = append(tx.Tokens, k.t)
	}
	tx.TokenRevocations = numbered(h.tokenRevs, prefTokenRev, id, "token revocation", ix.tokenRev, missing)
	tx.Reviews = numbered(h.reviews, prefReview, id, "review", ix.review, missing)
	tx.Retrievals = numbered(h.retrievals, prefRetrieval, id, "retrieval", ix.retrieval, missing)
	tx.Outcomes = numbered(h.outcomes, prefOutcome, id, "outcome", ix.outcome, missing)
	return tx
}

// numbered reads the records list numbers in transaction id through get, in order; one the
// store lacks is damage (missing, named by what and its id).
func numbered[T any](list idList, prefix string, id record.TxID, what string, get func(string) *T, missing func(string)) []*T {
	var out []*T
	for i := range list.n {
		rid := list.id(prefix, id, i)
		r := get(rid)
		if r == nil {
			missing(what + " " + rid)
		}
		out = append(out, r)
	}
	return out
}

// TxTime is the time of transaction id (zero if the snapshot does not hold it).
func (ix *Index) TxTime(id record.TxID) time.Time {
	if id > ix.head {
		return time.Time{}
	}
	return ix.txTime(id)
}

// TxAt returns the last transaction recorded at or before t (0 if none). Transaction times
// never go backwards, so it is a binary search over the headers.
func (ix *Index) TxAt(t time.Time) record.TxID {
	lo, hi := record.TxID(1), ix.head // find the first tx after t
	for lo <= hi {
		mid := lo + (hi-lo)/2
		if ix.txTime(mid).After(t) {
			hi = mid - 1
		} else {
			lo = mid + 1
		}
	}
	return lo - 1
}

// HasClaim, HasArtifact, HasToken and HasSource say whether the snapshot (a write handle's
// pending transactions included) holds the record; KeyVersion and ArtifactVersion give the
// last version of a key or an artifact, 0 for none. A chain check asks them.
func (ix *Index) HasClaim(id record.ClaimID) bool {
	ke := ix.keyEntry(id.Key)
	return ke != nil && id.Version >= 1 && id.Version <= ke.n
}

func (ix *Index) HasArtifact(id record.ArtifactID) bool {
	ae := ix.artEntry(id.Name)
	return ae != nil && id.Version >= 1 && id.Version <= ae.n
}

func (ix *Index) HasToken(id string) bool  { return ix.token(id) != nil }
func (ix *Index) HasSource(id string) bool { return ix.source(id) != nil }

func (ix *Index) KeyVersion(k record.Key) int {
	if ke := ix.keyEntry(k); ke != nil {
		return ke.n
	}
	return 0
}

func (ix *Index) ArtifactVersion(name string) int {
	if ae := ix.artEntry(name); ae != nil {
		return ae.n
	}
	return 0
}

// ClaimEntry is one claim version with the events later transactions recorded about it, as
// far as the snapshot that read it holds them (a View reads them as of its transaction).
type ClaimEntry struct {
	shared
	*record.Claim
	time     atomic.Pointer[time.Time] // its transaction's, once read
	seq      uint64
	keySeq   uint64
	slot     int
	listing  uint64
	audience string
	rel      lifecycle.Relation
	revised  []record.TxID // transactions of the claims that superseded it
	s        *storedClaim
}

func newClaimEntry(s *storedClaim, keySeq uint64) *ClaimEntry {
	e := &ClaimEntry{Claim: s.c, seq: s.seq, keySeq: keySeq, slot: s.slot, listing: s.listing,
		audience: Audience(s.c.SeenBy), rel: lifecycle.RelationOf(s.c), s: s}
	for _, r := range s.revisedBy {
		e.revised = append(e.revised, r.tx)
	}
	return e
}

// Audience is who may perceive the claim: Audience(SeenBy).
func (e *ClaimEntry) Audience() string { return e.audience }

// Seq is the claim's place among all claims, from 0 in the order they were recorded.
func (e *ClaimEntry) Seq() int { return int(e.seq) }

func txsOf(evs []event) []record.TxID {
	if len(evs) == 0 {
		return nil
	}
	out := make([]record.TxID, len(evs))
	for i, x := range evs {
		out[i] = x.tx
	}
	return out
}

// ArtifactNode is one artifact version with the versions and reviews later transactions
// recorded about it.
type ArtifactNode struct {
	shared
	*record.Artifact
	seq      uint64
	nameSeq  uint64
	audience string
	ref      string
	inRefs   []string
	s        *storedArtifact
	time     atomic.Pointer[time.Time] // its transaction's, once read
	// Links (see cache.go): its inputs, and the list of the versions derived from it.
	inArt   []atomic.Pointer[ArtifactNode]
	inClaim []atomic.Pointer[ClaimEntry]
	deps    atomic.Pointer[depList]
}

// depList is the artifact versions derived directly from one node, in the order recorded, and,
// once a read resolved them while the cache held the list, links to them.
type depList struct {
	shared
	refs  []ref
	nodes atomic.Pointer[[]*ArtifactNode]
}

func (ix *Index) newArtifactNode(s *storedArtifact, nameSeq uint64) *ArtifactNode {
	n := &ArtifactNode{Artifact: s.a, seq: s.seq, nameSeq: nameSeq, audience: Audience(s.a.SeenBy), ref: s.a.ID.String(), s: s,
		inArt: make([]atomic.Pointer[ArtifactNode], len(s.inputs)), inClaim: make([]atomic.Pointer[ClaimEntry], len(s.inputs))}
	n.DerivedFrom = make([]record.NodeRef, len(s.inputs))
	n.inRefs = make([]string, len(s.inputs))
	for i, in := range s.inputs {
		if in.artifact {
			id := record.ArtifactID{Name: ix.nameOf(in.ref.seq), Version: in.ref.version}
			n.DerivedFrom[i] = record.NodeRef{Artifact: &id}
		} else {
			id := record.ClaimID{Key: ix.keyOf(in.ref.seq), Version: in.ref.version}
			n.DerivedFrom[i] = record.NodeRef{Claim: &id}
		}
		n.inRefs[i] = n.DerivedFrom[i].String()
	}
	return n
}

// Seq is the version's place among every artifact version, from 0 in the order they were
// recorded: a dense number below ArtifactCount, for tables indexed by it.
func (n *ArtifactNode) Seq() int { return int(n.seq) }

// Ref is the version's reference, ID.String().
func (n *ArtifactNode) Ref() string { return n.ref }

// InputRef is the reference of its i-th input, DerivedFrom[i].String().
func (n *ArtifactNode) InputRef(i int) string { return n.inRefs[i] }

// Audience is who may perceive the artifact version: Audience(SeenBy).
func (n *ArtifactNode) Audience() string { return n.audience }

// Release forgets the entries the snapshot decoded so far, so that a read of the whole store
// (an export, a check) holds what it is reading and not everything it read. Entries handed out
// before stay valid; a later lookup decodes a record again.
func (ix *Index) Release() {
	ix.memo = nil
	clear(ix.few[:])
	ix.nfew = 0
}
