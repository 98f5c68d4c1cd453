package graphstore

// The incremental checker: one transaction at a time, in id order, against the compact state
// of everything before it (CheckState). `mql check` feeds it a store's transactions and
// `mql import` a file's, so both run the same checks and neither holds all the quads.
//
// For each transaction it checks the raw quads first — every record has its mandatory fields,
// once and well typed, and every reference resolves to a record of the right class recorded
// no later — so that a broken store gets a message about the record that is wrong rather than
// a decoding error; then it decodes the transaction (which must be exactly the canonical
// encoding of what it records), runs the chain check Open runs, and hands the transaction to
// the caller's rules (package mql checks authors and standings there). While every
// transaction so far has decoded and chained, it applies each one to an index (index.Apply,
// into the caller's sink), which is its state of everything before the next one (CheckState)
// and from which, at the end, it checks that each key has at most one live claim per audience.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/lifecycle"
	"github.com/mql-dev/mql/graphstore/record"
)

// CheckOptions configure a check or an import.
type CheckOptions struct {
	// Now is when liveness is judged (valid-until expiry); time.Now if zero.
	Now time.Time
	// Rules, if set, is called with each transaction that decodes and chains, in order, while
	// every transaction before it did too. st holds what was recorded before tx (its claims
	// and artifacts: up to and including tx). It reports what is wrong with add. Package mql
	// checks standings here.
	Rules func(st *CheckState, tx *record.Tx, add func(Problem))
}

// maxGapFill bounds the versions a check remembers as missing between the last one recorded
// and one recorded after a gap; a larger gap is reported at once.
const maxGapFill = 1024

type rawNode = codec.Node // its Class: the mql class, "" if none

type dangling struct {
	tx   record.TxID
	node quad.IRI
	what string
	iri  quad.IRI
	want quad.IRI
}

type checker struct {
	r     *Report
	opts  CheckOptions
	st    *CheckState
	recs  *stateRecords
	chain *codec.Chain

	id  record.TxID  // the transaction being checked
	cur *codec.Graph // its quads, grouped

	prevTime time.Time // the time of the transaction before, if it has a valid one
	prevID   record.TxID
	sound    bool // every transaction so far decoded and chained
	added    int  // problems found, listed or not
	byRules  int  // of which the caller's rules found
	// deferDangling keeps references that do not resolve until the end, to say whether they
	// name something recorded later (a check) instead of failing at once (an import).
	deferDangling bool
	// tick, if set, is called every thousand keys of the scan that judges the end (a
	// check releases the mapped pages there: see releaser).
	tick     func()
	deferred []dangling
	// applyErr is why the sink refused the transaction the checker applied last, if it did:
	// the checker applies nothing after it.
	applyErr error
	// err is a failure to read the index (its kv store failed): the state is incomplete, and
	// the check or import can only end with it.
	err error
}

// newChecker returns a checker that applies the transactions it accepts to sink.
func newChecker(opts CheckOptions, sink indexSink) *checker {
	st := newCheckState(sink)
	recs := &stateRecords{s: st}
	return &checker{
		r:     &Report{Problems: []Problem{}},
		opts:  opts,
		st:    st,
		recs:  recs,
		chain: codec.ChainOver(recs),
		sound: true,
	}
}

func (c *checker) add(kind string, tx record.TxID, node quad.IRI, format string, args ...any) {
	c.addProblem(Problem{Kind: kind, Tx: tx, Node: string(node), Msg: fmt.Sprintf(format, args...)})
}

// addAt reports a problem about quad q of the transaction being checked (an import names its
// line).
func (c *checker) addAt(q quad.Quad, kind string, format string, args ...any) {
	s, _ := q.Subject.(quad.IRI)
	c.addProblem(Problem{Kind: kind, Tx: c.id, Node: string(s), Msg: fmt.Sprintf(format, args...), quad: &q})
}

func (c *checker) addProblem(p Problem) {
	c.added++
	c.r.Add(p)
}

// missing reports that transactions from..to are absent; the store cannot be replayed.
func (c *checker) missing(from, to, head record.TxID) {
	c.sound = false
	if from == to {
		c.add(ProblemTxIDs, from, "", "transaction %d is missing (ids must run 1..%d without gaps)", from, head)
	} else {
		c.add(ProblemTxIDs, from, "", "transactions %d to %d are missing (ids must run 1..%d without gaps)", from, to, head)
	}
}

// addTx checks the quads of transaction id (all labelled with it) and adds it to the state.
// When the transaction decodes, it returns it and its canonical quads (what a store holds).
// After it, c.applyErr says whether the sink refused it, and c.err whether the index failed
// (then the checker does nothing more).
func (c *checker) addTx(id record.TxID, quads []quad.Quad) (tx *record.Tx, encoded []quad.Quad) {
	return c.addPrepared(prepareTx(id, quads))
}

// addPrepared is addTx of a transaction prepareTx read.
func (c *checker) addPrepared(p *preparedTx) (tx *record.Tx, encoded []quad.Quad) {
	c.applyErr = nil
	if c.err != nil {
		return nil, nil
	}
	c.guard(func() { tx, encoded = c.checkTx(p) })
	return tx, encoded
}

// preparedTx is what checking a transaction needs that depends on its quads alone: its nodes
// and their properties, its canonical quads and its decoding. An import prepares the next
// transaction on the goroutine that parses it, while the checker applies the one before.
type preparedTx struct {
	id    record.TxID
	n     int          // the quads read, duplicates included
	canon []quad.Quad  // the distinct well-formed quads, canonical, in the file's order
	g     *codec.Graph // canon grouped by subject
	bad   []quad.Quad  // quads whose subject or predicate is not an IRI, or with no object

	tx        *record.Tx
	encoded   []quad.Quad
	decodeErr error
}

