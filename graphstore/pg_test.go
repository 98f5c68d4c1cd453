package graphstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/lib/pq"
)

func TestPostgresMultiProcess(t *testing.T) {
	dsn := newPGDatabase(t)
	const procs, writes = 4, 25
	var cmds []*exec.Cmd
	var outs []string // files, so that no goroutine copies output while we read it
	for p := 0; p < procs; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MQL_HELPER=pg-writer", "MQL_HELPER_DSN="+dsn,
			"MQL_HELPER_WRITES="+strconv.Itoa(writes), "MQL_HELPER_SUBJECT="+fmt.Sprintf("proc%d", p))
		out, err := os.Create(filepath.Join(t.TempDir(), "writer.out"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out.Name())
	}
	// This process writes at the same time, through its own Store.
	s := mustOpen(t, dsn, Options{})
	defer s.Close()
	for i := 1; i <= 5; i++ {
		if _, err := s.Write(context.Background(), "owner", countingClaim("parent", i)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, procs)
	for _, cmd := range cmds {
		go func(cmd *exec.Cmd) { done <- cmd.Wait() }(cmd)
	}
	deadline := time.After(90 * time.Second)
	for range cmds {
		select {
		case err := <-done:
			if err != nil {
				for i := range cmds {
					cmds[i].Process.Kill()
				}
				t.Fatalf("a writer failed: %v\n%s", err, joinOutputs(outs))
			}
		case <-deadline:
			// Diagnose a hang: what the database is doing, and every writer's goroutines.
			t.Logf("database activity:\n%s", pgActivity(dsn))
			for _, cmd := range cmds {
				cmd.Process.Signal(syscall.SIGQUIT)
			}
			time.Sleep(2 * time.Second)
			t.Fatalf("writers did not finish in time\n%s", joinOutputs(outs))
		}
	}
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	txs := txsOf(s)
	checkCounting(t, txs, 1+procs*writes+5)
	per := map[string]int{}
	for _, tx := range txs {
		for _, c := range tx.Claims {
			per[c.ID.Subject]++
		}
	}
	for p := 0; p < procs; p++ {
		if got := per[fmt.Sprintf("proc%d", p)]; got != writes {
			t.Errorf("proc%d: %d claims, want %d", p, got, writes)
		}
	}
	// A fresh open loads the same history.
	s2 := mustOpen(t, dsn, Options{})
	defer s2.Close()
	sameTxs(t, txsOf(s2), txs)
}

func joinOutputs(outs []string) string {
	var b strings.Builder
	for i, name := range outs {
		out, _ := os.ReadFile(name)
		fmt.Fprintf(&b, "--- writer %d:\n%s\n", i, out)
	}
	return b.String()
}

