package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/text/unicode/norm"

	"github.com/mql-dev/mql"
	render "github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// The tools' inputs. None has a field naming the principal: the server acts as its own.

// AssertInput is the input of the assert tool.
type AssertInput struct {
	Subject    string        `json:"subject"`
	Predicate  string        `json:"predicate"`
	Value      any           `json:"value"`
	ValueType  string        `json:"value_type,omitempty"`
	Source     string        `json:"source,omitempty"`
	Sources    []SourceInput `json:"sources,omitempty"`
	Confidence *float64      `json:"confidence,omitempty"`
	Kind       string        `json:"kind,omitempty"`
	ValidFrom  string        `json:"valid_from,omitempty"`
	ValidUntil string        `json:"valid_until,omitempty"`
	SeenBy     []string      `json:"seen_by,omitempty"`
	Vector     []float32     `json:"vector,omitempty"`
}

// SourceInput is one piece of evidence named by an assert.
type SourceInput struct {
	ID       string `json:"id"`
	Excerpt  string `json:"excerpt,omitempty"`
	URI      string `json:"uri,omitempty"`
	Revision string `json:"revision,omitempty"`
}

// RevokeInput is the input of the revoke tool.
type RevokeInput struct {
	Claim      string `json:"claim"`
	Because    string `json:"because,omitempty"`
	ReplacedBy string `json:"replaced_by,omitempty"`
}

// DeriveInput is the input of the derive tool.
type DeriveInput struct {
	Artifact   string   `json:"artifact"`
	From       []string `json:"from"`
	Confidence *float64 `json:"confidence,omitempty"`
	SeenBy     []string `json:"seen_by,omitempty"`
	Run        string   `json:"run,omitempty"`
}

// OutcomeInput is the input of the outcome tool.
type OutcomeInput struct {
	Run     string `json:"run"`
	Result  string `json:"result"`
	Because string `json:"because,omitempty"`
}

// ReviewInput is the input of the review tool.
type ReviewInput struct {
	Artifact string `json:"artifact"`
	Because  string `json:"because,omitempty"`
}

// QueryInput is the input of the query tool.
type QueryInput struct {
	Statement string `json:"statement"`
	Run       string `json:"run,omitempty"`
}

// ContextInput is the input of the context tool: subjects or a question, exactly one.
type ContextInput struct {
	Subjects []string `json:"subjects,omitempty"`
	Question string   `json:"question,omitempty"`
	Budget   int      `json:"budget,omitempty"`
	Run      string   `json:"run,omitempty"`
}

// SearchInput is the input of the search tool.
type SearchInput struct {
	Text    string    `json:"text,omitempty"`
	On      []string  `json:"on,omitempty"`
	Vector  []float32 `json:"vector,omitempty"`
	Signals []string  `json:"signals,omitempty"`
	Limit   int       `json:"limit,omitempty"`
	History bool      `json:"history,omitempty"`
	Run     string    `json:"run,omitempty"`
}

// WhyInput is the input of the why tool.
type WhyInput struct {
	Ref string `json:"ref"`
	Run string `json:"run,omitempty"`
}

// ImpactInput is the input of the impact tool.
type ImpactInput struct {
	Ref   string `json:"ref"`
	Depth int    `json:"depth,omitempty"`
}

// Shapes of names and references: a name is letters and digits of any script, _ : / and
// single dashes between them, starting with a letter or _, as the library and the language
// accept (the language joins runs with single dashes and never ends a name with one), so
// anything written through a tool can be named in a query. The patterns say it with negated
// ASCII ranges rather than \p{L}, which Python's re and ECMAScript without the u flag do not
// read, so that a client validating with them agrees: every ASCII character but letters,
// digits and _ : / is excluded (with the C1 controls), and the library judges the rest of
// Unicode (a symbol such as € is refused there, with its own message).
const (
	nameStart      = `[^\x00-\x40\x5b-\x5e\x60\x7b-\x9f]`
	nameRest       = `[^\x00-\x2e\x3b-\x40\x5b-\x5e\x60\x7b-\x9f]`
	ident          = nameStart + nameRest + `*(-` + nameRest + `+)*`
	namePattern    = `^` + ident + `$`
	versionPattern = `^` + ident + `\.` + ident + `@[1-9][0-9]*$`
	nodePattern    = `^` + ident + `(\.` + ident + `)?(@[1-9][0-9]*)?$`
	artifactRefPat = `^` + ident + `(@[1-9][0-9]*)?$`
	subjectPattern = `^(\*|` + ident + `)$`
	keyPattern     = `^(\*|` + ident + `)(\.(\*|` + ident + `))?$`
	timePattern    = `^[0-9]{4}-[0-9]{2}-[0-9]{2}([Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2}))?$`
)