func prepareTx(id record.TxID, quads []quad.Quad) *preparedTx {
	p := &preparedTx{id: id, n: len(quads), g: codec.NewGraph(len(quads))}
	for i := range quads {
		q := codec.CanonQuad(quads[i])
		_, ok1 := q.Subject.(quad.IRI)
		_, ok2 := q.Predicate.(quad.IRI)
		if !ok1 || !ok2 || q.Object == nil {
			p.bad = append(p.bad, q)
			continue
		}
		p.g.Add(q) // RDF: a graph is a set of quads, and Add drops a repeat
	}
	p.canon = p.g.Quads
	p.tx, p.encoded, p.decodeErr = codec.DecodeGraph(id, p.g, p.canon)
	return p
}

// guard runs fn, turning a failure of the index it read (an *index.Fault) into c.err.
func (c *checker) guard(fn func()) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(*index.Fault)
			if !ok {
				panic(r)
			}
			c.err = f
		}
	}()
	fn()
}

func (c *checker) checkTx(p *preparedTx) (*record.Tx, []quad.Quad) {
	id := p.id
	c.id = id
	c.r.Transactions++
	c.r.Head = max(c.r.Head, id)
	c.r.Quads += p.n
	c.cur = p.g
	before := c.added

	for _, q := range p.bad {
		c.add(ProblemRecord, id, "", "quad %s: subject and predicate must be IRIs and the object present", formatQuadShort(q))
	}
	c.classes()
	c.txNode()

	var claims []rawClaim
	var arts []rawArtifact
	revs := map[quad.IRI]quad.IRI{} // revocation node -> the claim it revokes
	var revOrder []quad.IRI
	for _, n := range c.cur.Order {
		iri := n.IRI
		switch n.Class {
		case "", codec.MQLTransaction:
		case codec.MQLStore:
			c.checkStore(n)
		case codec.MQLPrincipal:
			c.r.Principals++
			c.checkPrincipal(n)
		case codec.MQLGrant:
			c.checkGrant(n)
		case codec.MQLSource:
			if _, err := codec.ParseNamed(codec.PrefSource, "source", n.IRI); err != nil {
				c.add(ProblemRecord, id, n.IRI, "%v", err)
			}
		case codec.MQLClaim:
			c.r.Claims++
			if cid, ok := c.checkClaim(n); ok {
				claims = append(claims, rawClaim{n, cid})
			}
		case codec.MQLRevocation:
			c.r.Revocations++
			if target, ok := c.checkRevocation(n); ok {
				revs[n.IRI] = target
				revOrder = append(revOrder, n.IRI)
			}
		case codec.MQLConfirmation:
			c.checkConfirmation(n)
		case codec.MQLArtifact:
			c.r.Artifacts++
			if aid, ok := c.checkArtifact(n); ok {
				arts = append(arts, rawArtifact{n, aid})
			}
		case codec.MQLReview:
			c.checkReview(n)
		case codec.MQLDecay:
			c.checkDecay(n)
		case codec.MQLToken:
			c.checkToken(n)
		case codec.MQLTokenRevoke:
			c.checkTokenRevocation(n)
		case codec.MQLRetrieval:
			c.checkRetrieval(n)
		case codec.MQLOutcome:
			c.checkOutcome(n)
		default:
			c.add(ProblemRecord, id, iri, "unknown record class %s", n.Class)
		}
	}
	c.checkInvalidations(revs, revOrder)
	dirty := c.added > before

	tx, encoded, err := p.tx, p.encoded, p.decodeErr
	if err != nil {
		c.sound = false
		if !dirty {
			p := Problem{Kind: ProblemEncoding, Tx: id, Msg: strings.TrimPrefix(err.Error(), fmt.Sprintf("tx %d: ", id))}
			if de, ok := err.(*codec.DecodeError); ok && de.Quad != nil {
				q := *de.Quad
				p.quad = &q
			}
			c.addProblem(p)
		}
	}
	if tx != nil {
		if c.sound {
			if err := c.chain.Check(tx); err != nil {
				c.sound = false
				c.add(ProblemReference, id, "", "%s", strings.TrimPrefix(err.Error(), fmt.Sprintf("tx %d: ", id)))
			}
		}
		if c.sound && c.opts.Rules != nil {
			c.st.setCur(tx)
			c.opts.Rules(c.st, tx, func(p Problem) {
				c.byRules++
				c.addProblem(p)
			})
			c.st.setCur(nil)
		}
	}
	// What this transaction records now exists for the ones after it: in the index when it
	// decoded and chained (and the index took it), else in the state's overlay.
	applied := false
	if tx != nil && c.sound && c.st.indexing {
		if err := c.st.sink.add(tx, encoded); err != nil {
			c.applyErr = err
			c.st.indexing = false
		} else {
			applied = true
			c.st.horizon = id
		}
	}
	c.register(claims, arts, applied)
	for _, rv := range revOrder {
		c.registerRevocation(rv, revs[rv], applied)
	}
	clear(c.st.curRevoked)
	if tx != nil && c.sound {
		c.apply(tx, applied)
	}
	c.recs.head = id
	if tx != nil {
		c.recs.dim = codec.VectorDimAfter(c.recs.dim, tx)
	}
	c.cur = nil
	return tx, encoded
}

type rawClaim struct {
	n  *rawNode
	id record.ClaimID
}

type rawArtifact struct {
	n  *rawNode
	id record.ArtifactID
}

