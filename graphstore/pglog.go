package graphstore

// The PostgreSQL transaction log: the snapshot of a PostgreSQL store (see snapshot.go), kept in
// the table mql_snapshot and written by each write in the same database transaction as its
// quads, so that it never lags behind them. A process that opens the store decodes the log
// instead of reading every quad through Cayley, and a process that catches up with the others
// (Refresh, and every write under the writer lock) reads the log's rows after its head in one
// query instead of Cayley's queries per quad and per value.
//
// Rows are chunks as bbolt's snapshot holds them (encodeChunk: magic, format, record shape,
// CRC-32C, gob), keyed by their first transaction. A write adds one row for its group of
// transactions; once the rows after the last sealed chunk hold pgLogTail transactions (or
// snapshotEveryClaims claims), the write that passes the mark replaces them with sealed chunks
// of up to snapshotEveryTxs transactions, so that the log stays a few rows per thousand
// transactions whatever the size of the writes.
//
// The quads stay the source of truth. Each row records the quads' highest horizon when it was
// written; a reader trusts the log's rows only if its last row's horizon is the quads' highest
// (no quad was stored without the log: an older mql, or a write after the log was removed),
// and otherwise reads the quads as before. A writer that finds the log behind its own head, or
// not current, rewrites it whole from its index in its write transaction. Open checks the log
// against the quads as it checks bbolt's snapshot (genesis and last transaction), and check
// compares every transaction of it with the quads.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/cayleygraph/quad"
	"github.com/lib/pq"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// pgLogSchema is the log's table. The index on last finds the rows after a process's head.
const pgLogSchema = `CREATE TABLE IF NOT EXISTS mql_snapshot (
	first BIGINT PRIMARY KEY,
	last BIGINT NOT NULL,
	sealed BOOLEAN NOT NULL,
	horizon BIGINT NOT NULL,
	data BYTEA NOT NULL
);
CREATE INDEX IF NOT EXISTS mql_snapshot_last ON mql_snapshot (last);`

// pgLogTail is how many transactions the unsealed rows at the end of the log may hold before a
// write seals them into one chunk.
const pgLogTail = 128

// pgCommitChannel is the NOTIFY channel on which each write announces its last transaction.
// PostgreSQL delivers a notification when (and only if) the transaction that sent it commits.
const pgCommitChannel = "mql_commit"

// pgLogState is what the log holds, as read under the writer lock (by the refresh that every
// write makes after taking it) or, failing that, by the write itself.
type pgLogState struct {
	gen     uint64 // the lock it was read under (pgBackend.lockGen); 0: none
	exists  bool
	last    record.TxID // the log's last transaction, 0 if it is empty
	sealed  record.TxID // the last transaction of its sealed chunks
	current bool        // its last row was written with the quads' newest row
}

// pgLogQuery reads, in one statement (so from one state of the database), the log's state
// (a row of kind 0: the quads' highest horizon, the last sealed transaction, the log's last
// transaction and its row's horizon) and its rows after the head $1 (kind 1: first, last,
// data). It is prepared once per store: planning it costs more than running it.
const pgLogQuery = `SELECT 0, (SELECT coalesce(max(horizon), 0) FROM quads),
       coalesce((SELECT max(last) FROM mql_snapshot WHERE sealed), 0),
       coalesce((SELECT last FROM mql_snapshot ORDER BY first DESC LIMIT 1), 0),
       coalesce((SELECT horizon FROM mql_snapshot ORDER BY first DESC LIMIT 1), 0), NULL::bytea
UNION ALL
SELECT 1, first, last, 0, 0, data FROM mql_snapshot WHERE last > $1
ORDER BY 1, 2`

