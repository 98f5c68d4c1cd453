package legacy

// A PostgreSQL store of the earlier format: Cayley's SQL schema, as the old mql wrote it
// (graphstore/pgwrite.go at 05cc83f: the rows Cayley's own writer writes). nodes holds one row
// per value, keyed by its hash (refs.HashOf: SHA-1 of its N-Quads form), the value in the
// columns of its type; quads one row per quad, with the four hashes and a horizon that follows
// the order of the writes. Reading it through Cayley's SQL quad store would cost a query per
// value; it is read here in one query instead, ordered by transaction, with the values decoded
// as Cayley's NameOf decodes them.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cayleygraph/cayley/graph/refs"
	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/pquads"
	"github.com/lib/pq"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// pgLockKey is the advisory lock the old mql's writers took (transaction-level, exclusive)
// around every write. Read holds it shared, so that no old writer commits while it reads.
const pgLockKey = 0x6d716c5f77726974 // "mql_writ"

// txLabelRE matches the value_string of a transaction graph's node, urn:mql:tx:N.
const txLabelRE = `^urn:mql:tx:[1-9][0-9]{0,17}$`

// badLabel is true for a quad (q) whose graph (l) is not a transaction graph.
const badLabel = `l.hash IS NULL OR l.iri IS NOT TRUE OR l.value_string IS NULL OR l.value_string !~ '` + txLabelRE + `'`

// nodeCols are the columns of a value in nodes, as Cayley's NameOf reads them.
const nodeCols = `%[1]s.hash, %[1]s.value, %[1]s.value_string, %[1]s.datatype, %[1]s.language, %[1]s.iri, %[1]s.bnode, %[1]s.value_int, %[1]s.value_bool, %[1]s.value_float, %[1]s.value_time`

var pgQuadsQuery = `SELECT substring(l.value_string FROM ` + strconv.Itoa(len(codec.PrefTx)+1) + `)::bigint AS tx, q.horizon,
	q.subject_hash, ` + fmt.Sprintf(nodeCols, "s") + `,
	q.predicate_hash, ` + fmt.Sprintf(nodeCols, "p") + `,
	q.object_hash, ` + fmt.Sprintf(nodeCols, "o") + `
FROM quads q
JOIN nodes l ON l.hash = q.label_hash
LEFT JOIN nodes s ON s.hash = q.subject_hash
LEFT JOIN nodes p ON p.hash = q.predicate_hash
LEFT JOIN nodes o ON o.hash = q.object_hash
ORDER BY 1, 2`

// readPostgres reads the old-format PostgreSQL store dsn (see Read).
func readPostgres(ctx context.Context, dsn string, opts Options, fn func(*record.Tx) error) (Summary, error) {
	shown := graphstore.RedactDSN(dsn)
	timeout := opts.OpenTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	named, err := pgNamed(dsn)
	if err != nil {
		return Summary{}, fmt.Errorf("cannot read %s: %w: %v", shown, graphstore.ErrBadDSN, err)
	}
	db, err := sql.Open("postgres", named)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			return Summary{}, ctxErr
		}
		return Summary{}, graphstore.StorageFailure(fmt.Errorf("cannot connect to PostgreSQL at %s: %w", shown, err))
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// One snapshot of the database for every query, and nothing written.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return Summary{}, pgErr(ctx, shown, "beginning a read-only transaction", err)
	}
	defer tx.Rollback()
	p := &pgReader{shown: shown, tx: tx}
	sum, err := p.read(ctx, timeout, fn)
	return sum, unwrapFn(err)
}

