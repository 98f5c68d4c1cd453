package graphstore

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cayleygraph/quad"
	"github.com/jackc/pgx/v5"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/pgkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// mql on PostgreSQL: the kv buckets as tables (package pgkv), shared by any number of
// processes. Readers never lock; writers take turns on one advisory lock held by the SQL
// transaction that writes (pgkv), so that a writer that loses its session loses its write with
// it. Each commit also records which cache entries its transactions changed (mql_changes), so
// that the other processes drop them from their caches, and announces itself (NOTIFY
// mql_commit), so that they learn of it without polling. docs/RELIABILITY.md tells the rest.

// pgLockKey is the advisory lock that serialises mql writers on one PostgreSQL database
// (advisory locks are scoped to the database, so stores in other databases do not contend).
const pgLockKey = 0x6d716c5f77726974 // "mql_writ"

// Defaults of Options.WriteLockTimeout and Options.WriteIdleTimeout. The idle bound is the
// shorter, so that a writer stalled while it holds the lock loses it before the writers
// queued behind it give up: a stall delays them, it does not fail them.
const (
	defaultWriteLockTimeout = 10 * time.Second
	defaultWriteIdleTimeout = 5 * time.Second
)

// pgCommitChannel is the NOTIFY channel on which each write announces its last transaction.
const pgCommitChannel = "mql_commit"

// mql_changes holds, for each group commit, its transactions (first..tx) and the cache
// entries they changed (index.Index.Touched), with a random id that tells its writer, should
// its connection fail at the commit, that it committed. Rows older than pgChangesKept
// transactions are pruned: a process further behind empties its cache instead.
//
// keys lists every entry the transactions wrote, with its value when it is short (NULL: too
// many to list), for the entries other processes' write transactions keep across them
// (pgkv.Cache): a write brings its cache up to date from the rows it reads anyway.
const pgChangesSchema = `CREATE TABLE IF NOT EXISTS mql_changes (tx bigint PRIMARY KEY, first bigint NOT NULL, id bytea NOT NULL, touched bytea NOT NULL, keys bytea)`

const (
	pgChangesKept  = 100_000
	pgChangesAsked = 4096 // more rows than this behind: empty the cache rather than read them
	pgChangesHeld  = 4096 // rows a process keeps in memory
	pgWriteCache   = 16 << 20
	pgKeptValue    = 64 // the longest value a row of mql_changes holds
)

// The earlier format's tables (Cayley's quads and nodes, mql's log).
var pgOldTables = []string{"quads", "nodes", "mql_snapshot"}

var (
	pgMetaBucket = bucketNamed("meta")
	pgTxBucket   = bucketNamed("tx")
)

func bucketNamed(name string) kv.Bucket {
	for i, b := range index.Schema.Buckets {
		if b.Name == name {
			return kv.Bucket(i)
		}
	}
	panic("no bucket " + name)
}

// pgBackend is an mql store in a PostgreSQL database.
type pgBackend struct {
	shown       string // the DSN as given, password hidden, for messages
	kvs         *pgkv.Store
	lockTimeout time.Duration
	idleTimeout time.Duration
	ch          pgChanges
	// wc keeps entries across this process's write transactions; it is right for the state
	// after transaction wcHead (0: unknown). Both are used under the writer lock only.
	wc     *pgkv.Cache
	wcHead record.TxID
	token  string // names this process's announcements
	// requests: the store has mql_requests (requests_postgres.go), and this process may use
	// it; found out once (reqOnce), or set by the commit that creates the tables.
	requests atomic.Bool
	reqOnce  sync.Once
}

