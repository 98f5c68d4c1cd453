package walkv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// A log file: a 16-byte header (logMagic and the generation, little-endian), then records,
// each a 4-byte length and a 4-byte CRC-32C (Castagnoli) of its payload, little-endian, then
// the payload: entries, each a kind byte (opPut, opDelete), the key (its bucket's byte first)
// as a uvarint length and bytes, and for a put the value likewise. A length of 0 ends the log:
// the file is written full of zeros ahead of the records (logChunk at a time), so that the
// sync of a commit writes its data blocks and nothing of the file's metadata.
const (
	logMagic  = "mql-wal\x01"
	logHeader = 16
	recHeader = 8
	logChunk  = 1 << 20
	opPut     = 1
	opDelete  = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type op struct {
	k, v []byte
	del  bool
}

func appendOp(b []byte, o op) []byte {
	if o.del {
		b = append(b, opDelete)
		b = binary.AppendUvarint(b, uint64(len(o.k)))
		return append(b, o.k...)
	}
	b = append(b, opPut)
	b = binary.AppendUvarint(b, uint64(len(o.k)))
	b = append(b, o.k...)
	b = binary.AppendUvarint(b, uint64(len(o.v)))
	return append(b, o.v...)
}

// decodeOps calls fn with each entry of a record's payload.
func decodeOps(p []byte, fn func(op)) error {
	for len(p) > 0 {
		kind := p[0]
		p = p[1:]
		if kind != opPut && kind != opDelete {
			return fmt.Errorf("an entry of kind %d", kind)
		}
		n, w := binary.Uvarint(p)
		if w <= 0 || n == 0 || n > uint64(len(p)-w) {
			return errors.New("an entry's key overruns its record")
		}
		k := p[w : w+int(n)]
		p = p[w+int(n):]
		if kind == opDelete {
			fn(op{k: k, del: true})
			continue
		}
		n, w = binary.Uvarint(p)
		if w <= 0 || n > uint64(len(p)-w) {
			return errors.New("an entry's value overruns its record")
		}
		v := p[w : w+int(n)]
		p = p[w+int(n):]
		fn(op{k: k, v: v})
	}
	return nil
}

// logFile is one generation of the log.
type logFile struct {
	path string
	gen  uint64
	f    *os.File // nil for a file found at Open, which is only replayed and removed
	off  int64    // where the next record goes
	size int64    // bytes written ahead (zeros), from which off may grow without a new write
	sync bool
	// broken is why the file can no longer be appended to: a write or a sync failed and what
	// the file holds past off is unknown. Reopening the store replays what it holds.
	broken error
}

func logName(path string, gen uint64) string { return path + "-log-" + strconv.FormatUint(gen, 10) }

// findLogs returns the log files beside path, oldest generation first.
func findLogs(path string) ([]*logFile, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %w", ErrLog, err)
	}
	var out []*logFile
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), base+"-log-")
		if !ok {
			continue
		}
		gen, err := strconv.ParseUint(rest, 10, 64)
		if err != nil || gen == 0 || strconv.FormatUint(gen, 10) != rest {
			continue
		}
		out = append(out, &logFile{path: filepath.Join(dir, e.Name()), gen: gen})
	}
	slices.SortFunc(out, func(a, b *logFile) int { return int(a.gen - b.gen) })
	return out, nil
}

// replay calls fn with every entry the file's whole records hold, in order. A record cut short
// or failing its CRC ends the log (a commit that was being written when the process or machine
// stopped, never acknowledged), unless a whole record follows it: then the file is damaged.
func (l *logFile) replay(fn func(op)) error {
	data, err := os.ReadFile(l.path)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrLog, l.path, err)
	}
	damaged := func(format string, a ...any) error {
		return fmt.Errorf("%w %s is damaged: %s", ErrLog, l.path, fmt.Sprintf(format, a...))
	}
	if len(data) < logHeader || string(data[:8]) != logMagic {
		if allZero(data) {
			return nil // created, and the machine stopped before its header was on disk
		}
		return damaged("it does not start with the log's header")
	}
	if g := binary.LittleEndian.Uint64(data[8:16]); g != l.gen {
		return damaged("its header says generation %d", g)
	}
	off := logHeader
	for off+recHeader <= len(data) {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if n == 0 {
			return nil
		}
		sum := binary.LittleEndian.Uint32(data[off+4:])
		end := off + recHeader + n
		if n < 0 || end > len(data) || crc32.Checksum(data[off+recHeader:end], castagnoli) != sum {
			if end > off && end+recHeader <= len(data) && wholeRecord(data[end:]) {
				return damaged("the record at byte %d fails its CRC, and a whole record follows it", off)
			}
			return nil // a torn last record: never acknowledged
		}
		if err := decodeOps(data[off+recHeader:end], fn); err != nil {
			return damaged("the record at byte %d: %v", off, err)
		}
		off = end
	}
	return nil
}

