package output

import (
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

// The JSON format is a stable interface, documented in docs/OUTPUT.md: one object per
// statement result with its kind, the canonical statement and kind-specific rows, and a few
// kind-specific top-level fields. Change it only compatibly (new fields), and update the
// document with it.

// resultJSON is the object printed for one result.
type resultJSON struct {
	Kind      string `json:"kind"`
	Statement string `json:"statement"`

	Vars      []string     `json:"vars,omitempty"`         // find
	Of        any          `json:"of,omitempty"`           // impact ([]string), history (string)
	Truncated *bool        `json:"truncated,omitempty"`    // impact
	Changes   []mql.Change `json:"changes,omitempty"`      // impact
	Pattern   string       `json:"pattern,omitempty"`      // beliefs
	Entropy   *float64     `json:"entropy_bits,omitempty"` // beliefs
	Gate      *[2]float64  `json:"gate,omitempty"`         // beliefs
	Decision  string       `json:"decision,omitempty"`     // beliefs
	Top       string       `json:"top,omitempty"`          // beliefs
	Text      *string      `json:"text,omitempty"`         // search: the text searched for
	History   bool         `json:"history,omitempty"`      // search ... history
	Runs      []mql.RunUse `json:"runs,omitempty"`         // impact: the runs served a node of Of

	Rows []any `json:"rows"`
}

// stampLayout is every time in JSON: RFC 3339 in UTC with nine digits of fraction, so that
// timestamps have one width and sort as strings.
const stampLayout = "2006-01-02T15:04:05.000000000Z"

// stamp is a time as JSON writes it (stampLayout). The wrappers below put it in the place of
// every time.Time of mql's results, whose own JSON (RFC 3339 with as many digits as needed)
// varies in width.
type stamp time.Time

func (s stamp) MarshalJSON() ([]byte, error) {
	return []byte(`"` + time.Time(s).UTC().Format(stampLayout) + `"`), nil
}

func (s stamp) IsZero() bool { return time.Time(s).IsZero() }

// valueJSON is a value as a JSON scalar: a string, number or bool; times as stamps and
// references as their name.
func valueJSON(v mql.Value) any {
	switch v.Type {
	case mql.TypeString, mql.TypeRef:
		return v.Str
	case mql.TypeNumber:
		return v.Num
	case mql.TypeBool:
		return v.Bool
	case mql.TypeTime:
		return stamp(v.Time)
	}
	return nil
}

// claimJSON is a claim with its value as a JSON scalar beside its type, sources never null,
// and its times as stamps.
type claimJSON struct {
	mql.Claim
	Value      any          `json:"value"`
	ValueType  string       `json:"value_type"`
	Sources    []mql.Source `json:"sources"`
	Since      stamp        `json:"since"`
	RecordedAt stamp        `json:"recorded_at"`
	ValidFrom  stamp        `json:"valid_from,omitzero"`
	ValidUntil stamp        `json:"valid_until,omitzero"`
}

func claimOut(c mql.Claim) *claimJSON {
	out := &claimJSON{Claim: c, Value: valueJSON(c.Value), ValueType: string(c.Value.Type), Sources: c.Sources,
		Since: stamp(c.Since), RecordedAt: stamp(c.RecordedAt), ValidFrom: stamp(c.ValidFrom), ValidUntil: stamp(c.ValidUntil)}
	if out.Sources == nil {
		out.Sources = []mql.Source{}
	}
	return out
}

type artifactJSON struct {
	mql.Artifact
	RecordedAt stamp       `json:"recorded_at"`
	LastReview *reviewJSON `json:"last_review,omitempty"`
}

func artifactOut(a mql.Artifact) artifactJSON {
	out := artifactJSON{Artifact: a, RecordedAt: stamp(a.RecordedAt)}
	if a.LastReview != nil {
		r := reviewOut(*a.LastReview)
		out.LastReview = &r
	}
	return out
}

type reviewJSON struct {
	mql.Review
	At stamp `json:"at"`
}

func reviewOut(r mql.Review) reviewJSON { return reviewJSON{Review: r, At: stamp(r.At)} }

type grantJSON struct {
	mql.Grant
	At stamp `json:"at"`
}

func grantOut(g mql.Grant) grantJSON { return grantJSON{Grant: g, At: stamp(g.At)} }

type revocationJSON struct {
	mql.Revocation
	At            stamp      `json:"at"`
	StandingGrant *grantJSON `json:"standing_grant,omitempty"`
}

func revocationOut(r mql.Revocation) *revocationJSON {
	out := &revocationJSON{Revocation: r, At: stamp(r.At)}
	if r.StandingGrant != nil {
		g := grantOut(*r.StandingGrant)
		out.StandingGrant = &g
	}
	return out
}

type receiptJSON struct {
	mql.Receipt
	At stamp `json:"at"`
}

// searchHitJSON is a search's row: the claim object every read gives, with its score and what
// matched.
type searchHitJSON struct {
	*claimJSON
	Score   float64  `json:"score"`
	Signals []string `json:"signals"`
	Terms   []string `json:"matched_terms"`
}

func claimsOut(cs []mql.Claim) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = claimOut(c)
	}
	return out
}