// openPostgres connects to dsn. A database without mql's tables gets them with the store's
// genesis, in the genesis's write transaction, unless opts.MustExist: then it is ErrNoStore,
// and nothing is created. A database of the earlier format is refused (ErrOldFormat).
func openPostgres(ctx context.Context, dsn string, opts Options) (backend, error) {
	b, err := openPG(ctx, dsn, opts, pgReadWrite)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// pgMode says how openPG opens a database.
type pgMode int

const (
	pgReadWrite pgMode = iota
	pgReadOnly         // every transaction read-only
	pgEarlier          // read-only, and a store of an earlier format too (ReadEarlier), without the tables of the text index
)

func openPG(ctx context.Context, dsn string, opts Options, mode pgMode) (*pgBackend, error) {
	b := &pgBackend{shown: RedactDSN(dsn), lockTimeout: opts.WriteLockTimeout, idleTimeout: opts.WriteIdleTimeout, wc: pgkv.NewCache(pgWriteCache)}
	if b.lockTimeout <= 0 {
		b.lockTimeout = defaultWriteLockTimeout
	}
	if b.idleTimeout <= 0 {
		b.idleTimeout = defaultWriteIdleTimeout
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w: %v", b.shown, ErrBadDSN, err)
	}
	var absent []kv.Bucket
	last := []pgkv.Entry{{Bucket: pgTxBucket}}
	if mode == pgEarlier {
		absent = index.TextBuckets
	} else {
		// Its newest entry is read by every write of a claim everyone sees: with the lock,
		// not in a round trip of its own while the lock is held.
		tb, prefix := index.PublicTextStats()
		last = append(last, pgkv.Entry{Bucket: tb, Key: prefix})
	}
	if mode != pgReadWrite {
		q := u.Query()
		q.Set("default_transaction_read_only", "on")
		u.RawQuery = q.Encode()
	}
	kvs, err := pgkv.Open(ctx, u.String(), index.Schema, pgkv.Options{
		LockKey:      pgLockKey,
		LockTimeout:  b.lockTimeout,
		IdleTimeout:  b.idleTimeout,
		Prefetch:     []pgkv.Entry{{Bucket: pgMetaBucket, Key: []byte("format")}, {Bucket: pgMetaBucket, Key: []byte("store")}},
		PrefetchLast: last,
		Begin:        b.begin,
		Cache:        b.wc,
		Create:       []string{pgChangesSchema, pgRequestsSchema},
		Absent:       absent,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if strings.Contains(err.Error(), "cannot parse") {
			return nil, fmt.Errorf("cannot open %s: %w: %v", b.shown, ErrBadDSN, err)
		}
		return nil, StorageFailure(fmt.Errorf("cannot connect to PostgreSQL at %s: %w", b.shown, err))
	}
	b.kvs = kvs
	var tok [6]byte
	rand.Read(tok[:])
	b.token = hex.EncodeToString(tok[:])
	if !kvs.Exists() {
		// One look at the catalog answers every question below.
		found, err := kvs.Found(ctx, append(slices.Clone(pgOldTables), kvs.Tables()...))
		if err != nil {
			kvs.Close()
			return nil, StorageFailure(fmt.Errorf("cannot read the tables of %s: %w", b.shown, err))
		}
		if found["quads"] && found["nodes"] || found["mql_snapshot"] {
			kvs.Close()
			return nil, fmt.Errorf("%s: %w: it was written by an earlier mql, as Cayley quads; convert it with `mql migrate %s NEW` (NEW a new file or an empty database: the new store is checked, and the old one left as it is)", b.shown, ErrOldFormat, b.shown)
		}
		// A store of an earlier format has every table but the text index's.
		if f, err := pgEarlierFormat(ctx, kvs, found); err != nil || f != "" {
			kvs.Close()
			if err != nil {
				return nil, StorageFailure(fmt.Errorf("cannot read the format of %s: %w", b.shown, err))
			}
			return nil, earlierFormatErr(b.shown, index.EarlierFormatError(f))
		}
		// Only a database without any of the tables is new: a store with a table dropped read
		// as none, and its next write wrote a genesis over the history in the others.
		if err := pgPartial(kvs, found, b.shown); err != nil {
			kvs.Close()
			return nil, err
		}
		if opts.MustExist {
			kvs.Close()
			return nil, errNoStore(nil, "the database %s holds no mql store (no mql tables)", b.shown)
		}
	}
	return b, nil
}

// pgPartial returns an error wrapping ErrDamaged if the database holds some of the store's
// tables but not all (found: which tables exist).
func pgPartial(kvs *pgkv.Store, found map[string]bool, shown string) error {
	tables := kvs.Tables()
	var lack []string
	for _, t := range tables {
		if !found[t] {
			lack = append(lack, t)
		}
	}
	if len(lack) == 0 || len(lack) == len(tables) {
		return nil
	}
	return fmt.Errorf("the database %s is damaged: it holds %d of the %d tables of an mql store, without %s (dropped?); nothing was written: restore the database from a backup, or the store from an export (`mql import`): %w",
		shown, len(tables)-len(lack), len(tables), strings.Join(lack, ", "), ErrDamaged)
}

// pgEarlierFormat returns the format a database without every table of this format is
// labelled with, if it is an earlier one (encoding.Earlier), and "" otherwise (found: which
// tables exist).
func pgEarlierFormat(ctx context.Context, kvs *pgkv.Store, found map[string]bool) (string, error) {
	meta := kvs.Tables()[pgMetaBucket]
	if !found[meta] {
		return "", nil
	}
	var f []byte
	err := kvs.Conn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, "SELECT v FROM "+meta+" WHERE k = $1", []byte("format")).Scan(&f)
	})
	if errors.Is(err, pgx.ErrNoRows) || err == nil && !encoding.Earlier(string(f)) {
		return "", nil
	}
	return string(f), err
}

