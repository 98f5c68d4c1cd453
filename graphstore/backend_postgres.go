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
	"github.com/lib/pq"
)

// pgLockKey is the advisory lock that serialises mql writers on one PostgreSQL database
// (advisory locks are scoped to the database, so stores in other databases do not contend).
const pgLockKey = 0x6d716c5f77726974 // "mql_writ"

// pgBackend is Cayley's SQL quad store on PostgreSQL, shared by any number of processes.
// Writers serialise on a session-level advisory lock held on a connection of our own; the
// Cayley write itself runs in one SQL transaction on Cayley's connection pool.
type pgBackend struct {
	dsn string
	qs  graph.QuadStore
	db  *sql.DB // ours: the writer lock and exact counts
}

func openPostgres(ctx context.Context, dsn string) (*pgBackend, error) {
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
	b := &pgBackend{dsn: dsn, db: db}
	// Several processes may open a new database at once; create the schema under the lock.
	unlock, err := b.lockWriters(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	var exists bool
	err = db.QueryRowContext(ctx, `SELECT to_regclass('quads') IS NOT NULL AND to_regclass('nodes') IS NOT NULL`).Scan(&exists)
	if err == nil && !exists {
		// (Cayley logs an error when its schema exists already, so only ask it when it does not.)
		err = graph.InitQuadStore("postgres", dsn, nil)
	}
	unlock()
	if err != nil && !errors.Is(err, graph.ErrDatabaseExists) {
		db.Close()
		return nil, fmt.Errorf("graphstore: cannot create the Cayley schema in %s: %w: %w", redactDSN(dsn), ErrStorage, err)
	}
	if err := b.open(); err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
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

// lockWriters takes the session-level advisory lock on a connection of its own. It waits in
// slices of lock_timeout so that it can give up when ctx ends without ever cancelling a
// statement that might have taken the lock; a connection whose unlock fails is discarded,
// which ends its session and with it the lock.
func (b *pgBackend) lockWriters(ctx context.Context) (func(), error) {
	conn, err := b.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("graphstore: cannot take the writer lock on %s: %w: %w", redactDSN(b.dsn), ErrStorage, err)
	}
	// One simple-protocol query: an implicit transaction, so SET LOCAL ends with it while the
	// advisory lock, being session-level, stays.
	take := fmt.Sprintf(`SET LOCAL lock_timeout = '200ms'; SELECT pg_advisory_lock(%d)`, int64(pgLockKey))
	for {
		if err := ctx.Err(); err != nil {
			conn.Close()
			return nil, err
		}
		_, err := conn.ExecContext(context.Background(), take)
		if err == nil {
			break
		}
		var pe *pq.Error
		if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available: lock_timeout passed
			continue
		}
		discard(conn)
		return nil, fmt.Errorf("graphstore: cannot take the writer lock on %s: %w: %w", redactDSN(b.dsn), ErrStorage, err)
	}
	return func() {
		var ok bool
		err := conn.QueryRowContext(context.Background(), `SELECT pg_advisory_unlock($1)`, int64(pgLockKey)).Scan(&ok)
		if err != nil || !ok {
			discard(conn)
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
