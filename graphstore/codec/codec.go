// Package codec turns records into quads and back: how a record.Tx becomes Cayley quads,
// and how quads read from a store or an import become a record.Tx again. It holds the
// vocabulary (vocab.go: the IRIs docs/VOCABULARY.md describes; keep the two in step), the
// canonical encoding (EncodeTx), the strict decoding (DecodeTxs, DecodeTx), the chain check
// that each transaction follows on from what is recorded before it (Chain), and the N-Quads
// writer of an export (WriteNQuads).
//
// Every quad of transaction N carries the graph label <urn:mql:tx:N>. Every record is one node
// with its own IRI, and every quad of a record has that node as subject, so a transaction's
// quads are reachable from the transaction node (which links every subject it wrote with
// urn:mql:wrote) without a label scan. The encoding is canonical: decoding re-encodes each
// transaction and rejects input that differs from the canonical quads in any way, so anything
// DecodeTxs accepts round-trips exactly.
//
// codec stores and reads nothing: package graphstore writes the quads to a backend and reads
// them back, reads N-Quads imports, and checks whole stores; package index keeps what the
// transactions say in memory.
package codec

import (
	"encoding/json"
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

	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/nquads"
)

// ---- IRIs ----------------------------------------------------------------------------------

func esc(s string) string { return url.PathEscape(s) }

// escSubject also escapes '.', which separates subject from predicate in a claim IRI.
func escSubject(s string) string { return strings.ReplaceAll(url.PathEscape(s), ".", "%2E") }

// TxIRI is the node of transaction id, and the graph label of every quad it wrote.
func TxIRI(id record.TxID) quad.IRI { return quad.IRI(PrefTx + strconv.FormatInt(int64(id), 10)) }

// PrincipalIRI, GrantIRI, TokenIRI, ClaimIRI, ArtifactIRI and the others below are the node of
// a record of each kind: its prefix, then its escaped id.
func PrincipalIRI(name string) quad.IRI { return quad.IRI(PrefPrincipal + esc(name)) }
func GrantIRI(id string) quad.IRI       { return quad.IRI(PrefGrant + esc(id)) }
func sourceIRI(id string) quad.IRI      { return quad.IRI(PrefSource + esc(id)) }
func revocationIRI(id string) quad.IRI  { return quad.IRI(PrefRevocation + esc(id)) }
func confirmationIRI(id string) quad.IRI {
	return quad.IRI(PrefConfirmation + esc(id))
}
func reviewIRI(id string) quad.IRI { return quad.IRI(PrefReview + esc(id)) }
func TokenIRI(id string) quad.IRI  { return quad.IRI(PrefToken + esc(id)) }
func retrievalIRI(id string) quad.IRI {
	return quad.IRI(PrefRetrieval + esc(id))
}
func outcomeIRI(id string) quad.IRI { return quad.IRI(PrefOutcome + esc(id)) }
func tokenRevocationIRI(id string) quad.IRI {
	return quad.IRI(PrefTokenRevoke + esc(id))
}
func decayIRI(tx record.TxID, i int) quad.IRI {
	return quad.IRI(PrefDecay + strconv.FormatInt(int64(tx), 10) + "." + strconv.Itoa(i))
}

// ParseDecayIRI returns the transaction and the place among its decays that a decay's node
// names (<urn:mql:decay:TX.I>).
func ParseDecayIRI(v quad.Value) (record.TxID, int, bool) {
	iri, ok := v.(quad.IRI)
	if !ok || !strings.HasPrefix(string(iri), PrefDecay) {
		return 0, 0, false
	}
	txs, is, ok := strings.Cut(string(iri[len(PrefDecay):]), ".")
	tx, err1 := strconv.ParseInt(txs, 10, 64)
	i, err2 := strconv.Atoi(is)
	if !ok || err1 != nil || err2 != nil || tx < 1 || i < 0 || decayIRI(record.TxID(tx), i) != iri {
		return 0, 0, false
	}
	return record.TxID(tx), i, true
}

func ClaimIRI(c record.ClaimID) quad.IRI {
	return quad.IRI(PrefClaim + escSubject(c.Subject) + "." + esc(c.Predicate) + "@" + strconv.Itoa(c.Version))
}

func ArtifactIRI(a record.ArtifactID) quad.IRI {
	return quad.IRI(PrefArtifact + esc(a.Name) + "@" + strconv.Itoa(a.Version))
}

// ParseTxIRI returns the id named by <urn:mql:tx:N>.
func ParseTxIRI(v quad.Value) (record.TxID, bool) {
	iri, ok := v.(quad.IRI)
	if !ok || !strings.HasPrefix(string(iri), PrefTx) {
		return 0, false
	}
	digits := string(iri[len(PrefTx):])
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != digits {
		return 0, false
	}
	return record.TxID(n), true
}

// ParseNamed returns the unescaped name of an IRI prefix+esc(name).
func ParseNamed(prefix, what string, v quad.Value) (string, error) {
	iri, ok := v.(quad.IRI)
	if !ok || !strings.HasPrefix(string(iri), prefix) {
		return "", fmt.Errorf("%s must be an IRI <%s…>, got %s", what, prefix, Show(v))
	}
	s, err := url.PathUnescape(string(iri[len(prefix):]))
	if err != nil || s == "" || esc(s) != string(iri[len(prefix):]) {
		return "", fmt.Errorf("%s IRI %s is not canonically escaped", what, Show(v))
	}
	return s, nil
}

func parseVersioned(prefix, what string, v quad.Value) (string, int, error) {
	iri, ok := v.(quad.IRI)
	if !ok || !strings.HasPrefix(string(iri), prefix) {
		return "", 0, fmt.Errorf("%s must be an IRI <%s…@N>, got %s", what, prefix, Show(v))
	}
	rest := string(iri[len(prefix):])
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return "", 0, fmt.Errorf("%s IRI %s has no @version", what, Show(v))
	}
	n, err := strconv.Atoi(rest[at+1:])
	if err != nil || n < 1 || strconv.Itoa(n) != rest[at+1:] {
		return "", 0, fmt.Errorf("%s IRI %s: version must be a positive integer", what, Show(v))
	}
	return rest[:at], n, nil
}

// ParseClaimIRI returns the claim id a claim node names.
func ParseClaimIRI(v quad.Value) (record.ClaimID, error) {
	name, n, err := parseVersioned(PrefClaim, "claim", v)
	if err != nil {
		return record.ClaimID{}, err
	}
	dot := strings.IndexByte(name, '.')
	if dot < 0 {
		return record.ClaimID{}, fmt.Errorf("claim IRI %s is not <%sSubject.predicate@N>", Show(v), PrefClaim)
	}
	subj, err1 := url.PathUnescape(name[:dot])
	pred, err2 := url.PathUnescape(name[dot+1:])
	id := record.ClaimID{Key: record.Key{Subject: subj, Predicate: pred}, Version: n}
	if err1 != nil || err2 != nil || subj == "" || pred == "" || ClaimIRI(id) != v.(quad.IRI) {
		return record.ClaimID{}, fmt.Errorf("claim IRI %s is not canonically escaped", Show(v))
	}
	return id, nil
}

// ParseArtifactIRI returns the artifact version an artifact node names.
func ParseArtifactIRI(v quad.Value) (record.ArtifactID, error) {
	name, n, err := parseVersioned(PrefArtifact, "artifact", v)
	if err != nil {
		return record.ArtifactID{}, err
	}
	s, err := url.PathUnescape(name)
	id := record.ArtifactID{Name: s, Version: n}
	if err != nil || s == "" || ArtifactIRI(id) != v.(quad.IRI) {
		return record.ArtifactID{}, fmt.Errorf("artifact IRI %s is not canonically escaped", Show(v))
	}
	return id, nil
}

// ---- literals ------------------------------------------------------------------------------

// TimeLit is the stored form of a time: an xsd:dateTime typed literal in UTC with nanoseconds.
// (quad.Time is not used: its N-Quads form drops the fraction of a second, and PostgreSQL
// stores it with microsecond precision.)
func TimeLit(t time.Time) quad.Value {
	return quad.TypedString{Value: quad.String(t.UTC().Format(time.RFC3339Nano)), Type: XSDDateTime}
}

var durationRE = regexp.MustCompile(`^PT([0-9]{1,11})(?:\.([0-9]{1,9}))?S$`)

// DurationLit writes a positive duration as an xsd:duration in seconds: "PT600S", "PT0.5S".
func DurationLit(d time.Duration) quad.Value {
	s := "PT" + strconv.FormatInt(int64(d/time.Second), 10)
	if ns := int64(d % time.Second); ns != 0 {
		s += "." + strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
	}
	return quad.TypedString{Value: quad.String(s + "S"), Type: XSDDuration}
}

// ParseDuration reads the xsd:duration DurationLit writes; ok is false for any other form.
func ParseDuration(s string) (time.Duration, bool) {
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
		return TimeLit(time.Time(x))
	case quad.TypedString:
		switch x.Type {
		case XSDDateTime, "xsd:dateTime":
			if t, err := time.Parse(time.RFC3339Nano, string(x.Value)); err == nil {
				return TimeLit(t)
			}
		case XSDString, XSDInteger, XSDDouble, XSDBoolean:
			if nv, err := x.ParseValue(); err == nil {
				return nv
			}
		}
	}
	return v
}

// CanonQuad is q with its object in the form storage gives back (see canonValue), so that quads
// written and quads read compare equal.
func CanonQuad(q quad.Quad) quad.Quad {
	q.Object = canonValue(q.Object)
	return q
}