// classes sets each node's mql class and reports records recorded twice.
func (c *checker) classes() {
	for _, n := range c.cur.Order {
		iri := n.IRI
		for _, t := range n.All(codec.RDFType) {
			cl, ok := t.(quad.IRI)
			if !ok || !strings.HasPrefix(string(cl), codec.NSMQL) {
				continue
			}
			if n.Class == "" {
				n.Class = cl
			} else if cl != n.Class {
				c.add(ProblemRecord, c.id, iri, "has two classes, %s and %s", n.Class, cl)
			}
		}
		if n.Class == "" || n.Class == codec.MQLTransaction {
			continue
		}
		if prev, ok := c.st.lookup(iri); ok {
			if _, kept := c.st.first[iri]; !kept {
				// Applied, this transaction's record would replace it in the index.
				c.st.first[quad.IRI(strings.Clone(string(iri)))] = prev
			}
			if prev.class == n.Class {
				c.add(ProblemRecord, c.id, iri, "recorded twice, by tx %d and tx %d", prev.tx, c.id)
			} else {
				c.add(ProblemRecord, c.id, iri, "has two classes, %s (tx %d) and %s (tx %d)", prev.class, prev.tx, n.Class, c.id)
			}
		}
	}
}

// txNode checks the transaction node: its time (never before the previous transaction's) and
// principal; and that the genesis records the store meta.
func (c *checker) txNode() {
	id := c.id
	for _, n := range c.cur.Order {
		if iri := n.IRI; n.Class == codec.MQLTransaction && iri != codec.TxIRI(id) {
			c.add(ProblemTx, id, iri, "a transaction node in tx %d's graph", id)
		}
	}
	n := c.cur.Node(codec.TxIRI(id))
	if c.prevID != id-1 {
		c.prevTime = time.Time{} // a transaction between without a time: nothing to compare with
	}
	if n == nil || n.Class != codec.MQLTransaction {
		c.add(ProblemTx, id, codec.TxIRI(id), "the transaction has quads but no transaction node (rdf:type mql:Transaction)")
	} else {
		switch ts := n.All(codec.ProvEndedAtTime); {
		case len(ts) == 0:
			c.add(ProblemTx, id, n.IRI, "the transaction records no time (prov:endedAtTime)")
		case len(ts) > 1:
			c.add(ProblemTx, id, n.IRI, "the transaction records %d times (prov:endedAtTime), want one", len(ts))
		default:
			t, ok := codec.AsTime(ts[0])
			at := quad.Quad{Subject: n.IRI, Predicate: codec.ProvEndedAtTime, Object: ts[0], Label: n.IRI}
			switch {
			case !ok:
				c.addAt(at, ProblemTx, "its time %s is not an xsd:dateTime", showVal(ts[0]))
			case !c.prevTime.IsZero() && t.Before(c.prevTime):
				c.addAt(at, ProblemTx, "its time %s is before tx %d's, %s: transaction times never go backwards",
					t.Format(time.RFC3339Nano), c.prevID, c.prevTime.Format(time.RFC3339Nano))
			}
			c.prevTime, c.prevID = t, id
		}
		if len(n.All(codec.ProvWasAssociatedWith)) == 0 {
			c.add(ProblemTx, id, n.IRI, "the transaction records no principal (prov:wasAssociatedWith)")
		} else {
			c.principalRef(n, codec.ProvWasAssociatedWith, "principal", true)
		}
	}
	if id == 1 {
		if s := c.cur.Node(codec.IRIStore); s == nil || s.Class != codec.MQLStore {
			c.add(ProblemRecord, 1, codec.IRIStore, "the genesis (tx 1) records no store meta (owner, strict flag)")
		}
	}
}

// register adds what the transaction's raw records recorded to the state, checking that
// versions follow on. A transaction the index took (applied) is there already, but for its
// principals and grants: it decoded and chained, so its versions follow on.
func (c *checker) register(claims []rawClaim, arts []rawArtifact, applied bool) {
	st := c.st
	for _, n := range c.cur.Order {
		iri := n.IRI
		if applied && n.Class != codec.MQLStore && n.Class != codec.MQLPrincipal && n.Class != codec.MQLGrant {
			continue
		}
		switch n.Class {
		case codec.MQLStore:
			if iri == codec.IRIStore && c.id == 1 && !st.hasMeta {
				st.hasMeta = true
			}
		case codec.MQLPrincipal:
			if name, err := codec.ParseNamed(codec.PrefPrincipal, "principal", iri); err == nil {
				if _, ok := st.principalTx[name]; !ok {
					st.principalTx[st.intern(name)] = c.id
				}
			}
		case codec.MQLGrant:
			if g, err := codec.ParseNamed(codec.PrefGrant, "grant", iri); err == nil {
				if _, ok := st.grantTx[g]; !ok {
					st.grantTx[strings.Clone(g)] = c.id
				}
			}
		case codec.MQLSource:
			if s, err := codec.ParseNamed(codec.PrefSource, "source", iri); err == nil {
				if _, ok := st.sourceTx(s); !ok {
					st.sources[strings.Clone(s)] = c.id
				}
			}
		case codec.MQLRevocation, codec.MQLConfirmation, codec.MQLReview, codec.MQLToken, codec.MQLTokenRevoke, codec.MQLRetrieval, codec.MQLOutcome:
			if _, ok := st.event(iri); !ok {
				st.events[quad.IRI(strings.Clone(string(iri)))] = recordInfo{n.Class, c.id}
			}
		}
	}
	if applied {
		return
	}
	for _, rc := range claims {
		ks := st.key(rc.id.Key)
		if slot, ok := c.version("key "+rc.id.Key.String(), rc.n.IRI, rc.id.Version, len(ks.vs), func(v int) record.TxID { return ks.vs[v-1].tx }); ok {
			for len(ks.vs) < slot {
				ks.vs = append(ks.vs, claimState{})
			}
			ks.vs[slot-1] = claimState{tx: c.id}
		}
	}
	for _, ra := range arts {
		as := st.art(ra.id.Name)
		if slot, ok := c.version("artifact "+ra.id.Name, ra.n.IRI, ra.id.Version, len(as.vs), func(v int) record.TxID { return as.vs[v-1].tx }); ok {
			for len(as.vs) < slot {
				as.vs = append(as.vs, artVersion{})
			}
			as.vs[slot-1] = artVersion{tx: c.id}
		}
	}
}