func (b *pgBackend) kind() string    { return "postgres" }
func (b *pgBackend) name() string    { return b.shown }
func (b *pgBackend) shared() bool    { return true }
func (b *pgBackend) kv() kv.Store    { return pgKV{b} }
func (b *pgBackend) writable() error { return nil }

func (b *pgBackend) size(ctx context.Context) (int64, error) {
	tables := append(b.kvs.Tables(), "mql_changes", "mql_requests")
	var n int64
	err := b.kvs.Conn(ctx, func(c *pgx.Conn) error {
		// to_regclass: a table not created yet (the text index's in a store being made) is NULL.
		return c.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(to_regclass(t))), 0)::bigint FROM unnest($1::text[]) AS t`, tables).Scan(&n)
	})
	return n, err
}
func (b *pgBackend) guard(fn func() error) error { return fn() }
func (b *pgBackend) close() error                { return b.kvs.Close() }

// pgKV is the backend's kv store, whose Write says who holds the writer lock when it waited
// too long.
type pgKV struct{ b *pgBackend }

func (k pgKV) Read(ctx context.Context) (kv.ReadTx, error) { return k.b.kvs.Read(ctx) }
func (k pgKV) Close() error                                { return k.b.kvs.Close() }

func (k pgKV) Write(ctx context.Context) (kv.WriteTx, error) {
	wt, err := k.b.kvs.WriteWith(ctx, pgkv.WriteOptions{})
	if err != nil {
		return nil, k.b.writeErr(err)
	}
	return wt, nil
}

// writeErr is the error of a write that could not begin.
func (b *pgBackend) writeErr(err error) error {
	if errors.Is(err, pgkv.ErrLockTimeout) {
		return b.inUse()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return StorageFailure(fmt.Errorf("cannot take the writer lock on %s: %w", b.shown, err))
}

// inUse is the error of a writer that waited lockTimeout for the lock: it names the session
// holding it, as pg_stat_activity shows it, when it can.
func (b *pgBackend) inUse() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	holder := "another writer"
	if h, ok, err := b.kvs.LockHolder(ctx); err == nil && ok {
		app := h.Application
		if app == "" {
			app = "a session without application_name"
		}
		holder = fmt.Sprintf("%s (PostgreSQL backend %d), which has held the writer lock for %s", app, h.PID, h.Held.Round(100*time.Millisecond))
		if h.State != "" {
			holder += fmt.Sprintf(" and has been %s for %s", h.State, h.Idle.Round(100*time.Millisecond))
		}
	}
	return fmt.Errorf("%s is being written by %s; this write waited %s for it and gave up. Try again: a writer that stays idle while it holds the lock loses it after its idle timeout (%s by default) and its write is rolled back: %w",
		b.shown, holder, b.lockTimeout, defaultWriteIdleTimeout, ErrInUse)
}

// commitShared commits wt with the row of mql_changes saying what it changed, and the
// announcement of its head, in one round trip (pgkv.WriteTx.CommitWith).
func (b *pgBackend) commitShared(ctx context.Context, wt kv.WriteTx, head record.TxID, touched []string, rc reqCommit) error {
	pw, ok := wt.(*pgkv.WriteTx)
	if !ok {
		return fmt.Errorf("a PostgreSQL commit of a %T", wt)
	}
	if pw.Missing() {
		b.requests.Store(true) // this commit creates the tables, mql_requests among them
	}
	if head == 0 {
		// The outcomes of requests that were all refused: no transaction, no row of
		// mql_changes.
		if err := pw.CommitWith(ctx, pgkv.CommitOptions{Also: requestParts(rc), Synchronous: len(rc.ids) > 0}); err != nil {
			return b.commitErr(err)
		}
		return nil
	}
	first := lastTx(pw.Prefetched()) + 1
	var id [8]byte
	rand.Read(id[:])
	writes, listed := pw.Written(pgKeptValue)
	var keysEnc []byte // NULL when not listed
	if listed {
		keysEnc = encodeWrites(writes)
	}
	err := pw.CommitWith(ctx, pgkv.CommitOptions{
		// Other processes' requests built: the lock is released once their outcomes are
		// durable (requests.go).
		Synchronous: len(rc.ids) > 0,
		// The row goes into the statement that writes the buckets.
		Also: append([]pgkv.Part{func(p func(int) string) (string, []any) {
			return `INSERT INTO mql_changes (tx, first, id, touched, keys) VALUES (` + p(1) + `, ` + p(2) + `, ` + p(3) + `, ` + p(4) + `, ` + p(5) + `)
ON CONFLICT (tx) DO UPDATE SET first = EXCLUDED.first, id = EXCLUDED.id, touched = EXCLUDED.touched, keys = EXCLUDED.keys`,
				[]any{int64(head), int64(first), id[:], encodeTouched(touched), keysEnc}
		}}, requestParts(rc)...),
		Extra: func(bt *pgx.Batch) {
			if head%1024 == 0 && head > pgChangesKept {
				bt.Queue(`DELETE FROM mql_changes WHERE tx <= $1`, int64(head-pgChangesKept))
			}
			if head%1024 == 512 && b.requests.Load() {
				bt.Queue(pruneRequests)
			}
		},
		// Announced out of the lock, just before the commit that makes the write durable: a
		// process that hears of it reads through a snapshot, which waits for that flush.
		After: func(bt *pgx.Batch) {
			bt.Queue(`SELECT pg_notify($1, $2)`, pgCommitChannel, b.announcement(head))
		},
		Witness: func(ctx context.Context, c *pgx.Conn) (bool, error) {
			var ok bool
			err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM mql_changes WHERE tx = $1 AND id = $2)`, int64(head), id[:]).Scan(&ok)
			if pgkv.Code(err) == "42P01" { // no such table: the genesis did not commit
				return false, nil
			}
			return ok, err
		},
	})
	if err != nil {
		b.wcHead = 0 // pgkv emptied the cache
		return b.commitErr(err)
	}
	b.wcHead = head
	b.ch.add([]pgChange{{first: first, last: head, touched: touched, writes: writes, listed: listed}})
	return nil
}

