package query_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// TestTxBlock walks scripts through TxBlock a statement at a time: what Next says of each
// (a step, or its error), and what End says at the end. A refused statement leaves the block
// as it was, so the walk goes on past it, as the REPL's prompt does.
func TestTxBlock(t *testing.T) {
	step := map[query.TxStep]string{query.TxRun: "run", query.TxGather: "gather", query.TxBegin: "begin", query.TxCommit: "commit", query.TxRollback: "rollback"}
	for _, tc := range []struct {
		name, src string
		want      []string // per statement: its step, or its error
		end       string   // End's error, "" for none
		syntax    bool     // the errors are syntax errors (query.ErrSyntax); else mql.ErrInvalid
	}{
		{name: "outside a transaction every statement runs now", src: "principal w agent\nlive K for run r-1\nstats",
			want: []string{"run", "run", "run"}},
		{name: "begin, statements, commit", src: "begin\nassert K.p = 1 by w\nlive K\ncommit\nstats",
			want: []string{"begin", "gather", "gather", "commit", "run"}},
		{name: "begin, rollback, and a new begin", src: "begin\nassert K.p = 1 by w\nrollback\nbegin\ncommit",
			want: []string{"begin", "gather", "rollback", "begin", "commit"}},
		{name: "an empty transaction", src: "begin\ncommit", want: []string{"begin", "commit"}},
		{name: "begin inside a transaction", src: "stats\nbegin\n  begin\ncommit", syntax: true,
			want: []string{"run", "begin", "s:3:3: begin inside a transaction (begun at 2:1): commit or roll it back first", "commit"}},
		{name: "begin inside the second transaction names its begin", src: "begin\ncommit\n  begin\nbegin", syntax: true,
			want: []string{"begin", "commit", "begin", "s:4:1: begin inside a transaction (begun at 3:3): commit or roll it back first"},
			end:  "s:3:3: the script ended inside the transaction begun here: nothing of it was written; end it with commit (or rollback)"},
		{name: "commit without begin", src: "stats\ncommit", syntax: true,
			want: []string{"run", "s:2:1: commit without begin: no transaction is open"}},
		{name: "rollback without begin", src: "rollback", syntax: true,
			want: []string{"s:1:1: rollback without begin: no transaction is open"}},
		{name: "commit after the commit", src: "begin\ncommit\ncommit", syntax: true,
			want: []string{"begin", "commit", "s:3:1: commit without begin: no transaction is open"}},
		{name: "the script ends inside a transaction", src: "stats\nbegin\nassert K.p = 4 by w", syntax: true,
			want: []string{"run", "begin", "gather"},
			end:  "s:2:1: the script ended inside the transaction begun here: nothing of it was written; end it with commit (or rollback)"},
		{name: "a read for a run inside a transaction", src: "begin\nassert K.p = 1 by w\ncontext K budget 60 for run r-1\nlive K\ncommit",
			want: []string{"begin", "gather", "s:3:1: for run r-1: a read inside a transaction records nothing; read for the run after the commit", "gather", "commit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script, err := query.Parse("s", tc.src)
			if err != nil {
				t.Fatal(err)
			}
			var b query.TxBlock
			var got []string
			for _, st := range script.Stmts {
				s, err := b.Next(st)
				switch {
				case err == nil:
					got = append(got, step[s])
				case errors.Is(err, query.ErrSyntax) != tc.syntax || errors.Is(err, mql.ErrInvalid) == tc.syntax:
					t.Errorf("%s: %v: ErrSyntax %v, ErrInvalid %v", st, err, errors.Is(err, query.ErrSyntax), errors.Is(err, mql.ErrInvalid))
					fallthrough
				default:
					got = append(got, err.Error())
				}
			}
			if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			begin, open := b.Begun()
			err = b.End()
			switch {
			case tc.end == "" && (err != nil || open):
				t.Errorf("End: %v (open %v), want no transaction open", err, open)
			case tc.end != "" && (err == nil || err.Error() != tc.end || !errors.Is(err, query.ErrSyntax) || !open):
				t.Errorf("End: %v (open %v), want %q", err, open, tc.end)
			case tc.end != "" && fmt.Sprintf("%s:%d:%d", begin.Filename, begin.Line, begin.Column) != tc.end[:len("s:1:1")]:
				t.Errorf("Begun: %v, want the position End names", begin)
			}
			if _, open := b.Begun(); open || b.End() != nil {
				t.Errorf("End left a transaction open")
			}
		})
	}
}