// version checks that version v of a key or artifact (of which n are known, some perhaps
// gaps) may be recorded now; it reports whether to record it.
func (c *checker) version(what string, iri quad.IRI, v, n int, txOf func(v int) record.TxID) (int, bool) {
	switch {
	case v <= n && txOf(v) != 0:
		c.add(ProblemVersion, c.id, iri, "%s: version %d is recorded %d times: in tx %d and tx %d", what, v, 2, txOf(v), c.id)
		return 0, false
	case v <= n: // fills a gap left by a later version recorded earlier
		if v < n && txOf(v+1) != 0 && txOf(v+1) < c.id {
			c.add(ProblemVersion, c.id, iri, "%s: version %d is recorded in tx %d, before version %d (tx %d)", what, v+1, txOf(v+1), v, c.id)
		}
	case v > n+1+maxGapFill:
		c.add(ProblemVersion, c.id, iri, "%s: versions %d to %d are missing (versions must run 1..%d without gaps)", what, n+1, v-1, v)
		return 0, false
	}
	return v, true
}

// registerRevocation records that a claim is revoked, reporting a second revocation. The
// revocations of a transaction the index took are there already (applied): those before it
// are the index's as of the transaction before.
func (c *checker) registerRevocation(rev, target quad.IRI, applied bool) {
	id, err := codec.ParseClaimIRI(target)
	if err != nil {
		return
	}
	m, asOf := c.st.revoked, c.st.horizon
	if applied {
		m, asOf = c.st.curRevoked, c.id-1
	}
	if r := c.st.revocations(id, m, asOf); r != nil {
		r.n++
		c.add(ProblemRevocation, c.id, target, "revoked %d times: first by %s (tx %d), again by %s (tx %d)", r.n, r.first, r.tx, rev, c.id)
		return
	}
	m[id] = &revokedBy{first: quad.IRI(strings.Clone(string(rev))), tx: c.id, n: 1}
}

// apply adds the facts of a decoded transaction to the state: its principals and grants, and,
// unless the index took it (applied), the facts of its claims and artifacts, folding the
// states of the claims it touches in View.fold's order: a new claim's own state, then
// supersessions, then promotions by replacement, then revocations, which are final.
func (c *checker) apply(tx *record.Tx, applied bool) {
	st := c.st
	if tx.Meta != nil {
		st.meta = *tx.Meta
	}
	for _, p := range tx.Principals {
		pc := *p
		pc.Name = st.intern(p.Name)
		st.principals[pc.Name] = &pc
	}
	for _, g := range tx.Grants {
		gc := *g
		st.grants[gc.Grantee] = append(st.grants[gc.Grantee], &gc)
	}
	if applied {
		return
	}
	for _, cl := range tx.Claims {
		cs := st.claim(cl.ID)
		if cs == nil || cs.tx != tx.ID {
			continue
		}
		cs.by, cs.aud = st.name(cl.By), st.audience(cl.SeenBy)
		cs.setUntil(cl.ValidUntil)
		cs.known, cs.phase = true, lifecycle.Birth(lifecycle.RelationOf(cl))
	}
	// The events of one transaction in the order lifecycle.Fold applies them.
	event := func(id record.ClaimID, ev lifecycle.EventKind) {
		if e := st.claim(id); e != nil && e.known {
			e.phase = lifecycle.Next(e.phase, ev)
		}
	}
	for _, cl := range tx.Claims {
		if cl.Supersedes != nil {
			event(*cl.Supersedes, lifecycle.Revised)
		}
	}
	for _, r := range tx.Revocations {
		if r.ReplacedBy != nil {
			event(*r.ReplacedBy, lifecycle.Promoted)
		}
	}
	for _, r := range tx.Revocations {
		event(r.Claim, lifecycle.Revocation)
	}
	for _, a := range tx.Artifacts {
		if av := st.artifact(a.ID); av != nil && av.tx == tx.ID {
			av.aud = st.audience(a.SeenBy)
		}
	}
}

// finish reports what can only be judged at the end: references to records that were never
// recorded (or only later), version gaps, and, if every transaction replayed, live claims.
// After it, c.err says whether the index failed.
func (c *checker) finish() *Report {
	if c.err == nil {
		c.guard(c.judgeEnd)
	}
	return c.r
}

func (c *checker) judgeEnd() {
	r := c.r
	for _, d := range c.deferred {
		switch rec, ok := c.st.lookup(d.iri); {
		case !ok:
			c.add(ProblemReference, d.tx, d.node, "its %s %s was never recorded", d.what, d.iri)
		case rec.class != d.want:
			c.add(ProblemReference, d.tx, d.node, "its %s %s is a %s, not a %s", d.what, d.iri, short(rec.class), short(d.want))
		default:
			c.add(ProblemReference, d.tx, d.node, "its %s %s is recorded later, in tx %d", d.what, d.iri, rec.tx)
		}
	}
	c.deferred = nil
	// The index holds no gaps: only the overlay may.
	for _, ks := range c.st.overlayKeys() {
		c.gaps("key "+ks.key.String(), len(ks.vs), func(v int) record.TxID { return ks.vs[v-1].tx })
	}
	names := make([]string, 0, len(c.st.arts))
	for name := range c.st.arts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		as := c.st.arts[name]
		c.gaps("artifact "+name, len(as.vs), func(v int) record.TxID { return as.vs[v-1].tx })
	}
	r.Keys = c.st.keyCount()
	if r.Transactions == 0 {
		c.add(ProblemTxIDs, 0, "", "the store holds no transactions: it is not an mql memory (no genesis)")
	}
	if c.sound && r.Transactions > 0 {
		c.checkLive()
	}
}

func (c *checker) gaps(what string, n int, txOf func(v int) record.TxID) {
	for v := 1; v <= n; v++ {
		if txOf(v) == 0 {
			c.add(ProblemVersion, 0, "", "%s: version %d is missing (versions must run 1..%d without gaps)", what, v, n)
		}
	}
}

