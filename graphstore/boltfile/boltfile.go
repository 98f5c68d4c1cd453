// Package boltfile reads a bbolt file with its own bounds-checked code before bbolt maps it.
package boltfile

// The bbolt file, read with our own bounds-checked code before bbolt maps it.
//
// bbolt trusts its file: it maps it into memory and follows page ids and element offsets
// without checking them, so a damaged file makes it panic (an assertion, an invalid freelist)
// or fault (a page beyond the end of a truncated file is a SIGBUS; an offset into nowhere a
// SIGSEGV). Inspect reads what bbolt reads first when it opens a file — the two meta pages
// and the freelist — with ReadAt and checks it, so that a file bbolt would crash on is refused
// with ErrDamaged before it is mapped. Walk reads every page in use the same way and checks
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
)

const (
	magic        = 0xED0CDAED
	version      = 2
	HeaderSize   = 16
	elemSize     = 16
	metaSize     = 64
	branchPage   = 0x01
	leafPage     = 0x02
	freelistPage = 0x10
	bucketLeaf   = 0x01
	noFreelist   = math.MaxUint64
	// bbolt looks for the second meta page at 1 KiB << 0..14 when the first is unreadable.
	minPageSize = 1 << 10
	maxPageSize = 1 << 24
)

// ErrDamaged is returned when a store's file is damaged: Inspect refuses a file that bbolt
// would crash on.
var ErrDamaged = errors.New("store file is damaged")

// Order is the byte order bbolt writes its pages in: the machine's.
var Order = binary.NativeEndian

// Meta is one decoded meta page.
type Meta struct {
	Page     int // 0 or 1
	PageSize uint32
	Root     uint64 // the root bucket's page
	Freelist uint64 // the freelist's page
	HWM      uint64 // pages 0..HWM-1 are in use or free
	TxID     uint64
	Err      error // why it does not validate, or nil
}

// ParseMeta decodes meta page number page (0 or 1) from b, its header included.
func ParseMeta(b []byte, page int) Meta {
	m := Meta{Page: page}
	if len(b) < HeaderSize+metaSize {
		m.Err = errors.New("it lies beyond the end of the file")
		return m
	}
	d := b[HeaderSize:]
	m.PageSize = Order.Uint32(d[8:])
	m.Root = Order.Uint64(d[16:])
	m.Freelist = Order.Uint64(d[32:])
	m.HWM = Order.Uint64(d[40:])
	m.TxID = Order.Uint64(d[48:])
	h := fnv.New64a()
	h.Write(d[:56])
	switch {
	case Order.Uint32(d[0:]) != magic:
		m.Err = errors.New("it is not a bbolt meta page (wrong magic number)")
	case Order.Uint32(d[4:]) != version:
		m.Err = fmt.Errorf("it has format version %d, not %d", Order.Uint32(d[4:]), version)
	case Order.Uint64(d[56:]) != h.Sum64():
		m.Err = errors.New("its checksum does not match")
	}
	return m
}

// Layout is what Inspect found: the file's geometry, the meta bbolt will use, and the
// free pages. Problems are damage that does not stop bbolt from opening the file safely.
type Layout struct {
	Size     int64
	PageSize int
	Meta     Meta     // the one bbolt uses: the valid one with the higher transaction id
	Free     []uint64 // sorted
	Problems []string
}

