package graphstore

import (
	"context"
	"database/sql"
	"testing"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// pgLogRows returns the (first, last, sealed) of every row of the store's transaction log.
func pgLogRows(t *testing.T, db *sql.DB) [][3]int64 {
	t.Helper()
	rows, err := db.Query(`SELECT first, last, sealed::int FROM mql_snapshot ORDER BY first`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][3]int64
	for rows.Next() {
		var r [3]int64
		if err := rows.Scan(&r[0], &r[1], &r[2]); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// pgScanned returns the transactions the quads of dsn hold, read through Cayley.
func pgScanned(t *testing.T, dsn string) []*record.Tx {
	t.Helper()
	be, err := openPostgres(context.Background(), dsn, true, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer be.close()
	quads, err := be.all(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	txs, err := codec.DecodeTxs(quads)
	if err != nil {
		t.Fatal(err)
	}
	return txs
}

// contiguous checks that the log's rows cover 1..head without a gap, and returns how many of
// them are not sealed.
func contiguous(t *testing.T, rows [][3]int64, head record.TxID) (unsealed int) {
	t.Helper()
	next := int64(1)
	for _, r := range rows {
		if r[0] != next || r[1] < r[0] {
			t.Fatalf("log rows %v: a row starts at %d, want %d", rows, r[0], next)
		}
		next = r[1] + 1
		if r[2] == 0 {
			unsealed++
		}
	}
	if next-1 != int64(head) {
		t.Fatalf("log rows %v end at tx %d, want %d", rows, next-1, head)
	}
	return unsealed
}

// A PostgreSQL store keeps its transactions in its log, written by each write: a process
// opening it loads the log instead of scanning the quads, and gets what the quads say.
func TestPostgresLogOpen(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	a := mustOpen(t, dsn, Options{})
	writeSample(t, a)
	// More single-claim writes than the unsealed tail may hold: the log seals them.
	for i := range pgLogTail + 10 {
		if _, err := a.Write(ctx, "owner", countingClaim("T", i+1)); err != nil {
			t.Fatal(err)
		}
	}
	want := txsOf(a)
	db := pgOpenDB(t, dsn)
	rows := pgLogRows(t, db)
	if unsealed := contiguous(t, rows, head(a)); unsealed >= pgLogTail || len(rows) > 20 {
		t.Fatalf("log of %d transactions has %d rows, %d of them unsealed: %v", head(a), len(rows), unsealed, rows)
	}
	a.Close() // a process crash leaves the same: the log is written with the quads, not at Close
	b := mustOpen(t, dsn, Options{})
	defer b.Close()
	if !b.fromSnapshot {
		t.Fatal("the store was scanned, not loaded from its log")
	}
	sameTxs(t, txsOf(b), want)
	sameTxs(t, txsOf(b), pgScanned(t, dsn))
}

// A store whose log is missing (written by an mql before the log existed), emptied, or
// damaged is scanned at open, and the log is rewritten, so that the next process loads it.
func TestPostgresLogRebuilt(t *testing.T) {
	for _, c := range []struct {
		name, sql string
	}{
		{"missing", `DROP TABLE mql_snapshot`},
		{"emptied", `DELETE FROM mql_snapshot`},
		{"damaged", `UPDATE mql_snapshot SET data = overlay(data placing '\xff'::bytea from length(data) - 3 for 1) WHERE first = 1`},
		{"gap", `DELETE FROM mql_snapshot WHERE first = (SELECT min(first) FROM mql_snapshot WHERE first > 1)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := newPGDatabase(t)
			ctx := context.Background()
			a := mustOpen(t, dsn, Options{})
			writeSample(t, a)
			for i := range 3 {
				if _, err := a.Write(ctx, "owner", countingClaim("T", i+1)); err != nil {
					t.Fatal(err)
				}
			}
			want := txsOf(a)
			a.Close()
			db := pgOpenDB(t, dsn)
			if _, err := db.Exec(c.sql); err != nil {
				t.Fatal(err)
			}
			b := mustOpen(t, dsn, Options{})
			if b.fromSnapshot {
				t.Fatal("loaded from a log that does not hold the store")
			}
			sameTxs(t, txsOf(b), want)
			b.Close()
			contiguous(t, pgLogRows(t, db), want[len(want)-1].ID)
			c := mustOpen(t, dsn, Options{})
			defer c.Close()
			if !c.fromSnapshot {
				t.Fatal("the rewritten log was not used")
			}
			sameTxs(t, txsOf(c), want)
		})
	}
}

// Quads written without the log (an mql that does not keep it, writing beside one that does)
// are found by the other processes all the same: the log is not current, so they read the
// quads; and the next write rewrites the log.
func TestPostgresLogBehindQuads(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	a := mustOpen(t, dsn, Options{})
	defer a.Close()
	b := mustOpen(t, dsn, Options{})
	defer b.Close()
	b.stopWatch() // b loads only when it refreshes
	<-b.watchDone
	b.stopWatch = nil
	writeSample(t, a)
	// a writes one transaction the old way: its quads only.
	a.wmu.Lock()
	a.imu.Lock()
	tx, quads, err := a.buildOne(ctx, "owner", countingClaim("old", 1))
	if err != nil {
		t.Fatal(err)
	}
	unlock, err := a.be.lockWriters(ctx)
	if err != nil {
		t.Fatal(err)
	}
	err = a.be.apply(ctx, quads)
	unlock()
	a.imu.Unlock()
	a.wmu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if head(b) != tx.ID {
		t.Fatalf("b is at tx %d, want the quads-only tx %d", head(b), tx.ID)
	}
	// b's next write finds the log behind its head and rewrites it whole.
	if _, err := b.Write(ctx, "owner", countingClaim("new", 1)); err != nil {
		t.Fatal(err)
	}
	contiguous(t, pgLogRows(t, pgOpenDB(t, dsn)), head(b))
	c := mustOpen(t, dsn, Options{})
	defer c.Close()
	if !c.fromSnapshot {
		t.Fatal("the rewritten log was not used")
	}
	sameTxs(t, txsOf(c), txsOf(b))
	sameTxs(t, txsOf(c), pgScanned(t, dsn))
}

// Check compares the log with the quads: a log whose copy of a transaction differs is
// reported and removed, and the next open scans the quads.
func TestPostgresLogChecked(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	a := mustOpen(t, dsn, Options{})
	writeSample(t, a)
	txs := txsOf(a)
	a.Close()
	// A log that says tx 2 was written by someone else, with a valid checksum.
	forged := make([]*record.Tx, len(txs))
	for i, tx := range txs {
		c := *tx
		forged[i] = &c
	}
	forged[1].By = "mallory"
	data, err := encodeChunk(forged)
	if err != nil {
		t.Fatal(err)
	}
	db := pgOpenDB(t, dsn)
	if _, err := db.Exec(`DELETE FROM mql_snapshot`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO mql_snapshot(first, last, sealed, horizon, data) VALUES (1, $1, true, (SELECT max(horizon) FROM quads), $2)`, int64(len(txs)), data); err != nil {
		t.Fatal(err)
	}
	r, err := CheckDSN(ctx, dsn, Options{}, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range r.Problems {
		if p.Kind == ProblemSnapshot && p.Tx == 2 {
			found = true
		}
	}
	if !found {
		t.Fatalf("check did not report the forged log: %+v", r.Problems)
	}
	if rows := pgLogRows(t, db); len(rows) != 0 {
		t.Fatalf("the forged log was kept: %v", rows)
	}
	b := mustOpen(t, dsn, Options{})
	defer b.Close()
	if b.fromSnapshot {
		t.Fatal("loaded from the log after check removed it")
	}
	sameTxs(t, txsOf(b), txs)
}

// Open trusts the log only if its genesis and last transaction match their transaction nodes:
// a log whose last transaction says another principal made it (with a valid checksum) is not
// used, and the quads are read instead.
func TestPostgresLogLastMustMatch(t *testing.T) {
	dsn := newPGDatabase(t)
	a := mustOpen(t, dsn, Options{})
	writeSample(t, a)
	txs := txsOf(a)
	a.Close()
	forged := make([]*record.Tx, len(txs))
	for i, tx := range txs {
		c := *tx
		forged[i] = &c
	}
	forged[len(forged)-1].By = "mallory"
	data, err := encodeChunk(forged)
	if err != nil {
		t.Fatal(err)
	}
	db := pgOpenDB(t, dsn)
	if _, err := db.Exec(`DELETE FROM mql_snapshot`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`INSERT INTO mql_snapshot(first, last, sealed, horizon, data) VALUES (1, $1, true, (SELECT max(horizon) FROM quads), $2)`, int64(len(txs)), data); err != nil {
		t.Fatal(err)
	}
	b := mustOpen(t, dsn, Options{})
	defer b.Close()
	if b.fromSnapshot {
		t.Fatal("loaded from a log whose last transaction differs from its quads")
	}
	sameTxs(t, txsOf(b), txs)
}