// commitErr is the error of a commit that failed.
func (b *pgBackend) commitErr(err error) error {
	switch {
	case errors.Is(err, pgkv.ErrCommitUnknown):
		return fmt.Errorf("%w: the connection failed during the commit and PostgreSQL could not be asked whether it committed, so it may or may not have recorded the write; the next read or write loads it if it did: %w", errCommitUnknown, err)
	}
	return err
}

// lastTx is the last transaction a prefetched reader names (0: none).
func lastTx(pre kv.Reader) record.TxID {
	var id uint64
	pre.Scan(pgTxBucket, nil, kv.ScanOptions{Reverse: true}, func(k, _ []byte) (bool, error) {
		id, _, _ = encoding.Uint(k)
		return false, nil
	})
	return record.TxID(id)
}

// ---- what other processes changed ----------------------------------------------------------

// pgChange is one row of mql_changes.
type pgChange struct {
	first, last record.TxID
	touched     []string
	writes      []pgkv.Write // every entry written, if listed
	listed      bool
}

// pgChanges is what this process knows of mql_changes: rows covering every transaction in
// (from, to], and the newest head any of its snapshots or write transactions saw.
type pgChanges struct {
	mu       sync.Mutex
	rows     []pgChange
	from, to record.TxID
	seen     record.TxID
}

// add takes rows (in order) into what is known: a row that follows on extends it, a row after
// a gap replaces it.
func (c *pgChanges) add(rows []pgChange) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rows {
		switch {
		case c.to > 0 && r.last <= c.to:
			continue
		case c.to > 0 && r.first == c.to+1:
			c.rows = append(c.rows, r)
		default:
			c.rows, c.from = append(c.rows[:0], r), r.first-1
		}
		c.to = r.last
		c.seen = max(c.seen, r.last)
	}
	if n := len(c.rows) - pgChangesHeld; n > 0 {
		c.from = c.rows[n-1].last
		c.rows = append(c.rows[:0], c.rows[n:]...)
	}
}