// nodeJSON is a provenance tree node with its records in their JSON forms.
type nodeJSON struct {
	mql.Node
	Claim         *claimJSON      `json:"claim,omitempty"`
	Artifact      *artifactJSON   `json:"artifact,omitempty"`
	Grant         *grantJSON      `json:"grant,omitempty"`
	Revocation    *revocationJSON `json:"revocation,omitempty"`
	Review        *reviewJSON     `json:"review,omitempty"`
	StandingGrant *grantJSON      `json:"standing_grant,omitempty"`
	At            stamp           `json:"at,omitzero"`
	Children      []*nodeJSON     `json:"children,omitempty"`
}

func nodeOut(n *mql.Node) *nodeJSON {
	out := &nodeJSON{Node: *n, At: stamp(n.At)}
	if n.Claim != nil {
		out.Claim = claimOut(*n.Claim)
	}
	if n.Artifact != nil {
		a := artifactOut(*n.Artifact)
		out.Artifact = &a
	}
	if n.Grant != nil {
		g := grantOut(*n.Grant)
		out.Grant = &g
	}
	if n.StandingGrant != nil {
		g := grantOut(*n.StandingGrant)
		out.StandingGrant = &g
	}
	if n.Revocation != nil {
		out.Revocation = revocationOut(*n.Revocation)
	}
	if n.Review != nil {
		r := reviewOut(*n.Review)
		out.Review = &r
	}
	for _, c := range n.Children {
		out.Children = append(out.Children, nodeOut(c))
	}
	return out
}

type findRowJSON struct {
	Values map[string]any `json:"values"`
	Claims []string       `json:"claims"`
}

type revokedByJSON struct {
	Claim      *claimJSON      `json:"claim"`
	Revoked    bool            `json:"revoked"`
	Revocation *revocationJSON `json:"revocation,omitempty"`
	Runs       []mql.RunUse    `json:"runs,omitempty"`
}

type conflictJSON struct {
	Key       string       `json:"key"`
	Live      *claimJSON   `json:"live"`
	Contested []*claimJSON `json:"contested"`
}

type beliefJSON struct {
	Subject     string     `json:"subject"`
	Claim       *claimJSON `json:"claim"`
	Weight      float64    `json:"weight"`
	Probability float64    `json:"probability"`
}

