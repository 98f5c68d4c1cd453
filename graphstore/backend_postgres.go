package graphstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cayleygraph/cayley/graph"
	_ "github.com/cayleygraph/cayley/graph/sql/postgres" // registers the "postgres" quad store
	"github.com/cayleygraph/quad"
	"github.com/lib/pq"

	"github.com/mql-dev/mql/graphstore/record"
)

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

// pgBackend is mql on PostgreSQL, shared by any number of processes, in Cayley's SQL schema
// (tables nodes and quads).
//
// Reads go through Cayley's SQL quad store, on Cayley's connection pool, and never lock.
//
// Writes are fenced: a writer takes the transaction-level advisory lock pgLockKey in a
// transaction on a connection of ours (lockWriters), and apply writes the quads — the rows
// Cayley's own writer would write, see pgwrite.go — and commits in that same transaction. The
// lock and the write end together: if the writer's session dies (its process crashed, or
// PostgreSQL ended it after WriteIdleTimeout of silence, e.g. because the process was paused),
// PostgreSQL rolls the write back and releases the lock in one step, so a writer that wakes up
// after losing the lock cannot commit anything. Every wait for the lock is bounded by
// WriteLockTimeout (lock_timeout) and ends in ErrInUse naming the holder.
type pgBackend struct {
	dsn         string // with our application_name
	shown       string // the DSN as given, password hidden, for messages
	qs          graph.QuadStore
	db          *sql.DB // ours: write transactions, the schema check, exact counts
	lockTimeout time.Duration
	idleTimeout time.Duration

	// Guarded by the Store's writer mutex (or owned by one caller, in CheckDSN): the schema
	// exists, and the write transaction holding the writer lock, if any.
	schema bool
	w      *pgWrite

	// mu guards lockGen, logState and the writes of w (made under the writer mutex too): a
	// Refresh on another goroutine reads the log while this process may hold the lock.
	mu       sync.Mutex
	lockGen  uint64 // counts the takings and releases of the writer lock
	logState pgLogState
	logStmt  *sql.Stmt // pgLogQuery, prepared: its plan is made once, not at every read

	beforeCommit func(*pgWrite) // tests: runs between a write's INSERTs and its COMMIT
	perStatement int            // tests: quads per INSERT statement; 0: pgQuadsPerStatement
}

