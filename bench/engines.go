package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"time"

	_ "github.com/lib/pq"
	_ "github.com/mattn/go-sqlite3"

	"github.com/mql-dev/mql"
)

// engine is one store the workload is replayed into and read from.
type engine interface {
	batch(ops []claimOp) error
	single(op claimOp) error
	revoke(key string) error
	deriveLevel(ds []deriveOp) error
	derive(d deriveOp) error // one derivation, its own transaction
	impactNames(ref string) ([]string, error)
	live(key string) (int, error)
	find() (int, error)
	why(key string) (int, error)
	impact(ref string) (int, error)
	context(subjects []string) (int, error)
	history(key string) (int, error)
	close() error
}

// ---- mql ------------------------------------------------------------------------------------

type mqlEngine struct {
	db  *mql.DB
	ctx context.Context
}

func openMQL(ctx context.Context, dsn string) (*mqlEngine, error) {
	db, err := mql.Open(ctx, dsn, mql.Options{})
	if err != nil {
		return nil, err
	}
	return &mqlEngine{db: db, ctx: ctx}, nil
}

func (e *mqlEngine) setup() error {
	for _, a := range agents {
		if _, err := e.db.AddPrincipal(e.ctx, mql.PrincipalSpec{Name: a, Type: mql.Agent, By: "owner"}); err != nil {
			return err
		}
	}
	return nil
}

func spec(c claimOp) mql.AssertSpec {
	s := mql.AssertSpec{Subject: c.Subject, Predicate: c.Predicate, By: c.By, ValidUntil: c.ValidUntil}
	if c.Source != "" {
		s.Sources = []mql.Source{{ID: c.Source}}
	}
	switch c.Predicate {
	case "region":
		s.Value = mql.String(c.Str)
	case "soc2":
		s.Value = mql.Bool(c.Bool)
	default:
		s.Value = mql.Number(c.Num)
	}
	return s
}

func (e *mqlEngine) batch(ops []claimOp) error {
	specs := make([]mql.AssertSpec, len(ops))
	for i, c := range ops {
		specs[i] = spec(c)
	}
	_, err := e.db.AssertBatch(e.ctx, "a1", specs)
	return err
}

func (e *mqlEngine) single(op claimOp) error { _, err := e.db.Assert(e.ctx, spec(op)); return err }

func (e *mqlEngine) revoke(key string) error {
	live, err := e.db.Live(e.ctx, key)
	if err != nil || len(live) != 1 {
		return fmt.Errorf("revoke %s: live %v: %v", key, live, err)
	}
	_, err = e.db.Revoke(e.ctx, mql.RevokeSpec{Claim: live[0].Ref, By: "owner", Because: "benchmark"})
	return err
}

