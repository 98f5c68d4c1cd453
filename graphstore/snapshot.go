package graphstore

// The snapshot: decoded transactions cached beside the quads so that opening a store does not
// have to scan every quad through Cayley (a 100k-claim bbolt store took ~54 s to scan; reading
// the same transactions from one bucket takes a small fraction of that).
//
// The quads stay the source of truth. The snapshot is a prefix of the history, written in
// chunks of consecutive transactions after they are committed, never before; Open loads it,
// checks it against the quads (the genesis and the snapshot's last transaction must re-encode
// to exactly the stored quads), then loads every transaction after it from the quads, one by
// one, through the transaction nodes. Anything that does not check out — a format from another
// version, a gap, an undecodable chunk, a mismatch — is thrown away and the store is scanned
// as before, after which the snapshot is rewritten whole.

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// snapshotter is a backend that keeps a snapshot (bbolt: a bucket of the same file;
// PostgreSQL: the transaction log, pglog.go).
type snapshotter interface {
	// eachSnapshotChunk calls fn with every chunk of the snapshot, in order (none when there is
	// no snapshot). fn may keep the bytes.
	eachSnapshotChunk(ctx context.Context, fn func(chunk []byte) error) error
	// resetSnapshot removes every chunk.
	resetSnapshot(ctx context.Context) error
	// txNodeQuads returns the quads whose subject is transaction id's node, labelled with it.
	txNodeQuads(ctx context.Context, id record.TxID) ([]quad.Quad, error)
}

// snapshotAppender is a snapshotter whose snapshot the Store writes after commits (bbolt). The
// PostgreSQL log is written by the commits themselves.
type snapshotAppender interface {
	snapshotter
	// appendSnapshot stores chunks after the others, durably, all or none.
	appendSnapshot(ctx context.Context, chunks []snapshotChunk) error
}

// Flush thresholds: a chunk is written once this many transactions or claims have been
// committed since the last one, so that a crash leaves at most that much to load from the quads
// at the next open, and a chunk write (one more bbolt commit) is rare next to the writes it
// covers. Close writes whatever is left.
const (
	snapshotEveryTxs    = 1024
	snapshotEveryClaims = 20000
)

// snapshotFormat changes whenever the chunk layout changes; the record types' shape is
// checked separately (recordShape), so adding a field to Claim invalidates old snapshots by
// itself instead of silently dropping the field.
const snapshotFormat = 2

var snapshotMagic = []byte("mql-snapshot")

// recordShape fingerprints the field names and types of Tx and everything it holds. gob
// matches fields by name and ignores the ones it does not know, so a snapshot written before a
// record type changed could otherwise decode "successfully" with data missing.
var recordShape = func() uint64 {
	h := fnv.New64a()
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		fmt.Fprintf(h, "%s;", shapeName(t))
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice:
			walk(t.Elem())
		case reflect.Struct:
			if seen[t] {
				return
			}
			seen[t] = true
			for i := range t.NumField() {
				f := t.Field(i)
				fmt.Fprintf(h, "%s:", f.Name)
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeFor[record.Tx]())
	return h.Sum64()
}()

// shapeName is t's name in recordShape. The record types are named as when they lived in
// package graphstore, so that moving them to package record left the fingerprint, and with it
// every snapshot written before the move, valid.
func shapeName(t reflect.Type) string {
	switch {
	case t.Kind() == reflect.Pointer:
		return "*" + shapeName(t.Elem())
	case t.Kind() == reflect.Slice:
		return "[]" + shapeName(t.Elem())
	case t.PkgPath() == recordPkg:
		return "graphstore." + t.Name()
	}
	return t.String()
}

var recordPkg = reflect.TypeFor[record.Tx]().PkgPath()

// snapshotChunk is an encoded run of consecutive transactions starting at first.
type snapshotChunk struct {
	first record.TxID
	data  []byte
}

