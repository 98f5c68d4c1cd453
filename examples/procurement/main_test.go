package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/examples/internal/exflag"
	"github.com/mql-dev/mql/examples/internal/extest"
	"github.com/mql-dev/mql/internal/pgtest"
)

// The expected shape, at every team size: transcript context grows by a whole
// transcript per worker and answers with the stale price after the revision; graph context
// grows by one line per worker, does not grow with the revision, and stays correct.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	var prev outcome
	for n := 2; n <= len(vendors); n++ {
		o, err := memTeam(ctx, n)
		if err != nil {
			t.Fatal(err)
		}
		stale, right := answer{"Klarveld", 44}, answer{"Brimsole", 66}
		if o.Truth != [2]answer{stale, right} {
			t.Fatalf("%d workers: truth %v", n, o.Truth)
		}
		// Without the revision both modes are right: the experiment is not rigged.
		if o.TranscriptAnswer[0] != stale || o.GraphAnswer[0] != stale {
			t.Errorf("%d workers, before the re-check: transcript %v, graph %v; want %v", n, o.TranscriptAnswer[0], o.GraphAnswer[0], stale)
		}
		if o.TranscriptAnswer[1] != stale {
			t.Errorf("%d workers: transcript mode answered %v after the re-check; the first-price reader should keep %v", n, o.TranscriptAnswer[1], stale)
		}
		if o.GraphAnswer[1] != right {
			t.Errorf("%d workers: graph mode answered %v after the re-check, want %v", n, o.GraphAnswer[1], right)
		}
		if late := o.TranscriptChars[1] - o.TranscriptChars[0]; late < 2500 {
			t.Errorf("%d workers: the late report added %d chars to the transcript context", n, late)
		}
		if d := o.GraphChars[1] - o.GraphChars[0]; d < 0 || d > 2 {
			t.Errorf("%d workers: the revision changed the graph context by %d chars", n, d)
		}
		if n > 2 {
			if d := o.TranscriptChars[1] - prev.TranscriptChars[1]; d < 2500 {
				t.Errorf("%d workers: transcript context grew by %d chars, want a whole transcript", n, d)
			}
			if d := o.GraphChars[1] - prev.GraphChars[1]; d <= 0 || d > 100 {
				t.Errorf("%d workers: graph context grew by %d chars, want one line", n, d)
			}
		}
		if o.GraphTokens[1]*10 > o.TranscriptTokens[1] {
			t.Errorf("%d workers: graph %d tokens vs transcript %d", n, o.GraphTokens[1], o.TranscriptTokens[1])
		}
		prev = o
	}
}

// The audit trail: new claim → its source revision → the claim it supersedes → that source,
// and the plan derived from the old price needs review.
func TestAuditTrail(t *testing.T) {
	o, err := memTeam(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Klarveld.price_per_seat@2 = 89", "from src:Klarveld:rev1", "revision rev1", "$89 per seat",
		"supersedes Klarveld.price_per_seat@1 = 44", "from src:Klarveld:rev0", "revision rev0", "$44 per seat",
		"plan:pick-vendor@1 needs review",
		"served to run answer-1 (orchestrator): decided plan:pick-vendor@1, succeeded",
		"Klarveld.price_per_seat@1: live when served, live at its decision, superseded now (stale later)",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(o.Audit[at:], w)
		if i < 0 {
			t.Fatalf("audit trail lacks %q after offset %d:\n%s", w, at, o.Audit)
		}
		at += i + len(w)
	}
}

func TestFirstPriceReader(t *testing.T) {
	k := vendors[0]
	text := page(k, 0) + page(vendors[1], 0)
	if got := readTranscripts(text); got != (answer{"Klarveld", 44}) {
		t.Errorf("one revision: %v", got)
	}
	k.Price = 89
	if got := readTranscripts(text + page(k, 1)); got != (answer{"Klarveld", 44}) {
		t.Errorf("first occurrence should win: %v", got)
	}
	if got := readTranscripts(page(k, 1) + text); got != (answer{"Brimsole", 66}) {
		t.Errorf("with the new page first: %v", got)
	}
	if got := readTranscripts(transcript("w", vendors[2], 0)); got.Vendor != "" {
		t.Errorf("Sorbeck is neither EU nor SOC2, got %v", got)
	}
}

func TestRunPrintsTable(t *testing.T) {
	store := filepath.Join(t.TempDir(), "team.db")
	out, errOut, code := runCmd(t, "-min", "2", "-max", "3", "-store", store)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"context chars", "transcript", "graph", "Brimsole $66", "Audit trail", "supersedes"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	// The store keeps the largest team's memory.
	info, err := mql.Inspect(context.Background(), store)
	if err != nil || !info.MQL || info.Transactions < 10 {
		t.Errorf("the store after the run: %+v, %v", info, err)
	}
}

