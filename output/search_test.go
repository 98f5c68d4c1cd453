package output

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// A search's rows are the claim object every read gives, with the score, the signals and the
// matched terms: the same in each format as testdata/search.*.
func TestSearchGolden(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 5, 0, time.UTC)
	claim := mql.Claim{Ref: "Klarveld.pricing_note@1", Subject: "Klarveld", Predicate: "pricing_note", Version: 1,
		Value: mql.String("EU pricing for the team plan"), ValueType: mql.TypeString, State: mql.Live, Since: at,
		Kind: mql.Observed, Confidence: 1, Effective: 1, By: "worker-3", Sources: []mql.Source{{ID: "src:Klarveld:rev0"}},
		Tx: 5, RecordedAt: at}
	other := claim
	other.Ref, other.Subject, other.Value, other.Tx = "Brimsole.pricing_note@1", "Brimsole", mql.String("US pricing, \"plan\" B"), 6
	r := &query.Result{Kind: "search", Statement: `search "EU pricing plan" limit 2`, Search: &mql.SearchResult{
		Text: "EU pricing plan",
		Hits: []mql.SearchHit{
			{Claim: claim, Score: 1.7260403, Signals: []string{"text"}, Terms: []string{"eu", "price", "plan"}},
			{Claim: other, Score: 0.4117, Signals: []string{"text"}, Terms: []string{"price", "plan"}},
		}}}
	for _, f := range []Format{FormatTable, FormatJSON, FormatCSV} {
		out, err := Render(r, Style{Format: f})
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "search."+string(f))
		if *update {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%s:\n%s\nwant (%s):\n%s", f, out, golden, want)
		}
	}
	// No hits: an empty list, never null.
	empty := &query.Result{Kind: "search", Statement: `search "nothing"`, Search: &mql.SearchResult{Text: "nothing", Hits: []mql.SearchHit{}}}
	out, err := Render(empty, Style{Format: FormatJSON})
	if err != nil || !strings.Contains(out, `"rows": []`) && !strings.Contains(out, `"rows":[]`) {
		t.Errorf("an empty search in JSON: %s, %v", out, err)
	}
}
