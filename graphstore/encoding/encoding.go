// Package encoding is the compact binary form mql stores: the primitives every stored record
// and index entry is written with (varints, length-prefixed strings, typed values, times, and
// order-preserving unsigned integers for keys), and the format version. docs/FORMAT.md
// describes what is stored with them; package index lays the records out.
//
// Decoding never panics on bad bytes: a Dec remembers the first error, and every read after it
// returns zero values, so a caller decodes a whole record and checks Err once.
package encoding

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/mql-dev/mql/graphstore/record"
)

// Format names the layout a store is written in; a store records it at creation, and Open
// refuses any other (a store of an earlier key-value layout saying how to migrate it).
const Format = "mql-kv/3"

// The earlier key-value layouts. mql-kv/2 is mql-kv/1 with what a claim quotes from each of its
// sources added to its record (a flag that mql-kv/1 never sets); Format is mql-kv/2 with the
// text index (buckets text and textstats). A store of either lacks the text index, which only
// indexing every claim again gives, so it is not opened as it is: `mql migrate` copies it into
// a new store.
const (
	FormatKV1 = "mql-kv/1"
	FormatKV2 = "mql-kv/2"
)

// Earlier reports whether f names one of the earlier key-value layouts.
func Earlier(f string) bool { return f == FormatKV1 || f == FormatKV2 }

// ErrCorrupt is wrapped by every decoding error: the bytes are not what mql writes.
var ErrCorrupt = errors.New("corrupt record")

// Enc appends the encoding of values to a byte slice.
type Enc struct{ B []byte }

func (e *Enc) Byte(b byte)       { e.B = append(e.B, b) }
func (e *Enc) Uvarint(u uint64)  { e.B = binary.AppendUvarint(e.B, u) }
func (e *Enc) Varint(i int64)    { e.B = binary.AppendVarint(e.B, i) }
func (e *Enc) Bool(b bool)       { e.Byte(boolByte(b)) }
func (e *Enc) Float(f float64)   { e.B = binary.LittleEndian.AppendUint64(e.B, math.Float64bits(f)) }
func (e *Enc) Int(i int)         { e.Varint(int64(i)) }
func (e *Enc) Tx(id record.TxID) { e.Uvarint(uint64(id)) }

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// String writes s with its length.
func (e *Enc) String(s string) {
	e.Uvarint(uint64(len(s)))
	e.B = append(e.B, s...)
}

// Strings writes a list of strings with its length.
func (e *Enc) Strings(ss []string) {
	e.Uvarint(uint64(len(ss)))
	for _, s := range ss {
		e.String(s)
	}
}

// Time writes t as seconds and nanoseconds since the Unix epoch, UTC; the zero time is a
// single byte.
func (e *Enc) Time(t time.Time) {
	if t.IsZero() {
		e.Byte(0)
		return
	}
	e.Byte(1)
	e.Varint(t.Unix())
	e.Uvarint(uint64(t.Nanosecond()))
}

// Value writes a typed claim value.
func (e *Enc) Value(v record.Value) {
	switch v.Type {
	case record.String:
		e.Byte(1)
		e.String(v.Str)
	case record.Number:
		e.Byte(2)
		e.Float(v.Num)
	case record.Bool:
		e.Byte(3)
		e.Bool(v.Bool)
	case record.Time:
		e.Byte(4)
		e.Time(v.Time)
	case record.Ref:
		e.Byte(5)
		e.String(v.Str)
	default:
		e.Byte(0)
	}
}

// ValueKey appends the form of v under which values that compare equal (record.Value.Equal)
// are one key: a number's -0 is +0, a time is its instant.
func ValueKey(b []byte, v record.Value) []byte {
	e := Enc{B: b}
	switch v.Type {
	case record.Number:
		n := v.Num
		if n == 0 {
			n = 0
		}
		e.Byte(2)
		e.B = binary.BigEndian.AppendUint64(e.B, math.Float64bits(n))
	case record.Time:
		e.Byte(4)
		e.Varint(v.Time.Unix())
		e.Uvarint(uint64(v.Time.Nanosecond()))
	default:
		e.Value(v)
	}
	return e.B
}

