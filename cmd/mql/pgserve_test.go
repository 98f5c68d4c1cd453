package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql/internal/pgtest"
)

// Three `mql serve` processes on one PostgreSQL database are one memory: agents writing
// through any of them, at once, get consecutive transactions of one history; every server
// answers with every acknowledged write; and a change feed on one server carries the writes
// made through the others. It skips unless MQL_TEST_POSTGRES is set.
func TestServeThreeOnPostgres(t *testing.T) {
	dsn := pgtest.Database(t)
	bin := crashBuild(t)
	home := t.TempDir()
	if _, e, code := runMQL(t, bin, home, serveSetup, "-f", "-", dsn); code != 0 {
		t.Fatal(e)
	}
	agents := []string{"worker-3", "worker-7", "orchestrator"}
	tokens := map[string]string{}
	for _, a := range agents {
		tok, e, code := runMQL(t, bin, home, "", "token", "create", a, dsn)
		if code != 0 {
			t.Fatal(e)
		}
		tokens[a] = strings.TrimSpace(tok)
	}
	servers := make([]*served, 3)
	for i := range servers {
		servers[i] = startServe(t, bin, home, dsn)
	}

	type queryAnswer struct {
		Results []struct {
			Kind string `json:"kind"`
			Rows []struct {
				Ref string `json:"ref"`
				Tx  int64  `json:"tx"`
			} `json:"rows"`
		} `json:"results"`
		Error string `json:"error"`
	}
	query := func(s *served, agent, q string) (queryAnswer, error) {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/query", strings.NewReader(q))
		req.Header.Set("Authorization", "Bearer "+tokens[agent])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return queryAnswer{}, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return queryAnswer{}, err
		}
		var a queryAnswer
		if err := json.Unmarshal(body, &a); err != nil || resp.StatusCode != http.StatusOK {
			return a, fmt.Errorf("%s: status %d: %.300s", q, resp.StatusCode, body)
		}
		return a, nil
	}

	// The change feed of the third server, as worker-3 sees it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, servers[2].url+"/v1/watch", nil)
	req.Header.Set("Authorization", "Bearer "+tokens["worker-3"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	fed := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var e struct {
					Kind string `json:"kind"`
					Ref  string `json:"ref"`
				}
				if json.Unmarshal([]byte(data), &e) == nil && e.Kind == "claim" {
					fed <- e.Ref
				}
			}
		}
		close(fed)
	}()

	// Each agent writes through each server, all at once: 3 × 3 writers of 10 versions each.
	const versions = 10
	var wg sync.WaitGroup
	var mu sync.Mutex
	txs := map[int64]string{} // acknowledged tx -> ref
	errs := make(chan error, 9)
	for si, s := range servers {
		for _, a := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for v := 1; v <= versions; v++ {
					ans, err := query(s, a, fmt.Sprintf("assert S%d%s.n = %d by %s", si, strings.ReplaceAll(a, "-", ""), v, a))
					if err != nil {
						errs <- err
						return
					}
					if len(ans.Results) != 1 || len(ans.Results[0].Rows) != 1 {
						errs <- fmt.Errorf("assert through server %d: %+v", si, ans)
						return
					}
					r := ans.Results[0].Rows[0]
					mu.Lock()
					if prev, dup := txs[r.Tx]; dup {
						errs <- fmt.Errorf("tx %d acknowledged twice: %s and %s", r.Tx, prev, r.Ref)
					}
					txs[r.Tx] = r.Ref
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(txs) != 9*versions {
		t.Fatalf("%d transactions acknowledged, want %d", len(txs), 9*versions)
	}

	// Every server has every version, the last one live.
	for si, s := range servers {
		for sj := range servers {
			for _, a := range agents {
				key := fmt.Sprintf("S%d%s.n", sj, strings.ReplaceAll(a, "-", ""))
				h, err := query(s, "worker-3", "history "+key)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(h.Results[0].Rows); n != versions {
					t.Fatalf("server %d: history %s has %d versions, want %d", si, key, n, versions)
				}
				l, err := query(s, "worker-3", "live "+key)
				if err != nil {
					t.Fatal(err)
				}
				if rows := l.Results[0].Rows; len(rows) != 1 || rows[0].Ref != fmt.Sprintf("%s@%d", key, versions) {
					t.Fatalf("server %d: live %s: %+v", si, key, rows)
				}
			}
		}
	}

	// The third server's feed carried every claim, wherever it was written.
	want := map[string]bool{}
	for _, ref := range txs {
		want[ref] = true
	}
	deadline := time.After(20 * time.Second)
	for len(want) > 0 {
		select {
		case ref, ok := <-fed:
			if !ok {
				t.Fatalf("the feed ended with %d claims not carried", len(want))
			}
			delete(want, ref)
		case <-deadline:
			t.Fatalf("the third server's feed did not carry %d of the claims within 20s", len(want))
		}
	}

	if out, e, code := runMQL(t, bin, home, "", "check", dsn); code != 0 {
		t.Fatalf("check: %s%s", out, e)
	}
}
