package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mql-dev/mql/embedder"
	"github.com/mql-dev/mql/server"
)

// wordsEmbedder is an embeddings endpoint on loopback whose vectors count a few words, and
// which fails while failing is set.
type wordsEmbedder struct {
	mu      sync.Mutex
	texts   []string
	calls   atomic.Int32
	failing atomic.Bool
}

var embedWords = []string{"pricing", "ship", "sensors", "drones"}

func (e *wordsEmbedder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.calls.Add(1)
	if e.failing.Load() {
		http.Error(w, `{"error":{"message":"the model is loading"}}`, http.StatusServiceUnavailable)
		return
	}
	var body struct {
		Input []string `json:"input"`
	}
	json.NewDecoder(r.Body).Decode(&body)
	type d struct {
		Embedding []float32 `json:"embedding"`
	}
	var data []d
	for _, text := range body.Input {
		e.mu.Lock()
		e.texts = append(e.texts, text)
		e.mu.Unlock()
		v := []float32{0.01, 0, 0, 0, 0}
		for i, w := range embedWords {
			v[i+1] = float32(strings.Count(strings.ToLower(text), w))
		}
		data = append(data, d{v})
	}
	json.NewEncoder(w).Encode(map[string]any{"data": data})
}

func (e *wordsEmbedder) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.texts)
}

