package graphstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	graphlog "github.com/cayleygraph/cayley/graph/log"
	csql "github.com/cayleygraph/cayley/graph/sql"
	"github.com/cayleygraph/quad"
	"github.com/lib/pq"
	"github.com/lib/pq/oid"

	"github.com/mql-dev/mql/graphstore/record"
)

// The PostgreSQL writer. mql reads a PostgreSQL store through Cayley's SQL quad store but
// writes its rows itself, in the transaction that holds the writer lock (pgBackend.lockWriters),
// so that the lock fences the write: PostgreSQL commits both or neither. The rows are exactly
// those Cayley's graph/sql writer (ApplyDeltas, RunTxPostgres) would write for the same quads,
// which TestPostgresWriterMatchesCayley checks table by table:
//
//   - nodes: one row per distinct value, keyed by its hash (quad.HashOf: SHA-1 of the value's
//     N-Quads form), with refs = how many quad directions name it and the value in the
//     columns of its type (csql.NodeValues: IRI in value_string with iri true, a string in
//     value_string with NUL bytes written as \x00, a typed string also in datatype, an int in
//     value_int, …). A value already stored gets its refs increased (ON CONFLICT (hash) DO
//     UPDATE SET refs = nodes.refs + EXCLUDED.refs); its other columns are left as they are.
//   - quads: one row per quad, in the order given (horizon is a sequence), with the four hashes
//     (label_hash NULL for a triple) and ts = now(), the transaction's start. A quad already
//     stored violates a unique index and fails the whole write, as Cayley's does with
//     IgnoreDup false (mql never writes a quad twice: every quad carries its new transaction's
//     label).
//
// Cayley runs one INSERT per node and per quad; here a statement inserts up to
// pgQuadsPerStatement quads and their nodes (see insert), whose values reach PostgreSQL in the
// text lib/pq sends for Cayley's (byte strings in binary rather than as hex text, which
// PostgreSQL stores the same), so PostgreSQL stores the same bytes. Statements that share a
// node add their counts to the same row, so refs end the same as in one statement.
//
// The write transaction is the place for anything else that must commit with the quads: a
// table of decoded transactions (a snapshot, as bbolt keeps) written before the COMMIT, or a
// NOTIFY telling other processes that a transaction committed (PostgreSQL delivers it at
// commit, and never for a write rolled back).

// pgQuadsPerStatement bounds a statement, so that a large write (an import) does not become one
// statement holding all of its quads, in memory twice, on each side. A write of 1,000 claims is
// one statement.
const pgQuadsPerStatement = 20000

// pgNodeColumns are the value columns of nodes, in the order of the INSERT.
var pgNodeColumns = []string{"value", "value_string", "datatype", "language", "iri", "bnode",
	"value_int", "value_bool", "value_float", "value_time"}

// pgSchema is Cayley's PostgreSQL schema, as graph/sql's Init creates it with the
// registration of graph/sql/postgres (BYTEA hashes, BIGSERIAL horizon, conditional unique
// indexes, fill factor 50), without its four foreign keys from quads to nodes. It is created in
// the write transaction of a new store's genesis, so that a store never exists without its
// genesis.
//
// The foreign keys are left out because they cost half of every write (four lookups in nodes
// per quad row, by trigger: 20,000 quad rows took 4.6 s with them and 2.3 s without on the
// development machine) and guard against nothing mql's writer can do: it writes every node a
// quad names in the same statement as the quad, Cayley's reads do not use them, and mql check
// reads every quad back through Cayley. Stores created with them keep them and work the same.
const pgSchema = `CREATE TABLE nodes (
	hash BYTEA PRIMARY KEY,
	refs INT NOT NULL,
	value BYTEA,
	value_string TEXT,
	datatype TEXT,
	language TEXT,
	iri BOOLEAN,
	bnode BOOLEAN,
	value_int BIGINT,
	value_bool BOOLEAN,
	value_float double precision,
	value_time timestamp with time zone
);
CREATE TABLE quads (
	horizon BIGSERIAL PRIMARY KEY,
	subject_hash BYTEA NOT NULL,
	predicate_hash BYTEA NOT NULL,
	object_hash BYTEA NOT NULL,
	label_hash BYTEA,
	ts timestamp
);
CREATE UNIQUE INDEX spo_unique ON quads (subject_hash, predicate_hash, object_hash) WHERE label_hash IS NULL;
CREATE UNIQUE INDEX spol_unique ON quads (subject_hash, predicate_hash, object_hash, label_hash) WHERE label_hash IS NOT NULL;
CREATE INDEX spo_index ON quads (subject_hash, predicate_hash, object_hash) WITH (FILLFACTOR = 50);
CREATE INDEX ops_index ON quads (object_hash, predicate_hash, subject_hash) WITH (FILLFACTOR = 50);
CREATE INDEX pos_index ON quads (predicate_hash, object_hash, subject_hash) WITH (FILLFACTOR = 50);
CREATE INDEX osp_index ON quads (object_hash, subject_hash, predicate_hash) WITH (FILLFACTOR = 50);`

