package main

// A stalled PostgreSQL writer (issue 11, item 7): the real mql binary, writing a stream of
// assertions to a PostgreSQL store, is paused with SIGSTOP at a moment when it holds the
// writer lock. It skips unless MQL_TEST_POSTGRES is set.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/pgtest"
)

// pgLockHolder returns the application_name and state of the session holding mql's writer
// lock on db's database, or "" when nobody holds it.
func pgLockHolder(t *testing.T, db *sql.DB) (app, state string) {
	t.Helper()
	err := db.QueryRow(`SELECT coalesce(a.application_name, ''), coalesce(a.state, '')
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = $1 AND l.objid::bigint = $2`, int64(0x6d716c5f), int64(0x77726974)).Scan(&app, &state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return app, state
}

// pgAcks reads the assertions a `mql --format json` run acknowledged: ref -> tx.
func pgAcks(t *testing.T, out []byte) map[string]int64 {
	t.Helper()
	acks := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var a struct {
			Kind string `json:"kind"`
			Rows []struct {
				Tx  int64  `json:"tx"`
				Ref string `json:"ref"`
			} `json:"rows"`
		}
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil || a.Kind != "assert" || len(a.Rows) != 1 {
			t.Fatalf("not an acknowledgement: %q (%v)", sc.Text(), err)
		}
		acks[a.Rows[0].Ref] = a.Rows[0].Tx
	}
	return acks
}

func pgScript(t *testing.T, dir, subject string, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "assert %s.n = %d by owner\n", subject, i)
	}
	path := filepath.Join(dir, subject+".mql")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPostgresStalledWriter pauses a writing mql process while it holds the writer lock, and