// With an embedder, the claims written through /v1/query and MCP without a vector get one
// before they are written, and a search's text is embedded for the vector signal; when the
// embedder fails, the write fails and writes nothing, and a search by text alone still works.
func TestEmbedder(t *testing.T) {
	fe := &wordsEmbedder{}
	ep := httptest.NewServer(fe)
	t.Cleanup(ep.Close)
	emb, err := embedder.New(ep.URL, "words-1", "")
	if err != nil {
		t.Fatal(err)
	}
	tm := newTeam(t, server.Options{Embedder: emb})
	w3 := tm.tokens["worker-3"]
	if code, qr := tm.query(w3, `assert Klarveld.note = "EU pricing for teams" by worker-3 from "src:k" excerpt "billed yearly"
assert Ostwind.note = "ship sensors" by worker-3
assert Brimsole.note = "pricing of drones" by worker-3 vector "0.01 0 0 0 1"`); code != http.StatusOK || qr.Error != nil {
		t.Fatalf("writes: %d %+v", code, qr)
	}
	if got, want := fe.seen(), []string{"Klarveld note\nEU pricing for teams\nbilled yearly", "Ostwind note\nship sensors"}; !slices.Equal(got, want) {
		t.Errorf("the embedder was asked for %q, want %q (the claim with a vector of its own is not embedded)", got, want)
	}
	var exp bytes.Buffer
	if err := tm.db.Export(context.Background(), &exp); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`<urn:mql:claim:Klarveld.note@1> <urn:mql:vector> "0.01 1 0 0 0"^^<urn:mql:Vector>`,
		`<urn:mql:claim:Ostwind.note@1> <urn:mql:vector> "0.01 0 1 1 0"^^<urn:mql:Vector>`,
		`<urn:mql:claim:Brimsole.note@1> <urn:mql:vector> "0.01 0 0 0 1"^^<urn:mql:Vector>`,
	} {
		if !strings.Contains(exp.String(), line) {
			t.Errorf("the export lacks %s", line)
		}
	}
	search := func(script string) []string {
		t.Helper()
		code, qr := tm.query(w3, script)
		if code != http.StatusOK || qr.Error != nil || len(qr.Results) != 1 {
			t.Fatalf("%s: %d %+v", script, code, qr)
		}
		var out []string
		for _, r := range rows(t, qr.Results[0]) {
			var sig []string
			for _, s := range r["signals"].([]any) {
				sig = append(sig, s.(string))
			}
			out = append(out, r["ref"].(string)+" "+strings.Join(sig, "+"))
		}
		return out
	}
	// "drones" is in Brimsole's text, and its vector is the drones direction: both signals.
	// "pricing" ranks Klarveld by vector too (Brimsole's own vector says nothing of pricing).
	if got, want := search(`search "drones pricing"`), []string{"Brimsole.note@1 text+vector", "Klarveld.note@1 text+vector", "Ostwind.note@1 vector"}; !slices.Equal(got, want) {
		t.Errorf("search drones pricing: %q, want %q", got, want)
	}
	if got := search(`search "drones pricing" signals text`); !slices.Equal(got, []string{"Brimsole.note@1 text", "Klarveld.note@1 text"}) && !slices.Equal(got, []string{"Klarveld.note@1 text", "Brimsole.note@1 text"}) {
		t.Errorf("search by text only: %q", got)
	}
	asked := len(fe.seen())
	search(`search "ship" signals text`)
	if len(fe.seen()) != asked {
		t.Errorf("a search by text alone asked the embedder")
	}

	// MCP: the assert tool's claims are embedded too.
	ctx := context.Background()
	bt := &bearerTransport{token: w3}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: tm.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bt}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "assert", Arguments: map[string]any{"subject": "Player7", "predicate": "note", "value": "flies drones"}})
	if err != nil || res.IsError {
		t.Fatalf("assert over MCP: %v %+v", err, res)
	}
	if got := fe.seen(); got[len(got)-1] != "Player7 note\nflies drones" {
		t.Errorf("the MCP claim was not embedded: %q", got)
	}

	// A transaction's claims are embedded in one request, before it takes the store's writer;
	// its results echo the statements as written.
	calls := fe.calls.Load()
	code, qr := tm.query(w3, "begin\nassert A.note = \"ship one\" by worker-3\nassert B.note = \"ship two\" by worker-3\ncommit")
	if code != http.StatusOK || qr.Error != nil {
		t.Fatalf("a transaction: %d %+v", code, qr)
	}
	if got := fe.seen(); fe.calls.Load() != calls+1 || !slices.Equal(got[len(got)-2:], []string{"A note\nship one", "B note\nship two"}) {
		t.Errorf("a transaction's claims: %d requests, texts %q", fe.calls.Load()-calls, got[len(got)-2:])
	}
	if b, _ := json.Marshal(qr.Results); strings.Contains(string(b), "vector") {
		t.Errorf("the transaction's results echo the embedded vectors: %s", b)
	}

	// The embedder fails: the write fails, names the claim, and writes nothing.
	fe.failing.Store(true)
	head, _ := tm.db.Head(ctx)
	code, qr = tm.query(w3, `assert Zed.note = "ship ahoy" by worker-3`)
	if code == http.StatusOK || qr.Error == nil || !strings.Contains(qr.Error.Message, "embedding Zed.note") || !strings.Contains(qr.Error.Message, "the model is loading") || !strings.Contains(qr.Error.Message, "nothing was written") {
		t.Errorf("a write while the embedder fails: %d %+v", code, qr.Error)
	}
	if h, _ := tm.db.Head(ctx); h != head {
		t.Errorf("the failed write moved the head from %d to %d", head, h)
	}
	code, qr = tm.query(w3, "begin\nassert Zed.note = \"ship ahoy\" by worker-3\ncommit")
	if code == http.StatusOK || qr.Error == nil || !strings.Contains(qr.Error.Message, "the model is loading") || !strings.Contains(qr.Error.Message, "nothing was written") {
		t.Errorf("a transaction while the embedder fails: %d %+v", code, qr.Error)
	}
	if h, _ := tm.db.Head(ctx); h != head {
		t.Errorf("the failed transaction moved the head from %d to %d", head, h)
	}
	code, qr = tm.query(w3, `search "ship"`)
	if code == http.StatusOK || qr.Error == nil || !strings.Contains(qr.Error.Message, "signals text") {
		t.Errorf("a search while the embedder fails: %d %+v", code, qr.Error)
	}
	if got := search(`search "sensors" signals text`); !slices.Equal(got, []string{"Ostwind.note@1 text"}) {
		t.Errorf("a search by text while the embedder fails: %q", got)
	}
	if got := search(`search "" vector "0.01 0 0 0 1" limit 1`); !slices.Equal(got, []string{"Brimsole.note@1 vector"}) {
		t.Errorf("a search by a given vector while the embedder fails: %q", got)
	}
}

// Without an embedder, searches rank by text and claims carry only the vectors given.
func TestNoEmbedder(t *testing.T) {
	tm := newTeam(t, server.Options{})
	w3 := tm.tokens["worker-3"]
	code, qr := tm.query(w3, `assert Ostwind.note = "ship sensors" by worker-3
search "ship"`)
	if code != http.StatusOK || qr.Error != nil || len(qr.Results) != 2 {
		t.Fatalf("%d %+v", code, qr)
	}
	rs := rows(t, qr.Results[1])
	if len(rs) != 1 || !slices.Equal(rs[0]["signals"].([]any), []any{"text"}) {
		t.Errorf("search without an embedder: %v", rs)
	}
	var exp bytes.Buffer
	if err := tm.db.Export(context.Background(), &exp); err != nil || strings.Contains(exp.String(), "<urn:mql:vector>") {
		t.Errorf("a claim written without a vector nor an embedder has one (%v)", err)
	}
}
