package server_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mql-dev/mql/server"
)

// labelReport is what the page drew: the canvas, the zoom, and each node whose label is too
// small to read, falls outside the canvas, or overlaps another node.
type labelReport struct {
	Width    float64  `json:"width"`
	Height   float64  `json:"height"`
	Zoom     float64  `json:"zoom"`
	Nodes    int      `json:"nodes"`
	MinLine  float64  `json:"minLine"`
	MinFont  float64  `json:"minFont"`
	Small    []string `json:"small"`
	Outside  []string `json:"outside"`
	Overlaps []string `json:"overlaps"`
}

// The rendered size of every label, read from Cytoscape (the canvas holds no DOM text): its
// font size at the current zoom, the height of each of its lines, and its box against the
// canvas's. Cytoscape keeps its instance on the container (_cyreg), which is how a test reaches
// it without the page exporting anything.
const measureLabels = `(() => {
  const box = document.getElementById('graph');
  const cy = box._cyreg.cy;
  const r = box.getBoundingClientRect();
  const out = {width: r.width, height: r.height, zoom: cy.zoom(), nodes: cy.nodes(":childless").length, minLine: 1e9, minFont: 1e9, small: [], outside: [], overlaps: []};
  const boxes = [];
  cy.nodes().forEach((n) => {
    const name = String(n.data('label')).split('\n')[0];
    const font = parseFloat(n.style('font-size')) * cy.zoom();
    const lb = n.renderedBoundingBox({includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false});
    const line = lb.h / String(n.data('label')).split('\n').length;
    out.minLine = Math.min(out.minLine, line);
    out.minFont = Math.min(out.minFont, font);
    if (font < 10 || line < 10) out.small.push(name + ' ' + font.toFixed(1) + 'px');
    if (lb.x1 < 0 || lb.y1 < 0 || lb.x2 > r.width || lb.y2 > r.height) out.outside.push(name + ' ' + JSON.stringify([lb.x1, lb.y1, lb.x2, lb.y2].map(Math.round)));
    boxes.push([name, n.renderedBoundingBox({includeLabels: true, includeOverlays: false}), n]);
  });
  // A group's box holds its nodes: only boxes that are not one inside the other must not meet.
  for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
    if (boxes[i][2].ancestors().contains(boxes[j][2]) || boxes[j][2].ancestors().contains(boxes[i][2])) continue;
    const a = boxes[i][1], b = boxes[j][1];
    if (a.x1 < b.x2 - 1 && b.x1 < a.x2 - 1 && a.y1 < b.y2 - 1 && b.y1 < a.y2 - 1) out.overlaps.push(boxes[i][0] + ' / ' + boxes[j][0]);
  }
  return out;
})()`

func (b *browser) labels() labelReport {
	b.t.Helper()
	var r labelReport
	b.eval(measureLabels, &r)
	return r
}

