package mcpserver_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mql-dev/mql/mcpserver"
)

// wordEmbedder embeds a text as the counts of three words in it, and records what it was asked.
type wordEmbedder struct {
	mu      sync.Mutex
	asked   []string
	failing bool
}

func (e *wordEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failing {
		return nil, errors.New("the model is loading")
	}
	var out [][]float32
	for _, t := range texts {
		e.asked = append(e.asked, t)
		v := []float32{0.01, 0, 0}
		for i, w := range []string{"pricing", "ship", "drones"} {
			v[i] += float32(strings.Count(t, w))
		}
		out = append(out, v)
	}
	return out, nil
}

func (e *wordEmbedder) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.asked)
}

// With an embedder (Options.Embedder), the assert tool embeds a claim sent without a vector,
// and the search tool the text of a search that may rank by vector and gives none, as the
// language does with one; the results echo the calls as made, without the vectors. When the
// embedder fails, the write fails and writes nothing, the search says how to search without it.
func TestToolsEmbed(t *testing.T) {
	ctx := context.Background()
	db := openStore(t, "memory:", newClock())
	team(t, db)
	emb := &wordEmbedder{}
	w3 := connectWith(t, db, "worker-3", mcpserver.Options{Embedder: emb})

	_, m := w3.ok("assert", map[string]any{"subject": "Klarveld", "predicate": "note", "value": "EU pricing", "sources": []any{map[string]any{"id": "src:k", "excerpt": "billed yearly"}}})
	if m["statement"] != `assert Klarveld.note = "EU pricing" by worker-3 from "src:k" excerpt "billed yearly"` {
		t.Errorf("the embedded claim's statement: %v", m["statement"])
	}
	w3.ok("assert", map[string]any{"subject": "Ostwind", "predicate": "note", "value": "ship drones", "vector": []any{0.01, 0, 1}})
	if got, want := emb.seen(), []string{"Klarveld note\nEU pricing\nbilled yearly"}; !slices.Equal(got, want) {
		t.Errorf("the embedder was asked %q, want %q (the claim with a vector of its own is not embedded)", got, want)
	}

	signals := func(m map[string]any) []string {
		var out []string
		for _, r := range rows(m) {
			var sig []string
			for _, s := range r["signals"].([]any) {
				sig = append(sig, s.(string))
			}
			out = append(out, r["ref"].(string)+" "+strings.Join(sig, "+"))
		}
		return out
	}
	// "drones" is Ostwind's by text and by vector, and a little Klarveld's by vector.
	_, m = w3.ok("search", map[string]any{"text": "drones", "run": "r-1"})
	if got := signals(m); !slices.Equal(got, []string{"Ostwind.note@1 text+vector", "Klarveld.note@1 vector"}) {
		t.Errorf("search with the embedder: %q", got)
	}
	if got := emb.seen(); m["statement"] != `search "drones" for run r-1` || !slices.Equal(got[1:], []string{"drones"}) {
		t.Errorf("the embedded search: %v; the embedder was asked %q", m["statement"], emb.seen())
	}
	if runs := mustJSON(w3.query("run r-1")); !strings.Contains(runs, "Klarveld.note@1") || !strings.Contains(runs, "Ostwind.note@1") {
		t.Errorf("the run does not name what the search served: %s", runs)
	}
	asked := len(emb.seen())
	w3.ok("search", map[string]any{"text": "drones", "signals": []any{"text"}})
	w3.ok("search", map[string]any{"text": "drones", "vector": []any{0, 0, 1}})
	if len(emb.seen()) != asked {
		t.Errorf("a search by text alone, or with its own vector, asked the embedder: %q", emb.seen()[asked:])
	}

	emb.failing = true
	head, _ := db.Head(ctx)
	w3.fail("assert", map[string]any{"subject": "Zed", "predicate": "note", "value": "ahoy"}, "embedding Zed.note: the model is loading; nothing was written")
	w3.fail("search", map[string]any{"text": "pricing"}, "embedding the search text: the model is loading; search with `signals text` to rank by text alone")
	if h, _ := db.Head(ctx); h != head {
		t.Errorf("the failed write moved the head from %d to %d", head, h)
	}
	w3.ok("assert", map[string]any{"subject": "Zed", "predicate": "note", "value": "ahoy", "vector": []any{1, 0, 0}})
	if _, m := w3.ok("search", map[string]any{"text": "pricing", "signals": []any{"text"}}); len(rows(m)) != 1 {
		t.Errorf("a search by text while the embedder fails: %v", m)
	}
}
