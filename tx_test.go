package mql_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/mql-dev/mql"
)

// writes is what DB and Tx have in common: DB's writes bound to a context, or a transaction's.
type writes struct {
	principal func(mql.PrincipalSpec) (mql.Receipt, error)
	grant     func(mql.GrantSpec) (mql.Receipt, error)
	assert    func(mql.AssertSpec) (mql.Receipt, error)
	revoke    func(mql.RevokeSpec) (mql.Receipt, error)
	confirm   func(mql.ConfirmSpec) (mql.Receipt, error)
	derive    func(mql.DeriveSpec) (mql.Receipt, error)
	review    func(mql.ReviewSpec) (mql.Receipt, error)
	decay     func(mql.DecaySpec) (mql.Receipt, error)
}

func dbWrites(ctx context.Context, db *mql.DB) writes {
	return writes{
		principal: func(s mql.PrincipalSpec) (mql.Receipt, error) { return db.AddPrincipal(ctx, s) },
		grant:     func(s mql.GrantSpec) (mql.Receipt, error) { return db.Grant(ctx, s) },
		assert:    func(s mql.AssertSpec) (mql.Receipt, error) { return db.Assert(ctx, s) },
		revoke:    func(s mql.RevokeSpec) (mql.Receipt, error) { return db.Revoke(ctx, s) },
		confirm:   func(s mql.ConfirmSpec) (mql.Receipt, error) { return db.Confirm(ctx, s) },
		derive:    func(s mql.DeriveSpec) (mql.Receipt, error) { return db.Derive(ctx, s) },
		review:    func(s mql.ReviewSpec) (mql.Receipt, error) { return db.Review(ctx, s) },
		decay:     func(s mql.DecaySpec) (mql.Receipt, error) { return db.SetDecay(ctx, s) },
	}
}

func txWrites(tx *mql.Tx) writes {
	return writes{tx.AddPrincipal, tx.Grant, tx.Assert, tx.Revoke, tx.Confirm, tx.Derive, tx.Review, tx.SetDecay}
}

// txScript is a run of writes in which later ones rest on earlier ones: principals and grants
// give standing, claims are superseded, contested, revoked with a replacement, confirmed,
// derived from and reviewed, and some writes are refused.
func txScript(w writes) []string {
	src := func(id string) []mql.Source { return []mql.Source{{ID: id}} }
	var out []string
	note := func(rc mql.Receipt, err error) {
		if err != nil {
			// The message, without what differs between one transaction and many.
			out = append(out, "refused: "+err.Error())
			return
		}
		out = append(out, strings.Join([]string{rc.Ref, string(rc.State), rc.Supersedes, rc.Contests, rc.Corroborates}, " "))
	}
	note(w.principal(mql.PrincipalSpec{Name: "alice", Type: mql.User, By: "owner"}))
	note(w.principal(mql.PrincipalSpec{Name: "w3", Type: mql.Agent, By: "owner"}))
	note(w.principal(mql.PrincipalSpec{Name: "w7", Type: mql.Agent, By: "owner"}))
	note(w.assert(mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(44), By: "w3", Sources: src("s0")}))
	note(w.assert(mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.String("x"), By: "w7"})) // wrong type
	note(w.revoke(mql.RevokeSpec{Claim: "K.price@1", By: "w7"}))                                       // no standing
	note(w.grant(mql.GrantSpec{Grantee: "w7", Right: mql.RightRevoke, Scope: "price", By: "owner"}))
	note(w.grant(mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "*", By: "owner"}))
	note(w.grant(mql.GrantSpec{Grantee: "alice", Right: mql.RightConfirm, Scope: "*", By: "owner"})) // again: a no-op
	note(w.assert(mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(89), By: "w7", Sources: src("s1")}))
	note(w.assert(mql.AssertSpec{Subject: "K", Predicate: "price", Value: mql.Number(50), By: "w3"})) // inferred: contested
	note(w.derive(mql.DeriveSpec{Artifact: "plan", From: []string{"K.price"}, By: "w3"}))
	note(w.revoke(mql.RevokeSpec{Claim: "K.price@2", By: "w7", Because: "misread", ReplacedBy: "K.price@1"}))
	note(w.revoke(mql.RevokeSpec{Claim: "K.price@2", By: "w7"})) // already revoked
	note(w.confirm(mql.ConfirmSpec{Claim: "K.price", By: "alice"}))
	note(w.review(mql.ReviewSpec{Artifact: "plan", By: "alice", Because: "checked"}))
	note(w.derive(mql.DeriveSpec{Artifact: "plan", From: []string{"plan@1", "K.price@1"}, By: "w3"}))
	note(w.decay(mql.DecaySpec{Predicate: "price", HalfLife: 3600e9, By: "owner"}))
	note(w.assert(mql.AssertSpec{Subject: "K", Predicate: "note", Value: mql.String("secret"), By: "w3", SeenBy: []string{"w3"}, Sources: src("s0")}))
	note(w.principal(mql.PrincipalSpec{Name: "w3", Type: mql.Agent, By: "owner"})) // again: a no-op
	note(w.principal(mql.PrincipalSpec{Name: "w3", Type: mql.User, By: "owner"}))  // another type
	return out
}