// runCmd runs the program as main does: its output, its errors and its exit status.
func runCmd(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	if err != nil {
		fmt.Fprintf(&errOut, "procurement: %v\n", err)
	}
	return out.String(), errOut.String(), exflag.Code(err)
}

// The defaults are the sweep the figures in docs/EXAMPLES.md were measured with, and pass the
// checks.
func TestDefaultFlags(t *testing.T) {
	c, err := parse(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := (config{minN: 2, maxN: 12, store: "memory:", llmModel: "local", llmN: 6}); c != want {
		t.Errorf("defaults: %+v, want %+v", c, want)
	}
}

// Every flag has a range; a value outside it is refused before any team runs, with exit status 2
// and a message naming the flag, the value and the range.
func TestFlagRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-min", "1"}, "-min 1 is out of range: give 2 to 12 workers"},
		{[]string{"-max", "13"}, "-max 13 is out of range: give 2 to 12 workers"},
		{[]string{"-max", "9223372036854775807"}, "-max 9223372036854775807 is out of range"},
		{[]string{"-min", "5", "-max", "3"}, "-min 5 is above -max 3"},
		{[]string{"-min", "two"}, "invalid value \"two\" for flag -min"},
		{[]string{"-llm-workers", "0"}, "-llm-workers 0 is out of range: give 2 to 12 workers"},
		{[]string{"-llm-url", "http://127.0.0.1:1/v1", "-max", "4"}, "-llm-workers 6 is outside the sweep: give a team size from -min 2 to -max 4"},
		{[]string{"-llm-url", "ftp://example/v1"}, "-llm-url \"ftp://example/v1\" is not an http:// or https:// URL"},
		{[]string{"-llm-url", "127.0.0.1:8080"}, "is not an http:// or https:// URL"},
		{[]string{"-llm-model", ""}, "-llm-model \"\": give a model name"},
		{[]string{"-llm-key", "abc\r\nX-Evil: 1"}, "-llm-key: a bearer token has no spaces or control characters"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runCmd(t, tc.args...)
			if code != 2 || !strings.Contains(errOut, tc.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, tc.want)
			}
			if out != "" {
				t.Errorf("a refused command line ran:\n%s", out)
			}
		})
	}
}

func TestEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8080":                     "http://h:8080/v1/chat/completions",
		"http://h:8080/":                    "http://h:8080/v1/chat/completions",
		"http://h:8080/v1":                  "http://h:8080/v1/chat/completions",
		"http://h:8080/v1/chat/completions": "http://h:8080/v1/chat/completions",
		"https://api.example/openai/v1/":    "https://api.example/openai/v1/chat/completions",
	} {
		if got := endpoint(in); got != want {
			t.Errorf("endpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

// -llm-url sends both contexts to an OpenAI-compatible endpoint and reports the answers.
func TestLLM(t *testing.T) {
	var calls []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer k" {
			http.Error(w, "bad request "+r.URL.Path, http.StatusBadRequest)
			return
		}
		var req struct {
			Model       string  `json:"model"`
			Temperature float64 `json:"temperature"`
			Messages    []struct{ Role, Content string }
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 || req.Model != "m" {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		user := req.Messages[1].Content
		calls = append(calls, user)
		reply := "Klarveld, $44"
		if strings.Contains(user, "Current claims") {
			reply = "Brimsole, $66 per seat"
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]string{"role": "assistant", "content": reply}}}})
	}))
	defer srv.Close()
	s, errOut, code := runCmd(t, "-max", "6", "-llm-url", srv.URL+"/v1", "-llm-model", "m", "-llm-key", "k")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if len(calls) != 2 || !strings.Contains(calls[0], "worker-1 transcript") || !strings.Contains(calls[1], "Klarveld: price_per_seat=89 @2") {
		t.Fatalf("the endpoint got %d calls: %.200q", len(calls), calls)
	}
	if !strings.Contains(s, "transcript  ") || !regexpMatch(`graph\s+\d+\s+Brimsole\s+yes`, s) || !regexpMatch(`transcript\s+\d+\s+Klarveld\s+NO`, s) {
		t.Errorf("model table:\n%s", s[strings.Index(s, "Model"):])
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }

