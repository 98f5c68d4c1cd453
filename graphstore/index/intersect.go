package index

import (
	"bytes"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/record"
)

// PredicateValue names the live claims of Predicate whose value equals Value: one list of the
// index of live claims by value.
type PredicateValue struct {
	Predicate string
	Value     record.Value
}

// EachLiveRefsWithValues walks the lists of conds side by side and calls fn, for each subject
// that has a live claim in every one of them, with those claims: refs[i] holds the subject's
// live claims of conds[i] that the viewer may see (one per audience), as EachLiveRefWithValue
// gives them. Subjects come in the order of their names, until fn returns false. Each list is
// stored in subject order, so the walk reads each list once and skips, by a seek, whatever
// lies between one list's subject and the next subject of another: a find of vendors in the EU
// with a SOC 2 report reads the two lists, not a key for every vendor of one of them.
//
// It reports whether it walked the lists. It cannot (and calls nothing) in a view older than
// the head, whose claims the index of live claims does not hold, or for a value long enough
// to be listed both whole and under its digest; EachLiveRefWithValue is then the way.
func (v *View) EachLiveRefsWithValues(conds []PredicateValue, fn func(refs [][]LiveRef) bool) bool {
	if !v.atHead() || len(conds) == 0 {
		return false
	}
	runs := make([]*liveRun, len(conds))
	for i, c := range conds {
		full, digest := livePrefixes(c.Predicate, c.Value)
		if full != nil && digest != nil {
			return false
		}
		r := &liveRun{v: v, predicate: c.Predicate}
		if full != nil {
			n := len(encoding.AppendName(nil, c.Predicate))
			r.prefix = full
			r.value = func(k []byte) (record.Value, []byte, error) { return encoding.ValueFromKey(k[n:]) }
		} else {
			val := c.Value
			r.prefix = digest
			r.value = func(k []byte) (record.Value, []byte, error) { return val, k[len(digest):], nil }
		}
		runs[i] = r
	}
	refs := make([][]LiveRef, len(conds))
	for {
		// The furthest subject any list has reached is the least the next match can be.
		target := ""
		for _, r := range runs {
			e := r.current()
			if e == nil {
				return true
			}
			target = max(target, e.ID.Subject)
		}
		all := true
		for _, r := range runs {
			e := r.seek(target)
			if e == nil {
				return true
			}
			all = all && e.ID.Subject == target
		}
		if !all {
			continue
		}
		for i, r := range runs {
			refs[i] = refs[i][:0]
			for e := r.current(); e != nil && e.ID.Subject == target; e = r.current() {
				refs[i] = append(refs[i], *e)
				r.i++
			}
		}
		if !fn(refs) {
			return true
		}
	}
}

// liveChunk is how many entries a liveRun reads a scan: enough that the scans' own cost (a
// descent of the tree, and of each layer of the log) is small beside the entries', few enough
// that a list walked in step with a much shorter one reads little past each match.
const liveChunk = 256

// liveRun reads one list of the index of live claims by value (predicate, value, then subject)
// a chunk at a time, so that several can be walked side by side by scans that call back.
type liveRun struct {
	v         *View
	predicate string
	prefix    []byte
	value     func(k []byte) (record.Value, []byte, error)
	buf       []LiveRef // the visible entries of the chunk read last
	i         int       // the next of buf
	next      []byte    // the key the next chunk starts at
	started   bool
	done      bool // no key after the chunk read last
	from      []byte
}

// fill reads the chunk that starts at from (nil: the list's first key).
func (r *liveRun) fill(from []byte) {
	r.buf, r.i, r.started = r.buf[:0], 0, true
	n := 0
	r.done = true
	r.v.ix.scan(bLive, r.prefix, kv.ScanOptions{From: from}, func(k, b []byte) bool {
		if n++; n > liveChunk {
			r.next, r.done = append(r.next[:0], k...), false
			return false
		}
		if l, ok := r.v.liveEntryRef(r.predicate, k, b, r.value); ok {
			r.buf = append(r.buf, l)
		}
		return true
	})
}

// current returns the entry the run is at, reading on as needed, or nil at the list's end.
func (r *liveRun) current() *LiveRef {
	if !r.started {
		r.fill(nil)
	}
	for r.i == len(r.buf) {
		if r.done {
			return nil
		}
		r.fill(r.next)
	}
	return &r.buf[r.i]
}

// seek moves the run to its first entry of subject or of a later one and returns it (nil at
// the list's end). Past the chunk in hand it scans again from subject's first possible key, so
// that a stretch of the list no other list shares is skipped rather than read.
func (r *liveRun) seek(subject string) *LiveRef {
	for {
		for r.i < len(r.buf) && r.buf[r.i].ID.Subject < subject {
			r.i++
		}
		if r.i < len(r.buf) || r.done && r.started {
			return r.current()
		}
		r.from = append(append(r.from[:0], r.prefix...), subject...)
		if r.started && bytes.Compare(r.from, r.next) < 0 {
			r.from = append(r.from[:0], r.next...)
		}
		r.fill(r.from)
	}
}
