package server_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/mql-dev/mql/server"
)

// POST /v1/query runs the language, so a read made "for run NAME" records its retrieval as the
// token's principal; another principal sees nothing of the run.
func TestQueryForRun(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3, w7 := tm.tokens["worker-3"], tm.tokens["worker-7"]
	code, qr := tm.query(w3, `assert Klarveld.price_per_seat = 44 by worker-3
context Klarveld budget 60 for run r-17
outcome run r-17 declined by worker-3 because "no SOC2 evidence"
run r-17`)
	if code != http.StatusOK || qr.Error != nil || len(qr.Results) != 4 {
		t.Fatalf("status %d, %+v", code, qr)
	}
	rs := rows(t, qr.Results[3])
	if len(rs) != 1 || rs[0]["by"] != "worker-3" || rs[0]["outcome"] != "declined" || !strings.Contains(string(qr.Results[3]), `"ref":"Klarveld.price_per_seat@1"`) {
		t.Fatalf("run r-17: %s", qr.Results[3])
	}
	reps, err := tm.db.Run(context.Background(), "r-17")
	if err != nil || len(reps) != 1 || reps[0].Retrievals[0].Statement != "context Klarveld budget 60" {
		t.Fatalf("the owner's run r-17: %+v %v", reps, err)
	}
	code, qr = tm.query(w7, `run r-17`)
	if code == http.StatusOK || qr.Error == nil || !strings.Contains(qr.Error.Message, "no run of that name") {
		t.Errorf("worker-7's run r-17: status %d, %+v", code, qr)
	}
	_, qr = tm.query(w7, `runs`)
	if qr.Error != nil || strings.Contains(string(qr.Results[0]), "r-17") {
		t.Errorf("worker-7's runs: %+v", qr)
	}
}
