package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/internal/syncbuf"
	"github.com/mql-dev/mql/mcpserver"
)

// serveInput runs Serve on input, a client's whole session written at once and closed (as
// `printf … | mql mcp` does), and returns every reply the server wrote once Serve returns.
func serveInput(t *testing.T, db *mql.DB, as, input string) []wireReply {
	t.Helper()
	var out syncbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- mcpserver.Serve(context.Background(), db, as, strings.NewReader(input), &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("Serve did not return in 60 s after its input ended; it wrote:\n%s", out.String())
	}
	var replies []wireReply
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var r struct {
			wireReply
			Method string `json:"method"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("the server wrote a line that is not JSON: %q", l)
		}
		if r.Method == "" { // not a notification of the server's
			replies = append(replies, r.wireReply)
		}
	}
	return replies
}

// assertLine is a tools/call of assert with the given id, on a subject of its own.
func assertLine(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"assert","arguments":{"subject":"Vendor%d","predicate":"price_per_seat","value":%d,"source":"src:eof"}}}`, id, id, id)
}

// answered returns the replies by id (a JSON id as written), failing on a duplicate, and the
// error codes of the replies whose id is null, in order.
func answered(t *testing.T, replies []wireReply) (map[string]wireReply, []int) {
	t.Helper()
	byID := map[string]wireReply{}
	var anon []int
	for _, r := range replies {
		if r.ID == nil || string(r.ID) == "null" {
			if r.Error == nil {
				t.Fatalf("a reply with a null id that is not an error: %+v", r)
			}
			anon = append(anon, r.Error.Code)
			continue
		}
		if _, dup := byID[string(r.ID)]; dup {
			t.Fatalf("two replies with id %s", r.ID)
		}
		byID[string(r.ID)] = r
	}
	return byID, anon
}

// liveRefs is every live claim reference in db, sorted.
func liveRefs(t *testing.T, db *mql.DB) []string {
	t.Helper()
	cs, err := db.Live(context.Background(), "*")
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, c := range cs {
		refs = append(refs, c.Ref)
	}
	sort.Strings(refs)
	return refs
}

// A client that writes a burst of requests and closes its end at once gets an answer to every
// one of them before Serve returns: the end of the input does not cut off requests still
// being handled. Every answered write is in the store, and no write is in it unanswered.
func TestEOFAnswersEveryRequest(t *testing.T) {
	const n = 40
	db := openStore(t, "memory:", nil)
	team(t, db)
	lines := []string{rawInitialize, rawInitDone}
	var want []string
	for id := 2; id < 2+n; id++ {
		lines = append(lines, assertLine(id))
		want = append(want, fmt.Sprintf("Vendor%d.price_per_seat@1", id))
	}
	sort.Strings(want)
	byID, anon := answered(t, serveInput(t, db, "worker-3", strings.Join(lines, "\n")+"\n"))
	if len(anon) != 0 {
		t.Errorf("errors with id null: %v", anon)
	}
	var missing []int
	for id := 1; id < 2+n; id++ {
		r, ok := byID[fmt.Sprint(id)]
		switch {
		case !ok:
			missing = append(missing, id)
		case r.Error != nil || len(r.Result) == 0 || strings.Contains(string(r.Result), `"isError":true`):
			t.Errorf("request %d: %+v %s", id, r.Error, r.Result)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d requests got no answer before the server stopped: ids %v", len(missing), n+1, missing)
	}
	if got := liveRefs(t, db); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the store holds %d of the %d answered writes: %v", len(got), n, got)
	}
}

// How a session may end: whatever follows the last request, every request is answered, the
// last line gets what any line gets, and Serve returns.
func TestEOFEndings(t *testing.T) {
	head := []string{rawInitialize, rawInitDone, assertLine(2)}
	for _, tc := range []struct {
		name   string
		tail   string   // what the client writes after head, verbatim (no newline added)
		ids    []string // the ids answered, besides 1 and 2
		anon   []int    // the error codes answered with id null
		claims int
	}{
		{name: "a request", tail: assertLine(3) + "\n", ids: []string{"3"}, claims: 2},
		{name: "a request without its newline", tail: assertLine(3), ids: []string{"3"}, claims: 2},
		{name: "a notification", tail: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}` + "\n", claims: 1},
		{name: "a response to nothing", tail: `{"jsonrpc":"2.0","id":77,"result":{}}` + "\n", claims: 1},
		{name: "a line that is not JSON", tail: "not json\n", anon: []int{-32700}, claims: 1},
		{name: "a request cut off mid-line", tail: assertLine(3)[:60], anon: []int{-32700}, claims: 1},
		{name: "an invalid request", tail: `{"jsonrpc":"1.0","id":3,"method":"ping"}` + "\n", ids: []string{"3"}, claims: 1},
		{name: "blank lines", tail: "\n  \n", claims: 1},
		{name: "a batch", tail: "[" + assertLine(3) + "]\n", anon: []int{-32600}, claims: 1},
		// A listen call (protocol 2026-07-28) is answered when its stream ends; the client's
		// leaving ends it, so the server does not wait for its answer.
		{name: "a subscriptions/listen call", tail: `{"jsonrpc":"2.0","id":3,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["mql://review"]}}}` + "\n", claims: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openStore(t, "memory:", nil)
			team(t, db)
			byID, anon := answered(t, serveInput(t, db, "worker-3", strings.Join(head, "\n")+"\n"+tc.tail))
			var ids []string
			for id := range byID {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			if want := append([]string{"1", "2"}, tc.ids...); fmt.Sprint(ids) != fmt.Sprint(want) {
				t.Errorf("answered ids %v, want %v", ids, want)
			}
			if fmt.Sprint(anon) != fmt.Sprint(tc.anon) {
				t.Errorf("errors with id null: %v, want %v", anon, tc.anon)
			}
			if got := liveRefs(t, db); len(got) != tc.claims {
				t.Errorf("the store holds %v, want %d claims", got, tc.claims)
			}
		})
	}
}

// A client reusing the id of a request still in flight gets no answer to the second (the
// SDK's rule), but the server still ends when the input does, having answered the first.
func TestEOFReusedID(t *testing.T) {
	db := openStore(t, "memory:", nil)
	team(t, db)
	in := strings.Join([]string{rawInitialize, rawInitDone, assertLine(2), assertLine(2), assertLine(2)}, "\n") + "\n"
	for _, r := range serveInput(t, db, "worker-3", in) {
		if string(r.ID) == "2" && (r.Error != nil || strings.Contains(string(r.Result), `"isError":true`)) {
			t.Errorf("request 2: %+v %s", r.Error, r.Result)
		}
	}
	if got := liveRefs(t, db); len(got) != 1 {
		t.Errorf("the store holds %v", got)
	}
}

// brokenPipe is an output the client stopped reading after its first line.
type brokenPipe struct {
	mu     sync.Mutex
	writes int
}

func (b *brokenPipe) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writes++
	if b.writes > 1 {
		return 0, io.ErrClosedPipe
	}
	return len(p), nil
}

// A client that stops reading does not keep the server waiting for answers it cannot write.
func TestEOFOutputBroken(t *testing.T) {
	db := openStore(t, "memory:", nil)
	team(t, db)
	lines := []string{rawInitialize, rawInitDone}
	for id := 2; id < 12; id++ {
		lines = append(lines, assertLine(id))
	}
	done := make(chan error, 1)
	go func() {
		done <- mcpserver.Serve(context.Background(), db, "worker-3", strings.NewReader(strings.Join(lines, "\n")+"\n"), &brokenPipe{})
	}()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Serve did not return in 60 s once its output broke and its input ended")
	}
}