// Inspect checks what bbolt relies on before it maps a file of size bytes. An error means
// bbolt must not open it (it would crash, or read past the end); it wraps ErrDamaged. An
// empty file is no store yet (bbolt initialises it), and is not inspected.
func Inspect(r io.ReaderAt, size int64) (*Layout, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrDamaged}, args...)...)
	}
	var first [HeaderSize + metaSize]byte
	n, _ := r.ReadAt(first[:], 0)
	m0 := ParseMeta(first[:n], 0)
	// bbolt takes the page size from the first meta page, or else from the first valid meta
	// page found at 1 KiB << i, as we do.
	var m1 Meta
	switch {
	case m0.Err == nil && validPageSize(m0.PageSize):
		m1 = ReadMeta(r, int64(m0.PageSize))
	default:
		m1 = Meta{Page: 1, Err: errors.New("no valid meta page follows the first")}
		for ps := int64(minPageSize); ps <= maxPageSize && ps < size; ps <<= 1 {
			if m := ReadMeta(r, ps); m.Err == nil && int64(m.PageSize) == ps {
				m1 = m
				break
			}
		}
	}
	if m0.Err == nil && !validPageSize(m0.PageSize) {
		m0.Err = fmt.Errorf("its page size %d is not a power of two between 1 KiB and 16 MiB", m0.PageSize)
	}
	if m1.Err == nil && !validPageSize(m1.PageSize) {
		m1.Err = fmt.Errorf("its page size %d is not a power of two between 1 KiB and 16 MiB", m1.PageSize)
	}
	l := &Layout{Size: size}
	switch {
	case m0.Err != nil && m1.Err != nil:
		return nil, bad("neither meta page is valid (page 0: %v; page 1: %v)", m0.Err, m1.Err)
	case m0.Err != nil:
		l.Meta = m1
		l.Problems = append(l.Problems, fmt.Sprintf("meta page 0 is not valid: %v; bbolt uses meta page 1 (transaction %d), so the last write before the damage may be lost", m0.Err, m1.TxID))
	case m1.Err != nil:
		l.Meta = m0
		l.Problems = append(l.Problems, fmt.Sprintf("meta page 1 is not valid: %v; bbolt uses meta page 0 (transaction %d), so the last write before the damage may be lost", m1.Err, m0.TxID))
	default:
		l.Meta = m0
		if m1.TxID > m0.TxID {
			l.Meta = m1
		}
		if m0.PageSize != m1.PageSize {
			l.Problems = append(l.Problems, fmt.Sprintf("the meta pages disagree on the page size (%d and %d)", m0.PageSize, m1.PageSize))
		}
	}
	for _, m := range []Meta{m0, m1} {
		// bbolt writes transaction t's meta on page t%2: a meta on the wrong page means the
		// pages were moved, and the next commit would overwrite the newest meta.
		if m.Err == nil && int(m.TxID%2) != m.Page {
			l.Problems = append(l.Problems, fmt.Sprintf("meta page %d holds transaction %d, which belongs on page %d", m.Page, m.TxID, m.TxID%2))
		}
	}
	m := l.Meta
	ps := int64(m.PageSize)
	l.PageSize = int(ps)
	switch {
	case size < 2*ps:
		return nil, bad("the file is %d bytes, less than its two meta pages of %d bytes", size, ps)
	case m.HWM < 4 || m.HWM > uint64(size)/uint64(ps):
		// A file shorter than its pages in use was truncated: bbolt would fault reading them.
		return nil, bad("the file is %d bytes, but its meta page says %d pages of %d bytes (%d bytes) are in use: it was truncated or the meta page is wrong", size, m.HWM, ps, m.HWM*uint64(ps))
	case m.Root < 2 || m.Root >= m.HWM:
		return nil, bad("the root bucket's page %d lies outside pages 2..%d", m.Root, m.HWM-1)
	case m.Freelist == noFreelist:
		// bbolt rebuilds a freelist that was not written by scanning every page at open;
		// mql never writes a file that way.
		return nil, bad("the file records no freelist (mql always writes one)")
	case m.Freelist < 2 || m.Freelist >= m.HWM:
		return nil, bad("the freelist's page %d lies outside pages 2..%d", m.Freelist, m.HWM-1)
	}
	free, err := readFreelist(r, m, ps)
	if err != nil {
		return nil, bad("the freelist (page %d): %v", m.Freelist, err)
	}
	l.Free = free
	return l, nil
}