// stateOf is what a reader sees of the store, without transaction ids and times.
func stateOf(t *testing.T, db *mql.DB) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	add := func(v any, err error) {
		t.Helper()
		if err != nil {
			b.WriteString(err.Error() + "\n")
			return
		}
		j, _ := json.Marshal(v)
		b.Write(j)
		b.WriteByte('\n')
	}
	for _, r := range []mql.Reader{db.Reader(), db.As("w7"), db.As("w3")} {
		add(r.Live(ctx, "*"))
		add(r.History(ctx, "K.price"))
		add(r.History(ctx, "plan"))
		add(r.Why(ctx, "plan"))
		add(r.RevokedBy(ctx, "K.price@2"))
		add(r.Conflicts(ctx))
	}
	out := b.String()
	// Drop what differs between one transaction and many.
	for _, f := range []string{`"tx":`, `"recorded_at":`, `"since":`, `"at":`} {
		for {
			i := strings.Index(out, f)
			if i < 0 {
				break
			}
			j := i + len(f)
			for j < len(out) && out[j] != ',' && out[j] != '}' {
				j++
			}
			out = out[:i] + "_" + out[j:]
		}
	}
	return regexp.MustCompile(`"g\d+\.\d+"`).ReplaceAllString(out, `"g#"`)
}

