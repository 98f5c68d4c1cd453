package server_test

// The web page in a real browser: Debian's Chromium, headless, driven with chromedp. These
// tests skip when Chromium is missing, except in CI (CI set), where they fail instead: .ci/run
// installs it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"github.com/chromedp/chromedp/kb"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	missing []string // URLs the server answered 404 Not Found
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
		chromedp.Flag("disable-dev-shm-usage", true),
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
		case *network.EventResponseReceived:
			if ev.Response.Status == http.StatusNotFound {
				b.mu.Lock()
				b.missing = append(b.missing, ev.Response.URL)
				b.mu.Unlock()
			}
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
	// A render begun before the hash changed (the page's first, or a refresh after an event)
	// may finish after the view was cleared: wait for the one that drew this route.
	var hash string
	b.eval(fmt.Sprintf(`document.getElementById('view').replaceChildren(); location.hash = %q; location.hash`, route), &hash)
	b.do(chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#content[data-ready="true"][data-hash=%q]`, hash))))
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
	if len(b.missing) > 0 {
		b.t.Errorf("the page asked for what the server does not have: %v", b.missing)
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

	// The queue says since when its inputs are stale: this plan was never reviewed.
	b.show("#/review")
	var queued string
	b.eval(`document.querySelector('ul.review li[data-ref="plan:pick-vendor@1"]').textContent`, &queued)
	if !strings.Contains(queued, "no longer live since it was derived: Klarveld.price_per_seat@1") {
		t.Errorf("the review queue: %q", queued)
	}

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

// everything returns what the page holds and received: its DOM, every response body, every
// server-sent event.
func (b *browser) everything() string {
	b.t.Helper()
	var dom string
	b.eval(`document.documentElement.outerHTML`, &dom)
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return dom + "\n" + strings.Join(b.bodies, "\n") + "\n" + strings.Join(b.events, "\n")
}

// The views a person can visit, each of which reads the memory.
var everyView = []string{
	"#/", "#/subject/Klarveld", "#/why/Klarveld.price_per_seat", "#/why/Klarveld.price_per_seat@1",
	"#/impact/Klarveld.price_per_seat", "#/impact/Klarveld.price_per_seat@1", "#/history/Klarveld.price_per_seat",
	"#/why/plan:pick-vendor", "#/impact/plan:pick-vendor", "#/history/plan:pick-vendor", "#/principal/worker-3",
	"#/review", "#/conflicts", "#/stats", "#/changes", "#/subject/Klarveld?tx=2", "#/search/secret%20discount",
}

// A run of worker-7's that read Klarveld.price_per_seat@2 and ended in failure: the impact view
// of @2 lists the run with what it was served and how it ended, and the stats view gives the
// memory metrics under the command line's names, each once. worker-3, who may not see
// worker-7's runs, gets neither the run nor the metrics (the check can fail).
func TestPageShowsRuns(t *testing.T) {
	tm := procurement(t, server.Options{})
	for _, st := range []string{"live Klarveld.price_per_seat for run r-9", "derive plan:r9 from Klarveld.price_per_seat by worker-7 in run r-9",
		`outcome run r-9 failed because "paid 89"`} {
		if code, res := tm.query(tm.tokens["worker-7"], st); code != http.StatusOK {
			t.Fatalf("%s: %d %+v", st, code, res)
		}
	}
	for _, who := range []string{"worker-7", "worker-3"} {
		t.Run(who, func(t *testing.T) {
			b := newBrowser(t)
			b.signIn(tm.http.URL, tm.tokens[who])
			b.show("#/impact/Klarveld.price_per_seat@2")
			var run string
			b.eval(`(document.querySelector('ul.runs li[data-run="r-9"]') || {}).textContent || ''`, &run)
			if who == "worker-3" {
				if run != "" {
					t.Fatalf("worker-3 sees worker-7's run: %q", run)
				}
			} else if !strings.Contains(run, "r-9 (worker-7): served Klarveld.price_per_seat@2") || !strings.Contains(run, "failed") {
				t.Fatalf("the run on the impact view: %q", run)
			}

			b.show("#/runs")
			var runs []string
			b.eval(`[...document.querySelectorAll('table.runs tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent).join('|'))`, &runs)
			b.show("#/run/r-9")
			var report, served, errText string
			b.eval(`(document.querySelector('section.run[data-run="r-9"]') || {}).textContent || ''`, &report)
			b.eval(`[...document.querySelectorAll('section.run table.served tbody tr')].map((tr) => [...tr.cells].map((td) => td.textContent).join('|')).join('\n')`, &served)
			b.eval(`(document.querySelector('#content .error') || {}).textContent || ''`, &errText)
			if who == "worker-3" {
				if len(runs) != 0 || report != "" || served != "" || !strings.Contains(errText, "not found") {
					t.Fatalf("worker-3 sees worker-7's run: runs %q, report %q, served %q, error %q", runs, report, served, errText)
				}
			} else {
				if len(runs) != 1 || !strings.HasPrefix(runs[0], "r-9|worker-7|") || !strings.HasSuffix(runs[0], "|1|1|1|0|1|failed") {
					t.Fatalf("the runs view: %q", runs)
				}
				for _, want := range []string{"Ended failed", `because "paid 89"`, "A downstream failure", "Decided plan:r9@1"} {
					if !strings.Contains(report, want) {
						t.Fatalf("the run view lacks %q: %q", want, report)
					}
				}
				if served != "Klarveld.price_per_seat@2|tx 11|live|live|live||cited" {
					t.Fatalf("the run view's served table: %q", served)
				}
				b.screenshot("web-run.png")
			}

			b.show("#/history/plan:r9")
			var sub string
			b.eval(`(document.querySelector('ol.timeline li[data-ref="plan:r9@1"] .sub') || {}).textContent || ''`, &sub)
			if !strings.Contains(sub, "derived by worker-7") || strings.Contains(sub, "in run r-9") != (who == "worker-7") {
				t.Fatalf("%s's history of the decision made in r-9: %q", who, sub)
			}

			b.show("#/stats")
			var metrics []string
			b.eval(`[...document.querySelectorAll('table.stats tr')].map((tr) => tr.dataset.metric + '=' + tr.querySelector('td').textContent)`, &metrics)
			names := map[string]int{}
			for _, m := range metrics {
				names[m[:strings.Index(m, "=")]]++
			}
			for name, n := range names {
				if n > 1 {
					t.Errorf("stats: %q shown %d times: %v", name, n, metrics)
				}
			}
			wantRuns := "runs=1"
			if who == "worker-3" {
				if names["runs"] > 0 {
					t.Errorf("worker-3 gets worker-7's memory metrics: %v", metrics)
				}
				return
			}
			for _, want := range []string{wantRuns, "outcomes=1: 0 succeeded, 1 failed, 0 declined", "failures="} {
				if !slices.ContainsFunc(metrics, func(m string) bool { return strings.HasPrefix(m, want) }) {
					t.Errorf("stats: no %q in %v", want, metrics)
				}
			}
			b.screenshot("web-stats.png")
			b.clean()
		})
	}
}

// As worker-7, who may not see worker-3's `seen by worker-3` claim, the page never shows it:
// not in the DOM, not in any response it received, not in the change feed — through every
// view, the search box's completions, and a route that names the claim. As worker-3, the same
// walk finds it (the check can fail).
func TestPageShowsOnlyWhatThePrincipalMaySee(t *testing.T) {
	tm := procurement(t, server.Options{})
	for _, who := range []string{"worker-7", "worker-3"} {
		t.Run(who, func(t *testing.T) {
			b := newBrowser(t)
			b.signIn(tm.http.URL, tm.tokens[who])
			for _, v := range everyView {
				b.show(v)
			}
			b.show("#/subject/Klarveld")
			all := b.everything()
			for _, secret := range []string{"secret-discount-7431", "discount_note"} {
				if got := strings.Contains(all, secret); got != (who == "worker-3") {
					t.Errorf("%s: the page holds %q: %v", who, secret, got)
				}
			}
			// Naming it directly: an error that says nothing of it.
			b.show("#/why/Klarveld.discount_note@1")
			b.show("#/history/Klarveld.discount_note")
			if got := strings.Contains(b.everything(), "secret-discount-7431"); got != (who == "worker-3") {
				t.Errorf("%s: naming the claim shows its value: %v", who, got)
			}
			b.clean()
		})
	}
}

// Hostile values render as text and run nothing: markup in values, excerpts, reasons and URIs,
// a source id with control characters, a subject that reads like markup, a javascript: URI.
func TestPageEscapesHostileValues(t *testing.T) {
	tm := newTeam(t, server.Options{})
	run(t, tm, `assert Klarveld.motto = "<img src=x onerror=alert(1)><script>window.__pwned=1</script>" by worker-3 from "src:\x1b[31mred\x07\u202e" excerpt "<b onmouseover=alert(2)>bold</b>" uri "javascript:alert(3)"
assert script:img/onerror.tag = "<svg onload=alert(4)>" by worker-3 from "<iframe src=javascript:alert(5)>"
derive plan:x from Klarveld.motto by worker-3
assert Klarveld.slogan = "fine" by worker-3
revoke Klarveld.slogan@1 by worker-3 because "</p><img src=x onerror=alert(6)>"`)
	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	for _, v := range []string{"#/", "#/subject/Klarveld", "#/why/Klarveld.motto@1", "#/why/Klarveld.slogan@1", "#/impact/Klarveld.motto@1", "#/history/Klarveld.motto",
		"#/subject/script:img/onerror", "#/why/script:img/onerror.tag", "#/changes", "#/review", "#/why/plan:x"} {
		b.show(v)
		var got struct {
			Pwned    bool     `json:"pwned"`
			Elements int      `json:"elements"`
			JSLinks  int      `json:"jsLinks"`
			Text     string   `json:"text"`
			Nodes    []string `json:"nodes"`
		}
		b.eval(`({pwned: !!window.__pwned,
			elements: document.querySelectorAll('main img, main script, main svg, main iframe, main b, [onerror], [onload], [onmouseover]').length,
			jsLinks: document.querySelectorAll('a[href^="javascript:" i]').length,
			text: document.querySelector('main').innerText,
			nodes: [...document.querySelectorAll('ol.nodes button')].map(b => b.textContent)})`, &got)
		if got.Pwned || got.Elements > 0 || got.JSLinks > 0 {
			t.Errorf("%s: pwned %v, %d hostile elements, %d javascript: links", v, got.Pwned, got.Elements, got.JSLinks)
		}
		switch v {
		case "#/subject/Klarveld":
			if !strings.Contains(got.Text, `"<img src=x onerror=alert(1)><script>window.__pwned=1</script>"`) || !strings.Contains(got.Text, `src:\x1b[31mred\x07\u202e`) {
				t.Errorf("%s: the value and source are not shown as text:\n%s", v, got.Text)
			}
		case "#/why/Klarveld.motto@1":
			all := strings.Join(got.Nodes, "\n")
			for _, want := range []string{`src:\x1b[31mred\x07\u202e`, `"<b onmouseover=alert(2)>bold</b>"`} {
				if !strings.Contains(all, want) {
					t.Errorf("%s: no node shows %s:\n%s", v, want, all)
				}
			}
		case "#/why/Klarveld.slogan@1":
			if all := strings.Join(got.Nodes, "\n"); !strings.Contains(all, `"</p><img src=x onerror=alert(6)>"`) {
				t.Errorf("%s: the revocation's reason is not shown as text:\n%s", v, all)
			}
		}
	}
	b.show("#/why/Klarveld.motto@1")
	b.eval(`[...document.querySelectorAll('ol.nodes button')].find(b => b.dataset.kind === 'source').click(); true`, nil)
	var details string
	b.eval(`document.getElementById('details').innerText`, &details)
	if !strings.Contains(details, "javascript:alert(3)") {
		t.Errorf("the source's details: %q", details)
	}
	b.clean()
}

// A new assertion made through MCP appears on an open page within a second, without a reload;
// so do a revocation and an artifact turning "needs review".
func TestPageLiveUpdates(t *testing.T) {
	tm := procurement(t, server.Options{})
	ctx := context.Background()
	bt := &bearerTransport{token: tm.tokens["worker-3"]}
	tr := &mcp.StreamableClientTransport{Endpoint: tm.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bt}, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	var marker string
	b.show("#/subject/Klarveld")
	b.eval(`document.getElementById('content').dataset.marker = 'before'; 'ok'`, &marker)

	// within waits up to a second for a selector, and says how long it took.
	within := func(what, sel string) {
		t.Helper()
		start := time.Now()
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.WaitReady(chromedp.CSS(sel))); err != nil {
			t.Errorf("%s: not on the page within a second (%v)", what, err)
			return
		}
		t.Logf("%s: on the page %v after the MCP call returned", what, time.Since(start).Round(time.Millisecond))
	}
	call("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "EU", "source": "src:Klarveld:rev2"})
	within("a new claim", `tr[data-ref="Klarveld.region@1"]`)
	var reloaded bool
	b.eval(`performance.getEntriesByType('navigation').length !== 1 || !!document.querySelector('#signin:not([hidden])')`, &reloaded)
	if reloaded {
		t.Error("the page reloaded")
	}

	b.show("#/review")
	call("derive", map[string]any{"artifact": "plan:region-check", "from": []string{"Klarveld.region"}})
	call("assert", map[string]any{"subject": "Klarveld", "predicate": "region", "value": "US", "source": "src:Klarveld:rev3"})
	within("an artifact that needs review", `ul.review li[data-ref="plan:region-check@1"]`)
	within("its alert", `.alert.needs-review`)

	b.show("#/history/Klarveld.region")
	call("revoke", map[string]any{"claim": "Klarveld.region@2", "because": "wrong page"})
	within("a revocation", `ol.timeline li.revoked[data-ref="Klarveld.region@2"]`)
	b.clean()
}

// The keyboard reaches every node of a graph: Tab moves through the page to each node's
// button, and a focused node is selected, its details shown.
func TestPageKeyboardReachesEveryNode(t *testing.T) {
	tm := procurement(t, server.Options{})
	run(t, tm, `revoke Klarveld.price_per_seat@2 by owner because "misread the page" replaced by Klarveld.price_per_seat@1`)
	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	for _, route := range []string{"#/why/Klarveld.price_per_seat@2", "#/impact/Klarveld.price_per_seat@1"} {
		b.show(route)
		nodes, _, _ := b.graph()
		b.eval(`document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); true`, nil)
		reached := map[string]bool{}
		for range 200 {
			b.do(chromedp.KeyEvent(kb.Tab))
			var key string
			b.eval(`document.activeElement ? (document.activeElement.dataset.nodeKey || '') : ''`, &key)
			if key != "" {
				reached[key] = true
				var selected string
				b.eval(`document.querySelector('ol.nodes button[aria-pressed="true"]').dataset.nodeKey`, &selected)
				if selected != key {
					t.Errorf("%s: %s has the focus, %s is selected", route, key, selected)
				}
			}
			if len(reached) == len(nodes) {
				break
			}
		}
		for key := range nodes {
			if !reached[key] {
				t.Errorf("%s: Tab never reaches %s", route, key)
			}
		}
		if route == "#/why/Klarveld.price_per_seat@2" {
			if _, ok := nodes["revocation:Klarveld.price_per_seat@2"]; !ok {
				t.Errorf("the why graph of a revoked claim has no revocation node: %v", nodes)
			}
		}
	}
	b.clean()
}

// The owner's one-time link signs the browser in without a token; the code is spent and wiped
// from the address bar; no token ever appears in a URL or in the page's storage, and script
// cannot read the session cookie.
func TestPageSignInLinkAndNoTokenInURLs(t *testing.T) {
	tm := procurement(t, server.Options{})
	b := newBrowser(t)
	code := tm.srv.SignInCode()
	b.do(chromedp.Navigate(tm.http.URL + "/#code=" + code))
	b.do(chromedp.WaitVisible(chromedp.ID("bar")))
	var state struct {
		Who     string `json:"who"`
		Hash    string `json:"hash"`
		Cookie  string `json:"cookie"`
		Storage int    `json:"storage"`
	}
	b.eval(`({who: document.getElementById('principal').textContent, hash: location.href, cookie: document.cookie, storage: localStorage.length + sessionStorage.length})`, &state)
	if !strings.Contains(state.Who, "(owner)") || strings.Contains(state.Hash, code) || state.Cookie != "" || state.Storage != 0 {
		t.Errorf("after the link: %+v", state)
	}
	b.show("#/subject/Klarveld")
	all := b.everything()
	if !strings.Contains(all, "secret-discount-7431") {
		t.Error("the owner does not see worker-3's claim")
	}

	// The same link again, in another browser: refused.
	b2 := newBrowser(t)
	b2.do(chromedp.Navigate(tm.http.URL + "/#code=" + code))
	b2.do(chromedp.WaitVisible(chromedp.ID("signin")))
	var msg string
	b2.eval(`document.getElementById('signin-error').textContent`, &msg)
	if !strings.Contains(msg, "already used or has expired") {
		t.Errorf("a spent link: %q", msg)
	}

	// A token holder's session: the token is in no URL the page asked for, nor in storage.
	b3 := newBrowser(t)
	tok := tm.tokens["worker-7"]
	b3.signIn(tm.http.URL, tok)
	for _, v := range everyView {
		b3.show(v)
	}
	b3.eval(`({who: document.getElementById('principal').textContent, hash: location.href, cookie: document.cookie, storage: localStorage.length + sessionStorage.length})`, &state)
	if state.Cookie != "" || state.Storage != 0 {
		t.Errorf("token session: %+v", state)
	}
	b3.mu.Lock()
	for _, u := range b3.urls {
		if strings.Contains(u, tok) || strings.Contains(u, strings.SplitN(tok, "_", 3)[2]) {
			t.Errorf("a request URL holds the token: %s", u)
		}
	}
	b3.mu.Unlock()
	// Sign out: the page is back at the sign-in form and the session no longer reads.
	b3.do(chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
	var status int
	raw, err := chromedp.Run(b3.ctx, chromedp.Evaluate[[]byte](`fetch('/v1/catalog').then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || json.Unmarshal(raw, &status) != nil {
		t.Fatalf("fetch: %v %s", err, raw)
	}
	if status != http.StatusUnauthorized {
		t.Errorf("after signing out, the page's fetch: %d", status)
	}
	b.clean()
	b3.clean()
}

// Names in any script the language takes (Klärveld, 東京, a run r-ü) open their views: the
// page checks a route's name as the language lexes one, not as ASCII.
func TestPageOpensNamesInAnyScript(t *testing.T) {
	tm := procurement(t, server.Options{})
	run(t, tm, `assert Klärveld.price_per_seat = 41 by worker-7
assert 東京.population = 14 by worker-7
as worker-7 live 東京 for run r-ü
derive plan:東京 from 東京.population by worker-7 in run r-ü
outcome run r-ü succeeded by worker-7`)
	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	for route, sel := range map[string]string{
		"#/subject/Klärveld":       `table.claims tr[data-ref="Klärveld.price_per_seat@1"]`,
		"#/why/東京.population":      `#graph`,
		"#/history/plan:東京":        `ol.timeline li[data-ref="plan:東京@1"]`,
		"#/run/r-ü":                `section.run[data-run="r-ü"]`,
		"#/impact/東京.population@1": `#graph`,
	} {
		b.show(route)
		var found bool
		var errText string
		b.eval(fmt.Sprintf(`!!document.querySelector(%q)`, sel), &found)
		b.eval(`(document.querySelector('#content .error') || {}).textContent || ''`, &errText)
		if !found || errText != "" {
			t.Errorf("%s: %s found %v; error %q", route, sel, found, errText)
		}
	}
	b.clean()
}
