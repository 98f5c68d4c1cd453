package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// `mql backup` while `mql serve` holds the store and four agents write through it: the copy
// is made through the server's socket, and after the server is SIGKILLed, opening the copy
// finds every write acknowledged before the backup began (and the store itself still opens).
func TestBackupUnderWritersThroughServe(t *testing.T) {
	bin := crashBuild(t)
	home, dir := t.TempDir(), t.TempDir()
	db := filepath.Join(dir, "team.db")
	const agents = 4
	var setup strings.Builder
	for i := range agents {
		fmt.Fprintf(&setup, "principal agent-%d agent\n", i)
	}
	if _, e, code := runMQL(t, bin, home, setup.String(), "-f", "-", db); code != 0 {
		t.Fatal(e)
	}
	tokens := make([]string, agents)
	for i := range agents {
		tok, e, code := runMQL(t, bin, home, "", "token", "create", fmt.Sprintf("agent-%d", i), db)
		if code != 0 {
			t.Fatal(e)
		}
		tokens[i] = strings.TrimSpace(tok)
	}
	s := startServe(t, bin, home, db)

	var mu sync.Mutex
	acked := map[string]float64{} // key -> the last value acknowledged
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range agents {
		wg.Go(func() {
			for n := 1; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("s%d.k%d", i, n%7)
				req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/query", strings.NewReader(fmt.Sprintf("assert %s = %d by agent-%d", key, n, i)))
				req.Header.Set("Authorization", "Bearer "+tokens[i])
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					return // the server was killed
				}
				var qr struct {
					Error *struct{ Message string } `json:"error"`
				}
				json.NewDecoder(resp.Body).Decode(&qr)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || qr.Error != nil {
					return
				}
				mu.Lock()
				acked[key] = float64(n)
				mu.Unlock()
			}
		})
	}
	snapshot := func() map[string]float64 {
		mu.Lock()
		defer mu.Unlock()
		m := make(map[string]float64, len(acked))
		for k, v := range acked {
			m[k] = v
		}
		return m
	}
	for len(snapshot()) < agents*7 {
		time.Sleep(10 * time.Millisecond)
	}
	var befores []map[string]float64
	var copies []string
	for round := range 2 {
		before := snapshot()
		cp := filepath.Join(dir, fmt.Sprintf("copy%d.db", round))
		out, e, code := runMQL(t, bin, home, "", "backup", db, cp)
		if code != 0 || !strings.Contains(out, "through mql serve") || !strings.Contains(out, "checked: ok") {
			t.Fatalf("mql backup: exit %d\n%s%s", code, out, e)
		}
		befores, copies = append(befores, before), append(copies, cp)
		time.Sleep(300 * time.Millisecond) // writers go on between the backups
	}
	// Refused while served too: the store itself, an existing file without --force.
	if _, e, code := runMQL(t, bin, home, "", "backup", db, copies[0]); code != exitTransfer || !strings.Contains(e, "--force") {
		t.Errorf("backup over an existing file: exit %d %s", code, e)
	}
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()

	ctx := context.Background()
	for round, cp := range copies {
		if _, err := os.Stat(cp + "-log-1"); err == nil {
			t.Errorf("a log beside the copy %s", cp)
		}
		restored, err := mql.Open(ctx, cp, mql.Options{MustExist: true})
		if err != nil {
			t.Fatalf("restoring %s: %v", cp, err)
		}
		for key, n := range befores[round] {
			live, err := restored.Live(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			// Each agent writes its keys in order: the copy has the acknowledged value or a later one.
			if len(live) != 1 || live[0].Value.Num < n {
				t.Errorf("copy %d: %s = %v, want at least %v (acknowledged before the backup began)", round, key, live, n)
			}
		}
		restored.Close()
		if _, e, code := runMQL(t, bin, home, "", "check", cp); code != 0 {
			t.Errorf("mql check %s: %d %s", cp, code, e)
		}
	}
	t.Logf("%d and %d keys acknowledged before the two backups", len(befores[0]), len(befores[1]))
}

// Before anything is read, `mql backup` refuses a FILE it must not replace.
func TestBackupTarget(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "team.db")
	for _, f := range []string{store, store + "-log-3", filepath.Join(dir, "old.db")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(store, filepath.Join(dir, "link.db")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		file  string
		force bool
		want  string // "" for accepted
	}{
		{"new.db", false, ""},
		{"old.db", false, "it exists; add --force"},
		{"old.db", true, ""},
		{"team.db", true, "it is the store being backed up"},
		{"link.db", true, "it is the store being backed up"},
		{"team.db-log-3", true, "write-ahead log"},
		{".", true, "it is a directory"},
	} {
		err := backupTarget(filepath.Join(dir, tc.file), store, tc.force)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (force %v): %v, want it accepted", tc.file, tc.force, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s (force %v): %v, want %q", tc.file, tc.force, err, tc.want)
		}
	}
}
