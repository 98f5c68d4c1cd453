package graphstore

// The bbolt file, read with our own bounds-checked code before bbolt maps it.
//
// bbolt trusts its file: it maps it into memory and follows page ids and element offsets
// without checking them, so a damaged file makes it panic (an assertion, an invalid freelist)
// or fault (a page beyond the end of a truncated file is a SIGBUS; an offset into nowhere a
// SIGSEGV). inspectBolt reads what bbolt reads first when it opens a file — the two meta pages
// and the freelist — with ReadAt and checks it, so that a file bbolt would crash on is refused
// with ErrDamaged before it is mapped. walkBolt reads every page in use the same way and checks
// the B+trees page by page, as bbolt's own (*Tx).Check does but without trusting anything it
// has not checked yet: it is what makes running bbolt's check afterwards safe, since bbolt's
// check runs in a goroutine of its own where no recover or SetPanicOnFault of ours reaches.
//
// The layout (bbolt's, in the machine's byte order): every page starts with a 16-byte header
// (id uint64, flags uint16, count uint16, overflow uint32). A meta page holds magic, version,
// page size, flags, the root bucket (root page, sequence), the freelist page, the high-water
// mark (pgid: pages 0..pgid-1 are in use or free), the transaction id and an FNV-64a checksum
// of the fields before it. A branch page holds count elements (pos uint32, ksize uint32, child
// page uint64), a leaf page count elements (flags uint32, pos uint32, ksize uint32, vsize
// uint32); pos is the offset of the key from the element, the value follows the key. A leaf
// element flagged as a bucket holds the bucket's root page and sequence, and for an inline
// bucket (root page 0) the bucket's single leaf page right after them. A freelist page holds
// count page ids, or 0xFFFF in count and the real count as the first uint64.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltHeaderSize   = 16
	boltElemSize     = 16
	boltMetaSize     = 64
	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltBucketLeaf   = 0x01
	boltNoFreelist   = math.MaxUint64
	// bbolt looks for the second meta page at 1 KiB << 0..14 when the first is unreadable.
	boltMinPageSize = 1 << 10
	boltMaxPageSize = 1 << 24
)

var boltOrder = binary.NativeEndian

// boltMeta is one decoded meta page.
type boltMeta struct {
	page     int // 0 or 1
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64
	txid     uint64
	err      error // why it does not validate, or nil
}

func parseBoltMeta(b []byte, page int) boltMeta {
	m := boltMeta{page: page}
	if len(b) < boltHeaderSize+boltMetaSize {
		m.err = errors.New("it lies beyond the end of the file")
		return m
	}
	d := b[boltHeaderSize:]
	m.pageSize = boltOrder.Uint32(d[8:])
	m.root = boltOrder.Uint64(d[16:])
	m.freelist = boltOrder.Uint64(d[32:])
	m.hwm = boltOrder.Uint64(d[40:])
	m.txid = boltOrder.Uint64(d[48:])
	h := fnv.New64a()
	h.Write(d[:56])
	switch {
	case boltOrder.Uint32(d[0:]) != boltMagic:
		m.err = errors.New("it is not a bbolt meta page (wrong magic number)")
	case boltOrder.Uint32(d[4:]) != boltVersion:
		m.err = fmt.Errorf("it has format version %d, not %d", boltOrder.Uint32(d[4:]), boltVersion)
	case boltOrder.Uint64(d[56:]) != h.Sum64():
		m.err = errors.New("its checksum does not match")
	}
	return m
}

// boltLayout is what inspectBolt found: the file's geometry, the meta bbolt will use, and the
// free pages. Problems are damage that does not stop bbolt from opening the file safely.
type boltLayout struct {
	size     int64
	pageSize int
	meta     boltMeta // the one bbolt uses: the valid one with the higher transaction id
	free     []uint64 // sorted
	problems []string
}