// HasMagic reports whether a meta page where bbolt looks for one (at 0, or at 1 KiB << i
// for the second) carries bbolt's magic number: a file without any is not a damaged bbolt
// file but another kind of file.
func HasMagic(r io.ReaderAt, size int64) bool {
	var b [HeaderSize + 4]byte
	for off := int64(0); off < size; off = max(off<<1, minPageSize) {
		if n, _ := r.ReadAt(b[:], off); n == len(b) && Order.Uint32(b[HeaderSize:]) == magic {
			return true
		}
		if off >= maxPageSize {
			break
		}
	}
	return false
}

func validPageSize(ps uint32) bool {
	return ps >= minPageSize && ps <= maxPageSize && bits.OnesCount32(ps) == 1
}

// ReadMeta reads and decodes the meta page at offset off as the second one.
func ReadMeta(r io.ReaderAt, off int64) Meta {
	var b [HeaderSize + metaSize]byte
	n, _ := r.ReadAt(b[:], off)
	return ParseMeta(b[:n], 1)
}

// readPage reads page id and its overflow pages into buf (grown as needed), checking that
// they lie below the high-water mark and that the page knows its own id.
func readPage(r io.ReaderAt, id, hwm uint64, ps int64, buf []byte) ([]byte, error) {
	if id >= hwm {
		return nil, fmt.Errorf("page %d is beyond the pages in use (%d)", id, hwm)
	}
	buf = slices.Grow(buf[:0], int(ps))[:ps]
	if _, err := r.ReadAt(buf, int64(id)*ps); err != nil {
		return nil, fmt.Errorf("page %d cannot be read: %v", id, err)
	}
	if got := Order.Uint64(buf[0:]); got != id {
		return nil, fmt.Errorf("page %d says it is page %d", id, got)
	}
	over := uint64(Order.Uint32(buf[12:]))
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

func readFreelist(r io.ReaderAt, m Meta, ps int64) ([]uint64, error) {
	p, err := readPage(r, m.Freelist, m.HWM, ps, nil)
	if err != nil {
		return nil, err
	}
	if flags := Order.Uint16(p[8:]); flags != freelistPage {
		return nil, fmt.Errorf("it is not a freelist page (flags %#x)", flags)
	}
	count, at := uint64(Order.Uint16(p[10:])), uint64(HeaderSize)
	if count == 0xFFFF {
		count, at = Order.Uint64(p[HeaderSize:]), HeaderSize+8
	}
	if count > (uint64(len(p))-at)/8 {
		return nil, fmt.Errorf("it lists %d pages, more than it can hold", count)
	}
	free := make([]uint64, count)
	for i := range free {
		id := Order.Uint64(p[at+uint64(i)*8:])
		switch {
		case id < 2 || id >= m.HWM:
			return nil, fmt.Errorf("it lists page %d, outside pages 2..%d", id, m.HWM-1)
		case i > 0 && id <= free[i-1]:
			return nil, fmt.Errorf("it lists page %d after page %d (out of order, or twice)", id, free[i-1])
		}
		free[i] = id
	}
	return free, nil
}

// maxFileProblems bounds what Walk reports: past a few dozen, more lines say nothing new.
const maxFileProblems = 50

// Walk reads every page reachable from the root bucket and checks it: within the pages in
// use, knowing its own id, a branch or leaf page whose elements, keys and values lie inside it,
// keys in order within the page and within the range its parent gives it, reached once, not
// free; bucket values well formed, inline buckets included. Finally every page in use must be
// reachable or free. It returns what is wrong (at most maxFileProblems lines).
func Walk(ctx context.Context, r io.ReaderAt, l *Layout) []string {
	w := &walk{r: r, hwm: l.Meta.HWM, ps: int64(l.PageSize),
		seen: make([]uint64, (l.Meta.HWM+63)/64), free: make([]uint64, (l.Meta.HWM+63)/64)}
	for _, id := range l.Free {
		w.free[id/64] |= 1 << (id % 64)
	}
	w.mark(0, 0, "meta")
	w.mark(1, 0, "meta")
	if p, err := readPage(r, l.Meta.Freelist, w.hwm, w.ps, nil); err == nil {
		w.mark(l.Meta.Freelist, uint64(Order.Uint32(p[12:])), "the freelist")
	}
	w.stack = append(w.stack, step{id: l.Meta.Root, from: "the root bucket"})
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

type step struct {
	id       uint64
	min, max []byte // keys of this subtree lie in [min, max); nil: unbounded
	from     string // what refers to the page, for messages
}

type walk struct {
	r        io.ReaderAt
	hwm      uint64
	ps       int64
	seen     []uint64 // bitset of reachable pages
	free     []uint64 // bitset of free pages
	stack    []step
	problems []string
	buf      []byte // the page being checked, reused: nothing refers into it once checked
}

func (w *walk) add(format string, args ...any) {
	if len(w.problems) < maxFileProblems {
		w.problems = append(w.problems, fmt.Sprintf(format, args...))
	}
}

// mark records pages id..id+over as reached from what; it reports false if one already was.
func (w *walk) mark(id, over uint64, what string) bool {
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

func (w *walk) visit(v step) {
	if v.id < 2 {
		w.add("%s refers to page %d, a meta page", v.from, v.id)
		return
	}
	p, err := readPage(w.r, v.id, w.hwm, w.ps, w.buf)
	if err != nil {
		w.add("%s: %v", v.from, err)
		return
	}
	w.buf = p
	if !w.mark(v.id, uint64(Order.Uint32(p[12:])), v.from) {
		return // never walk a page twice: a cycle would never end
	}
	w.page(p, v, fmt.Sprintf("page %d", v.id))
}

// page checks one branch or leaf page (a page of the file, or an inline bucket's page inside a
// value) and queues what it refers to.
func (w *walk) page(p []byte, v step, name string) {
	flags, count := Order.Uint16(p[8:]), int(Order.Uint16(p[10:]))
	if HeaderSize+count*elemSize > len(p) {
		w.add("%s holds %d elements, more than fit in it", name, count)
		return
	}
	// elem returns the key (and value) of element i, or false if they lie outside the page.
	elem := func(i int) (e []byte, key, val []byte, ok bool) {
		at := HeaderSize + i*elemSize
		e = p[at : at+elemSize]
		pos, ksize := uint64(Order.Uint32(e[4:])), uint64(Order.Uint32(e[8:]))
		vsize := uint64(0)
		if flags == branchPage {
			pos, ksize = uint64(Order.Uint32(e[0:])), uint64(Order.Uint32(e[4:]))
		} else {
			vsize = uint64(Order.Uint32(e[12:]))
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
	case branchPage:
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
			keys[i], kids[i] = bytes.Clone(key), Order.Uint64(e[8:])
		}
		// Children are queued in reverse so that the walk goes left to right.
		for i := count - 1; i >= 0; i-- {
			c := step{id: kids[i], min: keys[i], max: v.max, from: name}
			if i+1 < count {
				c.max = keys[i+1]
			}
			w.stack = append(w.stack, c)
		}
	case leafPage:
		for i := range count {
			e, key, val, ok := elem(i)
			if !ok || !inOrder(i, key) {
				return
			}
			switch f := Order.Uint32(e[0:]); f {
			case 0:
			case bucketLeaf:
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
func (w *walk) bucket(val []byte, name string) {
	if len(val) < 16 {
		w.add("%s: its value is %d bytes, too short for a bucket", name, len(val))
		return
	}
	root := Order.Uint64(val[0:])
	if root != 0 {
		w.stack = append(w.stack, step{id: root, from: name})
		return
	}
	inline := val[16:]
	if len(inline) < HeaderSize {
		w.add("%s: its inline page is cut short", name)
		return
	}
	if flags := Order.Uint16(inline[8:]); flags != leafPage {
		w.add("%s: its inline page is not a leaf page (flags %#x)", name, flags)
		return
	}
	w.page(inline, step{from: name}, name+" (inline)")
}