func pgActivity(dsn string) string {
	db, err := sql.Open("postgres", dsn)
	if err != nil {
		return err.Error()
	}
	defer db.Close()
	rows, err := db.Query(`SELECT pid, coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), coalesce(left(query, 100), '') FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var pid int
		var state, wt, we, q string
		rows.Scan(&pid, &state, &wt, &we, &q)
		fmt.Fprintf(&b, "%d %s %s/%s %s\n", pid, state, wt, we, q)
	}
	return b.String()
}

func TestPostgresRefresh(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	a := mustOpen(t, dsn, Options{Owner: "ann"})
	defer a.Close()
	b := mustOpen(t, dsn, Options{Owner: "ignored"})
	defer b.Close()
	if b.Meta().Owner != "ann" {
		t.Fatal("second store wrote its own genesis")
	}
	// Without its commit watcher, b loads a's transactions only when it refreshes.
	b.stopWatch()
	<-b.watchDone
	b.stopWatch = nil
	writeSample(t, a)
	if b.Head() != 1 {
		t.Fatal("b learned of a's writes without a read or a Refresh")
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	sameTxs(t, txsOf(b), txsOf(a))
	// b's next write follows a's, and a sees it after refreshing. a's head is read before
	// the write: a's own commit watcher may load b's write as soon as it commits.
	before := head(a)
	tx, err := b.Write(ctx, "owner", countingClaim("B", 1))
	if err != nil || tx.ID != before+1 {
		t.Fatalf("b write: %v %v", tx, err)
	}
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	sameTxs(t, txsOf(a), txsOf(b))
	if n1, n2 := quadCount(t, a), quadCount(t, b); n1 != n2 {
		t.Fatalf("counts %d and %d", n1, n2)
	}
}

// TestPostgresCommitsAnnounced: a store loads another process's commit when PostgreSQL
// announces it, without a read or a Refresh, and tells its subscribers.
func TestPostgresCommitsAnnounced(t *testing.T) {
	dsn := newPGDatabase(t)
	a := mustOpen(t, dsn, Options{})
	defer a.Close()
	b := mustOpen(t, dsn, Options{})
	defer b.Close()
	sub, stop := b.Subscribe()
	defer stop()
	for i := range 3 {
		tx, err := a.Write(context.Background(), "owner", countingClaim("A", i+1))
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
		for head(b) < tx.ID {
			select {
			case <-sub:
			case <-deadline:
				t.Fatalf("b is at tx %d, 10s after a committed tx %d", head(b), tx.ID)
			}
		}
	}
	sameTxs(t, txsOf(b), txsOf(a))
}

// ---- export and import ---------------------------------------------------------------------

// A writer waiting for the PostgreSQL writer lock gives up when its context ends, and leaves
// nothing behind that would block the next writer.
func TestPostgresLockWaitCancelled(t *testing.T) {
	dsn := newPGDatabase(t)
	a := mustOpen(t, dsn, Options{})
	defer a.Close()
	b := mustOpen(t, dsn, Options{})
	defer b.Close()
	release := pgHoldLock(t, dsn, "holder")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := b.Write(ctx, "owner", countingClaim("B", 1))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("write while the lock is held: %v after %s", err, time.Since(start))
	}
	release()
	for i, s := range []*Store{b, a, b} {
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := s.Write(wctx, "owner", countingClaim(fmt.Sprintf("S%d", i), 1))
		cancel()
		if err != nil {
			t.Fatalf("write %d after the lock was released: %v", i, err)
		}
	}
	if err := a.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkCounting(t, txsOf(a), 4)
}

// Two processes' caches: a reads a key (now in its cache), b supersedes it and then revokes
// it, and a's next reads see each change, whether a learns of it from a read (its watcher
// stopped), from its own next write, or from the announcement.
func TestPostgresCacheSeesOtherProcesses(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	a := mustOpen(t, dsn, Options{})
	defer a.Close()
	b := mustOpen(t, dsn, Options{})
	defer b.Close()
	a.stopWatch()
	<-a.watchDone
	a.stopWatch = nil
	key := record.Key{Subject: "K", Predicate: "p"}
	assert := func(s *Store, version int, val float64) {
		t.Helper()
		_, err := s.Write(ctx, "owner", func(ix *index.Index, tx *record.Tx) error {
			c := &record.Claim{ID: record.ClaimID{Key: key, Version: version},
				Value: record.Value{Type: record.Number, Num: val}, By: "owner", Kind: record.Inferred, Confidence: 1}
			if lc := ix.View(ix.Head(), tx.Time, "").LiveClaim(key); lc != nil {
				c.Supersedes = &record.ClaimID{Key: key, Version: lc.ID.Version}
			}
			tx.Claims = []*record.Claim{c}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	live := func(s *Store) string {
		t.Helper()
		var out string
		err := s.Read(ctx, func(ix *index.Index) error {
			v := ix.View(ix.Head(), time.Now(), "")
			for _, c := range v.LiveClaims(key) {
				out += fmt.Sprintf("@%d=%v ", c.ID.Version, c.Value.Num)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(out)
	}
	assert(a, 1, 10)
	for range 3 { // cached by now
		if got := live(a); got != "@1=10" {
			t.Fatalf("a reads %q", got)
		}
	}
	assert(b, 2, 20)
	if got := live(a); got != "@2=20" {
		t.Fatalf("after b superseded it, a reads %q", got)
	}
	assert(b, 3, 30)
	assert(a, 4, 40) // a learns b's write in its own write
	if got := live(b); got != "@4=40" {
		t.Fatalf("b reads %q", got)
	}
	if got := live(a); got != "@4=40" {
		t.Fatalf("a reads %q after its write", got)
	}
	_, err := b.Write(ctx, "owner", func(ix *index.Index, tx *record.Tx) error {
		tx.Revocations = []*record.Revocation{{ID: fmt.Sprintf("r%d.1", tx.ID), Claim: record.ClaimID{Key: key, Version: 4},
			By: "owner", Because: "wrong", Standing: "owner"}}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := live(a); got != "" {
		t.Fatalf("after b revoked it, a reads %q", got)
	}
	// Several transactions of b, learned by a in its own write: a drops what each changed.
	keys := []record.Key{{Subject: "X1", Predicate: "p"}, {Subject: "X2", Predicate: "p"}, {Subject: "X3", Predicate: "p"}}
	for _, k := range keys {
		key = k
		assert(a, 1, 1)
		live(a)
	}
	for _, k := range keys {
		key = k
		assert(b, 2, 2)
	}
	if _, err := a.Write(ctx, "owner", countingClaim("A", 1)); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		key = k
		if got := live(a); got != "@2=2" {
			t.Fatalf("%s: a reads %q after learning b's writes in its own", k, got)
		}
	}
	key = record.Key{Subject: "K", Predicate: "p"}
	// And a third store, listening, learns of each write from the announcement alone.
	c := mustOpen(t, dsn, Options{})
	defer c.Close()
	live(c)
	sub, stop := c.Subscribe()
	defer stop()
	assert(b, 5, 50)
	deadline := time.After(10 * time.Second)
	for head(c) < head(b) {
		select {
		case <-sub:
		case <-deadline:
			t.Fatal("c did not hear of b's write")
		}
	}
	if got := live(c); got != "@5=50" {
		t.Fatalf("c reads %q", got)
	}
}

// A write acknowledged to one process is seen by the next read of another, at once: the
// reader's snapshot begins after the writer's durable commit, and its wait for the WAL (the
// durability gate) lets it through. Many times, with a third process writing meanwhile so that
// the WAL is rarely flushed to its end.
func TestPostgresReadAfterAcknowledgedWrite(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	w := mustOpen(t, dsn, Options{})
	defer w.Close()
	r := mustOpen(t, dsn, Options{})
	defer r.Close()
	noise := mustOpen(t, dsn, Options{})
	defer noise.Close()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := noise.Write(ctx, "owner", countingClaim(fmt.Sprintf("noise%d", i), 1)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 1; i <= 100; i++ {
		tx, err := w.Write(ctx, "owner", countingClaim(fmt.Sprintf("W%d", i), 1))
		if err != nil {
			t.Fatal(err)
		}
		err = r.Read(ctx, func(ix *index.Index) error {
			if ix.Head() < tx.ID {
				return fmt.Errorf("write %d acknowledged as tx %d, and the next read of another store is at tx %d", i, tx.ID, ix.Head())
			}
			if ix.Tx(tx.ID) == nil {
				return fmt.Errorf("tx %d is not there", tx.ID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// A database of the earlier format (Cayley's quads and nodes, mql's log) is refused by Open,
// with or without MustExist, naming `mql migrate`; Inspect says what it is; nothing is written.
func TestPostgresOldFormat(t *testing.T) {
	for _, tables := range [][]string{{"quads", "nodes"}, {"quads", "nodes", "mql_snapshot"}} {
		dsn := newPGDatabase(t)
		db := pgOpenDB(t, dsn)
		for _, name := range tables {
			if _, err := db.Exec("CREATE TABLE " + name + " (x int)"); err != nil {
				t.Fatal(err)
			}
		}
		for _, mustExist := range []bool{false, true} {
			s, err := Open(context.Background(), dsn, Options{MustExist: mustExist})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, ErrOldFormat) || !strings.Contains(err.Error(), "mql migrate") {
				t.Fatalf("%v, MustExist %v: Open = %v", tables, mustExist, err)
			}
		}
		in, err := Inspect(context.Background(), dsn, 0)
		if err != nil || in.Found != FoundOther || !strings.Contains(in.Other, "earlier mql") {
			t.Fatalf("Inspect = %+v, %v", in, err)
		}
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&n); err != nil || n != len(tables) {
			t.Fatalf("%d tables, want %d (%v)", n, len(tables), err)
		}
	}
}

// A process knows what changed after the head of its first snapshot from the rows after it:
// its first write reads them with the lock, rather than a snapshot of its own under the lock.
// A head seen later that the rows do not reach, or one before what they cover, is not known.
func TestChangesKnownFromTheFirstSnapshot(t *testing.T) {
	var c pgChanges
	if _, _, ok := c.known(0); ok {
		t.Fatal("known before any snapshot")
	}
	c.saw(7)
	if head, touched, ok := c.known(7); !ok || head != 7 || len(touched) != 0 {
		t.Errorf("after a first snapshot at 7: known(7) = %d, %v, %v; want 7, nothing, true", head, touched, ok)
	}
	if _, _, ok := c.known(6); ok {
		t.Error("known(6) after a first snapshot at 7: what changed in tx 7 is not known")
	}
	c.add([]pgChange{{first: 8, last: 9, touched: []string{"a"}}})
	if head, touched, ok := c.known(7); !ok || head != 9 || !slices.Equal(touched, []string{"a"}) {
		t.Errorf("after rows 8..9: known(7) = %d, %v, %v; want 9, [a], true", head, touched, ok)
	}
	c.saw(12)
	if _, _, ok := c.known(9); ok {
		t.Error("known(9) after a snapshot saw 12 that no row reaches")
	}
	c.saw(3)
	if c.from != 7 {
		t.Errorf("a later, older head moved the start to %d", c.from)
	}
}