// pgWrite is one write transaction holding the writer lock, on a connection of its own.
type pgWrite struct {
	conn        *sql.Conn
	tx          *sql.Tx
	xid         int64 // the transaction's id (txid_current)
	pid         int   // its session's backend
	db          *sql.DB
	idleTimeout time.Duration
	done        bool // committed or rolled back; the lock is released

	// What commits with the quads (applyLogged): the transaction log's row, written with the
	// last quads, or, when the log is rewritten, its rows, written after them; and the head
	// announced on pgCommitChannel (0: none).
	logRow *pgChunk
	log    func(context.Context) error
	notify record.TxID

	beforeCommit func(*pgWrite) // see pgBackend
	perStatement int
}

// commit writes quads (after creating the schema, for a new store) and commits. On any error
// the transaction is rolled back, or its session ended: nothing of it is stored, and the lock
// is released either way.
func (w *pgWrite) commit(ctx context.Context, quads []quad.Quad, createSchema bool) (err error) {
	defer func() {
		if err != nil && !errors.Is(err, errCommitUnknown) {
			w.end()
			if pgSessionLost(err) {
				err = fmt.Errorf("the session holding the writer lock ended before the write was committed, and PostgreSQL rolled the write back with it (PostgreSQL ends a session that holds the lock without a word from its process for longer than WriteIdleTimeout — was this process paused? — or the connection failed): %w", err)
			}
		}
	}()
	if createSchema {
		if _, err := w.tx.ExecContext(ctx, pgSchema+"\n"+pgLogSchema); err != nil {
			return fmt.Errorf("creating the schema: %w", err)
		}
	}
	per := w.perStatement
	if per <= 0 {
		per = pgQuadsPerStatement
	}
	for len(quads) > 0 {
		n := min(len(quads), per)
		if err := w.insert(ctx, quads[:n], n == len(quads)); err != nil {
			return err
		}
		quads = quads[n:]
	}
	if w.log != nil {
		if err := w.log(ctx); err != nil {
			return err
		}
	}
	if w.beforeCommit != nil {
		w.beforeCommit(w)
	}
	w.done = true
	cerr := w.tx.Commit()
	if cerr == nil {
		w.conn.Close()
		return nil
	}
	discard(w.conn)
	if !pgSessionLost(cerr) {
		return cerr // PostgreSQL refused the COMMIT: rolled back
	}
	// The COMMIT may have reached PostgreSQL and only its answer been lost, or the session may
	// have ended before it (a process paused between its INSERTs and its COMMIT loses the
	// lock like any other): ask.
	committed, qerr := w.committed()
	switch {
	case qerr != nil:
		return fmt.Errorf("%w: %w (asking PostgreSQL whether it committed: %v)", errCommitUnknown, cerr, qerr)
	case committed:
		return nil
	}
	return cerr
}

