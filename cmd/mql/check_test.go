package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
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
	if _, err := s.Write(ctx, "worker-7", func(_ *index.Index, tx *record.Tx) error {
		c, _ := record.ParseClaimID("Klarveld.price_per_seat@1")
		tx.Revocations = []*record.Revocation{{ID: "r99.1", Claim: c, By: "worker-7", Standing: "own claim"}}
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

// A damaged file: `mql check` says so (exit 1, problems of kind file; exit 4 when the file
// cannot be opened at all), and a write is refused while a read from the index goes on.
func TestCheckDamagedCommand(t *testing.T) {
	dir := testEnv(t)
	path := filepath.Join(dir, "team.db")
	if _, e, code := mqlRun(t, "", "-f", "testdata/provenance.mql", path); code != 0 {
		t.Fatalf("setup: %s", e)
	}
	sound, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := int(binary.LittleEndian.Uint32(sound[24:])) // the first meta page's page size

	// The first page after the meta pages that the check finds damaged when zeroed.
	damaged := filepath.Join(dir, "damaged.db")
	var out string
	for p := 2; p*ps < len(sound); p++ {
		d := bytes.Clone(sound)
		clear(d[p*ps : (p+1)*ps])
		if err := os.WriteFile(damaged, d, 0o600); err != nil {
			t.Fatal(err)
		}
		var code int
		if out, _, code = mqlRun(t, "", "check", damaged); code == exitFailed {
			break
		}
	}
	if !strings.HasPrefix(out, damaged+": the file is damaged\nfile: ") || !strings.Contains(out, "restore the store from an export or a backup") {
		t.Fatalf("check of a zeroed page:\n%s", out)
	}
	// Refused: by the write (exit 1), or at open when loading needs the page (exit 4).
	if _, errOut, code := mqlRun(t, "", "-c", `assert Z.p = 1 by owner`, damaged); code == exitOK || !strings.Contains(errOut, "is damaged") {
		t.Fatalf("a write on a damaged store: exit %d %s", code, errOut)
	}

	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, sound[:len(sound)/2+100], 0o600); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := mqlRun(t, "", "check", truncated)
	if code != exitOpen || !strings.Contains(errOut, "is damaged: the file is") || !strings.Contains(errOut, "truncated") {
		t.Fatalf("check of a truncated file: exit %d %s", code, errOut)
	}
	if _, errOut, code := mqlRun(t, "", "-c", "stats", truncated); code != exitOpen || !strings.Contains(errOut, "is damaged") {
		t.Fatalf("opening a truncated file: exit %d %s", code, errOut)
	}
}