// -store writes only into a store the run creates or one that holds nothing but its genesis:
// anything else is refused before any team runs, with exit status 2, and left as it was.
func TestStoreRefusals(t *testing.T) {
	dir := t.TempDir()
	refusals := extest.BBoltRefusals(t, dir)
	if os.Getenv("MQL_TEST_POSTGRES") != "" {
		refusals = append(refusals, extest.PostgresRefusals(t)...)
	}
	for _, r := range refusals {
		t.Run(r.Name, func(t *testing.T) {
			where := dir
			if strings.HasPrefix(r.DSN, "postgres") {
				where = r.DSN
			}
			before := extest.Snapshot(t, where)
			out, errOut, code := runCmd(t, "-min", "2", "-max", "3", "-store", r.DSN)
			if code != 2 || !strings.Contains(errOut, r.Want) || !strings.Contains(errOut, "nothing was written") && !strings.Contains(r.Name, "missing") && !strings.Contains(r.Name, "no known kind") {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and %q", code, errOut, r.Want)
			}
			if out != "" {
				t.Errorf("a refused store ran:\n%s", out)
			}
			if after := extest.Snapshot(t, where); after != before {
				t.Errorf("the run changed what it refused:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// A store that holds nothing but its genesis is written into, whoever owns it; the owner is
// kept.
func TestStoreGenesisOnly(t *testing.T) {
	store := extest.Store(t, filepath.Join(t.TempDir(), "alice.db"), mql.Options{Owner: "alice"}, 0)
	out, errOut, code := runCmd(t, "-min", "2", "-max", "3", "-store", store)
	if code != 0 || !strings.Contains(out, "Brimsole $66") {
		t.Fatalf("exit %d: %s\n%s", code, errOut, out)
	}
	info, err := mql.Inspect(context.Background(), store)
	if err != nil || info.Owner != "alice" || info.Transactions < 10 {
		t.Errorf("after the run: %+v, %v", info, err)
	}
}

// -reuse adds a run on top of a store that holds other data, after rehearsing it on an
// in-memory copy; a run the store would refuse halfway is refused before anything is written.
func TestReuse(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "team.db")
	if _, errOut, code := runCmd(t, "-min", "2", "-max", "3", "-store", store); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, errOut)
	}
	first := extest.Transactions(t, store)
	if _, errOut, code := runCmd(t, "-min", "2", "-max", "3", "-store", store); code != 2 || !strings.Contains(errOut, "add -reuse") {
		t.Errorf("second run without -reuse: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCmd(t, "-min", "2", "-max", "3", "-store", store, "-reuse")
	if code != 0 || !strings.Contains(errOut, "rehearsed on an in-memory copy") || !strings.Contains(out, "3        graph       402 → 402      101      Klarveld $44            Brimsole $66  yes") {
		t.Fatalf("second run with -reuse: exit %d: %s\n%s", code, errOut, out)
	}
	if got := extest.Transactions(t, store); got <= first {
		t.Errorf("-reuse wrote nothing: %d transactions before, %d after", first, got)
	}

	// A store where the workers' prices would be refused: price_per_seat holds text.
	odd := filepath.Join(dir, "odd.db")
	db, err := mql.Open(context.Background(), odd, mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Assert(context.Background(), mql.AssertSpec{Subject: "Acme", Predicate: "price_per_seat", Value: mql.String("ask sales"), By: "owner"})
	db.Close()
	before := extest.Transactions(t, odd)
	_, errOut, code = runCmd(t, "-min", "2", "-max", "3", "-store", odd, "-reuse")
	if code != 2 || !strings.Contains(errOut, "the run would fail on what the store holds") {
		t.Errorf("-reuse of a store the run cannot write into: exit %d: %s", code, errOut)
	}
	if got := extest.Transactions(t, odd); got != before {
		t.Errorf("the refused run wrote: %d transactions before, %d after", before, got)
	}
}

// On PostgreSQL the largest team is written into an empty database; the sweep's other teams
// never touch it, so a run does not fail halfway, and a second run is refused unless -reuse.
func TestPostgresStore(t *testing.T) {
	dsn := pgtest.Database(t)
	if _, errOut, code := runCmd(t, "-min", "2", "-max", "4", "-store", dsn); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	first := extest.Transactions(t, dsn)
	before := extest.Snapshot(t, dsn)
	if _, errOut, code := runCmd(t, "-min", "2", "-max", "4", "-store", dsn); code != 2 || !strings.Contains(errOut, "already holds") {
		t.Errorf("second run: exit %d: %s", code, errOut)
	}
	if after := extest.Snapshot(t, dsn); after != before {
		t.Errorf("the refused run wrote:\n%s\n%s", before, after)
	}
	if _, errOut, code := runCmd(t, "-min", "2", "-max", "4", "-store", dsn, "-reuse"); code != 0 {
		t.Fatalf("-reuse: exit %d: %s", code, errOut)
	}
	if got := extest.Transactions(t, dsn); got <= first {
		t.Errorf("-reuse wrote nothing: %d transactions before, %d after", first, got)
	}
}
