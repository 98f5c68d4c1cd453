package graphstore

// Integrity checking at the quad level. Check reads the quads themselves, not the index, so it
// also works on a store that Open refuses, and it reports every problem it finds rather than the
// first. It checks, in this order:
//
//  1. every quad lies in a transaction graph <urn:mql:tx:N>, and the ids run 1..head without gaps;
//  2. every transaction node records its time and principal;
//  3. every record (claim, revocation, artifact, …) has its mandatory fields, once, well typed:
//     a claim its subject, predicate, version, value, asserter, kind and confidence;
//  4. every reference resolves to a record of the right class recorded no later than the
//     record that refers to it (principals, sources, claims, artifacts, grants);
//  5. the versions of each key and artifact are unique and run 1..n without gaps, in
//     transaction order;
//  6. every revocation names a principal, a standing and a claim, and no claim is revoked twice;
//  7. every transaction is exactly the canonical encoding of what it records (what Open needs);
//  8. replayed in order, at the head, each key has at most one live claim per audience.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/cayleygraph/quad"
)

// Kinds of problem a check reports.
const (
	ProblemLabel      = "label"       // a quad outside every transaction graph
	ProblemTxIDs      = "tx-ids"      // transaction ids are not 1..head without gaps
	ProblemTx         = "transaction" // a transaction node without its time or principal
	ProblemRecord     = "record"      // a record with a missing, repeated or malformed field
	ProblemReference  = "reference"   // a reference that does not resolve
	ProblemVersion    = "version"     // versions of a key or artifact repeated or with gaps
	ProblemRevocation = "revocation"  // a revocation without principal, standing or claim; a claim revoked twice
	ProblemEncoding   = "encoding"    // a transaction that is not in canonical form
	ProblemLive       = "live"        // more than one live claim of a key and audience
	ProblemStanding   = "standing"    // a recorded standing that does not hold (checked by package mql)
	ProblemSnapshot   = "snapshot"    // the snapshot (a cache of decoded transactions) differs from the quads
)

// MaxProblems bounds the problems a Report lists; the rest are only counted.
const MaxProblems = 10_000