// encodeChunk encodes consecutive transactions as one chunk: a header (magic, format, record
// shape, count, checksum) and the transactions, gob-encoded in one stream so that type
// information is written once per chunk.
func encodeChunk(txs []*record.Tx) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(snapshotMagic)
	var hdr [chunkHeader]byte
	hdr[0] = snapshotFormat
	binary.BigEndian.PutUint64(hdr[1:], recordShape)
	binary.BigEndian.PutUint64(hdr[9:], uint64(len(txs)))
	buf.Write(hdr[:])
	enc := gob.NewEncoder(&buf)
	for _, tx := range txs {
		if err := enc.Encode(tx); err != nil {
			return nil, fmt.Errorf("encoding tx %d: %w", tx.ID, err)
		}
	}
	b := buf.Bytes()
	binary.BigEndian.PutUint32(b[len(snapshotMagic)+17:], crc32.Checksum(b[len(snapshotMagic)+chunkHeader:], castagnoli))
	return b, nil
}

// chunkHeader is the size of a chunk's header after the magic: format, record shape, count,
// and a CRC-32C of the rest. Open trusts a chunk whose ends match the quads, so a byte damaged
// in its middle would otherwise decode into a wrong index, silently.
const chunkHeader = 1 + 8 + 8 + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errStaleSnapshot = errors.New("the snapshot was written by another version of mql")

func decodeChunk(b []byte) ([]*record.Tx, error) {
	if !bytes.HasPrefix(b, snapshotMagic) || len(b) < len(snapshotMagic)+chunkHeader {
		return nil, errors.New("chunk has no snapshot header")
	}
	b = b[len(snapshotMagic):]
	if b[0] != snapshotFormat || binary.BigEndian.Uint64(b[1:]) != recordShape {
		return nil, errStaleSnapshot
	}
	if crc32.Checksum(b[chunkHeader:], castagnoli) != binary.BigEndian.Uint32(b[17:]) {
		return nil, errors.New("chunk does not match its checksum")
	}
	n := binary.BigEndian.Uint64(b[9:])
	r := bytes.NewReader(b[chunkHeader:])
	dec := gob.NewDecoder(r)
	txs := make([]*record.Tx, 0, min(n, 1<<16))
	in := newInterner()
	for range n {
		tx := new(record.Tx)
		if err := dec.Decode(tx); err != nil {
			return nil, fmt.Errorf("decoding a chunk: %w", err)
		}
		in.tx(tx)
		txs = append(txs, tx)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("chunk has %d bytes after its %d transactions", r.Len(), n)
	}
	return txs, nil
}

// interner makes the strings that repeat across records (subjects, predicates, principals,
// source ids, kinds) share one copy: gob allocates every string it decodes, and at a million
// claims the copies are most of the index's memory.
type interner map[string]string

func newInterner() interner { return interner{} }

func (in interner) s(p *string) {
	if *p == "" {
		return
	}
	if v, ok := in[*p]; ok {
		*p = v
		return
	}
	v := strings.Clone(*p)
	in[v] = v
	*p = v
}

func (in interner) claimID(c *record.ClaimID) {
	if c != nil {
		in.s(&c.Subject)
		in.s(&c.Predicate)
	}
}

func (in interner) tx(tx *record.Tx) {
	in.s(&tx.By)
	for _, c := range tx.Claims {
		in.claimID(&c.ID)
		in.s(&c.By)
		in.s((*string)(&c.Kind))
		in.s((*string)(&c.Value.Type))
		in.s(&c.Grant)
		for i := range c.Sources {
			in.s(&c.Sources[i])
		}
		for i := range c.SeenBy {
			in.s(&c.SeenBy[i])
		}
		in.claimID(c.Supersedes)
		in.claimID(c.Contests)
		in.claimID(c.Corroborates)
	}
	for _, a := range tx.Artifacts {
		in.s(&a.ID.Name)
		in.s(&a.By)
		for _, r := range a.DerivedFrom {
			in.claimID(r.Claim)
			if r.Artifact != nil {
				in.s(&r.Artifact.Name)
			}
		}
		for i := range a.SeenBy {
			in.s(&a.SeenBy[i])
		}
	}
	for _, r := range tx.Revocations {
		in.claimID(&r.Claim)
		in.s(&r.By)
		in.claimID(r.ReplacedBy)
	}
}