// logRows runs pgLogQuery after head: ok is false when there is no log.
func (b *pgBackend) logRows(ctx context.Context, head record.TxID, fn func(kind, a, c, d, e int64, data []byte) error) (ok bool, err error) {
	b.mu.Lock()
	stmt := b.logStmt
	b.mu.Unlock()
	if stmt == nil {
		stmt, err = b.db.PrepareContext(ctx, pgLogQuery)
		if pgCode(err) == "42P01" { // undefined_table: a store written before the log existed
			return false, nil
		}
		if err != nil {
			return false, err
		}
		b.mu.Lock()
		if b.logStmt == nil {
			b.logStmt = stmt
		} else {
			stmt.Close()
			stmt = b.logStmt
		}
		b.mu.Unlock()
	}
	rows, err := stmt.QueryContext(ctx, int64(head))
	if pgCode(err) == "42P01" { // the log was dropped since: prepare again next time
		b.mu.Lock()
		if b.logStmt == stmt {
			b.logStmt = nil
			stmt.Close()
		}
		b.mu.Unlock()
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer rows.Close()
	for rows.Next() {
		var kind, a, c, d, e int64
		var data []byte
		if err := rows.Scan(&kind, &a, &c, &d, &e, &data); err != nil {
			return false, err
		}
		if err := fn(kind, a, c, d, e, data); err != nil {
			return false, err
		}
	}
	return true, rows.Err()
}

// txsAfter returns the log's transactions after head, in order, and whether they are all the
// store holds after head (ok false: the log is missing, behind the quads, or unreadable; read
// the quads instead).
func (b *pgBackend) txsAfter(ctx context.Context, head record.TxID) (txs []*record.Tx, ok bool, err error) {
	if !b.schema {
		return nil, false, nil
	}
	b.mu.Lock()
	gen := b.lockGen
	if b.w == nil {
		gen = 0
	}
	b.mu.Unlock()
	st := pgLogState{exists: true}
	next := head + 1
	bad := false
	exists, err := b.logRows(ctx, head, func(kind, a, c, d, e int64, data []byte) error {
		if kind == 0 {
			st.sealed, st.last, st.current = record.TxID(c), record.TxID(d), a == e
			return nil
		}
		if bad {
			return nil
		}
		more, err := decodeChunk(data)
		if err != nil {
			bad = true
			return nil
		}
		for _, tx := range more {
			switch {
			case tx.ID < next:
				continue // in a chunk sealed after this process read its first transactions
			case tx.ID > next:
				bad = true
			default:
				txs = append(txs, tx)
				next++
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	if !exists {
		b.setLogState(gen, pgLogState{})
		return nil, false, nil
	}
	b.setLogState(gen, st)
	if bad || !st.current || st.last < head || next-1 != st.last {
		return nil, false, nil
	}
	return txs, true, nil
}

// applyLogged is apply that also writes txs, the transactions of the quads, to the log in the
// same database transaction (rewriting the log whole from history when it is missing or behind),
// and announces the new head. history returns the committed transactions from..to.
func (b *pgBackend) applyLogged(ctx context.Context, quads []quad.Quad, txs []*record.Tx, history func(from, to record.TxID) []*record.Tx) error {
	if len(txs) == 0 {
		return b.apply(ctx, quads)
	}
	w := b.w
	if w == nil || w.done {
		return fmt.Errorf("graphstore: a PostgreSQL write needs the writer lock: %w", ErrStorage)
	}
	first, last := txs[0].ID, txs[len(txs)-1].ID
	st, ok := b.lockedLogState()
	if !ok && b.schema {
		// Nothing read the log under this lock (an import, or a new store's genesis).
		if _, _, err := b.txsAfter(ctx, first-1); err != nil {
			return fmt.Errorf("reading the transaction log: %w", err)
		}
		st, _ = b.lockedLogState()
	}
	switch {
	case !st.exists || !st.current || st.last != first-1:
		w.log = func(ctx context.Context) error {
			if !st.exists {
				if _, err := w.tx.ExecContext(ctx, pgLogSchema); err != nil {
					return fmt.Errorf("creating the transaction log: %w", err)
				}
			} else if _, err := w.tx.ExecContext(ctx, `DELETE FROM mql_snapshot`); err != nil {
				return fmt.Errorf("rewriting the transaction log: %w", err)
			}
			return writeSealed(ctx, w.tx, 1, first-1, history, txs)
		}
	case int(last-st.sealed) >= pgLogTail || claimsOf(history(st.sealed+1, first-1))+claimsOf(txs) >= snapshotEveryClaims:
		w.log = func(ctx context.Context) error {
			if _, err := w.tx.ExecContext(ctx, `DELETE FROM mql_snapshot WHERE first > $1`, int64(st.sealed)); err != nil {
				return fmt.Errorf("sealing the transaction log: %w", err)
			}
			return writeSealed(ctx, w.tx, st.sealed+1, first-1, history, txs)
		}
	default:
		data, err := encodeChunk(txs)
		if err != nil {
			return fmt.Errorf("encoding the transaction log: %w", err)
		}
		w.logRow = &pgChunk{snapshotChunk{first: first, data: data}, last, false}
	}
	w.notify = last
	return b.apply(ctx, quads)
}

// setLogState records st if it was read under the writer lock that this process still holds.
func (b *pgBackend) setLogState(gen uint64, st pgLogState) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != 0 && gen == b.lockGen && b.w != nil {
		st.gen = gen
		b.logState = st
	}
}

// lockedLogState returns the log's state as read under the writer lock this process holds.
func (b *pgBackend) lockedLogState() (pgLogState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.logState
	return st, b.w != nil && st.gen == b.lockGen
}

func claimsOf(txs []*record.Tx) int {
	n := 0
	for _, tx := range txs {
		n += len(tx.Claims)
	}
	return n
}

// writeSealed writes the committed transactions from..to and then txs as sealed chunks, one
// chunk at a time, so that the session is never silent for long (a writer silent for
// WriteIdleTimeout loses the lock).
func writeSealed(ctx context.Context, tx *sql.Tx, from, to record.TxID, history func(from, to record.TxID) []*record.Tx, txs []*record.Tx) error {
	for from <= to {
		end := min(to, from+snapshotEveryTxs-1)
		chunks, err := pgChunks(history(from, end), true)
		if err != nil {
			return err
		}
		if err := insertChunks(ctx, tx, chunks); err != nil {
			return err
		}
		from = end + 1
	}
	chunks, err := pgChunks(txs, true)
	if err != nil {
		return err
	}
	return insertChunks(ctx, tx, chunks)
}

type pgChunk struct {
	snapshotChunk
	last   record.TxID
	sealed bool
}

// pgChunks encodes txs as chunks of at most snapshotEveryTxs transactions and
// snapshotEveryClaims claims (and at least one transaction).
func pgChunks(txs []*record.Tx, sealed bool) ([]pgChunk, error) {
	var out []pgChunk
	for len(txs) > 0 {
		n, claims := 0, 0
		for n < len(txs) && n < snapshotEveryTxs && (n == 0 || claims+len(txs[n].Claims) <= snapshotEveryClaims) {
			claims += len(txs[n].Claims)
			n++
		}
		data, err := encodeChunk(txs[:n])
		if err != nil {
			return nil, fmt.Errorf("encoding the transaction log: %w", err)
		}
		out = append(out, pgChunk{snapshotChunk{first: txs[0].ID, data: data}, txs[n-1].ID, sealed})
		txs = txs[n:]
	}
	return out, nil
}

// insertChunks writes chunks, each with the quads' highest horizon as this transaction sees it
// (its own quads are written first).
func insertChunks(ctx context.Context, tx *sql.Tx, chunks []pgChunk) error {
	for _, c := range chunks {
		if _, err := tx.ExecContext(ctx, `INSERT INTO mql_snapshot(first, last, sealed, horizon, data)
VALUES ($1, $2, $3, (SELECT coalesce(max(horizon), 0) FROM quads), $4)`,
			int64(c.first), int64(c.last), c.sealed, c.data); err != nil {
			return fmt.Errorf("writing the transaction log: %w", err)
		}
	}
	return nil
}

// rebuildLog rewrites the log whole from history, up to head, under the writer lock, when Open
// had to read the quads (no log, or one it could not use): the next process to open the store
// then reads the log. Another process may have committed since the index was loaded: then the
// log is left to that process's writes, which rewrite it if it is still behind (a writer that
// finds the log behind its head rewrites it).
func (b *pgBackend) rebuildLog(ctx context.Context, head record.TxID, history func(from, to record.TxID) []*record.Tx) error {
	if !b.schema || head == 0 {
		return nil
	}
	// Open waits for the lock a moment at most: if writers keep it, one of them rewrites the
	// log with its next write.
	lockCtx, cancel := context.WithTimeout(ctx, time.Second)
	unlock, err := b.lockWriters(lockCtx)
	cancel()
	if err != nil {
		return err
	}
	defer unlock()
	var stored bool
	if err := b.w.tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM quads WHERE subject_hash = $1)`, quadHash(codec.TxIRI(head+1))).Scan(&stored); err != nil {
		return err
	}
	if stored {
		return nil // not at the head any more
	}
	w := b.w
	if _, err := w.tx.ExecContext(ctx, pgLogSchema+"\nDELETE FROM mql_snapshot;"); err != nil {
		return err
	}
	if err := writeSealed(ctx, w.tx, 1, head, history, nil); err != nil {
		return err
	}
	w.done = true
	if err := w.tx.Commit(); err != nil {
		discard(w.conn)
		return err
	}
	w.conn.Close()
	return nil
}

// quadHash is the value PostgreSQL stores for v in the quads' hash columns.
func quadHash(v quad.Value) []byte {
	return quad.HashOf(v)
}

// eachSnapshotChunk reads the log in order, in one statement (so from one consistent state).
func (b *pgBackend) eachSnapshotChunk(ctx context.Context, fn func(chunk []byte) error) error {
	if !b.schema {
		return nil
	}
	// Prepared, so that lib/pq receives the chunks in binary: unprepared, bytea arrives as hex
	// text, twice the bytes to send and to decode.
	stmt, err := b.db.PrepareContext(ctx, `SELECT data FROM mql_snapshot ORDER BY first`)
	if pgCode(err) == "42P01" {
		return nil
	}
	if err != nil {
		return err
	}
	defer stmt.Close()
	rows, err := stmt.QueryContext(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var data []byte
		if err := rows.Scan(&data); err != nil {
			return err
		}
		if err := fn(data); err != nil {
			return err
		}
	}
	return rows.Err()
}

// resetSnapshot empties the log. The next write rewrites it (it finds it behind its head).
func (b *pgBackend) resetSnapshot(ctx context.Context) error {
	if !b.schema {
		return nil
	}
	_, err := b.db.ExecContext(ctx, `DELETE FROM mql_snapshot`)
	if pgCode(err) == "42P01" {
		return nil
	}
	return err
}

func (b *pgBackend) txNodeQuads(ctx context.Context, id record.TxID) ([]quad.Quad, error) {
	own, err := subjectQuads(ctx, b.qs, codec.TxIRI(id))
	if err != nil {
		return nil, err
	}
	out := own[:0]
	for _, q := range own {
		if q.Label == codec.TxIRI(id) {
			q.Object = pgMapText(q.Object, pgUnescapeText)
			out = append(out, q)
		}
	}
	return out, nil
}

// txNodeMatches compares the quads of transaction id's node, labelled with it, with want by
// their hashes, in one query: reading them through Cayley costs a query per value, and the
// node of a transaction of 1,000 claims names 1,000 records.
func (b *pgBackend) txNodeMatches(ctx context.Context, id record.TxID, want []quad.Quad) (bool, error) {
	node, label := quadHash(codec.TxIRI(id)), string(quadHash(codec.TxIRI(id)))
	rows, err := b.db.QueryContext(ctx, `SELECT predicate_hash, object_hash, label_hash FROM quads WHERE subject_hash = $1`, node)
	if err != nil {
		return false, err
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var p, o, l []byte
		if err := rows.Scan(&p, &o, &l); err != nil {
			return false, err
		}
		if string(l) == label {
			got = append(got, string(p)+string(o))
		}
	}
	if err := rows.Err(); err != nil {
		return false, err
	}
	mine := make([]string, len(want))
	for i, q := range want {
		mine[i] = string(quadHash(q.Predicate)) + string(quadHash(pgMapText(q.Object, pgEscapeText)))
	}
	slices.Sort(got)
	slices.Sort(mine)
	return slices.Equal(got, mine), nil
}

// watchCommits calls fn with the head another process announced on each of its commits, and
// with 0 whenever notifications may have been missed (the listening connection was re-made),
// until ctx ends.
func (b *pgBackend) watchCommits(ctx context.Context, fn func(head record.TxID)) {
	l := pq.NewListener(b.dsn, 100*time.Millisecond, 5*time.Second, func(ev pq.ListenerEventType, _ error) {})
	defer l.Close()
	listened := make(chan error, 1)
	go func() { listened <- l.Listen(pgCommitChannel) }()
	select {
	case <-ctx.Done():
		return
	case err := <-listened:
		if err != nil {
			return
		}
	}
	fn(0) // commits made while the listener connected
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-l.Notify:
			// Announcements that arrived meanwhile are covered by one load: under a stream of
			// commits a process loads them in groups instead of one query per commit.
			head := notified(n)
		drain:
			for {
				select {
				case n := <-l.Notify:
					if h := notified(n); h == 0 || head == 0 {
						head = 0
					} else {
						head = max(head, h)
					}
				default:
					break drain
				}
			}
			fn(head)
		}
	}
}

// txLog is a backend whose writes keep a log of decoded transactions beside the quads, in the
// same database transaction, and announce their commits (PostgreSQL).
type txLog interface {
	txsAfter(ctx context.Context, head record.TxID) ([]*record.Tx, bool, error)
	applyLogged(ctx context.Context, quads []quad.Quad, txs []*record.Tx, history func(from, to record.TxID) []*record.Tx) error
	rebuildLog(ctx context.Context, head record.TxID, history func(from, to record.TxID) []*record.Tx) error
	watchCommits(ctx context.Context, fn func(head record.TxID))
}

// notified is the head a notification announced, or 0 for a lost connection (nil) or a
// payload that is not a transaction id.
func notified(n *pq.Notification) record.TxID {
	if n == nil {
		return 0
	}
	id, err := strconv.ParseInt(n.Extra, 10, 64)
	if err != nil || id < 0 {
		return 0
	}
	return record.TxID(id)
}

var (
	_ snapshotter = (*pgBackend)(nil)
	_ txLog       = (*pgBackend)(nil)
)
