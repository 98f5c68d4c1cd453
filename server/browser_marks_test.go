package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/mql-dev/mql/server"
)

// complaints starts recording what the browser would log as an error or a warning — a
// response of 400 or more, a console error or warning — and returns a function that hands
// over what was recorded since it last did.
func (b *browser) complaints() func() []string {
	var mu sync.Mutex
	var bad []string
	err := chromedp.Listen(b.ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *network.EventResponseReceived:
			if ev.Response.Status >= http.StatusBadRequest {
				bad = append(bad, fmt.Sprintf("%d %s", ev.Response.Status, ev.Response.URL))
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				bad = append(bad, fmt.Sprintf("console.%s %s", ev.Type, strings.Join(args, " ")))
			}
		}
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := bad
		bad = nil
		return got
	}
}

// ownerBrowser signs a browser in as the owner, with the one-time link.
func ownerBrowser(t *testing.T, tm *team) *browser {
	t.Helper()
	b := newBrowser(t)
	b.do(chromedp.Navigate(tm.http.URL+"/#code="+tm.srv.SignInCode()), chromedp.WaitVisible(chromedp.ID("bar")))
	return b
}

// The owner sees worker-3's `seen by worker-3` claim marked private wherever it is shown: in
// the subject's table, on its node of the why graph (and dashed), and in its history; the
// claim everyone may see carries no such mark.
func TestPageMarksPrivateClaims(t *testing.T) {
	tm := procurement(t, server.Options{})
	b := ownerBrowser(t, tm)
	b.show("#/subject/Klarveld")
	var marks map[string]string
	b.eval(`Object.fromEntries([...document.querySelectorAll('table.claims tbody tr')].map((tr) => [tr.dataset.ref, (tr.querySelector('.private') || {}).textContent || '']))`, &marks)
	if marks["Klarveld.discount_note@1"] != "private: seen by worker-3" || marks["Klarveld.price_per_seat@2"] != "" {
		t.Errorf("the subject's claims and their marks: %q", marks)
	}
	b.screenshot("web-subject-private.png")
	b.show("#/why/Klarveld.discount_note@1")
	var node struct {
		Text   string `json:"text"`
		Border string `json:"border"`
	}
	b.eval(`(() => {
		const btn = document.querySelector('ol.nodes button[data-node-key="claim:Klarveld.discount_note@1"]');
		const n = document.getElementById('graph')._cyreg.cy.getElementById(btn.dataset.nodeId);
		return {text: btn.textContent, border: n.style('border-style')};
	})()`, &node)
	if !strings.Contains(node.Text, "private: seen by worker-3") || node.Border != "dashed" {
		t.Errorf("the private claim's node: %+v", node)
	}
	b.show("#/history/Klarveld.discount_note")
	var hist string
	b.eval(`(document.querySelector('ol.timeline li[data-ref="Klarveld.discount_note@1"] .private') || {}).textContent || ''`, &hist)
	if hist != "private: seen by worker-3" {
		t.Errorf("the private claim's history: %q", hist)
	}
	b.clean()
}

// Selecting a node leaves its state's colours as they are and rings it in a colour no state
// has: before, a blue tint over a revoked node's red made it look contested. The legend has a
// swatch for artifacts, and what replaced a version is drawn with its state.
func TestPageSelectionLegendAndReplacements(t *testing.T) {
	tm := procurement(t, server.Options{})
	run(t, tm, `revoke Klarveld.price_per_seat@2 by owner because "misread the page" replaced by Klarveld.price_per_seat@1`)
	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	for _, route := range []string{"#/why/Klarveld.price_per_seat@2", "#/impact/Klarveld.price_per_seat@2"} {
		b.show(route)
		var got []string
		b.eval(`(() => {
			const cy = document.getElementById('graph')._cyreg.cy;
			const palette = ['#d3f9d8', '#2b8a3e', '#e9ecef', '#868e96', '#ffe3e3', '#c92a2a', '#fff3bf', '#e67700', '#f3d9fa', '#862e9c', '#dbe4ff', '#364fc7', '#e3fafc', '#0b7285', '#fff9db', '#5c940d']
				.map((h) => 'rgb(' + [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16)).join(',') + ')');
			const bad = [];
			cy.nodes(':childless').forEach((n) => {
				const before = [n.style('background-color'), n.style('border-color')].join(' ');
				cy.$(':selected').unselect();
				n.select();
				const after = [n.style('background-color'), n.style('border-color')].join(' ');
				const ring = n.style('outline-color').replace(/ /g, '');
				if (before !== after || Number(n.style('overlay-opacity')) !== 0 || Number(n.style('outline-width').replace('px', '')) < 3 || palette.includes(ring)) {
					bad.push(n.data('label').split('\n')[0] + ': ' + before + ' → ' + after + ', ring ' + ring + ' ' + n.style('outline-width') + ', overlay ' + n.style('overlay-opacity'));
				}
			});
			return bad;
		})()`, &got)
		if len(got) > 0 {
			t.Errorf("%s: selection changes a node's colours or rings it in a state's colour:\n%s", route, strings.Join(got, "\n"))
		}
		b.eval(`document.querySelector('ol.nodes button[data-node-key="claim:Klarveld.price_per_seat@2"]').click(); true`, nil)
		b.screenshot("web-selected-" + strings.SplitN(route, "/", 3)[1] + ".png")
		var legend []string
		b.eval(`[...document.querySelectorAll('.legend .state')].map((s) => s.className + '=' + s.textContent)`, &legend)
		if !strings.Contains(strings.Join(legend, " "), "state artifact=artifact") {
			t.Errorf("%s: the legend has no artifact: %q", route, legend)
		}
	}
	// The revocation's replacement, in the why graph, and the replacement of the revoked
	// version, in the impact graph: both are @1, live again.
	for _, route := range []string{"#/why/Klarveld.price_per_seat@2", "#/impact/Klarveld.price_per_seat@2"} {
		b.show(route)
		nodes, edges, _ := b.graph()
		if n := nodes["claim:Klarveld.price_per_seat@1"]; n.State != "live" {
			t.Errorf("%s: the replacement @1 = %+v, want live (edges %v)", route, n, edges)
		}
	}
	b.clean()
}