// inspectBolt checks what bbolt relies on before it maps a file of size bytes. An error means
// bbolt must not open it (it would crash, or read past the end); it wraps ErrDamaged. An
// empty file is no store yet (bbolt initialises it), and is not inspected.
func inspectBolt(r io.ReaderAt, size int64) (*boltLayout, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrDamaged}, args...)...)
	}
	var first [boltHeaderSize + boltMetaSize]byte
	n, _ := r.ReadAt(first[:], 0)
	m0 := parseBoltMeta(first[:n], 0)
	// bbolt takes the page size from the first meta page, or else from the first valid meta
	// page found at 1 KiB << i, as we do.
	var m1 boltMeta
	switch {
	case m0.err == nil && validPageSize(m0.pageSize):
		m1 = readBoltMeta(r, int64(m0.pageSize))
	default:
		m1 = boltMeta{page: 1, err: errors.New("no valid meta page follows the first")}
		for ps := int64(boltMinPageSize); ps <= boltMaxPageSize && ps < size; ps <<= 1 {
			if m := readBoltMeta(r, ps); m.err == nil && int64(m.pageSize) == ps {
				m1 = m
				break
			}
		}
	}
	if m0.err == nil && !validPageSize(m0.pageSize) {
		m0.err = fmt.Errorf("its page size %d is not a power of two between 1 KiB and 16 MiB", m0.pageSize)
	}
	if m1.err == nil && !validPageSize(m1.pageSize) {
		m1.err = fmt.Errorf("its page size %d is not a power of two between 1 KiB and 16 MiB", m1.pageSize)
	}
	l := &boltLayout{size: size}
	switch {
	case m0.err != nil && m1.err != nil:
		return nil, bad("neither meta page is valid (page 0: %v; page 1: %v)", m0.err, m1.err)
	case m0.err != nil:
		l.meta = m1
		l.problems = append(l.problems, fmt.Sprintf("meta page 0 is not valid: %v; bbolt uses meta page 1 (transaction %d), so the last write before the damage may be lost", m0.err, m1.txid))
	case m1.err != nil:
		l.meta = m0
		l.problems = append(l.problems, fmt.Sprintf("meta page 1 is not valid: %v; bbolt uses meta page 0 (transaction %d), so the last write before the damage may be lost", m1.err, m0.txid))
	default:
		l.meta = m0
		if m1.txid > m0.txid {
			l.meta = m1
		}
		if m0.pageSize != m1.pageSize {
			l.problems = append(l.problems, fmt.Sprintf("the meta pages disagree on the page size (%d and %d)", m0.pageSize, m1.pageSize))
		}
	}
	for _, m := range []boltMeta{m0, m1} {
		// bbolt writes transaction t's meta on page t%2: a meta on the wrong page means the
		// pages were moved, and the next commit would overwrite the newest meta.
		if m.err == nil && int(m.txid%2) != m.page {
			l.problems = append(l.problems, fmt.Sprintf("meta page %d holds transaction %d, which belongs on page %d", m.page, m.txid, m.txid%2))
		}
	}
	m := l.meta
	ps := int64(m.pageSize)
	l.pageSize = int(ps)
	switch {
	case size < 2*ps:
		return nil, bad("the file is %d bytes, less than its two meta pages of %d bytes", size, ps)
	case m.hwm < 4 || m.hwm > uint64(size)/uint64(ps):
		// A file shorter than its pages in use was truncated: bbolt would fault reading them.
		return nil, bad("the file is %d bytes, but its meta page says %d pages of %d bytes (%d bytes) are in use: it was truncated or the meta page is wrong", size, m.hwm, ps, m.hwm*uint64(ps))
	case m.root < 2 || m.root >= m.hwm:
		return nil, bad("the root bucket's page %d lies outside pages 2..%d", m.root, m.hwm-1)
	case m.freelist == boltNoFreelist:
		// bbolt rebuilds a freelist that was not written by scanning every page at open;
		// mql never writes a file that way.
		return nil, bad("the file records no freelist (mql always writes one)")
	case m.freelist < 2 || m.freelist >= m.hwm:
		return nil, bad("the freelist's page %d lies outside pages 2..%d", m.freelist, m.hwm-1)
	}
	free, err := readBoltFreelist(r, m, ps)
	if err != nil {
		return nil, bad("the freelist (page %d): %v", m.freelist, err)
	}
	l.free = free
	return l, nil
}

func validPageSize(ps uint32) bool {
	return ps >= boltMinPageSize && ps <= boltMaxPageSize && bits.OnesCount32(ps) == 1
}

func readBoltMeta(r io.ReaderAt, off int64) boltMeta {
	var b [boltHeaderSize + boltMetaSize]byte
	n, _ := r.ReadAt(b[:], off)
	return parseBoltMeta(b[:n], 1)
}