// ValueDigestKey appends the form of v a key takes when ValueKey's would not fit in a key: type
// byte 8 and the SHA-256 of ValueKey(v) (equal values, equal digests; the value itself is read
// from its claim).
func ValueDigestKey(b []byte, v record.Value) []byte {
	sum := sha256.Sum256(ValueKey(nil, v))
	return append(append(b, 8), sum[:]...)
}

// ValueDigestLen is how long ValueDigestKey's part is.
const ValueDigestLen = 1 + sha256.Size

// Dec reads what an Enc wrote.
type Dec struct {
	B   []byte
	Err error
}

// NewDec reads b.
func NewDec(b []byte) *Dec { return &Dec{B: b} }

func (d *Dec) fail(what string) {
	if d.Err == nil {
		d.Err = fmt.Errorf("%w: %s", ErrCorrupt, what)
	}
	d.B = nil
}

// Done reports an error if bytes are left over.
func (d *Dec) Done() error {
	if d.Err == nil && len(d.B) > 0 {
		d.fail(fmt.Sprintf("%d bytes left over", len(d.B)))
	}
	return d.Err
}

func (d *Dec) Byte() byte {
	if len(d.B) < 1 {
		d.fail("truncated")
		return 0
	}
	b := d.B[0]
	d.B = d.B[1:]
	return b
}

func (d *Dec) Bool() bool {
	switch d.Byte() {
	case 0:
		return false
	case 1:
		return true
	}
	d.fail("bad bool")
	return false
}

func (d *Dec) Uvarint() uint64 {
	u, n := binary.Uvarint(d.B)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.B = d.B[n:]
	return u
}

func (d *Dec) Varint() int64 {
	i, n := binary.Varint(d.B)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.B = d.B[n:]
	return i
}

// Int reads an int written by Enc.Int.
func (d *Dec) Int() int {
	i := d.Varint()
	if i < math.MinInt32 || i > math.MaxInt32 {
		d.fail("int out of range")
		return 0
	}
	return int(i)
}

// Len reads a count of items that each take at least one byte, so that a corrupt count
// cannot make a caller allocate more than the record holds.
func (d *Dec) Len() int {
	u := d.Uvarint()
	if u > uint64(len(d.B)) {
		d.fail("count beyond the record")
		return 0
	}
	return int(u)
}

func (d *Dec) Tx() record.TxID {
	u := d.Uvarint()
	if u > math.MaxInt64 {
		d.fail("transaction id out of range")
		return 0
	}
	return record.TxID(u)
}

func (d *Dec) Float() float64 {
	if len(d.B) < 8 {
		d.fail("truncated")
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(d.B))
	d.B = d.B[8:]
	return f
}

// Raw reads n bytes (sharing d's buffer).
func (d *Dec) Raw(n int) []byte {
	if n < 0 || len(d.B) < n {
		d.fail("truncated")
		return nil
	}
	b := d.B[:n]
	d.B = d.B[n:]
	return b
}

func (d *Dec) String() string {
	n := d.Uvarint()
	if n > uint64(len(d.B)) {
		d.fail("string beyond the record")
		return ""
	}
	s := string(d.B[:n])
	d.B = d.B[n:]
	return s
}

func (d *Dec) Strings() []string {
	n := d.Len()
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = d.String()
	}
	return out
}

func (d *Dec) Time() time.Time {
	switch d.Byte() {
	case 0:
		return time.Time{}
	case 1:
		sec := d.Varint()
		ns := d.Uvarint()
		if ns >= 1e9 {
			d.fail("bad nanoseconds")
			return time.Time{}
		}
		return time.Unix(sec, int64(ns)).UTC()
	}
	d.fail("bad time")
	return time.Time{}
}

