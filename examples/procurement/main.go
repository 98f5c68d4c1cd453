// Command procurement reproduces "shared graph memory vs passing transcripts": a team of worker
// agents researches vendors, one worker per vendor, and an orchestrator answers
//
//	Which SOC2-compliant vendor with an EU data region has the cheapest price per seat?
//
// Each worker reads its vendor's pricing page, keeps a transcript full of operational noise, and
// writes three typed claims (price_per_seat, region, soc2) into one shared mql store. In
// transcript mode the orchestrator's context is the task plus every transcript and a
// deterministic reader takes the first price it finds per vendor; in graph mode the context is
// mql's compact rendering of the live claims and the answer comes from a find query. Mid-run the
// winner's page changes ($44 → $89 per seat) and a late worker re-checks it and reports in both
// modes. The program sweeps team sizes 2..12, prints context size and answers per mode, and the
// audit trail of the changed price.
//
// With -llm-url it also sends both contexts to an OpenAI-compatible chat completions endpoint
// (llama.cpp, Ollama, vLLM, …) and reports the model's answers; without it nothing leaves the
// process.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/examples/internal/exflag"
	"github.com/mql-dev/mql/examples/internal/exstore"
)

func main() {
	exflag.Exit("procurement", run(context.Background(), os.Args[1:], os.Stdout, os.Stderr), os.Stderr)
}

// task is the orchestrator's question, verbatim in both modes.
const task = "Task: which SOC2-compliant vendor with an EU data region has the cheapest price per seat? " +
	"Answer with the vendor's name and its price per seat."

type vendor struct {
	Name   string
	Price  int
	Region string // EU, US or APAC
	SOC2   bool
}

// vendors in the order workers are added. Klarveld is the cheapest eligible vendor until its
// page changes to $89; then Brimsole ($66) is. The others make every constraint matter: the
// cheapest overall (Sorbeck) has no SOC2, the cheapest SOC2 (Dunmarra) is in the US, and the
// cheapest EU vendor after Klarveld (Velloran) has no SOC2.
var vendors = []vendor{
	{"Klarveld", 44, "EU", true},
	{"Brimsole", 66, "EU", true},
	{"Sorbeck", 29, "US", false},
	{"Dunmarra", 38, "US", true},
	{"Velloran", 41, "EU", false},
	{"Quessant", 72, "EU", true},
	{"Ostrova", 58, "APAC", true},
	{"Harrowgate", 95, "EU", true},
	{"Tamsin", 35, "APAC", false},
	{"Lindqvist", 81, "EU", true},
	{"Corvane", 49, "US", true},
	{"Pellworth", 69, "EU", true},
}

// revisedPrice is Klarveld's price after its page changes mid-run.
const revisedPrice = 89

var cities = map[string]string{"EU": "Frankfurt", "US": "Virginia", "APAC": "Singapore"}

// page is a vendor's pricing page as it exists at a revision: one paragraph.
func page(v vendor, rev int) string {
	soc2 := v.Name + " has not completed a SOC 2 audit."
	if v.SOC2 {
		soc2 = v.Name + " holds a SOC 2 Type II report, available under NDA."
	}
	return fmt.Sprintf("[%s pricing page, revision %d] %s Team plan: $%d per seat per month, billed annually. "+
		"Customer data is stored in our %s region (%s). %s\n", v.Name, rev, v.Name, v.Price, v.Region, cities[v.Region], soc2)
}

// noise is what a browsing agent's transcript is mostly made of: one step is ~230 characters.
var noise = []string{
	"Tool call: open_page(https://%s.example/pricing). Cookie banner dismissed. Retried once after a 429 (rate limited); waited 2s and retried. Page rendered client-side, so re-fetched it with JavaScript enabled. Status 200 in 1.8s.\n",
	"Note to self: the navigation menu, the footer and a newsletter pop-up are not relevant to the task. Scrolled past a customer-logo carousel and an autoplaying product video. Closed a chat widget that opened unprompted, twice in a row.\n",
	"Tool call: extract_text(selector=\"main\"). Extraction returned 14 blocks; 11 are marketing copy. Re-ran with a narrower selector to drop the testimonials, a comparison table for an enterprise tier and an upcoming webinar banner.\n",
	"Observation: %s's site links to a status page, a careers page, a blog and a partner directory. None of them are needed here. Declined a prompt to book a demo. Skipped a 12-minute explainer video and its auto transcript.\n",
	"Tool call: screenshot(full_page=true) for the audit log. The image is 4.1 MB; stored it under artifacts/. Tried the print stylesheet to get cleaner text, but it hides the main table on this site, so reverted to the rendered DOM.\n",
	"Thinking: the question needs three facts per vendor and nothing else. Still scanning the page for fine print. Found a FAQ accordion and expanded all nine items. They cover invoicing, refunds and onboarding, and nothing more.\n",
}

