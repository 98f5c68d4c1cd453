package graphstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/cayleygraph/cayley/graph"
	_ "github.com/cayleygraph/cayley/graph/sql/postgres" // registers the "postgres" quad store
	"github.com/cayleygraph/quad"
)

// pgLockKey is the advisory lock that serialises mql writers on one PostgreSQL database
// (advisory locks are scoped to the database, so stores in other databases do not contend).
const pgLockKey = 0x6d716c5f77726974 // "mql_writ"

// pgBackend is Cayley's SQL quad store on PostgreSQL, shared by any number of processes.
// Writers serialise on an advisory lock held on a connection of our own; the Cayley write
// itself runs in one SQL transaction on Cayley's connection pool.
type pgBackend struct {
	dsn string
	qs  graph.QuadStore
	db  *sql.DB // ours: the writer lock and exact counts
}

func openPostgres(ctx context.Context, dsn string) (*pgBackend, error) {
	b, err := connectPostgres(ctx, dsn)
	if err != nil {
		return nil, err
	}
	// Several processes may open a new database at once; create the schema under the lock.
	unlock, err := b.lockWriters(ctx)
	if err != nil {
		b.db.Close()
		return nil, err
	}
	exists, err := b.hasSchema(ctx)
	if err == nil && !exists {
		// (Cayley logs an error when its schema exists already, so only ask it when it does not.)
		err = graph.InitQuadStore("postgres", dsn, nil)
	}
	unlock()
	if err != nil && !errors.Is(err, graph.ErrDatabaseExists) {
		b.db.Close()
		return nil, fmt.Errorf("graphstore: cannot create the Cayley schema in %s: %w: %w", redactDSN(dsn), ErrStorage, err)
	}
	if err := b.open(); err != nil {
		b.db.Close()
		return nil, err
	}
	return b, nil
}

// connectPostgres connects to the database without opening (or creating) the Cayley store.
func connectPostgres(ctx context.Context, dsn string) (*pgBackend, error) {
	db, err := sql.Open("postgres", dsn)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return nil, fmt.Errorf("graphstore: cannot connect to PostgreSQL at %s: %w: %w", redactDSN(dsn), ErrStorage, err)
	}
	return &pgBackend{dsn: dsn, db: db}, nil
}

// hasSchema reports whether the database holds Cayley's tables.
func (b *pgBackend) hasSchema(ctx context.Context) (bool, error) {
	var exists bool
	err := b.db.QueryRowContext(ctx, `SELECT to_regclass('quads') IS NOT NULL AND to_regclass('nodes') IS NOT NULL`).Scan(&exists)
	return exists, err
}

func (b *pgBackend) open() error {
	qs, err := graph.NewQuadStore("postgres", b.dsn, nil)
	if err != nil {
		return fmt.Errorf("graphstore: cannot open the Cayley store in %s: %w: %w", redactDSN(b.dsn), ErrStorage, err)
	}
	b.qs = qs
	return nil
}

func (b *pgBackend) handle() (graph.QuadStore, error) {
	if b.qs == nil {
		return nil, fmt.Errorf("graphstore: %s could not be reopened after a failed write: %w", redactDSN(b.dsn), ErrStorage)
	}
	return b.qs, nil
}

func (b *pgBackend) kind() string { return "postgres" }
func (b *pgBackend) shared() bool { return true }

func (b *pgBackend) all(ctx context.Context) ([]quad.Quad, error) {
	qs, err := b.handle()
	if err != nil {
		return nil, err
	}
	return pgUnescape(allQuads(ctx, qs))
}

func (b *pgBackend) countGraphs(ctx context.Context) (graphCounts, error) {
	qs, err := b.handle()
	if err != nil {
		return graphCounts{}, err
	}
	return countGraphs(ctx, qs, nil)
}

func (b *pgBackend) eachQuad(ctx context.Context, fn func(quad.Quad) error) error {
	qs, err := b.handle()
	if err != nil {
		return err
	}
	return eachQuad(ctx, qs, func(q quad.Quad) error {
		q.Object = pgMapText(q.Object, pgUnescapeText)
		return fn(q)
	})
}

func (b *pgBackend) txQuads(ctx context.Context, id TxID) ([]quad.Quad, error) {
	qs, err := b.handle()
	if err != nil {
		return nil, err
	}
	return pgUnescape(txQuadsOf(ctx, qs, id))
}

func (b *pgBackend) apply(ctx context.Context, quads []quad.Quad) error {
	qs, err := b.handle()
	if err != nil {
		return err
	}
	esc := make([]quad.Quad, len(quads))
	for i, q := range quads {
		q.Object = pgMapText(q.Object, pgEscapeText)
		esc[i] = q
	}
	return applyQuads(qs, esc)
}

// count asks the database: Cayley's SQL store caches its count and misses other processes'
// writes.
func (b *pgBackend) count(ctx context.Context) (int64, error) {
	var n int64
	err := b.db.QueryRowContext(ctx, `SELECT count(*) FROM quads`).Scan(&n)
	return n, err
}

func (b *pgBackend) reopen(context.Context) error {
	if b.qs != nil {
		b.qs.Close()
		b.qs = nil
	}
	return b.open()
}

// lockWriters takes a transaction-level advisory lock in a transaction of its own, on a
// connection of its own, and releases it by rolling that transaction back. Whatever happens —
// a cancelled wait, a failed statement, a lost connection, a crashed process — the lock ends
// with the transaction, so it can never outlive its writer. (A session-level lock can: one
// granted by a statement that then fails stays held by the pooled connection, and every other
// writer waits for ever.) Waiters queue in PostgreSQL, first come first served.
func (b *pgBackend) lockWriters(ctx context.Context) (func(), error) {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("graphstore: cannot take the writer lock on %s: %w: %w", redactDSN(b.dsn), ErrStorage, err)
	}
	// Not ctx: database/sql rolls a transaction back when its context ends, which would drop
	// the lock in the middle of a write.
	tx, err := conn.BeginTx(context.Background(), nil)
	if err == nil {
		// ctx here only bounds the wait: if it ends, lib/pq cancels the statement.
		_, err = tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(pgLockKey))
		if err != nil {
			tx.Rollback()
		}
	}
	if err != nil {
		discard(conn)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("graphstore: cannot take the writer lock on %s: %w: %w", redactDSN(b.dsn), ErrStorage, err)
	}
	return func() {
		if err := tx.Rollback(); err != nil {
			discard(conn) // ending the session ends the transaction and its lock
			return
		}
		conn.Close()
	}, nil
}

// discard closes conn's session instead of returning it to the pool.
func discard(conn *sql.Conn) {
	conn.Raw(func(any) error { return driver.ErrBadConn })
	conn.Close()
}

func (b *pgBackend) close() error {
	var err error
	if b.qs != nil {
		err = b.qs.Close()
		b.qs = nil
	}
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

// redactDSN hides a password in a PostgreSQL URL for error messages.
func redactDSN(dsn string) string {
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