func (d *Dec) Value() record.Value {
	switch d.Byte() {
	case 1:
		return record.Value{Type: record.String, Str: d.String()}
	case 2:
		return record.Value{Type: record.Number, Num: d.Float()}
	case 3:
		return record.Value{Type: record.Bool, Bool: d.Bool()}
	case 4:
		return record.Value{Type: record.Time, Time: d.Time()}
	case 5:
		return record.Value{Type: record.Ref, Str: d.String()}
	case 0:
		return record.Value{}
	}
	d.fail("bad value type")
	return record.Value{}
}

// AppendUint appends u so that byte order is numeric order: its length in bytes (0 to 8), then
// its big-endian bytes without leading zeros. Keys are built from it.
func AppendUint(b []byte, u uint64) []byte {
	n := 0
	for x := u; x > 0; x >>= 8 {
		n++
	}
	b = append(b, byte(n))
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(u>>(8*i)))
	}
	return b
}

// Uint reads what AppendUint wrote at the start of b and returns the rest; ok is false if b
// does not start with one.
func Uint(b []byte) (u uint64, rest []byte, ok bool) {
	if len(b) < 1 || b[0] > 8 || len(b) < 1+int(b[0]) {
		return 0, b, false
	}
	n := int(b[0])
	if n > 0 && b[1] == 0 {
		return 0, b, false // not the shortest form
	}
	for i := 1; i <= n; i++ {
		u = u<<8 | uint64(b[i])
	}
	return u, b[1+n:], true
}

// AppendName appends a name (a subject, predicate, principal, artifact: never a NUL) and the
// NUL that ends it in a key.
func AppendName(b []byte, s string) []byte { return append(append(b, s...), 0) }

// Every non-empty stored value ends with the CRC-32C (Castagnoli) of what precedes it, so that
// damage inside a value (a flipped bit on disk, a stray write) is found when it is read, not
// served as data. Empty values (entries whose key is all they say) have none.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SealBytes is the length of the checksum Seal appends.
const SealBytes = 4

// Seal appends b's checksum to b.
func Seal(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Unseal returns b without its checksum, or an error wrapping ErrCorrupt if it does not match.
func Unseal(b []byte) ([]byte, error) {
	if len(b) == 0 {
		return b, nil
	}
	if len(b) <= SealBytes {
		return nil, fmt.Errorf("%w: a value of %d bytes is too short for its checksum", ErrCorrupt, len(b))
	}
	n := len(b) - SealBytes
	if binary.LittleEndian.Uint32(b[n:]) != crc32.Checksum(b[:n], castagnoli) {
		return nil, fmt.Errorf("%w: its checksum does not match", ErrCorrupt)
	}
	return b[:n], nil
}

// ValueFromKey reads a value ValueKey wrote at the start of b, and returns the rest of b. A
// number is read as ValueKey wrote it, so a −0 comes back as 0.
func ValueFromKey(b []byte) (record.Value, []byte, error) {
	d := NewDec(b)
	if len(b) > 0 && b[0] == 2 {
		d.Byte()
		raw := d.Raw(8)
		if d.Err != nil {
			return record.Value{}, nil, d.Err
		}
		return record.Value{Type: record.Number, Num: math.Float64frombits(binary.BigEndian.Uint64(raw))}, d.B, nil
	}
	if len(b) > 0 && b[0] == 4 {
		d.Byte()
		sec, ns := d.Varint(), d.Uvarint()
		if d.Err == nil && ns >= 1e9 {
			d.fail("bad nanoseconds")
		}
		if d.Err != nil {
			return record.Value{}, nil, d.Err
		}
		return record.Value{Type: record.Time, Time: time.Unix(sec, int64(ns)).UTC()}, d.B, nil
	}
	v := d.Value()
	return v, d.B, d.Err
}