func wholeRecord(b []byte) bool {
	n := int(binary.LittleEndian.Uint32(b))
	if n == 0 || recHeader+n > len(b) {
		return false
	}
	return crc32.Checksum(b[recHeader:recHeader+n], castagnoli) == binary.LittleEndian.Uint32(b[4:])
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// createLog creates generation gen's file, its header and first chunk of zeros on disk, and
// its name in its directory.
func createLog(path string, gen uint64, sync bool) (*logFile, error) {
	name := logName(path, gen)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrLog, err)
	}
	l := &logFile{path: name, gen: gen, f: f, off: logHeader, sync: sync}
	fail := func(err error) (*logFile, error) {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("%w %s: %w", ErrLog, name, err)
	}
	var h [logHeader]byte
	copy(h[:], logMagic)
	binary.LittleEndian.PutUint64(h[8:], gen)
	if _, err := f.WriteAt(h[:], 0); err != nil {
		return fail(err)
	}
	l.size = logHeader
	if err := l.grow(logHeader + logChunk); err != nil {
		return fail(err)
	}
	if sync {
		if err := syncDir(filepath.Dir(name)); err != nil {
			return fail(err)
		}
	}
	return l, nil
}

// grow writes zeros to the file up to at least size and syncs them.
func (l *logFile) grow(size int64) error {
	if size <= l.size {
		return nil
	}
	size = (size + logChunk - 1) / logChunk * logChunk
	zeros := make([]byte, 1<<20)
	for at := l.size; at < size; at += int64(len(zeros)) {
		if _, err := l.f.WriteAt(zeros[:min(int64(len(zeros)), size-at)], at); err != nil {
			// Give back what was written: a disk with no room left should keep none of it.
			l.f.Truncate(l.size)
			return err
		}
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			l.f.Truncate(l.size)
			return err
		}
	}
	l.size = size
	return nil
}

// appendRecord writes one record, whose payload is rec[recHeader:], and syncs it: when it
// returns nil, the record is on disk. It writes the record's header into rec[:recHeader].
func (l *logFile) appendRecord(rec []byte) error {
	if l.broken != nil {
		return l.broken
	}
	payload := rec[recHeader:]
	binary.LittleEndian.PutUint32(rec, uint32(len(payload)))
	binary.LittleEndian.PutUint32(rec[4:], crc32.Checksum(payload, castagnoli))
	// Room for the record and the next one's length (zeros end the log).
	if err := l.grow(l.off + int64(len(rec)) + recHeader); err != nil {
		return fmt.Errorf("%w %s: no room for the commit (nothing of it was written): %w", ErrLog, l.path, err)
	}
	if _, err := l.f.WriteAt(rec, l.off); err != nil {
		// Zeros over what may have been written: the commit was refused, and must not be
		// replayed.
		if _, zerr := l.f.WriteAt(make([]byte, len(rec)), l.off); zerr != nil || (l.sync && l.f.Sync() != nil) {
			l.broken = fmt.Errorf("%w %s could not be written, nor the failed commit undone; reopen the store: %w", ErrLog, l.path, err)
			return l.broken
		}
		return fmt.Errorf("%w %s: the commit could not be written (nothing of it is kept): %w", ErrLog, l.path, err)
	}
	if l.sync {
		if err := fdatasync(l.f); err != nil {
			// After a failed sync the kernel may have dropped the pages: whether the record is
			// on disk is unknown until the file is read again.
			l.broken = fmt.Errorf("%w %s could not be synced; the commit may or may not be kept: reopen the store: %w", ErrLog, l.path, err)
			return l.broken
		}
	}
	l.off += int64(len(rec))
	return nil
}

func (l *logFile) close() {
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

// remove closes and deletes the file.
func (l *logFile) remove() error {
	l.close()
	if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", ErrLog, err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
