package mcpserver_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
)

// The procurement scenario over MCP: three workers research vendors, each through a server
// of its own acting as itself, one revises a price, and an orchestrator asks for the working
// context and the cheapest SOC2 vendor in the EU, and gets the right answer.
//
// On memory and bbolt the servers share one *mql.DB (one process); on PostgreSQL each server
// opens the database on its own, as separate processes would, and they share one memory.
func TestProcurement(t *testing.T) {
	for _, backend := range []string{"memory", "bbolt", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var server func(as string) *client
			switch backend {
			case "memory", "bbolt":
				dsn := "memory:"
				if backend == "bbolt" {
					dsn = filepath.Join(t.TempDir(), "team.db")
				}
				db := openStore(t, dsn, nil)
				team(t, db)
				server = func(as string) *client { return connect(t, db, as) }
			case "postgres":
				dsn := postgresDSN(t)
				team(t, openStore(t, dsn, nil))
				server = func(as string) *client { return connect(t, openStore(t, dsn, nil), as) }
			}
			procurement(t, server)
		})
	}
}

func procurement(t *testing.T, server func(as string) *client) {
	w3, w7, w9 := server("worker-3"), server("worker-7"), server("worker-9")
	orch := server("orchestrator")

	src := func(id, excerpt string) []any {
		return []any{map[string]any{"id": id, "excerpt": excerpt}}
	}
	research := func(w *client, vendor string, price float64, region string, soc2 bool) {
		t.Helper()
		page := "src:" + vendor + ":pricing:2026-11"
		w.ok("assert", map[string]any{"subject": vendor, "predicate": "price_per_seat", "value": price,
			"sources": src(page, "per seat per month"), "confidence": 0.9})
		w.ok("assert", map[string]any{"subject": vendor, "predicate": "region", "value": region, "source": "src:" + vendor + ":legal"})
		w.ok("assert", map[string]any{"subject": vendor, "predicate": "soc2", "value": soc2,
			"sources": src("src:"+vendor+":trust", "SOC 2 Type II report"), "valid_until": "2027-06-30"})
	}
	research(w3, "Klarveld", 44, "EU", true)
	research(w7, "Brimsole", 39, "EU", true)
	research(w9, "Tessaro", 29, "US", true)  // cheapest, but not in the EU
	research(w9, "Quillon", 35, "EU", false) // in the EU, but no SOC 2

	const cheapest = `find ?v, ?p where ?v.soc2 = true, ?v.region = "EU", ?v.price_per_seat = ?p order by ?p limit 1`
	pick := func() (string, float64, []string) {
		t.Helper()
		r := orch.query(cheapest)[0]
		rs := rows(r)
		if len(rs) != 1 {
			t.Fatalf("find: %v", r)
		}
		vals := rs[0]["values"].(map[string]any)
		var claims []string
		for _, c := range rs[0]["claims"].([]any) {
			claims = append(claims, c.(string))
		}
		return vals["v"].(string), vals["p"].(float64), claims
	}
	if v, p, _ := pick(); v != "Brimsole" || p != 39 {
		t.Fatalf("before the revision: %s at %v, want Brimsole at 39", v, p)
	}
	_, m := orch.ok("derive", map[string]any{"artifact": "plan:pick-vendor",
		"from": []any{"Brimsole.price_per_seat", "Brimsole.region", "Brimsole.soc2", "Klarveld.price_per_seat"}})
	if rc := receipt(t, m); rc["ref"] != "plan:pick-vendor@1" {
		t.Fatalf("derive: %v", m)
	}

	// worker-7 reads Brimsole's new pricing page: the price goes up.
	_, m = w7.ok("assert", map[string]any{"subject": "Brimsole", "predicate": "price_per_seat", "value": 58,
		"sources": []any{map[string]any{"id": "src:Brimsole:pricing:2026-12", "excerpt": "EUR 58 per seat per month", "uri": "https://brimsole.example/pricing", "revision": "2026-12"}}})
	if rc := receipt(t, m); rc["ref"] != "Brimsole.price_per_seat@2" || rc["supersedes"] != "Brimsole.price_per_seat@1" {
		t.Fatalf("revision: %v", m)
	}

	// The orchestrator's context shows live claims only, with references to cite.
	txt, m := orch.ok("context", map[string]any{"subjects": []any{"Klarveld", "Brimsole", "Tessaro", "Quillon"}, "budget": 200})
	for _, want := range []string{
		"Klarveld: price_per_seat=44 @1 (0.90), region=\"EU\" @1, soc2=true @1",
		"Brimsole: price_per_seat=58 @2, region=\"EU\" @1, soc2=true @1",
		"Tessaro: price_per_seat=29 @1 (0.90), region=\"US\" @1, soc2=true @1",
		"Quillon: price_per_seat=35 @1 (0.90), region=\"EU\" @1, soc2=false @1",
	} {
		if !strings.Contains(txt, want+"\n") {
			t.Fatalf("context lacks %q:\n%s", want, txt)
		}
	}
	if strings.Contains(txt, "=39") || strings.Contains(txt, "left out") {
		t.Fatalf("context shows a superseded price or leaves something out:\n%s", txt)
	}
	ctxRefs := m["rows"].([]any)[0].(map[string]any)["refs"].([]any)
	if len(ctxRefs) != 12 {
		t.Fatalf("context refs: %v", ctxRefs)
	}

	// The answer changed: Klarveld is now the cheapest SOC2 vendor in the EU.
	v, p, claims := pick()
	if v != "Klarveld" || p != 44 {
		t.Fatalf("after the revision: %s at %v, want Klarveld at 44", v, p)
	}
	if strings.Join(claims, " ") != "Klarveld.soc2@1 Klarveld.region@1 Klarveld.price_per_seat@1" {
		t.Fatalf("find rests on %v", claims)
	}

	// The plan built on the old price needs review, and why shows both prices with sources.
	_, m = orch.ok("impact", map[string]any{"ref": "Brimsole.price_per_seat@1"})
	deps := rows(m)
	if len(deps) != 1 || deps[0]["artifact"].(map[string]any)["review"] != "needs review" {
		t.Fatalf("impact: %v", m)
	}
	_, m = orch.ok("why", map[string]any{"ref": "Brimsole.price_per_seat"})
	why := mustJSON(m)
	for _, want := range []string{`"asserted_by":"worker-7"`, `"excerpt":"EUR 58 per seat per month"`, `"relation":"supersedes"`, `"id":"src:Brimsole:pricing:2026-11"`} {
		if !strings.Contains(why, want) {
			t.Fatalf("why lacks %s: %s", want, why)
		}
	}
	_, m = orch.ok("derive", map[string]any{"artifact": "plan:pick-vendor",
		"from": []any{"Klarveld.price_per_seat", "Klarveld.region", "Klarveld.soc2", "Brimsole.price_per_seat"}})
	if rc := receipt(t, m); rc["ref"] != "plan:pick-vendor@2" || rc["supersedes"] != "plan:pick-vendor@1" {
		t.Fatalf("derive again: %v", m)
	}
	if st := orch.stats(); st.NeedsReview != 0 || st.Artifacts != 1 || st.Claims != 13 || st.ByState[mql.Superseded] != 1 {
		t.Fatalf("stats: %+v", st)
	}

	// Every worker sees the same memory: worker-3 cites worker-7's revision.
	if r := rows(w3.query("live Brimsole.price_per_seat")[0]); len(r) != 1 || r[0]["ref"] != "Brimsole.price_per_seat@2" || r[0]["asserted_by"] != "worker-7" {
		t.Fatalf("worker-3 sees %v", r)
	}
	// And worker-9 may not revoke worker-7's claim: it has no standing.
	w9.fail("revoke", map[string]any{"claim": "Brimsole.price_per_seat@2", "because": "I disagree"}, "worker-9")
}