// readable fails the test unless every label of the drawn graph is at least 10 CSS px high,
// inside the canvas, and clear of every other node.
func (r labelReport) check(t *testing.T, what string, nodes int) {
	t.Helper()
	t.Logf("%s: %d nodes on a %.0fx%.0f canvas at zoom %.2f; smallest font %.1f px, smallest line %.1f px", what, r.Nodes, r.Width, r.Height, r.Zoom, r.MinFont, r.MinLine)
	if r.Nodes < nodes {
		t.Errorf("%s: %d nodes drawn, want at least %d", what, r.Nodes, nodes)
	}
	if len(r.Small) > 0 {
		t.Errorf("%s: %d labels smaller than 10 px: %s", what, len(r.Small), strings.Join(first(r.Small, 5), "; "))
	}
	if len(r.Outside) > 0 {
		t.Errorf("%s: %d labels outside the %.0fx%.0f canvas: %s", what, len(r.Outside), r.Width, r.Height, strings.Join(first(r.Outside, 5), "; "))
	}
	if len(r.Overlaps) > 0 {
		t.Errorf("%s: %d nodes overlap: %s", what, len(r.Overlaps), strings.Join(first(r.Overlaps, 5), "; "))
	}
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// A why graph with 12 inputs, each with its own source and excerpt, and impact graphs of about
// 100 nodes, wide (100 artifacts on one claim) and deep (10 plans, 9 reports on each): every
// label is readable (10 CSS px or more), inside the canvas and clear of the others, at the zoom
// the page opens at.
func TestPageLargeGraphsStayReadable(t *testing.T) {
	tm := newTeam(t, server.Options{})
	var script strings.Builder
	var inputs []string
	for i := 1; i <= 12; i++ {
		who := []string{"worker-3", "worker-7"}[i%2]
		fmt.Fprintf(&script, "assert Vendor%d.price_per_seat = %d by %s from \"src:vendor%d:pricing\" excerpt \"EUR %d per seat, billed yearly\"\n", i, 40+i, who, i, 40+i)
		inputs = append(inputs, fmt.Sprintf("Vendor%d.price_per_seat", i))
	}
	fmt.Fprintf(&script, "derive plan:shortlist from %s by orchestrator\n", strings.Join(inputs, ", "))
	script.WriteString("assert Base.rate = 1 by worker-3 from \"src:base\"\n")
	for i := 1; i <= 100; i++ {
		fmt.Fprintf(&script, "derive report:r%d from Base.rate by orchestrator\n", i)
	}
	script.WriteString("assert Deep.rate = 1 by worker-3 from \"src:deep\"\n")
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&script, "derive plan:p%d from Deep.rate by orchestrator\n", i)
		for j := 1; j <= 9; j++ {
			fmt.Fprintf(&script, "derive report:p%d-%d from plan:p%d by orchestrator\n", i, j, i)
		}
	}
	script.WriteString("assert Base.rate = 2 by worker-7 from \"src:base2\"\nassert Deep.rate = 2 by worker-7 from \"src:deep2\"\n")
	run(t, tm, script.String())

	b := newBrowser(t)
	complaints := b.complaints()
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	for _, width := range []int64{1440, 1024} {
		b.do(chromedp.EmulateViewport(width, 900))
		for _, c := range []struct {
			route, shot string
			nodes       int
		}{
			{"#/why/plan:shortlist", "web-why-12-inputs.png", 1 + 12 + 12 + 3},
			{"#/impact/Base.rate@1", "", 1 + 1 + 100},
			{"#/impact/Deep.rate@1", "web-impact-100-deep.png", 1 + 1 + 10 + 90},
		} {
			b.show(c.route)
			b.labels().check(t, fmt.Sprintf("%d px wide, %s", width, c.route), c.nodes)
			if got := complaints(); len(got) > 0 {
				t.Errorf("%s: the browser logged %v", c.route, got)
			}
			if width == 1440 && c.shot != "" {
				b.screenshot(c.shot)
			}
		}
	}

	// Zoom to a node: one chosen from the list, far down a canvas taller than the window, is
	// brought into the window, and stays readable. (The page is on the deep impact.)
	var seen struct {
		Top    float64 `json:"top"`
		Bottom float64 `json:"bottom"`
		Window float64 `json:"window"`
		Zoom   float64 `json:"zoom"`
	}
	b.eval(`window.scrollTo(0, 0); document.querySelector('ol.nodes button[data-node-key="artifact:report:p1-9@1"]').click(); true`, nil)
	b.eval(`(() => {
		const box = document.getElementById('graph'), cy = box._cyreg.cy;
		const id = document.querySelector('ol.nodes button[data-node-key="artifact:report:p1-9@1"]').dataset.nodeId;
		const r = box.getBoundingClientRect(), n = cy.getElementById(id).renderedBoundingBox();
		return {top: r.top + n.y1, bottom: r.top + n.y2, window: window.innerHeight, zoom: cy.zoom()};
	})()`, &seen)
	if seen.Top < 0 || seen.Bottom > seen.Window || seen.Zoom < 0.95 {
		t.Errorf("report:p1-9@1, chosen from the list, is not in the window: %+v", seen)
	}

	// The wheel scrolls the page over the canvas; with Ctrl it zooms, and so do the buttons.
	var zooms []float64
	b.eval(`(() => {
		const box = document.getElementById('graph'), cy = box._cyreg.cy, r = box.getBoundingClientRect();
		const wheel = (ctrlKey) => box.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, ctrlKey, clientX: r.left + 50, clientY: Math.max(r.top, 0) + 50, bubbles: true, cancelable: true}));
		const out = [cy.zoom()];
		out.push(wheel(false) ? cy.zoom() : -1); // not cancelled: the page scrolls
		wheel(true); out.push(cy.zoom());
		document.querySelector('.zoom button[aria-label="Zoom out"]').click(); out.push(cy.zoom());
		document.querySelector('.zoom button[aria-label="Zoom in"]').click(); out.push(cy.zoom());
		[...document.querySelectorAll('.zoom button')].find((b) => b.textContent === 'Fit').click(); out.push(cy.zoom());
		return out;
	})()`, &zooms)
	if len(zooms) != 6 || zooms[1] != zooms[0] || zooms[2] <= zooms[1] || zooms[3] >= zooms[2] || zooms[4] <= zooms[3] || zooms[5] < 0.95 || zooms[5] > 1.5 {
		t.Errorf("zoom before, after a wheel, a Ctrl+wheel, −, +, Fit: %v", zooms)
	}
	b.clean()
}