func (c *pgChanges) saw(head record.TxID) {
	c.mu.Lock()
	c.seen = max(c.seen, head)
	if c.to == 0 && head > 0 {
		// Nothing known yet (the process's first snapshot, at Open): what changed after head
		// is what the rows after it tell, which the next snapshot or write reads in its first
		// round trip, rather than a snapshot of its own under the writer lock (learn, at the
		// first write, which waited for the WAL's flush behind other processes' requests).
		c.from, c.to = head, head
	}
	c.mu.Unlock()
}

// written returns every entry written by the transactions after `after` up to upTo, in
// order, when the rows held tell it.
func (c *pgChanges) written(after, upTo record.TxID) ([]pgkv.Write, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.to == 0 || c.to < upTo || after < c.from {
		return nil, false
	}
	i := len(c.rows)
	for i > 0 && c.rows[i-1].last > after {
		i--
		if !c.rows[i].listed {
			return nil, false
		}
	}
	var ws []pgkv.Write
	for _, r := range c.rows[i:] {
		ws = append(ws, r.writes...)
	}
	return ws, true
}

// known returns what changed after `after` when the rows held tell it.
func (c *pgChanges) known(after record.TxID) (head record.TxID, touched []string, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.to == 0 || c.to < c.seen || after < c.from {
		return 0, nil, false
	}
	for i := len(c.rows) - 1; i >= 0 && c.rows[i].last > after; i-- {
		touched = append(touched, c.rows[i].touched...)
	}
	return c.to, touched, true
}

const pgChangesQuery = `SELECT tx, first, touched, keys FROM mql_changes WHERE tx > $1 ORDER BY tx LIMIT $2`

func queueChanges(bt *pgx.Batch, after record.TxID, limit int, out *[]pgChange) {
	bt.Queue(pgChangesQuery, int64(after), limit).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var last, first int64
			var enc, keysEnc []byte
			if err := rows.Scan(&last, &first, &enc, &keysEnc); err != nil {
				return err
			}
			t, err := decodeTouched(enc)
			if err != nil {
				return fmt.Errorf("mql_changes, tx %d: %w", last, err)
			}
			c := pgChange{first: record.TxID(first), last: record.TxID(last), touched: t, listed: keysEnc != nil}
			if c.listed {
				if c.writes, err = decodeWrites(keysEnc); err != nil {
					return fmt.Errorf("mql_changes, tx %d: %w", last, err)
				}
			}
			*out = append(*out, c)
		}
		return rows.Err()
	})
}

// begin adds to the first round trip of every snapshot and write transaction the rows of
// mql_changes after the last one known, so that learning what another process changed costs
// no round trip of its own.
func (b *pgBackend) begin(bt *pgx.Batch, write bool) func(pre kv.Reader) {
	b.ch.mu.Lock()
	to := b.ch.to
	b.ch.mu.Unlock()
	var rows []pgChange
	if to > 0 {
		queueChanges(bt, to, 256, &rows)
	}
	return func(pre kv.Reader) {
		b.ch.add(rows)
		head := lastTx(pre)
		b.ch.saw(head)
		if write {
			b.syncWriteCache(head)
		}
	}
}

// syncWriteCache makes the write cache right for head, the state the write transaction
// begins on: it takes in what other processes wrote since (the value, or that the entry
// changed), or empties it when that is not known.
func (b *pgBackend) syncWriteCache(head record.TxID) {
	if b.wcHead == head {
		return
	}
	if b.wcHead > 0 && b.wcHead < head {
		if ws, ok := b.ch.written(b.wcHead, head); ok {
			b.wc.Apply(ws)
			b.wcHead = head
			return
		}
	}
	b.wc.Reset()
	b.wcHead = head
}