// liveVersion is a version of a key live at the end, and its audience (index.Audience).
type liveVersion struct {
	v   int
	aud string
}

// checkLive checks that each key has at most one live claim per audience, judged at Now, key
// by key in the order their first claims were recorded: the keys of the index as it streams
// them, but for those the overlay holds, and then the overlay's others.
func (c *checker) checkLive() {
	now := c.opts.Now
	st := c.st
	var lives []liveVersion
	overlay := st.overlayKeys()
	next := 0
	fromOverlay := func(ks *keyState) {
		lives = lives[:0]
		for v, cs := range ks.vs {
			if cs.known && cs.phase == lifecycle.PhaseLive && !cs.expired(now) {
				lives = append(lives, liveVersion{v + 1, st.audName[cs.aud]})
			}
		}
		c.reportLive(func() record.Key { return ks.key }, lives)
	}
	if ix := st.ix(); ix != nil {
		n := 0
		ix.EachKeyVersionsAsOf(st.horizon, func(seq uint64, vs []index.CheckedClaim) bool {
			if n++; n%1024 == 0 && c.tick != nil {
				c.tick()
			}
			for ; next < len(overlay) && overlay[next].inIndex && overlay[next].seq <= seq; next++ {
				if overlay[next].seq == seq {
					fromOverlay(overlay[next])
					next++
					return true
				}
				fromOverlay(overlay[next])
			}
			lives = lives[:0]
			for v, cl := range vs {
				if cl.Phase == lifecycle.PhaseLive && (cl.ValidUntil.IsZero() || now.Before(cl.ValidUntil)) {
					lives = append(lives, liveVersion{v + 1, index.Audience(cl.SeenBy)})
				}
			}
			c.reportLive(func() record.Key { return ix.KeyName(seq) }, lives)
			return true
		})
	}
	for ; next < len(overlay); next++ {
		fromOverlay(overlay[next])
	}
}

// reportLive reports each audience of a key with more than one of the live versions, in the
// order of their first live versions.
func (c *checker) reportLive(key func() record.Key, lives []liveVersion) {
	if len(lives) < 2 {
		return
	}
	for i, l := range lives {
		if slices.ContainsFunc(lives[:i], func(e liveVersion) bool { return e.aud == l.aud }) {
			continue // reported with its audience's first
		}
		var vs []string
		for _, e := range lives[i:] {
			if e.aud == l.aud {
				vs = append(vs, "@"+strconv.Itoa(e.v))
			}
		}
		if len(vs) > 1 {
			who := "everyone"
			if l.aud != "" {
				who = "seen by " + l.aud
			}
			c.add(ProblemLive, 0, "", "%s has %d live claims for %s: %s (at most one may be live)", key(), len(vs), who, strings.Join(vs, ", "))
		}
	}
}

// ---- checks of one transaction's raw records -----------------------------------------------

func (c *checker) checkStore(n *rawNode) {
	if n.IRI != codec.IRIStore {
		c.add(ProblemRecord, c.id, n.IRI, "store meta must be on %s", codec.IRIStore)
	}
	if c.id != 1 {
		c.add(ProblemRecord, c.id, n.IRI, "store meta recorded outside the genesis (tx 1)")
	}
	c.principalRef(n, codec.MQLOwner, "an owner", true)
	if v, ok := c.one(n, codec.MQLStrict, "a strict flag"); ok {
		if _, isBool := v.(quad.Bool); !isBool {
			c.add(ProblemRecord, c.id, n.IRI, "strict flag %s is not an xsd:boolean", showVal(v))
		}
	}
}

// one returns the single value of p, reporting a missing or repeated one. what says what the
// field is, for the message.
func (c *checker) one(n *rawNode, p quad.IRI, what string) (quad.Value, bool) {
	vs := n.All(p)
	switch len(vs) {
	case 0:
		c.add(ProblemRecord, c.id, n.IRI, "has no %s (%s)", what, short(p))
		return nil, false
	case 1:
		return vs[0], true
	}
	c.add(ProblemRecord, c.id, n.IRI, "has %d values of %s (%s), want one", len(vs), what, short(p))
	return nil, false
}

// opt returns the value of p if there is one, reporting a repeated one.
func (c *checker) opt(n *rawNode, p quad.IRI, what string) (quad.Value, bool) {
	vs := n.All(p)
	switch len(vs) {
	case 0:
		return nil, false
	case 1:
		return vs[0], true
	}
	c.add(ProblemRecord, c.id, n.IRI, "has %d values of %s (%s), want at most one", len(vs), what, short(p))
	return nil, false
}

// value is one when the field is mandatory, opt when it is not.
func (c *checker) value(n *rawNode, p quad.IRI, what string, mandatory bool) (quad.Value, bool) {
	if mandatory {
		return c.one(n, p, what)
	}
	return c.opt(n, p, what)
}

func (c *checker) str(n *rawNode, p quad.IRI, what string, mandatory bool) (string, bool) {
	v, ok := c.value(n, p, what, mandatory)
	if !ok {
		return "", false
	}
	s, isStr := v.(quad.String)
	if !isStr {
		c.add(ProblemRecord, c.id, n.IRI, "its %s %s is not a plain string", what, showVal(v))
		return "", false
	}
	if mandatory && s == "" {
		c.add(ProblemRecord, c.id, n.IRI, "its %s is empty", what)
		return "", false
	}
	return string(s), true
}