// toolAdder is what addTools registers the tools with: an *mcp.Server, or toolNames.
type toolAdder interface {
	AddTool(t *mcp.Tool, h mcp.ToolHandler)
}

// ToolNames are the names of the tools every server offers (New): for what must name each of
// them, such as the labels of mql serve's metrics, so that a tool added here cannot be missed
// there.
func ToolNames() []string {
	var n toolNames
	(&server{}).addTools(&n)
	return n
}

// toolNames collects the names of the tools registered with it.
type toolNames []string

func (n *toolNames) AddTool(t *mcp.Tool, _ mcp.ToolHandler) { *n = append(*n, t.Name) }

func (s *server) addTools(srv toolAdder) {
	f := false
	write := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, DestructiveHint: &f, OpenWorldHint: &f}
	}
	read := func(title string) *mcp.ToolAnnotations {
		return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &f}
	}

	addTool(srv, &mcp.Tool{
		Name:        "assert",
		Annotations: write("Assert a claim"),
		Description: `Record a claim Subject.predicate = value in the shared memory, made by you (` + s.principal + `). ` +
			`A new claim supersedes the live claim of the same Subject.predicate unless it ranks lower (inferred < observed < confirmed); a lower-ranked, disagreeing claim is kept as contested, never silently live. ` +
			`Name the source you read it from: a claim with a source is observed, one without is inferred. ` +
			`Nothing is overwritten: the answer gives the new version's reference (Subject.predicate@N) and its state (live, contested, …) and what it supersedes. ` +
			`Example: {"subject":"Klarveld","predicate":"price_per_seat","value":44,"source":"https://klarveld.example/pricing","confidence":0.9}.`,
		InputSchema: schemaFor[AssertInput](func(p map[string]*jsonschema.Schema) {
			p["subject"].Description = `The entity the claim is about, e.g. "Klarveld". Letters and digits of any script and _ : /, joined by single dashes; starts with a letter or _.`
			p["subject"].Pattern = namePattern
			p["predicate"].Description = `The property, e.g. "price_per_seat", "region", "soc2". Same shape as subject; no dot.`
			p["predicate"].Pattern = namePattern
			p["value"] = &jsonschema.Schema{
				Types: []string{"string", "number", "boolean"},
				Description: `The value: a JSON string, number or boolean (e.g. 44, "EU", true). It must have the type of the first claim of that predicate you may see (any type if you see none), so send numbers as numbers. ` +
					`For a time or a reference to another subject, claim or artifact, send a string and set value_type.`,
			}
			p["value_type"].Description = `How to read value; default: its JSON type (string, number, bool). ` +
				`"time": value is a date "2027-01-01" or an RFC 3339 time "2027-01-01T10:00:00Z". ` +
				`"ref": value names a subject ("Brimsole"), a claim ("Brimsole.price_per_seat@2") or an artifact ("plan:pick-vendor").`
			p["value_type"].Enum = []any{"string", "number", "bool", "time", "ref"}
			p["source"].Description = `The id of the evidence this claim was read from: a URL, or a document id with its revision, e.g. "src:Klarveld:pricing:2026-11". Shorthand for sources: [{"id": …}].`
			p["source"].MinLength = jsonschema.Ptr(1)
			p["sources"].Description = `The evidence, with details. A source id already recorded must come with the same excerpt, uri and revision (or none of them); give a new id for a new revision.`
			it := p["sources"].Items.Properties
			it["id"].Description = `The source's id, as in source.`
			it["id"].MinLength = jsonschema.Ptr(1)
			it["excerpt"].Description = `The exact text the claim was read from.`
			it["uri"].Description = `Where the source can be found.`
			it["uri"].Format = "uri"
			it["revision"].Description = `The source's revision, version or retrieval date.`
			p["confidence"].Description = `Your confidence that the claim is true, from 0 to 1; default 1.`
			p["confidence"].Minimum, p["confidence"].Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(1.0)
			p["kind"].Description = `How you obtained it: "observed" (read from a source) or "inferred" (your own conclusion). Default: observed when a source is named, else inferred. A claim becomes "confirmed" only when a user confirms it.`
			p["kind"].Enum = []any{"observed", "inferred"}
			p["valid_from"].Description = `When the claim starts to hold: a date "2027-01-01" (midnight UTC) or an RFC 3339 time. Omit if it holds from now.`
			p["valid_from"].Pattern = timePattern
			p["valid_until"].Description = `When the claim stops holding, e.g. a certificate's expiry: a date "2027-01-01" (midnight UTC) or an RFC 3339 time. After it the claim is expired by itself.`
			p["valid_until"].Pattern = timePattern
			p["seen_by"].Description = `Principals who alone (with the store's owner) may see this claim; omit it for a claim visible to everyone. It must include your own name (` + s.principal + `): you write only what you may see.`
			p["seen_by"].Items.Pattern = namePattern
			p["vector"].Description = `The claim's embedding, if you have one (the server may embed claims itself): the numbers your embedding model gives for its text, of the dimension of the store's other vectors (the first one fixes it). A search with a vector ranks claims by its similarity to theirs.`
			p["vector"].MinItems = jsonschema.Ptr(1)
		}),
	}, s.assert, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "revoke",
		Annotations: write("Revoke a claim version"),
		Description: `Declare one exact claim version no longer valid: a hard invalidation, recorded with who (you), when, why and what replaced it. ` +
			`You may revoke your own claims; revoking another principal's needs the revoke right. ` +
			`To record a new value, just assert it (it supersedes the old one); revoke when a version was wrong, and name the version that replaces it if there is one. ` +
			`Artifacts derived from the revoked version then need review (see impact). Find version numbers with context, why or query "history Subject.predicate".`,
		InputSchema: schemaFor[RevokeInput](func(p map[string]*jsonschema.Schema) {
			p["claim"].Description = `The exact version to revoke, Subject.predicate@N, e.g. "Klarveld.price_per_seat@2".`
			p["claim"].Pattern = versionPattern
			p["because"].Description = `Why it is no longer valid, e.g. "misread the pricing page".`
			p["replaced_by"].Description = `Another version of the same Subject.predicate that holds instead, e.g. "Klarveld.price_per_seat@3".`
			p["replaced_by"].Pattern = versionPattern
		}),
	}, s.revoke, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "derive",
		Annotations: write("Derive an artifact"),
		Description: `Record an artifact (a plan, decision, belief, summary, spec, test) derived from claims and other artifacts, made by you. ` +
			`Its inputs are pinned to exact versions, so when one of them is superseded or revoked later, the artifact is flagged as needing review (see impact and review). ` +
			`Deriving the same artifact again records a new version that supersedes the previous one seen by the same principals. Its effective confidence is capped by its inputs'.`,
		InputSchema: schemaFor[DeriveInput](func(p map[string]*jsonschema.Schema) {
			p["artifact"].Description = `The artifact's name, without "." or "@", e.g. "plan:pick-vendor" or "decision:vendor".`
			p["artifact"].Pattern = namePattern
			p["from"].Description = `What it rests on: claim keys "Subject.predicate" (their live version now), claim versions "Subject.predicate@N", or artifacts "name" (latest version) or "name@N".`
			p["from"].MinItems = jsonschema.Ptr(1)
			p["from"].Items.Pattern = nodePattern
			p["confidence"].Description = `Your confidence in it, from 0 to 1; default 1.`
			p["confidence"].Minimum, p["confidence"].Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(1.0)
			p["seen_by"].Description = `Principals who alone (with the owner) may see it; it must include your own name (` + s.principal + `). Default: everyone, or, when an input is restricted, the principals who can see every input.`
			p["seen_by"].Items.Pattern = namePattern
			p["run"].Description = `Your run whose decision this artifact records (e.g. "r-17"): its from list is what the decision cites. Absent: no run.`
			p["run"].Pattern = namePattern
		}),
	}, s.derive, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "outcome",
		Annotations: write("Record how a run ended"),
		Description: `Record how one of your runs (an episode or decision cycle you read for with a run argument) ended: succeeded, failed, or declined (you lacked the evidence to act). ` +
			`With what each read served the run and what its decisions cited, this tells a memory failure (the run was served a claim that was stale at its decision, or revoked since) from a failure downstream of the memory.`,
		InputSchema: schemaFor[OutcomeInput](func(p map[string]*jsonschema.Schema) {
			p["run"].Description = `The run's name, as given to the reads, e.g. "r-17".`
			p["run"].Pattern = namePattern
			p["result"].Description = `How it ended.`
			p["result"].Enum = []any{"succeeded", "failed", "declined"}
			p["because"].Description = `Why, e.g. "paid more than the quote".`
		}),
	}, s.outcome, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "review",
		Annotations: write("Review an artifact"),
		Description: `Record that you looked at an artifact again after one of its inputs changed and it still holds; this clears its needs-review flag until an input changes again. ` +
			`If it no longer holds, derive it again from the current claims instead.`,
		InputSchema: schemaFor[ReviewInput](func(p map[string]*jsonschema.Schema) {
			p["artifact"].Description = `The artifact: "name" for its latest version, or "name@N".`
			p["artifact"].Pattern = artifactRefPat
			p["because"].Description = `Why it still holds, e.g. "re-checked against the new price".`
		}),
	}, s.review, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "query",
		Annotations: read("Query the memory"),
		Description: `Run read statements of the mql language and get their results as JSON (one object per statement, as "mql --format json" prints). ` +
			`Reads: live PATTERN [where value OP VALUE, ...]; search "TEXT" [on PATTERN, ...] [limit N] [history]; find ?VARS where CONDS [order by ?VAR [desc]] [limit N]; why NODE; revoked-by Subject.predicate@N; impact NODE [depth N]; history Subject.predicate | ARTIFACT; conflicts [Subjects]; beliefs PATTERN [gate LOW HIGH]; context Subjects | for "QUESTION" [budget N]; stats; run NAME (what was served to your run, what it decided, how it ended); runs [since TIME]. ` +
			`Any read may start with "as of 2026-11-29T10:00:00Z" or "as of tx 42" to read the past. You always read as yourself (` + s.principal + `); writes are refused here, use the other tools. ` +
			`Examples: "live Klarveld", "live *.soc2 where value = true", "find ?v, ?p where ?v.soc2 = true, ?v.region = \"EU\", ?v.price_per_seat = ?p order by ?p limit 1", "history Klarveld.price_per_seat", "conflicts". ` +
			`Separate several statements with ";". The full grammar is the resource mql://language. Errors read query:LINE:COL: message.`,
		InputSchema: schemaFor[QueryInput](func(p map[string]*jsonschema.Schema) {
			p["statement"].Description = `One or more mql read statements, separated by ";" or newlines; strings in double quotes.`
			p["statement"].MinLength = jsonschema.Ptr(1)
			p["run"].Description = `Your run (one episode or decision cycle, a name such as "r-17"): every read that serves claims (live, find, why, revoked-by, impact, history, conflicts, beliefs, context, search) also records, for that run, which versions it served you, as "for run NAME" does. Absent: nothing is recorded.`
			p["run"].Pattern = namePattern
		}),
	}, s.query, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "context",
		Annotations: read("Working context for subjects or a question"),
		Description: `Get the compact working context to reason with about some subjects, or about a question: one line per subject with its live claims only, e.g. ` +
			`Klarveld: price_per_seat=89 @2, region="EU" @1, soc2=true @1 (0.80) — "@2" means the claim Klarveld.price_per_seat@2, a number in parentheses an effective confidence below 1. ` +
			`Give subjects or a question, not both. With subjects, lines come in the order asked; with a question, the live claims that best match it (as the search tool finds them), the best subject first, each line holding that subject's matching claims. ` +
			`Lines are added within the token budget; a last line names the subjects left out. Call it before reasoning, and cite the claim references in what you write.`,
		InputSchema: schemaFor[ContextInput](func(p map[string]*jsonschema.Schema) {
			p["subjects"].Description = `The subjects, most important first, e.g. ["Klarveld", "Brimsole"]; ["*"] for every subject. Absent when a question is given.`
			p["subjects"].MinItems = jsonschema.Ptr(1)
			p["subjects"].Items.Pattern = subjectPattern
			p["question"].Description = `A question or some words, at most 4096 bytes, e.g. "EU pricing for the team plan": the context is the live claims that best match it. Absent when subjects are given.`
			p["question"].MinLength = jsonschema.Ptr(1)
			p["budget"].Description = `The token budget for the text (1 token ≈ 4 bytes); 0 or absent for no limit.`
			p["budget"].Minimum = jsonschema.Ptr(0.0)
			p["run"].Description = `Your run (one episode or decision cycle, a name such as "r-17"): the read also records, for that run, which claim and artifact versions it served you, so that the run can later be judged (mql "run NAME"). Absent: nothing is recorded.`
			p["run"].Pattern = namePattern
		}),
	}, s.context, contextText)

	addTool(srv, &mcp.Tool{
		Name:        "search",
		Annotations: read("Search the memory by its text"),
		Description: `Find the live claims whose text best matches words or a question, best first, when you do not know their subject: e.g. "EU pricing for the team plan". ` +
			`A claim's text is its subject and predicate (price_per_seat matches "price per seat"), its value when a string, and its sources' excerpts; words match after case folding and English stemming ("pricing" finds "prices", "buy" finds "bought"), and a word of the search that a claim's subject holds weighs more. ` +
			`With a vector (or, on a server with an embedder, the text's own embedding), claims are also ranked by the cosine similarity of their vectors, and the two rankings fused by reciprocal rank. ` +
			`Each row is a claim (as every read gives it) with its score (BM25 by text alone, cosine by vector alone, the fused score with both: comparable within one answer only), the signals that ranked it (text, subject, vector) and matched_terms. Superseded, revoked, expired and contested claims are never answers, unless history is set. Cite the claim references (ref) in what you write.`,
		InputSchema: schemaFor[SearchInput](func(p map[string]*jsonschema.Schema) {
			p["text"].Description = `What to search for: words or a question, at most 4096 bytes. It may be absent when a vector is given.`
			p["vector"].Description = `A query embedding, of the dimension of the store's vectors: ranks claims by the similarity of their vectors to it.`
			p["vector"].MinItems = jsonschema.Ptr(1)
			p["signals"].Description = `The signals to rank by: "text" (BM25), "subject" (with text: the search's words in a claim's subject weigh more) and "vector"; absent: each one the search has the input of.`
			p["signals"].Items.Enum = []any{mql.SignalText, mql.SignalSubject, mql.SignalVector}
			p["on"].Description = `Only claims of keys matching one of these patterns: "Subject", "Subject.*", "*.predicate", "Subject.predicate". Absent: every key.`
			p["on"].Items.Pattern = keyPattern
			p["limit"].Description = `The most rows to give, 1 to 10000; 0 or absent for 20.`
			p["limit"].Minimum = jsonschema.Ptr(0.0)
			p["limit"].Maximum = jsonschema.Ptr(float64(mql.MaxSearchLimit))
			p["history"].Description = `Also give matching versions that are no longer live (superseded, revoked, expired, contested), each with its state, for audits.`
			p["run"].Description = `Your run (one episode or decision cycle, a name such as "r-17"): the read also records, for that run, which claim versions it served you, so that the run can later be judged (mql "run NAME"). Absent: nothing is recorded.`
			p["run"].Pattern = namePattern
		}),
	}, s.search, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "why",
		Annotations: read("Why is it believed"),
		Description: `Explain why a claim or artifact is believed: its provenance tree. For a claim: its sources (with excerpts), who asserted it and how (kind, confidence, the grant behind it), its confirmation or revocation, and the versions it superseded with their own sources. ` +
			`For an artifact: every claim and artifact it rests on, down to their sources, and its last review.`,
		InputSchema: schemaFor[WhyInput](func(p map[string]*jsonschema.Schema) {
			p["ref"].Description = `"Subject.predicate" (its live claim), "Subject.predicate@N" (one version), or an artifact "name" / "name@N".`
			p["ref"].Pattern = nodePattern
			p["run"].Description = `Your run (one episode or decision cycle, a name such as "r-17"): the read also records, for that run, which claim and artifact versions it served you, so that the run can later be judged (mql "run NAME"). Absent: nothing is recorded.`
			p["run"].Pattern = namePattern
		}),
	}, s.why, jsonText)

	addTool(srv, &mcp.Tool{
		Name:        "impact",
		Annotations: read("What depends on it"),
		Description: `List every artifact that depends, directly or transitively, on a claim or artifact, each with the path that links them and its review state ("ok" or "needs review"). ` +
			`Use it after a claim changed or was revoked to find what must be reviewed (review) or derived again (derive).`,
		InputSchema: schemaFor[ImpactInput](func(p map[string]*jsonschema.Schema) {
			p["ref"].Description = `"Subject.predicate@N" (one version), "Subject.predicate" (every version of the key), or an artifact "name" (every version) / "name@N".`
			p["ref"].Pattern = nodePattern
			p["depth"].Description = `How many derivation hops to follow; 0 or absent for no limit.`
			p["depth"].Minimum = jsonschema.Ptr(0.0)
		}),
	}, s.impact, jsonText)
}