// The header stays on one line for the owner (whose name is the longest) at 1280 and 1024 px
// wide, now and travelling in time.
func TestPageHeaderStaysOnOneLine(t *testing.T) {
	tm := procurement(t, server.Options{})
	b := ownerBrowser(t, tm)
	for _, width := range []int64{1280, 1024} {
		b.do(chromedp.EmulateViewport(width, 800))
		for _, route := range []string{"#/why/Klarveld.price_per_seat", "#/subject/Klarveld?tx=2"} {
			b.show(route)
			var got struct {
				Lines    int     `json:"lines"`
				Meet     string  `json:"meet"`
				Overflow bool    `json:"overflow"`
				Height   float64 `json:"height"`
				Parts    string  `json:"parts"`
			}
			b.eval(`(() => {
				const bar = document.getElementById('bar');
				const rs = [...bar.children].map((c) => c.getBoundingClientRect());
				const top = Math.max(...rs.map((r) => r.top)), bottom = Math.min(...rs.map((r) => r.bottom));
				// Nor may anything in it overlap anything else, or be squeezed out of use.
				const leaves = [...bar.querySelectorAll('a, input, button, label, #principal')].map((e) => e.getBoundingClientRect());
				const meet = leaves.flatMap((a, i) => leaves.filter((b, j) => i < j && a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1)
					.map((b) => Math.round(a.left) + '-' + Math.round(a.right) + ' meets ' + Math.round(b.left) + '-' + Math.round(b.right))).join(', ');
				const squeezed = document.getElementById('q').getBoundingClientRect().width < 90 || document.getElementById('tx').getBoundingClientRect().width < 60;
				return {lines: top < bottom ? 1 : 2, meet, overflow: meet !== '' || squeezed || bar.scrollWidth > bar.clientWidth || rs.some((r) => r.right > window.innerWidth),
					height: bar.getBoundingClientRect().height, parts: rs.map((r) => Math.round(r.left) + '-' + Math.round(r.right) + '@' + Math.round(r.top)).join(' ')};
			})()`, &got)
			b.screenshot(fmt.Sprintf("web-header-%d-%d.png", width, len(route)))
			if got.Lines != 1 || got.Overflow || got.Height > 60 {
				t.Errorf("%d px, %s: the header wraps or overflows: %+v", width, route, got)
			}
		}
	}
	b.clean()
}

// A page load logs no error in the console: no response of 400 or more, signed out (before,
// its GET /v1/session was answered 401) or signed in, and no console error.
func TestPageLoadLogsNoError(t *testing.T) {
	tm := procurement(t, server.Options{})
	b := newBrowser(t)
	complaints := b.complaints()
	check := func(what string) {
		t.Helper()
		if got := complaints(); len(got) > 0 {
			t.Errorf("%s: %v", what, got)
		}
	}
	b.do(chromedp.Navigate(tm.http.URL+"/"), chromedp.WaitVisible(chromedp.ID("token")))
	check("a signed-out load")
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	b.show("#/why/Klarveld.price_per_seat")
	check("signing in")
	b.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("bar")))
	b.show("#/")
	check("a signed-in load")
	b.do(chromedp.Click(chromedp.ID("signout")), chromedp.WaitVisible(chromedp.ID("signin")))
	b.do(chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("token")))
	check("a load after signing out")
	b.clean()
}

// What happened to a stale input is said once, not again for every dependent that rests on
// it; each dependent still names it.
func TestPageImpactSaysEachStaleInputOnce(t *testing.T) {
	tm := procurement(t, server.Options{})
	run(t, tm, `derive plan:a from Klarveld.price_per_seat@1 by orchestrator
derive plan:b from Klarveld.price_per_seat@1 by orchestrator
derive plan:c from plan:a by orchestrator`)
	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	b.show("#/impact/Klarveld.price_per_seat@1")
	var texts map[string]string
	b.eval(`Object.fromEntries([...document.querySelectorAll('.dependents .explain')].map((p) => [p.dataset.ref, p.textContent]))`, &texts)
	all := strings.Join(func() []string {
		var s []string
		for _, v := range texts {
			s = append(s, v)
		}
		return s
	}(), "\n")
	if n := strings.Count(all, "was superseded by Klarveld.price_per_seat@2"); n != 1 {
		t.Errorf("the supersession is told %d times:\n%s", n, all)
	}
	// In the node list too, an artifact that needs review is red, as in the legend.
	var stripe string
	b.eval(`getComputedStyle(document.querySelector('ol.nodes button[data-node-key="artifact:plan:a@1"]')).borderLeftColor`, &stripe)
	if stripe != "rgb(201, 42, 42)" {
		t.Errorf("plan:a@1 needs review; its button's stripe is %s", stripe)
	}
	for _, ref := range []string{"plan:pick-vendor@1", "plan:a@1", "plan:b@1"} {
		if !strings.Contains(texts[ref], "needs review") || !strings.Contains(texts[ref], "Klarveld.price_per_seat@1") {
			t.Errorf("%s: %q", ref, texts[ref])
		}
	}
	b.clean()
}