const stepsEachSide = 6

// transcript is a worker's full report: noise before the facts, the page, noise after.
func transcript(worker string, v vendor, rev int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s transcript (vendor %s) ---\n", worker, v.Name)
	step := func(i int) {
		s := noise[i%len(noise)]
		if strings.Contains(s, "%s") {
			s = fmt.Sprintf(s, strings.ToLower(v.Name))
		}
		b.WriteString(s)
	}
	for i := range stepsEachSide {
		step(i)
	}
	b.WriteString(page(v, rev))
	for i := range stepsEachSide {
		step(i + 3)
	}
	b.WriteString("Conclusion: recorded price, region and SOC2 status.\n")
	return b.String()
}

// ---------------------------------------------------------------------------------------------
// The deterministic transcript reader: scan top-down, keep the first page found per vendor.

var pageRE = regexp.MustCompile(`\[(\w+) pricing page, revision \d+\][^\n]*?\$(\d+) per seat[^\n]*?in our (\w+) region[^\n]*`)

type answer struct {
	Vendor string
	Price  float64
}

func (a answer) String() string {
	if a.Vendor == "" {
		return "(none)"
	}
	return fmt.Sprintf("%s $%g", a.Vendor, a.Price)
}

func readTranscripts(text string) answer {
	seen := map[string]bool{}
	var best answer
	for _, m := range pageRE.FindAllStringSubmatch(text, -1) {
		name := m[1]
		if seen[name] {
			continue // first occurrence wins: nothing in the text says which revision is current
		}
		seen[name] = true
		price, _ := strconv.Atoi(m[2])
		soc2 := strings.Contains(m[0], "holds a SOC 2")
		if m[3] == "EU" && soc2 && (best.Vendor == "" || float64(price) < best.Price) {
			best = answer{name, float64(price)}
		}
	}
	return best
}

// truth is the correct answer for the vendors as they are now.
func truth(vs []vendor) answer {
	var best answer
	for _, v := range vs {
		if v.Region == "EU" && v.SOC2 && (best.Vendor == "" || float64(v.Price) < best.Price) {
			best = answer{v.Name, float64(v.Price)}
		}
	}
	return best
}

// ---------------------------------------------------------------------------------------------
// One run of the team.

// outcome is what one team size measured, before and after the late re-check.
type outcome struct {
	Workers int
	// Transcript mode.
	TranscriptChars  [2]int // before, after the late report
	TranscriptTokens [2]int
	TranscriptAnswer [2]answer
	// Graph mode.
	GraphChars  [2]int
	GraphTokens [2]int
	GraphAnswer [2]answer
	Truth       [2]answer

	TranscriptContext string // after
	GraphContext      string // after
	Audit             string // why + impact of the changed price
}

// clock is a deterministic transaction clock: every call is one second later.
func clock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Second)
		return t
	}
}

func source(v vendor, rev int) mql.Source {
	return mql.Source{
		ID:       fmt.Sprintf("src:%s:rev%d", v.Name, rev),
		Excerpt:  strings.TrimSpace(page(v, rev)),
		URI:      fmt.Sprintf("https://%s.example/pricing", strings.ToLower(v.Name)),
		Revision: fmt.Sprintf("rev%d", rev),
	}
}

// report writes the three typed claims a worker read from its page, in one transaction.
func report(ctx context.Context, db *mql.DB, worker string, v vendor, rev int) error {
	src := []mql.Source{source(v, rev)}
	_, err := db.AssertBatch(ctx, worker, []mql.AssertSpec{
		{Subject: v.Name, Predicate: "price_per_seat", Value: mql.Number(float64(v.Price)), By: worker, Sources: src},
		{Subject: v.Name, Predicate: "region", Value: mql.String(v.Region), By: worker, Sources: src},
		{Subject: v.Name, Predicate: "soc2", Value: mql.Bool(v.SOC2), By: worker, Sources: src},
	})
	return err
}

