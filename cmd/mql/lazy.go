package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/repl"
)

// lazyStore is the REPL's session on a store that does not exist yet. Only a write creates a
// store, so that a misspelt name is not a new, empty one: reads are refused, saying that
// there is no store yet, and the first write creates it and then runs on it.
type lazyStore struct {
	dsn    string
	opts   mql.Options // for the store's creation
	mkdir  string      // the directory to create first (the default store's), or ""
	as     string
	stderr io.Writer

	mu   sync.Mutex // completion asks for names while a statement may be creating the store
	db   *mql.DB
	sess repl.Session
}

// errNoStoreYet is what a read gets before the first write.
func (l *lazyStore) errNoStoreYet(what string) error {
	return fmt.Errorf("no store at %s yet: %s; the first write creates it (principal alice user, assert …)", l.dsn, what)
}

// session is the session on the store, created if create is set; nil before the first write.
func (l *lazyStore) session(ctx context.Context, create bool) (repl.Session, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sess != nil || !create {
		return l.sess, nil
	}
	if l.mkdir != "" {
		if err := os.MkdirAll(l.mkdir, 0o700); err != nil {
			return nil, err
		}
	}
	db, err := mql.Open(ctx, l.dsn, l.opts)
	if err != nil {
		return nil, fmt.Errorf("cannot create the store at %s: %w", l.dsn, err)
	}
	if db.Created() {
		fmt.Fprintf(l.stderr, "mql: created a new store at %s\n", l.dsn)
	}
	l.db, l.sess = db, repl.Local(query.NewSession(db, l.as), l.dsn)
	return l.sess, nil
}

func writes(srcs ...repl.Source) bool {
	for _, src := range srcs {
		if repl.ItemWrites(repl.Item{Src: src}) {
			return true
		}
	}
	return false
}

func (l *lazyStore) Exec(ctx context.Context, src repl.Source, st output.Style, emit func(repl.Rendered) error) error {
	sess, err := l.session(ctx, writes(src))
	if err != nil {
		return err
	}
	if sess == nil {
		return l.errNoStoreYet("there is nothing to read")
	}
	return sess.Exec(ctx, src, st, emit)
}

func (l *lazyStore) ExecTx(ctx context.Context, begin repl.Source, srcs []repl.Source, st output.Style, emit func(repl.Rendered) error) error {
	sess, err := l.session(ctx, writes(srcs...))
	if err != nil {
		return err
	}
	if sess == nil {
		return l.errNoStoreYet("there is nothing to read")
	}
	return sess.ExecTx(ctx, begin, srcs, st, emit)
}

func (l *lazyStore) Names(ctx context.Context) (repl.Names, error) {
	sess, err := l.session(ctx, false)
	if err != nil || sess == nil {
		return repl.Names{}, err
	}
	return sess.Names(ctx)
}

func (l *lazyStore) Export(ctx context.Context, w io.Writer) error {
	sess, err := l.session(ctx, false)
	if err != nil {
		return err
	}
	if sess == nil {
		return l.errNoStoreYet("there is nothing to export")
	}
	return sess.Export(ctx, w)
}

func (l *lazyStore) Import(ctx context.Context, r io.Reader) error {
	sess, err := l.session(ctx, false)
	if err != nil {
		return err
	}
	if sess == nil {
		return fmt.Errorf("no store at %s yet, and \\import does not create one: create it from the export with `mql import FILE %s`", l.dsn, l.dsn)
	}
	return sess.Import(ctx, r)
}

func (l *lazyStore) Info(ctx context.Context) (repl.Info, error) {
	sess, err := l.session(ctx, false)
	if err != nil {
		return repl.Info{}, err
	}
	if sess != nil {
		return sess.Info(ctx)
	}
	owner := l.opts.Owner
	if owner == "" {
		owner = "owner"
	}
	who := l.as
	if who == "" {
		who = owner
	}
	return repl.Info{Store: l.dsn + " (no store yet: the first write creates it)", Backend: backendOf(l.dsn), Principal: who, Owner: owner}, nil
}

func (l *lazyStore) Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error {
	sess, err := l.session(ctx, false)
	if err != nil {
		return err
	}
	w, ok := sess.(repl.Watcher)
	if !ok {
		return l.errNoStoreYet("there is nothing to watch")
	}
	return w.Watch(ctx, pattern, emit)
}

// Close closes the store, if the session created it.
func (l *lazyStore) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.db == nil {
		return nil
	}
	return l.db.Close()
}

// backendOf names the backend of a store that is not open: a file (bbolt) unless it is a
// database.
func backendOf(dsn string) string {
	if mql.FilePath(dsn) == "" {
		return "postgres"
	}
	return "bbolt"
}