// countingEmbedder gives every text the same vector, and counts the requests.
type countingEmbedder struct{ calls int }

func (e *countingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.calls++
	vs := make([][]float32, len(texts))
	for i := range vs {
		vs[i] = []float32{1, 0}
	}
	return vs, nil
}

// TestSessionReadForRunInTx: a read for a run inside a transaction is refused before anything
// of the transaction is done (no embedding asked for, nothing written, no result emitted),
// whether the session meets it in a script (Exec) or in the statements of a transaction a
// client gathered (ExecTx), with the same words; the statements before the begin stay written.
func TestSessionReadForRunInTx(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := query.NewSession(db, "")
	emb := &countingEmbedder{}
	s.EmbedWith(emb)
	var emitted []string
	emit := func(r *query.Result) error { emitted = append(emitted, r.Kind); return nil }
	for _, tc := range []struct {
		name    string
		exec    func() error
		want    string
		emitted string // the results of the statements before the begin
		writes  int64  // their transactions
	}{
		{"Exec", func() error {
			return s.Exec(ctx, "tx.mql", "principal w agent\nbegin\nassert K.p = 1 by w\nlive K for run r-1\ncommit\nstats", emit)
		}, "tx.mql:4:1: for run r-1: a read inside a transaction records nothing; read for the run after the commit; the transaction begun at 2:1 was rolled back: nothing of it was written", "[principal]", 1},
		{"ExecTx", func() error {
			return s.ExecTx(ctx, "tx.mql", "assert K.p = 1 by w\nsearch \"K\" for run r-1", 3, 1, query.Position{Filename: "-1", Line: 1, Column: 1}, emit)
		}, "tx.mql:4:1: for run r-1: a read inside a transaction records nothing; read for the run after the commit; the script ran as one transaction (-1), which was rolled back: nothing of it was written", "[]", 0},
	} {
		emitted, emb.calls = nil, 0
		head, _ := db.Head(ctx)
		err := tc.exec()
		var te *query.TxError
		if err == nil || err.Error() != tc.want || !errors.As(err, &te) || !errors.Is(err, mql.ErrInvalid) {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
		if h, _ := db.Head(ctx); h != head+tc.writes || fmt.Sprint(emitted) != tc.emitted || emb.calls != 0 {
			t.Errorf("%s: %d transactions written, emitted %v, %d embedding requests; want %s, and none", tc.name, h-head, emitted, emb.calls, tc.emitted)
		}
		if claims, _ := db.Live(ctx, "K"); len(claims) != 0 {
			t.Errorf("%s: the transaction wrote %d claims", tc.name, len(claims))
		}
	}
}

// A script's transactions, a statement at a time: what to do with each, and whether the
// script may end where it does.
func ExampleTxBlock() {
	script, _ := query.Parse("tx.mql", `principal w agent
begin
assert K.p = 1 by w
commit
commit
begin
assert K.p = 2 by w`)
	var b query.TxBlock
	for _, st := range script.Stmts {
		step, err := b.Next(st)
		switch {
		case err != nil:
			fmt.Println(err)
		case step == query.TxRun:
			fmt.Println("run now:", st)
		case step == query.TxGather:
			fmt.Println("gather:", st)
		case step == query.TxBegin:
			fmt.Println("a transaction begins")
		case step == query.TxCommit:
			fmt.Println("run what was gathered, as one transaction")
		case step == query.TxRollback:
			fmt.Println("discard what was gathered")
		}
	}
	if err := b.End(); err != nil {
		fmt.Println(err)
	}
	// Output:
	// run now: principal w agent
	// a transaction begins
	// gather: assert K.p = 1 by w
	// run what was gathered, as one transaction
	// tx.mql:5:1: commit without begin: no transaction is open
	// a transaction begins
	// gather: assert K.p = 2 by w
	// tx.mql:6:1: the script ended inside the transaction begun here: nothing of it was written; end it with commit (or rollback)
}