// changes returns the newest transaction known and the cache entries changed after `after`:
// from the rows known when they tell it, else from a snapshot of its own.
func (b *pgBackend) changes(ctx context.Context, after record.TxID) (record.TxID, []string, bool, error) {
	if head, touched, ok := b.ch.known(after); ok {
		return head, touched, true, nil
	}
	rt, err := b.kvs.Read(ctx)
	if err != nil {
		return 0, nil, false, err
	}
	defer rt.End()
	t := rt.(*pgkv.ReadTx)
	head := lastTx(t.Prefetched())
	var rows []pgChange
	bt := &pgx.Batch{}
	queueChanges(bt, after, pgChangesAsked+1, &rows)
	if err := t.Conn().SendBatch(t.Context(), bt).Close(); err != nil {
		return 0, nil, false, err
	}
	if len(rows) == 0 || len(rows) > pgChangesAsked || rows[0].first > after+1 || rows[len(rows)-1].last != head {
		return head, nil, false, nil
	}
	for i := 1; i < len(rows); i++ {
		if rows[i].first != rows[i-1].last+1 {
			return head, nil, false, nil
		}
	}
	b.ch.add(rows)
	var touched []string
	for _, r := range rows {
		touched = append(touched, r.touched...)
	}
	return head, touched, true, nil
}

// encodeTouched writes cache keys as a count and each key's length and bytes.
func encodeTouched(keys []string) []byte {
	n := binary.MaxVarintLen64
	for _, k := range keys {
		n += len(k) + binary.MaxVarintLen64
	}
	out := binary.AppendUvarint(make([]byte, 0, n), uint64(len(keys)))
	for _, k := range keys {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
	}
	return out
}

// encodeWrites writes a count, and for each entry its key, a byte (0: changed, 1: this value,
// 2: deleted) and the value.
func encodeWrites(ws []pgkv.Write) []byte {
	n := binary.MaxVarintLen64
	for _, w := range ws {
		n += len(w.Key) + len(w.Value) + 2*binary.MaxVarintLen64 + 1
	}
	out := binary.AppendUvarint(make([]byte, 0, n), uint64(len(ws)))
	for _, w := range ws {
		out = binary.AppendUvarint(out, uint64(len(w.Key)))
		out = append(out, w.Key...)
		switch {
		case !w.Known:
			out = append(out, 0)
		case w.Del:
			out = append(out, 2)
		default:
			out = append(out, 1)
			out = binary.AppendUvarint(out, uint64(len(w.Value)))
			out = append(out, w.Value...)
		}
	}
	return out
}

func decodeWrites(b []byte) ([]pgkv.Write, error) {
	bad := errors.New("a malformed list of written entries")
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, bad
	}
	b = b[w:]
	out := make([]pgkv.Write, 0, n)
	field := func() ([]byte, bool) {
		l, w := binary.Uvarint(b)
		if w <= 0 || l > uint64(len(b)-w) {
			return nil, false
		}
		f := b[w : w+int(l)]
		b = b[w+int(l):]
		return f, true
	}
	for range n {
		k, ok := field()
		if !ok || len(b) == 0 {
			return nil, bad
		}
		wr := pgkv.Write{Key: string(k)}
		flag := b[0]
		b = b[1:]
		switch flag {
		case 0:
		case 2:
			wr.Known, wr.Del = true, true
		case 1:
			v, ok := field()
			if !ok {
				return nil, bad
			}
			wr.Known, wr.Value = true, append([]byte{}, v...)
		default:
			return nil, bad
		}
		out = append(out, wr)
	}
	return out, nil
}

func decodeTouched(b []byte) ([]string, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 || n > uint64(len(b)) {
		return nil, errors.New("a malformed list of changed entries")
	}
	b = b[w:]
	out := make([]string, 0, n)
	for range n {
		l, w := binary.Uvarint(b)
		if w <= 0 || l > uint64(len(b)-w) {
			return nil, errors.New("a malformed list of changed entries")
		}
		out = append(out, string(b[w:w+int(l)]))
		b = b[w+int(l):]
	}
	return out, nil
}

// ---- announcements -------------------------------------------------------------------------