// target resolves an IRI a record refers to: it must be a record of class want, recorded in
// this transaction or an earlier one. It reports whether it is.
func (c *checker) target(from *rawNode, p quad.IRI, v quad.Value, want quad.IRI, what string) bool {
	at := quad.Quad{Subject: from.IRI, Predicate: p, Object: v, Label: codec.TxIRI(c.id)}
	iri, ok := v.(quad.IRI)
	if !ok {
		c.addAt(at, ProblemReference, "its %s %s is not an IRI", what, showVal(v))
		return false
	}
	var rec recordInfo
	if n := c.cur.Node(iri); n != nil && n.Class != "" {
		rec, ok = recordInfo{n.Class, c.id}, true
	} else {
		rec, ok = c.st.lookup(iri)
	}
	switch {
	case !ok && c.deferDangling && len(c.deferred) < MaxProblems:
		c.added++ // a problem either way, reported at the end
		c.deferred = append(c.deferred, dangling{tx: c.id, node: from.IRI, what: what, iri: iri, want: want})
		return false
	case !ok && c.deferDangling:
		c.addAt(at, ProblemReference, "its %s %s was never recorded", what, iri)
		return false
	case !ok:
		c.addAt(at, ProblemReference, "its %s %s is not recorded before it", what, iri)
		return false
	case rec.class != want:
		c.addAt(at, ProblemReference, "its %s %s is a %s, not a %s", what, iri, short(rec.class), short(want))
		return false
	}
	return true
}

// principalRef checks the principal edge p of n.
func (c *checker) principalRef(n *rawNode, p quad.IRI, what string, mandatory bool) {
	v, ok := c.value(n, p, what, mandatory)
	if !ok {
		return
	}
	if _, err := codec.ParseNamed(codec.PrefPrincipal, "principal", v); err != nil {
		c.add(ProblemReference, c.id, n.IRI, "its %s: %v", what, err)
		return
	}
	c.target(n, p, v, codec.MQLPrincipal, what)
}

func (c *checker) principalList(n *rawNode, p quad.IRI, what string) {
	for _, v := range n.All(p) {
		c.target(n, p, v, codec.MQLPrincipal, what)
	}
}

func (c *checker) checkPrincipal(n *rawNode) {
	name, err := codec.ParseNamed(codec.PrefPrincipal, "principal", n.IRI)
	if err != nil {
		c.add(ProblemRecord, c.id, n.IRI, "%v", err)
	}
	if s, ok := c.str(n, codec.MQLName, "name", true); ok && err == nil && s != name {
		c.add(ProblemRecord, c.id, n.IRI, "its name %q differs from its IRI's %q", s, name)
	}
	if t, ok := c.str(n, codec.MQLPrincipalType, "type", true); ok {
		switch record.PrincipalType(t) {
		case record.User, record.Agent, record.Tool:
		default:
			c.add(ProblemRecord, c.id, n.IRI, "unknown principal type %q", t)
		}
	}
}

func (c *checker) checkGrant(n *rawNode) {
	c.named(n, codec.PrefGrant, "grant")
	c.principalRef(n, codec.MQLGrantee, "grantee", true)
	c.principalRef(n, codec.ProvWasAttributedTo, "granter", true)
	if r, ok := c.str(n, codec.MQLRight, "right", true); ok {
		switch record.Right(r) {
		case record.RightAssert, record.RightRevoke, record.RightConfirm, record.RightGrant:
		default:
			c.add(ProblemRecord, c.id, n.IRI, "unknown right %q", r)
		}
	}
	c.str(n, codec.MQLScope, "scope", true)
}

// version returns a claim's or artifact's mql:version, 0 (and a problem) when it is missing or
// not a positive integer.
func (c *checker) versionOf(n *rawNode) int {
	v, ok := c.one(n, codec.MQLVersion, "version")
	if !ok {
		return 0
	}
	if i, isInt := v.(quad.Int); isInt && i >= 1 && int64(i) <= 1<<31 {
		return int(i)
	}
	c.add(ProblemRecord, c.id, n.IRI, "its version %s is not a positive xsd:integer", showVal(v))
	return 0
}

// checkClaim checks a claim record and returns its id as its own fields give it.
func (c *checker) checkClaim(n *rawNode) (record.ClaimID, bool) {
	id, err := codec.ParseClaimIRI(n.IRI)
	if err != nil {
		c.add(ProblemRecord, c.id, n.IRI, "%v", err)
	}
	subj, okS := c.str(n, codec.MQLSubject, "subject", true)
	pred, okP := c.str(n, codec.MQLPredicate, "predicate", true)
	ver := c.versionOf(n)
	if err == nil {
		if okS && subj != id.Subject {
			c.add(ProblemRecord, c.id, n.IRI, "its subject %q differs from its IRI's %q", subj, id.Subject)
		}
		if okP && pred != id.Predicate {
			c.add(ProblemRecord, c.id, n.IRI, "its predicate %q differs from its IRI's %q", pred, id.Predicate)
		}
		if ver != 0 && ver != id.Version {
			c.add(ProblemRecord, c.id, n.IRI, "its version %d differs from its IRI's %d", ver, id.Version)
		}
	}
	if v, ok := c.one(n, codec.MQLValue, "value"); ok {
		switch x := v.(type) {
		case quad.String, quad.Bool:
		case quad.Float:
			if !codec.Finite(float64(x)) {
				c.add(ProblemRecord, c.id, n.IRI, "its value %s is not a finite number", showVal(v))
			}
		case quad.TypedString:
			if _, isTime := codec.AsTime(x); !isTime && x.Type != codec.MQLRefType {
				c.add(ProblemRecord, c.id, n.IRI, "its value %s has an unsupported datatype", showVal(v))
			}
		default:
			c.add(ProblemRecord, c.id, n.IRI, "its value %s has an unsupported type", showVal(v))
		}
	}
	c.principalRef(n, codec.ProvWasAttributedTo, "asserter", true)
	if k, ok := c.str(n, codec.MQLKind, "kind", true); ok {
		switch record.Kind(k) {
		case record.Confirmed, record.Observed, record.Inferred:
		default:
			c.add(ProblemRecord, c.id, n.IRI, "unknown kind %q", k)
		}
	}
	c.confidence(n)
	for _, v := range n.All(codec.ProvHadPrimarySource) {
		c.target(n, codec.ProvHadPrimarySource, v, codec.MQLSource, "source")
	}
	c.principalList(n, codec.MQLSeenBy, "seen-by principal")
	key := record.Key{Subject: subj, Predicate: pred}
	if err == nil {
		key = id.Key
	}
	for _, p := range []struct {
		pred quad.IRI
		what string
	}{{codec.ProvWasRevisionOf, "superseded claim"}, {codec.MQLContests, "contested claim"}, {codec.MQLCorroborates, "corroborated claim"}} {
		v, ok := c.opt(n, p.pred, p.what)
		if !ok {
			continue
		}
		if !c.target(n, p.pred, v, codec.MQLClaim, p.what) {
			continue
		}
		if tid, err := codec.ParseClaimIRI(v); err == nil && (tid.Key != key || tid.Version >= ver && ver > 0) {
			c.add(ProblemReference, c.id, n.IRI, "its %s %s is not an earlier version of %s", p.what, v, key)
		}
	}
	if v, ok := c.opt(n, codec.MQLGrantPred, "grant"); ok {
		// "owner" is the standing the store owner asserts by in a strict store; it names no grant.
		if g, err := codec.ParseNamed(codec.PrefGrant, "grant", v); err != nil || g != "owner" {
			c.target(n, codec.MQLGrantPred, v, codec.MQLGrant, "grant")
		}
	}
	if v, ok := c.opt(n, codec.MQLVector, "vector"); ok {
		if _, err := codec.ParseVector(v); err != nil {
			c.add(ProblemRecord, c.id, n.IRI, "its vector: %v", err)
		}
	}
	if err != nil || !okS || !okP || ver == 0 {
		return record.ClaimID{}, false
	}
	return record.ClaimID{Key: key, Version: ver}, true
}

