// Package embedder asks an OpenAI-compatible embeddings endpoint for vectors: what `mql serve
// --embedder URL` gives the claims written through the server without one, and the search
// texts, so that searches rank by similarity too (docs/SERVE.md).
//
// The request is OpenAI's: POST {"model": MODEL, "input": [TEXT, …]} to the endpoint, with
// the key, if any, as a bearer token; the answer's data[i].embedding is the vector of input i
// (data[i].index, when given, says which input it is). OpenAI's API speaks it, and so do the
// servers that mimic it (Ollama, vLLM, llama.cpp's server, …).
package embedder

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// ErrEmbedder is wrapped by every error of Embed: the endpoint could not be reached, refused,
// or answered with something else than a vector for each text.
var ErrEmbedder = errors.New("the embedder failed")

// Timeout bounds one request to the endpoint, unless the caller's context ends sooner: an
// embedding is asked for inside a write, which must not wait on a stalled endpoint forever.
const Timeout = 30 * time.Second

// maxAnswer bounds what is read of an answer: a few thousand float32s per text, in JSON.
const maxAnswer = 64 << 20

// Client asks one endpoint for the embeddings of one model. It is safe for concurrent use.
type Client struct {
	endpoint string
	shown    string // endpoint without a password, for messages and logs
	model    string
	key      string
	http     *http.Client
}

// New returns a client of the endpoint at rawURL: a URL ending in /embeddings is the endpoint
// as given, any other is a base URL that /v1/embeddings is added to ("http://127.0.0.1:11434"
// for Ollama). key, if not empty, is sent as a bearer token.
func New(rawURL, model, key string) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("embedder URL %q: want http://HOST[:PORT][/PATH] or https://…", rawURL)
	}
	if model == "" {
		return nil, errors.New("embedder: no model named; give the model the endpoint embeds with (--embedder-model)")
	}
	if !strings.HasSuffix(u.Path, "/embeddings") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/embeddings"
	}
	return &Client{endpoint: u.String(), shown: u.Redacted(), model: model, key: key, http: &http.Client{Timeout: Timeout}}, nil
}

// Endpoint is the URL the client posts to, without its password if it has one.
func (c *Client) Endpoint() string { return c.shown }

// Model is the model the client names.
func (c *Client) Model() string { return c.model }

type request struct {
	Model string   `json:"model"`
	Input []string `json:"input"`
}

type answer struct {
	Data []struct {
		Embedding []float32 `json:"embedding"`
		Index     *int      `json:"index"`
	} `json:"data"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Embed returns the vectors of texts, in their order, from one request.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: c.model, Input: texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEmbedder, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading the answer of %s: %v", ErrEmbedder, c.shown, err)
	}
	if len(raw) > maxAnswer {
		return nil, fmt.Errorf("%w: the answer of %s is over %d MiB", ErrEmbedder, c.shown, maxAnswer>>20)
	}
	var a answer
	jsonErr := json.Unmarshal(raw, &a)
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(raw))
		if jsonErr == nil && a.Error != nil && a.Error.Message != "" {
			msg = a.Error.Message
		}
		return nil, fmt.Errorf("%w: %s answered %s: %.200s", ErrEmbedder, c.shown, resp.Status, msg)
	}
	if jsonErr != nil {
		return nil, fmt.Errorf("%w: the answer of %s is not an embeddings response: %v", ErrEmbedder, c.shown, jsonErr)
	}
	if len(a.Data) != len(texts) {
		return nil, fmt.Errorf("%w: %s gave %d embeddings for %d texts", ErrEmbedder, c.shown, len(a.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for i, d := range a.Data {
		at := i
		if d.Index != nil {
			at = *d.Index
		}
		if at < 0 || at >= len(out) || out[at] != nil {
			return nil, fmt.Errorf("%w: %s gave embedding index %d twice or out of range", ErrEmbedder, c.shown, at)
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("%w: %s gave an empty embedding for text %d", ErrEmbedder, c.shown, at)
		}
		out[at] = d.Embedding
	}
	return out, nil
}
