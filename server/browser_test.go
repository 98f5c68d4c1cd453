package server_test

// The web page in a real browser: Debian's Chromium, headless, driven with chromedp. These
// tests skip when Chromium is missing, except in CI (CI set), where they fail instead: .ci/run
// installs it.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mql-dev/mql/query"
	"github.com/mql-dev/mql/server"
)

func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed; CI must install it (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the browser tests skip")
	return ""
}

// browser is one headless Chromium with a fresh profile, recording what the page received:
// every response body, every server-sent event, every request URL, console errors, dialogs.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	wg      sync.WaitGroup
	urls    []string
	bodies  []string
	events  []string
	dialogs []string
	errors  []string
}

// Injected before any page script (DevTools scripts are not bound by the page's CSP): it
// records CSP violations and any call of alert, confirm or prompt.
const probe = `window.__csp = []; window.__dialogs = 0;
document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
window.alert = window.confirm = window.prompt = () => { window.__dialogs++; };`

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("force-device-scale-factor", "1"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1440, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	b := &browser{t: t, ctx: ctx}
	t.Cleanup(func() {
		b.wg.Wait()
		cancelT()
		cancelC()
		cancelA()
	})
	err := chromedp.Listen(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			b.mu.Lock()
			b.urls = append(b.urls, ev.Request.URL)
			b.mu.Unlock()
		case *network.EventLoadingFinished:
			id := ev.RequestID
			b.wg.Add(1)
			go func() { // (a listener must not call the browser itself)
				defer b.wg.Done()
				res, err := chromedp.Call(ctx, network.GetResponseBody, network.GetResponseBodyParams{RequestID: id})
				if err == nil {
					b.mu.Lock()
					b.bodies = append(b.bodies, string(res.Body))
					b.mu.Unlock()
				}
			}()
		case *network.EventEventSourceMessageReceived:
			b.mu.Lock()
			b.events = append(b.events, ev.Data)
			b.mu.Unlock()
		case *page.EventJavascriptDialogOpening:
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
		case *runtime.EventExceptionThrown:
			b.mu.Lock()
			b.errors = append(b.errors, fmt.Sprintf("%s %s:%d", ev.ExceptionDetails.Text, ev.ExceptionDetails.URL, ev.ExceptionDetails.LineNumber))
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: probe}); err != nil {
		t.Fatal(err)
	}
	return b
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		var html string
		if h, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body ? document.body.outerHTML.slice(0, 3000) : ''`)); err == nil {
			html = h
		}
		b.mu.Lock()
		b.t.Fatalf("%v\nerrors: %v\npage: %s", err, b.errors, html)
		b.mu.Unlock()
	}
}

// eval evaluates js in the page and decodes its value into out (nil: ignore it).
func (b *browser) eval(js string, out any) {
	b.t.Helper()
	raw, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]byte](js))
	if err != nil {
		b.t.Fatalf("%s: %v", js, err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			b.t.Fatalf("%s: %v (%s)", js, err, raw)
		}
	}
}

// signIn opens the page and signs in with a token through the form.
func (b *browser) signIn(base, token string) {
	b.t.Helper()
	b.do(chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.CSS("#signin-form button")),
		chromedp.WaitVisible(chromedp.ID("bar")))
}

// show navigates the page to a route (#/why/REF …) and waits until it has rendered, and its
// graph, if any, is drawn.
func (b *browser) show(route string) {
	b.t.Helper()
	b.eval(fmt.Sprintf(`document.getElementById('view').replaceChildren(); location.hash = %q; true`, route), nil)
	b.do(chromedp.WaitReady(chromedp.CSS(`#content[data-ready="true"]`)))
	var graph bool
	b.eval(`!!document.getElementById('graph')`, &graph)
	if graph {
		b.do(chromedp.WaitReady(chromedp.CSS(`#graph[data-drawn]`)))
	}
}

type pageNode struct {
	Key    string `json:"key"`
	Kind   string `json:"kind"`
	State  string `json:"state"`
	Review string `json:"review"`
}

type pageEdge struct {
	From  string `json:"from"`
	To    string `json:"to"`
	Label string `json:"label"`
}

func (b *browser) graph() (map[string]pageNode, []pageEdge, int) {
	b.t.Helper()
	var nodes []pageNode
	var edges []pageEdge
	var drawn string
	b.eval(`[...document.querySelectorAll('ol.nodes button')].map(b => ({key: b.dataset.nodeKey, kind: b.dataset.kind, state: b.dataset.state, review: b.dataset.review}))`, &nodes)
	b.eval(`[...document.querySelectorAll('ul.edges li')].map(l => ({from: l.dataset.from, to: l.dataset.to, label: l.dataset.label}))`, &edges)
	b.eval(`document.getElementById('graph').dataset.drawn`, &drawn)
	m := map[string]pageNode{}
	for _, n := range nodes {
		m[n.Key] = n
	}
	var n int
	fmt.Sscan(drawn, &n)
	return m, edges, n
}

// clean fails the test if the page broke its Content-Security-Policy, threw, or opened a
// dialog.
func (b *browser) clean() {
	b.t.Helper()
	var csp []string
	var dialogs int
	b.eval(`window.__csp`, &csp)
	b.eval(`window.__dialogs`, &dialogs)
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(csp) > 0 {
		b.t.Errorf("Content-Security-Policy violations: %v", csp)
	}
	if dialogs > 0 || len(b.dialogs) > 0 {
		b.t.Errorf("the page opened dialogs: %d %v", dialogs, b.dialogs)
	}
	if len(b.errors) > 0 {
		b.t.Errorf("script errors: %v", b.errors)
	}
}

