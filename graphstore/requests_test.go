package graphstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// fakeRequests builds requests of kind "claim" (payload: a subject; the build asserts the
// next version of SUBJECT.n, refusing the subject "Refused") and, if other, of kind "other".
type fakeRequests struct{ other bool }

var errFakeRefusal = errors.New("refused by the test")

func (f fakeRequests) Build(by, kind string, payload []byte) (func(ix *index.Index, tx *record.Tx) ([]byte, error), bool) {
	if kind != "claim" && !(kind == "other" && f.other) {
		return nil, false
	}
	subject := string(payload)
	return func(ix *index.Index, tx *record.Tx) ([]byte, error) {
		if subject == "Refused" {
			return []byte("no"), fmt.Errorf("claim on %s: %w", subject, errFakeRefusal)
		}
		v := ix.KeyVersion(record.Key{Subject: subject, Predicate: "n"}) + 1
		if err := countingClaim(subject, v)(ix, tx); err != nil {
			return nil, err
		}
		return fmt.Appendf(nil, "built %s@%d by %s", subject, v, by), nil
	}, true
}

func (fakeRequests) EncodeError(err error) []byte {
	if errors.Is(err, errFakeRefusal) {
		return []byte("R" + err.Error())
	}
	return []byte("-" + err.Error())
}

func (fakeRequests) DecodeError(b []byte) error {
	if len(b) > 0 && b[0] == 'R' {
		return fmt.Errorf("%s (%w)", b[1:], errFakeRefusal)
	}
	return errors.New(string(b[1:]))
}

// request is the WriteRequest of a fake request, built in this process as it would be in
// another.
func fakeRequest(s *Store, kind, subject string) (*record.Tx, *Remote, []byte, error) {
	build, _ := fakeRequests{other: true}.Build("owner", kind, []byte(subject))
	var res []byte
	tx, remote, err := s.WriteRequest(context.Background(), "owner", func(ix *index.Index, tx *record.Tx) error {
		var err error
		res, err = build(ix, tx)
		return err
	}, Request{Kind: kind, Payload: func() ([]byte, error) { return []byte(subject), nil }})
	if remote != nil {
		res = remote.Result
	}
	return tx, remote, res, err
}

// Processes that share a PostgreSQL store build each other's requests: while one holds the
// lock, the others queue theirs, and the next holder builds every one it knows, each as its
// own transaction; their processes take the outcomes (a refusal as their errors.Is sees it)
// without building anything. A request of a kind the holder does not know waits for its own
// process. Nothing is left queued.
func TestRequestsBuiltByTheLockHolder(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	open := func(r Requests) *Store { return mustOpen(t, dsn, Options{Requests: r}) }
	a := open(fakeRequests{})
	defer a.Close()
	b, c, d, e := open(fakeRequests{}), open(fakeRequests{}), open(fakeRequests{}), open(fakeRequests{other: true})
	for _, s := range []*Store{b, c, d, e} {
		defer s.Close()
	}
	db := pgOpenDB(t, dsn)
	waitFor := func(what string, cond string, n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var got int
			if err := db.QueryRow(cond).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got == n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d, want %d", what, got, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	queued := `SELECT count(*) FROM mql_requests WHERE state = 0`
	waiting := `SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database WHERE d.datname = current_database() AND l.locktype = 'advisory' AND NOT l.granted`

	// a holds the lock, in its build, until released.
	var wg sync.WaitGroup
	holdLock := func() (release chan struct{}) {
		hold, release := make(chan struct{}), make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Write(ctx, "owner", func(ix *index.Index, tx *record.Tx) error {
				close(hold)
				<-release
				return countingClaim("A", ix.KeyVersion(record.Key{Subject: "A", Predicate: "n"})+1)(ix, tx)
			}); err != nil {
				t.Error(err)
			}
		}()
		<-hold
		return release
	}
	release := holdLock()

	type result struct {
		tx     *record.Tx
		remote *Remote
		res    []byte
		err    error
	}
	results := make([]result, 4)
	start := func(i int, s *Store, kind, subject string, queuedBefore int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, remote, res, err := fakeRequest(s, kind, subject)
			results[i] = result{tx, remote, res, err}
		}()
		// In this order in the queue and in the lock's.
		waitFor("requests queued", queued, queuedBefore+1)
		waitFor("writers waiting for the lock", waiting, queuedBefore+1)
	}
	// b, c, d and e queue in that order behind a, which then lets go.
	queueAll := func(release chan struct{}) {
		start(0, b, "claim", "B", 0)
		start(1, c, "claim", "C", 1)
		start(2, d, "claim", "Refused", 2)
		start(3, e, "other", "E", 3)
		close(release)
		wg.Wait()
	}
	queueAll(release)

	bt, ct, dt, et := results[0], results[1], results[2], results[3]
	if bt.err != nil || bt.remote != nil || bt.tx == nil || string(bt.res) != "built B@1 by owner" {
		t.Errorf("b, which took the lock after a: tx %v, remote %v, %q, %v; want its own transaction", bt.tx, bt.remote, bt.res, bt.err)
	}
	if ct.err != nil || ct.remote == nil || ct.tx != nil || ct.remote.Tx != bt.tx.ID+1 || string(ct.res) != "built C@1 by owner" || ct.remote.Time.IsZero() {
		t.Errorf("c: tx %v, remote %+v, %q, %v; want b to have built it, after its own", ct.tx, ct.remote, ct.res, ct.err)
	}
	if !errors.Is(dt.err, errFakeRefusal) || dt.remote == nil || dt.remote.Tx != 0 || string(dt.res) != "no" || !strings.Contains(dt.err.Error(), "claim on Refused") {
		t.Errorf("d: remote %+v, %q, %v; want b's refusal", dt.remote, dt.res, dt.err)
	}
	if et.err != nil || et.remote != nil || et.tx == nil || string(et.res) != "built E@1 by owner" {
		t.Errorf("e, of a kind b does not know: tx %v, remote %+v, %q, %v; want its own transaction", et.tx, et.remote, et.res, et.err)
	}
	waitFor("rows left in mql_requests", `SELECT count(*) FROM mql_requests`, 0)
	for _, k := range []string{"A", "B", "C", "E"} {
		if v := keyVersion(t, e, k); v != 1 {
			t.Errorf("%s.n at version %d, want 1", k, v)
		}
	}
	if v := keyVersion(t, e, "Refused"); v != 0 {
		t.Errorf("Refused.n at version %d, want none", v)
	}
	checkSound(t, e)

	// Seen contended, the writers wait for the holder in shared mode first: they all get it
	// when a is done, find nothing of theirs built, and wait for the lock itself; the first
	// to get it builds what it knows, and the others take their outcomes.
	for _, s := range []*Store{b, c, d, e} {
		s.contended.Store(true)
	}
	release = holdLock()
	queueAll(release)
	remote := 0
	for i, want := range []string{"built B@2 by owner", "built C@2 by owner", "", "built E@2 by owner"} {
		r := results[i]
		if r.remote != nil {
			remote++
		}
		switch {
		case want == "" && !errors.Is(r.err, errFakeRefusal):
			t.Errorf("contended, writer %d: %v, want the refusal", i, r.err)
		case want != "" && (r.err != nil || string(r.res) != want):
			t.Errorf("contended, writer %d: %q, %v; want %q", i, r.res, r.err, want)
		}
	}
	if remote < 2 {
		t.Errorf("contended: %d writes built by another process, want at least 2 of the 3 that every one can build", remote)
	}
	waitFor("rows left in mql_requests", `SELECT count(*) FROM mql_requests`, 0)
	checkSound(t, e)
}