// Show renders a value for an error message.
func Show(v quad.Value) string {
	if v == nil {
		return "nothing"
	}
	s := v.String()
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// Finite reports whether f is neither NaN nor infinite.
func Finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// ---- encoding ------------------------------------------------------------------------------

type encoder struct {
	tx    *record.Tx
	label quad.IRI
	quads []quad.Quad
	// expect: encodesTo compares the quads with these instead of keeping them; pos is the next
	// to compare, mismatch is set at the first that differs.
	expect   []quad.Quad
	pos      int
	mismatch bool
	seen     map[quad.IRI]*written // what was written of each subject
	last     *written              // the subject written last: the next quad's, mostly
	long     map[quad.Quad]struct{}
	records  map[quad.IRI]string // record node -> what it records, to refuse two records on one node
	subjs    []quad.IRI          // subjects in first-use order, for urn:mql:wrote
	subjSet  map[quad.IRI]struct{}
	err      error // first invalid string met
	check    bool  // ValidateTx: judge the values, keep no quads
	node     bool  // EncodeTxNode: keep only the quads of the transaction's node
	// EncodeRecordMatching: keep only the quads with match in direction matchDir.
	matchDir quad.Direction
	match    quad.Value
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
	if e.check {
		return
	}
	if e.subjSet != nil {
		if _, ok := e.subjSet[s]; !ok && s != e.label {
			e.subjSet[s] = struct{}{}
			e.subjs = append(e.subjs, s)
		}
	}
	if e.node && s != e.label {
		return
	}
	switch e.matchDir {
	case quad.Subject:
		if s != e.match {
			return
		}
	case quad.Object:
		if o != e.match {
			return
		}
	}
	if e.expect != nil {
		// Compared field by field: a quad.Quad made of s, p and the label would box each IRI,
		// three allocations for every quad an import reads.
		if !e.mismatch && e.pos < len(e.expect) && sameQuad(&e.expect[e.pos], s, p, o, e.label) {
			e.pos++
		} else {
			e.mismatch = true
		}
		return
	}
	q := quad.Quad{Subject: s, Predicate: p, Object: o, Label: e.label}
	if e.seen != nil && !e.first(s, p, o, q) { // nil for one record, whose quads are distinct
		return // a transaction's quads are a set, as a quad store holds them: never one twice
	}
	e.quads = append(e.quads, q)
}

// sameQuad reports whether x is the quad s p o label.
func sameQuad(x *quad.Quad, s, p quad.IRI, o quad.Value, label quad.IRI) bool {
	xs, ok1 := x.Subject.(quad.IRI)
	xp, ok2 := x.Predicate.(quad.IRI)
	xl, ok3 := x.Label.(quad.IRI)
	return ok1 && ok2 && ok3 && xs == s && xp == p && xl == label && x.Object == o
}

// written is the predicates and objects written of one subject, in order.
type written struct {
	s     quad.IRI
	ps    []quad.IRI
	os    []quad.Value
	inSet bool // the encoder's set of long subjects' quads holds them
}

// first reports whether q was not written before, and notes it. A record's quads come
// together on its node, so the subject is mostly the last one's, and a node's few quads are
// searched; a node with many (a transaction's) is kept in a set. Hashing every quad was a
// third of an import's decoding.
func (e *encoder) first(s, p quad.IRI, o quad.Value, q quad.Quad) bool {
	w := e.last
	if w == nil || w.s != s {
		if w = e.seen[s]; w == nil {
			w = &written{s: s}
			e.seen[s] = w
		}
		e.last = w
	}
	if len(w.ps) < shortList {
		for i := range w.ps {
			if w.ps[i] == p && w.os[i] == o {
				return false
			}
		}
	} else {
		if e.long == nil {
			e.long = map[quad.Quad]struct{}{}
		}
		if !w.inSet {
			w.inSet = true
			for i := range w.ps {
				e.long[quad.Quad{Subject: s, Predicate: w.ps[i], Object: w.os[i], Label: q.Label}] = struct{}{}
			}
		}
		if _, dup := e.long[q]; dup {
			return false
		}
		e.long[q] = struct{}{}
	}
	w.ps, w.os = append(w.ps, p), append(w.os, o)
	return true
}

func (e *encoder) addStr(s, p quad.IRI, v string) {
	if v != "" {
		e.add(s, p, quad.String(v))
	}
}

func (e *encoder) record(node quad.IRI, what string) error {
	if e.records == nil { // one record
		return nil
	}
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

// excerptsLiteral is the literal of mql:sourceExcerpts: what a claim quotes from each of its
// n sources, as a JSON list of strings in their order ("" for none), written only when it
// quotes something.
func excerptsLiteral(excerpts []string, n int) (string, error) {
	if len(excerpts) != n {
		return "", fmt.Errorf("%d excerpts for %d sources", len(excerpts), n)
	}
	quotes := false
	for _, x := range excerpts {
		if !utf8.ValidString(x) {
			return "", errors.New("an excerpt is not valid UTF-8")
		}
		if strings.IndexByte(x, 0) >= 0 {
			return "", errors.New("an excerpt contains a NUL byte")
		}
		quotes = quotes || x != ""
	}
	if !quotes {
		return "", errors.New("excerpts that quote nothing (record none)")
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(excerpts); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func checkTx(what string, got, want record.TxID) error {
	if got != want {
		return fmt.Errorf("%s is stamped tx %d inside tx %d", what, got, want)
	}
	return nil
}

func encodeValue(v record.Value) (quad.Value, error) {
	switch v.Type {
	case record.String:
		return quad.String(v.Str), nil
	case record.Number:
		if !Finite(v.Num) {
			return nil, fmt.Errorf("number value %v is not finite", v.Num)
		}
		return quad.Float(v.Num), nil
	case record.Bool:
		return quad.Bool(v.Bool), nil
	case record.Time:
		if v.Time.IsZero() {
			return nil, errors.New("time value is the zero time")
		}
		return TimeLit(v.Time), nil
	case record.Ref:
		if v.Str == "" {
			return nil, errors.New("reference value is empty")
		}
		return quad.TypedString{Value: quad.String(v.Str), Type: MQLRefType}, nil
	}
	return nil, fmt.Errorf("unknown value type %q", v.Type)
}

// ValidConfidence reports whether f is a confidence: finite, from 0 to 1.
func ValidConfidence(f float64) bool { return Finite(f) && f >= 0 && f <= 1 }

// ValidHash reports whether s is a SHA-256 in lower-case hex.
func ValidHash(s string) bool {
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

// EncodeTx turns a transaction into its quads, in a deterministic order without duplicates. It
// refuses a transaction that could not be decoded back to an equal one (missing mandatory
// fields, two records on one node, duplicated list elements, non-UTC-representable values).
func EncodeTx(tx *record.Tx) ([]quad.Quad, error) { return encodeTx(tx, false) }

// ValidateTx reports what EncodeTx would refuse in tx, without building its quads: what a
// writer checks before it stores a transaction, so that every stored one can be exported.
func ValidateTx(tx *record.Tx) error {
	_, err := encodeTx(tx, true)
	return err
}

// encodesTo reports whether EncodeTx(tx) gives exactly quads, which hold no quad twice,
// without building its quads: the encoder compares each quad it would write with the next of
// quads. (An encoding that wrote a quad twice would not match quads, so it need not drop
// repeats.)
func encodesTo(tx *record.Tx, quads []quad.Quad) bool {
	if tx == nil || tx.ID < 1 {
		return false
	}
	recs := recordCount(tx)
	e := &encoder{tx: tx, label: TxIRI(tx.ID), records: make(map[quad.IRI]string, recs),
		subjSet: make(map[quad.IRI]struct{}, recs), expect: quads}
	return e.transaction() == nil && !e.mismatch && e.pos == len(quads)
}

// recordCount is about how many record nodes tx's encoding has: what the encoder's maps and
// slices are sized for.
func recordCount(tx *record.Tx) int {
	return len(tx.Claims) + len(tx.Artifacts) + len(tx.Sources) + len(tx.Revocations)
}

func encodeTx(tx *record.Tx, check bool) ([]quad.Quad, error) {
	if tx == nil {
		return nil, errors.New("nil transaction")
	}
	if tx.ID < 1 {
		return nil, fmt.Errorf("transaction id %d is not positive", tx.ID)
	}
	// Sized for the bulk of a large transaction (a claim is ~16 quads on one node), so that
	// encoding it does not keep growing them.
	recs := recordCount(tx)
	e := newEncoder(tx, check, recs)
	if err := e.transaction(); err != nil {
		return nil, fmt.Errorf("tx %d: %w", tx.ID, err)
	}
	return e.quads, nil
}

// EncodeTxNode returns the quads of EncodeTx(tx) whose subject is the transaction's node
// (TxIRI(tx.ID)): its types, time and principal, and a urn:mql:wrote edge to every other
// subject of its quads, in EncodeTx's order. It refuses what EncodeTx refuses.
func EncodeTxNode(tx *record.Tx) ([]quad.Quad, error) {
	if tx == nil || tx.ID < 1 {
		return encodeTx(tx, false) // the same refusal
	}
	recs := recordCount(tx)
	e := newEncoder(tx, false, 1)
	e.subjSet = make(map[quad.IRI]struct{}, recs)
	e.node = true
	if err := e.transaction(); err != nil {
		return nil, fmt.Errorf("tx %d: %w", tx.ID, err)
	}
	return e.quads, nil
}

// EncodeRecord returns the quads EncodeTx writes for one record of transaction tx, in
// EncodeTx's order: rec is the ord-th record of its kind in tx (what urn:mql:ord says), one of
// *record.StoreMeta, *record.Principal, *record.Grant, *record.Source, *record.Claim,
// *record.Revocation, *record.Confirmation, *record.Artifact, *record.Review, *record.Decay,
// *record.Token, *record.TokenRevocation, *record.Retrieval and *record.Outcome. Of tx only ID
// and Time are read (the label of every quad, a decay's node, and the time of a revocation's
// quads on the claim it revokes), so tx need not hold its records. The quads of a record are
// those whose subject is its node, except a revocation's, which also writes two quads on the
// revoked claim's node; EncodeTx writes a quad that two records of one transaction give (two
// revocations of one claim) once.
func EncodeRecord(tx *record.Tx, ord int, rec any) ([]quad.Quad, error) {
	return EncodeRecordMatching(tx, ord, rec, quad.Any, nil)
}

// EncodeRecordMatching is EncodeRecord keeping only the quads that have v in direction d
// (quad.Subject or quad.Object; quad.Any keeps every quad), without making the others. It
// refuses what EncodeRecord refuses.
func EncodeRecordMatching(tx *record.Tx, ord int, rec any, d quad.Direction, v quad.Value) ([]quad.Quad, error) {
	if tx == nil || tx.ID < 1 {
		return encodeTx(tx, false) // the same refusal
	}
	if d != quad.Any && d != quad.Subject && d != quad.Object {
		return nil, fmt.Errorf("codec: quads matching direction %v: only subject and object", d)
	}
	// One record's quads are distinct (its list elements are checked to be) and on its own
	// node: no maps to dedup them or to refuse two records on one node.
	e := &encoder{tx: tx, label: TxIRI(tx.ID), matchDir: d, match: v}
	if d == quad.Any {
		e.quads = make([]quad.Quad, 0, 16)
	}
	var err error
	switch r := rec.(type) {
	case *record.StoreMeta:
		err = e.meta(r)
	case *record.Principal:
		err = e.principal(ord, r)
	case *record.Grant:
		err = e.grant(ord, r)
	case *record.Source:
		err = e.source(ord, r)
	case *record.Claim:
		err = e.claim(ord, r)
	case *record.Revocation:
		err = e.revocation(ord, r)
	case *record.Confirmation:
		err = e.confirmation(ord, r)
	case *record.Artifact:
		err = e.artifact(ord, r)
	case *record.Review:
		err = e.review(ord, r)
	case *record.Decay:
		err = e.decay(ord, r)
	case *record.Token:
		err = e.token(ord, r)
	case *record.TokenRevocation:
		err = e.tokenRevocation(ord, r)
	case *record.Retrieval:
		err = e.retrieval(ord, r)
	case *record.Outcome:
		err = e.outcome(ord, r)
	default:
		err = fmt.Errorf("%T is not a record", rec)
	}
	if err == nil {
		err = e.err
	}
	if err != nil {
		return nil, fmt.Errorf("tx %d: %w", tx.ID, err)
	}
	return e.quads, nil
}

// WroteQuad is the quad by which transaction tx's node links node, a subject of its quads
// (every record the transaction records, and a claim it revokes): what EncodeTx writes last.
func WroteQuad(tx record.TxID, node quad.IRI) quad.Quad {
	t := TxIRI(tx)
	return quad.Quad{Subject: t, Predicate: MQLWrote, Object: node, Label: t}
}

func newEncoder(tx *record.Tx, check bool, recs int) *encoder {
	e := &encoder{tx: tx, label: TxIRI(tx.ID), records: make(map[quad.IRI]string, recs), check: check}
	if !check {
		e.seen = make(map[quad.IRI]*written, recs)
		e.subjSet = make(map[quad.IRI]struct{}, recs)
		e.quads = make([]quad.Quad, 0, 16*recs)
	}
	return e
}

// transaction encodes the whole of e.tx: its node, then its records kind by kind, each in its
// order, then the node's urn:mql:wrote edges.
func (e *encoder) transaction() error {
	tx := e.tx
	if tx.By == "" {
		return errors.New("no principal (By)")
	}
	if tx.Time.IsZero() {
		return errors.New("no time")
	}
	t := e.label
	e.add(t, RDFType, ProvActivity)
	e.add(t, RDFType, MQLTransaction)
	e.add(t, ProvEndedAtTime, TimeLit(tx.Time))
	e.add(t, ProvWasAssociatedWith, PrincipalIRI(tx.By))
	if m := tx.Meta; m != nil {
		if err := e.meta(m); err != nil {
			return err
		}
	}
	for i, x := range tx.Principals {
		if err := e.principal(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Grants {
		if err := e.grant(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Sources {
		if err := e.source(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Claims {
		if err := e.claim(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Revocations {
		if err := e.revocation(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Confirmations {
		if err := e.confirmation(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Artifacts {
		if err := e.artifact(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Reviews {
		if err := e.review(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Decays {
		if err := e.decay(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Tokens {
		if err := e.token(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.TokenRevocations {
		if err := e.tokenRevocation(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Retrievals {
		if err := e.retrieval(i, x); err != nil {
			return err
		}
	}
	for i, x := range tx.Outcomes {
		if err := e.outcome(i, x); err != nil {
			return err
		}
	}
	for _, s := range slices.Clone(e.subjs) {
		e.add(t, MQLWrote, s) // WroteQuad(tx.ID, s)
	}
	return e.err
}

// One method per kind of record: the quads EncodeTx writes for the i-th record of that kind in
// e.tx, which EncodeRecord writes alone.

func (e *encoder) meta(m *record.StoreMeta) error {
	if m.Owner == "" {
		return errors.New("store meta has no owner")
	}
	e.add(IRIStore, RDFType, ProvEntity)
	e.add(IRIStore, RDFType, MQLStore)
	e.add(IRIStore, MQLOwner, PrincipalIRI(m.Owner))
	e.add(IRIStore, MQLStrict, quad.Bool(m.Strict))
	return nil
}

func (e *encoder) principal(i int, p *record.Principal) error {
	tx := e.tx
	if p == nil || p.Name == "" {
		return fmt.Errorf("principal %d has no name", i)
	}
	n := PrincipalIRI(p.Name)
	what := fmt.Sprintf("principal %q", p.Name)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, p.Tx, tx.ID); err != nil {
		return err
	}
	var class quad.IRI
	switch p.Type {
	case record.User:
		class = ProvPerson
	case record.Agent, record.Tool:
		class = ProvSoftwareAgent
	default:
		return fmt.Errorf("%s has unknown type %q", what, p.Type)
	}
	e.add(n, RDFType, ProvAgent)
	e.add(n, RDFType, class)
	e.add(n, RDFType, MQLPrincipal)
	e.add(n, MQLName, quad.String(p.Name))
	e.add(n, MQLPrincipalType, quad.String(string(p.Type)))
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) grant(i int, g *record.Grant) error {
	tx := e.tx
	if g == nil || g.ID == "" {
		return fmt.Errorf("grant %d has no id", i)
	}
	n := GrantIRI(g.ID)
	what := fmt.Sprintf("grant %q", g.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, g.Tx, tx.ID); err != nil {
		return err
	}
	switch g.Right {
	case record.RightAssert, record.RightRevoke, record.RightConfirm, record.RightGrant:
	default:
		return fmt.Errorf("%s has unknown right %q", what, g.Right)
	}
	if g.Grantee == "" || g.Scope == "" || g.By == "" {
		return fmt.Errorf("%s needs grantee, scope and by", what)
	}
	e.add(n, RDFType, ProvEntity)
	e.add(n, RDFType, MQLGrant)
	e.add(n, MQLGrantee, PrincipalIRI(g.Grantee))
	e.add(n, MQLRight, quad.String(string(g.Right)))
	e.add(n, MQLScope, quad.String(g.Scope))
	e.add(n, ProvWasAttributedTo, PrincipalIRI(g.By))
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) source(i int, s *record.Source) error {
	tx := e.tx
	if s == nil || s.ID == "" {
		return fmt.Errorf("source %d has no id", i)
	}
	n := sourceIRI(s.ID)
	what := fmt.Sprintf("source %q", s.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, s.Tx, tx.ID); err != nil {
		return err
	}
	e.add(n, RDFType, ProvEntity)
	e.add(n, RDFType, MQLSource)
	e.addStr(n, MQLExcerpt, s.Excerpt)
	e.addStr(n, MQLURI, s.URI)
	e.addStr(n, MQLRevision, s.Revision)
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) claim(i int, c *record.Claim) error {
	tx := e.tx
	if c == nil {
		return fmt.Errorf("claim %d is nil", i)
	}
	what := "claim " + c.ID.String()
	if c.ID.Subject == "" || c.ID.Predicate == "" || c.ID.Version < 1 {
		return fmt.Errorf("%s is not Subject.predicate@N", what)
	}
	n := ClaimIRI(c.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, c.Tx, tx.ID); err != nil {
		return err
	}
	val, err := encodeValue(c.Value)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	switch c.Kind {
	case record.Confirmed, record.Observed, record.Inferred:
	default:
		return fmt.Errorf("%s has unknown kind %q", what, c.Kind)
	}
	if c.By == "" {
		return fmt.Errorf("%s has no asserter (By)", what)
	}
	if !ValidConfidence(c.Confidence) {
		return fmt.Errorf("%s: confidence %v is not in [0,1]", what, c.Confidence)
	}
	e.add(n, RDFType, ProvEntity)
	e.add(n, RDFType, MQLClaim)
	e.add(n, MQLSubject, quad.String(c.ID.Subject))
	e.add(n, MQLPredicate, quad.String(c.ID.Predicate))
	e.add(n, MQLVersion, quad.Int(c.ID.Version))
	e.add(n, MQLValue, val)
	e.add(n, ProvWasAttributedTo, PrincipalIRI(c.By))
	e.add(n, MQLKind, quad.String(string(c.Kind)))
	e.add(n, MQLConfidence, quad.Float(c.Confidence))
	srcs := make([]quad.IRI, len(c.Sources))
	for j, s := range c.Sources {
		if s == "" {
			return fmt.Errorf("%s names an empty source id", what)
		}
		srcs[j] = sourceIRI(s)
	}
	if err := e.list(n, ProvHadPrimarySource, MQLSourceOrder, srcs, what+" sources"); err != nil {
		return err
	}
	if len(c.Excerpts) > 0 {
		lit, err := excerptsLiteral(c.Excerpts, len(c.Sources))
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		e.add(n, MQLSourceExcerpts, quad.String(lit))
	}
	if !c.ValidFrom.IsZero() {
		e.add(n, MQLValidFrom, TimeLit(c.ValidFrom))
	}
	if !c.ValidUntil.IsZero() {
		e.add(n, MQLValidUntil, TimeLit(c.ValidUntil))
	}
	if err := e.principals(n, c.SeenBy, what); err != nil {
		return err
	}
	if c.Supersedes != nil {
		e.add(n, ProvWasRevisionOf, ClaimIRI(*c.Supersedes))
	}
	if c.Contests != nil {
		e.add(n, MQLContests, ClaimIRI(*c.Contests))
	}
	if c.Corroborates != nil {
		e.add(n, MQLCorroborates, ClaimIRI(*c.Corroborates))
	}
	if c.Grant != "" {
		e.add(n, MQLGrantPred, GrantIRI(c.Grant))
	}
	if c.Vector != nil {
		if err := record.CheckVector(c.Vector); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		// A check (ValidateTx, at every write) needs no literal: its digits are what is
		// costly, and they are always valid text.
		if !e.check {
			e.add(n, MQLVector, VectorLit(c.Vector))
		}
	}
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) revocation(i int, r *record.Revocation) error {
	tx := e.tx
	if r == nil || r.ID == "" {
		return fmt.Errorf("revocation %d has no id", i)
	}
	n := revocationIRI(r.ID)
	what := fmt.Sprintf("revocation %q", r.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, r.Tx, tx.ID); err != nil {
		return err
	}
	if r.By == "" || r.Claim.Version < 1 || r.Claim.Subject == "" || r.Claim.Predicate == "" {
		return fmt.Errorf("%s needs a claim and by", what)
	}
	c := ClaimIRI(r.Claim)
	e.add(n, RDFType, ProvActivity)
	e.add(n, RDFType, MQLRevocation)
	e.add(n, ProvInvalidated, c)
	e.add(n, ProvWasAssociatedWith, PrincipalIRI(r.By))
	e.addStr(n, MQLBecause, r.Because)
	e.addStr(n, MQLStanding, r.Standing)
	if r.ReplacedBy != nil {
		e.add(n, MQLReplacedBy, ClaimIRI(*r.ReplacedBy))
	}
	e.add(n, MQLOrd, quad.Int(i))
	e.add(c, ProvWasInvalidatedBy, n)
	e.add(c, ProvInvalidatedAtTime, TimeLit(tx.Time))
	return nil
}

func (e *encoder) confirmation(i int, c *record.Confirmation) error {
	tx := e.tx
	if c == nil || c.ID == "" {
		return fmt.Errorf("confirmation %d has no id", i)
	}
	n := confirmationIRI(c.ID)
	what := fmt.Sprintf("confirmation %q", c.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, c.Tx, tx.ID); err != nil {
		return err
	}
	if c.By == "" || c.Claim.Version < 1 || c.Claim.Subject == "" || c.Claim.Predicate == "" {
		return fmt.Errorf("%s needs a claim and by", what)
	}
	e.add(n, RDFType, ProvActivity)
	e.add(n, RDFType, MQLConfirmation)
	e.add(n, MQLConfirms, ClaimIRI(c.Claim))
	e.add(n, ProvWasAssociatedWith, PrincipalIRI(c.By))
	e.addStr(n, MQLStanding, c.Standing)
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) artifact(i int, a *record.Artifact) error {
	tx := e.tx
	if a == nil || a.ID.Name == "" || a.ID.Version < 1 {
		return fmt.Errorf("artifact %d is not name@N", i)
	}
	n := ArtifactIRI(a.ID)
	what := "artifact " + a.ID.String()
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, a.Tx, tx.ID); err != nil {
		return err
	}
	if a.By == "" {
		return fmt.Errorf("%s has no principal (By)", what)
	}
	if !ValidConfidence(a.Confidence) {
		return fmt.Errorf("%s: confidence %v is not in [0,1]", what, a.Confidence)
	}
	from := make([]quad.IRI, len(a.DerivedFrom))
	for j, d := range a.DerivedFrom {
		switch {
		case d.Claim != nil && d.Artifact == nil:
			from[j] = ClaimIRI(*d.Claim)
		case d.Artifact != nil && d.Claim == nil:
			from[j] = ArtifactIRI(*d.Artifact)
		default:
			return fmt.Errorf("%s: derived-from %d must name exactly one claim or artifact", what, j)
		}
	}
	e.add(n, RDFType, ProvEntity)
	e.add(n, RDFType, MQLArtifact)
	e.add(n, MQLName, quad.String(a.ID.Name))
	e.add(n, MQLVersion, quad.Int(a.ID.Version))
	if err := e.list(n, ProvWasDerivedFrom, MQLDerivedFromOrder, from, what+" derived-from"); err != nil {
		return err
	}
	e.add(n, ProvWasAttributedTo, PrincipalIRI(a.By))
	e.add(n, MQLConfidence, quad.Float(a.Confidence))
	if err := e.principals(n, a.SeenBy, what); err != nil {
		return err
	}
	if a.Supersedes != nil {
		if a.Supersedes.Name != a.ID.Name || a.Supersedes.Version < 1 || a.Supersedes.Version >= a.ID.Version {
			return fmt.Errorf("%s supersedes %s, which is not an earlier version of it", what, a.Supersedes)
		}
		e.add(n, ProvWasRevisionOf, ArtifactIRI(*a.Supersedes))
	}
	e.addStr(n, MQLRun, a.Run)
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) review(i int, r *record.Review) error {
	tx := e.tx
	if r == nil || r.ID == "" {
		return fmt.Errorf("review %d has no id", i)
	}
	n := reviewIRI(r.ID)
	what := fmt.Sprintf("review %q", r.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, r.Tx, tx.ID); err != nil {
		return err
	}
	if r.By == "" || r.Artifact.Name == "" || r.Artifact.Version < 1 {
		return fmt.Errorf("%s needs an artifact and by", what)
	}
	e.add(n, RDFType, ProvActivity)
	e.add(n, RDFType, MQLReview)
	e.add(n, ProvUsed, ArtifactIRI(r.Artifact))
	e.add(n, ProvWasAssociatedWith, PrincipalIRI(r.By))
	e.addStr(n, MQLBecause, r.Because)
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) decay(i int, d *record.Decay) error {
	tx := e.tx
	if d == nil || d.Predicate == "" || d.By == "" {
		return fmt.Errorf("decay %d needs a predicate and by", i)
	}
	what := "decay of " + d.Predicate
	if err := checkTx(what, d.Tx, tx.ID); err != nil {
		return err
	}
	if d.HalfLife <= 0 {
		return fmt.Errorf("%s: half-life %s is not positive", what, d.HalfLife)
	}
	n := decayIRI(tx.ID, i)
	e.add(n, RDFType, ProvEntity)
	e.add(n, RDFType, MQLDecay)
	e.add(n, MQLPredicate, quad.String(d.Predicate))
	e.add(n, MQLHalfLife, DurationLit(d.HalfLife))
	e.add(n, ProvWasAttributedTo, PrincipalIRI(d.By))
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) token(i int, k *record.Token) error {
	tx := e.tx
	if k == nil || k.ID == "" {
		return fmt.Errorf("token %d has no id", i)
	}
	n := TokenIRI(k.ID)
	what := fmt.Sprintf("token %q", k.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, k.Tx, tx.ID); err != nil {
		return err
	}
	if k.Principal == "" || k.By == "" || !ValidHash(k.Hash) {
		return fmt.Errorf("%s needs a holder, a by and a SHA-256 hash in hex", what)
	}
	e.add(n, RDFType, ProvEntity)
	e.add(n, RDFType, MQLToken)
	e.add(n, MQLHolder, PrincipalIRI(k.Principal))
	e.add(n, MQLSecretHash, quad.String(k.Hash))
	e.add(n, ProvWasAttributedTo, PrincipalIRI(k.By))
	if !k.Expires.IsZero() {
		e.add(n, MQLExpires, TimeLit(k.Expires))
	}
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) tokenRevocation(i int, r *record.TokenRevocation) error {
	tx := e.tx
	if r == nil || r.ID == "" {
		return fmt.Errorf("token revocation %d has no id", i)
	}
	n := tokenRevocationIRI(r.ID)
	what := fmt.Sprintf("token revocation %q", r.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, r.Tx, tx.ID); err != nil {
		return err
	}
	if r.Token == "" || r.By == "" {
		return fmt.Errorf("%s needs a token and by", what)
	}
	e.add(n, RDFType, ProvActivity)
	e.add(n, RDFType, MQLTokenRevoke)
	e.add(n, ProvInvalidated, TokenIRI(r.Token))
	e.add(n, ProvWasAssociatedWith, PrincipalIRI(r.By))
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) retrieval(i int, r *record.Retrieval) error {
	tx := e.tx
	if r == nil || r.ID == "" {
		return fmt.Errorf("retrieval %d has no id", i)
	}
	n := retrievalIRI(r.ID)
	what := fmt.Sprintf("retrieval %q", r.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, r.Tx, tx.ID); err != nil {
		return err
	}
	if r.Run == "" || r.By == "" {
		return fmt.Errorf("%s needs a run and by", what)
	}
	if r.ReadAt < 1 || r.ReadAt >= tx.ID {
		return fmt.Errorf("%s read at tx %d, which is not before it", what, r.ReadAt)
	}
	used := make([]quad.IRI, 0, len(r.Claims)+len(r.Artifacts))
	for _, c := range r.Claims {
		if c.Subject == "" || c.Predicate == "" || c.Version < 1 {
			return fmt.Errorf("%s serves %s, which is not Subject.predicate@N", what, c)
		}
		used = append(used, ClaimIRI(c))
	}
	for _, a := range r.Artifacts {
		if a.Name == "" || a.Version < 1 {
			return fmt.Errorf("%s serves %s, which is not name@N", what, a)
		}
		used = append(used, ArtifactIRI(a))
	}
	e.add(n, RDFType, ProvActivity)
	e.add(n, RDFType, MQLRetrieval)
	e.add(n, MQLRun, quad.String(r.Run))
	e.add(n, ProvWasAssociatedWith, PrincipalIRI(r.By))
	e.add(n, MQLReadAtTx, quad.Int(r.ReadAt))
	e.addStr(n, MQLStatement, r.Statement)
	if err := e.list(n, ProvUsed, MQLUsedOrder, used, what+" served"); err != nil {
		return err
	}
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) outcome(i int, o *record.Outcome) error {
	tx := e.tx
	if o == nil || o.ID == "" {
		return fmt.Errorf("outcome %d has no id", i)
	}
	n := outcomeIRI(o.ID)
	what := fmt.Sprintf("outcome %q", o.ID)
	if err := e.record(n, what); err != nil {
		return err
	}
	if err := checkTx(what, o.Tx, tx.ID); err != nil {
		return err
	}
	if o.Run == "" || o.By == "" {
		return fmt.Errorf("%s needs a run and by", what)
	}
	switch o.Result {
	case record.Succeeded, record.Failed, record.Declined:
	default:
		return fmt.Errorf("%s has unknown result %q", what, o.Result)
	}
	e.add(n, RDFType, ProvEntity)
	e.add(n, RDFType, MQLOutcome)
	e.add(n, MQLRun, quad.String(o.Run))
	e.add(n, MQLResult, quad.String(string(o.Result)))
	e.addStr(n, MQLBecause, o.Because)
	e.add(n, ProvWasAttributedTo, PrincipalIRI(o.By))
	e.add(n, MQLOrd, quad.Int(i))
	return nil
}

func (e *encoder) principals(n quad.IRI, names []string, what string) error {
	ps := make([]quad.IRI, len(names))
	for i, p := range names {
		if p == "" {
			return fmt.Errorf("%s: seen-by names an empty principal", what)
		}
		ps[i] = PrincipalIRI(p)
	}
	return e.list(n, MQLSeenBy, MQLSeenByOrder, ps, what+" seen-by")
}

// ---- decoding ------------------------------------------------------------------------------

// DecodeError is a decoding failure, optionally about one quad (so that an import can name
// its line).
type DecodeError struct {
	tx   record.TxID
	Quad *quad.Quad
	msg  string
}

func (e *DecodeError) Error() string {
	if e.tx == 0 {
		return e.msg
	}
	return fmt.Sprintf("tx %d: %s", e.tx, e.msg)
}

// Node is the quads of one subject in a transaction: its values grouped by predicate, in the
// order first met, and the first quad (the one an error about the node points at).
type Node struct {
	IRI   quad.IRI
	First quad.Quad
	Class quad.IRI // for a caller that classifies the node (a checker); the decoder does not set it
	props []prop
}

type prop struct {
	p  quad.IRI
	vs []quad.Value
}

// All returns the values of p, in the order met.
func (n *Node) All(p quad.IRI) []quad.Value {
	for i := range n.props {
		if n.props[i].p == p {
			return slices.Clip(n.props[i].vs)
		}
	}
	return nil
}

// Graph groups a transaction's quads by subject and predicate, dropping any met before (RDF: a
// graph is a set of quads). A node's quads come together, and a predicate's values mostly too
// (an export writes them so): those go into arrays shared by the whole graph, and only a node
// or a predicate met again after another's gets slices of its own. A map of predicates for
// every node, a slice for every predicate and a set of every quad were most of an import's
// allocations, and hashing every quad a third of its decoding.
type Graph struct {
	nodes  map[quad.IRI]*Node
	Order  []*Node     // the nodes in the order first met
	Quads  []quad.Quad // the quads added, without the repeats, in order
	props  []prop      // the shared arrays
	vals   []quad.Value
	chunk  []Node
	last   *Node // the node of the quad added last
	long   map[quad.Quad]struct{}
	repeat int
}

// shortList is how many values of a subject and predicate are searched rather than hashed.
const shortList = 32

// NewGraph returns an empty Graph sized for n quads.
func NewGraph(n int) *Graph {
	return &Graph{nodes: make(map[quad.IRI]*Node, n/8+1), Quads: make([]quad.Quad, 0, n),
		props: make([]prop, 0, n), vals: make([]quad.Value, 0, n)}
}

// Node returns the node of s, or nil.
func (g *Graph) Node(s quad.IRI) *Node { return g.nodes[s] }

// Add adds q, whose subject and predicate are IRIs, and reports whether it was not met before.
func (g *Graph) Add(q quad.Quad) bool {
	s, p := q.Subject.(quad.IRI), q.Predicate.(quad.IRI)
	n := g.last
	if n == nil || n.IRI != s {
		if n = g.nodes[s]; n == nil {
			if len(g.chunk) == cap(g.chunk) {
				g.chunk = make([]Node, 0, 64)
			}
			g.chunk = append(g.chunk, Node{IRI: s, First: q})
			n = &g.chunk[len(g.chunk)-1]
			g.nodes[s] = n
			g.Order = append(g.Order, n)
		}
		g.last = n
	}
	i := -1
	for j := len(n.props) - 1; j >= 0; j-- {
		if n.props[j].p == p {
			i = j
			break
		}
	}
	if i < 0 {
		if (len(n.props) == 0 && len(g.props) < cap(g.props)) || g.ownsProps(n) {
			g.props = append(g.props, prop{p: p})
			n.props = g.props[len(g.props)-len(n.props)-1 : len(g.props)]
		} else {
			n.props = append(slices.Clip(n.props), prop{p: p})
		}
		i = len(n.props) - 1
	}
	pr := &n.props[i]
	if g.seen(pr.vs, q) {
		g.repeat++
		return false
	}
	switch room := len(g.vals) < cap(g.vals); {
	case room && len(pr.vs) > 0 && &pr.vs[len(pr.vs)-1] == &g.vals[len(g.vals)-1]:
		g.vals = append(g.vals, q.Object) // the values end the shared array: they grow in place
		pr.vs = pr.vs[:len(pr.vs)+1]
	case room && len(pr.vs) == 0:
		g.vals = append(g.vals, q.Object)
		pr.vs = g.vals[len(g.vals)-1 : len(g.vals)]
	default:
		pr.vs = append(slices.Clip(pr.vs), q.Object)
	}
	g.Quads = append(g.Quads, q)
	return true
}

// ownsProps reports whether n's props end the shared array, which may grow them in place.
func (g *Graph) ownsProps(n *Node) bool {
	return len(n.props) > 0 && len(g.props) > 0 && len(g.props) < cap(g.props) &&
		&g.props[len(g.props)-1] == &n.props[len(n.props)-1]
}

// seen reports whether q's object is among vs, the values of its subject and predicate so far.
func (g *Graph) seen(vs []quad.Value, q quad.Quad) bool {
	if len(vs) < shortList {
		return slices.Contains(vs, q.Object)
	}
	if g.long == nil {
		g.long = map[quad.Quad]struct{}{}
	}
	if _, ok := g.long[quad.Quad{Subject: q.Subject, Predicate: q.Predicate, Object: vs[0], Label: q.Label}]; !ok {
		for _, v := range vs { // the list just outgrew searching: the set takes it over
			g.long[quad.Quad{Subject: q.Subject, Predicate: q.Predicate, Object: v, Label: q.Label}] = struct{}{}
		}
	}
	if _, dup := g.long[q]; dup {
		return true
	}
	g.long[q] = struct{}{}
	return false
}

type txDecoder struct {
	id record.TxID
	g  *Graph
}

func (d *txDecoder) fail(n *Node, format string, args ...any) error {
	e := &DecodeError{tx: d.id, msg: fmt.Sprintf(format, args...)}
	if n != nil {
		q := n.First
		e.Quad = &q
		e.msg = fmt.Sprintf("%s: %s", n.IRI, e.msg)
	}
	return e
}

// opt returns the single value of p, or nil.
func (d *txDecoder) opt(n *Node, p quad.IRI) (quad.Value, error) {
	vs := n.All(p)
	if len(vs) > 1 {
		return nil, d.fail(n, "%s has %d values, want one", p, len(vs))
	}
	if len(vs) == 0 {
		return nil, nil
	}
	return vs[0], nil
}

func (d *txDecoder) one(n *Node, p quad.IRI) (quad.Value, error) {
	v, err := d.opt(n, p)
	if err == nil && v == nil {
		err = d.fail(n, "missing %s", p)
	}
	return v, err
}

// value is one when the property is mandatory, opt when it is not.
func (d *txDecoder) value(n *Node, p quad.IRI, mandatory bool) (quad.Value, error) {
	if mandatory {
		return d.one(n, p)
	}
	return d.opt(n, p)
}

func (d *txDecoder) str(n *Node, p quad.IRI, mandatory bool) (string, error) {
	v, err := d.value(n, p, mandatory)
	if err != nil || v == nil {
		return "", err
	}
	s, ok := v.(quad.String)
	if !ok {
		return "", d.fail(n, "%s must be a plain string, got %s", p, Show(v))
	}
	return string(s), nil
}

func (d *txDecoder) int(n *Node, p quad.IRI) (int, error) {
	v, err := d.one(n, p)
	if err != nil {
		return 0, err
	}
	i, ok := v.(quad.Int)
	if !ok || int64(i) < 0 || int64(i) > math.MaxInt32 {
		return 0, d.fail(n, "%s must be a non-negative xsd:integer, got %s", p, Show(v))
	}
	return int(i), nil
}

func (d *txDecoder) float(n *Node, p quad.IRI) (float64, error) {
	v, err := d.one(n, p)
	if err != nil {
		return 0, err
	}
	f, ok := v.(quad.Float)
	if !ok || !Finite(float64(f)) {
		return 0, d.fail(n, "%s must be a finite xsd:double, got %s", p, Show(v))
	}
	return float64(f), nil
}

func (d *txDecoder) bool(n *Node, p quad.IRI) (bool, error) {
	v, err := d.one(n, p)
	if err != nil {
		return false, err
	}
	b, ok := v.(quad.Bool)
	if !ok {
		return false, d.fail(n, "%s must be an xsd:boolean, got %s", p, Show(v))
	}
	return bool(b), nil
}

// AsTime reads an xsd:dateTime literal as TimeLit writes it.
func AsTime(v quad.Value) (time.Time, bool) {
	ts, ok := v.(quad.TypedString)
	if !ok || ts.Type != XSDDateTime {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts.Value))
	if err != nil {
		return time.Time{}, false
	}
	return t.UTC(), true
}

func (d *txDecoder) time(n *Node, p quad.IRI, mandatory bool) (time.Time, error) {
	v, err := d.value(n, p, mandatory)
	if err != nil || v == nil {
		return time.Time{}, err
	}
	t, ok := AsTime(v)
	if !ok {
		return time.Time{}, d.fail(n, "%s must be an xsd:dateTime, got %s", p, Show(v))
	}
	return t, nil
}

func (d *txDecoder) principal(n *Node, p quad.IRI, mandatory bool) (string, error) {
	v, err := d.value(n, p, mandatory)
	if err != nil || v == nil {
		return "", err
	}
	name, err := ParseNamed(PrefPrincipal, "principal", v)
	if err != nil {
		return "", d.fail(n, "%s: %v", p, err)
	}
	return name, nil
}

func (d *txDecoder) claimRef(n *Node, p quad.IRI, mandatory bool) (*record.ClaimID, error) {
	v, err := d.value(n, p, mandatory)
	if err != nil || v == nil {
		return nil, err
	}
	id, err := ParseClaimIRI(v)
	if err != nil {
		return nil, d.fail(n, "%s: %v", p, err)
	}
	return &id, nil
}

// list reads the targets of edge p in the order given by the order predicate (if any).
func (d *txDecoder) list(n *Node, p, order quad.IRI) ([]quad.Value, error) {
	edges := n.All(p)
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

func (d *txDecoder) principalList(n *Node) ([]string, error) {
	vs, err := d.list(n, MQLSeenBy, MQLSeenByOrder)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range vs {
		name, err := ParseNamed(PrefPrincipal, "seen-by principal", v)
		if err != nil {
			return nil, d.fail(n, "%v", err)
		}
		out = append(out, name)
	}
	return out, nil
}

// fields reads the properties of one record's node and keeps the first error: once a read has
// failed the others read nothing, and the record is refused with that error.
type fields struct {
	d   *txDecoder
	n   *Node
	err error
}

// read is what get gives, unless a read failed before it.
func read[T any](f *fields, get func() (T, error)) T {
	if f.err != nil {
		var zero T
		return zero
	}
	v, err := get()
	f.err = err
	return v
}

// parse is what p makes of v, a value of the node's; what p refuses is the node's error.
func parse[T any](f *fields, p func(quad.Value) (T, error), v quad.Value) T {
	return read(f, func() (T, error) {
		x, err := p(v)
		if err != nil {
			return x, f.d.fail(f.n, "%v", err)
		}
		return x, nil
	})
}

// namedAs is ParseNamed of prefix and what.
func namedAs(prefix, what string) func(quad.Value) (string, error) {
	return func(v quad.Value) (string, error) { return ParseNamed(prefix, what, v) }
}

// named is the name in the node's IRI, which must be prefix and a name.
func (f *fields) named(prefix, what string) string {
	return parse(f, namedAs(prefix, what), f.n.IRI)
}

func (f *fields) one(p quad.IRI) quad.Value {
	return read(f, func() (quad.Value, error) { return f.d.one(f.n, p) })
}

func (f *fields) str(p quad.IRI, mandatory bool) string {
	return read(f, func() (string, error) { return f.d.str(f.n, p, mandatory) })
}

func (f *fields) int(p quad.IRI) int {
	return read(f, func() (int, error) { return f.d.int(f.n, p) })
}

func (f *fields) bool(p quad.IRI) bool {
	return read(f, func() (bool, error) { return f.d.bool(f.n, p) })
}

func (f *fields) time(p quad.IRI, mandatory bool) time.Time {
	return read(f, func() (time.Time, error) { return f.d.time(f.n, p, mandatory) })
}

func (f *fields) principal(p quad.IRI, mandatory bool) string {
	return read(f, func() (string, error) { return f.d.principal(f.n, p, mandatory) })
}

func (f *fields) claimRef(p quad.IRI, mandatory bool) *record.ClaimID {
	return read(f, func() (*record.ClaimID, error) { return f.d.claimRef(f.n, p, mandatory) })
}

// claim is the claim a mandatory p names.
func (f *fields) claim(p quad.IRI) record.ClaimID {
	if c := f.claimRef(p, true); c != nil {
		return *c
	}
	return record.ClaimID{}
}

func (f *fields) list(p, order quad.IRI) []quad.Value {
	return read(f, func() ([]quad.Value, error) { return f.d.list(f.n, p, order) })
}

type ordered[T any] struct {
	ord int
	rec T
}

// sortRecords puts in in the order of urn:mql:ord, which must run 0,1,2…; once *err is set it
// does nothing, so that a transaction's lists are sorted in turn and the error checked once.
func sortRecords[T any](d *txDecoder, what string, in []ordered[T], err *error) []T {
	if *err != nil || len(in) == 0 {
		return nil
	}
	sort.Slice(in, func(i, j int) bool { return in[i].ord < in[j].ord })
	out := make([]T, len(in))
	for i, o := range in {
		if o.ord != i {
			*err = &DecodeError{tx: d.id, msg: fmt.Sprintf("%s records are numbered %d at position %d (urn:mql:ord must run 0,1,2…)", what, o.ord, i)}
			return nil
		}
		out[i] = o.rec
	}
	return out
}

// DecodeTxs groups quads by their transaction label and decodes each transaction. The result
// is sorted by id; contiguity is the caller's to check.
func DecodeTxs(quads []quad.Quad) ([]*record.Tx, error) {
	groups := map[record.TxID][]quad.Quad{}
	for i := range quads {
		q := CanonQuad(quads[i])
		if !q.IsValid() {
			return nil, &DecodeError{Quad: &quads[i], msg: "quad is incomplete"}
		}
		id, ok := ParseTxIRI(q.Label)
		if !ok {
			return nil, &DecodeError{Quad: &quads[i], msg: fmt.Sprintf("graph label %s is not a transaction <%sN>", Show(q.Label), PrefTx)}
		}
		groups[id] = append(groups[id], q)
	}
	ids := make([]record.TxID, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	txs := make([]*record.Tx, 0, len(ids))
	for _, id := range ids {
		tx, err := DecodeTx(id, groups[id])
		if err != nil {
			return nil, err
		}
		txs = append(txs, tx)
	}
	return txs, nil
}

// DecodeTx decodes the (canonicalised) quads of one transaction and checks that they are
// exactly the canonical encoding of the result.
func DecodeTx(id record.TxID, quads []quad.Quad) (*record.Tx, error) {
	tx, _, err := DecodeTxQuads(id, quads)
	return tx, err
}

// DecodeTxQuads is DecodeTx that also returns the canonical encoding of the transaction (the
// same quads, in the encoder's order).
func DecodeTxQuads(id record.TxID, quads []quad.Quad) (*record.Tx, []quad.Quad, error) {
	g := NewGraph(len(quads))
	for _, q := range quads {
		_, ok1 := q.Subject.(quad.IRI)
		_, ok2 := q.Predicate.(quad.IRI)
		if !ok1 || !ok2 {
			qq := q
			return nil, nil, &DecodeError{tx: id, Quad: &qq, msg: fmt.Sprintf("subject and predicate must be IRIs: %s %s", Show(q.Subject), Show(q.Predicate))}
		}
		g.Add(q)
	}
	return DecodeGraph(id, g, quads)
}

// DecodeGraph is DecodeTxQuads of quads, which g groups (every one of them added to it, in
// order): a caller that grouped them already (an import's checker) does not group them again.
func DecodeGraph(id record.TxID, g *Graph, quads []quad.Quad) (*record.Tx, []quad.Quad, error) {
	d := &txDecoder{id: id, g: g}
	unique := len(g.Quads)
	txn := g.Node(TxIRI(id))
	if txn == nil {
		return nil, nil, &DecodeError{tx: id, msg: fmt.Sprintf("no transaction node %s", TxIRI(id))}
	}
	h := &fields{d: d, n: txn}
	tx := &record.Tx{ID: id, Time: h.time(ProvEndedAtTime, true), By: h.principal(ProvWasAssociatedWith, true)}
	if h.err != nil {
		return nil, nil, h.err
	}
	var err error
	var (
		principals    []ordered[*record.Principal]
		grants        []ordered[*record.Grant]
		sources       []ordered[*record.Source]
		claims        []ordered[*record.Claim]
		revocations   []ordered[*record.Revocation]
		confirmations []ordered[*record.Confirmation]
		artifacts     []ordered[*record.Artifact]
		reviews       []ordered[*record.Review]
		decays        []ordered[*record.Decay]
		tokens        []ordered[*record.Token]
		tokenRevokes  []ordered[*record.TokenRevocation]
		retrievals    []ordered[*record.Retrieval]
		outcomes      []ordered[*record.Outcome]
	)
	for _, n := range g.Order {
		s := n.IRI
		if n == txn {
			continue
		}
		var class quad.IRI
		for _, t := range n.All(RDFType) {
			if iri, ok := t.(quad.IRI); ok && strings.HasPrefix(string(iri), NSMQL) {
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
		case MQLStore, MQLPrincipal, MQLGrant, MQLSource, MQLClaim, MQLRevocation, MQLConfirmation, MQLArtifact, MQLReview, MQLDecay, MQLToken, MQLTokenRevoke,
			MQLRetrieval, MQLOutcome:
		default:
			return nil, nil, d.fail(n, "unknown record class %s", class)
		}
		f := &fields{d: d, n: n}
		var ord int
		if class != MQLStore {
			ord = f.int(MQLOrd)
		}
		switch class {
		case MQLStore:
			if s != IRIStore {
				return nil, nil, d.fail(n, "store meta must be on %s", IRIStore)
			}
			tx.Meta = &record.StoreMeta{Owner: f.principal(MQLOwner, true), Strict: f.bool(MQLStrict)}
		case MQLPrincipal:
			p := &record.Principal{Tx: id, Name: f.named(PrefPrincipal, "principal"),
				Type: record.PrincipalType(f.str(MQLPrincipalType, true))}
			principals = append(principals, ordered[*record.Principal]{ord, p})
		case MQLGrant:
			g := &record.Grant{Tx: id, ID: f.named(PrefGrant, "grant"), Grantee: f.principal(MQLGrantee, true),
				Right: record.Right(f.str(MQLRight, true)), Scope: f.str(MQLScope, true), By: f.principal(ProvWasAttributedTo, true)}
			grants = append(grants, ordered[*record.Grant]{ord, g})
		case MQLSource:
			src := &record.Source{Tx: id, ID: f.named(PrefSource, "source"), Excerpt: f.str(MQLExcerpt, false),
				URI: f.str(MQLURI, false), Revision: f.str(MQLRevision, false)}
			sources = append(sources, ordered[*record.Source]{ord, src})
		case MQLClaim:
			c := read(f, func() (*record.Claim, error) { return d.claim(n) })
			claims = append(claims, ordered[*record.Claim]{ord, c})
		case MQLRevocation:
			r := &record.Revocation{Tx: id, ID: f.named(PrefRevocation, "revocation"), Claim: f.claim(ProvInvalidated),
				By: f.principal(ProvWasAssociatedWith, true), Because: f.str(MQLBecause, false),
				Standing: f.str(MQLStanding, false), ReplacedBy: f.claimRef(MQLReplacedBy, false)}
			revocations = append(revocations, ordered[*record.Revocation]{ord, r})
		case MQLConfirmation:
			c := &record.Confirmation{Tx: id, ID: f.named(PrefConfirmation, "confirmation"), Claim: f.claim(MQLConfirms),
				By: f.principal(ProvWasAssociatedWith, true), Standing: f.str(MQLStanding, false)}
			confirmations = append(confirmations, ordered[*record.Confirmation]{ord, c})
		case MQLArtifact:
			a := read(f, func() (*record.Artifact, error) { return d.artifact(n) })
			artifacts = append(artifacts, ordered[*record.Artifact]{ord, a})
		case MQLReview:
			r := &record.Review{Tx: id, ID: f.named(PrefReview, "review"), Artifact: parse(f, ParseArtifactIRI, f.one(ProvUsed)),
				By: f.principal(ProvWasAssociatedWith, true), Because: f.str(MQLBecause, false)}
			reviews = append(reviews, ordered[*record.Review]{ord, r})
		case MQLDecay:
			dc := &record.Decay{Tx: id, Predicate: f.str(MQLPredicate, true)}
			if v := f.one(MQLHalfLife); f.err == nil {
				ts, ok := v.(quad.TypedString)
				if ok && ts.Type == XSDDuration {
					dc.HalfLife, ok = ParseDuration(string(ts.Value))
				}
				if !ok {
					f.err = d.fail(n, "%s must be an xsd:duration PTnS, got %s", MQLHalfLife, Show(v))
				}
			}
			dc.By = f.principal(ProvWasAttributedTo, true)
			decays = append(decays, ordered[*record.Decay]{ord, dc})
		case MQLToken:
			k := &record.Token{Tx: id, ID: f.named(PrefToken, "token"), Principal: f.principal(MQLHolder, true),
				Hash: f.str(MQLSecretHash, true), By: f.principal(ProvWasAttributedTo, true), Expires: f.time(MQLExpires, false)}
			tokens = append(tokens, ordered[*record.Token]{ord, k})
		case MQLTokenRevoke:
			r := &record.TokenRevocation{Tx: id, ID: f.named(PrefTokenRevoke, "token revocation"),
				Token: parse(f, namedAs(PrefToken, "token"), f.one(ProvInvalidated)), By: f.principal(ProvWasAssociatedWith, true)}
			tokenRevokes = append(tokenRevokes, ordered[*record.TokenRevocation]{ord, r})
		case MQLRetrieval:
			r := &record.Retrieval{Tx: id, ID: f.named(PrefRetrieval, "retrieval"), Run: f.str(MQLRun, true),
				By: f.principal(ProvWasAssociatedWith, true), ReadAt: record.TxID(f.int(MQLReadAtTx)), Statement: f.str(MQLStatement, false)}
			for _, u := range f.list(ProvUsed, MQLUsedOrder) {
				iri, _ := u.(quad.IRI)
				if strings.HasPrefix(string(iri), PrefArtifact) {
					r.Artifacts = append(r.Artifacts, parse(f, ParseArtifactIRI, u))
					continue
				}
				r.Claims = append(r.Claims, parse(f, ParseClaimIRI, u))
			}
			retrievals = append(retrievals, ordered[*record.Retrieval]{ord, r})
		case MQLOutcome:
			o := &record.Outcome{Tx: id, ID: f.named(PrefOutcome, "outcome"), Run: f.str(MQLRun, true),
				Result: record.OutcomeResult(f.str(MQLResult, true)), Because: f.str(MQLBecause, false), By: f.principal(ProvWasAttributedTo, true)}
			outcomes = append(outcomes, ordered[*record.Outcome]{ord, o})
		default:
			return nil, nil, d.fail(n, "unknown record class %s", class)
		}
		if f.err != nil {
			return nil, nil, f.err
		}
	}
	tx.Principals = sortRecords(d, "principal", principals, &err)
	tx.Grants = sortRecords(d, "grant", grants, &err)
	tx.Sources = sortRecords(d, "source", sources, &err)
	tx.Claims = sortRecords(d, "claim", claims, &err)
	tx.Revocations = sortRecords(d, "revocation", revocations, &err)
	tx.Confirmations = sortRecords(d, "confirmation", confirmations, &err)
	tx.Artifacts = sortRecords(d, "artifact", artifacts, &err)
	tx.Reviews = sortRecords(d, "review", reviews, &err)
	tx.Decays = sortRecords(d, "decay", decays, &err)
	tx.Tokens = sortRecords(d, "token", tokens, &err)
	tx.TokenRevocations = sortRecords(d, "token revocation", tokenRevokes, &err)
	tx.Retrievals = sortRecords(d, "retrieval", retrievals, &err)
	tx.Outcomes = sortRecords(d, "outcome", outcomes, &err)
	if err != nil {
		return nil, nil, err
	}

	// Canonical check: the input must be exactly what encoding the result gives. What an
	// export writes is the quads in the order encoding gives them: compared as they come.
	if unique == len(quads) && encodesTo(tx, quads) {
		return tx, quads, nil
	}
	want, err := EncodeTx(tx)
	if err != nil {
		return nil, nil, &DecodeError{tx: id, msg: strings.TrimPrefix(err.Error(), fmt.Sprintf("tx %d: ", id))}
	}
	wantSet := make(map[quad.Quad]struct{}, len(want))
	for _, q := range want {
		wantSet[q] = struct{}{}
	}
	got := make(map[quad.Quad]struct{}, len(quads))
	for _, q := range quads {
		if _, ok := wantSet[q]; !ok {
			qq := q
			return nil, nil, &DecodeError{tx: id, Quad: &qq, msg: "unexpected quad " + nquads.FormatQuad(q)}
		}
		got[q] = struct{}{}
	}
	for _, q := range want {
		if _, ok := got[q]; !ok {
			return nil, nil, &DecodeError{tx: id, msg: "missing quad " + nquads.FormatQuad(q)}
		}
	}
	return tx, want, nil
}

func (d *txDecoder) claim(n *Node) (*record.Claim, error) {
	id, err := ParseClaimIRI(n.IRI)
	if err != nil {
		return nil, d.fail(n, "%v", err)
	}
	c := &record.Claim{ID: id, Tx: d.id}
	v, err := d.one(n, MQLValue)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case quad.String:
		c.Value = record.Value{Type: record.String, Str: string(x)}
	case quad.Float:
		if !Finite(float64(x)) {
			return nil, d.fail(n, "value %s is not a finite number", Show(v))
		}
		c.Value = record.Value{Type: record.Number, Num: float64(x)}
	case quad.Bool:
		c.Value = record.Value{Type: record.Bool, Bool: bool(x)}
	case quad.TypedString:
		if t, ok := AsTime(x); ok {
			c.Value = record.Value{Type: record.Time, Time: t}
		} else if x.Type == MQLRefType {
			c.Value = record.Value{Type: record.Ref, Str: string(x.Value)}
		} else {
			return nil, d.fail(n, "value %s has an unsupported datatype", Show(v))
		}
	default:
		return nil, d.fail(n, "value %s has an unsupported type", Show(v))
	}
	if c.By, err = d.principal(n, ProvWasAttributedTo, true); err != nil {
		return nil, err
	}
	k, err := d.str(n, MQLKind, true)
	if err != nil {
		return nil, err
	}
	c.Kind = record.Kind(k)
	if c.Confidence, err = d.float(n, MQLConfidence); err != nil {
		return nil, err
	}
	srcs, err := d.list(n, ProvHadPrimarySource, MQLSourceOrder)
	if err != nil {
		return nil, err
	}
	for _, sv := range srcs {
		id, err := ParseNamed(PrefSource, "source", sv)
		if err != nil {
			return nil, d.fail(n, "%v", err)
		}
		c.Sources = append(c.Sources, id)
	}
	lit, err := d.str(n, MQLSourceExcerpts, false)
	if err != nil {
		return nil, err
	}
	if lit != "" {
		if err := json.Unmarshal([]byte(lit), &c.Excerpts); err != nil || c.Excerpts == nil {
			return nil, d.fail(n, "%s must be a JSON list of strings, one for each source", MQLSourceExcerpts)
		}
		if _, err := excerptsLiteral(c.Excerpts, len(c.Sources)); err != nil {
			return nil, d.fail(n, "%v", err)
		}
	}
	if c.ValidFrom, err = d.time(n, MQLValidFrom, false); err != nil {
		return nil, err
	}
	if c.ValidUntil, err = d.time(n, MQLValidUntil, false); err != nil {
		return nil, err
	}
	if c.SeenBy, err = d.principalList(n); err != nil {
		return nil, err
	}
	if c.Supersedes, err = d.claimRef(n, ProvWasRevisionOf, false); err != nil {
		return nil, err
	}
	if c.Contests, err = d.claimRef(n, MQLContests, false); err != nil {
		return nil, err
	}
	if c.Corroborates, err = d.claimRef(n, MQLCorroborates, false); err != nil {
		return nil, err
	}
	g, err := d.opt(n, MQLGrantPred)
	if err != nil {
		return nil, err
	}
	if g != nil {
		if c.Grant, err = ParseNamed(PrefGrant, "grant", g); err != nil {
			return nil, d.fail(n, "%v", err)
		}
	}
	vec, err := d.opt(n, MQLVector)
	if err != nil {
		return nil, err
	}
	if vec != nil {
		if c.Vector, err = ParseVector(vec); err != nil {
			return nil, d.fail(n, "%v", err)
		}
	}
	return c, nil
}

// VectorLit is the literal of a claim's vector (MQLVectorType).
func VectorLit(v []float32) quad.Value {
	return quad.TypedString{Value: quad.String(record.FormatVector(v)), Type: MQLVectorType}
}

// ParseVector reads a literal of MQLVectorType, which must be a vector record.CheckVector
// accepts, written as VectorLit writes it: an export read back is the same bytes.
func ParseVector(v quad.Value) ([]float32, error) {
	t, ok := v.(quad.TypedString)
	if !ok || t.Type != MQLVectorType {
		return nil, fmt.Errorf("%s must be a literal of datatype %s, got %s", MQLVector, MQLVectorType, Show(v))
	}
	fields := strings.Split(string(t.Value), " ")
	out := make([]float32, len(fields))
	for i, s := range fields {
		f, err := strconv.ParseFloat(s, 32)
		if err != nil {
			return nil, fmt.Errorf("%s: component %d, %q, is not a float32 (components are separated by single spaces)", MQLVector, i, s)
		}
		if short := strconv.FormatFloat(f, 'g', -1, 32); short != s {
			return nil, fmt.Errorf("%s: component %d, %q, is not in its shortest form %q", MQLVector, i, s, short)
		}
		out[i] = float32(f)
	}
	if err := record.CheckVector(out); err != nil {
		return nil, fmt.Errorf("%s: %w", MQLVector, err)
	}
	return out, nil
}

func (d *txDecoder) artifact(n *Node) (*record.Artifact, error) {
	id, err := ParseArtifactIRI(n.IRI)
	if err != nil {
		return nil, d.fail(n, "%v", err)
	}
	a := &record.Artifact{ID: id, Tx: d.id}
	from, err := d.list(n, ProvWasDerivedFrom, MQLDerivedFromOrder)
	if err != nil {
		return nil, err
	}
	for _, v := range from {
		iri, _ := v.(quad.IRI)
		switch {
		case strings.HasPrefix(string(iri), PrefClaim):
			c, err := ParseClaimIRI(v)
			if err != nil {
				return nil, d.fail(n, "%v", err)
			}
			a.DerivedFrom = append(a.DerivedFrom, record.NodeRef{Claim: &c})
		case strings.HasPrefix(string(iri), PrefArtifact):
			x, err := ParseArtifactIRI(v)
			if err != nil {
				return nil, d.fail(n, "%v", err)
			}
			a.DerivedFrom = append(a.DerivedFrom, record.NodeRef{Artifact: &x})
		default:
			return nil, d.fail(n, "derived from %s, which is neither a claim nor an artifact", Show(v))
		}
	}
	if a.By, err = d.principal(n, ProvWasAttributedTo, true); err != nil {
		return nil, err
	}
	if a.Confidence, err = d.float(n, MQLConfidence); err != nil {
		return nil, err
	}
	if a.SeenBy, err = d.principalList(n); err != nil {
		return nil, err
	}
	v, err := d.opt(n, ProvWasRevisionOf)
	if err != nil {
		return nil, err
	}
	if v != nil {
		prev, err := ParseArtifactIRI(v)
		if err != nil {
			return nil, d.fail(n, "%s: %v", ProvWasRevisionOf, err)
		}
		a.Supersedes = &prev
	}
	if a.Run, err = d.str(n, MQLRun, false); err != nil {
		return nil, err
	}
	return a, nil
}

// ---- reference checking --------------------------------------------------------------------

// Chain tracks what a sequence of transactions has recorded, so that a transaction can be
// checked before it is committed or indexed: ids follow on, versions follow on, and every
// claim, artifact and source it refers to exists. index.Index.Add panics on a broken reference;
// nothing that fails check is ever handed to it or written.
type Chain struct{ rec Records }

// Records answers what a chain checks. A Store's chain asks its index, which already knows
// every record (pending ones included); decoding and import, which have no index, keep sets.
type Records interface {
	Top() record.TxID
	HasClaim(record.ClaimID) bool
	KeyVersion(record.Key) int
	HasArtifact(record.ArtifactID) bool
	ArtifactVersion(name string) int
	HasSource(id string) bool
	HasToken(id string) bool
	// VectorDim is the dimension of the vectors recorded (0: none yet).
	VectorDim() int
	Add(tx *record.Tx)
}

// NewChain checks a sequence of transactions from the genesis, keeping what they record.
func NewChain() *Chain { return &Chain{rec: newRecordSets()} }

// ChainOver checks against rec, which answers for what is recorded already.
func ChainOver(rec Records) *Chain { return &Chain{rec: rec} }

// Add records tx, which Check passed.
func (c *Chain) Add(tx *record.Tx) { c.rec.Add(tx) }

type recordSets struct {
	head    record.TxID
	claims  map[record.ClaimID]bool
	keyVer  map[record.Key]int
	arts    map[record.ArtifactID]bool
	artVer  map[string]int
	sources map[string]bool
	tokens  map[string]bool
	dim     int
}

func newRecordSets() *recordSets {
	return &recordSets{
		claims: map[record.ClaimID]bool{}, keyVer: map[record.Key]int{},
		arts: map[record.ArtifactID]bool{}, artVer: map[string]int{},
		sources: map[string]bool{}, tokens: map[string]bool{},
	}
}

func (r *recordSets) Top() record.TxID                      { return r.head }
func (r *recordSets) HasClaim(id record.ClaimID) bool       { return r.claims[id] }
func (r *recordSets) KeyVersion(k record.Key) int           { return r.keyVer[k] }
func (r *recordSets) HasArtifact(id record.ArtifactID) bool { return r.arts[id] }
func (r *recordSets) ArtifactVersion(name string) int       { return r.artVer[name] }
func (r *recordSets) HasSource(id string) bool              { return r.sources[id] }
func (r *recordSets) HasToken(id string) bool               { return r.tokens[id] }
func (r *recordSets) VectorDim() int                        { return r.dim }

func (r *recordSets) Add(tx *record.Tx) {
	r.head = tx.ID
	for _, s := range tx.Sources {
		r.sources[s.ID] = true
	}
	for _, cl := range tx.Claims {
		r.claims[cl.ID] = true
		r.keyVer[cl.ID.Key] = cl.ID.Version
	}
	r.dim = VectorDimAfter(r.dim, tx)
	for _, a := range tx.Artifacts {
		r.arts[a.ID] = true
		r.artVer[a.ID.Name] = a.ID.Version
	}
	for _, k := range tx.Tokens {
		r.tokens[k.ID] = true
	}
}

// VectorDimAfter is the dimension of a store's vectors after tx, dim before it: the first
// vector recorded fixes it.
func VectorDimAfter(dim int, tx *record.Tx) int {
	for _, cl := range tx.Claims {
		if dim != 0 {
			break
		}
		dim = len(cl.Vector)
	}
	return dim
}

// Check reports the first problem with appending tx; it changes nothing.
func (c *Chain) Check(tx *record.Tx) error { return c.CheckPart(tx, false) }

// CheckPart is check for the records of tx, which continues the last transaction recorded
// when cont is set (a staged build's later parts).
func (c *Chain) CheckPart(tx *record.Tx, cont bool) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("tx %d: %s", tx.ID, fmt.Sprintf(format, args...))
	}
	if head := c.rec.Top(); !cont && tx.ID != head+1 || cont && tx.ID != head {
		return fmt.Errorf("tx %d follows tx %d: transaction ids must be contiguous", tx.ID, head)
	}
	if tx.ID == 1 && tx.Meta == nil {
		return fail("the genesis transaction records no store meta (owner, strict)")
	}
	if tx.ID != 1 && tx.Meta != nil {
		return fail("only the genesis transaction may record store meta")
	}
	// Sized up front: growing them was most of this check's time for large transactions.
	newSources := make(map[string]bool, len(tx.Sources))
	for _, s := range tx.Sources {
		newSources[s.ID] = true
	}
	newClaims := make(map[record.ClaimID]bool, len(tx.Claims))
	newVer := make(map[record.Key]int, len(tx.Claims))
	hasClaim := func(id record.ClaimID) bool { return c.rec.HasClaim(id) || newClaims[id] }
	for _, cl := range tx.Claims {
		v := c.rec.KeyVersion(cl.ID.Key)
		if nv, ok := newVer[cl.ID.Key]; ok {
			v = nv
		}
		if cl.ID.Version != v+1 {
			return fail("claim %s recorded after version %d of its key", cl.ID, v)
		}
		for _, ref := range []*record.ClaimID{cl.Supersedes, cl.Contests, cl.Corroborates} {
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
			if !c.rec.HasSource(s) && !newSources[s] {
				return fail("claim %s names source %q, which was never recorded", cl.ID, s)
			}
		}
		newClaims[cl.ID] = true
		newVer[cl.ID.Key] = cl.ID.Version
	}
	dim := c.rec.VectorDim()
	for _, cl := range tx.Claims {
		switch {
		case cl.Vector == nil:
		case dim == 0:
			dim = len(cl.Vector)
		case len(cl.Vector) != dim:
			return fail("claim %s has a vector of %d dimensions; the store's vectors have %d (fixed by its first)", cl.ID, len(cl.Vector), dim)
		}
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
	newArts := make(map[record.ArtifactID]bool, len(tx.Artifacts))
	newArtVer := make(map[string]int, len(tx.Artifacts))
	hasArt := func(id record.ArtifactID) bool { return c.rec.HasArtifact(id) || newArts[id] }
	for _, a := range tx.Artifacts {
		v := c.rec.ArtifactVersion(a.ID.Name)
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
			if !c.rec.HasClaim(id) {
				return fail("retrieval %s served %s, which was never recorded", r.ID, id)
			}
		}
		for _, id := range r.Artifacts {
			if !c.rec.HasArtifact(id) {
				return fail("retrieval %s served %s, which was never recorded", r.ID, id)
			}
		}
	}
	newTokens := map[string]bool{}
	for _, k := range tx.Tokens {
		if c.rec.HasToken(k.ID) || newTokens[k.ID] {
			return fail("token %s is recorded twice", k.ID)
		}
		newTokens[k.ID] = true
	}
	for _, r := range tx.TokenRevocations {
		if !c.rec.HasToken(r.Token) && !newTokens[r.Token] {
			return fail("token revocation %s of token %s, which was never recorded", r.ID, r.Token)
		}
	}
	return nil
}
