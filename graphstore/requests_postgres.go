package graphstore

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mql-dev/mql/graphstore/kv/pgkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// mql_requests holds the writes processes queued for the holder of the writer lock (see
// requests.go): a row per request, named by its process (id), in the order queued (seq),
// with who makes it, its kind and payload, and until when it may be built (expires: its
// process waits no longer for the lock). state 1 says it was built, by the holder whose
// commit wrote its outcome: the transaction (tx, and at, its time in Unix nanoseconds; NULL
// when refused), what the build returned (result) and its refusal (err). The process that
// queued it deletes the row as it takes the outcome; rows whose process went away are pruned
// a minute after they expire.
const pgRequestsSchema = `CREATE TABLE IF NOT EXISTS mql_requests (seq bigint GENERATED ALWAYS AS IDENTITY, id bytea PRIMARY KEY,
principal text NOT NULL, kind text NOT NULL, payload bytea NOT NULL, expires timestamptz NOT NULL,
state smallint NOT NULL DEFAULT 0, tx bigint, at bigint, result bytea, err bytea)`

// queues reports whether this process queues its requests and builds others': whether the
// store has mql_requests, which the first call once the store exists makes sure of
// (prepareRequests), at a write rather than at every Open.
func (b *pgBackend) queues() bool {
	if !b.kvs.Exists() {
		return false
	}
	b.reqOnce.Do(b.prepareRequests)
	return b.requests.Load()
}

// prepareRequests makes sure a store of this format created before mql_requests has it,
// creating it in a write transaction (under the writer lock, so that processes do not race
// to create it). A store it cannot be created in (a role without the right) goes on without:
// its processes take turns on the lock as before.
func (b *pgBackend) prepareRequests() {
	ctx, cancel := context.WithTimeout(context.Background(), b.lockTimeout+5*time.Second)
	defer cancel()
	found, err := b.kvs.Found(ctx, []string{"mql_requests"})
	if err != nil {
		return
	}
	if !found["mql_requests"] {
		wt, err := b.kvs.WriteWith(ctx, pgkv.WriteOptions{})
		if err != nil {
			return
		}
		if err := wt.CommitWith(ctx, pgkv.CommitOptions{Extra: func(bt *pgx.Batch) { bt.Queue(pgRequestsSchema) }}); err != nil {
			b.wcHead = 0 // pgkv emptied the cache
			return
		}
	}
	b.requests.Store(true)
}

func (b *pgBackend) follow(ctx context.Context, reqs []queued, wait bool) (*writeTx, []queued, map[string]reqOutcome, error) {
	ids := make([][]byte, len(reqs))
	bys := make([]string, len(reqs))
	kinds := make([]string, len(reqs))
	payloads := make([][]byte, len(reqs))
	for i, q := range reqs {
		ids[i], bys[i], kinds[i], payloads[i] = q.id, q.by, q.kind, q.payload
	}
	// Queued in a transaction of its own, committed before this process waits for the lock,
	// so that the holder sees it; without waiting for the disk: nobody was told of it, and a
	// crash that loses it loses a write not acknowledged.
	queue := func(bt *pgx.Batch) {
		bt.Queue("BEGIN")
		bt.Queue("SELECT set_config('synchronous_commit', 'off', true)")
		bt.Queue(`INSERT INTO mql_requests (id, principal, kind, payload, expires)
SELECT u.id, u.principal, u.kind, u.payload, clock_timestamp() + $5::bigint * interval '1 millisecond'
FROM unnest($1::bytea[], $2::text[], $3::text[], $4::bytea[]) AS u(id, principal, kind, payload)`, ids, bys, kinds, payloads, b.lockTimeout.Milliseconds())
		bt.Queue("COMMIT")
	}
	served := map[string]reqOutcome{}
	if wait {
		// The lock in shared mode, which every process waiting so gets at once when the
		// holder is done; an outcome there was committed by a holder that released the lock
		// only once it was durable.
		err := b.kvs.WaitShared(ctx, queue, func(bt *pgx.Batch) { queueTakeBuilt(bt, ids, served) })
		if err != nil {
			return nil, nil, served, storageErr("beginning a write", b.writeErr(err))
		}
		if len(served) == len(reqs) {
			return nil, nil, served, errServed
		}
	}
	var pending []queued
	wt, err := b.kvs.WriteWith(ctx, pgkv.WriteOptions{
		Before: func(bt *pgx.Batch) {
			if !wait {
				queue(bt)
			}
		},
		Locked: func(bt *pgx.Batch) {
			queueTakeBuilt(bt, ids, served)
			queuePending(bt, &pending)
		},
	})
	if err != nil {
		return nil, nil, served, storageErr("beginning a write", b.writeErr(err))
	}
	return &writeTx{be: b, tx: wt}, pending, served, nil
}