// schemaFor infers T's JSON schema (required fields are those without omitempty; no other
// property is allowed) and lets patch add descriptions, enums, patterns and bounds.
func schemaFor[T any](patch func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	for _, p := range sc.Properties {
		// An optional field is left out, not sent as null.
		if i := slices.Index(p.Types, "null"); i >= 0 {
			p.Types = slices.Delete(slices.Clone(p.Types), i, i+1)
			if len(p.Types) == 1 {
				p.Type, p.Types = p.Types[0], nil
			}
		}
	}
	patch(sc.Properties)
	for name, p := range sc.Properties {
		if p.Description == "" {
			panic(fmt.Sprintf("mcpserver: property %s of %T has no description", name, *new(T)))
		}
	}
	return sc
}

// output is what a tool handler returns: the result of its library call, as the statement that
// makes the call would have had it, or the results of the query tool's statements.
type output struct {
	results []*query.Result
	many    bool              // the query tool: {"results": [...]} even for one
	objs    []json.RawMessage // the query tool's results, rendered as they came (results is unused)
}

// addTool registers a typed tool whose handler returns statement results. Arguments that do
// not fit the tool's schema, the handler's errors (mql's message) and a panic become tool
// errors.
func addTool[In any](srv toolAdder, t *mcp.Tool, h func(context.Context, In) (output, error), text func(output, json.RawMessage) string) {
	args := newArgChecker(t.Name, t.InputSchema.(*jsonschema.Schema))
	srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := callTool(ctx, t.Name, args, req.Params.Arguments, h, text)
		if err != nil {
			res = &mcp.CallToolResult{}
			res.SetError(err)
		}
		return res, nil
	})
}