// query is the orchestrator's question as a find:
//
//	find ?v, ?p where ?v.soc2 = true, ?v.region = "EU", ?v.price_per_seat = ?p order by ?p limit 1
var query = mql.FindQuery{
	Select: []string{"?v", "?p"},
	Where: []mql.Cond{
		{Subject: mql.Var("v"), Predicate: "soc2", Op: "=", Object: mql.Const(mql.Bool(true))},
		{Subject: mql.Var("v"), Predicate: "region", Op: "=", Object: mql.Const(mql.String("EU"))},
		{Subject: mql.Var("v"), Predicate: "price_per_seat", Op: "=", Object: mql.Var("p")},
	},
	OrderBy: []mql.Order{{Var: "?p"}},
	Limit:   1,
}

// answerRun names the orchestrator's run that answers the k-th time (0: before the re-check).
func answerRun(k int) string { return fmt.Sprintf("answer-%d", k+1) }

// graphContext is the orchestrator's graph-mode context: the task and the live claims. The
// read is made for the run, which records what it served.
func graphContext(ctx context.Context, db *mql.DB, names []string, run string) (string, error) {
	c, err := db.As("orchestrator").ForRun(run).Context(ctx, names, 1000)
	if err != nil {
		return "", err
	}
	return task + "\n\nCurrent claims (superseded versions excluded; @N is the claim's version):\n" + c.Text, nil
}

func graphAnswer(ctx context.Context, db *mql.DB, run string) (answer, []string, error) {
	res, err := db.As("orchestrator").ForRun(run).Find(ctx, query)
	if err != nil || len(res.Rows) == 0 {
		return answer{}, nil, err
	}
	r := res.Rows[0]
	return answer{r.Values[0].Str, r.Values[1].Num}, r.Claims, nil
}

// team runs n workers, the orchestrator's first answer, the page change, the late re-check and
// the second answer, against one store.
func team(ctx context.Context, db *mql.DB, n int) (outcome, error) {
	out := outcome{Workers: n}
	team := vendors[:n]
	names := make([]string, n)
	for i, v := range team {
		names[i] = v.Name
	}
	for _, p := range append(workerNames(n), "worker-late", "orchestrator") {
		// A reused store may have them already (from an earlier run): keep them as they are.
		_, err := db.AddPrincipal(ctx, mql.PrincipalSpec{Name: p, Type: mql.Agent, By: db.Owner()})
		if err != nil && !errors.Is(err, mql.ErrConflict) {
			return out, err
		}
	}

	// The workers browse concurrently, each writing its claims into the shared store and
	// handing back its transcript.
	transcripts := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, v := range team {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := fmt.Sprintf("worker-%d", i+1)
			transcripts[i] = transcript(worker, v, 0)
			errs[i] = report(ctx, db, worker, v, 0)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return out, err
	}

	measure := func(k int, current []vendor) error {
		text := task + "\n\n" + strings.Join(transcripts, "\n")
		out.TranscriptChars[k], out.TranscriptTokens[k] = len(text), mql.EstimateTokens(text)
		out.TranscriptAnswer[k] = readTranscripts(text)
		gc, err := graphContext(ctx, db, names, answerRun(k))
		if err != nil {
			return err
		}
		out.GraphChars[k], out.GraphTokens[k] = len(gc), mql.EstimateTokens(gc)
		out.Truth[k] = truth(current)
		out.TranscriptContext, out.GraphContext = text, gc
		var claims []string
		if out.GraphAnswer[k], claims, err = graphAnswer(ctx, db, answerRun(k)); err != nil {
			return err
		}
		if k == 0 {
			// The orchestrator records its pick, derived from the claims that answered, as
			// the decision of its run.
			_, err = db.Derive(ctx, mql.DeriveSpec{Artifact: "plan:pick-vendor", From: claims, By: "orchestrator", Run: answerRun(k)})
			if err != nil {
				return err
			}
		}
		// The run ends: right or wrong about the world as it was then.
		result := mql.Succeeded
		if out.GraphAnswer[k] != out.Truth[k] {
			result = mql.Failed
		}
		_, err = db.Outcome(ctx, mql.OutcomeSpec{Run: answerRun(k), Result: result, By: "orchestrator"})
		return err
	}
	if err := measure(0, team); err != nil {
		return out, err
	}

	// Mid-run the winner's page changes; a late worker re-checks it and reports in both modes.
	changed := append([]vendor(nil), team...)
	changed[0].Price = revisedPrice
	transcripts = append(transcripts, transcript("worker-late", changed[0], 1))
	if err := report(ctx, db, "worker-late", changed[0], 1); err != nil {
		return out, err
	}
	if err := measure(1, changed); err != nil {
		return out, err
	}
	var err error
	out.Audit, err = audit(ctx, db, changed[0].Name+".price_per_seat")
	return out, err
}

