package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mql-dev/mql"
)

// ReadyTimeout bounds how long GET /readyz waits for the store's backend to answer: a probe
// that hangs is no better than one that fails, and a supervisor's own timeout is often a few
// seconds.
const ReadyTimeout = 2 * time.Second

// Drain makes GET /readyz answer 503 from now on, so that a load balancer stops sending work
// before the listener closes. `mql serve` calls it the moment it starts stopping.
func (s *Server) Drain() { s.draining.Store(true) }

// healthz says the process is alive and serving HTTP. It does not touch the store: a
// supervisor that restarts on a failed liveness probe must not restart a server whose database
// is merely slow.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "healthz")
	probeAnswer(w, http.StatusOK, "ok")
}

// readyz says whether the server can serve requests now: not stopping, its store answers a
// read within ReadyTimeout (bbolt: a snapshot of the file and its log; PostgreSQL: a round
// trip that reads the head), and it would take a write: a bbolt store found damaged (by a
// read, a check's recorded verdict, or its file as it is now: truncated under it, its meta
// pages no longer valid) still serves some reads, but refuses every write, which is most of
// what agents ask. The reason it gives names a class of failure, never a path, a host or
// anything the store holds; the error itself goes to the server's log.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "readyz")
	if s.draining.Load() {
		setOutcome(r, "draining")
		probeAnswer(w, http.StatusServiceUnavailable, "not ready: draining (the server is stopping)")
		return
	}
	if err := s.ready.check(r.Context(), func(ctx context.Context) error {
		if _, err := s.db.Head(ctx); err != nil {
			return err
		}
		return s.db.Writable()
	}); err != nil {
		reason := "not ready: the store cannot be read (" + s.db.Backend() + ")"
		switch {
		case errors.Is(err, errNotAnswered):
			reason = "not ready: the store did not answer within " + ReadyTimeout.String() + " (" + s.db.Backend() + ")"
		case errors.Is(err, mql.ErrDamaged):
			reason = "not ready: the store is damaged, and refuses every write (" + s.db.Backend() + "): run mql check on it"
		}
		s.log.LogAttrs(r.Context(), slog.LevelWarn, "not ready", slog.String("error", err.Error()))
		setOutcome(r, "storage")
		probeAnswer(w, http.StatusServiceUnavailable, reason)
		return
	}
	probeAnswer(w, http.StatusOK, "ready")
}

// errNotAnswered is a readiness check that did not end within ReadyTimeout.
var errNotAnswered = errors.New("the store did not answer in time")

// readiness runs at most one check of the store at a time: probes that arrive while one is
// in flight wait for its answer. The check runs apart from the probe, so a backend that does
// not give up at its context's deadline (a connection that hangs mid-reply) still gets its
// probe answered within ReadyTimeout, and a supervisor probing every second does not pile up
// reads on a store that hangs.
type readiness struct {
	mu     sync.Mutex
	flight *flight // the check in flight, nil when none
}

type flight struct {
	done chan struct{}
	err  error
}

func (r *readiness) check(ctx context.Context, fn func(context.Context) error) error {
	r.mu.Lock()
	f := r.flight
	if f == nil {
		f = &flight{done: make(chan struct{})}
		r.flight = f
		go func() {
			cctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
			defer cancel()
			f.err = fn(cctx)
			r.mu.Lock()
			r.flight = nil
			r.mu.Unlock()
			close(f.done)
		}()
	}
	r.mu.Unlock()
	t := time.NewTimer(ReadyTimeout)
	defer t.Stop()
	select {
	case <-f.done:
		if f.err != nil && errors.Is(f.err, context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", errNotAnswered, f.err)
		}
		return f.err
	case <-t.C:
		return errNotAnswered
	case <-ctx.Done():
		return ctx.Err()
	}
}

func probeAnswer(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if code == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "5")
	}
	w.WriteHeader(code)
	w.Write([]byte(text + "\n"))
}