// callTool checks a call's arguments, decodes them and runs the handler.
func callTool[In any](ctx context.Context, tool string, args *argChecker, raw json.RawMessage, h func(context.Context, In) (output, error), text func(output, json.RawMessage) string) (res *mcp.CallToolResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("internal error in %s: %v", tool, p)
		}
	}()
	var in In
	if err := args.check(raw, &in); err != nil {
		return nil, err
	}
	out, err := h(ctx, in)
	if err != nil {
		return nil, err
	}
	var structured json.RawMessage
	if out.many {
		structured, err = json.Marshal(map[string]any{"results": out.objs})
	} else {
		structured, err = resultJSON(out.results[0])
	}
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: text(out, structured)}},
		StructuredContent: structured,
	}, nil
}

func jsonText(_ output, structured json.RawMessage) string { return string(structured) }

// contextText is the context text itself, ready to hand to a model.
func contextText(out output, _ json.RawMessage) string {
	c := out.results[0].Context
	if c.Text == "" {
		return "(no live claims visible for these subjects)\n"
	}
	return c.Text
}

// resultJSON renders a statement result as `mql --format json` does (docs/OUTPUT.md): values
// as JSON scalars beside their type, times in RFC 3339.
func resultJSON(r *query.Result) (json.RawMessage, error) { return render.JSON(r) }

