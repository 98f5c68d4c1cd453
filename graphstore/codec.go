package graphstore

// The quad vocabulary: how a Tx becomes Cayley quads and back. docs/VOCABULARY.md describes
// every IRI and predicate; keep the two in step.
//
// Every quad of transaction N carries the graph label <urn:mql:tx:N>. Every record is one node
// with its own IRI, and every quad of a record has that node as subject, so a transaction's
// quads are reachable from the transaction node (which links every subject it wrote with
// urn:mql:wrote) without a label scan. The encoding is canonical: decoding re-encodes each
// transaction and rejects input that differs from the canonical quads in any way, so anything
// decodeTxs accepts round-trips exactly.

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cayleygraph/quad"
)

// ---- IRIs ----------------------------------------------------------------------------------

func esc(s string) string { return url.PathEscape(s) }

// escSubject also escapes '.', which separates subject from predicate in a claim IRI.
func escSubject(s string) string { return strings.ReplaceAll(url.PathEscape(s), ".", "%2E") }

func txIRI(id TxID) quad.IRI { return quad.IRI(prefTx + strconv.FormatInt(int64(id), 10)) }

func principalIRI(name string) quad.IRI { return quad.IRI(prefPrincipal + esc(name)) }
func grantIRI(id string) quad.IRI       { return quad.IRI(prefGrant + esc(id)) }
func sourceIRI(id string) quad.IRI      { return quad.IRI(prefSource + esc(id)) }
func revocationIRI(id string) quad.IRI  { return quad.IRI(prefRevocation + esc(id)) }
func confirmationIRI(id string) quad.IRI {
	return quad.IRI(prefConfirmation + esc(id))
}
func reviewIRI(id string) quad.IRI { return quad.IRI(prefReview + esc(id)) }
func tokenIRI(id string) quad.IRI  { return quad.IRI(prefToken + esc(id)) }
func retrievalIRI(id string) quad.IRI {
	return quad.IRI(prefRetrieval + esc(id))
}
func outcomeIRI(id string) quad.IRI { return quad.IRI(prefOutcome + esc(id)) }
func tokenRevocationIRI(id string) quad.IRI {
	return quad.IRI(prefTokenRevoke + esc(id))
}
func decayIRI(tx TxID, i int) quad.IRI {
	return quad.IRI(prefDecay + strconv.FormatInt(int64(tx), 10) + "." + strconv.Itoa(i))
}

func claimIRI(c ClaimID) quad.IRI {
	return quad.IRI(prefClaim + escSubject(c.Subject) + "." + esc(c.Predicate) + "@" + strconv.Itoa(c.Version))
}

func artifactIRI(a ArtifactID) quad.IRI {
	return quad.IRI(prefArtifact + esc(a.Name) + "@" + strconv.Itoa(a.Version))
}

// parseTxIRI returns the id named by <urn:mql:tx:N>.
func parseTxIRI(v quad.Value) (TxID, bool) {
	iri, ok := v.(quad.IRI)
	if !ok || !strings.HasPrefix(string(iri), prefTx) {
		return 0, false
	}
	digits := string(iri[len(prefTx):])
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != digits {
		return 0, false
	}
	return TxID(n), true
}

// parseNamed returns the unescaped name of an IRI prefix+esc(name).
func parseNamed(prefix, what string, v quad.Value) (string, error) {
	iri, ok := v.(quad.IRI)
	if !ok || !strings.HasPrefix(string(iri), prefix) {
		return "", fmt.Errorf("%s must be an IRI <%s…>, got %s", what, prefix, show(v))
	}
	s, err := url.PathUnescape(string(iri[len(prefix):]))
	if err != nil || s == "" || esc(s) != string(iri[len(prefix):]) {
		return "", fmt.Errorf("%s IRI %s is not canonically escaped", what, show(v))
	}
	return s, nil
}

func parseVersioned(prefix, what string, v quad.Value) (string, int, error) {
	iri, ok := v.(quad.IRI)
	if !ok || !strings.HasPrefix(string(iri), prefix) {
		return "", 0, fmt.Errorf("%s must be an IRI <%s…@N>, got %s", what, prefix, show(v))
	}
	rest := string(iri[len(prefix):])
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return "", 0, fmt.Errorf("%s IRI %s has no @version", what, show(v))
	}
	n, err := strconv.Atoi(rest[at+1:])
	if err != nil || n < 1 || strconv.Itoa(n) != rest[at+1:] {
		return "", 0, fmt.Errorf("%s IRI %s: version must be a positive integer", what, show(v))
	}
	return rest[:at], n, nil
}

func parseClaimIRI(v quad.Value) (ClaimID, error) {
	name, n, err := parseVersioned(prefClaim, "claim", v)
	if err != nil {
		return ClaimID{}, err
	}
	dot := strings.IndexByte(name, '.')
	if dot < 0 {
		return ClaimID{}, fmt.Errorf("claim IRI %s is not <%sSubject.predicate@N>", show(v), prefClaim)
	}
	subj, err1 := url.PathUnescape(name[:dot])
	pred, err2 := url.PathUnescape(name[dot+1:])
	id := ClaimID{Key: Key{Subject: subj, Predicate: pred}, Version: n}
	if err1 != nil || err2 != nil || subj == "" || pred == "" || claimIRI(id) != v.(quad.IRI) {
		return ClaimID{}, fmt.Errorf("claim IRI %s is not canonically escaped", show(v))
	}
	return id, nil
}

func parseArtifactIRI(v quad.Value) (ArtifactID, error) {
	name, n, err := parseVersioned(prefArtifact, "artifact", v)
	if err != nil {
		return ArtifactID{}, err
	}
	s, err := url.PathUnescape(name)
	id := ArtifactID{Name: s, Version: n}
	if err != nil || s == "" || artifactIRI(id) != v.(quad.IRI) {
		return ArtifactID{}, fmt.Errorf("artifact IRI %s is not canonically escaped", show(v))
	}
	return id, nil
}

// ---- literals ------------------------------------------------------------------------------

// timeLit is the stored form of a time: an xsd:dateTime typed literal in UTC with nanoseconds.
// (quad.Time is not used: its N-Quads form drops the fraction of a second, and PostgreSQL
// stores it with microsecond precision.)
func timeLit(t time.Time) quad.Value {
	return quad.TypedString{Value: quad.String(t.UTC().Format(time.RFC3339Nano)), Type: xsdDateTime}
}

var durationRE = regexp.MustCompile(`^PT([0-9]{1,11})(?:\.([0-9]{1,9}))?S$`)

// durationLit writes a positive duration as an xsd:duration in seconds: "PT600S", "PT0.5S".
func durationLit(d time.Duration) quad.Value {
	s := "PT" + strconv.FormatInt(int64(d/time.Second), 10)
	if ns := int64(d % time.Second); ns != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
	}
	return quad.TypedString{Value: quad.String(s + "S"), Type: xsdDuration}
}

func parseDuration(s string) (time.Duration, bool) {
	m := durationRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	sec, _ := strconv.ParseInt(m[1], 10, 64)
	var ns int64
	if m[2] != "" {
		ns, _ = strconv.ParseInt((m[2] + "000000000")[:9], 10, 64)
	}
	if sec > math.MaxInt64/int64(time.Second) || sec*int64(time.Second) > math.MaxInt64-ns {
		return 0, false
	}
	return time.Duration(sec*int64(time.Second) + ns), true
}

// canonValue maps equivalent spellings of a literal to the one the encoder writes: N-Quads
// readers turn xsd:dateTime literals into quad.Time, storage gives back the typed string, and
// a reader that keeps every literal as written (a typed string with its full datatype IRI)
// gives strings, integers, doubles and booleans as typed strings, which the encoder writes as
// quad.String, quad.Int, quad.Float and quad.Bool.
func canonValue(v quad.Value) quad.Value {
	switch x := v.(type) {
	case quad.Time:
		return timeLit(time.Time(x))
	case quad.TypedString:
		switch x.Type {
		case xsdDateTime, "xsd:dateTime":
			if t, err := time.Parse(time.RFC3339Nano, string(x.Value)); err == nil {
				return timeLit(t)
			}
		case xsdString, xsdInteger, xsdDouble, xsdBoolean:
			if nv, err := x.ParseValue(); err == nil {
				return nv
			}
		}
	}
	return v
}

