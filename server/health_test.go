package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/pgtest"
	"github.com/mql-dev/mql/server"
)

// getProbe GETs path without a credential and returns the status and body.
func getProbe(t *testing.T, base, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The probes need no token, say nothing of the memory, and readyz goes 503 the moment the
// server drains, while healthz stays 200 (the process is alive).
func TestProbesBBolt(t *testing.T) {
	ctx := context.Background()
	db, err := mql.Open(ctx, t.TempDir()+"/team.db", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "secret", Value: mql.String("s3cr3t-44"), By: "owner"}); err != nil {
		t.Fatal(err)
	}
	srv := server.New(db, db, server.Options{})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	for _, tc := range []struct {
		path  string
		drain bool
		code  int
		body  string
	}{
		{"/healthz", false, 200, "ok\n"},
		{"/readyz", false, 200, "ready\n"},
		{"/healthz", true, 200, "ok\n"},
		{"/readyz", true, 503, "not ready: draining (the server is stopping)\n"},
	} {
		if tc.drain {
			srv.Drain()
		}
		code, body := getProbe(t, hs.URL, tc.path)
		if code != tc.code || body != tc.body {
			t.Errorf("%s (draining %v): %d %q, want %d %q", tc.path, tc.drain, code, body, tc.code, tc.body)
		}
		for _, leak := range []string{"Klarveld", "s3cr3t", "owner", "team.db"} {
			if strings.Contains(body, leak) {
				t.Errorf("%s says %q: it reveals %q", tc.path, body, leak)
			}
		}
	}
	// Another method is refused, as elsewhere in the API.
	resp, err := http.Post(hs.URL+"/readyz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Errorf("POST /readyz: 200, want a refusal")
	}
}

// A bbolt file damaged under the running server: readyz answers 503 saying that the store is
// damaged (its writes are refused, whatever reads still succeed) and naming no path; healthz
// stays 200.
func TestProbesDamagedBBolt(t *testing.T) {
	ps := int64(os.Getpagesize()) // bbolt's page size
	for _, tc := range []struct {
		name   string
		damage func(path string) error
	}{
		{"truncated", func(path string) error { return os.Truncate(path, 2*ps) }},
		{"truncated to nothing", func(path string) error { return os.Truncate(path, 0) }},
		{"meta pages overwritten", func(path string) error {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.WriteAt(make([]byte, 2*ps), 0)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "team.db")
			db, err := mql.Open(ctx, path, mql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for i := range 200 {
				if _, err := db.Assert(ctx, mql.AssertSpec{Subject: fmt.Sprintf("Vendor%d", i), Predicate: "price", Value: mql.Number(float64(i)), By: "owner"}); err != nil {
					t.Fatal(err)
				}
			}
			srv := server.New(db, db, server.Options{})
			defer srv.Close()
			hs := httptest.NewServer(srv.Handler())
			defer hs.Close()
			if code, body := getProbe(t, hs.URL, "/readyz"); code != http.StatusOK {
				t.Fatalf("readyz before the damage: %d %q", code, body)
			}

			if err := tc.damage(path); err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(hs.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			const want = "not ready: the store is damaged, and refuses every write (bbolt): run mql check on it\n"
			if resp.StatusCode != http.StatusServiceUnavailable || string(b) != want || resp.Header.Get("Retry-After") == "" {
				t.Errorf("readyz after the damage: %d %q (Retry-After %q), want 503 %q", resp.StatusCode, b, resp.Header.Get("Retry-After"), want)
			}
			if strings.Contains(string(b), "team.db") || strings.Contains(string(b), filepath.Dir(path)) {
				t.Errorf("readyz says %q: it reveals the path", b)
			}
			if code, _ := getProbe(t, hs.URL, "/healthz"); code != http.StatusOK {
				t.Errorf("healthz after the damage: %d, want 200", code)
			}
			// What readyz says is what a writer gets.
			if _, err := db.Assert(ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(1), By: "owner"}); !errors.Is(err, mql.ErrDamaged) {
				t.Errorf("a write after the damage: %v, want ErrDamaged", err)
			}
		})
	}
}

// stallProxy forwards TCP connections to target until stall is called; from then on it reads
// nothing and writes nothing: a PostgreSQL that hangs (a network partition, a frozen host).
type stallProxy struct {
	ln      net.Listener
	stalled atomic.Bool
	mu      sync.Mutex
	conns   []net.Conn
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
	}()
	return p
}

func (p *stallProxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		for p.stalled.Load() {
			time.Sleep(10 * time.Millisecond)
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// On PostgreSQL, readyz follows the database: 503 while it refuses connections, 503 within
// ReadyTimeout while it hangs, 200 again once it is back; healthz stays 200 throughout, and
// neither says where the database is.
func TestProbesPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newStallProxy(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	ctx := context.Background()
	db, err := mql.Open(ctx, u.String(), mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := server.New(db, db, server.Options{})
	defer srv.Close()
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()

	want := func(when string, code int, body string, within time.Duration) {
		t.Helper()
		start := time.Now()
		got, text := getProbe(t, hs.URL, "/readyz")
		if took := time.Since(start); took > within {
			t.Errorf("%s: readyz took %s, want at most %s", when, took, within)
		}
		if got != code || !strings.Contains(text, body) {
			t.Errorf("%s: readyz %d %q, want %d %q", when, got, text, code, body)
		}
		for _, leak := range []string{u.Host, "127.0.0.1", "postgres://", u.Path} {
			if strings.Contains(text, leak) {
				t.Errorf("%s: readyz says %q: it reveals %q", when, text, leak)
			}
		}
		if code, _ := getProbe(t, hs.URL, "/healthz"); code != http.StatusOK {
			t.Errorf("%s: healthz %d, want 200", when, code)
		}
	}
	bound := server.ReadyTimeout + time.Second
	want("up", 200, "ready", bound)

	restore := pgOutage(t, dsn)
	want("refusing connections", 503, "not ready: the store cannot be read (postgres)", bound)
	restore()
	deadline := time.Now().Add(10 * time.Second)
	for code, _ := getProbe(t, hs.URL, "/readyz"); code != http.StatusOK && time.Now().Before(deadline); code, _ = getProbe(t, hs.URL, "/readyz") {
		time.Sleep(100 * time.Millisecond)
	}
	want("back", 200, "ready", bound)

	proxy.stalled.Store(true)
	want("hanging", 503, "not ready: the store did not answer within "+server.ReadyTimeout.String()+" (postgres)", bound)
	proxy.stalled.Store(false)
}
