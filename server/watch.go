package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mql-dev/mql"
)

// watch streams the change feed as server-sent events: GET /v1/watch[?pattern=P][&after=N].
// Each event is one mql.Event in JSON, its SSE event name the kind ("claim", "revocation",
// "needs-review", …). The id of the last event of each transaction is the transaction, so a
// client that reconnects with Last-Event-ID resumes after the last transaction it saw whole.
// Without after or Last-Event-ID, the stream starts at the head. The first event, "ready",
// carries the transaction it starts after. Comments (": ping") keep idle connections open.
// The stream ends when the server shuts down or, for a token, once the token stops being valid.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r.Context())
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming is not supported on this connection", http.StatusInternalServerError)
		return
	}
	pattern := r.URL.Query().Get("pattern")
	if len(pattern) > 1024 || strings.ContainsAny(pattern, "\x00\r\n") {
		http.Error(w, "pattern: at most 1024 bytes, one line", http.StatusBadRequest)
		return
	}
	setWhat(r, "watch")
	if id.principal != s.owner {
		if err := checkPrincipal(r.Context(), s.db, id.principal); err != nil {
			s.principalFailed(w, r, false, "", err)
			return
		}
	}
	reader := s.db.ActAs(id.principal).Reader()
	sub, unsubscribe := s.db.Subscribe()
	defer unsubscribe()

	head, err := s.db.Head(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	after := head
	from := r.Header.Get("Last-Event-ID")
	if from == "" {
		from = r.URL.Query().Get("after")
	}
	if from != "" {
		n, err := strconv.ParseInt(from, 10, 64)
		if err != nil || n < 0 || n > head {
			http.Error(w, fmt.Sprintf("after %q: want a transaction id from 0 to the head, %d", from, head), http.StatusBadRequest)
			return
		}
		after = n
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ready, _ := json.Marshal(map[string]int64{"after": after})
	fmt.Fprintf(w, "event: ready\ndata: %s\n\n", ready)
	fl.Flush()

	heartbeat := time.NewTicker(s.opts.Heartbeat)
	defer heartbeat.Stop()
	var poll <-chan time.Time
	if s.db.Backend() == "postgres" {
		t := time.NewTicker(s.opts.Poll)
		defer t.Stop()
		poll = t.C
	}
	ctx := r.Context()
	for {
		// Read everything up to the head, MaxEventTxs transactions at a time.
		for {
			events, last, err := reader.Events(ctx, after, pattern)
			if err != nil {
				if ctx.Err() == nil {
					if errors.Is(err, mql.ErrStorage) {
						err = storageDown(err)
					}
					fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonString(err.Error()))
					fl.Flush()
				}
				return
			}
			writeEvents(w, events)
			fl.Flush()
			full := last-after >= mql.MaxEventTxs // there may be more
			after = last
			if !full {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.stop:
			return
		case <-sub:
		case <-poll:
			if _, err := s.db.Head(ctx); err != nil { // loads other processes' commits, signalling sub
				return
			}
			continue
		case <-heartbeat.C:
			fmt.Fprint(w, ": ping\n\n")
			fl.Flush()
		}
		if err := s.stillValid(r, id); err != nil {
			fmt.Fprintf(w, "event: error\ndata: %s\n\n", jsonString(err.Error()))
			fl.Flush()
			return
		}
	}
}

// writeEvents writes events as SSE, setting the id on the last event of each transaction.
func writeEvents(w http.ResponseWriter, events []mql.Event) {
	for i, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "event: %s\n", strings.ReplaceAll(e.Kind, " ", "-"))
		if i == len(events)-1 || events[i+1].Tx != e.Tx {
			fmt.Fprintf(w, "id: %d\n", e.Tx)
		}
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// stillValid re-checks a long-lived request's token, so that a revoked token stops a stream
// that it opened: it returns mql.ErrUnauthorized then, and storageDown's error when the store
// cannot be read to tell.
func (s *Server) stillValid(r *http.Request, id identity) error {
	if id.session != "" {
		if _, ok := s.sessions.get(id.session, time.Now()); !ok {
			return mql.ErrUnauthorized
		}
	}
	if id.local || id.token == "" {
		return nil
	}
	p, err := s.auth.Authenticate(r.Context(), id.token)
	switch {
	case err != nil && !errors.Is(err, mql.ErrUnauthorized):
		return storageDown(nil)
	case err != nil || p != id.principal:
		return mql.ErrUnauthorized
	}
	return nil
}

// storageDown ends a change feed that the store could not be read for, its token checked
// again or its next events read (err, when it says what failed): said as such, so that a
// reader tells an outage, which ends when the store is back, from a refusal.
func storageDown(err error) error {
	what := "a storage failure"
	if err != nil {
		what += ": " + err.Error()
	}
	return errors.New("the store cannot be read now (" + what + "): reconnect with Last-Event-ID to resume")
}