// readBoltPage reads page id and its overflow pages into buf (grown as needed), checking that
// they lie below the high-water mark and that the page knows its own id.
func readBoltPage(r io.ReaderAt, id, hwm uint64, ps int64, buf []byte) ([]byte, error) {
	if id >= hwm {
		return nil, fmt.Errorf("page %d is beyond the pages in use (%d)", id, hwm)
	}
	buf = slices.Grow(buf[:0], int(ps))[:ps]
	if _, err := r.ReadAt(buf, int64(id)*ps); err != nil {
		return nil, fmt.Errorf("page %d cannot be read: %v", id, err)
	}
	if got := boltOrder.Uint64(buf[0:]); got != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, got)
	}
	over := uint64(boltOrder.Uint32(buf[12:]))
	if over >= hwm-id {
		return nil, fmt.Errorf("page %d runs over %d more pages, beyond the pages in use (%d)", id, over, hwm)
	}
	if over > 0 {
		n := int64(over+1) * ps
		buf = slices.Grow(buf, int(n-ps))[:n]
		if _, err := r.ReadAt(buf[ps:], int64(id+1)*ps); err != nil {
			return nil, fmt.Errorf("page %d cannot be read: %v", id, err)
		}
	}
	return buf, nil
}

func readBoltFreelist(r io.ReaderAt, m boltMeta, ps int64) ([]uint64, error) {
	p, err := readBoltPage(r, m.freelist, m.hwm, ps, nil)
	if err != nil {
		return nil, err
	}
	if flags := boltOrder.Uint16(p[8:]); flags != boltFreelistPage {
		return nil, fmt.Errorf("it is not a freelist page (flags %#x)", flags)
	}
	count, at := uint64(boltOrder.Uint16(p[10:])), uint64(boltHeaderSize)
	if count == 0xFFFF {
		count, at = boltOrder.Uint64(p[boltHeaderSize:]), boltHeaderSize+8
	}
	if count > (uint64(len(p))-at)/8 {
		return nil, fmt.Errorf("it lists %d pages, more than it can hold", count)
	}
	free := make([]uint64, count)
	for i := range free {
		id := boltOrder.Uint64(p[at+uint64(i)*8:])
		switch {
		case id < 2 || id >= m.hwm:
			return nil, fmt.Errorf("it lists page %d, outside pages 2..%d", id, m.hwm-1)
		case i > 0 && id <= free[i-1]:
			return nil, fmt.Errorf("it lists page %d after page %d (out of order, or twice)", id, free[i-1])
		}
		free[i] = id
	}
	return free, nil
}

// maxFileProblems bounds what walkBolt reports: past a few dozen, more lines say nothing new.
const maxFileProblems = 50

// walkBolt reads every page reachable from the root bucket and checks it: within the pages in
// use, knowing its own id, a branch or leaf page whose elements, keys and values lie inside it,
// keys in order within the page and within the range its parent gives it, reached once, not
// free; bucket values well formed, inline buckets included. Finally every page in use must be
// reachable or free. It returns what is wrong (at most maxFileProblems lines).
func walkBolt(ctx context.Context, r io.ReaderAt, l *boltLayout) []string {
	w := &boltWalk{r: r, hwm: l.meta.hwm, ps: int64(l.pageSize),
		seen: make([]uint64, (l.meta.hwm+63)/64), free: make([]uint64, (l.meta.hwm+63)/64)}
	for _, id := range l.free {
		w.free[id/64] |= 1 << (id % 64)
	}
	w.mark(0, 0, "meta")
	w.mark(1, 0, "meta")
	if p, err := readBoltPage(r, l.meta.freelist, w.hwm, w.ps, nil); err == nil {
		w.mark(l.meta.freelist, uint64(boltOrder.Uint32(p[12:])), "the freelist")
	}
	w.stack = append(w.stack, boltVisit{id: l.meta.root, from: "the root bucket"})
	for len(w.stack) > 0 && len(w.problems) < maxFileProblems {
		if ctx.Err() != nil {
			w.add("the check was interrupted")
			return w.problems
		}
		v := w.stack[len(w.stack)-1]
		w.stack = w.stack[:len(w.stack)-1]
		w.visit(v)
	}
	if len(w.problems) > 0 {
		return w.problems // reachability means little once the tree is broken
	}
	var lost []uint64
	nlost := 0
	for id := uint64(2); id < w.hwm; id++ {
		if w.seen[id/64]&(1<<(id%64)) == 0 && w.free[id/64]&(1<<(id%64)) == 0 {
			nlost++
			if len(lost) < 10 {
				lost = append(lost, id)
			}
		}
	}
	if nlost > 0 {
		w.add("%d pages are neither in use nor free (the first: %v)", nlost, lost)
	}
	return w.problems
}