// screenshot saves a PNG of the graph view to $MQL_SCREENSHOTS (or the test's temporary
// directory) and checks that it is a picture.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	b.do(chromedp.Sleep(300 * time.Millisecond))
	png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatal(err)
	}
	if len(png) < 1000 || string(png[1:4]) != "PNG" {
		b.t.Fatalf("screenshot %s: %d bytes", name, len(png))
	}
	dir := os.Getenv("MQL_SCREENSHOTS")
	if dir == "" {
		dir = b.t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, name), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// procurement is the README's session on a team's server (worker-3, worker-7, orchestrator,
// each with a token), plus a claim seen by worker-3 alone.
const procurementScript = `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0" excerpt "EUR 44 per seat" uri "https://klarveld.example/pricing" revision "2026-11"
derive plan:pick-vendor from Klarveld.price_per_seat by orchestrator
assert Klarveld.price_per_seat = 89 by worker-7 from "src:Klarveld:rev1"
assert Klarveld.discount_note = "secret-discount-7431" by worker-3 seen by worker-3`

func procurement(t *testing.T, opts server.Options) *team {
	t.Helper()
	tm := newTeam(t, opts)
	run(t, tm, procurementScript)
	return tm
}

// run runs a script as the owner.
func run(t *testing.T, tm *team, script string) {
	t.Helper()
	if err := query.NewSession(tm.db, tm.db.Owner()).Exec(context.Background(), "setup", script, nil); err != nil {
		t.Fatal(err)
	}
}

// On the procurement memory, the why graph of Klarveld.price_per_seat has both versions, both
// sources and the supersedes edge; the impact graph of @1 shows plan:pick-vendor needing
// review, with the reason; as of the transaction before @2, the why graph has @1 alone.
func TestPageWhyAndImpactGraphs(t *testing.T) {
	tm := procurement(t, server.Options{})
	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])

	b.show("#/why/Klarveld.price_per_seat")
	nodes, edges, drawn := b.graph()
	for key, state := range map[string]string{
		"claim:Klarveld.price_per_seat@2": "live",
		"claim:Klarveld.price_per_seat@1": "superseded",
		"source:src:Klarveld:rev1":        "",
		"source:src:Klarveld:rev0":        "",
		"principal:worker-7":              "",
		"principal:worker-3":              "",
	} {
		if n, ok := nodes[key]; !ok || n.State != state {
			t.Errorf("why graph: node %s = %+v, want state %q (nodes %v)", key, n, state, nodes)
		}
	}
	for _, e := range []pageEdge{
		{"claim:Klarveld.price_per_seat@2", "claim:Klarveld.price_per_seat@1", "supersedes"},
		{"claim:Klarveld.price_per_seat@2", "source:src:Klarveld:rev1", "from"},
		{"claim:Klarveld.price_per_seat@1", "source:src:Klarveld:rev0", "from"},
	} {
		if !slices.Contains(edges, e) {
			t.Errorf("why graph: no edge %+v in %+v", e, edges)
		}
	}
	if drawn != len(nodes) {
		t.Errorf("Cytoscape drew %d nodes, the list has %d", drawn, len(nodes))
	}
	b.screenshot("web-why.png")

	b.show("#/impact/Klarveld.price_per_seat@1")
	nodes, edges, _ = b.graph()
	if n := nodes["artifact:plan:pick-vendor@1"]; n.Review != "needs review" {
		t.Errorf("impact graph: plan:pick-vendor@1 = %+v, want needs review", n)
	}
	if !slices.Contains(edges, pageEdge{"claim:Klarveld.price_per_seat@1", "artifact:plan:pick-vendor@1", "input of"}) {
		t.Errorf("impact graph: edges %+v", edges)
	}
	var why string
	b.eval(`document.querySelector('.explain[data-ref="plan:pick-vendor@1"][data-review="needs review"]').textContent`, &why)
	if !strings.Contains(why, "Klarveld.price_per_seat@1 = 44 was superseded by Klarveld.price_per_seat@2") {
		t.Errorf("the explanation: %q", why)
	}
	b.screenshot("web-impact.png")

	// Time travel: as of the transaction that derived the plan, @2 does not exist yet, and the
	// slider says where the page is.
	h, err := tm.db.History(context.Background(), "Klarveld.price_per_seat")
	if err != nil {
		t.Fatal(err)
	}
	derived := h.Claims[0].Tx + 1
	b.show(fmt.Sprintf("#/why/Klarveld.price_per_seat?tx=%d", derived))
	nodes, _, _ = b.graph()
	if _, ok := nodes["claim:Klarveld.price_per_seat@2"]; ok || nodes["claim:Klarveld.price_per_seat@1"].State != "live" {
		t.Errorf("as of tx %d: %v", derived, nodes)
	}
	var slider string
	b.eval(`document.getElementById('tx').value`, &slider)
	if slider != fmt.Sprint(derived) {
		t.Errorf("the slider is at %s, want %d", slider, derived)
	}
	b.show("#/impact/Klarveld.price_per_seat@1?tx=" + fmt.Sprint(derived))
	nodes, _, _ = b.graph()
	if n := nodes["artifact:plan:pick-vendor@1"]; n.Review != "ok" {
		t.Errorf("impact as of tx %d: plan:pick-vendor@1 = %+v, want ok", derived, n)
	}
	b.clean()
}