// loadSnapshot fills the index from the backend's snapshot, if it has one that checks out
// against the quads, and reports whether it did. Caller holds imu; the index is empty.
//
// The chunks are decoded on other goroutines while they are read, and the ends are checked
// against the quads while the transactions are indexed. (Indexing as the chunks arrive was
// tried too: it saved no time once the log was read in binary, which takes a small part of an
// open, and the index could no longer be sized up front.)
func (s *Store) loadSnapshot(ctx context.Context, sn snapshotter) (bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks, wait := decodeSnapshot(ctx, sn)
	var txs []*record.Tx
	bad := false
	for c := range chunks {
		d := <-c
		if bad {
			continue // the reader stops at the cancel
		}
		if d.err != nil {
			bad = true
			cancel()
			continue
		}
		txs = append(txs, d.txs...)
	}
	err := wait()
	if bad {
		return false, nil
	}
	if err != nil {
		return false, storageErr("reading the snapshot", err)
	}
	if len(txs) == 0 {
		return false, nil
	}
	genesis, head := s.matchAsync(ctx, sn, txs[0]), s.matchAsync(ctx, sn, txs[len(txs)-1])
	ends := func() []matchResult { return []matchResult{<-genesis, <-head} }
	distrust := func() {
		s.ix = index.New()
		s.chain = indexChain(s.ix)
	}
	s.ix.Reserve(txs)
	for _, tx := range txs {
		if err := s.index(tx); err != nil {
			ends()
			distrust()
			return false, nil
		}
	}
	// Indexed, the transactions run from 1 to the head without a gap: their ends are the
	// store's.
	for _, m := range ends() {
		if m.err != nil || !m.ok {
			distrust()
			return false, m.err
		}
	}
	s.snapHead, s.snapClaims = s.chain.Head(), 0
	return true, nil
}

type matchResult struct {
	ok  bool
	err error
}

// matchAsync runs matchesQuads on tx on a goroutine of its own.
func (s *Store) matchAsync(ctx context.Context, sn snapshotter, tx *record.Tx) chan matchResult {
	out := make(chan matchResult, 1)
	go func() {
		ok, err := s.matchesQuads(ctx, sn, tx)
		out <- matchResult{ok, err}
	}()
	return out
}

// decodedChunk is a chunk's transactions, or why it cannot be used.
type decodedChunk struct {
	txs []*record.Tx
	err error
}

// decodeSnapshot reads sn's chunks on a goroutine and decodes them on up to GOMAXPROCS others.
// The returned channel gives, in the snapshot's order, one channel per chunk on which its
// decoding arrives; it is closed after the last chunk or when ctx ends. wait returns the
// read's error once everything has stopped.
func decodeSnapshot(ctx context.Context, sn snapshotter) (chunks <-chan chan decodedChunk, wait func() error) {
	workers := max(1, runtime.GOMAXPROCS(0))
	order := make(chan chan decodedChunk, 2*workers) // bounds the chunks held in memory
	sem := make(chan struct{}, workers)
	var decoders sync.WaitGroup
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(order)
		readErr = sn.eachSnapshotChunk(ctx, func(data []byte) error {
			out := make(chan decodedChunk, 1)
			select {
			case order <- out:
			case <-ctx.Done():
				return ctx.Err()
			}
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out <- decodedChunk{err: ctx.Err()}
				return ctx.Err()
			}
			decoders.Add(1)
			go func() {
				defer decoders.Done()
				defer func() { <-sem }()
				txs, err := decodeChunk(data)
				out <- decodedChunk{txs, err}
			}()
			return nil
		})
		decoders.Wait()
	}()
	return order, func() error {
		<-done
		return readErr
	}
}