type boltVisit struct {
	id       uint64
	min, max []byte // keys of this subtree lie in [min, max); nil: unbounded
	from     string // what refers to the page, for messages
}

type boltWalk struct {
	r        io.ReaderAt
	hwm      uint64
	ps       int64
	seen     []uint64 // bitset of reachable pages
	free     []uint64 // bitset of free pages
	stack    []boltVisit
	problems []string
	buf      []byte // the page being checked, reused: nothing refers into it once checked
}

func (w *boltWalk) add(format string, args ...any) {
	if len(w.problems) < maxFileProblems {
		w.problems = append(w.problems, fmt.Sprintf(format, args...))
	}
}

// mark records pages id..id+over as reached from what; it reports false if one already was.
func (w *boltWalk) mark(id, over uint64, what string) bool {
	ok := true
	for p := id; p <= id+over && p < w.hwm; p++ {
		if w.seen[p/64]&(1<<(p%64)) != 0 {
			w.add("page %d is reached twice (again from %s)", p, what)
			ok = false
		}
		if w.free[p/64]&(1<<(p%64)) != 0 {
			w.add("page %d is in use (from %s) but listed as free", p, what)
			ok = false
		}
		w.seen[p/64] |= 1 << (p % 64)
	}
	return ok
}

func (w *boltWalk) visit(v boltVisit) {
	if v.id < 2 {
		w.add("%s refers to page %d, a meta page", v.from, v.id)
		return
	}
	p, err := readBoltPage(w.r, v.id, w.hwm, w.ps, w.buf)
	if err != nil {
		w.add("%s: %v", v.from, err)
		return
	}
	w.buf = p
	if !w.mark(v.id, uint64(boltOrder.Uint32(p[12:])), v.from) {
		return // never walk a page twice: a cycle would never end
	}
	w.page(p, v, fmt.Sprintf("page %d", v.id))
}

// page checks one branch or leaf page (a page of the file, or an inline bucket's page inside a
// value) and queues what it refers to.
func (w *boltWalk) page(p []byte, v boltVisit, name string) {
	flags, count := boltOrder.Uint16(p[8:]), int(boltOrder.Uint16(p[10:]))
	if boltHeaderSize+count*boltElemSize > len(p) {
		w.add("%s holds %d elements, more than fit in it", name, count)
		return
	}
	// elem returns the key (and value) of element i, or false if they lie outside the page.
	elem := func(i int) (e []byte, key, val []byte, ok bool) {
		at := boltHeaderSize + i*boltElemSize
		e = p[at : at+boltElemSize]
		pos, ksize := uint64(boltOrder.Uint32(e[4:])), uint64(boltOrder.Uint32(e[8:]))
		vsize := uint64(0)
		if flags == boltBranchPage {
			pos, ksize = uint64(boltOrder.Uint32(e[0:])), uint64(boltOrder.Uint32(e[4:]))
		} else {
			vsize = uint64(boltOrder.Uint32(e[12:]))
		}
		end := uint64(at) + pos + ksize + vsize
		if end > uint64(len(p)) {
			w.add("%s: element %d points past the end of the page", name, i)
			return nil, nil, nil, false
		}
		k := p[uint64(at)+pos : uint64(at)+pos+ksize]
		return e, k, p[uint64(at)+pos+ksize : end], true
	}
	var prev []byte
	inOrder := func(i int, key []byte) bool {
		switch {
		case i > 0 && bytes.Compare(prev, key) >= 0:
			w.add("%s: key %d is not after key %d", name, i, i-1)
		case i == 0 && v.min != nil && bytes.Compare(key, v.min) < 0:
			w.add("%s: its first key lies before the range its parent gives it", name)
		case v.max != nil && bytes.Compare(key, v.max) >= 0:
			w.add("%s: key %d lies after the range its parent gives it", name, i)
		default:
			prev = key
			return true
		}
		return false
	}
	switch flags {
	case boltBranchPage:
		if count == 0 {
			w.add("%s is a branch page without elements", name)
			return
		}
		keys := make([][]byte, count)
		kids := make([]uint64, count)
		for i := range count {
			e, key, _, ok := elem(i)
			if !ok || !inOrder(i, key) {
				return
			}
			keys[i], kids[i] = bytes.Clone(key), boltOrder.Uint64(e[8:])
		}
		// Children are queued in reverse so that the walk goes left to right.
		for i := count - 1; i >= 0; i-- {
			c := boltVisit{id: kids[i], min: keys[i], max: v.max, from: name}
			if i+1 < count {
				c.max = keys[i+1]
			}
			w.stack = append(w.stack, c)
		}
	case boltLeafPage:
		for i := range count {
			e, key, val, ok := elem(i)
			if !ok || !inOrder(i, key) {
				return
			}
			switch f := boltOrder.Uint32(e[0:]); f {
			case 0:
			case boltBucketLeaf:
				w.bucket(val, fmt.Sprintf("bucket %q in %s", key, name))
			default:
				w.add("%s: element %d has unknown flags %#x", name, i, f)
			}
		}
	default:
		w.add("%s is neither a branch nor a leaf page (flags %#x)", name, flags)
	}
}

