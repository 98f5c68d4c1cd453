package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
)

func TestCheckCommand(t *testing.T) {
	dir := testEnv(t)
	path := filepath.Join(dir, "team.db")
	if _, e, code := mqlRun(t, "", "-f", "testdata/provenance.mql", path); code != 0 {
		t.Fatalf("setup: %s", e)
	}
	out, errOut, code := mqlRun(t, "", "check", path)
	if code != exitOK || !strings.Contains(out, "ok: no problems found") || errOut != "" {
		t.Fatalf("sound store: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = mqlRun(t, "", "check", "--format", "json", path)
	var rep struct {
		OK       bool `json:"ok"`
		Head     int  `json:"head"`
		Problems []any
	}
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil || !rep.OK || rep.Head < 10 || rep.Problems == nil {
		t.Fatalf("json: exit %d %s", code, out)
	}

	// A standing that never held, written past the API: exit 1 and the problem listed.
	ctx := context.Background()
	s, err := graphstore.Open(ctx, path, graphstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "worker-7", func(_ *graphstore.Index, tx *graphstore.Tx) error {
		c, _ := graphstore.ParseClaimID("Klarveld.price_per_seat@1")
		tx.Revocations = []*graphstore.Revocation{{ID: "r99.1", Claim: c, By: "worker-7", Standing: "own claim"}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	out, _, code = mqlRun(t, "", "check", path)
	if code != exitFailed || !strings.Contains(out, "standing: tx ") || !strings.Contains(out, "as its own claim") || !strings.Contains(out, "1 problem found") {
		t.Fatalf("forged store: exit %d\n%s", code, out)
	}

	// No store there: exit 4, and none is created.
	missing := filepath.Join(dir, "missing.db")
	_, errOut, code = mqlRun(t, "", "check", missing)
	if code != exitOpen || !strings.Contains(errOut, "no such store: "+missing+" does not exist") {
		t.Fatalf("missing store: exit %d %s", code, errOut)
	}
	if _, _, code := mqlRun(t, "", "check", missing); code != exitOpen {
		t.Fatal("check created the store")
	}

	// In use by another opener: exit 4 within the timeout.
	db, err := mql.Open(ctx, path, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	_, errOut, code = mqlRun(t, "", "check", path)
	if code != exitOpen || !strings.Contains(errOut, "in use") || time.Since(start) > 10*time.Second {
		t.Fatalf("store in use: exit %d after %s: %s", code, time.Since(start), errOut)
	}
	if _, _, code := mqlRun(t, "", "check", "a", "b"); code != exitUsage {
		t.Errorf("two stores: exit %d", code)
	}
}