// pgNamed is dsn with an application_name saying who reads (unless it names one), so that a
// writer of the old mql kept waiting can tell.
func pgNamed(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", err
	}
	q := u.Query()
	if q.Get("application_name") == "" {
		q.Set("application_name", "mql migrate pid "+strconv.Itoa(os.Getpid()))
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func pgErr(ctx context.Context, shown, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return graphstore.StorageFailure(fmt.Errorf("%s: %s: %w", shown, what, err))
}

type pgReader struct {
	shown string
	tx    *sql.Tx
}

func (p *pgReader) read(ctx context.Context, timeout time.Duration, fn func(*record.Tx) error) (Summary, error) {
	r := &reader{fn: fn, sum: Summary{Backend: "postgres"}}
	tables := map[string]bool{}
	rows, err := p.tx.QueryContext(ctx, `SELECT c.relname FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
WHERE s.nspname = current_schema() AND c.relkind IN ('r', 'p') AND (c.relname IN ('quads', 'nodes') OR c.relname LIKE 'mql\_%')`)
	if err != nil {
		return r.sum, pgErr(ctx, p.shown, "reading the schema", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return r.sum, pgErr(ctx, p.shown, "reading the schema", err)
		}
		tables[name] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return r.sum, pgErr(ctx, p.shown, "reading the schema", err)
	}
	r.sum.Snapshot = tables["mql_snapshot"]
	// The current format's tables are mql_<bucket> (docs/FORMAT.md); the old mql's own were
	// mql_snapshot only.
	currentFormat := false
	for name := range tables {
		if strings.HasPrefix(name, "mql_") && name != "mql_snapshot" {
			currentFormat = true
		}
	}
	switch {
	case currentFormat:
		return r.sum, errKV
	case !tables["quads"] || !tables["nodes"]:
		return r.sum, notOld("the database %s holds no mql store of the earlier format (no Cayley tables quads and nodes)", p.shown)
	}
	// Wait for an old writer's write to end, and keep the next one out.
	if _, err := p.tx.ExecContext(ctx, fmt.Sprintf(`SET LOCAL lock_timeout = %d`, timeout.Milliseconds())); err != nil {
		return r.sum, pgErr(ctx, p.shown, "setting the lock timeout", err)
	}
	if _, err := p.tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, int64(pgLockKey)); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) && pe.Code == "55P03" { // lock_not_available
			return r.sum, failure(fmt.Sprintf("%s is in use: an mql of the earlier format is writing it (this waited %s for its writer lock); stop it and try again", p.shown, timeout), graphstore.ErrInUse)
		}
		return r.sum, pgErr(ctx, p.shown, "taking the old writers' lock", err)
	}
	// Every quad must lie in a transaction graph.
	var total, bad int
	err = p.tx.QueryRowContext(ctx, `SELECT count(*), count(*) FILTER (WHERE `+badLabel+`)
FROM quads q LEFT JOIN nodes l ON l.hash = q.label_hash`).Scan(&total, &bad)
	if err != nil {
		return r.sum, pgErr(ctx, p.shown, "counting the quads", err)
	}
	if bad > 0 {
		return r.sum, damaged(p.shown, p.outside(ctx, bad))
	}
	rows, err = p.tx.QueryContext(ctx, pgQuadsQuery)
	if err != nil {
		return r.sum, pgErr(ctx, p.shown, "reading the quads", err)
	}
	defer rows.Close()
	var (
		cur   record.TxID
		quads []quad.Quad
	)
	flush := func() error {
		if len(quads) == 0 {
			return nil
		}
		tx, err := codec.DecodeTx(cur, quads)
		if err != nil {
			return damaged(p.shown, fmt.Sprintf("tx %d does not decode: %s", cur, strings.TrimPrefix(err.Error(), fmt.Sprintf("tx %d: ", cur))))
		}
		if want := max(r.next, 1); cur != want {
			return damaged(p.shown, fmt.Sprintf("it holds no quads of tx %d, but some of tx %d: transaction ids run from 1 without gaps", want, cur))
		}
		if err := r.call(tx, len(quads)); err != nil {
			return err
		}
		quads = quads[:0]
		return nil
	}
	var s, pr, o pgNode
	dest := []any{new(int64), new(int64)}
	dest = append(dest, s.dest()...)
	dest = append(dest, pr.dest()...)
	dest = append(dest, o.dest()...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return r.sum, pgErr(ctx, p.shown, "reading the quads", err)
		}
		id, horizon := record.TxID(*dest[0].(*int64)), *dest[1].(*int64)
		if id != cur {
			if err := flush(); err != nil {
				return r.sum, err
			}
			cur = id
		}
		var q quad.Quad
		for _, d := range []struct {
			name string
			n    *pgNode
			v    *quad.Value
		}{{"subject", &s, &q.Subject}, {"predicate", &pr, &q.Predicate}, {"object", &o, &q.Object}} {
			v, err := d.n.value()
			if err != nil {
				return r.sum, damaged(p.shown, fmt.Sprintf("the quad of horizon %d in tx %d: its %s: %v", horizon, id, d.name, err))
			}
			*d.v = v
		}
		q.Label = codec.TxIRI(id)
		quads = append(quads, codec.CanonQuad(q))
	}
	if err := rows.Err(); err != nil {
		return r.sum, pgErr(ctx, p.shown, "reading the quads", err)
	}
	if err := flush(); err != nil {
		return r.sum, err
	}
	if r.sum.Transactions == 0 {
		return r.sum, damaged(p.shown, "it holds no transaction 1 (the genesis); an mql store always has one")
	}
	if r.sum.Quads != total {
		return r.sum, damaged(p.shown, fmt.Sprintf("it holds %d quads, but %d were read in its transactions", total, r.sum.Quads))
	}
	return r.sum, nil
}