// watchCommits calls fn with the head another process announced on its commits, and with 0
// whenever announcements may have been missed (the listening connection was made again), until
// ctx ends. It listens only while subs has subscribers: a listening session is woken, and
// wakes its process, at every commit of every process, which on a busy server costs the
// writers more than anything else outside their lock; a process nobody watches learns of
// other processes' commits at its next read or write. Once a subscriber arrives it listens,
// then calls fn(0) for what was committed before; pgListenLinger after the last one leaves,
// it stops. Announcements that arrive within pgAnnounceGather of one are taken together, and
// this process's own are left out (it knows its commits). fn reads what it learns through a
// snapshot, which waits until the announced transaction is durable.
func (b *pgBackend) watchCommits(ctx context.Context, subs *notifier, fn func(head record.TxID)) {
	delay := 100 * time.Millisecond
	for subs.waitWatched(ctx) {
		c, err := b.kvs.Listener(ctx)
		if err == nil {
			if _, err = c.Exec(ctx, "LISTEN "+pgCommitChannel); err != nil {
				c.Close(context.Background())
			}
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, 5*time.Second)
			continue
		}
		delay = 100 * time.Millisecond
		lctx, stop := context.WithCancel(ctx)
		notes := make(chan record.TxID, 256)
		go func() {
			defer close(notes)
			for {
				n, err := c.WaitForNotification(lctx)
				if err != nil {
					return
				}
				if id, ok := b.announced(n.Payload); ok {
					notes <- id
				}
			}
		}()
		fn(0) // commits made before the listener was listening
		check := time.NewTicker(pgListenLinger)
		unwatched := false
	listen:
		for {
			select {
			case head, ok := <-notes:
				if !ok {
					break listen
				}
				timer := time.NewTimer(pgAnnounceGather)
			gather:
				for {
					select {
					case h, ok := <-notes:
						if !ok {
							break gather
						}
						head = max(head, h)
					case <-timer.C:
						break gather
					}
				}
				timer.Stop()
				fn(head)
			case <-check.C:
				if !subs.watched() {
					if unwatched {
						break listen
					}
					unwatched = true
				} else {
					unwatched = false
				}
			}
		}
		check.Stop()
		stop()
		for range notes {
		}
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c.Close(cctx)
		cancel()
	}
}

// pgListenLinger is how often the watcher looks whether anyone still subscribes: it stops
// listening when nobody has for about twice as long.
const pgListenLinger = 500 * time.Millisecond

// pgAnnounceGather is how long the watcher waits for more announcements after one: a load
// covers them all, and the commit announced is by then mostly durable, so the load's
// snapshot does not wait for the WAL.
const pgAnnounceGather = 2 * time.Millisecond

// announcement is the payload of this process's commit of head.
func (b *pgBackend) announcement(head record.TxID) string {
	return strconv.FormatInt(int64(head), 10) + " " + b.token
}

