package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

// GET /v1/backup on the local socket: the owner's own request gets the copy, ended by the
// trailer that says it is whole; acting as another principal, or on a store that is not a
// file, it is refused, and nothing is sent.
func TestBackupRoute(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, dsn, as string
		code          int
	}{
		{"the owner", "bbolt", "", http.StatusOK},
		{"as another principal", "bbolt", "worker-3", http.StatusForbidden},
		{"a memory: store", "memory:", "", http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dsn := tc.dsn
			if dsn == "bbolt" {
				dsn = filepath.Join(t.TempDir(), "team.db")
			}
			db := openWorker(ctx, t, dsn)
			srv := server.New(db, db, server.Options{})
			defer srv.Close()
			hs := httptest.NewServer(srv.LocalHandler())
			defer hs.Close()
			req, _ := http.NewRequest(http.MethodGet, hs.URL+"/v1/backup", nil)
			if tc.as != "" {
				req.Header.Set("Mql-As", tc.as)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code {
				t.Fatalf("%d %s, want %d", resp.StatusCode, body, tc.code)
			}
			if tc.code != http.StatusOK {
				if resp.Trailer.Get("Mql-Backup-Bytes") != "" {
					t.Errorf("a refusal carries the trailer of a whole copy")
				}
				return
			}
			if got := resp.Trailer.Get("Mql-Backup-Bytes"); got != strconv.Itoa(len(body)) {
				t.Errorf("trailer %q, body %d bytes", got, len(body))
			}
			path := filepath.Join(t.TempDir(), "copy.db")
			if err := os.WriteFile(path, body, 0o600); err != nil {
				t.Fatal(err)
			}
			cp, err := mql.Open(ctx, path, mql.Options{MustExist: true})
			if err != nil {
				t.Fatalf("the copy does not open: %v", err)
			}
			defer cp.Close()
			if ps, err := cp.Reader().Principals(ctx, ""); err != nil || len(ps) != 2 {
				t.Errorf("the copy's principals: %v %v", ps, err)
			}
		})
	}
}