type dependentJSON struct {
	Artifact artifactJSON `json:"artifact"`
	Path     []string     `json:"path"`
	Depth    int          `json:"depth"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// jsonOf builds the object printed for r.
func jsonOf(r *query.Result) *resultJSON {
	out := &resultJSON{Kind: r.Kind, Statement: r.Statement, Rows: []any{}}
	switch {
	case isCatalog(r):
		catalogJSON(out, r)
	case isRunResult(r):
		runJSON(out, r)
	case r.Receipt != nil:
		out.Rows = append(out.Rows, receiptJSON{Receipt: *r.Receipt, At: stamp(r.Receipt.At)})
	case r.Find != nil:
		for _, v := range r.Find.Vars {
			out.Vars = append(out.Vars, strings.TrimPrefix(v, "?"))
		}
		for _, row := range r.Find.Rows {
			fr := findRowJSON{Values: map[string]any{}, Claims: nonNil(row.Claims)}
			for i, v := range row.Values {
				if i < len(out.Vars) {
					fr.Values[out.Vars[i]] = valueJSON(v)
				}
			}
			out.Rows = append(out.Rows, fr)
		}
		if out.Vars == nil {
			out.Vars = []string{}
		}
	case r.Why != nil:
		out.Rows = append(out.Rows, nodeOut(r.Why))
	case r.RevokedBy != nil:
		rb := revokedByJSON{Claim: claimOut(r.RevokedBy.Claim), Revoked: r.RevokedBy.Revocation != nil}
		if r.RevokedBy.Revocation != nil {
			rb.Revocation = revocationOut(*r.RevokedBy.Revocation)
		}
		rb.Runs = r.RevokedBy.Runs
		out.Rows = append(out.Rows, rb)
	case r.Impact != nil:
		out.Of = nonNil(r.Impact.Of)
		t := r.Impact.Truncated
		out.Truncated = &t
		out.Changes = r.Impact.Changes
		out.Runs = r.Impact.Runs
		for _, d := range r.Impact.Dependents {
			out.Rows = append(out.Rows, dependentJSON{Artifact: artifactOut(d.Artifact), Path: nonNil(d.Path), Depth: d.Depth})
		}
	case r.Search != nil:
		out.Text, out.History = &r.Search.Text, r.Search.History
		for _, h := range r.Search.Hits {
			out.Rows = append(out.Rows, searchHitJSON{claimJSON: claimOut(h.Claim), Score: h.Score, Signals: nonNil(h.Signals), Terms: nonNil(h.Terms)})
		}
	case r.History != nil:
		out.Of = r.History.Of
		out.Rows = claimsOut(r.History.Claims)
		for _, a := range r.History.Artifacts {
			out.Rows = append(out.Rows, artifactOut(a))
		}
	case r.Beliefs != nil:
		be := r.Beliefs
		e, g := be.Entropy, be.Gate
		out.Pattern, out.Entropy, out.Gate, out.Decision, out.Top = be.Pattern, &e, &g, be.Decision, be.Top
		for _, c := range be.Candidates {
			out.Rows = append(out.Rows, beliefJSON{Subject: c.Subject, Claim: claimOut(c.Claim), Weight: c.Weight, Probability: c.Probability})
		}
	case r.Context != nil:
		cx := *r.Context
		cx.Lines, cx.Refs = nonNil(cx.Lines), nonNil(cx.Refs)
		out.Rows = append(out.Rows, cx)
	case r.Stats != nil:
		out.Rows = append(out.Rows, r.Stats)
	case r.Conflicts != nil || r.Kind == "conflicts":
		for _, cf := range r.Conflicts {
			cj := conflictJSON{Key: cf.Key, Contested: []*claimJSON{}}
			if cf.Live != nil {
				cj.Live = claimOut(*cf.Live)
			}
			for _, c := range cf.Contested {
				cj.Contested = append(cj.Contested, claimOut(c))
			}
			out.Rows = append(out.Rows, cj)
		}
	default: // live
		out.Rows = claimsOut(r.Claims)
	}
	return out
}

func writeJSON(w io.Writer, r *query.Result) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(jsonOf(r))
}

// JSON is one result as the JSON object of docs/OUTPUT.md, without a trailing newline.
func JSON(r *query.Result) (json.RawMessage, error) {
	var b strings.Builder
	if err := writeJSON(&b, r); err != nil {
		return nil, err
	}
	return json.RawMessage(strings.TrimSuffix(b.String(), "\n")), nil
}