// checks that:
//   - a new reader process opens the store and answers `live` at once;
//   - a new writer that may wait 500ms fails with ErrInUse naming the paused process;
//   - new writer processes (waiting up to the default 10s) all go through once PostgreSQL has
//     ended the paused writer's session (after the default WriteIdleTimeout, 5s);
//   - the paused writer's session is ended, and its transaction with it; the write it was
//     making was queued (docs/RELIABILITY.md, "Writers in other processes share one commit"),
//     so the process that holds the lock next builds it, and the paused writer, resumed, takes
//     that outcome and goes on with its script;
//   - every acknowledged write of every process is in the store, under the transaction its
//     acknowledgement named; transaction ids run 1..head without gaps; `mql check` passes.
func TestPostgresStalledWriter(t *testing.T) {
	dsn := pgtest.Database(t)
	bin := crashBuild(t)
	home, dir := t.TempDir(), t.TempDir()
	ctx := context.Background()
	run := func(timeout time.Duration, args ...string) (stdout, stderr []byte, took time.Duration, err error) {
		c, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		cmd := exec.CommandContext(c, bin, args...)
		cmd.Env = crashCmd(bin, home).Env
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		start := time.Now()
		err = cmd.Run()
		return o.Bytes(), e.Bytes(), time.Since(start), err
	}
	if out, errb, _, err := run(30*time.Second, "--format", "json", "-c", "assert C1.p = 1 by owner", dsn); err != nil {
		t.Fatalf("setup: %v\n%s%s", err, out, errb)
	}
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// The victim writes a long stream; catch it holding the lock.
	const victimN = 3000
	victim := crashCmd(bin, home, "--format", "json", "-f", pgScript(t, dir, "V", victimN), dsn)
	var vout, verr bytes.Buffer
	victim.Stdout, victim.Stderr = &vout, &verr
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	victimDone := make(chan error, 1)
	go func() { victimDone <- victim.Wait() }()
	defer func() {
		victim.Process.Signal(syscall.SIGCONT)
		victim.Process.Kill()
	}()
	name := fmt.Sprintf("mql pid %d", victim.Process.Pid)
	rng := rand.New(rand.NewPCG(1, 2))
	caught, attempts := false, 0
	for deadline := time.Now().Add(20 * time.Second); !caught && time.Now().Before(deadline); {
		attempts++
		time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
		if err := victim.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatalf("SIGSTOP: %v (the victim ended: %s)", err, verr.String())
		}
		// Holding it, and still holding it a moment later: not in the middle of its commit.
		if app, _ := pgLockHolder(t, db); app == name {
			time.Sleep(200 * time.Millisecond)
			app, state := pgLockHolder(t, db)
			caught = app == name && state == "idle in transaction"
		}
		if !caught {
			victim.Process.Signal(syscall.SIGCONT)
		}
	}
	if !caught {
		t.Fatalf("never caught the victim holding the lock in %d attempts", attempts)
	}
	paused := time.Now()
	t.Logf("victim paused holding the writer lock after %d attempts", attempts)

	// A reader process does not wait for it.
	out, errb, took, err := run(20*time.Second, "--format", "json", "-c", "live C1", dsn)
	if err != nil || !strings.Contains(string(out), `"ref":"C1.p@1"`) {
		t.Fatalf("live C1 while a writer is paused: %v after %s\n%s%s", err, took, out, errb)
	}
	if app, _ := pgLockHolder(t, db); app != name {
		t.Fatalf("the reader took %s: the paused writer no longer held the lock when it answered", took)
	}
	t.Logf("live C1 answered in %s while the writer was paused", took)

	// A writer that waits at most 500ms is told who holds the lock.
	w, err := mql.Open(ctx, dsn, mql.Options{WriteLockTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatalf("open while a writer is paused: %v", err)
	}
	start := time.Now()
	_, err = w.Assert(ctx, mql.AssertSpec{Subject: "Q", Predicate: "n", Value: mql.Number(1), By: "owner"})
	w.Close()
	if !errors.Is(err, mql.ErrInUse) || !strings.Contains(err.Error(), name) || time.Since(start) > 3*time.Second {
		t.Fatalf("write while a writer is paused: %v after %s", err, time.Since(start))
	}
	t.Logf("impatient writer: %v", err)

	// Writer processes with the default bounds go through once the paused one loses the lock.
	const writers, each = 3, 20
	type result struct {
		out, errb []byte
		err       error
	}
	results := make(chan result, writers)
	for i := range writers {
		script := pgScript(t, dir, fmt.Sprintf("W%d", i), each)
		go func() {
			o, e, _, err := run(60*time.Second, "--format", "json", "-f", script, dsn)
			results <- result{o, e, err}
		}()
	}
	acked := map[string]int64{}
	for range writers {
		r := <-results
		if r.err != nil {
			t.Fatalf("writer behind a paused writer: %v\n%s", r.err, r.errb)
		}
		for ref, tx := range pgAcks(t, r.out) {
			acked[ref] = tx
		}
	}
	if len(acked) != writers*each {
		t.Fatalf("%d writes acknowledged, want %d", len(acked), writers*each)
	}
	t.Logf("%d writer processes done %s after the pause", writers, time.Since(paused).Round(time.Millisecond))
	if app, _ := pgLockHolder(t, db); app == name {
		t.Fatal("the paused writer still holds the lock")
	}

	// The paused writer wakes up: its own transaction is gone with its session, and it finds
	// the write it was making built by another process, and goes on.
	victim.Process.Signal(syscall.SIGCONT)
	select {
	case err = <-victimDone:
	case <-time.After(120 * time.Second):
		t.Fatal("the resumed writer did not end")
	}
	if err != nil {
		t.Fatalf("the resumed writer: %v\n%s", err, verr.String())
	}
	vacks := pgAcks(t, vout.Bytes())
	if len(vacks) != victimN {
		t.Fatalf("the resumed writer acknowledged %d writes of %d", len(vacks), victimN)
	}
	for ref, tx := range vacks {
		acked[ref] = tx
	}

	// Every acknowledged write is there, under its transaction; nothing else but the setup and
	// the genesis; ids without gaps; the paused write is not there.
	s, err := graphstore.Open(ctx, dsn, graphstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var txs []*record.Tx
	if err := s.Read(ctx, func(ix *index.Index) error {
		for id := record.TxID(1); id <= ix.Head(); id++ {
			txs = append(txs, ix.Tx(id))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	found := map[string]int64{}
	for i, tx := range txs {
		if tx == nil || int64(tx.ID) != int64(i+1) {
			t.Fatalf("transaction %d missing or out of place: ids have a gap", i+1)
		}
		for _, c := range tx.Claims {
			found[c.ID.String()] = int64(tx.ID)
		}
	}
	if len(txs) != 2+len(acked) {
		t.Errorf("%d transactions, want the genesis, the setup and %d acknowledged", len(txs), len(acked))
	}
	for ref, tx := range acked {
		if found[ref] != tx {
			t.Errorf("acknowledged %s in tx %d: found in tx %d", ref, tx, found[ref])
		}
	}
	if out, errb, _, err := run(60*time.Second, "check", dsn); err != nil {
		t.Fatalf("mql check: %v\n%s%s", err, out, errb)
	}
	t.Logf("%d acknowledged writes (%d by the paused writer), head %d, check passes", len(acked), len(vacks), len(txs))
}
