package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The expected shape, at every team size: transcript context grows by a whole
// transcript per worker and answers with the stale price after the revision; graph context
// grows by one line per worker, does not grow with the revision, and stays correct.
func TestSweep(t *testing.T) {
	ctx := context.Background()
	var prev outcome
	for n := 2; n <= len(vendors); n++ {
		o, err := team(ctx, "memory:", n)
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
	o, err := team(context.Background(), "memory:", 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Klarveld.price_per_seat@2 = 89", "from src:Klarveld:rev1", "revision rev1", "$89 per seat",
		"supersedes Klarveld.price_per_seat@1 = 44", "from src:Klarveld:rev0", "revision rev0", "$44 per seat",
		"plan:pick-vendor@1 needs review",
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
	var out bytes.Buffer
	store := filepath.Join(t.TempDir(), "team.db")
	if err := run(context.Background(), []string{"-min", "2", "-max", "3", "-store", store}, &out); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"context chars", "transcript", "graph", "Brimsole $66", "Audit trail", "supersedes"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("output lacks %q:\n%s", w, out.String())
		}
	}
	if err := run(context.Background(), []string{"-min", "1"}, &out); err == nil {
		t.Error("-min 1 accepted")
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
	var out bytes.Buffer
	err := run(context.Background(), []string{"-max", "6", "-llm-url", srv.URL + "/v1", "-llm-model", "m", "-llm-key", "k"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || !strings.Contains(calls[0], "worker-1 transcript") || !strings.Contains(calls[1], "Klarveld: price_per_seat=89 @2") {
		t.Fatalf("the endpoint got %d calls: %.200q", len(calls), calls)
	}
	s := out.String()
	if !strings.Contains(s, "transcript  ") || !regexpMatch(`graph\s+\d+\s+Brimsole\s+yes`, s) || !regexpMatch(`transcript\s+\d+\s+Klarveld\s+NO`, s) {
		t.Errorf("model table:\n%s", s[strings.Index(s, "Model"):])
	}
}

func regexpMatch(re, s string) bool { return regexp.MustCompile(re).MatchString(s) }