// one is the output of a tool that made one library call: its result, as the statement that
// makes the same call would have had it (query.ResultOfAssert, …).
func one(r *query.Result) output { return output{results: []*query.Result{r}} }

// reader reads as the principal, for run ("" for none): what it serves is then recorded for the
// run.
func (s *server) reader(run string) mql.Reader {
	r := s.act.Reader()
	if run != "" {
		r = r.ForRun(run)
	}
	return r
}

func (s *server) assert(ctx context.Context, in AssertInput) (output, error) {
	v, err := toValue(in.Value, in.ValueType)
	if err != nil {
		return output{}, err
	}
	spec := mql.AssertSpec{
		Subject:    in.Subject,
		Predicate:  in.Predicate,
		Value:      v,
		By:         s.principal,
		Confidence: in.Confidence,
		Kind:       mql.Kind(in.Kind),
		SeenBy:     in.SeenBy,
		Vector:     in.Vector,
	}
	srcs := in.Sources
	if in.Source != "" && !slices.ContainsFunc(srcs, func(x SourceInput) bool { return x.ID == in.Source }) {
		srcs = append([]SourceInput{{ID: in.Source}}, srcs...)
	}
	for _, src := range srcs {
		spec.Sources = append(spec.Sources, mql.Source{ID: src.ID, Excerpt: src.Excerpt, URI: src.URI, Revision: src.Revision})
	}
	if in.ValidFrom != "" {
		if spec.ValidFrom, err = parseTime("valid_from", in.ValidFrom); err != nil {
			return output{}, err
		}
	}
	if in.ValidUntil != "" {
		if spec.ValidUntil, err = parseTime("valid_until", in.ValidUntil); err != nil {
			return output{}, err
		}
	}
	embedded, err := query.EmbedClaim(ctx, s.embed, spec)
	if err != nil {
		return output{}, err
	}
	rc, err := s.act.Assert(ctx, embedded)
	if err != nil {
		if in.ValueType == "" && errors.Is(err, mql.ErrValueType) {
			err = fmt.Errorf("%w (with this tool: send the value as that JSON type, or as a string with value_type \"time\" or \"ref\")", err)
		}
		return output{}, err
	}
	return one(query.ResultOfAssert(spec, rc)), nil
}

