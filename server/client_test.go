package server_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/server"
)

// dyingWriter closes the connection under a handler once it has written after frames, as a
// server that dies while it runs a script does.
type dyingWriter struct {
	http.ResponseWriter
	conn   net.Conn
	after  int
	frames int
}

func (w *dyingWriter) Write(b []byte) (int, error) {
	if w.frames == w.after {
		w.conn.Close()
		return 0, net.ErrClosed
	}
	w.frames++
	return w.ResponseWriter.Write(b)
}

func (w *dyingWriter) Flush() { w.ResponseWriter.(http.Flusher).Flush() }

type connKey struct{}

// When the server goes away under an attached command line, the client says whether the
// statement it was running may have been recorded: it may, when the connection failed after
// the script was sent; it was not, when the server no longer answers.
func TestClientWhenTheServerDies(t *testing.T) {
	ctx := context.Background()
	db := openWorker(ctx, t, "memory:")
	srv := server.New(db, db, server.Options{})
	defer srv.Close()
	local := srv.LocalHandler()
	var mu sync.Mutex
	dieAfter := -1 // frames written before the connection is closed; -1: never
	store := filepath.Join(t.TempDir(), "team.db")
	ln, _, err := server.ListenLocal(store)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			after := dieAfter
			mu.Unlock()
			if after >= 0 && r.URL.Path == "/v1/query" {
				w = &dyingWriter{ResponseWriter: w, conn: r.Context().Value(connKey{}).(net.Conn), after: after}
			}
			local.ServeHTTP(w, r)
		}),
	}
	go hs.Serve(ln)
	c, err := server.Attach(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	exec := func(src string) (int, error) {
		n := 0
		err := c.Exec(ctx, "-c", src, output.Style{Format: output.FormatJSON}, func(server.Frame) error { n++; return nil })
		return n, err
	}
	if _, err := exec(`assert Klarveld.price_per_seat = 44 by worker-3`); err != nil {
		t.Fatal(err)
	}

	dying := func(frames int) {
		mu.Lock()
		dieAfter = frames
		mu.Unlock()
	}
	dying(1)
	n, err := exec(`assert Klarveld.region = "EU" by worker-3; assert Klarveld.soc2 = true by worker-3`)
	if n != 1 || !errors.Is(err, server.ErrConnectionLost) {
		t.Fatalf("the connection closed after one statement's answer: %d answers, %v", n, err)
	}
	for _, want := range []string{"after it answered 1 statement(s)", "the statement it was running then may or may not have been recorded", "read the store"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	// The statement whose answer was lost was recorded, as the error allowed.
	if live, err := db.Live(ctx, "Klarveld.soc2"); err != nil || len(live) != 1 {
		t.Errorf("Klarveld.soc2: %+v %v", live, err)
	}

	// Every statement answered, only the end of the answer lost: nothing is in doubt.
	if n, err := exec(`assert Klarveld.founded = 2019 by worker-3`); n != 1 || err != nil {
		t.Errorf("the one statement answered, then the connection closed: %d answers, %v", n, err)
	}
	// A transaction lost before its answer may or may not have been committed.
	dying(0)
	req := server.ExecRequest{Name: "-1", Src: `assert Brimsole.region = "EU" by worker-3`, Tx: true}
	req.Begin.Name = "-1"
	err = c.ExecAt(ctx, req, output.Style{Format: output.FormatJSON}, func(server.Frame) error { return nil })
	if !errors.Is(err, server.ErrConnectionLost) || !strings.Contains(err.Error(), "before it answered: the transaction may or may not have been recorded") {
		t.Errorf("a transaction whose answer was lost: %v", err)
	}

	hs.Close()
	ln.Close()
	head, _ := db.Head(ctx)
	_, err = exec(`assert Klarveld.employees = 40 by worker-3`)
	if err == nil || errors.Is(err, server.ErrConnectionLost) || !strings.Contains(err.Error(), "nothing was sent and nothing was recorded") {
		t.Errorf("no server: %v", err)
	}
	if after, _ := db.Head(ctx); after != head {
		t.Errorf("a statement sent to no server was recorded: head %d, then %d", head, after)
	}
}