// committed asks PostgreSQL, on another connection, whether the write transaction committed.
// A session whose client is gone may still be finishing, or (if nothing told PostgreSQL the
// client is gone) idle until WriteIdleTimeout ends it: wait for the answer that long.
func (w *pgWrite) committed() (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), w.idleTimeout+5*time.Second)
	defer cancel()
	for {
		var status sql.NullString
		if err := w.db.QueryRowContext(ctx, `SELECT txid_status($1)`, w.xid).Scan(&status); err != nil {
			return false, err
		}
		switch status.String {
		case "committed":
			return true, nil
		case "aborted":
			return false, nil
		case "":
			return false, fmt.Errorf("PostgreSQL no longer knows transaction %d", w.xid)
		}
		select { // in progress
		case <-ctx.Done():
			return false, fmt.Errorf("transaction %d is still in progress", w.xid)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// errCommitUnknown marks a write whose connection failed during its commit when PostgreSQL
// could not then be asked whether it committed: it may have recorded it.
var errCommitUnknown = errors.New("the connection failed during the commit and PostgreSQL could not be asked whether it committed, so it may or may not have recorded the write; the next read or write loads it if it did")

// insert writes quads and their nodes in one statement, each column sent as one array
// parameter and unnested, the quads WITH ORDINALITY so that their horizons follow their order.
// (Multi-row VALUES took a parameter per cell, ~12,000 per 1,000 quads, each parsed, typed and
// bound by PostgreSQL: a third of the statement's time.) Byte strings go as binary bytea
// arrays, other values as text arrays whose elements are the text lib/pq sends for one value
// (encode), so that PostgreSQL parses them into the same stored values as Cayley's INSERTs.
// In a store created with foreign keys they are checked at the end of the statement, when the
// nodes are there. The last statement of a write also carries the log's row (logRow) and the
// announcement (notify), so that a write of up to pgQuadsPerStatement quads is one statement
// and the COMMIT.
func (w *pgWrite) insert(ctx context.Context, quads []quad.Quad, last bool) error {
	d := graphlog.InsertQuads(quads) // what Cayley's ApplyDeltas computes: nodes with counts, sorted by hash
	var args []any
	var q strings.Builder
	q.WriteString(`WITH `)
	if len(d.IncNode) > 0 {
		refs := make([]any, len(d.IncNode))
		hashes := make([][]byte, len(d.IncNode))
		cols := make([][]any, len(pgNodeColumns))
		for i := range cols {
			cols[i] = make([]any, len(d.IncNode))
		}
		for i, n := range d.IncNode {
			typ, vals, err := csql.NodeValues(csql.NodeHash{ValueHash: n.Hash}, n.Val)
			if err != nil {
				return fmt.Errorf("encoding %v: %w", n.Val, err)
			}
			refs[i] = int64(n.RefInc)
			hashes[i], _ = vals[0].([]byte) // a node's hash is never empty (nil would be NULL, refused)
			for j, col := range typ.Columns() {
				k := slices.Index(pgNodeColumns, col)
				if k < 0 {
					return fmt.Errorf("value %v goes to column %q, which nodes does not have", n.Val, col)
				}
				cols[k][i] = vals[1+j]
			}
		}
		ra, err := pgTextArray(refs)
		if err != nil {
			return err
		}
		args = append(args, ra, pgByteaArray(hashes))
		for k, col := range cols {
			if pgNodeColumns[k] == "value" {
				b := make([][]byte, len(col))
				for i, v := range col {
					if v != nil { // a []byte, sent as bytes even when empty, as lib/pq sends it
						bb, _ := v.([]byte)
						b[i] = append([]byte{}, bb...)
					}
				}
				args = append(args, pgByteaArray(b))
				continue
			}
			a, err := pgTextArray(col)
			if err != nil {
				return fmt.Errorf("encoding column %s: %w", pgNodeColumns[k], err)
			}
			args = append(args, a)
		}
		q.WriteString(`n AS (INSERT INTO nodes(refs, hash, ` + strings.Join(pgNodeColumns, ", ") + `)
SELECT * FROM unnest($1::int[], $2::bytea[], $3::bytea[], $4::text[], $5::text[], $6::text[], $7::boolean[], $8::boolean[],
	$9::bigint[], $10::boolean[], $11::double precision[], $12::timestamptz[])
ON CONFLICT (hash) DO UPDATE SET refs = nodes.refs + EXCLUDED.refs), `)
	}
	var dirs [4][][]byte
	for _, u := range d.QuadAdd {
		for k, h := range u.Quad.Dirs() {
			var b []byte
			if v := (csql.NodeHash{ValueHash: h}).SQLValue(); v != nil {
				b = v.([]byte)
			}
			dirs[k] = append(dirs[k], b)
		}
	}
	n := len(args)
	fmt.Fprintf(&q, `q AS (INSERT INTO quads(subject_hash, predicate_hash, object_hash, label_hash, ts)
SELECT s, p, o, l, now() FROM unnest($%d::bytea[], $%d::bytea[], $%d::bytea[], $%d::bytea[]) WITH ORDINALITY AS u(s, p, o, l, i)
ORDER BY i RETURNING horizon)`, n+1, n+2, n+3, n+4)
	for _, col := range dirs {
		args = append(args, pgByteaArray(col))
	}
	if c := w.logRow; last && c != nil {
		// Our quads are the newest: the lock keeps every other writer out.
		n := len(args)
		fmt.Fprintf(&q, `, l AS (INSERT INTO mql_snapshot(first, last, sealed, horizon, data) VALUES ($%d, $%d, $%d, (SELECT max(horizon) FROM q), $%d))`, n+1, n+2, n+3, n+4)
		args = append(args, int64(c.first), int64(c.last), c.sealed, c.data)
	}
	if last && w.notify > 0 {
		n := len(args)
		fmt.Fprintf(&q, ` SELECT pg_notify($%d, $%d)`, n+1, n+2)
		args = append(args, pgCommitChannel, strconv.FormatInt(int64(w.notify), 10))
	} else {
		q.WriteString(` SELECT 1`)
	}
	if _, err := w.tx.ExecContext(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("writing quads: %w", err)
	}
	return nil
}

// pgByteaArray is a bytea[] in PostgreSQL's binary format (lib/pq sends a []byte parameter in
// binary), a nil element as NULL: the bytes arrive as they are, as a single bytea parameter's do.
func pgByteaArray(xs [][]byte) []byte {
	size := 20
	for _, x := range xs {
		size += 4 + len(x)
	}
	b := make([]byte, 0, size)
	b = binary.BigEndian.AppendUint32(b, 1) // dimensions
	b = binary.BigEndian.AppendUint32(b, 0) // flags (ignored on input)
	b = binary.BigEndian.AppendUint32(b, uint32(oid.T_bytea))
	b = binary.BigEndian.AppendUint32(b, uint32(len(xs)))
	b = binary.BigEndian.AppendUint32(b, 1) // lower bound
	for _, x := range xs {
		if x == nil {
			b = binary.BigEndian.AppendUint32(b, math.MaxUint32) // -1: NULL
			continue
		}
		b = binary.BigEndian.AppendUint32(b, uint32(len(x)))
		b = append(b, x...)
	}
	return b
}

// pgTextArray is an array literal of the values, each element the text lib/pq sends for the
// value as a parameter of its own (nil: NULL), quoted.
func pgTextArray(xs []any) (string, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		var s string
		switch v := x.(type) {
		case nil:
			b.WriteString("NULL")
			continue
		case string:
			s = v
		case int64:
			s = strconv.FormatInt(v, 10)
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64)
		case bool:
			s = strconv.FormatBool(v)
		case time.Time:
			s = string(pq.FormatTimestamp(v))
		default:
			return "", fmt.Errorf("no array encoding for a %T", x)
		}
		b.WriteByte('"')
		for _, r := range []byte(s) {
			if r == '"' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteByte(r)
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

// end rolls the transaction back, if it is still open, which releases the lock; a session
// that cannot roll back is closed, which does the same.
func (w *pgWrite) end() {
	if w.done {
		return
	}
	w.done = true
	if err := w.tx.Rollback(); err != nil {
		discard(w.conn)
		return
	}
	w.conn.Close()
}

// pgSessionLost reports whether err ended the session (a lost connection, or a FATAL error
// such as idle_in_transaction_session_timeout) rather than one statement.
func pgSessionLost(err error) bool {
	var pe *pq.Error
	if errors.As(err, &pe) {
		return pe.Severity == pq.Efatal || pe.Severity == pq.Epanic
	}
	var ne net.Error
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.As(err, &ne)
}