// queueTakeBuilt removes the rows of the requests of ids that were built, and puts their
// outcomes in out. (With the lock held, in either mode, no holder is writing them.)
func queueTakeBuilt(bt *pgx.Batch, ids [][]byte, out map[string]reqOutcome) {
	bt.Queue(`DELETE FROM mql_requests WHERE id = ANY($1) AND state = 1 RETURNING id, state, tx, at, result, err`, ids).Query(scanOutcomes(out))
}

// scanOutcomes reads the rows of mql_requests that a DELETE … RETURNING id, state, tx, at,
// result, err returns into out.
func scanOutcomes(out map[string]reqOutcome) func(rows pgx.Rows) error {
	return func(rows pgx.Rows) error {
		for rows.Next() {
			var id []byte
			var state int16
			var tx, at *int64
			var o reqOutcome
			if err := rows.Scan(&id, &state, &tx, &at, &o.result, &o.err); err != nil {
				return err
			}
			o.done = state == 1
			if tx != nil {
				o.tx = record.TxID(*tx)
			}
			if at != nil {
				o.at = time.Unix(0, *at).UTC()
			}
			out[string(id)] = o
		}
		return rows.Err()
	}
}

// queuePending reads the requests queued that the holder of the lock may build, locking their
// rows: a process that withdraws one waits for the holder's commit and finds its outcome.
func queuePending(bt *pgx.Batch, out *[]queued) {
	bt.Queue(`SELECT id, principal, kind, payload FROM mql_requests WHERE state = 0 AND expires > clock_timestamp()
ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED`, maxGroup).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var q queued
			if err := rows.Scan(&q.id, &q.by, &q.kind, &q.payload); err != nil {
				return err
			}
			*out = append(*out, q)
		}
		return rows.Err()
	})
}

func (b *pgBackend) take(ctx context.Context, ids [][]byte) (map[string]reqOutcome, error) {
	outs := map[string]reqOutcome{}
	err := b.kvs.Batch(ctx, func(bt *pgx.Batch) {
		bt.Queue("BEGIN")
		bt.Queue("SELECT set_config('synchronous_commit', 'on', true)")
		bt.Queue(`DELETE FROM mql_requests WHERE id = ANY($1) RETURNING id, state, tx, at, result, err`, ids).Query(scanOutcomes(outs))
		// Its commit waits for the disk, and the WAL is sequential: the outcome taken is
		// durable, with the transaction it names.
		pgkv.QueueFlush(bt)
		bt.Queue("COMMIT")
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// requestParts are the statements of a group commit that record rc in mql_requests.
func requestParts(rc reqCommit) []pgkv.Part {
	var parts []pgkv.Part
	if len(rc.ids) > 0 {
		txs := make([]*int64, len(rc.ids))
		ats := make([]*int64, len(rc.ids))
		results := make([][]byte, len(rc.ids))
		errs := make([][]byte, len(rc.ids))
		for i, o := range rc.outcomes {
			if o.tx != 0 {
				tx, at := int64(o.tx), o.at.UnixNano()
				txs[i], ats[i] = &tx, &at
			}
			results[i], errs[i] = o.result, o.err
		}
		parts = append(parts, func(p func(int) string) (string, []any) {
			return `UPDATE mql_requests AS r SET state = 1, tx = u.tx, at = u.at, result = u.result, err = u.err
FROM unnest(` + p(1) + `::bytea[], ` + p(2) + `::bigint[], ` + p(3) + `::bigint[], ` + p(4) + `::bytea[], ` + p(5) + `::bytea[]) AS u(id, tx, at, result, err)
WHERE r.id = u.id`, []any{rc.ids, txs, ats, results, errs}
		})
	}
	if len(rc.drop) > 0 {
		parts = append(parts, func(p func(int) string) (string, []any) {
			return `DELETE FROM mql_requests WHERE id = ANY(` + p(1) + `::bytea[])`, []any{rc.drop}
		})
	}
	return parts
}

// pruneRequests removes the rows of processes that went away before they took their outcome
// or withdrew their request.
const pruneRequests = `DELETE FROM mql_requests WHERE expires < clock_timestamp() - interval '1 minute'`