// checkRevocation checks a revocation and returns the claim it revokes.
func (c *checker) checkRevocation(n *rawNode) (quad.IRI, bool) {
	c.named(n, codec.PrefRevocation, "revocation")
	if len(n.All(codec.ProvWasAssociatedWith)) == 0 {
		c.add(ProblemRevocation, c.id, n.IRI, "names no principal (prov:wasAssociatedWith)")
	} else {
		c.principalRef(n, codec.ProvWasAssociatedWith, "principal", true)
	}
	if len(n.All(codec.MQLStanding)) == 0 {
		c.add(ProblemRevocation, c.id, n.IRI, "names no standing (mql:standing)")
	} else {
		c.str(n, codec.MQLStanding, "standing", true)
	}
	var target quad.IRI
	if len(n.All(codec.ProvInvalidated)) == 0 {
		c.add(ProblemRevocation, c.id, n.IRI, "names no claim (prov:invalidated)")
	} else if v, ok := c.one(n, codec.ProvInvalidated, "revoked claim"); ok && c.target(n, codec.ProvInvalidated, v, codec.MQLClaim, "revoked claim") {
		target = v.(quad.IRI)
	}
	if v, ok := c.opt(n, codec.MQLReplacedBy, "replacement"); ok {
		if c.target(n, codec.MQLReplacedBy, v, codec.MQLClaim, "replacement") && target != "" {
			a, err1 := codec.ParseClaimIRI(target)
			b, err2 := codec.ParseClaimIRI(v)
			if err1 == nil && err2 == nil && (a.Key != b.Key || a.Version == b.Version) {
				c.add(ProblemReference, c.id, n.IRI, "its replacement %s is not another version of %s", v, a.Key)
			}
		}
	}
	return target, target != ""
}

// checkInvalidations checks the quads a revocation writes on the claim it revokes: each names a
// revocation of that claim in the same transaction, and each revocation has them.
func (c *checker) checkInvalidations(revs map[quad.IRI]quad.IRI, order []quad.IRI) {
	for _, n := range c.cur.Order {
		iri := n.IRI
		for _, v := range n.All(codec.ProvWasInvalidatedBy) {
			rv, ok := v.(quad.IRI)
			if ok && revs[rv] == iri {
				continue
			}
			if rec, found := c.st.lookup(rv); ok && found && rec.class == codec.MQLRevocation {
				c.add(ProblemReference, c.id, iri, "its invalidation by %s is recorded in tx %d, the revocation in tx %d", rv, c.id, rec.tx)
				continue
			}
			c.add(ProblemReference, c.id, iri, "prov:wasInvalidatedBy %s, which is not a revocation of it", showVal(v))
		}
	}
	for _, rv := range order {
		target := revs[rv]
		found := false
		if n := c.cur.Node(target); n != nil {
			found = slices.Contains(n.All(codec.ProvWasInvalidatedBy), quad.Value(rv))
		}
		if !found {
			c.add(ProblemRevocation, c.id, target, "revoked by %s but does not record it (prov:wasInvalidatedBy)", rv)
		}
	}
}

func (c *checker) checkConfirmation(n *rawNode) {
	c.named(n, codec.PrefConfirmation, "confirmation")
	c.oneTarget(n, codec.MQLConfirms, codec.MQLClaim, "confirmed claim")
	c.principalRef(n, codec.ProvWasAssociatedWith, "principal", true)
	c.str(n, codec.MQLStanding, "standing", true)
}