// memTeam runs a team on a store of its own in memory.
func memTeam(ctx context.Context, n int) (outcome, error) {
	db, err := mql.Open(ctx, "memory:", mql.Options{Clock: clock()})
	if err != nil {
		return outcome{Workers: n}, err
	}
	defer db.Close()
	return team(ctx, db, n)
}

func workerNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("worker-%d", i+1)
	}
	return out
}

// audit renders why the live claim is believed — claim, its source revision, the claim it
// supersedes and that claim's source — and what must be reviewed because it changed.
func audit(ctx context.Context, db *mql.DB, key string) (string, error) {
	why, err := db.Why(ctx, key)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	var walk func(n *mql.Node, indent string)
	walk = func(n *mql.Node, indent string) {
		switch n.Kind {
		case mql.NodeClaim:
			rel := ""
			if n.Relation != "" {
				rel = n.Relation + " "
			}
			fmt.Fprintf(&b, "%s%s%s = %s  (%s, %s by %s, tx %d)\n", indent, rel, n.Claim.Ref, n.Claim.Value, n.Claim.State, n.Claim.Kind, n.Claim.By, n.Claim.Tx)
		case mql.NodeSource:
			ex := n.Source.Excerpt
			if i := strings.Index(ex, " per seat"); i > 0 {
				ex = ex[:i+len(" per seat")] + " …"
			}
			fmt.Fprintf(&b, "%sfrom %s  (revision %s, %s)\n%s  %q\n", indent, n.Source.ID, n.Source.Revision, n.Source.URI, indent, ex)
		}
		for _, c := range n.Children {
			walk(c, indent+"  ")
		}
	}
	walk(why, "")
	if why.Claim.Supersedes != "" {
		imp, err := db.Impact(ctx, why.Claim.Supersedes, 0)
		if err != nil {
			return "", err
		}
		for _, d := range imp.Dependents {
			fmt.Fprintf(&b, "impact of %s: %s %s (via %s)\n", why.Claim.Supersedes, d.Artifact.Ref, d.Artifact.Review, strings.Join(d.Path, " → "))
		}
		// The runs that were served the old version, and what they decided.
		for _, u := range imp.Runs {
			fmt.Fprintf(&b, "served to run %s (%s): decided %s, %s\n", u.Run, u.By, orNone(u.Decisions), u.Outcome)
			reps, err := db.Run(ctx, u.Run)
			if err != nil {
				return "", err
			}
			for _, rep := range reps {
				for _, s := range rep.Served {
					if s.Ref == why.Claim.Supersedes {
						fmt.Fprintf(&b, "  %s: %s when served, %s at its decision, %s now (stale %s)\n", s.Ref, s.WhenServed, s.AtDecision, s.Now, s.Stale)
					}
				}
			}
		}
	}
	return b.String(), nil
}

// ---------------------------------------------------------------------------------------------
// Optional: ask a real model.

type llm struct {
	url, model, key string
	client          *http.Client
}

// endpoint accepts a server root, a /v1 base or the full chat completions URL.
func endpoint(u string) string {
	u = strings.TrimRight(u, "/")
	switch {
	case strings.HasSuffix(u, "/chat/completions"):
		return u
	case strings.HasSuffix(u, "/v1"):
		return u + "/chat/completions"
	}
	return u + "/v1/chat/completions"
}

const systemPrompt = "You are the orchestrator of a team of research agents. Answer the task from the context only. " +
	"Reply with one line: the vendor's name and its price per seat, e.g. \"Acme, $10\"."