func keyVersion(t *testing.T, s *Store, subject string) int {
	t.Helper()
	var v int
	if err := s.Read(context.Background(), func(ix *index.Index) error {
		v = ix.KeyVersion(record.Key{Subject: subject, Predicate: "n"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// A request whose writer gives up waiting for the lock is withdrawn with it: the holder that
// comes next does not build it, and nothing of it is left queued. One whose writer is gone
// and whose time has passed is not built either.
func TestRequestWithdrawnWhenItsWriterGivesUp(t *testing.T) {
	dsn := newPGDatabase(t)
	ctx := context.Background()
	a := mustOpen(t, dsn, Options{Requests: fakeRequests{}})
	defer a.Close()
	b := mustOpen(t, dsn, Options{Requests: fakeRequests{}, WriteLockTimeout: 300 * time.Millisecond})
	defer b.Close()
	db := pgOpenDB(t, dsn)
	// A request of a process that went away, past its time.
	if _, err := db.Exec(`INSERT INTO mql_requests (id, principal, kind, payload, expires) VALUES ('\x01', 'owner', 'claim', 'Gone', clock_timestamp() - interval '1 second')`); err != nil {
		t.Fatal(err)
	}
	for _, contended := range []bool{false, true} {
		b.contended.Store(contended)
		hold, release := make(chan struct{}), make(chan struct{})
		done := make(chan error)
		go func() {
			_, err := a.Write(ctx, "owner", func(ix *index.Index, tx *record.Tx) error {
				close(hold)
				<-release
				return countingClaim("A", ix.KeyVersion(record.Key{Subject: "A", Predicate: "n"})+1)(ix, tx)
			})
			done <- err
		}()
		<-hold
		_, remote, _, err := fakeRequest(b, "claim", "B")
		if !errors.Is(err, ErrInUse) || remote != nil {
			t.Errorf("contended %v: a request that waited past its writer's timeout: %v, remote %v; want ErrInUse", contended, err, remote)
		}
		var queued int
		if err := db.QueryRow(`SELECT count(*) FROM mql_requests WHERE id <> '\x01'`).Scan(&queued); err != nil || queued != 0 {
			t.Errorf("contended %v: %d requests left queued (%v), want none", contended, queued, err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		// The next holder builds its own request, and neither B's nor the expired one.
		if _, remote, res, err := fakeRequest(a, "claim", "C"); err != nil || remote != nil {
			t.Fatalf("a's request: %q, %v, remote %v", res, err, remote)
		}
	}
	for _, k := range []string{"B", "Gone"} {
		if v := keyVersion(t, a, k); v != 0 {
			t.Errorf("%s.n at version %d: a request withdrawn or expired was built", k, v)
		}
	}
	if v := keyVersion(t, a, "C"); v != 2 {
		t.Errorf("C.n at version %d, want 2", v)
	}
}

// A store made before the queue gets it at its first write by an mql that has it.
func TestRequestQueueAddedToAnOlderStore(t *testing.T) {
	dsn := newPGDatabase(t)
	s := mustOpen(t, dsn, Options{})
	writeSample(t, s)
	s.Close()
	db := pgOpenDB(t, dsn)
	if _, err := db.Exec(`DROP TABLE mql_requests`); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dsn, Options{Requests: fakeRequests{}})
	defer s.Close()
	if _, _, _, err := fakeRequest(s, "claim", "Later"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM mql_requests`).Scan(&n); err != nil {
		t.Fatalf("after a write: %v", err)
	}
	if v := keyVersion(t, s, "Later"); v != 1 {
		t.Errorf("Later.n at version %d, want 1", v)
	}
	checkSound(t, s)
}