// openPostgres connects to dsn. A database without Cayley's schema gets it with the store's
// genesis, unless mustExist: then it is ErrNoStore.
func openPostgres(ctx context.Context, dsn string, mustExist bool, lockTimeout, idleTimeout time.Duration) (*pgBackend, error) {
	if lockTimeout <= 0 {
		lockTimeout = defaultWriteLockTimeout
	}
	if idleTimeout <= 0 {
		idleTimeout = defaultWriteIdleTimeout
	}
	named, ours, err := pgDSNs(dsn)
	if err != nil {
		return nil, fmt.Errorf("cannot open %s: %w: %v", RedactDSN(dsn), ErrBadDSN, err)
	}
	db, err := sql.Open("postgres", ours)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("graphstore: cannot connect to PostgreSQL at %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
	}
	b := &pgBackend{dsn: named, shown: RedactDSN(dsn), db: db, lockTimeout: lockTimeout, idleTimeout: idleTimeout}
	// A plain query, no lock: an existing store opens whoever is writing. A new database gets
	// its schema with its genesis, in the genesis's write transaction (apply).
	if b.schema, err = pgSchemaExists(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("graphstore: cannot read the schema of %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
	}
	if !b.schema && mustExist {
		db.Close()
		return nil, errNoStore(nil, "the database %s holds no mql store (no Cayley tables)", RedactDSN(dsn))
	}
	qs, err := graph.NewQuadStore("postgres", named, nil)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("graphstore: cannot open the Cayley store in %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
	}
	b.qs = qs
	return b, nil
}

// pgDSNs returns the DSNs of Cayley's reading pool and of ours. Both name their sessions
// "mql pid N" in pg_stat_activity (unless the DSN names them already), so that a writer
// waiting for the lock can say which process holds it. Ours adds binary_parameters: lib/pq
// then sends a statement and its parameters in one round trip instead of two (and byte strings
// as bytes, which PostgreSQL stores as it stores their hex form).
func pgDSNs(dsn string) (reader, writer string, err error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	if q.Get("application_name") == "" {
		q.Set("application_name", "mql pid "+strconv.Itoa(os.Getpid()))
	}
	u.RawQuery = q.Encode()
	reader = u.String()
	q.Set("binary_parameters", "yes")
	u.RawQuery = q.Encode()
	return reader, u.String(), nil
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// pgSchemaExists reads pg_class rather than asking to_regclass, which answers from the
// session's catalog cache: in a transaction begun before another process created the tables
// while we waited for the lock, it still says they do not exist.
func pgSchemaExists(ctx context.Context, q queryer) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE c.relname IN ('quads', 'nodes') AND s.nspname = current_schema()`).Scan(&n)
	return n == 2, err
}

func (b *pgBackend) kind() string { return "postgres" }
func (b *pgBackend) name() string { return b.shown }
func (b *pgBackend) shared() bool { return true }

// all and txQuads read nothing before the schema exists: the store is new (Open writes its
// genesis next, under the lock) or, for CheckDSN, there is no store.
func (b *pgBackend) all(ctx context.Context) ([]quad.Quad, error) {
	if !b.schema {
		return nil, nil
	}
	return pgUnescape(allQuads(ctx, b.qs))
}

func (b *pgBackend) countGraphs(ctx context.Context) (graphCounts, error) {
	if !b.schema {
		return graphCounts{}, nil
	}
	return countGraphs(ctx, b.qs, nil)
}

func (b *pgBackend) eachQuad(ctx context.Context, fn func(quad.Quad) error) error {
	if !b.schema {
		return nil
	}
	return eachQuad(ctx, b.qs, func(q quad.Quad) error {
		q.Object = pgMapText(q.Object, pgUnescapeText)
		return fn(q)
	})
}

func (b *pgBackend) graphQuads(ctx context.Context, id record.TxID) ([]quad.Quad, error) {
	if !b.schema {
		return nil, nil
	}
	return pgUnescape(graphQuadsOf(ctx, b.qs, id))
}

func (b *pgBackend) txQuads(ctx context.Context, id record.TxID) ([]quad.Quad, error) {
	if !b.schema {
		return nil, nil
	}
	return pgUnescape(txQuadsOf(ctx, b.qs, id))
}

// apply writes quads in the write transaction that holds the writer lock, and commits it,
// which also releases the lock. Caller holds the lock (lockWriters) and calls apply once.
func (b *pgBackend) apply(ctx context.Context, quads []quad.Quad) error {
	w := b.w
	if w == nil || w.done {
		return fmt.Errorf("graphstore: a PostgreSQL write needs the writer lock: %w", ErrStorage)
	}
	esc := make([]quad.Quad, len(quads))
	for i, q := range quads {
		q.Object = pgMapText(q.Object, pgEscapeText)
		esc[i] = q
	}
	created := !b.schema
	if err := w.commit(ctx, esc, created); err != nil {
		return err
	}
	if created {
		b.schema = true
	}
	return nil
}

// count asks the database: Cayley's SQL store caches its count and misses other processes'
// writes.
func (b *pgBackend) count(ctx context.Context) (int64, error) {
	if !b.schema {
		return 0, nil
	}
	var n int64
	err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM quads`).Scan(&n)
	return n, err
}

// reopen has nothing to do: a failed write rolled back in PostgreSQL and never touched
// Cayley's quad store, which only reads (and caches only the values of hashes, which never
// change).
func (b *pgBackend) reopen(context.Context) error { return nil }

// lockWriters begins a write transaction on a connection of its own and takes the
// transaction-level advisory lock in it, waiting at most lockTimeout. The lock ends with the
// transaction, whatever happens — a commit (apply), the release, a lost connection, a
// crashed process, or PostgreSQL ending a session that stayed idle in the transaction for
// idleTimeout — so it can never outlive its writer by more than idleTimeout. (A session-level
// lock can: one granted by a statement that then fails stays held by the pooled connection.)
// Waiters queue in PostgreSQL, first come first served.
func (b *pgBackend) lockWriters(ctx context.Context) (func(), error) {
	if b.w != nil {
		return nil, fmt.Errorf("graphstore: the PostgreSQL writer lock is already held by this store: %w", ErrStorage)
	}
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("graphstore: cannot take the writer lock on %s: %w: %w", b.shown, ErrStorage, err)
	}
	// Not ctx: database/sql rolls a transaction back when its context ends, which would drop
	// the lock in the middle of a write.
	tx, err := conn.BeginTx(context.Background(), nil)
	w := &pgWrite{conn: conn, tx: tx, db: b.db, idleTimeout: b.idleTimeout, beforeCommit: b.beforeCommit, perStatement: b.perStatement}
	if err == nil {
		// One round trip. The timeouts are set before the lock is asked for, so that a writer
		// is never without them while it holds it; SET LOCAL ends with the transaction. The
		// transaction's id is what tells, should the connection fail during the COMMIT,
		// whether it committed (txid_status). ctx bounds the wait as well: if it ends, lib/pq
		// cancels the statement.
		var void any
		err = tx.QueryRowContext(ctx, fmt.Sprintf(
			`SET LOCAL lock_timeout = %d; SET LOCAL idle_in_transaction_session_timeout = %d; `+
				`SELECT pg_advisory_xact_lock(%d), txid_current(), pg_backend_pid()`,
			b.lockTimeout.Milliseconds(), b.idleTimeout.Milliseconds(), int64(pgLockKey))).Scan(&void, &w.xid, &w.pid)
		if err != nil {
			tx.Rollback()
		}
	}
	if err != nil {
		discard(conn)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		if pgCode(err) == "55P03" { // lock_not_available: lock_timeout expired
			return nil, b.inUse()
		}
		return nil, fmt.Errorf("graphstore: cannot take the writer lock on %s: %w: %w", b.shown, ErrStorage, err)
	}
	if !b.schema {
		// Someone may have created the store since we looked; now nobody else can.
		if b.schema, err = pgSchemaExists(ctx, tx); err != nil {
			w.end()
			return nil, fmt.Errorf("graphstore: cannot read the schema of %s: %w: %w", b.shown, ErrStorage, err)
		}
	}
	b.mu.Lock()
	b.w = w
	b.lockGen++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.w = nil
		b.lockGen++
		b.mu.Unlock()
		w.end()
	}, nil
}

