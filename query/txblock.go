package query

import (
	"fmt"

	"github.com/mql-dev/mql"
)

// TxBlock follows a script, a statement at a time, through the transactions written in it:
// begin, the statements it gathers, and commit or rollback. Next says what to do with each
// statement and End whether the script may end where it is. These are the rules of a
// transaction block for every surface that runs scripts (Session.Exec, the REPL), so that
// each is decided, and each of its errors worded, here only.
//
// A TxBlock holds no statements: its caller gathers those it is told to, in the form it needs
// (the REPL gathers their source text, for a session that may be remote). The zero value is
// outside any transaction.
type TxBlock struct {
	open  bool
	begin Position // of the open transaction's begin
}

// TxStep is what to do with a statement, as TxBlock.Next decides.
type TxStep int

const (
	// TxRun: no transaction is open; evaluate the statement on its own.
	TxRun TxStep = iota
	// TxGather: a transaction is open; hold the statement until it ends.
	TxGather
	// TxBegin: the statement is a begin, and a transaction is open from it; nothing to evaluate.
	TxBegin
	// TxCommit: the statement is a commit; run the statements gathered since the begin as one
	// transaction (Session.ExecBlock).
	TxCommit
	// TxRollback: the statement is a rollback; discard the statements gathered since the begin.
	TxRollback
)

// Next decides what to do with st, the next statement of the script, and moves past it. A
// begin inside a transaction, a commit or rollback outside one, and a statement no
// transaction may hold (a read for a run, which would record what it served: mql's reads
// inside a transaction record nothing) are errors, at st's position, and leave the block as it
// was: a caller that stops at the error discards the open transaction, one that goes on (the
// REPL's prompt) keeps it. A misplaced begin, commit or rollback is an *Error (ErrSyntax); the
// refused read, an *EvalError that matches mql.ErrInvalid.
func (b *TxBlock) Next(st Stmt) (TxStep, error) {
	switch st.(type) {
	case *Begin:
		if b.open {
			return 0, errorf(st.Pos(), "begin inside a transaction (begun at %d:%d): commit or roll it back first", b.begin.Line, b.begin.Column)
		}
		b.open, b.begin = true, st.Pos()
		return TxBegin, nil
	case *Commit, *Rollback:
		if !b.open {
			return 0, errorf(st.Pos(), "%s without begin: no transaction is open", st.String())
		}
		b.open = false
		if _, ok := st.(*Rollback); ok {
			return TxRollback, nil
		}
		return TxCommit, nil
	}
	if !b.open {
		return TxRun, nil
	}
	if err := inTx(st); err != nil {
		return 0, err
	}
	return TxGather, nil
}

// Begun reports whether a transaction is open, and where its begin is.
func (b *TxBlock) Begun() (begin Position, open bool) { return b.begin, b.open }

// End is the end of the script: an error, at the begin, when it ends inside a transaction,
// none of which was written. The block is closed either way.
func (b *TxBlock) End() error {
	if !b.open {
		return nil
	}
	b.open = false
	return errorf(b.begin, "the script ended inside the transaction begun here: nothing of it was written; end it with commit (or rollback)")
}

// inTx refuses a read or write that no transaction may hold: a read for a run, which records
// what it served, while mql's reads inside a transaction record nothing (mql.ErrInvalid).
// TxBlock.Next refuses it as it is gathered, Session.ExecBlock before the transaction begins.
// (Begin, commit and rollback are the block's own: see Next, and Session.ExecBlock.)
func inTx(st Stmt) *EvalError {
	if run, _ := ReadFor(st); run != "" {
		return &EvalError{Pos: st.Pos(), Err: readForRunInTx{run}}
	}
	return nil
}

// readForRunInTx is inTx's refusal: mql's own (mql.ErrInvalid), in the language's words.
type readForRunInTx struct{ run string }

func (e readForRunInTx) Error() string {
	return fmt.Sprintf("for run %s: a read inside a transaction records nothing; read for the run after the commit", e.run)
}

func (e readForRunInTx) Unwrap() error { return mql.ErrInvalid }