// TestTxIsLikeSeparateWrites: the same writes, made one by one or in one transaction, are
// accepted and refused alike, with the same receipts, and leave the store in the same state,
// as every principal sees it; the transaction is one transaction.
func TestTxIsLikeSeparateWrites(t *testing.T) {
	one := open(t, mql.Options{})
	want := txScript(dbWrites(one.ctx, one.db))

	many := open(t, mql.Options{})
	var got []string
	id, err := many.db.Tx(many.ctx, "owner", func(tx *mql.Tx) error {
		got = txScript(txWrites(tx))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Transaction ids differ, and with them grant ids.
	ids := regexp.MustCompile(`\btx \d+|\bg\d+\.\d+`)
	if g, w := ids.ReplaceAllString(strings.Join(got, "\n"), "#"), ids.ReplaceAllString(strings.Join(want, "\n"), "#"); g != w {
		t.Fatalf("in one transaction:\n%s\n\none by one:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if id != 2 {
		t.Fatalf("transaction %d, want 2", id)
	}
	if head, _ := many.db.Head(many.ctx); head != 2 {
		t.Fatalf("head %d after one transaction, want 2", head)
	}
	if a, b := stateOf(t, one.db), stateOf(t, many.db); a != b {
		t.Fatalf("state after one transaction:\n%s\nafter separate writes:\n%s", b, a)
	}
	if rep, err := many.db.Check(many.ctx); err != nil || !rep.OK() {
		t.Fatalf("check: %v %+v", err, rep)
	}
	// The two grants of the transaction have ids of their own: alice confirmed with the second.
	n, err := many.db.Why(many.ctx, "K.price@1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mustJSON(n), `"standing":"g2.2"`) {
		t.Fatalf("why K.price@1: %s", mustJSON(n))
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestTxAllOrNothing: a transaction whose fn fails writes nothing, and the store goes on as
// if it had never run; so does one whose writes were all no-ops.
func TestTxAllOrNothing(t *testing.T) {
	for _, dsn := range []string{"memory:", "bbolt", "postgres"} {
		t.Run(dsn, func(t *testing.T) {
			switch dsn {
			case "bbolt":
				dsn = filepath.Join(t.TempDir(), "tx.db")
			case "postgres":
				dsn = postgresDSN(t)
			}
			f := openDSN(t, dsn, mql.Options{}).team()
			f.assert("K", "price", mql.Number(44), "worker-3", "s0")
			before := stateOf(t, f.db)
			head, _ := f.db.Head(f.ctx)
			boom := errors.New("boom")
			_, err := f.db.Tx(f.ctx, "owner", func(tx *mql.Tx) error {
				for _, s := range []mql.AssertSpec{
					{Subject: "K", Predicate: "price", Value: mql.Number(89), By: "worker-7", Sources: []mql.Source{{ID: "s1"}}},
					{Subject: "B", Predicate: "price", Value: mql.Number(39), By: "worker-7", Sources: []mql.Source{{ID: "s1"}}},
				} {
					if _, err := tx.Assert(s); err != nil {
						return err
					}
				}
				if _, err := tx.Derive(mql.DeriveSpec{Artifact: "plan", From: []string{"B.price", "K.price"}, By: "worker-7"}); err != nil {
					return err
				}
				live, err := tx.Reader().Live(context.Background(), "K.price")
				if err != nil || len(live) != 1 || live[0].Ref != "K.price@2" {
					t.Errorf("inside the transaction: %v %+v", err, live)
				}
				if f.db.Backend() != "postgres" { // (there a read loads other processes' writes first, which waits for the transaction)
					outside, _ := f.db.Reader().Live(context.Background(), "*") // a reader outside sees nothing of it
					if len(outside) != 1 {
						t.Errorf("outside the transaction: %+v", outside)
					}
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("err %v", err)
			}
			if h, _ := f.db.Head(f.ctx); h != head || stateOf(t, f.db) != before {
				t.Fatalf("a failed transaction changed the store (head %d → %d)", head, h)
			}
			// The store goes on: the same writes, on their own, are numbered as if nothing
			// had been tried.
			rc := f.assert("K", "price", mql.Number(89), "worker-7", "s1")
			if rc.Ref != "K.price@2" || rc.Tx != head+1 {
				t.Fatalf("after the failed transaction: %+v", rc)
			}
			// A transaction of no-ops commits nothing.
			id, err := f.db.Tx(f.ctx, "owner", func(tx *mql.Tx) error {
				_, err := tx.AddPrincipal(mql.PrincipalSpec{Name: "alice", Type: mql.User, By: "owner"})
				return err
			})
			if err != nil || id != 0 {
				t.Fatalf("no-op transaction: %d %v", id, err)
			}
			if h, _ := f.db.Head(f.ctx); h != head+1 {
				t.Fatalf("head %d, want %d", h, head+1)
			}
			if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
				t.Fatalf("check: %v %+v", err, rep)
			}
		})
	}
}

// TestTxRefusedWriteChangesNothing: a write refused inside a transaction records nothing of
// itself (not even the source it named), and the transaction may go on.
func TestTxRefusedWriteChangesNothing(t *testing.T) {
	f := open(t, mql.Options{}).team()
	id, err := f.db.Tx(f.ctx, "owner", func(tx *mql.Tx) error {
		_, err := tx.Assert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(1), By: "worker-3",
			Sources: []mql.Source{{ID: "fresh", Excerpt: "a"}, {ID: ""}}})
		if !errors.Is(err, mql.ErrInvalid) {
			t.Errorf("empty source id: %v", err)
		}
		_, err = tx.Assert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(1), By: "worker-3", Sources: []mql.Source{{ID: "fresh", Excerpt: "b"}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := f.db.Why(f.ctx, "K.p")
	if err != nil || n.Claim.Tx != id || len(n.Claim.Sources) != 1 || n.Claim.Sources[0].Excerpt != "b" {
		t.Fatalf("why: %v %s", err, mustJSON(n))
	}
	if _, err := f.db.Tx(f.ctx, "nobody", func(*mql.Tx) error { return nil }); !errors.Is(err, mql.ErrUnknownPrincipal) {
		t.Fatalf("a transaction by nobody: %v", err)
	}
}

// TestTxWithConcurrentWriters: transactions that fail and succeed while other writers write
// leave every write that was acknowledged, and nothing else.
func TestTxWithConcurrentWriters(t *testing.T) {
	f := openDSN(t, filepath.Join(t.TempDir(), "c.db"), mql.Options{}).team()
	var wg sync.WaitGroup
	var mu sync.Mutex
	acked := map[string]bool{}
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				subj := "S" + string(rune('a'+g)) + string(rune('a'+i%26)) + string(rune('a'+i/26))
				if g%2 == 0 {
					rc, err := f.db.Assert(f.ctx, mql.AssertSpec{Subject: subj, Predicate: "p", Value: mql.Number(float64(i)), By: "worker-3"})
					if err == nil {
						mu.Lock()
						acked[rc.Ref] = true
						mu.Unlock()
					}
					continue
				}
				var refs []string
				_, err := f.db.Tx(f.ctx, "owner", func(tx *mql.Tx) error {
					refs = refs[:0]
					for j := range 3 {
						rc, err := tx.Assert(mql.AssertSpec{Subject: subj, Predicate: "p", Value: mql.Number(float64(j)), By: "worker-7"})
						if err != nil {
							return err
						}
						refs = append(refs, rc.Ref)
					}
					if i%3 == 0 {
						return errors.New("abandon")
					}
					return nil
				})
				if err == nil {
					mu.Lock()
					for _, r := range refs {
						acked[r] = true
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	all, err := f.db.Reader().Names(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, n := range all {
		if strings.HasPrefix(n, "S") && strings.Contains(n, "@") {
			got[n] = true
		}
	}
	if len(got) != len(acked) {
		t.Fatalf("%d claim versions stored, %d acknowledged", len(got), len(acked))
	}
	for r := range acked {
		if !got[r] {
			t.Fatalf("acknowledged %s is missing", r)
		}
	}
	if rep, err := f.db.Check(f.ctx); err != nil || !rep.OK() {
		t.Fatalf("check: %v %+v", err, rep)
	}
}

// A transaction made by a principal other than the owner records only that principal's writes:
// anything else would be a store that mql check refuses (an author other than the
// transaction's).
func TestTxOfAPrincipalWritesOnlyItsOwn(t *testing.T) {
	f := open(t, mql.Options{})
	for _, p := range []string{"w3", "w7"} {
		if _, err := f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: "owner"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := f.db.Tx(f.ctx, "w3", func(tx *mql.Tx) error {
		_, err := tx.Assert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(1), By: "w7"})
		return err
	})
	if !errors.Is(err, mql.ErrInvalid) {
		t.Fatalf("w3's transaction wrote by w7: %v", err)
	}
	if _, err := f.db.Tx(f.ctx, "owner", func(tx *mql.Tx) error {
		_, err := tx.Assert(mql.AssertSpec{Subject: "K", Predicate: "p", Value: mql.Number(1), By: "w7"})
		return err
	}); err != nil {
		t.Fatalf("the owner's transaction by w7: %v", err)
	}
	if r, err := f.db.Check(f.ctx); err != nil || !r.OK() {
		t.Fatalf("check: %v %+v", err, r)
	}
}