// bucket checks a bucket value: its root page is queued, an inline bucket's page is checked
// where it lies.
func (w *boltWalk) bucket(val []byte, name string) {
	if len(val) < 16 {
		w.add("%s: its value is %d bytes, too short for a bucket", name, len(val))
		return
	}
	root := boltOrder.Uint64(val[0:])
	if root != 0 {
		w.stack = append(w.stack, boltVisit{id: root, from: name})
		return
	}
	inline := val[16:]
	if len(inline) < boltHeaderSize {
		w.add("%s: its inline page is cut short", name)
		return
	}
	if flags := boltOrder.Uint16(inline[8:]); flags != boltLeafPage {
		w.add("%s: its inline page is not a leaf page (flags %#x)", name, flags)
		return
	}
	w.page(inline, boltVisit{from: name}, name+" (inline)")
}

// ProblemFile is the kind of problem a check reports for a damaged file: a page, a meta page
// or the freelist that is not what the storage engine needs. A file with such problems has its
// records left unread: what they would say cannot be trusted.
const ProblemFile = "file"

// storageReport checks the backend's file itself, before any record is read: for bbolt, the meta
// pages and the freelist, every page in use (walkBolt), then bbolt's own check. It returns the
// problems as a report, or nil when the file is sound (or the backend has no file).
func storageReport(ctx context.Context, be backend) *Report {
	b, ok := be.(*bboltBackend)
	if !ok {
		return nil
	}
	problems := b.verify(ctx)
	if len(problems) == 0 {
		return nil
	}
	r := &Report{}
	for _, p := range problems {
		r.Add(Problem{Kind: ProblemFile, Msg: p})
	}
	r.Add(Problem{Kind: ProblemFile, Msg: "the records were not read, since the file holding them is damaged; restore the store from an export or a backup"})
	return r
}

// verify checks the whole file as it is now and returns what is wrong; anything wrong marks
// the store damaged. The caller keeps writers out.
func (b *bboltBackend) verify(ctx context.Context) []string {
	if b.file == nil || b.db == nil {
		return []string{fmt.Sprintf("%s is not open", b.path)}
	}
	st, err := b.file.Stat()
	if err != nil {
		return []string{fmt.Sprintf("the file cannot be read: %v", err)}
	}
	l, err := inspectBolt(b.file, st.Size())
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), ErrDamaged.Error()+": ")
		b.markDamaged(msg)
		return []string{msg}
	}
	// bbolt's own check (Tx.Check) finds nothing the walk does not: pages out of bounds,
	// referenced twice, both free and in use, or neither; keys out of order. It reads the pages
	// through the memory map, which maps a file in the page cache faster than any release can
	// unmap it (a 1M-claim store: 430 MiB resident within 100 ms), where the walk reads each
	// page once into one buffer.
	problems := append(l.problems, walkBolt(ctx, b.file, l)...)
	if len(problems) > 0 {
		b.markDamaged(problems[0])
		return problems
	}
	return nil
}