// txNodeMatcher is a snapshotter that compares a transaction node's quads with the ones given
// without reading them back value by value (PostgreSQL: by their hashes, in one query).
type txNodeMatcher interface {
	txNodeMatches(ctx context.Context, id record.TxID, want []quad.Quad) (bool, error)
}

// matchesQuads reports whether the transaction node of tx is exactly what the quads say: its
// time, principal and the node of every record it wrote. (Comparing every record's quads would
// cost a Cayley read per quad of a transaction that may hold thousands of claims.)
func (s *Store) matchesQuads(ctx context.Context, sn snapshotter, tx *record.Tx) (bool, error) {
	if tx == nil {
		return false, nil
	}
	all, err := codec.EncodeTx(tx)
	if err != nil {
		return false, nil
	}
	node := codec.TxIRI(tx.ID)
	var mine []quad.Quad
	for _, q := range all {
		if q.Subject == node {
			mine = append(mine, q)
		}
	}
	if m, ok := sn.(txNodeMatcher); ok {
		same, err := m.txNodeMatches(ctx, tx.ID, mine)
		if err != nil {
			return false, storageErr(fmt.Sprintf("loading tx %d", tx.ID), err)
		}
		return same, nil
	}
	stored, err := sn.txNodeQuads(ctx, tx.ID)
	if err != nil {
		return false, storageErr(fmt.Sprintf("loading tx %d", tx.ID), err)
	}
	return sameQuadSet(stored, mine), nil
}

func sameQuadSet(a, b []quad.Quad) bool {
	if len(a) != len(b) {
		return false
	}
	as := make([]string, len(a))
	bs := make([]string, len(b))
	for i := range a {
		// Cayley may hand back a literal in another Go type than the codec wrote it in.
		as[i], bs[i] = codec.CanonQuad(a[i]).NQuad(), codec.CanonQuad(b[i]).NQuad()
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

// saveSnapshot writes the committed transactions after the snapshot's head as one chunk when
// force is set or a threshold is passed. A failure only costs time at the next open (the
// quads hold everything), so it is not reported to the writer whose commit triggered it; the
// next flush retries. Caller holds imu.
func (s *Store) saveSnapshot(ctx context.Context, force bool) {
	sn, ok := s.be.(snapshotAppender)
	if !ok || s.snapBroken {
		return
	}
	s.ix.RLock()
	head := s.ix.Head()
	var txs []*record.Tx
	if head > s.snapHead {
		txs = slices.Clone(s.ix.Txs()[s.snapHead:head])
	}
	s.ix.RUnlock()
	if len(txs) == 0 {
		return
	}
	if !force && len(txs) < snapshotEveryTxs && s.snapClaims < snapshotEveryClaims {
		return
	}
	// Chunks stay small enough to encode and decode one at a time, whatever is pending.
	var chunks []snapshotChunk
	for len(txs) > 0 {
		n, claims := 0, 0
		for n < len(txs) && n < snapshotEveryTxs && claims < snapshotEveryClaims {
			claims += len(txs[n].Claims)
			n++
		}
		data, err := encodeChunk(txs[:n])
		if err != nil {
			return
		}
		chunks = append(chunks, snapshotChunk{first: txs[0].ID, data: data})
		txs = txs[n:]
	}
	if err := sn.appendSnapshot(ctx, chunks); err != nil {
		return
	}
	s.snapHead, s.snapClaims = head, 0
}

// rewriteSnapshot replaces the snapshot with one chunk of every committed transaction (after
// a scan found it missing or unusable). Caller holds imu.
func (s *Store) rewriteSnapshot(ctx context.Context) {
	if lg, ok := s.be.(txLog); ok {
		// A failure (the lock is busy) leaves the log to the next write, which rewrites it.
		lg.rebuildLog(ctx, s.chain.Head(), s.history)
		return
	}
	sn, ok := s.be.(snapshotAppender)
	if !ok {
		return
	}
	if err := sn.resetSnapshot(ctx); err != nil {
		return
	}
	s.snapHead = 0
	s.saveSnapshot(ctx, true)
}
