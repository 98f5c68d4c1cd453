package repl

import (
	"context"
	"fmt"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
)

// Watcher is a Session that can follow the change feed (\watch).
type Watcher interface {
	// Watch calls emit with each event of the transactions committed from now on that the
	// session's principal may see and that match pattern, until ctx ends.
	Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error
}

// Watch follows the change feed as the session's principal (\watch).
func (l local) Watch(ctx context.Context, pattern string, emit func(mql.Event) error) error {
	r, err := l.Reader() // the session's Actor's: as its principal, and bound to it
	if err != nil {
		return err
	}
	after, err := l.DB().Head(ctx)
	if err != nil {
		return err
	}
	return r.Follow(ctx, after, pattern, 0, emit)
}

// watch runs \watch [PATTERN]: it prints the change feed until Ctrl-C.
func (s *Shell) watch(ctx context.Context, pattern string) error {
	w, ok := s.cfg.Session.(Watcher)
	if !ok {
		return fmt.Errorf("%w: \\watch needs a store to follow", ErrMeta)
	}
	if buf := s.pagerBuf; buf != nil {
		// A feed is live: it never waits for the pager.
		s.cfg.Stdout.Write(buf.Bytes())
		buf.Reset()
		s.out.SetWriter(s.cfg.Stdout)
		defer s.out.SetWriter(buf)
	}
	ctx, stop := s.interruptible(ctx)
	defer stop()
	what := "every change"
	if pattern != "" {
		what = "changes to " + pattern
	}
	fmt.Fprintf(s.cfg.Stderr, "watching %s; Ctrl-C to stop\n", output.EscapeLine(what))
	err := w.Watch(ctx, pattern, func(e mql.Event) error {
		return s.out.PrintEvent(e)
	})
	if ctx.Err() != nil {
		return nil // Ctrl-C: the watch is over
	}
	return err
}