// outside names the first quads (n in all) that lie outside every transaction graph.
func (p *pgReader) outside(ctx context.Context, n int) string {
	msg := fmt.Sprintf("%d of its quads lie outside every transaction graph <%sN>", n, codec.PrefTx)
	rows, err := p.tx.QueryContext(ctx, `SELECT q.horizon, coalesce(l.value_string, '') FROM quads q LEFT JOIN nodes l ON l.hash = q.label_hash
WHERE `+badLabel+` ORDER BY q.horizon LIMIT 3`)
	if err != nil {
		return msg
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var horizon int64
		var label string
		if rows.Scan(&horizon, &label) != nil {
			break
		}
		if label == "" {
			found = append(found, fmt.Sprintf("the quad of horizon %d has no graph", horizon))
		} else {
			found = append(found, fmt.Sprintf("the quad of horizon %d is in the graph %.80q", horizon, label))
		}
	}
	if len(found) > 0 {
		msg += " (" + strings.Join(found, "; ") + ")"
	}
	return msg
}

// pgNode is a value's hash in quads and its row of nodes.
type pgNode struct {
	want   []byte // the hash quads holds
	hash   []byte // nodes.hash: nil if nodes has no row for it
	data   []byte
	str    sql.NullString
	typ    sql.NullString
	lang   sql.NullString
	iri    sql.NullBool
	bnode  sql.NullBool
	vint   sql.NullInt64
	vbool  sql.NullBool
	vfloat sql.NullFloat64
	vtime  sql.NullTime
}

func (n *pgNode) dest() []any {
	return []any{&n.want, &n.hash, &n.data, &n.str, &n.typ, &n.lang, &n.iri, &n.bnode, &n.vint, &n.vbool, &n.vfloat, &n.vtime}
}

// value decodes the row as Cayley's NameOf does, checks it against its hash, and undoes the
// old mql's escape of the text \x00 (see pgUnescapeText).
func (n *pgNode) value() (quad.Value, error) {
	if n.hash == nil {
		return nil, fmt.Errorf("its value (hash %x) is missing from nodes", n.want)
	}
	var v quad.Value
	switch {
	case n.str.Valid:
		switch {
		case n.iri.Bool:
			v = quad.IRI(n.str.String)
		case n.bnode.Bool:
			v = quad.BNode(n.str.String)
		case n.lang.Valid:
			v = quad.LangString{Value: quad.String(unescapeNullByte(n.str.String)), Lang: n.lang.String}
		case n.typ.Valid:
			v = quad.TypedString{Value: quad.String(unescapeNullByte(n.str.String)), Type: quad.IRI(n.typ.String)}
		default:
			v = quad.String(unescapeNullByte(n.str.String))
		}
	case n.vint.Valid:
		v = quad.Int(n.vint.Int64)
	case n.vbool.Valid:
		v = quad.Bool(n.vbool.Bool)
	case n.vfloat.Valid:
		v = quad.Float(n.vfloat.Float64)
	case n.vtime.Valid:
		v = quad.Time(n.vtime.Time.UTC())
	default:
		qv, err := pquads.UnmarshalValue(n.data)
		if err != nil {
			return nil, fmt.Errorf("its value (hash %x) does not decode: %v", n.want, err)
		}
		v = qv
	}
	if v == nil {
		return nil, fmt.Errorf("its value (hash %x) is empty", n.want)
	}
	if h := refs.HashOf(v); string(h[:]) != string(n.want) {
		return nil, fmt.Errorf("its value %s does not have the hash it is stored under (%x): its row in nodes changed since it was written", codec.Show(v), n.want)
	}
	return pgMapText(v, pgUnescapeText), nil
}

// Cayley's SQL store writes a NUL byte as the text \x00 and reads every \x00 back as a NUL; the
// old mql wrote a literal text "\x00" as "\x" NUL "00" (which Cayley stores as "\x\x0000"), and
// pgUnescapeText turns that back.
const pgNULMarker = "\\x\x0000"

func unescapeNullByte(s string) string { return strings.ReplaceAll(s, `\x00`, "\x00") }
func pgUnescapeText(s string) string   { return strings.ReplaceAll(s, pgNULMarker, `\x00`) }

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