func (s *server) revoke(ctx context.Context, in RevokeInput) (output, error) {
	c, err := mql.ParseClaimRef(in.Claim)
	if err != nil {
		return output{}, err
	}
	spec := mql.RevokeSpec{Ref: c, By: s.principal, Because: in.Because}
	if in.ReplacedBy != "" {
		if spec.ReplacedByRef, err = mql.ParseClaimRef(in.ReplacedBy); err != nil {
			return output{}, err
		}
	}
	rc, err := s.act.Revoke(ctx, spec)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfRevoke(spec, rc)), nil
}

func (s *server) derive(ctx context.Context, in DeriveInput) (output, error) {
	spec := mql.DeriveSpec{Artifact: in.Artifact, By: s.principal, Confidence: in.Confidence, SeenBy: in.SeenBy, Run: in.Run}
	for _, f := range in.From {
		n, err := mql.ParseNodeRef(f)
		if err != nil {
			return output{}, err
		}
		spec.FromRefs = append(spec.FromRefs, n)
	}
	rc, err := s.act.Derive(ctx, spec)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfDerive(spec, rc)), nil
}

func (s *server) review(ctx context.Context, in ReviewInput) (output, error) {
	a, err := mql.ParseArtifactRef(in.Artifact)
	if err != nil {
		return output{}, err
	}
	spec := mql.ReviewSpec{Ref: a, By: s.principal, Because: in.Because}
	rc, err := s.act.Review(ctx, spec)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfReview(spec, rc)), nil
}