// announced reads an announcement: the head, and false for one of this process's own.
func (b *pgBackend) announced(payload string) (record.TxID, bool) {
	id, token, _ := strings.Cut(payload, " ")
	if token == b.token {
		return 0, false
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 0 {
		n = 0
	}
	return record.TxID(n), true
}

// ---- inspect and import --------------------------------------------------------------------

func inspectPostgres(ctx context.Context, dsn string) (Inspection, error) {
	b, err := openPG(ctx, dsn, Options{MustExist: true}, pgReadOnly)
	switch {
	case errors.Is(err, index.ErrEarlierFormat):
		return other("an mql store in an earlier format (mql-kv/1 or mql-kv/2, without the text index): convert it with `mql migrate`")
	case errors.Is(err, ErrOldFormat):
		return other("an mql store in the format of an earlier mql (Cayley quads): convert it with `mql migrate`")
	case errors.Is(err, ErrNoStore):
		return inspectOtherTables(ctx, dsn)
	case err != nil:
		return Inspection{}, err
	}
	defer b.close()
	rt, err := b.kvs.Read(ctx)
	if err != nil {
		return Inspection{}, StorageFailure(fmt.Errorf("inspecting %s: %w", RedactDSN(dsn), err))
	}
	defer rt.End()
	in, err := inspectKV(rt)
	if err != nil {
		return Inspection{}, StorageFailure(fmt.Errorf("reading %s: %w", RedactDSN(dsn), err))
	}
	return in, nil
}

// inspectOtherTables says what a database without mql's tables holds: nothing, or tables,
// views and sequences of any schema but the system's.
func inspectOtherTables(ctx context.Context, dsn string) (Inspection, error) {
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return Inspection{}, StorageFailure(fmt.Errorf("cannot connect to PostgreSQL at %s: %w", RedactDSN(dsn), err))
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
		AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%' ORDER BY 1`)
	if err != nil {
		return Inspection{}, StorageFailure(fmt.Errorf("inspecting %s: %w", RedactDSN(dsn), err))
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return Inspection{}, StorageFailure(fmt.Errorf("inspecting %s: %w", RedactDSN(dsn), err))
	}
	if len(names) == 0 {
		return Inspection{}, nil
	}
	n := len(names)
	if n > 3 {
		names = append(names[:3], "…")
	}
	return other("a database with %d tables, views or sequences and no mql store (%s)", n, strings.Join(names, ", "))
}

// pgImportIdle bounds the silences of an import's transaction (reading and checking the file
// between its writes): no writer waits behind an import into a new database.
const pgImportIdle = 10 * time.Minute

// importPostgres writes the store into an empty database in one SQL transaction that holds
// the writer lock, its writes sent every few MiB: everything or nothing.
func importPostgres(ctx context.Context, dsn string, r io.Reader, opts Options, copts CheckOptions) (ImportSummary, error) {
	b, err := openPG(ctx, dsn, opts, pgReadWrite)
	if err != nil {
		return ImportSummary{}, err
	}
	defer b.close()
	notEmpty := func(r kv.Reader) error {
		ix, err := index.Open(r, nil)
		if errors.Is(err, index.ErrNotStore) && !strings.Contains(err.Error(), "format") {
			return nil
		}
		if err != nil {
			return fmt.Errorf("import into %s: %w: it holds something that is not an empty store (%v)", b.shown, ErrNotEmpty, err)
		}
		if ix.Head() > 0 {
			return fmt.Errorf("import into %s: %w: it holds a store (%d transactions); an import creates a new store: name an empty database", b.shown, ErrNotEmpty, ix.Head())
		}
		return nil
	}
	if b.kvs.Exists() { // before reading a large file for nothing
		rt, err := b.kvs.Read(ctx)
		if err != nil {
			return ImportSummary{}, storageErr("reading the database", err)
		}
		err = notEmpty(rt)
		rt.End()
		if err != nil {
			return ImportSummary{}, err
		}
	}
	wt, err := b.kvs.WriteWith(ctx, pgkv.WriteOptions{Synchronous: true, IdleTimeout: max(b.idleTimeout, pgImportIdle)})
	if err != nil {
		return ImportSummary{}, b.writeErr(err)
	}
	committed := false
	defer func() {
		if !committed {
			wt.Rollback()
		}
	}()
	if !wt.Missing() { // someone may have written since
		if err := notEmpty(wt); err != nil {
			return ImportSummary{}, err
		}
	}
	w := &pgImporter{wt: wt, vectors: opts.VectorIndex}
	sum, err := importTxs(ctx, r, copts, w, nil)
	if err != nil {
		return sum, err
	}
	committed = true
	if err := wt.Commit(ctx); err != nil {
		return sum, StorageFailure(fmt.Errorf("import into %s failed and nothing was written: %w", b.shown, b.commitErr(err)))
	}
	b.kvs.Conn(ctx, func(c *pgx.Conn) error { _, err := c.Exec(ctx, "ANALYZE"); return err })
	return sum, nil
}

// pgImporter applies imported transactions into one write transaction, with a new write
// handle every importBatchClaims claims so that the handle's memo stays small.
type pgImporter struct {
	wt      *pgkv.WriteTx
	h       *index.Index
	claims  int
	vectors index.VectorIndex // the vector index's parameters (Options.VectorIndex)
}

// handle is the write handle over every transaction added so far: the importing checker's
// state reads it.
func (w *pgImporter) handle() (*index.Index, error) {
	if w.h == nil {
		h, err := index.Writer(w.wt, nil)
		if errors.Is(err, index.ErrNotStore) {
			if err = index.Init(w.wt); err == nil {
				h, err = index.Writer(w.wt, nil)
			}
		}
		if err != nil {
			return nil, storageErr("writing the imported store", err)
		}
		h.FileVectorsWith(w.vectors)
		w.h = h
	}
	return w.h, nil
}

func (w *pgImporter) add(tx *record.Tx, _ []quad.Quad) error {
	if _, err := w.handle(); err != nil {
		return err
	}
	if err := w.h.Apply(tx, index.Mark{}); err != nil {
		return storageErr("writing the imported store", err)
	}
	if w.h.Puts() >= batchPuts {
		w.h, w.claims = nil, 0
	}
	return nil
}

// RedactDSN returns dsn with its password, if any, replaced by ***.
func RedactDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				return dsn[:i+3] + rest[:colon] + ":***" + rest[at:]
			}
		}
	}
	return dsn
}
