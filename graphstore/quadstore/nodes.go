package quadstore

import (
	"fmt"
	"strings"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// A node of the graph is a record's IRI (a transaction, the store, a principal, a claim
// version, …), an IRI of the vocabulary (a predicate or a class), or a literal. A record's
// quads are found from its record, and the quads that point at a record from the index entries
// that link records (a claim's later versions, revocations, confirmations and dependents, an
// artifact's, the retrievals that served them); the other quads are found by reading the
// transactions in order.

type nodeKind int

const (
	kNone     nodeKind = iota // not a node of this graph
	kTx                       // a transaction
	kStore                    // urn:mql:store
	kClaim                    // a claim version
	kArtifact                 // an artifact version
	kDecay                    // a decay declaration
	kRecord                   // another record, found by its id
	kVocab                    // an IRI of the vocabulary's namespaces: a predicate or a class
	kLiteral                  // a literal
)

type node struct {
	kind  nodeKind
	rk    index.Kind // kRecord
	id    string     // kRecord: its id
	tx    record.TxID
	i     int // kDecay: its place in tx
	claim record.ClaimID
	art   record.ArtifactID
}

// recordPrefixes are the IRI prefixes of the records found by their id.
var recordPrefixes = []struct {
	prefix string
	kind   index.Kind
	what   string
}{
	{codec.PrefPrincipal, index.KindPrincipal, "principal"},
	{codec.PrefGrant, index.KindGrant, "grant"},
	{codec.PrefSource, index.KindSource, "source"},
	{codec.PrefRevocation, index.KindRevocation, "revocation"},
	{codec.PrefConfirmation, index.KindConfirmation, "confirmation"},
	{codec.PrefReview, index.KindReview, "review"},
	{codec.PrefToken, index.KindToken, "token"},
	{codec.PrefTokenRevoke, index.KindTokenRevocation, "token revocation"},
	{codec.PrefRetrieval, index.KindRetrieval, "retrieval"},
	{codec.PrefOutcome, index.KindOutcome, "outcome"},
}

// isGrantIRI reports whether iri names a grant. A grant's IRI is not always a record's: a claim's
// mql:grant names the standing that let its asserter assert, which is the owner's
// (urn:mql:grant:owner) when it is not a grant.
func isGrantIRI(iri quad.IRI) bool { return strings.HasPrefix(string(iri), codec.PrefGrant) }

// isRecordIRI reports whether iri has the form of a record's node.
func isRecordIRI(iri quad.IRI) bool {
	s := string(iri)
	if !strings.HasPrefix(s, codec.NSMQL) {
		return false
	}
	if iri == codec.IRIStore {
		return true
	}
	for _, p := range []string{codec.PrefTx, codec.PrefClaim, codec.PrefArtifact, codec.PrefDecay} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	for _, p := range recordPrefixes {
		if strings.HasPrefix(s, p.prefix) {
			return true
		}
	}
	return false
}

// parseNode says what v names, without reading the store.
func parseNode(v quad.Value) node {
	switch x := v.(type) {
	case quad.IRI:
		return parseIRI(x)
	case quad.String, quad.TypedString, quad.Int, quad.Float, quad.Bool:
		return node{kind: kLiteral}
	}
	return node{}
}

func parseIRI(iri quad.IRI) node {
	s := string(iri)
	switch {
	case !isRecordIRI(iri):
		for _, ns := range []string{codec.NSRDF, codec.NSPROV, codec.NSMQL} {
			if strings.HasPrefix(s, ns) {
				return node{kind: kVocab}
			}
		}
		return node{}
	case iri == codec.IRIStore:
		return node{kind: kStore}
	case strings.HasPrefix(s, codec.PrefTx):
		if id, ok := codec.ParseTxIRI(iri); ok {
			return node{kind: kTx, tx: id}
		}
	case strings.HasPrefix(s, codec.PrefClaim):
		if id, err := codec.ParseClaimIRI(iri); err == nil {
			return node{kind: kClaim, claim: id}
		}
	case strings.HasPrefix(s, codec.PrefArtifact):
		if id, err := codec.ParseArtifactIRI(iri); err == nil {
			return node{kind: kArtifact, art: id}
		}
	case strings.HasPrefix(s, codec.PrefDecay):
		if tx, i, ok := codec.ParseDecayIRI(iri); ok {
			return node{kind: kDecay, tx: tx, i: i}
		}
	default:
		for _, p := range recordPrefixes {
			if strings.HasPrefix(s, p.prefix) {
				if id, err := codec.ParseNamed(p.prefix, p.what, iri); err == nil {
					return node{kind: kRecord, rk: p.kind, id: id}
				}
				break
			}
		}
	}
	return node{}
}

// exists reports whether the record n names is recorded within v. Vocabulary IRIs and
// literals are not records: exists says nothing of them.
func exists(v *index.View, n node) bool {
	switch n.kind {
	case kTx:
		return n.tx >= 1 && n.tx <= v.AsOf()
	case kStore:
		return v.AsOf() >= 1
	case kClaim:
		return v.Claim(n.claim) != nil
	case kArtifact:
		return v.Artifact(n.art) != nil
	case kDecay:
		return v.Decay(n.tx, n.i) != nil
	case kRecord:
		rec, _ := v.Record(n.rk, n.id)
		return rec != nil
	}
	return false
}

// header is what codec.EncodeRecord reads of a record's transaction.
func header(v *index.View, tx record.TxID) *record.Tx {
	return &record.Tx{ID: tx, Time: v.TxTime(tx)}
}

// txOf is the transaction that recorded rec.
func txOf(rec any) record.TxID {
	switch r := rec.(type) {
	case *record.StoreMeta:
		return 1 // the genesis records it
	case *record.Principal:
		return r.Tx
	case *record.Grant:
		return r.Tx
	case *record.Source:
		return r.Tx
	case *record.Claim:
		return r.Tx
	case *record.Revocation:
		return r.Tx
	case *record.Confirmation:
		return r.Tx
	case *record.Artifact:
		return r.Tx
	case *record.Review:
		return r.Tx
	case *record.Decay:
		return r.Tx
	case *record.Token:
		return r.Tx
	case *record.TokenRevocation:
		return r.Tx
	case *record.Retrieval:
		return r.Tx
	case *record.Outcome:
		return r.Tx
	}
	panic(fmt.Sprintf("quadstore: %T is not a record", rec))
}

// collector gathers the quads that have one value in one direction, once each.
type collector struct {
	v    *index.View
	dir  quad.Direction
	val  quad.Value
	pred quad.Value // when set, the quads' predicate too
	out  []quad.Quad
	seen map[quad.Quad]bool
	err  error
}

func (c *collector) keep(q quad.Quad) {
	if q.Get(c.dir) != c.val || c.pred != nil && q.Predicate != c.pred || c.seen[q] {
		return
	}
	if c.seen == nil {
		c.seen = make(map[quad.Quad]bool, 16)
	}
	c.seen[q] = true
	c.out = append(c.out, q)
}

// record keeps the quads of rec, the ord-th record of its kind in its transaction.
func (c *collector) record(rec any, ord int) {
	if c.err != nil {
		return
	}
	var qs []quad.Quad
	var err error
	if c.dir == quad.Subject || c.dir == quad.Object {
		qs, err = codec.EncodeRecordMatching(header(c.v, txOf(rec)), ord, rec, c.dir, c.val)
	} else {
		qs, err = codec.EncodeRecord(header(c.v, txOf(rec)), ord, rec)
	}
	if err != nil {
		c.err = err
		return
	}
	for _, q := range qs {
		c.keep(q)
	}
}

func (c *collector) placed(ps []index.Placed) {
	for _, p := range ps {
		c.record(p.Rec, p.Ord)
	}
}

func (c *collector) claim(e *index.ClaimEntry) { c.record(e.Claim, c.v.ClaimOrd(e)) }

func (c *collector) artifact(n *index.ArtifactNode) { c.record(n.Artifact, c.v.ArtifactOrd(n)) }

// wrote keeps the edge from transaction tx to node, a subject of its quads.
func (c *collector) wrote(tx record.TxID, node quad.IRI) { c.keep(codec.WroteQuad(tx, node)) }

// subjectQuads are the quads whose subject is val (n): the record's own quads, and those later
// transactions wrote on it (a revoked claim's invalidation).
func subjectQuads(v *index.View, n node, val quad.Value) ([]quad.Quad, error) {
	c := &collector{v: v, dir: quad.Subject, val: val}
	switch n.kind {
	case kTx:
		if tx := v.Tx(n.tx); tx != nil {
			qs, err := codec.EncodeTxNode(tx)
			if err != nil {
				return nil, err
			}
			for _, q := range qs {
				c.keep(q)
			}
		}
	case kStore:
		if v.AsOf() >= 1 {
			m := v.Meta()
			c.record(&m, 0)
		}
	case kRecord:
		if rec, ord := v.Record(n.rk, n.id); rec != nil {
			c.record(rec, ord)
		}
	case kDecay:
		if d := v.Decay(n.tx, n.i); d != nil {
			c.record(d, n.i)
		}
	case kClaim:
		if e := v.Claim(n.claim); e != nil {
			c.claim(e)
			c.placed(v.Revocations(e))
		}
	case kArtifact:
		if a := v.Artifact(n.art); a != nil {
			c.artifact(a)
		}
	}
	return c.out, c.err
}

// objectQuads are the quads whose object is val (n), when the index finds them: ok is false
// for the nodes whose referrers only a scan finds (principals, grants, sources, vocabulary
// IRIs and literals).
func objectQuads(v *index.View, n node, val quad.Value) (out []quad.Quad, ok bool, err error) {
	c := &collector{v: v, dir: quad.Object, val: val}
	iri, _ := val.(quad.IRI)
	switch n.kind {
	case kTx, kNone:
	case kStore:
		if v.AsOf() >= 1 {
			c.wrote(1, iri)
		}
	case kClaim:
		e := v.Claim(n.claim)
		if e == nil {
			break
		}
		c.wrote(e.Tx, iri)
		for _, o := range v.Versions(e.ID.Key) {
			for _, rel := range []*record.ClaimID{o.Supersedes, o.Contests, o.Corroborates} {
				if rel != nil && *rel == e.ID {
					c.claim(o)
					break
				}
			}
			for _, r := range v.Revocations(o) {
				rv := r.Rec.(*record.Revocation)
				if rv.Claim == e.ID {
					c.wrote(rv.Tx, iri)
				}
				if rv.Claim == e.ID || rv.ReplacedBy != nil && *rv.ReplacedBy == e.ID {
					c.record(r.Rec, r.Ord)
				}
			}
		}
		c.placed(v.Confirmations(e))
		id := e.ID
		for _, a := range v.Dependents(record.NodeRef{Claim: &id}) {
			c.artifact(a)
		}
		c.served(record.NodeRef{Claim: &id})
	case kArtifact:
		a := v.Artifact(n.art)
		if a == nil {
			break
		}
		c.wrote(a.Tx, iri)
		for _, o := range v.ArtifactVersions(a.ID.Name) {
			if o.Supersedes != nil && *o.Supersedes == a.ID {
				c.artifact(o)
			}
		}
		for _, d := range v.ArtifactDependents(a) {
			c.artifact(d)
		}
		for _, r := range v.Reviews(a) {
			if rec, ord := v.Record(index.KindReview, r.ID); rec != nil {
				c.record(rec, ord)
			}
		}
		id := a.ID
		c.served(record.NodeRef{Artifact: &id})
	case kDecay:
		if v.Decay(n.tx, n.i) != nil {
			c.wrote(n.tx, iri)
		}
	case kRecord:
		switch n.rk {
		case index.KindPrincipal, index.KindGrant, index.KindSource:
			return nil, false, nil
		}
		rec, ord := v.Record(n.rk, n.id)
		if rec == nil {
			break
		}
		c.wrote(txOf(rec), iri)
		switch n.rk {
		case index.KindRevocation:
			c.record(rec, ord) // its quads on the claim it revokes point at it
		case index.KindToken:
			c.placed(v.TokenRevocations(n.id))
		}
	default:
		return nil, false, nil
	}
	return c.out, true, c.err
}

// served keeps the retrievals that served node.
func (c *collector) served(node record.NodeRef) {
	for _, q := range c.v.ServedIn(node) {
		if rec, ord := c.v.Record(index.KindRetrieval, q.ID); rec != nil {
			c.record(rec, ord)
		}
	}
}

// namedQuads are the quads of predicate pred whose object is the name lit, which the index
// finds: a claim's mql:subject and mql:predicate (the versions of the keys of that subject or
// predicate), a decay's mql:predicate, a principal's or an artifact version's mql:name.
func namedQuads(v *index.View, pred quad.IRI, lit quad.String) ([]quad.Quad, error) {
	c := &collector{v: v, dir: quad.Object, val: lit, pred: pred}
	name := string(lit)
	var keys []record.Key
	switch pred {
	case codec.MQLSubject:
		keys = v.KeysOfSubject(name)
	case codec.MQLPredicate:
		keys = v.KeysOfPredicate(name)
		c.placed(v.DecaysOf(name))
	case codec.MQLName:
		if rec, ord := v.Record(index.KindPrincipal, name); rec != nil {
			c.record(rec, ord)
		}
		for _, a := range v.ArtifactVersions(name) {
			c.artifact(a)
		}
	}
	for _, k := range keys {
		for _, e := range v.Versions(k) {
			c.claim(e)
		}
	}
	return c.out, c.err
}

// named reports whether the index finds the quads of predicate p with a name as object.
func named(p quad.Value) bool {
	return p == codec.MQLSubject || p == codec.MQLPredicate || p == codec.MQLName
}