// deriveLevel derives a level's artifacts from 8 goroutines: they share group commits.
func (e *mqlEngine) deriveLevel(ds []deriveOp) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(ds))
	next := make(chan deriveOp)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for d := range next {
				if _, err := e.db.Derive(e.ctx, mql.DeriveSpec{Artifact: d.Name, From: d.Inputs, By: "a1"}); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, d := range ds {
		next <- d
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

func (e *mqlEngine) derive(d deriveOp) error {
	_, err := e.db.Derive(e.ctx, mql.DeriveSpec{Artifact: d.Name, From: d.Inputs, By: "a1"})
	return err
}

// impactNames is the impact set of ref by artifact name (every version 1 in the workload).
func (e *mqlEngine) impactNames(ref string) ([]string, error) {
	r, err := e.db.Impact(e.ctx, ref, 0)
	var out []string
	for _, d := range r.Dependents {
		out = append(out, d.Artifact.Name)
	}
	return out, err
}

func (e *mqlEngine) live(key string) (int, error) {
	c, err := e.db.Live(e.ctx, key)
	return len(c), err
}

func (e *mqlEngine) find() (int, error) {
	r, err := e.db.Find(e.ctx, mql.FindQuery{
		Select: []string{"?v", "?p"},
		Where: []mql.Cond{
			{Subject: mql.Var("v"), Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
			{Subject: mql.Var("v"), Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
			{Subject: mql.Var("v"), Predicate: "price_per_seat", Op: "=", Object: mql.Var("p")},
		},
		OrderBy: []mql.Order{{Var: "?p"}},
		Limit:   10,
	})
	return len(r.Rows), err
}

func (e *mqlEngine) why(key string) (int, error) {
	n, err := e.db.Why(e.ctx, key)
	if err != nil {
		return 0, err
	}
	return countNodes(n), nil
}

func countNodes(n *mql.Node) int {
	if n == nil {
		return 0
	}
	c := 1
	for _, ch := range n.Children {
		c += countNodes(ch)
	}
	return c
}

func (e *mqlEngine) impact(ref string) (int, error) {
	r, err := e.db.Impact(e.ctx, ref, 0)
	return len(r.Dependents), err
}

func (e *mqlEngine) context(subjects []string) (int, error) {
	r, err := e.db.Context(e.ctx, subjects, 100_000)
	return len(r.Lines), err
}

func (e *mqlEngine) history(key string) (int, error) {
	r, err := e.db.History(e.ctx, key)
	return len(r.Claims), err
}

func (e *mqlEngine) close() error { return e.db.Close() }

// ---- SQL: the relational peer, on SQLite or PostgreSQL -----------------------------------------

const sqliteSchema = `
CREATE TABLE txs(id INTEGER PRIMARY KEY, at INTEGER NOT NULL, by TEXT NOT NULL);
CREATE TABLE principals(name TEXT PRIMARY KEY, type TEXT NOT NULL, tx INTEGER NOT NULL);
CREATE TABLE sources(id TEXT PRIMARY KEY, tx INTEGER NOT NULL);
CREATE TABLE claims(
	id INTEGER PRIMARY KEY,
	subject TEXT NOT NULL, predicate TEXT NOT NULL, version INTEGER NOT NULL,
	vtype TEXT NOT NULL, vtext TEXT, vnum REAL,
	by TEXT NOT NULL, kind TEXT NOT NULL, confidence REAL NOT NULL,
	valid_until INTEGER, tx INTEGER NOT NULL, supersedes INTEGER,
	live INTEGER NOT NULL,
	UNIQUE(subject, predicate, version));
CREATE INDEX claims_live ON claims(subject, predicate) WHERE live = 1;
CREATE INDEX claims_live_value ON claims(predicate, vtext, vnum) WHERE live = 1;
CREATE TABLE claim_sources(claim INTEGER NOT NULL, source TEXT NOT NULL, PRIMARY KEY(claim, source)) WITHOUT ROWID;
CREATE TABLE revocations(claim INTEGER PRIMARY KEY, by TEXT NOT NULL, because TEXT, tx INTEGER NOT NULL);
CREATE TABLE artifacts(id INTEGER PRIMARY KEY, name TEXT NOT NULL, version INTEGER NOT NULL, by TEXT NOT NULL,
	confidence REAL NOT NULL, tx INTEGER NOT NULL, UNIQUE(name, version));
CREATE TABLE inputs(ref TEXT NOT NULL, artifact INTEGER NOT NULL, PRIMARY KEY(ref, artifact)) WITHOUT ROWID;
`

// postgresSchema is sqliteSchema in PostgreSQL's types ("by" is a reserved word there, so the
// queries quote it).
const postgresSchema = `
CREATE TABLE txs(id BIGSERIAL PRIMARY KEY, at BIGINT NOT NULL, "by" TEXT NOT NULL);
CREATE TABLE principals(name TEXT PRIMARY KEY, type TEXT NOT NULL, tx BIGINT NOT NULL);
CREATE TABLE sources(id TEXT PRIMARY KEY, tx BIGINT NOT NULL);
CREATE TABLE claims(
	id BIGSERIAL PRIMARY KEY,
	subject TEXT NOT NULL, predicate TEXT NOT NULL, version BIGINT NOT NULL,
	vtype TEXT NOT NULL, vtext TEXT, vnum DOUBLE PRECISION,
	"by" TEXT NOT NULL, kind TEXT NOT NULL, confidence DOUBLE PRECISION NOT NULL,
	valid_until BIGINT, tx BIGINT NOT NULL, supersedes BIGINT,
	live INTEGER NOT NULL,
	UNIQUE(subject, predicate, version));
CREATE INDEX claims_live ON claims(subject, predicate) WHERE live = 1;
CREATE INDEX claims_live_value ON claims(predicate, vtext, vnum) WHERE live = 1;
CREATE TABLE claim_sources(claim BIGINT NOT NULL, source TEXT NOT NULL, PRIMARY KEY(claim, source));
CREATE TABLE revocations(claim BIGINT PRIMARY KEY, "by" TEXT NOT NULL, because TEXT, tx BIGINT NOT NULL);
CREATE TABLE artifacts(id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, version BIGINT NOT NULL, "by" TEXT NOT NULL,
	confidence DOUBLE PRECISION NOT NULL, tx BIGINT NOT NULL, UNIQUE(name, version));
CREATE TABLE inputs(ref TEXT NOT NULL, artifact BIGINT NOT NULL, PRIMARY KEY(ref, artifact));
`

// sqlEngine is the model as plain SQL tables. Queries are written with ? placeholders;
// q rewrites them for PostgreSQL.
type sqlEngine struct {
	db  *sql.DB
	now int64
	pg  bool
}

func sqliteDSN(path, sync string) string {
	return "file:" + path + "?_journal_mode=WAL&_synchronous=" + sync + "&_busy_timeout=5000&_foreign_keys=off"
}

func openSQLite(path string, create bool) (*sqlEngine, error) {
	return openSQLiteDSN(sqliteDSN(path, "NORMAL"), create)
}

// openSQLiteSync opens an existing SQLite peer with another synchronous setting.
func openSQLiteSync(path, sync string) (*sqlEngine, error) {
	return openSQLiteDSN(sqliteDSN(path, sync), false)
}

func openSQLiteDSN(dsn string, create bool) (*sqlEngine, error) {
	db, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // one writer connection; reads are sequential in the benchmark
	e := &sqlEngine{db: db, now: time.Now().Unix()}
	if create {
		if err := e.create(sqliteSchema); err != nil {
			db.Close()
			return nil, err
		}
	}
	return e, nil
}

// openPostgresSQL opens the model in the PostgreSQL database dsn, creating its tables if
// create is set.
func openPostgresSQL(dsn string, create bool) (*sqlEngine, error) {
	db, err := sql.Open("postgres", dsn)
	if err == nil {
		err = db.Ping()
	}
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", redactDSN(dsn), err)
	}
	e := &sqlEngine{db: db, now: time.Now().Unix(), pg: true}
	if create {
		if err := e.create(postgresSchema); err != nil {
			db.Close()
			return nil, err
		}
	}
	return e, nil
}

func (e *sqlEngine) create(schema string) error {
	if _, err := e.db.Exec(schema); err != nil {
		return fmt.Errorf("creating the tables: %w", err)
	}
	return e.inTx("owner", func(tx *sql.Tx, id int64) error {
		for _, p := range append([]string{"owner"}, agents...) {
			if _, err := tx.Exec(e.q(`INSERT INTO principals(name, type, tx) VALUES (?, 'agent', ?)`), p, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// q rewrites the ? placeholders of query as $1, $2, … for PostgreSQL. (No query here has a ?
// inside a string literal.)
func (e *sqlEngine) q(query string) string {
	if !e.pg {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// PostgreSQL's driver has no LastInsertId: there an INSERT returns the new row's id instead.
// insertQuery and stmtID run a prepared INSERT; execID runs one directly.

func (e *sqlEngine) insertQuery(query string) string {
	if e.pg {
		return e.q(query) + " RETURNING id"
	}
	return query
}

func (e *sqlEngine) stmtID(stmt *sql.Stmt, args ...any) (int64, error) {
	if e.pg {
		var id int64
		err := stmt.QueryRow(args...).Scan(&id)
		return id, err
	}
	res, err := stmt.Exec(args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func (e *sqlEngine) execID(tx *sql.Tx, query string, args ...any) (int64, error) {
	if e.pg {
		var id int64
		err := tx.QueryRow(e.insertQuery(query), args...).Scan(&id)
		return id, err
	}
	res, err := tx.Exec(query, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// inTx runs fn in one SQL transaction, recorded in txs like an mql transaction.
func (e *sqlEngine) inTx(by string, fn func(tx *sql.Tx, id int64) error) error {
	tx, err := e.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	id, err := e.execID(tx, `INSERT INTO txs(at, "by") VALUES (?, ?)`, time.Now().UnixNano(), by)
	if err != nil {
		return err
	}
	if err := fn(tx, id); err != nil {
		return err
	}
	return tx.Commit()
}

// insertClaims asserts claims in order: each supersedes the key's live claim (the same rule as
// mql for equal ranks), keeping `live` current in the same transaction.
func (e *sqlEngine) insertClaims(tx *sql.Tx, txID int64, ops []claimOp) error {
	sel, err := tx.Prepare(e.q(`SELECT coalesce(max(version), 0), max(CASE WHEN live = 1 THEN id END) FROM claims WHERE subject = ? AND predicate = ?`))
	if err != nil {
		return err
	}
	defer sel.Close()
	unlive, err := tx.Prepare(e.q(`UPDATE claims SET live = 0 WHERE id = ?`))
	if err != nil {
		return err
	}
	defer unlive.Close()
	ins, err := tx.Prepare(e.insertQuery(`INSERT INTO claims(subject, predicate, version, vtype, vtext, vnum, "by", kind, confidence, valid_until, tx, supersedes, live)
		VALUES (?, ?, ?, ?, ?, ?, ?, 'observed', 1, ?, ?, ?, 1)`))
	if err != nil {
		return err
	}
	defer ins.Close()
	src, err := tx.Prepare(e.q(`INSERT INTO sources(id, tx) VALUES (?, ?) ON CONFLICT DO NOTHING`))
	if err != nil {
		return err
	}
	defer src.Close()
	cs, err := tx.Prepare(e.q(`INSERT INTO claim_sources(claim, source) VALUES (?, ?)`))
	if err != nil {
		return err
	}
	defer cs.Close()
	for _, c := range ops {
		var ver int64
		var liveID sql.NullInt64
		if err := sel.QueryRow(c.Subject, c.Predicate).Scan(&ver, &liveID); err != nil {
			return err
		}
		if liveID.Valid {
			if _, err := unlive.Exec(liveID.Int64); err != nil {
				return err
			}
		}
		var vtype string
		var vtext any
		var vnum any
		switch c.Predicate {
		case "region":
			vtype, vtext = "string", c.Str
		case "soc2":
			vtype, vnum = "bool", map[bool]int{true: 1, false: 0}[c.Bool]
		default:
			vtype, vnum = "number", c.Num
		}
		var until any
		if !c.ValidUntil.IsZero() {
			until = c.ValidUntil.Unix()
		}
		var sup any
		if liveID.Valid {
			sup = liveID.Int64
		}
		id, err := e.stmtID(ins, c.Subject, c.Predicate, ver+1, vtype, vtext, vnum, c.By, until, txID, sup)
		if err != nil {
			return err
		}
		if c.Source != "" {
			if _, err := src.Exec(c.Source, txID); err != nil {
				return err
			}
			if _, err := cs.Exec(id, c.Source); err != nil {
				return err
			}
		}
	}
	return nil
}

func (e *sqlEngine) batch(ops []claimOp) error {
	return e.inTx("a1", func(tx *sql.Tx, id int64) error { return e.insertClaims(tx, id, ops) })
}

func (e *sqlEngine) single(op claimOp) error {
	return e.inTx(op.By, func(tx *sql.Tx, id int64) error { return e.insertClaims(tx, id, []claimOp{op}) })
}

func splitKey(key string) (string, string) {
	s, p, _ := strings.Cut(key, ".")
	return s, p
}

func (e *sqlEngine) revoke(key string) error {
	s, p := splitKey(key)
	return e.inTx("owner", func(tx *sql.Tx, txID int64) error {
		var id int64
		if err := tx.QueryRow(e.q(`SELECT id FROM claims WHERE subject = ? AND predicate = ? AND live = 1`), s, p).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(e.q(`INSERT INTO revocations(claim, "by", because, tx) VALUES (?, 'owner', 'benchmark', ?)`), id, txID); err != nil {
			return err
		}
		_, err := tx.Exec(e.q(`UPDATE claims SET live = 0 WHERE id = ?`), id)
		return err
	})
}

// ref resolves an input reference to the key of the inputs table: c:ID for a claim version
// (Subject.predicate@N), a:ID for an artifact's newest version.
func (e *sqlEngine) ref(q interface {
	QueryRow(string, ...any) *sql.Row
}, in string) (string, error) {
	var id int64
	if key, ver, ok := strings.Cut(in, "@"); ok {
		s, p := splitKey(key)
		if err := q.QueryRow(e.q(`SELECT id FROM claims WHERE subject = ? AND predicate = ? AND version = ?`), s, p, ver).Scan(&id); err != nil {
			return "", err
		}
		return fmt.Sprintf("c:%d", id), nil
	}
	if err := q.QueryRow(e.q(`SELECT id FROM artifacts WHERE name = ? ORDER BY version DESC LIMIT 1`), in).Scan(&id); err != nil {
		return "", err
	}
	return fmt.Sprintf("a:%d", id), nil
}

// deriveLevel writes each derivation as its own transaction, like mql (one writer connection).
func (e *sqlEngine) deriveLevel(ds []deriveOp) error {
	for _, d := range ds {
		if err := e.derive(d); err != nil {
			return err
		}
	}
	return nil
}

func (e *sqlEngine) derive(d deriveOp) error {
	{
		err := e.inTx("a1", func(tx *sql.Tx, txID int64) error {
			id, err := e.execID(tx, `INSERT INTO artifacts(name, version, "by", confidence, tx) VALUES (?, 1, 'a1', 1, ?)`, d.Name, txID)
			if err != nil {
				return err
			}
			for _, in := range d.Inputs {
				r, err := e.ref(tx, in)
				if err != nil {
					return fmt.Errorf("input %s: %w", in, err)
				}
				if _, err := tx.Exec(e.q(`INSERT INTO inputs(ref, artifact) VALUES (?, ?)`), r, id); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// impactNames is the impact set of ref by artifact name, from the same recursive CTE as impact.
func (e *sqlEngine) impactNames(ref string) ([]string, error) {
	r, err := e.ref(e.db, ref)
	if err != nil {
		return nil, err
	}
	rows, err := e.db.Query(e.q(impactCTE), r)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		var ver, depth int
		if err := rows.Scan(&name, &ver, &depth); err != nil {
			return nil, err
		}
		out = append(out, name)
	}
	return out, rows.Err()
}

type sqlClaim struct {
	id, version, tx    int64
	vtype, by, kind    string
	vtext              sql.NullString
	vnum, confidence   sql.NullFloat64
	until, supersedes  sql.NullInt64
	live               int
	revokedBy, because sql.NullString
	source             sql.NullString
	at                 int64
}

func (e *sqlEngine) live(key string) (int, error) {
	s, p := splitKey(key)
	var c sqlClaim
	return e.count(`SELECT id, version, vtype, vtext, vnum, "by", kind, confidence, tx FROM claims
		WHERE subject = ? AND predicate = ? AND live = 1 AND (valid_until IS NULL OR valid_until > ?)`, []any{s, p, e.now},
		&c.id, &c.version, &c.vtype, &c.vtext, &c.vnum, &c.by, &c.kind, &c.confidence, &c.tx)
}

func (e *sqlEngine) find() (int, error) {
	var s string
	var p float64
	return e.count(`SELECT s.subject, p.vnum FROM claims s
		JOIN claims r ON r.subject = s.subject AND r.predicate = 'region' AND r.live = 1 AND r.vtext = 'EU' AND (r.valid_until IS NULL OR r.valid_until > ?)
		JOIN claims p ON p.subject = s.subject AND p.predicate = 'price_per_seat' AND p.live = 1 AND (p.valid_until IS NULL OR p.valid_until > ?)
		WHERE s.predicate = 'soc2' AND s.live = 1 AND s.vnum = 1 AND (s.valid_until IS NULL OR s.valid_until > ?)
		ORDER BY p.vnum LIMIT 10`, []any{e.now, e.now, e.now}, &s, &p)
}

// versions reads every version of a key with its transaction, revocation and sources: what
// why (the live claim, the versions it superseded, their evidence) and history need.
func (e *sqlEngine) versions(key string) (int, error) {
	s, p := splitKey(key)
	var c sqlClaim
	return e.count(`SELECT c.id, c.version, c.vtype, c.vtext, c.vnum, c.by, c.kind, c.confidence, c.valid_until, c.tx, c.supersedes, c.live,
			t.at, r.by, r.because, cs.source
		FROM claims c JOIN txs t ON t.id = c.tx
		LEFT JOIN revocations r ON r.claim = c.id
		LEFT JOIN claim_sources cs ON cs.claim = c.id
		WHERE c.subject = ? AND c.predicate = ? ORDER BY c.version DESC`, []any{s, p},
		&c.id, &c.version, &c.vtype, &c.vtext, &c.vnum, &c.by, &c.kind, &c.confidence, &c.until, &c.tx, &c.supersedes, &c.live,
		&c.at, &c.revokedBy, &c.because, &c.source)
}

// count runs query and scans its rows into dest, which the caller drops: what an engine is
// timed on is reading the rows, and it answers with how many there were.
func (e *sqlEngine) count(query string, args []any, dest ...any) (int, error) {
	rows, err := e.db.Query(e.q(query), args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return 0, err
		}
		n++
	}
	return n, rows.Err()
}

func (e *sqlEngine) why(key string) (int, error)     { return e.versions(key) }
func (e *sqlEngine) history(key string) (int, error) { return e.versions(key) }

// impactCTE walks dependents with a recursive CTE, keeping each artifact's shortest depth.
const impactCTE = `WITH RECURSIVE dep(id, depth) AS (
			SELECT artifact, 1 FROM inputs WHERE ref = ?
			UNION
			SELECT i.artifact, dep.depth + 1 FROM dep JOIN inputs i ON i.ref = 'a:' || dep.id
		)
		SELECT a.name, a.version, min(dep.depth) FROM dep JOIN artifacts a ON a.id = dep.id GROUP BY a.id ORDER BY 3, 1`

// impactSetCTE is impactCTE without depths: UNION then dedupes artifact ids, where impactCTE
// keeps one row per (artifact, depth) and, over a graph with many diamonds, revisits an
// artifact once for each length of path that reaches it.
const impactSetCTE = `WITH RECURSIVE dep(id) AS (
			SELECT artifact FROM inputs WHERE ref = ?
			UNION
			SELECT i.artifact FROM dep JOIN inputs i ON i.ref = 'a:' || dep.id
		)
		SELECT a.name, a.version FROM dep JOIN artifacts a ON a.id = dep.id ORDER BY 1`

// impactSet is the impact set of ref through impactSetCTE: names and versions, no depths.
func (e *sqlEngine) impactSet(ref string) (int, error) {
	r, err := e.ref(e.db, ref)
	if err != nil {
		return 0, err
	}
	var name string
	var ver int
	return e.count(impactSetCTE, []any{r}, &name, &ver)
}

// impact walks dependents with impactCTE.
func (e *sqlEngine) impact(ref string) (int, error) {
	r, err := e.ref(e.db, ref)
	if err != nil {
		return 0, err
	}
	var name string
	var ver, depth int
	return e.count(impactCTE, []any{r}, &name, &ver, &depth)
}

func (e *sqlEngine) context(subjects []string) (int, error) {
	q := `SELECT subject, predicate, version, vtype, vtext, vnum FROM claims
		WHERE live = 1 AND (valid_until IS NULL OR valid_until > ?) AND subject IN (?` + strings.Repeat(",?", len(subjects)-1) + `)
		ORDER BY subject, predicate`
	args := []any{e.now}
	for _, s := range subjects {
		args = append(args, s)
	}
	rows, err := e.db.Query(e.q(q), args...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	lines := map[string]*strings.Builder{}
	for rows.Next() {
		var s, p, vt string
		var ver int
		var vtext sql.NullString
		var vnum sql.NullFloat64
		if err := rows.Scan(&s, &p, &ver, &vt, &vtext, &vnum); err != nil {
			return 0, err
		}
		b := lines[s]
		if b == nil {
			b = &strings.Builder{}
			b.WriteString(s + ":")
			lines[s] = b
		}
		if vtext.Valid {
			fmt.Fprintf(b, " %s=%q @%d", p, vtext.String, ver)
		} else {
			fmt.Fprintf(b, " %s=%g @%d", p, vnum.Float64, ver)
		}
	}
	return len(lines), rows.Err()
}

func (e *sqlEngine) close() error { return e.db.Close() }
