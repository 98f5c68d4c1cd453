package server_test

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mql-dev/mql/server"
)

// searchRow is a row of the search view's claims table.
type searchRow struct {
	Ref     string `json:"ref"`
	Score   string `json:"score"`
	Subject string `json:"subject"`
	Href    string `json:"href"`
	Matched string `json:"matched"`
}

// searchBox types text into the header's search box, submits it, and waits for the view it
// must open.
func (b *browser) searchBox(text, view string) {
	b.t.Helper()
	b.eval(`document.getElementById('view').replaceChildren(); document.getElementById('q').value = ''; true`, nil)
	b.do(chromedp.SendKeys(chromedp.ID("q"), text+kb.Enter),
		chromedp.WaitReady(chromedp.CSS(fmt.Sprintf(`#content[data-view=%q][data-ready="true"]`, view))))
}

func (b *browser) searchRows() []searchRow {
	b.t.Helper()
	var rows []searchRow
	b.eval(`[...document.querySelectorAll('table.hits tbody tr')].map(r => ({ref: r.dataset.ref, score: r.cells[0].textContent,
		subject: r.cells[1].textContent, href: r.cells[1].querySelector('a').getAttribute('href'), matched: r.cells[6].textContent}))`, &rows)
	return rows
}

// The search box opens a name's view as before, and searches the claims' text for anything
// else: the matching claims, best first with their scores, each linking to its subject, found
// as the signed-in principal, so another principal's private claim is never found; as of a
// past transaction, the claims of then.
func TestPageSearchesClaimText(t *testing.T) {
	tm := procurement(t, server.Options{})
	run(t, tm, `assert Klarveld.pricing_note = "EU pricing per seat, billed yearly" by worker-7
assert Brimsole.pricing_note = "EU and US pricing for teams" by worker-7
assert Ostwind.summary = "a vendor of ship sensors" by worker-7`)
	before, err := tm.db.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	before -= 3

	b := newBrowser(t)
	b.signIn(tm.http.URL, tm.tokens["worker-7"])
	b.searchBox("Klarveld", "subject")

	b.searchBox("EU pricing, billed yearly", "search")
	rows := b.searchRows()
	// "pricing" is stemmed as "price", which price_per_seat holds too.
	if len(rows) != 3 || rows[0].Ref != "Klarveld.pricing_note@1" || rows[1].Ref != "Brimsole.pricing_note@1" || rows[2].Ref != "Klarveld.price_per_seat@2" {
		t.Fatalf("search rows %+v, want Klarveld's note, Brimsole's, Klarveld's price", rows)
	}
	last := math.Inf(1)
	for _, r := range rows {
		sc, err := strconv.ParseFloat(r.Score, 64)
		if err != nil || sc <= 0 || sc > last || r.Href != "#/subject/"+r.Subject || !strings.Contains(r.Matched, "price") {
			t.Errorf("row %+v: want a score below the row's above, a link to its subject and the matched terms", r)
		}
		last = sc
	}
	b.screenshot("web-search.png")
	b.do(chromedp.Click(chromedp.CSS(`table.hits tbody tr a[href="#/subject/Brimsole"]`)),
		chromedp.WaitReady(chromedp.CSS(`#content[data-view="subject"][data-ready="true"] table.claims tr[data-ref="Brimsole.pricing_note@1"]`)))

	// A part of a name: the names that hold it, and no claim whose text has the word.
	b.searchBox("Brim", "search")
	var names []string
	b.eval(`[...document.querySelectorAll('ul.names li')].map(l => l.dataset.name)`, &names)
	if fmt.Sprint(names) != "[Brimsole Brimsole.pricing_note]" || len(b.searchRows()) != 0 {
		t.Errorf("search Brim: names %v, rows %+v", names, b.searchRows())
	}

	// As of the transaction before the notes, only the price was there to find, and its link
	// stays in that past.
	b.show(fmt.Sprintf("#/search/%s?tx=%d", "EU%20pricing", before))
	if rows := b.searchRows(); len(rows) != 1 || rows[0].Ref != "Klarveld.price_per_seat@2" || rows[0].Href != fmt.Sprintf("#/subject/Klarveld?tx=%d", before) {
		t.Errorf("as of tx %d: %+v, want Klarveld's price alone", before, rows)
	}
	b.show("#/")

	// A text the language must quote, and one it refuses: the page says so, and runs nothing.
	b.searchBox(`say "yearly" \ billed`, "search")
	if rows := b.searchRows(); len(rows) != 1 || rows[0].Ref != "Klarveld.pricing_note@1" {
		t.Errorf("a quoted text: %+v", rows)
	}
	b.searchBox("the of", "search")
	var errText string
	b.eval(`(document.querySelector('#content .error') || {}).textContent || ''`, &errText)
	if !strings.Contains(errText, "no word to search for") {
		t.Errorf("a text of stop words: error %q", errText)
	}
	b.clean()

	// Only what the principal may see: worker-3's private claim is found by worker-3 alone.
	for who, want := range map[string]int{"worker-7": 0, "worker-3": 1} {
		b := newBrowser(t)
		b.signIn(tm.http.URL, tm.tokens[who])
		b.searchBox("secret discount", "search")
		if rows := b.searchRows(); len(rows) != want {
			t.Errorf("%s: search secret discount: %+v, want %d rows", who, rows, want)
		}
		if got := strings.Contains(b.everything(), "secret-discount-7431"); got != (want == 1) {
			t.Errorf("%s: the page holds the private value: %v", who, got)
		}
		b.clean()
	}
}