func canonQuad(q quad.Quad) quad.Quad {
	q.Object = canonValue(q.Object)
	return q
}

// show renders a value for an error message.
func show(v quad.Value) string {
	if v == nil {
		return "nothing"
	}
	s := v.String()
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// ---- encoding ------------------------------------------------------------------------------

type encoder struct {
	tx      *Tx
	label   quad.IRI
	quads   []quad.Quad
	seen    map[quad.Quad]struct{}
	records map[quad.IRI]string // record node -> what it records, to refuse two records on one node
	subjs   []quad.IRI          // subjects in first-use order, for urn:mql:wrote
	subjSet map[quad.IRI]struct{}
	err     error // first invalid string met
}

func (e *encoder) add(s, p quad.IRI, o quad.Value) {
	var lit string
	switch x := o.(type) {
	case quad.String:
		lit = string(x)
	case quad.TypedString:
		lit = string(x.Value)
	}
	if e.err == nil && lit != "" {
		if !utf8.ValidString(lit) {
			e.err = fmt.Errorf("%s %s: text is not valid UTF-8", s, p)
		} else if strings.IndexByte(lit, 0) >= 0 {
			e.err = fmt.Errorf("%s %s: text contains a NUL byte", s, p)
		}
	}
	q := quad.Quad{Subject: s, Predicate: p, Object: o, Label: e.label}
	if _, dup := e.seen[q]; dup {
		return // trap 2: never the same quad twice in one transaction
	}
	e.seen[q] = struct{}{}
	e.quads = append(e.quads, q)
	if _, ok := e.subjSet[s]; !ok && s != e.label {
		e.subjSet[s] = struct{}{}
		e.subjs = append(e.subjs, s)
	}
}

func (e *encoder) addStr(s, p quad.IRI, v string) {
	if v != "" {
		e.add(s, p, quad.String(v))
	}
}

func (e *encoder) record(node quad.IRI, what string) error {
	if prev, ok := e.records[node]; ok {
		return fmt.Errorf("tx %d records %s and %s on the same node %s", e.tx.ID, prev, what, node)
	}
	e.records[node] = what
	return nil
}

// list writes one edge per element and, when the order is not implied (two or more
// elements), the order as a space-separated list of the targets' IRIs.
func (e *encoder) list(s, p, order quad.IRI, targets []quad.IRI, what string) error {
	seen := make(map[quad.IRI]bool, len(targets))
	parts := make([]string, len(targets))
	for i, t := range targets {
		if seen[t] {
			return fmt.Errorf("%s names %s twice", what, t)
		}
		seen[t] = true
		e.add(s, p, t)
		parts[i] = string(t)
	}
	if len(targets) > 1 {
		e.add(s, order, quad.String(strings.Join(parts, " ")))
	}
	return nil
}

func checkTx(what string, got, want TxID) error {
	if got != want {
		return fmt.Errorf("%s is stamped tx %d inside tx %d", what, got, want)
	}
	return nil
}

func encodeValue(v Value) (quad.Value, error) {
	switch v.Type {
	case String:
		return quad.String(v.Str), nil
	case Number:
		if !finite(v.Num) {
			return nil, fmt.Errorf("number value %v is not finite", v.Num)
		}
		return quad.Float(v.Num), nil
	case Bool:
		return quad.Bool(v.Bool), nil
	case Time:
		if v.Time.IsZero() {
			return nil, errors.New("time value is the zero time")
		}
		return timeLit(v.Time), nil
	case Ref:
		if v.Str == "" {
			return nil, errors.New("reference value is empty")
		}
		return quad.TypedString{Value: quad.String(v.Str), Type: mqlRefType}, nil
	}
	return nil, fmt.Errorf("unknown value type %q", v.Type)
}

func validConfidence(f float64) bool { return finite(f) && f >= 0 && f <= 1 }

// validHash reports whether s is a SHA-256 in lower-case hex.
func validHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// encodeTx turns a transaction into its quads, in a deterministic order without duplicates. It
// refuses a transaction that could not be decoded back to an equal one (missing mandatory
// fields, two records on one node, duplicated list elements, non-UTC-representable values).
func encodeTx(tx *Tx) ([]quad.Quad, error) {
	if tx == nil {
		return nil, errors.New("nil transaction")
	}
	if tx.ID < 1 {
		return nil, fmt.Errorf("transaction id %d is not positive", tx.ID)
	}
	e := &encoder{
		tx: tx, label: txIRI(tx.ID),
		seen:    map[quad.Quad]struct{}{},
		records: map[quad.IRI]string{},
		subjSet: map[quad.IRI]struct{}{},
	}
	wrap := func(err error) ([]quad.Quad, error) { return nil, fmt.Errorf("tx %d: %w", tx.ID, err) }
	if tx.By == "" {
		return wrap(errors.New("no principal (By)"))
	}
	if tx.Time.IsZero() {
		return wrap(errors.New("no time"))
	}
	t := e.label
	e.add(t, rdfType, provActivity)
	e.add(t, rdfType, mqlTransaction)
	e.add(t, provEndedAtTime, timeLit(tx.Time))
	e.add(t, provWasAssociatedWith, principalIRI(tx.By))

	if m := tx.Meta; m != nil {
		if m.Owner == "" {
			return wrap(errors.New("store meta has no owner"))
		}
		e.add(iriStore, rdfType, provEntity)
		e.add(iriStore, rdfType, mqlStore)
		e.add(iriStore, mqlOwner, principalIRI(m.Owner))
		e.add(iriStore, mqlStrict, quad.Bool(m.Strict))
	}
	for i, p := range tx.Principals {
		if p == nil || p.Name == "" {
			return wrap(fmt.Errorf("principal %d has no name", i))
		}
		n := principalIRI(p.Name)
		what := fmt.Sprintf("principal %q", p.Name)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, p.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		var class quad.IRI
		switch p.Type {
		case User:
			class = provPerson
		case Agent, Tool:
			class = provSoftwareAgent
		default:
			return wrap(fmt.Errorf("%s has unknown type %q", what, p.Type))
		}
		e.add(n, rdfType, provAgent)
		e.add(n, rdfType, class)
		e.add(n, rdfType, mqlPrincipal)
		e.add(n, mqlName, quad.String(p.Name))
		e.add(n, mqlPrincipalType, quad.String(string(p.Type)))
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, g := range tx.Grants {
		if g == nil || g.ID == "" {
			return wrap(fmt.Errorf("grant %d has no id", i))
		}
		n := grantIRI(g.ID)
		what := fmt.Sprintf("grant %q", g.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, g.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		switch g.Right {
		case RightAssert, RightRevoke, RightConfirm, RightGrant:
		default:
			return wrap(fmt.Errorf("%s has unknown right %q", what, g.Right))
		}
		if g.Grantee == "" || g.Scope == "" || g.By == "" {
			return wrap(fmt.Errorf("%s needs grantee, scope and by", what))
		}
		e.add(n, rdfType, provEntity)
		e.add(n, rdfType, mqlGrant)
		e.add(n, mqlGrantee, principalIRI(g.Grantee))
		e.add(n, mqlRight, quad.String(string(g.Right)))
		e.add(n, mqlScope, quad.String(g.Scope))
		e.add(n, provWasAttributedTo, principalIRI(g.By))
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, s := range tx.Sources {
		if s == nil || s.ID == "" {
			return wrap(fmt.Errorf("source %d has no id", i))
		}
		n := sourceIRI(s.ID)
		what := fmt.Sprintf("source %q", s.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, s.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		e.add(n, rdfType, provEntity)
		e.add(n, rdfType, mqlSource)
		e.addStr(n, mqlExcerpt, s.Excerpt)
		e.addStr(n, mqlURI, s.URI)
		e.addStr(n, mqlRevision, s.Revision)
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, c := range tx.Claims {
		if c == nil {
			return wrap(fmt.Errorf("claim %d is nil", i))
		}
		what := "claim " + c.ID.String()
		if c.ID.Subject == "" || c.ID.Predicate == "" || c.ID.Version < 1 {
			return wrap(fmt.Errorf("%s is not Subject.predicate@N", what))
		}
		n := claimIRI(c.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, c.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		val, err := encodeValue(c.Value)
		if err != nil {
			return wrap(fmt.Errorf("%s: %w", what, err))
		}
		switch c.Kind {
		case Confirmed, Observed, Inferred:
		default:
			return wrap(fmt.Errorf("%s has unknown kind %q", what, c.Kind))
		}
		if c.By == "" {
			return wrap(fmt.Errorf("%s has no asserter (By)", what))
		}
		if !validConfidence(c.Confidence) {
			return wrap(fmt.Errorf("%s: confidence %v is not in [0,1]", what, c.Confidence))
		}
		e.add(n, rdfType, provEntity)
		e.add(n, rdfType, mqlClaim)
		e.add(n, mqlSubject, quad.String(c.ID.Subject))
		e.add(n, mqlPredicate, quad.String(c.ID.Predicate))
		e.add(n, mqlVersion, quad.Int(c.ID.Version))
		e.add(n, mqlValue, val)
		e.add(n, provWasAttributedTo, principalIRI(c.By))
		e.add(n, mqlKind, quad.String(string(c.Kind)))
		e.add(n, mqlConfidence, quad.Float(c.Confidence))
		srcs := make([]quad.IRI, len(c.Sources))
		for j, s := range c.Sources {
			if s == "" {
				return wrap(fmt.Errorf("%s names an empty source id", what))
			}
			srcs[j] = sourceIRI(s)
		}
		if err := e.list(n, provHadPrimarySource, mqlSourceOrder, srcs, what+" sources"); err != nil {
			return wrap(err)
		}
		if !c.ValidFrom.IsZero() {
			e.add(n, mqlValidFrom, timeLit(c.ValidFrom))
		}
		if !c.ValidUntil.IsZero() {
			e.add(n, mqlValidUntil, timeLit(c.ValidUntil))
		}
		if err := e.principals(n, c.SeenBy, what); err != nil {
			return wrap(err)
		}
		if c.Supersedes != nil {
			e.add(n, provWasRevisionOf, claimIRI(*c.Supersedes))
		}
		if c.Contests != nil {
			e.add(n, mqlContests, claimIRI(*c.Contests))
		}
		if c.Corroborates != nil {
			e.add(n, mqlCorroborates, claimIRI(*c.Corroborates))
		}
		if c.Grant != "" {
			e.add(n, mqlGrantPred, grantIRI(c.Grant))
		}
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, r := range tx.Revocations {
		if r == nil || r.ID == "" {
			return wrap(fmt.Errorf("revocation %d has no id", i))
		}
		n := revocationIRI(r.ID)
		what := fmt.Sprintf("revocation %q", r.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, r.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if r.By == "" || r.Claim.Version < 1 || r.Claim.Subject == "" || r.Claim.Predicate == "" {
			return wrap(fmt.Errorf("%s needs a claim and by", what))
		}
		c := claimIRI(r.Claim)
		e.add(n, rdfType, provActivity)
		e.add(n, rdfType, mqlRevocation)
		e.add(n, provInvalidated, c)
		e.add(n, provWasAssociatedWith, principalIRI(r.By))
		e.addStr(n, mqlBecause, r.Because)
		e.addStr(n, mqlStanding, r.Standing)
		if r.ReplacedBy != nil {
			e.add(n, mqlReplacedBy, claimIRI(*r.ReplacedBy))
		}
		e.add(n, mqlOrd, quad.Int(i))
		e.add(c, provWasInvalidatedBy, n)
		e.add(c, provInvalidatedAtTime, timeLit(tx.Time))
	}
	for i, c := range tx.Confirmations {
		if c == nil || c.ID == "" {
			return wrap(fmt.Errorf("confirmation %d has no id", i))
		}
		n := confirmationIRI(c.ID)
		what := fmt.Sprintf("confirmation %q", c.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, c.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if c.By == "" || c.Claim.Version < 1 || c.Claim.Subject == "" || c.Claim.Predicate == "" {
			return wrap(fmt.Errorf("%s needs a claim and by", what))
		}
		e.add(n, rdfType, provActivity)
		e.add(n, rdfType, mqlConfirmation)
		e.add(n, mqlConfirms, claimIRI(c.Claim))
		e.add(n, provWasAssociatedWith, principalIRI(c.By))
		e.addStr(n, mqlStanding, c.Standing)
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, a := range tx.Artifacts {
		if a == nil || a.ID.Name == "" || a.ID.Version < 1 {
			return wrap(fmt.Errorf("artifact %d is not name@N", i))
		}
		n := artifactIRI(a.ID)
		what := "artifact " + a.ID.String()
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, a.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if a.By == "" {
			return wrap(fmt.Errorf("%s has no principal (By)", what))
		}
		if !validConfidence(a.Confidence) {
			return wrap(fmt.Errorf("%s: confidence %v is not in [0,1]", what, a.Confidence))
		}
		from := make([]quad.IRI, len(a.DerivedFrom))
		for j, d := range a.DerivedFrom {
			switch {
			case d.Claim != nil && d.Artifact == nil:
				from[j] = claimIRI(*d.Claim)
			case d.Artifact != nil && d.Claim == nil:
				from[j] = artifactIRI(*d.Artifact)
			default:
				return wrap(fmt.Errorf("%s: derived-from %d must name exactly one claim or artifact", what, j))
			}
		}
		e.add(n, rdfType, provEntity)
		e.add(n, rdfType, mqlArtifact)
		e.add(n, mqlName, quad.String(a.ID.Name))
		e.add(n, mqlVersion, quad.Int(a.ID.Version))
		if err := e.list(n, provWasDerivedFrom, mqlDerivedFromOrder, from, what+" derived-from"); err != nil {
			return wrap(err)
		}
		e.add(n, provWasAttributedTo, principalIRI(a.By))
		e.add(n, mqlConfidence, quad.Float(a.Confidence))
		if err := e.principals(n, a.SeenBy, what); err != nil {
			return wrap(err)
		}
		if a.Supersedes != nil {
			if a.Supersedes.Name != a.ID.Name || a.Supersedes.Version < 1 || a.Supersedes.Version >= a.ID.Version {
				return wrap(fmt.Errorf("%s supersedes %s, which is not an earlier version of it", what, a.Supersedes))
			}
			e.add(n, provWasRevisionOf, artifactIRI(*a.Supersedes))
		}
		e.addStr(n, mqlRun, a.Run)
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, r := range tx.Reviews {
		if r == nil || r.ID == "" {
			return wrap(fmt.Errorf("review %d has no id", i))
		}
		n := reviewIRI(r.ID)
		what := fmt.Sprintf("review %q", r.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, r.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if r.By == "" || r.Artifact.Name == "" || r.Artifact.Version < 1 {
			return wrap(fmt.Errorf("%s needs an artifact and by", what))
		}
		e.add(n, rdfType, provActivity)
		e.add(n, rdfType, mqlReview)
		e.add(n, provUsed, artifactIRI(r.Artifact))
		e.add(n, provWasAssociatedWith, principalIRI(r.By))
		e.addStr(n, mqlBecause, r.Because)
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, d := range tx.Decays {
		if d == nil || d.Predicate == "" || d.By == "" {
			return wrap(fmt.Errorf("decay %d needs a predicate and by", i))
		}
		what := "decay of " + d.Predicate
		if err := checkTx(what, d.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if d.HalfLife <= 0 {
			return wrap(fmt.Errorf("%s: half-life %s is not positive", what, d.HalfLife))
		}
		n := decayIRI(tx.ID, i)
		e.add(n, rdfType, provEntity)
		e.add(n, rdfType, mqlDecay)
		e.add(n, mqlPredicate, quad.String(d.Predicate))
		e.add(n, mqlHalfLife, durationLit(d.HalfLife))
		e.add(n, provWasAttributedTo, principalIRI(d.By))
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, k := range tx.Tokens {
		if k == nil || k.ID == "" {
			return wrap(fmt.Errorf("token %d has no id", i))
		}
		n := tokenIRI(k.ID)
		what := fmt.Sprintf("token %q", k.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, k.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if k.Principal == "" || k.By == "" || !validHash(k.Hash) {
			return wrap(fmt.Errorf("%s needs a holder, a by and a SHA-256 hash in hex", what))
		}
		e.add(n, rdfType, provEntity)
		e.add(n, rdfType, mqlToken)
		e.add(n, mqlHolder, principalIRI(k.Principal))
		e.add(n, mqlSecretHash, quad.String(k.Hash))
		e.add(n, provWasAttributedTo, principalIRI(k.By))
		if !k.Expires.IsZero() {
			e.add(n, mqlExpires, timeLit(k.Expires))
		}
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, r := range tx.TokenRevocations {
		if r == nil || r.ID == "" {
			return wrap(fmt.Errorf("token revocation %d has no id", i))
		}
		n := tokenRevocationIRI(r.ID)
		what := fmt.Sprintf("token revocation %q", r.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, r.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if r.Token == "" || r.By == "" {
			return wrap(fmt.Errorf("%s needs a token and by", what))
		}
		e.add(n, rdfType, provActivity)
		e.add(n, rdfType, mqlTokenRevoke)
		e.add(n, provInvalidated, tokenIRI(r.Token))
		e.add(n, provWasAssociatedWith, principalIRI(r.By))
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, r := range tx.Retrievals {
		if r == nil || r.ID == "" {
			return wrap(fmt.Errorf("retrieval %d has no id", i))
		}
		n := retrievalIRI(r.ID)
		what := fmt.Sprintf("retrieval %q", r.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, r.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if r.Run == "" || r.By == "" {
			return wrap(fmt.Errorf("%s needs a run and by", what))
		}
		if r.ReadAt < 1 || r.ReadAt >= tx.ID {
			return wrap(fmt.Errorf("%s read at tx %d, which is not before it", what, r.ReadAt))
		}
		used := make([]quad.IRI, 0, len(r.Claims)+len(r.Artifacts))
		for _, c := range r.Claims {
			if c.Subject == "" || c.Predicate == "" || c.Version < 1 {
				return wrap(fmt.Errorf("%s serves %s, which is not Subject.predicate@N", what, c))
			}
			used = append(used, claimIRI(c))
		}
		for _, a := range r.Artifacts {
			if a.Name == "" || a.Version < 1 {
				return wrap(fmt.Errorf("%s serves %s, which is not name@N", what, a))
			}
			used = append(used, artifactIRI(a))
		}
		e.add(n, rdfType, provActivity)
		e.add(n, rdfType, mqlRetrieval)
		e.add(n, mqlRun, quad.String(r.Run))
		e.add(n, provWasAssociatedWith, principalIRI(r.By))
		e.add(n, mqlReadAtTx, quad.Int(r.ReadAt))
		e.addStr(n, mqlStatement, r.Statement)
		if err := e.list(n, provUsed, mqlUsedOrder, used, what+" served"); err != nil {
			return wrap(err)
		}
		e.add(n, mqlOrd, quad.Int(i))
	}
	for i, o := range tx.Outcomes {
		if o == nil || o.ID == "" {
			return wrap(fmt.Errorf("outcome %d has no id", i))
		}
		n := outcomeIRI(o.ID)
		what := fmt.Sprintf("outcome %q", o.ID)
		if err := e.record(n, what); err != nil {
			return wrap(err)
		}
		if err := checkTx(what, o.Tx, tx.ID); err != nil {
			return wrap(err)
		}
		if o.Run == "" || o.By == "" {
			return wrap(fmt.Errorf("%s needs a run and by", what))
		}
		switch o.Result {
		case Succeeded, Failed, Declined:
		default:
			return wrap(fmt.Errorf("%s has unknown result %q", what, o.Result))
		}
		e.add(n, rdfType, provEntity)
		e.add(n, rdfType, mqlOutcome)
		e.add(n, mqlRun, quad.String(o.Run))
		e.add(n, mqlResult, quad.String(string(o.Result)))
		e.addStr(n, mqlBecause, o.Because)
		e.add(n, provWasAttributedTo, principalIRI(o.By))
		e.add(n, mqlOrd, quad.Int(i))
	}
	for _, s := range slices.Clone(e.subjs) {
		e.add(t, mqlWrote, s)
	}
	if e.err != nil {
		return wrap(e.err)
	}
	return e.quads, nil
}

func (e *encoder) principals(n quad.IRI, names []string, what string) error {
	ps := make([]quad.IRI, len(names))
	for i, p := range names {
		if p == "" {
			return fmt.Errorf("%s: seen-by names an empty principal", what)
		}
		ps[i] = principalIRI(p)
	}
	return e.list(n, mqlSeenBy, mqlSeenByOrder, ps, what+" seen-by")
}

// ---- decoding ------------------------------------------------------------------------------

// decodeError is a decoding failure, optionally about one quad (so that ReadNQuads can name
// its line).
type decodeError struct {
	tx   TxID
	quad *quad.Quad
	msg  string
}

func (e *decodeError) Error() string {
	if e.tx == 0 {
		return e.msg
	}
	return fmt.Sprintf("tx %d: %s", e.tx, e.msg)
}

type node struct {
	iri   quad.IRI
	props map[quad.IRI][]quad.Value
	first quad.Quad
}

type txDecoder struct {
	id    TxID
	nodes map[quad.IRI]*node
}

func (d *txDecoder) fail(n *node, format string, args ...any) error {
	e := &decodeError{tx: d.id, msg: fmt.Sprintf(format, args...)}
	if n != nil {
		q := n.first
		e.quad = &q
		e.msg = fmt.Sprintf("%s: %s", n.iri, e.msg)
	}
	return e
}

func (n *node) all(p quad.IRI) []quad.Value { return n.props[p] }

// opt returns the single value of p, or nil.
func (d *txDecoder) opt(n *node, p quad.IRI) (quad.Value, error) {
	vs := n.props[p]
	if len(vs) > 1 {
		return nil, d.fail(n, "%s has %d values, want one", p, len(vs))
	}
	if len(vs) == 0 {
		return nil, nil
	}
	return vs[0], nil
}

func (d *txDecoder) one(n *node, p quad.IRI) (quad.Value, error) {
	v, err := d.opt(n, p)
	if err == nil && v == nil {
		err = d.fail(n, "missing %s", p)
	}
	return v, err
}

func (d *txDecoder) str(n *node, p quad.IRI, mandatory bool) (string, error) {
	var v quad.Value
	var err error
	if mandatory {
		v, err = d.one(n, p)
	} else {
		v, err = d.opt(n, p)
	}
	if err != nil || v == nil {
		return "", err
	}
	s, ok := v.(quad.String)
	if !ok {
		return "", d.fail(n, "%s must be a plain string, got %s", p, show(v))
	}
	return string(s), nil
}

func (d *txDecoder) int(n *node, p quad.IRI) (int, error) {
	v, err := d.one(n, p)
	if err != nil {
		return 0, err
	}
	i, ok := v.(quad.Int)
	if !ok || int64(i) < 0 || int64(i) > math.MaxInt32 {
		return 0, d.fail(n, "%s must be a non-negative xsd:integer, got %s", p, show(v))
	}
	return int(i), nil
}

func (d *txDecoder) float(n *node, p quad.IRI) (float64, error) {
	v, err := d.one(n, p)
	if err != nil {
		return 0, err
	}
	f, ok := v.(quad.Float)
	if !ok || !finite(float64(f)) {
		return 0, d.fail(n, "%s must be a finite xsd:double, got %s", p, show(v))
	}
	return float64(f), nil
}

func (d *txDecoder) bool(n *node, p quad.IRI) (bool, error) {
	v, err := d.one(n, p)
	if err != nil {
		return false, err
	}
	b, ok := v.(quad.Bool)
	if !ok {
		return false, d.fail(n, "%s must be an xsd:boolean, got %s", p, show(v))
	}
	return bool(b), nil
}

func asTime(v quad.Value) (time.Time, bool) {
	ts, ok := v.(quad.TypedString)
	if !ok || ts.Type != xsdDateTime {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts.Value))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

func (d *txDecoder) time(n *node, p quad.IRI, mandatory bool) (time.Time, error) {
	var v quad.Value
	var err error
	if mandatory {
		v, err = d.one(n, p)
	} else {
		v, err = d.opt(n, p)
	}
	if err != nil || v == nil {
		return time.Time{}, err
	}
	t, ok := asTime(v)
	if !ok {
		return time.Time{}, d.fail(n, "%s must be an xsd:dateTime, got %s", p, show(v))
	}
	return t, nil
}

func (d *txDecoder) principal(n *node, p quad.IRI, mandatory bool) (string, error) {
	var v quad.Value
	var err error
	if mandatory {
		v, err = d.one(n, p)
	} else {
		v, err = d.opt(n, p)
	}
	if err != nil || v == nil {
		return "", err
	}
	name, err := parseNamed(prefPrincipal, "principal", v)
	if err != nil {
		return "", d.fail(n, "%s: %v", p, err)
	}
	return name, nil
}

func (d *txDecoder) claimRef(n *node, p quad.IRI, mandatory bool) (*ClaimID, error) {
	var v quad.Value
	var err error
	if mandatory {
		v, err = d.one(n, p)
	} else {
		v, err = d.opt(n, p)
	}
	if err != nil || v == nil {
		return nil, err
	}
	id, err := parseClaimIRI(v)
	if err != nil {
		return nil, d.fail(n, "%s: %v", p, err)
	}
	return &id, nil
}

// list reads the targets of edge p in the order given by the order predicate (if any).
func (d *txDecoder) list(n *node, p, order quad.IRI) ([]quad.Value, error) {
	edges := n.all(p)
	ord, err := d.str(n, order, false)
	if err != nil {
		return nil, err
	}
	if ord == "" {
		if len(edges) > 1 {
			return nil, d.fail(n, "%d values of %s but no %s", len(edges), p, order)
		}
		return edges, nil
	}
	parts := strings.Split(ord, " ")
	out := make([]quad.Value, len(parts))
	for i, s := range parts {
		out[i] = quad.IRI(s)
	}
	return out, nil
}

func (d *txDecoder) principalList(n *node) ([]string, error) {
	vs, err := d.list(n, mqlSeenBy, mqlSeenByOrder)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range vs {
		name, err := parseNamed(prefPrincipal, "seen-by principal", v)
		if err != nil {
			return nil, d.fail(n, "%v", err)
		}
		out = append(out, name)
	}
	return out, nil
}

type ordered[T any] struct {
	ord int
	rec T
}

func sortRecords[T any](d *txDecoder, what string, in []ordered[T]) ([]T, error) {
	if len(in) == 0 {
		return nil, nil
	}
	sort.Slice(in, func(i, j int) bool { return in[i].ord < in[j].ord })
	out := make([]T, len(in))
	for i, o := range in {
		if o.ord != i {
			return nil, &decodeError{tx: d.id, msg: fmt.Sprintf("%s records are numbered %d at position %d (urn:mql:ord must run 0,1,2…)", what, o.ord, i)}
		}
		out[i] = o.rec
	}
	return out, nil
}

// decodeTxs groups quads by their transaction label and decodes each transaction. The result
// is sorted by id; contiguity is the caller's to check.
func decodeTxs(quads []quad.Quad) ([]*Tx, error) {
	groups := map[TxID][]quad.Quad{}
	for i := range quads {
		q := canonQuad(quads[i])
		if !q.IsValid() {
			return nil, &decodeError{quad: &quads[i], msg: "quad is incomplete"}
		}
		id, ok := parseTxIRI(q.Label)
		if !ok {
			return nil, &decodeError{quad: &quads[i], msg: fmt.Sprintf("graph label %s is not a transaction <%sN>", show(q.Label), prefTx)}
		}
		groups[id] = append(groups[id], q)
	}
	ids := make([]TxID, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	txs := make([]*Tx, 0, len(ids))
	for _, id := range ids {
		tx, err := decodeTx(id, groups[id])
		if err != nil {
			return nil, err
		}
		txs = append(txs, tx)
	}
	return txs, nil
}

// decodeTx decodes the (canonicalised) quads of one transaction and checks that they are
// exactly the canonical encoding of the result.
func decodeTx(id TxID, quads []quad.Quad) (*Tx, error) {
	tx, _, err := decodeTxQuads(id, quads)
	return tx, err
}

// decodeTxQuads is decodeTx that also returns the canonical encoding of the transaction (the
// same quads, in the encoder's order).
func decodeTxQuads(id TxID, quads []quad.Quad) (*Tx, []quad.Quad, error) {
	d := &txDecoder{id: id, nodes: map[quad.IRI]*node{}}
	var order []quad.IRI
	seen := make(map[quad.Quad]struct{}, len(quads))
	for _, q := range quads {
		s, ok1 := q.Subject.(quad.IRI)
		p, ok2 := q.Predicate.(quad.IRI)
		if !ok1 || !ok2 {
			qq := q
			return nil, nil, &decodeError{tx: id, quad: &qq, msg: fmt.Sprintf("subject and predicate must be IRIs: %s %s", show(q.Subject), show(q.Predicate))}
		}
		n := d.nodes[s]
		if n == nil {
			n = &node{iri: s, props: map[quad.IRI][]quad.Value{}, first: q}
			d.nodes[s] = n
			order = append(order, s)
		}
		if _, dup := seen[q]; !dup {
			seen[q] = struct{}{}
			n.props[p] = append(n.props[p], q.Object)
		}
	}
	txn := d.nodes[txIRI(id)]
	if txn == nil {
		return nil, nil, &decodeError{tx: id, msg: fmt.Sprintf("no transaction node %s", txIRI(id))}
	}
	tx := &Tx{ID: id}
	var err error
	if tx.Time, err = d.time(txn, provEndedAtTime, true); err != nil {
		return nil, nil, err
	}
	if tx.By, err = d.principal(txn, provWasAssociatedWith, true); err != nil {
		return nil, nil, err
	}
	var (
		principals    []ordered[*Principal]
		grants        []ordered[*Grant]
		sources       []ordered[*Source]
		claims        []ordered[*Claim]
		revocations   []ordered[*Revocation]
		confirmations []ordered[*Confirmation]
		artifacts     []ordered[*Artifact]
		reviews       []ordered[*Review]
		decays        []ordered[*Decay]
		tokens        []ordered[*Token]
		tokenRevokes  []ordered[*TokenRevocation]
		retrievals    []ordered[*Retrieval]
		outcomes      []ordered[*Outcome]
	)
	for _, s := range order {
		n := d.nodes[s]
		if s == txn.iri {
			continue
		}
		var class quad.IRI
		for _, t := range n.all(rdfType) {
			if iri, ok := t.(quad.IRI); ok && strings.HasPrefix(string(iri), nsMQL) {
				if class != "" {
					return nil, nil, d.fail(n, "has two mql classes, %s and %s", class, iri)
				}
				class = iri
			}
		}
		if class == "" {
			continue // annotations of an earlier record (a revoked claim); checked by re-encoding
		}
		switch class {
		case mqlStore, mqlPrincipal, mqlGrant, mqlSource, mqlClaim, mqlRevocation, mqlConfirmation, mqlArtifact, mqlReview, mqlDecay, mqlToken, mqlTokenRevoke,
			mqlRetrieval, mqlOutcome:
		default:
			return nil, nil, d.fail(n, "unknown record class %s", class)
		}
		var ord int
		if class != mqlStore {
			if ord, err = d.int(n, mqlOrd); err != nil {
				return nil, nil, err
			}
		}
		switch class {
		case mqlStore:
			if s != iriStore {
				return nil, nil, d.fail(n, "store meta must be on %s", iriStore)
			}
			m := &StoreMeta{}
			if m.Owner, err = d.principal(n, mqlOwner, true); err != nil {
				return nil, nil, err
			}
			if m.Strict, err = d.bool(n, mqlStrict); err != nil {
				return nil, nil, err
			}
			tx.Meta = m
		case mqlPrincipal:
			p := &Principal{Tx: id}
			if p.Name, err = parseNamed(prefPrincipal, "principal", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			t, err := d.str(n, mqlPrincipalType, true)
			if err != nil {
				return nil, nil, err
			}
			p.Type = PrincipalType(t)
			principals = append(principals, ordered[*Principal]{ord, p})
		case mqlGrant:
			g := &Grant{Tx: id}
			if g.ID, err = parseNamed(prefGrant, "grant", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			if g.Grantee, err = d.principal(n, mqlGrantee, true); err != nil {
				return nil, nil, err
			}
			r, err := d.str(n, mqlRight, true)
			if err != nil {
				return nil, nil, err
			}
			g.Right = Right(r)
			if g.Scope, err = d.str(n, mqlScope, true); err != nil {
				return nil, nil, err
			}
			if g.By, err = d.principal(n, provWasAttributedTo, true); err != nil {
				return nil, nil, err
			}
			grants = append(grants, ordered[*Grant]{ord, g})
		case mqlSource:
			src := &Source{Tx: id}
			if src.ID, err = parseNamed(prefSource, "source", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			if src.Excerpt, err = d.str(n, mqlExcerpt, false); err != nil {
				return nil, nil, err
			}
			if src.URI, err = d.str(n, mqlURI, false); err != nil {
				return nil, nil, err
			}
			if src.Revision, err = d.str(n, mqlRevision, false); err != nil {
				return nil, nil, err
			}
			sources = append(sources, ordered[*Source]{ord, src})
		case mqlClaim:
			c, err := d.claim(n)
			if err != nil {
				return nil, nil, err
			}
			claims = append(claims, ordered[*Claim]{ord, c})
		case mqlRevocation:
			r := &Revocation{Tx: id}
			if r.ID, err = parseNamed(prefRevocation, "revocation", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			c, err := d.claimRef(n, provInvalidated, true)
			if err != nil {
				return nil, nil, err
			}
			r.Claim = *c
			if r.By, err = d.principal(n, provWasAssociatedWith, true); err != nil {
				return nil, nil, err
			}
			if r.Because, err = d.str(n, mqlBecause, false); err != nil {
				return nil, nil, err
			}
			if r.Standing, err = d.str(n, mqlStanding, false); err != nil {
				return nil, nil, err
			}
			if r.ReplacedBy, err = d.claimRef(n, mqlReplacedBy, false); err != nil {
				return nil, nil, err
			}
			revocations = append(revocations, ordered[*Revocation]{ord, r})
		case mqlConfirmation:
			c := &Confirmation{Tx: id}
			if c.ID, err = parseNamed(prefConfirmation, "confirmation", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			cl, err := d.claimRef(n, mqlConfirms, true)
			if err != nil {
				return nil, nil, err
			}
			c.Claim = *cl
			if c.By, err = d.principal(n, provWasAssociatedWith, true); err != nil {
				return nil, nil, err
			}
			if c.Standing, err = d.str(n, mqlStanding, false); err != nil {
				return nil, nil, err
			}
			confirmations = append(confirmations, ordered[*Confirmation]{ord, c})
		case mqlArtifact:
			a, err := d.artifact(n)
			if err != nil {
				return nil, nil, err
			}
			artifacts = append(artifacts, ordered[*Artifact]{ord, a})
		case mqlReview:
			r := &Review{Tx: id}
			if r.ID, err = parseNamed(prefReview, "review", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			v, err := d.one(n, provUsed)
			if err != nil {
				return nil, nil, err
			}
			if r.Artifact, err = parseArtifactIRI(v); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			if r.By, err = d.principal(n, provWasAssociatedWith, true); err != nil {
				return nil, nil, err
			}
			if r.Because, err = d.str(n, mqlBecause, false); err != nil {
				return nil, nil, err
			}
			reviews = append(reviews, ordered[*Review]{ord, r})
		case mqlDecay:
			dc := &Decay{Tx: id}
			if dc.Predicate, err = d.str(n, mqlPredicate, true); err != nil {
				return nil, nil, err
			}
			v, err := d.one(n, mqlHalfLife)
			if err != nil {
				return nil, nil, err
			}
			ts, ok := v.(quad.TypedString)
			if ok && ts.Type == xsdDuration {
				dc.HalfLife, ok = parseDuration(string(ts.Value))
			}
			if !ok {
				return nil, nil, d.fail(n, "%s must be an xsd:duration PTnS, got %s", mqlHalfLife, show(v))
			}
			if dc.By, err = d.principal(n, provWasAttributedTo, true); err != nil {
				return nil, nil, err
			}
			decays = append(decays, ordered[*Decay]{ord, dc})
		case mqlToken:
			k := &Token{Tx: id}
			if k.ID, err = parseNamed(prefToken, "token", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			if k.Principal, err = d.principal(n, mqlHolder, true); err != nil {
				return nil, nil, err
			}
			if k.Hash, err = d.str(n, mqlSecretHash, true); err != nil {
				return nil, nil, err
			}
			if k.By, err = d.principal(n, provWasAttributedTo, true); err != nil {
				return nil, nil, err
			}
			if k.Expires, err = d.time(n, mqlExpires, false); err != nil {
				return nil, nil, err
			}
			tokens = append(tokens, ordered[*Token]{ord, k})
		case mqlTokenRevoke:
			r := &TokenRevocation{Tx: id}
			if r.ID, err = parseNamed(prefTokenRevoke, "token revocation", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			v, err := d.one(n, provInvalidated)
			if err != nil {
				return nil, nil, err
			}
			if r.Token, err = parseNamed(prefToken, "token", v); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			if r.By, err = d.principal(n, provWasAssociatedWith, true); err != nil {
				return nil, nil, err
			}
			tokenRevokes = append(tokenRevokes, ordered[*TokenRevocation]{ord, r})
		case mqlRetrieval:
			r := &Retrieval{Tx: id}
			if r.ID, err = parseNamed(prefRetrieval, "retrieval", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			if r.Run, err = d.str(n, mqlRun, true); err != nil {
				return nil, nil, err
			}
			if r.By, err = d.principal(n, provWasAssociatedWith, true); err != nil {
				return nil, nil, err
			}
			at, err := d.int(n, mqlReadAtTx)
			if err != nil {
				return nil, nil, err
			}
			r.ReadAt = TxID(at)
			if r.Statement, err = d.str(n, mqlStatement, false); err != nil {
				return nil, nil, err
			}
			used, err := d.list(n, provUsed, mqlUsedOrder)
			if err != nil {
				return nil, nil, err
			}
			for _, u := range used {
				iri, _ := u.(quad.IRI)
				if strings.HasPrefix(string(iri), prefArtifact) {
					a, err := parseArtifactIRI(u)
					if err != nil {
						return nil, nil, d.fail(n, "%v", err)
					}
					r.Artifacts = append(r.Artifacts, a)
					continue
				}
				c, err := parseClaimIRI(u)
				if err != nil {
					return nil, nil, d.fail(n, "%v", err)
				}
				r.Claims = append(r.Claims, c)
			}
			retrievals = append(retrievals, ordered[*Retrieval]{ord, r})
		case mqlOutcome:
			o := &Outcome{Tx: id}
			if o.ID, err = parseNamed(prefOutcome, "outcome", s); err != nil {
				return nil, nil, d.fail(n, "%v", err)
			}
			if o.Run, err = d.str(n, mqlRun, true); err != nil {
				return nil, nil, err
			}
			res, err := d.str(n, mqlResult, true)
			if err != nil {
				return nil, nil, err
			}
			o.Result = OutcomeResult(res)
			if o.Because, err = d.str(n, mqlBecause, false); err != nil {
				return nil, nil, err
			}
			if o.By, err = d.principal(n, provWasAttributedTo, true); err != nil {
				return nil, nil, err
			}
			outcomes = append(outcomes, ordered[*Outcome]{ord, o})
		default:
			return nil, nil, d.fail(n, "unknown record class %s", class)
		}
	}
	if tx.Principals, err = sortRecords(d, "principal", principals); err != nil {
		return nil, nil, err
	}
	if tx.Grants, err = sortRecords(d, "grant", grants); err != nil {
		return nil, nil, err
	}
	if tx.Sources, err = sortRecords(d, "source", sources); err != nil {
		return nil, nil, err
	}
	if tx.Claims, err = sortRecords(d, "claim", claims); err != nil {
		return nil, nil, err
	}
	if tx.Revocations, err = sortRecords(d, "revocation", revocations); err != nil {
		return nil, nil, err
	}
	if tx.Confirmations, err = sortRecords(d, "confirmation", confirmations); err != nil {
		return nil, nil, err
	}
	if tx.Artifacts, err = sortRecords(d, "artifact", artifacts); err != nil {
		return nil, nil, err
	}
	if tx.Reviews, err = sortRecords(d, "review", reviews); err != nil {
		return nil, nil, err
	}
	if tx.Decays, err = sortRecords(d, "decay", decays); err != nil {
		return nil, nil, err
	}
	if tx.Tokens, err = sortRecords(d, "token", tokens); err != nil {
		return nil, nil, err
	}
	if tx.TokenRevocations, err = sortRecords(d, "token revocation", tokenRevokes); err != nil {
		return nil, nil, err
	}
	if tx.Retrievals, err = sortRecords(d, "retrieval", retrievals); err != nil {
		return nil, nil, err
	}
	if tx.Outcomes, err = sortRecords(d, "outcome", outcomes); err != nil {
		return nil, nil, err
	}

	// Canonical check: the input must be exactly what encoding the result gives.
	want, err := encodeTx(tx)
	if err != nil {
		return nil, nil, &decodeError{tx: id, msg: strings.TrimPrefix(err.Error(), fmt.Sprintf("tx %d: ", id))}
	}
	wantSet := make(map[quad.Quad]struct{}, len(want))
	for _, q := range want {
		wantSet[q] = struct{}{}
	}
	got := make(map[quad.Quad]struct{}, len(quads))
	for _, q := range quads {
		if _, ok := wantSet[q]; !ok {
			qq := q
			return nil, nil, &decodeError{tx: id, quad: &qq, msg: "unexpected quad " + formatQuad(q)}
		}
		got[q] = struct{}{}
	}
	for _, q := range want {
		if _, ok := got[q]; !ok {
			return nil, nil, &decodeError{tx: id, msg: "missing quad " + formatQuad(q)}
		}
	}
	return tx, want, nil
}

func (d *txDecoder) claim(n *node) (*Claim, error) {
	id, err := parseClaimIRI(n.iri)
	if err != nil {
		return nil, d.fail(n, "%v", err)
	}
	c := &Claim{ID: id, Tx: d.id}
	v, err := d.one(n, mqlValue)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case quad.String:
		c.Value = Value{Type: String, Str: string(x)}
	case quad.Float:
		if !finite(float64(x)) {
			return nil, d.fail(n, "value %s is not a finite number", show(v))
		}
		c.Value = Value{Type: Number, Num: float64(x)}
	case quad.Bool:
		c.Value = Value{Type: Bool, Bool: bool(x)}
	case quad.TypedString:
		if t, ok := asTime(x); ok {
			c.Value = Value{Type: Time, Time: t}
		} else if x.Type == mqlRefType {
			c.Value = Value{Type: Ref, Str: string(x.Value)}
		} else {
			return nil, d.fail(n, "value %s has an unsupported datatype", show(v))
		}
	default:
		return nil, d.fail(n, "value %s has an unsupported type", show(v))
	}
	if c.By, err = d.principal(n, provWasAttributedTo, true); err != nil {
		return nil, err
	}
	k, err := d.str(n, mqlKind, true)
	if err != nil {
		return nil, err
	}
	c.Kind = Kind(k)
	if c.Confidence, err = d.float(n, mqlConfidence); err != nil {
		return nil, err
	}
	srcs, err := d.list(n, provHadPrimarySource, mqlSourceOrder)
	if err != nil {
		return nil, err
	}
	for _, sv := range srcs {
		id, err := parseNamed(prefSource, "source", sv)
		if err != nil {
			return nil, d.fail(n, "%v", err)
		}
		c.Sources = append(c.Sources, id)
	}
	if c.ValidFrom, err = d.time(n, mqlValidFrom, false); err != nil {
		return nil, err
	}
	if c.ValidUntil, err = d.time(n, mqlValidUntil, false); err != nil {
		return nil, err
	}
	if c.SeenBy, err = d.principalList(n); err != nil {
		return nil, err
	}
	if c.Supersedes, err = d.claimRef(n, provWasRevisionOf, false); err != nil {
		return nil, err
	}
	if c.Contests, err = d.claimRef(n, mqlContests, false); err != nil {
		return nil, err
	}
	if c.Corroborates, err = d.claimRef(n, mqlCorroborates, false); err != nil {
		return nil, err
	}
	g, err := d.opt(n, mqlGrantPred)
	if err != nil {
		return nil, err
	}
	if g != nil {
		if c.Grant, err = parseNamed(prefGrant, "grant", g); err != nil {
			return nil, d.fail(n, "%v", err)
		}
	}
	return c, nil
}

func (d *txDecoder) artifact(n *node) (*Artifact, error) {
	id, err := parseArtifactIRI(n.iri)
	if err != nil {
		return nil, d.fail(n, "%v", err)
	}
	a := &Artifact{ID: id, Tx: d.id}
	from, err := d.list(n, provWasDerivedFrom, mqlDerivedFromOrder)
	if err != nil {
		return nil, err
	}
	for _, v := range from {
		iri, _ := v.(quad.IRI)
		switch {
		case strings.HasPrefix(string(iri), prefClaim):
			c, err := parseClaimIRI(v)
			if err != nil {
				return nil, d.fail(n, "%v", err)
			}
			a.DerivedFrom = append(a.DerivedFrom, NodeRef{Claim: &c})
		case strings.HasPrefix(string(iri), prefArtifact):
			x, err := parseArtifactIRI(v)
			if err != nil {
				return nil, d.fail(n, "%v", err)
			}
			a.DerivedFrom = append(a.DerivedFrom, NodeRef{Artifact: &x})
		default:
			return nil, d.fail(n, "derived from %s, which is neither a claim nor an artifact", show(v))
		}
	}
	if a.By, err = d.principal(n, provWasAttributedTo, true); err != nil {
		return nil, err
	}
	if a.Confidence, err = d.float(n, mqlConfidence); err != nil {
		return nil, err
	}
	if a.SeenBy, err = d.principalList(n); err != nil {
		return nil, err
	}
	v, err := d.opt(n, provWasRevisionOf)
	if err != nil {
		return nil, err
	}
	if v != nil {
		prev, err := parseArtifactIRI(v)
		if err != nil {
			return nil, d.fail(n, "%s: %v", provWasRevisionOf, err)
		}
		a.Supersedes = &prev
	}
	if a.Run, err = d.str(n, mqlRun, false); err != nil {
		return nil, err
	}
	return a, nil
}

// ---- reference checking --------------------------------------------------------------------

// chain tracks what a sequence of transactions has recorded, so that a transaction can be
// checked before it is committed or indexed: ids follow on, versions follow on, and every
// claim, artifact and source it refers to exists. Index.Add panics on a broken reference;
// nothing that fails check is ever handed to it or written.
type chain struct{ rec recorded }

// recorded answers what a chain checks. A Store's chain asks its index, which already knows
// every record (pending ones included); decoding and import, which have no index, keep sets.
type recorded interface {
	top() TxID
	hasClaim(ClaimID) bool
	keyVersion(Key) int
	hasArtifact(ArtifactID) bool
	artifactVersion(name string) int
	hasSource(id string) bool
	hasToken(id string) bool
	add(tx *Tx)
}

func newChain() *chain { return &chain{rec: newRecordSets()} }

// chainOver checks against rec, which answers for what is recorded already.
func chainOver(rec recorded) *chain { return &chain{rec: rec} }

func (c *chain) head() TxID { return c.rec.top() }
func (c *chain) add(tx *Tx) { c.rec.add(tx) }

type recordSets struct {
	head    TxID
	claims  map[ClaimID]bool
	keyVer  map[Key]int
	arts    map[ArtifactID]bool
	artVer  map[string]int
	sources map[string]bool
	tokens  map[string]bool
}

func newRecordSets() *recordSets {
	return &recordSets{
		claims: map[ClaimID]bool{}, keyVer: map[Key]int{},
		arts: map[ArtifactID]bool{}, artVer: map[string]int{},
		sources: map[string]bool{}, tokens: map[string]bool{},
	}
}

func (r *recordSets) top() TxID                       { return r.head }
func (r *recordSets) hasClaim(id ClaimID) bool        { return r.claims[id] }
func (r *recordSets) keyVersion(k Key) int            { return r.keyVer[k] }
func (r *recordSets) hasArtifact(id ArtifactID) bool  { return r.arts[id] }
func (r *recordSets) artifactVersion(name string) int { return r.artVer[name] }
func (r *recordSets) hasSource(id string) bool        { return r.sources[id] }
func (r *recordSets) hasToken(id string) bool         { return r.tokens[id] }

func (r *recordSets) add(tx *Tx) {
	r.head = tx.ID
	for _, s := range tx.Sources {
		r.sources[s.ID] = true
	}
	for _, cl := range tx.Claims {
		r.claims[cl.ID] = true
		r.keyVer[cl.ID.Key] = cl.ID.Version
	}
	for _, a := range tx.Artifacts {
		r.arts[a.ID] = true
		r.artVer[a.ID.Name] = a.ID.Version
	}
	for _, k := range tx.Tokens {
		r.tokens[k.ID] = true
	}
}

// check reports the first problem with appending tx; it changes nothing.
func (c *chain) check(tx *Tx) error { return c.checkPart(tx, false) }

// checkPart is check for the records of tx, which continues the last transaction recorded
// when cont is set (a staged build's later parts).
func (c *chain) checkPart(tx *Tx, cont bool) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("tx %d: %s", tx.ID, fmt.Sprintf(format, args...))
	}
	if head := c.rec.top(); !cont && tx.ID != head+1 || cont && tx.ID != head {
		return fmt.Errorf("tx %d follows tx %d: transaction ids must be contiguous", tx.ID, head)
	}
	if tx.ID == 1 && tx.Meta == nil {
		return fail("the genesis transaction records no store meta (owner, strict)")
	}
	if tx.ID != 1 && tx.Meta != nil {
		return fail("only the genesis transaction may record store meta")
	}
	newSources := map[string]bool{}
	for _, s := range tx.Sources {
		newSources[s.ID] = true
	}
	newClaims := map[ClaimID]bool{}
	newVer := map[Key]int{}
	hasClaim := func(id ClaimID) bool { return c.rec.hasClaim(id) || newClaims[id] }
	for _, cl := range tx.Claims {
		v := c.rec.keyVersion(cl.ID.Key)
		if nv, ok := newVer[cl.ID.Key]; ok {
			v = nv
		}
		if cl.ID.Version != v+1 {
			return fail("claim %s recorded after version %d of its key", cl.ID, v)
		}
		for _, ref := range []*ClaimID{cl.Supersedes, cl.Contests, cl.Corroborates} {
			if ref == nil {
				continue
			}
			if ref.Key != cl.ID.Key {
				return fail("claim %s refers to %s, a claim of another key", cl.ID, ref)
			}
			if !hasClaim(*ref) {
				return fail("claim %s refers to %s, which was never recorded", cl.ID, ref)
			}
		}
		for _, s := range cl.Sources {
			if !c.rec.hasSource(s) && !newSources[s] {
				return fail("claim %s names source %q, which was never recorded", cl.ID, s)
			}
		}
		newClaims[cl.ID] = true
		newVer[cl.ID.Key] = cl.ID.Version
	}
	for _, r := range tx.Revocations {
		if !hasClaim(r.Claim) {
			return fail("revocation %s of %s, which was never recorded", r.ID, r.Claim)
		}
		if r.ReplacedBy != nil && !hasClaim(*r.ReplacedBy) {
			return fail("revocation %s names replacement %s, which was never recorded", r.ID, r.ReplacedBy)
		}
	}
	for _, cf := range tx.Confirmations {
		if !hasClaim(cf.Claim) {
			return fail("confirmation %s of %s, which was never recorded", cf.ID, cf.Claim)
		}
	}
	newArts := map[ArtifactID]bool{}
	newArtVer := map[string]int{}
	hasArt := func(id ArtifactID) bool { return c.rec.hasArtifact(id) || newArts[id] }
	for _, a := range tx.Artifacts {
		v := c.rec.artifactVersion(a.ID.Name)
		if nv, ok := newArtVer[a.ID.Name]; ok {
			v = nv
		}
		if a.ID.Version != v+1 {
			return fail("artifact %s recorded after version %d", a.ID, v)
		}
		if p := a.Supersedes; p != nil {
			if p.Name != a.ID.Name || p.Version >= a.ID.Version {
				return fail("artifact %s supersedes %s, which is not an earlier version of it", a.ID, p)
			}
			if !hasArt(*p) {
				return fail("artifact %s supersedes %s, which was never recorded", a.ID, p)
			}
		}
		for _, d := range a.DerivedFrom {
			if d.Claim != nil && !hasClaim(*d.Claim) {
				return fail("artifact %s derived from %s, which was never recorded", a.ID, d.Claim)
			}
			if d.Artifact != nil && !hasArt(*d.Artifact) {
				return fail("artifact %s derived from %s, which was never recorded", a.ID, d.Artifact)
			}
		}
		newArts[a.ID] = true
		newArtVer[a.ID.Name] = a.ID.Version
	}
	for _, r := range tx.Reviews {
		if !hasArt(r.Artifact) {
			return fail("review %s of %s, which was never recorded", r.ID, r.Artifact)
		}
	}
	for _, r := range tx.Retrievals {
		// What a read served existed when it read: before this transaction.
		for _, id := range r.Claims {
			if !c.rec.hasClaim(id) {
				return fail("retrieval %s served %s, which was never recorded", r.ID, id)
			}
		}
		for _, id := range r.Artifacts {
			if !c.rec.hasArtifact(id) {
				return fail("retrieval %s served %s, which was never recorded", r.ID, id)
			}
		}
	}
	newTokens := map[string]bool{}
	for _, k := range tx.Tokens {
		if c.rec.hasToken(k.ID) || newTokens[k.ID] {
			return fail("token %s is recorded twice", k.ID)
		}
		newTokens[k.ID] = true
	}
	for _, r := range tx.TokenRevocations {
		if !c.rec.hasToken(r.Token) && !newTokens[r.Token] {
			return fail("token revocation %s of token %s, which was never recorded", r.ID, r.Token)
		}
	}
	return nil
}
