package embedder_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/mql-dev/mql/embedder"
)

// fake is an embeddings endpoint on loopback: it records the requests and answers with
// answer(input).
func fake(t *testing.T, answer func(w http.ResponseWriter, input []string)) (*httptest.Server, *[]*http.Request, *[][]string) {
	t.Helper()
	var reqs []*http.Request
	var inputs [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model != "m-1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		reqs, inputs = append(reqs, r), append(inputs, body.Input)
		answer(w, body.Input)
	}))
	t.Cleanup(srv.Close)
	return srv, &reqs, &inputs
}

func TestEmbed(t *testing.T) {
	srv, reqs, inputs := fake(t, func(w http.ResponseWriter, input []string) {
		// In reverse order, with their indexes: the client puts them back.
		type d struct {
			Embedding []float32 `json:"embedding"`
			Index     int       `json:"index"`
		}
		var data []d
		for i := len(input) - 1; i >= 0; i-- {
			data = append(data, d{Embedding: []float32{float32(len(input[i])), 1}, Index: i})
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data})
	})
	c, err := embedder.New(srv.URL, "m-1", "k-secret")
	if err != nil {
		t.Fatal(err)
	}
	if c.Endpoint() != srv.URL+"/v1/embeddings" {
		t.Errorf("endpoint %s", c.Endpoint())
	}
	vs, err := c.Embed(context.Background(), []string{"a", "bbb"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 || !slices.Equal(vs[0], []float32{1, 1}) || !slices.Equal(vs[1], []float32{3, 1}) {
		t.Errorf("vectors %v", vs)
	}
	r := (*reqs)[0]
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer k-secret" || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %s %s, headers %v", r.Method, r.URL.Path, r.Header)
	}
	if !slices.Equal((*inputs)[0], []string{"a", "bbb"}) {
		t.Errorf("input %v", (*inputs)[0])
	}
	// A URL ending in /embeddings is the endpoint as given; no key, no Authorization.
	c2, _ := embedder.New(srv.URL+"/custom/embeddings", "m-1", "")
	if _, err := c2.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if r := (*reqs)[1]; r.URL.Path != "/custom/embeddings" || r.Header.Get("Authorization") != "" {
		t.Errorf("second request %s, Authorization %q", r.URL.Path, r.Header.Get("Authorization"))
	}
}

func TestEmbedFailures(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(w http.ResponseWriter, input []string)
		want   string
	}{
		{"an error status", func(w http.ResponseWriter, _ []string) {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"message":"Incorrect API key provided"}}`))
		}, "401 Unauthorized: Incorrect API key provided"},
		{"too few embeddings", func(w http.ResponseWriter, _ []string) {
			w.Write([]byte(`{"data":[{"embedding":[1,2]}]}`))
		}, "gave 1 embeddings for 2 texts"},
		{"not JSON", func(w http.ResponseWriter, _ []string) { w.Write([]byte(`<html>`)) }, "not an embeddings response"},
		{"an empty embedding", func(w http.ResponseWriter, _ []string) {
			w.Write([]byte(`{"data":[{"embedding":[1]},{"embedding":[]}]}`))
		}, "empty embedding for text 1"},
		{"an index twice", func(w http.ResponseWriter, _ []string) {
			w.Write([]byte(`{"data":[{"embedding":[1],"index":0},{"embedding":[2],"index":0}]}`))
		}, "index 0 twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, _, _ := fake(t, c.answer)
			cl, _ := embedder.New(srv.URL, "m-1", "")
			_, err := cl.Embed(context.Background(), []string{"a", "b"})
			if !errors.Is(err, embedder.ErrEmbedder) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%v, want ErrEmbedder saying %q", err, c.want)
			}
		})
	}
	// Nothing listens: ErrEmbedder too.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	cl, _ := embedder.New(url, "m-1", "")
	if _, err := cl.Embed(context.Background(), []string{"a"}); !errors.Is(err, embedder.ErrEmbedder) {
		t.Errorf("a closed endpoint: %v", err)
	}
	for _, bad := range []string{"ftp://x", "localhost:1234", ""} {
		if _, err := embedder.New(bad, "m-1", ""); err == nil {
			t.Errorf("URL %q accepted", bad)
		}
	}
	if _, err := embedder.New("http://127.0.0.1:1", "", ""); err == nil {
		t.Error("no model accepted")
	}
}