// damageBucket holds the verdict of a check that found a file's pages sound but its records
// or index unsound: damage inside the data, which Open cannot see without reading every entry.
// Every later Open finds it and refuses writes, as the check refused the store. Only a check
// that reads the store again and finds it sound removes it (verify); the remedy is a store restored from an export or
// a backup, which does not carry it.
var damageBucket = []byte("mql.damaged")

// readDamage returns the verdict recorded in the file, or "".
func (b *bboltBackend) readDamage() (what string, err error) {
	err = b.guard(func() error {
		return b.db.View(func(tx *bolt.Tx) error {
			if bk := tx.Bucket(damageBucket); bk != nil {
				what = fmt.Sprintf("a check on %s found that %s", bk.Get([]byte("at")), bk.Get([]byte("what")))
			}
			return nil
		})
	})
	return what, err
}

// update runs fn in a bbolt write transaction outside the log's checkpoints, with none of the
// log's read transactions kept idle meanwhile (walkv.Store.Exclusive).
func (b *bboltBackend) update(fn func(tx *bolt.Tx) error) error {
	if b.wal == nil {
		return b.db.Update(fn)
	}
	return b.wal.Exclusive(func() error { return b.db.Update(fn) })
}

// recordDamage records a check's verdict in the file (damageBucket), so that every later Open
// refuses writes, and marks the store damaged now.
func (b *bboltBackend) recordDamage(what string) {
	if b.damage() == nil && b.db != nil {
		_ = b.guard(func() error {
			return b.update(func(tx *bolt.Tx) error {
				bk, err := tx.CreateBucketIfNotExists(damageBucket)
				if err != nil {
					return err
				}
				if err := bk.Put([]byte("at"), []byte(time.Now().UTC().Format(time.RFC3339))); err != nil {
					return err
				}
				return bk.Put([]byte("what"), []byte(what))
			})
		})
	}
	b.markDamaged(what)
}

// recordVerdict records, in a bbolt file, a check that found the store unsound in a way that
// Open does not see: Open reads one value, while the check decodes every record and compares
// every index entry with a replay, so damage to an entry (an index entry that no longer agrees
// with the records) passes Open and not the check. Writes on such a store would build on what
// is wrong, so from now on they are refused, as for a file whose records cannot be read.
// Problems that do not make writes unsafe (standings, authors) record nothing.
func recordVerdict(be backend, r *Report) {
	b, ok := be.(*bboltBackend)
	if !ok || r == nil {
		return
	}
	for _, p := range r.Problems {
		switch p.Kind {
		case ProblemStanding, ProblemAuthor, ProblemFile:
			continue
		}
		// damagedErr, which every refused write returns, adds what to do.
		b.recordDamage("its records are unsound (" + p.String() + ")")
		return
	}
	if b.recorded != "" {
		// An earlier check found the records unsound; they read and check now (the damage
		// was in the storage under the file, since repaired): the verdict goes, and writes
		// are allowed again.
		err := b.guard(func() error {
			return b.update(func(tx *bolt.Tx) error { return tx.DeleteBucket(damageBucket) })
		})
		if err == nil {
			b.recorded = ""
			b.mu.Lock()
			b.damaged = nil
			b.mu.Unlock()
		}
	}
}

// unreadable is what a check whose read of the records failed with err reports. On a bbolt
// file whose pages are sound (the check verified them just before) that is damage inside the
// data, which Open does not see (it reads one value): it is recorded in
// the file (damageBucket), the store is marked damaged, and the check reports it as a problem.
func unreadable(be backend, err error) (*Report, error) {
	b, ok := be.(*bboltBackend)
	if !ok || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, storageErr("reading the store", err)
	}
	what := err.Error()
	if len(what) > 300 {
		what = what[:300] + "…"
	}
	what = "its records cannot be read (" + what + ")"
	b.recordDamage(what)
	r := &Report{}
	r.Add(Problem{Kind: ProblemFile, Msg: what + "; mql refuses writes to this file from now on: restore the store from an export or a backup"})
	return r, nil
}