func (s *server) outcome(ctx context.Context, in OutcomeInput) (output, error) {
	spec := mql.OutcomeSpec{Run: in.Run, Result: mql.OutcomeResult(in.Result), By: s.principal, Because: in.Because}
	rc, err := s.act.Outcome(ctx, spec)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfOutcome(spec, rc)), nil
}

func (s *server) why(ctx context.Context, in WhyInput) (output, error) {
	n, err := mql.ParseNodeRef(in.Ref)
	if err != nil {
		return output{}, err
	}
	node, err := s.reader(in.Run).WhyRef(ctx, n)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfWhy(n, in.Run, node)), nil
}

func (s *server) impact(ctx context.Context, in ImpactInput) (output, error) {
	n, err := mql.ParseNodeRef(in.Ref)
	if err != nil {
		return output{}, err
	}
	imp, err := s.reader("").ImpactRef(ctx, n, in.Depth)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfImpact(n, in.Depth, imp)), nil
}

func (s *server) search(ctx context.Context, in SearchInput) (output, error) {
	opts := mql.SearchOptions{Vector: in.Vector, Signals: in.Signals, Limit: in.Limit, History: in.History}
	for _, p := range in.On {
		// "Subject" is every predicate of the subject, as in the language.
		if !strings.Contains(p, ".") {
			p += ".*"
		}
		opts.On = append(opts.On, p)
	}
	embedded, err := query.EmbedSearch(ctx, s.embed, in.Text, opts)
	if err != nil {
		return output{}, err
	}
	res, err := s.reader(in.Run).Search(ctx, in.Text, embedded)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfSearch(in.Text, opts, in.Run, res)), nil
}

func (s *server) context(ctx context.Context, in ContextInput) (output, error) {
	switch {
	case in.Question != "" && len(in.Subjects) > 0:
		return output{}, fmt.Errorf("context: %w: give subjects or a question, not both", mql.ErrInvalid)
	case in.Question != "":
		c, err := s.reader(in.Run).ContextFor(ctx, in.Question, in.Budget)
		if err != nil {
			return output{}, err
		}
		return one(query.ResultOfContextFor(in.Question, in.Budget, in.Run, c)), nil
	case len(in.Subjects) == 0:
		return output{}, fmt.Errorf(`context: %w: give the subjects (["*"] for every subject) or a question`, mql.ErrInvalid)
	}
	c, err := s.reader(in.Run).Context(ctx, in.Subjects, in.Budget)
	if err != nil {
		return output{}, err
	}
	return one(query.ResultOfContext(in.Subjects, in.Budget, in.Run, c)), nil
}