// inUse is the error of a writer that waited lockTimeout for the lock: it names the session
// holding it, as pg_stat_activity shows it, when it can.
func (b *pgBackend) inUse() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	holder := "another writer"
	var (
		pid         int64
		app, state  string
		held, since float64
	)
	err := b.db.QueryRowContext(ctx, `
SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''),
       coalesce(extract(epoch FROM now() - a.xact_start), 0)::float8,
       coalesce(extract(epoch FROM now() - a.state_change), 0)::float8
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = $1 AND l.objid::bigint = $2
LIMIT 1`, int64(pgLockKey>>32), int64(pgLockKey&0xffffffff)).Scan(&pid, &app, &state, &held, &since)
	if err == nil {
		if app == "" {
			app = "a session without application_name"
		}
		holder = fmt.Sprintf("%s (PostgreSQL backend %d), which has held the writer lock for %s", app, pid, roundDuration(held))
		if state != "" {
			holder += fmt.Sprintf(" and has been %s for %s", state, roundDuration(since))
		}
	}
	return fmt.Errorf("%s is being written by %s; this write waited %s for it and gave up. Try again: a writer that stays idle while it holds the lock loses it after its idle timeout (%s by default) and its write is rolled back: %w",
		b.shown, holder, b.lockTimeout, defaultWriteIdleTimeout, ErrInUse)
}

func roundDuration(seconds float64) time.Duration {
	return time.Duration(seconds * float64(time.Second)).Round(100 * time.Millisecond)
}

func pgCode(err error) pq.ErrorCode {
	var pe *pq.Error
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// discard closes conn's session instead of returning it to the pool.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

func (b *pgBackend) close() error {
	b.mu.Lock()
	if b.w != nil {
		b.w.end()
		b.w = nil
	}
	if b.logStmt != nil {
		b.logStmt.Close()
	}
	b.mu.Unlock()
	err := b.qs.Close()
	if e := b.db.Close(); err == nil {
		err = e
	}
	return err
}

// Cayley's SQL store writes a NUL byte as the text \x00 and turns every \x00 it reads back
// into a NUL, so a literal text "\x00" would come back changed. The encoder refuses NUL bytes;
// here every "\x00" in a text is written as "\x" NUL "00", which Cayley stores as
// "\x\x0000" and reads back as "\x" NUL "00", which pgUnescapeText turns back into "\x00".
const pgNULMarker = "\\x\x0000"

func pgEscapeText(s string) string   { return strings.ReplaceAll(s, `\x00`, pgNULMarker) }
func pgUnescapeText(s string) string { return strings.ReplaceAll(s, pgNULMarker, `\x00`) }

func pgMapText(v quad.Value, f func(string) string) quad.Value {
	switch x := v.(type) {
	case quad.String:
		return quad.String(f(string(x)))
	case quad.TypedString:
		x.Value = quad.String(f(string(x.Value)))
		return x
	}
	return v
}

func pgUnescape(quads []quad.Quad, err error) ([]quad.Quad, error) {
	if err != nil {
		return nil, err
	}
	for i := range quads {
		quads[i].Object = pgMapText(quads[i].Object, pgUnescapeText)
	}
	return quads, nil
}

// RedactDSN hides a password in a PostgreSQL URL, for messages and logs.
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