func (c *checker) checkArtifact(n *rawNode) (record.ArtifactID, bool) {
	id, err := codec.ParseArtifactIRI(n.IRI)
	if err != nil {
		c.add(ProblemRecord, c.id, n.IRI, "%v", err)
	}
	name, okN := c.str(n, codec.MQLName, "name", true)
	ver := c.versionOf(n)
	if err == nil && okN && name != id.Name {
		c.add(ProblemRecord, c.id, n.IRI, "its name %q differs from its IRI's %q", name, id.Name)
	}
	if err == nil && ver != 0 && ver != id.Version {
		c.add(ProblemRecord, c.id, n.IRI, "its version %d differs from its IRI's %d", ver, id.Version)
	}
	c.principalRef(n, codec.ProvWasAttributedTo, "principal", true)
	c.confidence(n)
	for _, v := range n.All(codec.ProvWasDerivedFrom) {
		if c.claimOrArtifact(n, codec.ProvWasDerivedFrom, v, "input", "input", "derived from") && v == n.IRI {
			c.add(ProblemReference, c.id, n.IRI, "is derived from itself")
		}
	}
	c.principalList(n, codec.MQLSeenBy, "seen-by principal")
	if v, ok := c.opt(n, codec.ProvWasRevisionOf, "previous version"); ok {
		c.target(n, codec.ProvWasRevisionOf, v, codec.MQLArtifact, "previous version")
	}
	if err != nil || ver == 0 {
		return record.ArtifactID{}, false
	}
	return record.ArtifactID{Name: id.Name, Version: ver}, true
}

// claimOrArtifact checks v, a p of n, as a target: a claim (what n calls it: claim) or an
// artifact (artifact), of neither a problem that n verb it. It reports whether v is an artifact
// the store holds.
func (c *checker) claimOrArtifact(n *rawNode, p quad.IRI, v quad.Value, claim, artifact, verb string) bool {
	iri, _ := v.(quad.IRI)
	switch {
	case strings.HasPrefix(string(iri), codec.PrefClaim):
		c.target(n, p, v, codec.MQLClaim, claim)
	case strings.HasPrefix(string(iri), codec.PrefArtifact):
		return c.target(n, p, v, codec.MQLArtifact, artifact)
	default:
		c.add(ProblemReference, c.id, n.IRI, "%s %s, which is neither a claim nor an artifact", verb, showVal(v))
	}
	return false
}

// oneTarget checks that n has one p, a record of class want (its what).
func (c *checker) oneTarget(n *rawNode, p, want quad.IRI, what string) {
	if v, ok := c.one(n, p, what); ok {
		c.target(n, p, v, want, what)
	}
}

// confidence checks that n has one confidence, a number in [0,1].
func (c *checker) confidence(n *rawNode) {
	if v, ok := c.one(n, codec.MQLConfidence, "confidence"); ok {
		if f, isF := v.(quad.Float); !isF || !codec.ValidConfidence(float64(f)) {
			c.add(ProblemRecord, c.id, n.IRI, "its confidence %s is not a number in [0,1]", showVal(v))
		}
	}
}

// named checks that a record's IRI is its class's prefix followed by a well-formed name.
func (c *checker) named(n *rawNode, prefix, what string) {
	if _, err := codec.ParseNamed(prefix, what, n.IRI); err != nil {
		c.add(ProblemRecord, c.id, n.IRI, "%v", err)
	}
}

func (c *checker) checkReview(n *rawNode) {
	c.named(n, codec.PrefReview, "review")
	c.oneTarget(n, codec.ProvUsed, codec.MQLArtifact, "reviewed artifact")
	c.principalRef(n, codec.ProvWasAssociatedWith, "principal", true)
}

func (c *checker) checkRetrieval(n *rawNode) {
	c.named(n, codec.PrefRetrieval, "retrieval")
	c.str(n, codec.MQLRun, "run", true)
	c.principalRef(n, codec.ProvWasAssociatedWith, "reading principal", true)
	if v, ok := c.one(n, codec.MQLReadAtTx, "transaction read at"); ok {
		if at, isInt := v.(quad.Int); !isInt || at < 1 || record.TxID(at) >= c.id {
			c.add(ProblemRecord, c.id, n.IRI, "it read at %s, which is not a transaction before it", showVal(v))
		}
	}
	for _, v := range n.All(codec.ProvUsed) {
		c.claimOrArtifact(n, codec.ProvUsed, v, "served claim", "served artifact", "served")
	}
}

func (c *checker) checkOutcome(n *rawNode) {
	c.named(n, codec.PrefOutcome, "outcome")
	c.str(n, codec.MQLRun, "run", true)
	if r, ok := c.str(n, codec.MQLResult, "result", true); ok {
		switch record.OutcomeResult(r) {
		case record.Succeeded, record.Failed, record.Declined:
		default:
			c.add(ProblemRecord, c.id, n.IRI, "its result %q is not succeeded, failed or declined", r)
		}
	}
	c.principalRef(n, codec.ProvWasAttributedTo, "principal", true)
}

func (c *checker) checkToken(n *rawNode) {
	c.named(n, codec.PrefToken, "token")
	c.principalRef(n, codec.MQLHolder, "holder", true)
	if h, ok := c.str(n, codec.MQLSecretHash, "secret hash", true); ok && !codec.ValidHash(h) {
		c.add(ProblemRecord, c.id, n.IRI, "its secret hash %q is not a SHA-256 in hex", h)
	}
	c.principalRef(n, codec.ProvWasAttributedTo, "issuer", true)
}

func (c *checker) checkTokenRevocation(n *rawNode) {
	c.named(n, codec.PrefTokenRevoke, "token revocation")
	c.oneTarget(n, codec.ProvInvalidated, codec.MQLToken, "revoked token")
	c.principalRef(n, codec.ProvWasAssociatedWith, "principal", true)
}

func (c *checker) checkDecay(n *rawNode) {
	c.str(n, codec.MQLPredicate, "predicate", true)
	if v, ok := c.one(n, codec.MQLHalfLife, "half-life"); ok {
		ts, isTS := v.(quad.TypedString)
		d, okD := time.Duration(0), false
		if isTS && ts.Type == codec.XSDDuration {
			d, okD = codec.ParseDuration(string(ts.Value))
		}
		if !okD || d <= 0 {
			c.add(ProblemRecord, c.id, n.IRI, "its half-life %s is not a positive xsd:duration", showVal(v))
		}
	}
	c.principalRef(n, codec.ProvWasAttributedTo, "principal", true)
}