func (l llm) ask(ctx context.Context, contextText string) (string, error) {
	body, _ := json.Marshal(map[string]any{
		"model":       l.model,
		"temperature": 0,
		"max_tokens":  200,
		"messages": []map[string]string{
			{"role": "system", "content": systemPrompt},
			{"role": "user", "content": contextText},
		},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint(l.url), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	if l.key != "" {
		req.Header.Set("Authorization", "Bearer "+l.key)
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s: %s", endpoint(l.url), resp.Status, strings.TrimSpace(string(raw)))
	}
	var r struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", fmt.Errorf("%s: reply is not a chat completion: %w", endpoint(l.url), err)
	}
	if len(r.Choices) == 0 {
		return "", fmt.Errorf("%s: reply has no choices", endpoint(l.url))
	}
	return strings.TrimSpace(r.Choices[0].Message.Content), nil
}

// named is the first known vendor the reply names.
func named(reply string) string {
	best, at := "", len(reply)+1
	for _, v := range vendors {
		if i := strings.Index(reply, v.Name); i >= 0 && i < at {
			best, at = v.Name, i
		}
	}
	return best
}

// ---------------------------------------------------------------------------------------------

func mark(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

// config is what the command line asked for.
type config struct {
	minN, maxN int
	store      string
	reuse      bool
	llmURL     string
	llmModel   string
	llmKey     string
	llmN       int
}

// parse reads and checks the command line; a value out of range is refused with its flag, its
// value and the range.
func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("procurement", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.IntVar(&c.minN, "min", 2, fmt.Sprintf("smallest team, 2 to %d", len(vendors)))
	fs.IntVar(&c.maxN, "max", len(vendors), fmt.Sprintf("largest team, -min to %d (one worker per vendor)", len(vendors)))
	fs.StringVar(&c.store, "store", "memory:", "mql store for the largest team (smaller ones use memory:): memory:, a bbolt file path that does not exist yet\n"+
		"(it is created), or postgres://… naming an empty database. An mql store that holds nothing but its genesis is\n"+
		"written into too; anything else is refused before anything is written, and nothing is ever deleted")
	fs.BoolVar(&c.reuse, "reuse", false, "write into a -store that already holds other mql data: the run is rehearsed on an in-memory copy\n"+
		"first, then added on top (principals already recorded are kept, claims become new versions of their keys)")
	fs.StringVar(&c.llmURL, "llm-url", "", "OpenAI-compatible endpoint, http:// or https:// (e.g. http://127.0.0.1:8080/v1), to send both contexts to;\nempty: nothing leaves the process")
	fs.StringVar(&c.llmModel, "llm-model", "local", "model name to send with -llm-url, not empty")
	fs.StringVar(&c.llmKey, "llm-key", "", "bearer token for -llm-url, if the server needs one (no spaces or control characters)")
	fs.IntVar(&c.llmN, "llm-workers", 6, fmt.Sprintf("team size whose contexts are sent with -llm-url, 2 to %d and within -min..-max", len(vendors)))
	if err := exflag.Parse(fs, args); err != nil {
		return c, err
	}
	var check exflag.Check
	check.Int("min", c.minN, 2, len(vendors), "workers")
	check.Int("max", c.maxN, 2, len(vendors), "workers")
	if c.minN > c.maxN {
		check.Failf("-min %d is above -max %d: the sweep runs team sizes -min..-max", c.minN, c.maxN)
	}
	check.Int("llm-workers", c.llmN, 2, len(vendors), "workers")
	if c.llmURL != "" {
		if u, err := url.Parse(c.llmURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			check.Failf("-llm-url %q is not an http:// or https:// URL with a host, such as http://127.0.0.1:8080/v1", c.llmURL)
		}
		if c.llmN >= 2 && c.llmN <= len(vendors) && (c.llmN < c.minN || c.llmN > c.maxN) {
			check.Failf("-llm-workers %d is outside the sweep: give a team size from -min %d to -max %d", c.llmN, c.minN, c.maxN)
		}
	}
	if c.llmModel == "" || strings.ContainsFunc(c.llmModel, unicode.IsControl) {
		check.Failf("-llm-model %q: give a model name, with no control characters", c.llmModel)
	}
	if strings.ContainsFunc(c.llmKey, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		check.Failf("-llm-key: a bearer token has no spaces or control characters")
	}
	return c, check.Err()
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	// The largest team's store is checked, opened and (when it held other data) rehearsed on
	// before any team runs: a store it must not write into refuses the run, not its last step.
	st, err := exstore.Open(ctx, c.store, exstore.Policy{Reuse: c.reuse, ReuseFlag: "-reuse"}, mql.Options{Clock: clock()})
	if err != nil {
		return fmt.Errorf("-store %s: %w", exstore.Redact(c.store), err)
	}
	defer st.Close()
	err = st.Rehearse(ctx, mql.Options{Clock: clock()}, func(db *mql.DB) error {
		_, err := team(ctx, db, c.maxN)
		return err
	})
	if err != nil {
		return fmt.Errorf("-store %s: %w", exstore.Redact(c.store), err)
	}
	if note := st.Note(); note != "" {
		fmt.Fprintln(stderr, note)
	}

	fmt.Fprintln(stdout, task)
	avg := 0
	for _, n := range noise {
		avg += len(strings.ReplaceAll(n, "%s", "klarveld"))
	}
	fmt.Fprintf(stdout, "Each worker's transcript: %d steps of operational noise (~%d chars each), half before and half after its pricing page.\n", 2*stepsEachSide, avg/len(noise))
	fmt.Fprintf(stdout, "Mid-run %s's page changes from $%d to $%d per seat; a late worker re-checks it and reports in both modes.\n\n", vendors[0].Name, vendors[0].Price, revisedPrice)

	var outs []outcome
	for n := c.minN; n <= c.maxN; n++ {
		var o outcome
		var err error
		if n == c.maxN {
			o, err = team(ctx, st.DB, n)
		} else {
			o, err = memTeam(ctx, n)
		}
		if err != nil {
			return fmt.Errorf("team of %d: %w", n, err)
		}
		outs = append(outs, o)
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "workers\tmode\tcontext chars\t~tokens\tanswer before re-check\tanswer after\tcorrect after")
	for _, o := range outs {
		fmt.Fprintf(tw, "%d\ttranscript\t%d → %d\t%d\t%s\t%s\t%s\n", o.Workers, o.TranscriptChars[0], o.TranscriptChars[1], o.TranscriptTokens[1],
			o.TranscriptAnswer[0], o.TranscriptAnswer[1], mark(o.TranscriptAnswer[1] == o.Truth[1]))
		fmt.Fprintf(tw, "%d\tgraph\t%d → %d\t%d\t%s\t%s\t%s\n", o.Workers, o.GraphChars[0], o.GraphChars[1], o.GraphTokens[1],
			o.GraphAnswer[0], o.GraphAnswer[1], mark(o.GraphAnswer[1] == o.Truth[1]))
	}
	tw.Flush()
	first, last := outs[0], outs[len(outs)-1]
	if len(outs) > 1 {
		k := float64(last.Workers - first.Workers)
		fmt.Fprintf(stdout, "Growth per added worker: transcript %+.0f chars, graph %+.0f chars. The late report adds %+d chars to the transcript context and %+d to the graph context (%d workers).\n",
			float64(last.TranscriptChars[1]-first.TranscriptChars[1])/k, float64(last.GraphChars[1]-first.GraphChars[1])/k,
			last.TranscriptChars[1]-last.TranscriptChars[0], last.GraphChars[1]-last.GraphChars[0], last.Workers)
	}
	before := "both modes answer it correctly at every size"
	for _, o := range outs {
		if o.TranscriptAnswer[0] != o.Truth[0] || o.GraphAnswer[0] != o.Truth[0] {
			before = fmt.Sprintf("a mode answers it wrongly with %d workers", o.Workers)
			break
		}
	}
	fmt.Fprintf(stdout, "Correct answer after the change: %s; before it, %s: %s.\n", last.Truth[1], last.Truth[0], before)

	fmt.Fprintf(stdout, "\nGraph-mode context, %d workers, after the re-check:\n%s", last.Workers, indent(last.GraphContext))
	fmt.Fprintf(stdout, "\nAudit trail of the changed price (why %s.price_per_seat):\n%s", vendors[0].Name, indent(last.Audit))

	if c.llmURL == "" {
		return nil
	}
	o := &outs[c.llmN-c.minN]
	l := llm{url: c.llmURL, model: c.llmModel, key: c.llmKey, client: &http.Client{Timeout: 5 * time.Minute}}
	fmt.Fprintf(stdout, "\nModel %q at %s, %d workers, after the re-check (correct: %s):\n", c.llmModel, endpoint(c.llmURL), o.Workers, o.Truth[1])
	tw = tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tcontext chars\tnames\tcorrect\treply")
	for _, m := range []struct{ mode, text string }{{"transcript", o.TranscriptContext}, {"graph", o.GraphContext}} {
		reply, err := l.ask(ctx, m.text)
		if err != nil {
			return fmt.Errorf("%s mode: %w", m.mode, err)
		}
		got := named(reply)
		ok := got == o.Truth[1].Vendor && strings.Contains(reply, strconv.Itoa(int(o.Truth[1].Price)))
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", m.mode, len(m.text), got, mark(ok), oneLine(reply, 100))
	}
	return tw.Flush()
}

func orNone(refs []string) string {
	if len(refs) == 0 {
		return "nothing"
	}
	return strings.Join(refs, ", ")
}

func indent(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}