// query runs read statements only: a script with any write is refused before anything runs.
func (s *server) query(ctx context.Context, in QueryInput) (output, error) {
	script, err := query.Parse("query", in.Statement)
	if err != nil {
		return output{}, err
	}
	if len(script.Stmts) == 0 {
		return output{}, fmt.Errorf("query: no statement; give a read such as \"live Klarveld\" or \"stats\"")
	}
	if len(script.Stmts) > s.lim.Statements {
		return output{}, fmt.Errorf("query: %w: %d statements, and at most %d run in one call (mql serve --max-statements): none ran; send fewer in each call", errLimit, len(script.Stmts), s.lim.Statements)
	}
	for _, st := range script.Stmts {
		run, ok := query.ReadFor(st)
		if !ok {
			kind := query.KindOf(st)
			what, use := "a write", "it is not available through this server"
			switch {
			case query.IsControl(st):
				what, use = "transaction control", "each write tool call is a transaction of its own"
			case kind == "assert", kind == "revoke", kind == "derive", kind == "review", kind == "outcome":
				use = "use the " + kind + " tool"
			}
			return output{}, fmt.Errorf("%s: %s is %s; the query tool runs only reads (live, find, why, revoked-by, impact, history, conflicts, beliefs, context, search, stats, run, runs, principals, grants, subjects, predicates, artifacts, sources, describe): %s", st.Pos(), kind, what, use)
		}
		// A statement made for one run in a call for another would record its retrieval for
		// one of them only; which one the caller meant is not for the server to guess.
		if run != "" && in.Run != "" && run != norm.NFC.String(in.Run) {
			return output{}, fmt.Errorf("%s: the statement is for run %s, and the call names run %s: give one run, in the statement or in the call", st.Pos(), run, in.Run)
		}
	}
	// Each result is rendered as it comes and the statement's result dropped, so that the call
	// holds no more than the output limit, however many results it asks for.
	out := output{many: true}
	var size int64
	for _, st := range script.Stmts {
		if in.Run != "" {
			query.ForRun(st, in.Run)
		}
		r, err := s.sess.Eval(ctx, st)
		if err != nil {
			return output{}, err
		}
		obj, err := resultJSON(r)
		if err != nil {
			return output{}, err
		}
		if size += int64(len(obj)); size > s.lim.Output {
			return output{}, fmt.Errorf("%s: %w: the results would be over the output limit of %s (mql serve --max-output) with this statement's, after %d statements' results; ask for less (a narrower pattern, limit N, fewer statements in each call), or raise the limit", st.Pos(), errLimit, Bytes(s.lim.Output), len(out.objs))
		}
		out.objs = append(out.objs, obj)
	}
	return out, nil
}

// toValue reads a JSON value as an mql value of the given type ("" for its JSON type).
func toValue(x any, typ string) (mql.Value, error) {
	bad := func(want string) (mql.Value, error) {
		b, _ := json.Marshal(x)
		return mql.Value{}, fmt.Errorf("value %s: invalid input: value_type %q needs %s", b, typ, want)
	}
	switch typ {
	case "":
		switch x := x.(type) {
		case string:
			return mql.String(x), nil
		case bool:
			return mql.Bool(x), nil
		case float64:
			return mql.Number(x), nil
		case json.Number:
			return toValue(string(x), "number")
		}
		b, _ := json.Marshal(x)
		return mql.Value{}, fmt.Errorf("value %s: invalid input: give a string, number or boolean", b)
	case "string":
		if s, ok := x.(string); ok {
			return mql.String(s), nil
		}
		return bad("a JSON string")
	case "number":
		switch x := x.(type) {
		case float64:
			return mql.Number(x), nil
		case json.Number:
			return toValue(string(x), "number")
		case string:
			if n, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err == nil && !math.IsInf(n, 0) && !math.IsNaN(n) {
				return mql.Number(n), nil
			}
		}
		return bad("a number")
	case "bool":
		switch x := x.(type) {
		case bool:
			return mql.Bool(x), nil
		case string:
			if b, err := strconv.ParseBool(x); err == nil {
				return mql.Bool(b), nil
			}
		}
		return bad("true or false")
	case "time":
		if s, ok := x.(string); ok {
			t, err := parseTime("value", s)
			if err != nil {
				return mql.Value{}, err
			}
			return mql.Time(t), nil
		}
		return bad(`a string holding a date "2027-01-01" or an RFC 3339 time "2027-01-01T10:00:00Z"`)
	case "ref":
		if s, ok := x.(string); ok {
			n, err := mql.ParseNodeRef(s)
			if err != nil {
				return mql.Value{}, err
			}
			return mql.Ref(n.String()), nil
		}
		return bad(`a string naming a subject, claim or artifact, e.g. "Brimsole"`)
	}
	return mql.Value{}, fmt.Errorf("value_type %q: invalid input: use string, number, bool, time or ref", typ)
}

// parseTime reads a date (midnight UTC) or an RFC 3339 time, as the language does.
func parseTime(field, s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if t, err := time.Parse("2006-01-02 15:04:05Z07:00", s); err == nil {
		return t.UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: invalid input: give a date 2027-01-01 or an RFC 3339 time 2027-01-01T10:00:00Z", field, s)
}