// Problem is one thing wrong with a store.
type Problem struct {
	Kind string `json:"kind"`
	Tx   TxID   `json:"tx,omitempty"`   // the transaction concerned, 0 if none
	Node string `json:"node,omitempty"` // the IRI of the record concerned, if any
	Msg  string `json:"message"`
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Tx > 0 {
		fmt.Fprintf(&b, "tx %d: ", p.Tx)
	}
	if p.Node != "" {
		b.WriteString(p.Node)
		b.WriteString(": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Report is what a check found.
type Report struct {
	Quads        int       `json:"quads"`
	Transactions int       `json:"transactions"` // distinct transaction graphs
	Head         TxID      `json:"head"`         // the highest transaction id
	Principals   int       `json:"principals"`
	Claims       int       `json:"claims"`
	Keys         int       `json:"keys"`
	Revocations  int       `json:"revocations"`
	Artifacts    int       `json:"artifacts"` // artifact versions
	Problems     []Problem `json:"problems"`
	// Omitted counts the problems found beyond MaxProblems.
	Omitted int `json:"omitted,omitempty"`
	// Index is the store replayed into an index, when every transaction decodes and chains;
	// nil otherwise. Package mql uses it to check standings.
	Index *Index `json:"-"`
}

// OK reports whether the check found nothing wrong.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// Add records a problem (up to MaxProblems; beyond, it is counted).
func (r *Report) Add(p Problem) {
	if len(r.Problems) >= MaxProblems {
		r.Omitted++
		return
	}
	r.Problems = append(r.Problems, p)
}

// Check reads every quad of the open store and checks it. It holds the writer lock while it
// reads, so it sees whole transactions only.
func (s *Store) Check(ctx context.Context) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	unlock, err := s.be.lockWriters(ctx)
	if err != nil {
		return nil, err
	}
	if r := storageReport(ctx, s.be); r != nil {
		unlock()
		return r, nil
	}
	quads, err := s.be.all(ctx)
	unlock()
	if err != nil {
		return unreadable(s.be, err)
	}
	r := CheckQuads(quads, s.clock())
	s.imu.Lock()
	defer s.imu.Unlock()
	if checkSnapshot(ctx, s.be, r, "reopen the store to rebuild its index from the quads") {
		s.snapBroken = true // the index may hold what the snapshot said: never write it back
	}
	return r, nil
}

// checkSnapshot compares every transaction of the backend's snapshot with the quads as r
// decoded them. A snapshot that differs is removed (it is only a cache; the quads are the
// truth) and reported with what to do next. It reports whether it found a difference.
func checkSnapshot(ctx context.Context, be backend, r *Report, then string) bool {
	sn, ok := be.(snapshotter)
	if !ok {
		return false
	}
	var chunks [][]byte
	if err := sn.eachSnapshotChunk(ctx, func(c []byte) error {
		chunks = append(chunks, slices.Clone(c))
		return nil
	}); err != nil || len(chunks) == 0 {
		return false
	}
	bad := func(tx TxID, msg string) bool {
		if err := sn.resetSnapshot(ctx); err != nil {
			msg += fmt.Sprintf("; removing it failed (%v)", err)
		} else {
			msg += "; it was removed: " + then
		}
		r.Add(Problem{Kind: ProblemSnapshot, Tx: tx, Msg: msg})
		return true
	}
	if r.Index == nil || !r.OK() {
		// Open trusts a snapshot whose ends match the transaction nodes; with quads that have
		// problems it must scan them instead, and judge them as it did before there was one.
		return bad(0, "the quads have the problems above, so the snapshot cannot stand in for them")
	}
	next := TxID(1)
	for _, c := range chunks {
		txs, err := decodeChunk(c)
		if errors.Is(err, errStaleSnapshot) {
			return false // Open ignores and rewrites it
		}
		if err != nil {
			return bad(next, fmt.Sprintf("the snapshot cannot be read: %v", err))
		}
		for _, tx := range txs {
			if tx.ID != next {
				return bad(next, fmt.Sprintf("the snapshot holds tx %d where tx %d should be", tx.ID, next))
			}
			stored := r.Index.Tx(tx.ID)
			if stored == nil {
				return bad(tx.ID, "the snapshot holds a transaction that the quads do not")
			}
			a, errA := encodeTx(tx)
			b, _ := encodeTx(stored)
			if errA != nil || !sameQuadSet(a, b) {
				return bad(tx.ID, "the snapshot's copy of this transaction differs from its quads")
			}
			next++
		}
	}
	return false
}

// CheckDSN checks the store named by dsn (see Open) without opening it as a Store: it reads the
// quads straight from Cayley, so it also works on a store that Open refuses. It never creates a
// store, initialises a file or a schema, or writes a genesis: a bbolt file that does not exist
// is an error wrapping both ErrNoStore and fs.ErrNotExist, an empty file or a database without
// Cayley's tables wraps ErrNoStore, and "memory:", which has nothing to check, wraps
// fs.ErrNotExist. A bbolt file held by another
// process fails with ErrInUse after opts.OpenTimeout.
func CheckDSN(ctx context.Context, dsn string, opts Options) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = time.Second
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if dsn == "memory:" || dsn == "memory" {
		return nil, fmt.Errorf("graphstore: check %s: %w: a new in-memory store holds nothing to check", dsn, fs.ErrNotExist)
	}
	if path, ok := bboltPath(dsn); ok {
		st, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoStore(err, "%s does not exist", path)
		}
		if err != nil {
			return nil, fmt.Errorf("graphstore: check: %w", err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("graphstore: check %s: %w: it is a directory, not a bbolt file", path, ErrBadDSN)
		}
		if st.Size() == 0 {
			return nil, errNoStore(nil, "%s is an empty file, not an mql store (its creation was interrupted, or it was truncated to nothing)", path)
		}
	}
	// A check never creates nor initialises anything: not a file, not a schema.
	opts.MustExist = true
	be, err := openBackend(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	defer be.close()
	if r := storageReport(ctx, be); r != nil {
		return r, nil
	}
	unlock, err := be.lockWriters(ctx)
	if err != nil {
		return nil, err
	}
	quads, err := be.all(ctx)
	unlock()
	if err != nil {
		return unreadable(be, err)
	}
	r := CheckQuads(quads, opts.Clock())
	checkSnapshot(ctx, be, r, "the next open rebuilds it from the quads")
	return r, nil
}

// bboltPath returns the file a bbolt DSN names.
func bboltPath(dsn string) (string, bool) {
	switch {
	case strings.HasPrefix(dsn, "bbolt:"):
		p := strings.TrimPrefix(dsn, "bbolt:")
		return p, p != ""
	case dsn != "" && !strings.Contains(dsn, "://") && !hasScheme(dsn) && dsn != "memory:" && dsn != "memory":
		return dsn, true
	}
	return "", false
}

// ---- the checker ---------------------------------------------------------------------------

type rawVal struct {
	v  quad.Value
	tx TxID
}

type rawNode struct {
	iri     quad.IRI
	class   quad.IRI // the mql class, "" if none
	classTx TxID     // the transaction that recorded it
	props   map[quad.IRI][]rawVal
}

// own returns the values of p written by the transaction that recorded n.
func (n *rawNode) own(p quad.IRI) []quad.Value {
	var out []quad.Value
	for _, v := range n.props[p] {
		if v.tx == n.classTx {
			out = append(out, v.v)
		}
	}
	return out
}

type checker struct {
	r     *Report
	nodes map[quad.IRI]*rawNode
	order []quad.IRI // nodes in first-seen order, for a stable report
	owner string
}

func (c *checker) add(kind string, tx TxID, node quad.IRI, format string, args ...any) {
	c.r.Add(Problem{Kind: kind, Tx: tx, Node: string(node), Msg: fmt.Sprintf(format, args...)})
}

// CheckQuads checks a store's quads (see the file comment) and returns what it found. now is
// the time at which liveness is judged (valid-until expiry).
func CheckQuads(quads []quad.Quad, now time.Time) *Report {
	r := &Report{Quads: len(quads), Problems: []Problem{}}
	c := &checker{r: r, nodes: map[quad.IRI]*rawNode{}}
	groups := map[TxID][]quad.Quad{}

	// 1. Labels, and the raw node table.
	for i := range quads {
		q := canonQuad(quads[i])
		id, ok := parseTxIRI(q.Label)
		if !ok {
			c.add(ProblemLabel, 0, "", "quad %s is not in a transaction graph <%sN>", formatQuadShort(q), prefTx)
			continue
		}
		groups[id] = append(groups[id], q)
		s, ok1 := q.Subject.(quad.IRI)
		p, ok2 := q.Predicate.(quad.IRI)
		if !ok1 || !ok2 || q.Object == nil {
			c.add(ProblemRecord, id, "", "quad %s: subject and predicate must be IRIs and the object present", formatQuadShort(q))
			continue
		}
		n := c.nodes[s]
		if n == nil {
			n = &rawNode{iri: s, props: map[quad.IRI][]rawVal{}}
			c.nodes[s] = n
			c.order = append(c.order, s)
		}
		n.props[p] = append(n.props[p], rawVal{q.Object, id})
	}
	ids := make([]TxID, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	r.Transactions = len(ids)
	if len(ids) == 0 {
		c.add(ProblemTxIDs, 0, "", "the store holds no transactions: it is not an mql memory (no genesis)")
		return r
	}
	r.Head = ids[len(ids)-1]
	next := TxID(1)
	for _, id := range ids {
		if id > next {
			if id == next+1 {
				c.add(ProblemTxIDs, next, "", "transaction %d is missing (ids must run 1..%d without gaps)", next, r.Head)
			} else {
				c.add(ProblemTxIDs, next, "", "transactions %d to %d are missing (ids must run 1..%d without gaps)", next, id-1, r.Head)
			}
		}
		next = id + 1
	}

	// Classes: each node's mql class and the transaction that recorded it.
	for _, iri := range c.order {
		n := c.nodes[iri]
		for _, t := range n.props[rdfType] {
			cl, ok := t.v.(quad.IRI)
			if !ok || !strings.HasPrefix(string(cl), nsMQL) {
				continue
			}
			if n.class == "" {
				n.class, n.classTx = cl, t.tx
				continue
			}
			if cl == n.class && t.tx == n.classTx {
				continue
			}
			if cl == n.class {
				c.add(ProblemRecord, t.tx, iri, "recorded twice, by tx %d and tx %d", n.classTx, t.tx)
			} else {
				c.add(ProblemRecord, t.tx, iri, "has two classes, %s (tx %d) and %s (tx %d)", n.class, n.classTx, cl, t.tx)
			}
		}
	}

	// 2. Transaction nodes.
	for _, id := range ids {
		n := c.nodes[txIRI(id)]
		if n == nil || n.class != mqlTransaction {
			c.add(ProblemTx, id, txIRI(id), "the transaction has quads but no transaction node (rdf:type mql:Transaction)")
			continue
		}
		if n.classTx != id {
			c.add(ProblemTx, id, n.iri, "the transaction node is typed in tx %d's graph", n.classTx)
		}
		switch ts := n.own(provEndedAtTime); {
		case len(ts) == 0:
			c.add(ProblemTx, id, n.iri, "the transaction records no time (prov:endedAtTime)")
		case len(ts) > 1:
			c.add(ProblemTx, id, n.iri, "the transaction records %d times (prov:endedAtTime), want one", len(ts))
		default:
			if _, ok := asTime(ts[0]); !ok {
				c.add(ProblemTx, id, n.iri, "its time %s is not an xsd:dateTime", showVal(ts[0]))
			}
		}
		if len(n.own(provWasAssociatedWith)) == 0 {
			c.add(ProblemTx, id, n.iri, "the transaction records no principal (prov:wasAssociatedWith)")
		} else {
			c.principalRef(n, provWasAssociatedWith, "principal", true)
		}
		if id == 1 {
			if s := c.nodes[iriStore]; s == nil || s.class != mqlStore || s.classTx != 1 {
				c.add(ProblemRecord, 1, iriStore, "the genesis (tx 1) records no store meta (owner, strict flag)")
			}
		}
	}

	// 3, 4, 6. Records.
	keyVersions := map[Key]map[int][]*rawNode{}
	artVersions := map[string]map[int][]*rawNode{}
	revoked := map[quad.IRI][]*rawNode{}
	for _, iri := range c.order {
		n := c.nodes[iri]
		switch n.class {
		case "", mqlTransaction:
		case mqlStore:
			r.checkStore(c, n)
		case mqlPrincipal:
			r.Principals++
			c.checkPrincipal(n)
		case mqlGrant:
			c.checkGrant(n)
		case mqlSource:
		case mqlClaim:
			r.Claims++
			if id, ok := c.checkClaim(n); ok {
				if keyVersions[id.Key] == nil {
					keyVersions[id.Key] = map[int][]*rawNode{}
				}
				keyVersions[id.Key][id.Version] = append(keyVersions[id.Key][id.Version], n)
			}
		case mqlRevocation:
			r.Revocations++
			if target, ok := c.checkRevocation(n); ok {
				revoked[target] = append(revoked[target], n)
			}
		case mqlConfirmation:
			c.checkConfirmation(n)
		case mqlArtifact:
			r.Artifacts++
			if id, ok := c.checkArtifact(n); ok {
				if artVersions[id.Name] == nil {
					artVersions[id.Name] = map[int][]*rawNode{}
				}
				artVersions[id.Name][id.Version] = append(artVersions[id.Name][id.Version], n)
			}
		case mqlReview:
			c.checkReview(n)
		case mqlDecay:
			c.checkDecay(n)
		case mqlToken:
			c.checkToken(n)
		case mqlTokenRevoke:
			c.checkTokenRevocation(n)
		default:
			c.add(ProblemRecord, n.classTx, iri, "unknown record class %s", n.class)
		}
	}
	r.Keys = len(keyVersions)
	for target, revs := range revoked {
		if len(revs) > 1 {
			names := make([]string, len(revs))
			for i, rv := range revs {
				names[i] = fmt.Sprintf("%s (tx %d)", rv.iri, rv.classTx)
			}
			c.add(ProblemRevocation, revs[1].classTx, target, "revoked %d times: %s", len(revs), strings.Join(names, ", "))
		}
	}
	c.checkInvalidations(revoked)

	// 5. Versions.
	keys := make([]Key, 0, len(keyVersions))
	for k := range keyVersions {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, k := range keys {
		c.checkVersions("key "+k.String(), keyVersions[k])
	}
	names := make([]string, 0, len(artVersions))
	for name := range artVersions {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		c.checkVersions("artifact "+name, artVersions[name])
	}

	// 7. Canonical encoding, and 8. the replay. A transaction whose records already have a
	// problem is not reported again here.
	dirty := map[TxID]bool{}
	for _, p := range r.Problems {
		dirty[p.Tx] = true
	}
	var txs []*Tx
	decoded := true
	for _, id := range ids {
		tx, err := decodeTx(id, groups[id])
		if err != nil {
			decoded = false
			if !dirty[id] {
				msg := err.Error()
				msg = strings.TrimPrefix(msg, fmt.Sprintf("tx %d: ", id))
				c.add(ProblemEncoding, id, "", "%s", msg)
			}
			continue
		}
		txs = append(txs, tx)
	}
	if decoded && len(ids) == int(r.Head) {
		if ix := c.replay(txs); ix != nil {
			r.Index = ix
			c.checkLive(ix, now)
		}
	}
	return r
}

func (r *Report) checkStore(c *checker, n *rawNode) {
	if n.iri != iriStore {
		c.add(ProblemRecord, n.classTx, n.iri, "store meta must be on %s", iriStore)
	}
	if n.classTx != 1 {
		c.add(ProblemRecord, n.classTx, n.iri, "store meta recorded outside the genesis (tx 1)")
	}
	if name, ok := c.principalRef(n, mqlOwner, "an owner", true); ok {
		c.owner = name
	}
	if v, ok := c.one(n, mqlStrict, "a strict flag"); ok {
		if _, isBool := v.(quad.Bool); !isBool {
			c.add(ProblemRecord, n.classTx, n.iri, "strict flag %s is not an xsd:boolean", showVal(v))
		}
	}
}

// one returns the single value of p written by n's own transaction, reporting a missing or
// repeated one. what says what the field is, for the message.
func (c *checker) one(n *rawNode, p quad.IRI, what string) (quad.Value, bool) {
	vs := n.own(p)
	switch len(vs) {
	case 0:
		c.add(ProblemRecord, n.classTx, n.iri, "has no %s (%s)", what, short(p))
		return nil, false
	case 1:
		return vs[0], true
	}
	c.add(ProblemRecord, n.classTx, n.iri, "has %d values of %s (%s), want one", len(vs), what, short(p))
	return nil, false
}

// opt returns the value of p if there is one, reporting a repeated one.
func (c *checker) opt(n *rawNode, p quad.IRI, what string) (quad.Value, bool) {
	vs := n.own(p)
	switch len(vs) {
	case 0:
		return nil, false
	case 1:
		return vs[0], true
	}
	c.add(ProblemRecord, n.classTx, n.iri, "has %d values of %s (%s), want at most one", len(vs), what, short(p))
	return nil, false
}

func (c *checker) str(n *rawNode, p quad.IRI, what string, mandatory bool) (string, bool) {
	var v quad.Value
	var ok bool
	if mandatory {
		v, ok = c.one(n, p, what)
	} else {
		v, ok = c.opt(n, p, what)
	}
	if !ok {
		return "", false
	}
	s, isStr := v.(quad.String)
	if !isStr {
		c.add(ProblemRecord, n.classTx, n.iri, "its %s %s is not a plain string", what, showVal(v))
		return "", false
	}
	if mandatory && s == "" {
		c.add(ProblemRecord, n.classTx, n.iri, "its %s is empty", what)
		return "", false
	}
	return string(s), true
}

// target resolves an IRI a record refers to: it must be a node of class want, recorded no
// later than tx. It returns the node.
func (c *checker) target(from *rawNode, v quad.Value, want quad.IRI, what string) (*rawNode, bool) {
	iri, ok := v.(quad.IRI)
	if !ok {
		c.add(ProblemReference, from.classTx, from.iri, "its %s %s is not an IRI", what, showVal(v))
		return nil, false
	}
	t := c.nodes[iri]
	if t == nil || t.class == "" {
		c.add(ProblemReference, from.classTx, from.iri, "its %s %s was never recorded", what, iri)
		return nil, false
	}
	if t.class != want {
		c.add(ProblemReference, from.classTx, from.iri, "its %s %s is a %s, not a %s", what, iri, short(t.class), short(want))
		return nil, false
	}
	if t.classTx > from.classTx {
		c.add(ProblemReference, from.classTx, from.iri, "its %s %s is recorded later, in tx %d", what, iri, t.classTx)
		return nil, false
	}
	return t, true
}

// principalRef checks the principal edge p of n and returns the principal's name.
func (c *checker) principalRef(n *rawNode, p quad.IRI, what string, mandatory bool) (string, bool) {
	var v quad.Value
	var ok bool
	if mandatory {
		v, ok = c.one(n, p, what)
	} else {
		v, ok = c.opt(n, p, what)
	}
	if !ok {
		return "", false
	}
	name, err := parseNamed(prefPrincipal, "principal", v)
	if err != nil {
		c.add(ProblemReference, n.classTx, n.iri, "its %s: %v", what, err)
		return "", false
	}
	if _, ok := c.target(n, v, mqlPrincipal, what); !ok {
		return "", false
	}
	return name, true
}

func (c *checker) principalList(n *rawNode, p quad.IRI, what string) {
	for _, v := range n.own(p) {
		c.target(n, v, mqlPrincipal, what)
	}
}

func (c *checker) checkPrincipal(n *rawNode) {
	name, err := parseNamed(prefPrincipal, "principal", n.iri)
	if err != nil {
		c.add(ProblemRecord, n.classTx, n.iri, "%v", err)
	}
	if s, ok := c.str(n, mqlName, "name", true); ok && err == nil && s != name {
		c.add(ProblemRecord, n.classTx, n.iri, "its name %q differs from its IRI's %q", s, name)
	}
	if t, ok := c.str(n, mqlPrincipalType, "type", true); ok {
		switch PrincipalType(t) {
		case User, Agent, Tool:
		default:
			c.add(ProblemRecord, n.classTx, n.iri, "unknown principal type %q", t)
		}
	}
}

func (c *checker) checkGrant(n *rawNode) {
	c.principalRef(n, mqlGrantee, "grantee", true)
	c.principalRef(n, provWasAttributedTo, "granter", true)
	if r, ok := c.str(n, mqlRight, "right", true); ok {
		switch Right(r) {
		case RightAssert, RightRevoke, RightConfirm, RightGrant:
		default:
			c.add(ProblemRecord, n.classTx, n.iri, "unknown right %q", r)
		}
	}
	c.str(n, mqlScope, "scope", true)
}

// version returns a claim's or artifact's mql:version, 0 (and a problem) when it is missing or
// not a positive integer.
func (c *checker) version(n *rawNode) int {
	v, ok := c.one(n, mqlVersion, "version")
	if !ok {
		return 0
	}
	if i, isInt := v.(quad.Int); isInt && i >= 1 && int64(i) <= 1<<31 {
		return int(i)
	}
	c.add(ProblemRecord, n.classTx, n.iri, "its version %s is not a positive xsd:integer", showVal(v))
	return 0
}

// checkClaim checks a claim record and returns its id as its own fields give it.
func (c *checker) checkClaim(n *rawNode) (ClaimID, bool) {
	id, err := parseClaimIRI(n.iri)
	if err != nil {
		c.add(ProblemRecord, n.classTx, n.iri, "%v", err)
	}
	subj, okS := c.str(n, mqlSubject, "subject", true)
	pred, okP := c.str(n, mqlPredicate, "predicate", true)
	ver := c.version(n)
	if err == nil {
		if okS && subj != id.Subject {
			c.add(ProblemRecord, n.classTx, n.iri, "its subject %q differs from its IRI's %q", subj, id.Subject)
		}
		if okP && pred != id.Predicate {
			c.add(ProblemRecord, n.classTx, n.iri, "its predicate %q differs from its IRI's %q", pred, id.Predicate)
		}
		if ver != 0 && ver != id.Version {
			c.add(ProblemRecord, n.classTx, n.iri, "its version %d differs from its IRI's %d", ver, id.Version)
		}
	}
	if v, ok := c.one(n, mqlValue, "value"); ok {
		switch x := v.(type) {
		case quad.String, quad.Bool:
		case quad.Float:
			if !finite(float64(x)) {
				c.add(ProblemRecord, n.classTx, n.iri, "its value %s is not a finite number", showVal(v))
			}
		case quad.TypedString:
			if _, isTime := asTime(x); !isTime && x.Type != mqlRefType {
				c.add(ProblemRecord, n.classTx, n.iri, "its value %s has an unsupported datatype", showVal(v))
			}
		default:
			c.add(ProblemRecord, n.classTx, n.iri, "its value %s has an unsupported type", showVal(v))
		}
	}
	c.principalRef(n, provWasAttributedTo, "asserter", true)
	if k, ok := c.str(n, mqlKind, "kind", true); ok {
		switch Kind(k) {
		case Confirmed, Observed, Inferred:
		default:
			c.add(ProblemRecord, n.classTx, n.iri, "unknown kind %q", k)
		}
	}
	if v, ok := c.one(n, mqlConfidence, "confidence"); ok {
		if f, isF := v.(quad.Float); !isF || !validConfidence(float64(f)) {
			c.add(ProblemRecord, n.classTx, n.iri, "its confidence %s is not a number in [0,1]", showVal(v))
		}
	}
	for _, v := range n.own(provHadPrimarySource) {
		c.target(n, v, mqlSource, "source")
	}
	c.principalList(n, mqlSeenBy, "seen-by principal")
	key := Key{Subject: subj, Predicate: pred}
	if err == nil {
		key = id.Key
	}
	for _, p := range []struct {
		pred quad.IRI
		what string
	}{{provWasRevisionOf, "superseded claim"}, {mqlContests, "contested claim"}, {mqlCorroborates, "corroborated claim"}} {
		v, ok := c.opt(n, p.pred, p.what)
		if !ok {
			continue
		}
		t, ok := c.target(n, v, mqlClaim, p.what)
		if !ok {
			continue
		}
		if tid, err := parseClaimIRI(t.iri); err == nil && (tid.Key != key || tid.Version >= ver && ver > 0) {
			c.add(ProblemReference, n.classTx, n.iri, "its %s %s is not an earlier version of %s", p.what, t.iri, key)
		}
	}
	if v, ok := c.opt(n, mqlGrantPred, "grant"); ok {
		// "owner" is the standing the store owner asserts by in a strict store; it names no grant.
		if g, err := parseNamed(prefGrant, "grant", v); err != nil || g != "owner" {
			c.target(n, v, mqlGrant, "grant")
		}
	}
	if err != nil || !okS || !okP || ver == 0 {
		return ClaimID{}, false
	}
	return ClaimID{Key: key, Version: ver}, true
}

// checkRevocation checks a revocation and returns the claim it revokes.
func (c *checker) checkRevocation(n *rawNode) (quad.IRI, bool) {
	if len(n.own(provWasAssociatedWith)) == 0 {
		c.add(ProblemRevocation, n.classTx, n.iri, "names no principal (prov:wasAssociatedWith)")
	} else {
		c.principalRef(n, provWasAssociatedWith, "principal", true)
	}
	if len(n.own(mqlStanding)) == 0 {
		c.add(ProblemRevocation, n.classTx, n.iri, "names no standing (mql:standing)")
	} else {
		c.str(n, mqlStanding, "standing", true)
	}
	var target *rawNode
	if len(n.own(provInvalidated)) == 0 {
		c.add(ProblemRevocation, n.classTx, n.iri, "names no claim (prov:invalidated)")
	} else if v, ok := c.one(n, provInvalidated, "revoked claim"); ok {
		target, _ = c.target(n, v, mqlClaim, "revoked claim")
	}
	if v, ok := c.opt(n, mqlReplacedBy, "replacement"); ok {
		if rep, ok := c.target(n, v, mqlClaim, "replacement"); ok && target != nil {
			a, err1 := parseClaimIRI(target.iri)
			b, err2 := parseClaimIRI(rep.iri)
			if err1 == nil && err2 == nil && (a.Key != b.Key || a.Version == b.Version) {
				c.add(ProblemReference, n.classTx, n.iri, "its replacement %s is not another version of %s", rep.iri, a.Key)
			}
		}
	}
	if target == nil {
		return "", false
	}
	return target.iri, true
}

// checkInvalidations checks the quads a revocation writes on the claim it revokes: each names a
// revocation of that claim, in that revocation's transaction.
func (c *checker) checkInvalidations(revoked map[quad.IRI][]*rawNode) {
	for _, iri := range c.order {
		n := c.nodes[iri]
		for _, v := range n.props[provWasInvalidatedBy] {
			rv, ok := v.v.(quad.IRI)
			rn := c.nodes[rv]
			if !ok || rn == nil || rn.class != mqlRevocation || !slices.Contains(revoked[iri], rn) {
				c.add(ProblemReference, v.tx, iri, "prov:wasInvalidatedBy %s, which is not a revocation of it", showVal(v.v))
				continue
			}
			if v.tx != rn.classTx {
				c.add(ProblemReference, v.tx, iri, "its invalidation by %s is recorded in tx %d, the revocation in tx %d", rv, v.tx, rn.classTx)
			}
		}
		for _, rn := range revoked[iri] {
			found := false
			for _, v := range n.props[provWasInvalidatedBy] {
				if v.v == rn.iri {
					found = true
				}
			}
			if !found {
				c.add(ProblemRevocation, rn.classTx, iri, "revoked by %s but does not record it (prov:wasInvalidatedBy)", rn.iri)
			}
		}
	}
}

func (c *checker) checkConfirmation(n *rawNode) {
	if v, ok := c.one(n, mqlConfirms, "confirmed claim"); ok {
		c.target(n, v, mqlClaim, "confirmed claim")
	}
	c.principalRef(n, provWasAssociatedWith, "principal", true)
	c.str(n, mqlStanding, "standing", true)
}

func (c *checker) checkArtifact(n *rawNode) (ArtifactID, bool) {
	id, err := parseArtifactIRI(n.iri)
	if err != nil {
		c.add(ProblemRecord, n.classTx, n.iri, "%v", err)
	}
	name, okN := c.str(n, mqlName, "name", true)
	ver := c.version(n)
	if err == nil && okN && name != id.Name {
		c.add(ProblemRecord, n.classTx, n.iri, "its name %q differs from its IRI's %q", name, id.Name)
	}
	if err == nil && ver != 0 && ver != id.Version {
		c.add(ProblemRecord, n.classTx, n.iri, "its version %d differs from its IRI's %d", ver, id.Version)
	}
	c.principalRef(n, provWasAttributedTo, "principal", true)
	if v, ok := c.one(n, mqlConfidence, "confidence"); ok {
		if f, isF := v.(quad.Float); !isF || !validConfidence(float64(f)) {
			c.add(ProblemRecord, n.classTx, n.iri, "its confidence %s is not a number in [0,1]", showVal(v))
		}
	}
	for _, v := range n.own(provWasDerivedFrom) {
		iri, _ := v.(quad.IRI)
		switch {
		case strings.HasPrefix(string(iri), prefClaim):
			c.target(n, v, mqlClaim, "input")
		case strings.HasPrefix(string(iri), prefArtifact):
			if t, ok := c.target(n, v, mqlArtifact, "input"); ok && t == n {
				c.add(ProblemReference, n.classTx, n.iri, "is derived from itself")
			}
		default:
			c.add(ProblemReference, n.classTx, n.iri, "derived from %s, which is neither a claim nor an artifact", showVal(v))
		}
	}
	c.principalList(n, mqlSeenBy, "seen-by principal")
	if v, ok := c.opt(n, provWasRevisionOf, "previous version"); ok {
		c.target(n, v, mqlArtifact, "previous version")
	}
	if err != nil || ver == 0 {
		return ArtifactID{}, false
	}
	return ArtifactID{Name: id.Name, Version: ver}, true
}

func (c *checker) checkToken(n *rawNode) {
	c.principalRef(n, mqlHolder, "holder", true)
	if h, ok := c.str(n, mqlSecretHash, "secret hash", true); ok && !validHash(h) {
		c.add(ProblemRecord, n.classTx, n.iri, "its secret hash %q is not a SHA-256 in hex", h)
	}
	c.principalRef(n, provWasAttributedTo, "issuer", true)
}

func (c *checker) checkTokenRevocation(n *rawNode) {
	if v, ok := c.one(n, provInvalidated, "revoked token"); ok {
		c.target(n, v, mqlToken, "revoked token")
	}
	c.principalRef(n, provWasAssociatedWith, "principal", true)
}

func (c *checker) checkReview(n *rawNode) {
	if v, ok := c.one(n, provUsed, "reviewed artifact"); ok {
		c.target(n, v, mqlArtifact, "reviewed artifact")
	}
	c.principalRef(n, provWasAssociatedWith, "principal", true)
}

func (c *checker) checkDecay(n *rawNode) {
	c.str(n, mqlPredicate, "predicate", true)
	if v, ok := c.one(n, mqlHalfLife, "half-life"); ok {
		ts, isTS := v.(quad.TypedString)
		d, okD := time.Duration(0), false
		if isTS && ts.Type == xsdDuration {
			d, okD = parseDuration(string(ts.Value))
		}
		if !okD || d <= 0 {
			c.add(ProblemRecord, n.classTx, n.iri, "its half-life %s is not a positive xsd:duration", showVal(v))
		}
	}
	c.principalRef(n, provWasAttributedTo, "principal", true)
}

// checkVersions checks that versions run 1..n, each once, in transaction order.
func (c *checker) checkVersions(what string, vs map[int][]*rawNode) {
	top := 0
	for v := range vs {
		top = max(top, v)
	}
	var lastTx TxID
	for v := 1; v <= top; v++ {
		ns := vs[v]
		switch {
		case len(ns) == 0:
			c.add(ProblemVersion, 0, "", "%s: version %d is missing (versions must run 1..%d without gaps)", what, v, top)
			continue
		case len(ns) > 1:
			list := make([]string, len(ns))
			for i, n := range ns {
				list[i] = fmt.Sprintf("%s (tx %d)", n.iri, n.classTx)
			}
			c.add(ProblemVersion, ns[1].classTx, "", "%s: version %d is recorded %d times: %s", what, v, len(ns), strings.Join(list, ", "))
		}
		if tx := ns[0].classTx; tx < lastTx {
			c.add(ProblemVersion, tx, ns[0].iri, "%s: version %d is recorded in tx %d, before version %d (tx %d)", what, v, tx, v-1, lastTx)
		} else {
			lastTx = tx
		}
	}
}

// CheckTxs checks decoded transactions (ReadNQuads gives them) as CheckQuads checks a store's
// quads after decoding: ids run 1..n, every reference resolves, versions follow on, and at the
// end each key has at most one live claim per audience (judged at now). The report's Index is
// set when they replay. Import uses it, through package mql, to refuse a file that would make an
// unsound store.
func CheckTxs(txs []*Tx, now time.Time) *Report {
	r := &Report{Problems: []Problem{}, Transactions: len(txs)}
	c := &checker{r: r}
	for i, tx := range txs {
		if tx == nil {
			c.add(ProblemTx, TxID(i+1), "", "transaction %d is missing", i+1)
			return r
		}
		r.Head = max(r.Head, tx.ID)
		r.Principals += len(tx.Principals)
		r.Claims += len(tx.Claims)
		r.Revocations += len(tx.Revocations)
		r.Artifacts += len(tx.Artifacts)
	}
	if len(txs) == 0 {
		c.add(ProblemTxIDs, 0, "", "there are no transactions: no genesis")
		return r
	}
	if ix := c.replay(txs); ix != nil {
		r.Index = ix
		r.Keys = len(ix.keyOrder)
		c.checkLive(ix, now)
	}
	return r
}

// replay chains and indexes the decoded transactions, reporting where that fails.
func (c *checker) replay(txs []*Tx) *Index {
	ix := NewIndex()
	ch := indexChain(ix)
	for _, tx := range txs {
		if err := ch.check(tx); err != nil {
			c.add(ProblemReference, tx.ID, "", "%s", strings.TrimPrefix(err.Error(), fmt.Sprintf("tx %d: ", tx.ID)))
			return nil
		}
		if err := addToIndex(ix, tx); err != nil {
			c.add(ProblemReference, tx.ID, "", "%v", err)
			return nil
		}
		ch.add(tx)
	}
	return ix
}

// checkLive checks that each key has at most one live claim per audience at the head.
func (c *checker) checkLive(ix *Index, now time.Time) {
	v := ix.View(0, now, "")
	for _, k := range ix.keyOrder {
		live := map[string][]string{}
		var auds []string
		for _, e := range ix.keys[k].Versions {
			if st, _ := v.State(e); st == Live {
				if _, ok := live[e.audience]; !ok {
					auds = append(auds, e.audience)
				}
				live[e.audience] = append(live[e.audience], "@"+strconv.Itoa(e.ID.Version))
			}
		}
		for _, a := range auds {
			if l := live[a]; len(l) > 1 {
				who := "everyone"
				if a != "" {
					who = "seen by " + a
				}
				c.add(ProblemLive, 0, "", "%s has %d live claims for %s: %s (at most one may be live)", k, len(l), who, strings.Join(l, ", "))
			}
		}
	}
}

// short writes an IRI with the prefixes of docs/VOCABULARY.md.
func short(iri quad.IRI) string {
	s := string(iri)
	for _, p := range []struct{ ns, pre string }{{nsRDF, "rdf:"}, {nsPROV, "prov:"}, {nsXSD, "xsd:"}, {nsMQL, "mql:"}} {
		if strings.HasPrefix(s, p.ns) {
			return p.pre + s[len(p.ns):]
		}
	}
	return s
}

func formatQuadShort(q quad.Quad) string {
	s := formatQuad(q)
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

// showVal renders a value for a problem message, briefly and readably.
func showVal(v quad.Value) string {
	var s string
	switch x := v.(type) {
	case nil:
		return "nothing"
	case quad.IRI:
		s = "<" + string(x) + ">"
	case quad.String:
		s = strconv.Quote(string(x))
	case quad.Float:
		s = strconv.FormatFloat(float64(x), 'g', -1, 64)
	case quad.Int:
		s = strconv.FormatInt(int64(x), 10)
	case quad.Bool:
		s = strconv.FormatBool(bool(x))
	case quad.TypedString:
		s = strconv.Quote(string(x.Value)) + "^^" + short(x.Type)
	default:
		s = v.String()
	}
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
