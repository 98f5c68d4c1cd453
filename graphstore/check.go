package graphstore

// Integrity checking. Check reads a store's quads, not the index, so it also works on a store
// that Open refuses, and it reports every problem it finds rather than the first. It reads the
// store in passes that each hold one transaction at a time: first it counts the quads of every
// graph (without decoding them), then it reads each transaction through its transaction node,
// in id order, and checks it against what came before (checker.go), and, only when some quads
// lie outside every transaction or are not reachable from theirs, it reads every quad once more
// to name them. It checks:
//
//  1. every quad lies in a transaction graph <urn:mql:tx:N>, and the ids run 1..head without gaps;
//  2. every transaction node records its time, never before the previous transaction's, and its
//     principal;
//  3. every record (claim, revocation, artifact, …) has its mandatory fields, once, well typed:
//     a claim its subject, predicate, version, value, asserter, kind and confidence;
//  4. every reference resolves to a record of the right class recorded no later than the
//     record that refers to it (principals — seen-by ones too —, sources, claims, artifacts,
//     grants);
//  5. the versions of each key and artifact are unique and run 1..n without gaps, in
//     transaction order;
//  6. every revocation names a principal, a standing and a claim, and no claim is revoked twice;
//  7. every transaction is exactly the canonical encoding of what it records (what Open needs),
//     and every quad of it is reachable from its transaction node;
//  8. replayed in order, at the head, each key has at most one live claim per audience;
//  9. whatever the caller's rules check (package mql: authors and standings).

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/nquads"
)

// Kinds of problem a check reports.
const (
	ProblemLabel      = "label"       // a quad outside every transaction graph
	ProblemTxIDs      = "tx-ids"      // transaction ids are not 1..head without gaps
	ProblemTx         = "transaction" // a transaction node without its time or principal, or whose time goes backwards
	ProblemRecord     = "record"      // a record with a missing, repeated or malformed field
	ProblemReference  = "reference"   // a reference that does not resolve
	ProblemVersion    = "version"     // versions of a key or artifact repeated or with gaps
	ProblemRevocation = "revocation"  // a revocation without principal, standing or claim; a claim revoked twice
	ProblemEncoding   = "encoding"    // a transaction that is not in canonical form
	ProblemAuthor     = "author"      // a record whose author is not its transaction's principal (checked by package mql)
	ProblemLive       = "live"        // more than one live claim of a key and audience
	ProblemStanding   = "standing"    // a recorded standing that does not hold (checked by package mql)
	ProblemSnapshot   = "snapshot"    // the snapshot (a cache of decoded transactions) differs from the quads
)

// MaxProblems bounds the problems a Report lists; the rest are only counted.
const MaxProblems = 10_000

// Problem is one thing wrong with a store.
type Problem struct {
	Kind string      `json:"kind"`
	Tx   record.TxID `json:"tx,omitempty"`   // the transaction concerned, 0 if none
	Node string      `json:"node,omitempty"` // the IRI of the record concerned, if any
	Msg  string      `json:"message"`

	quad *quad.Quad // the quad concerned, when the problem is about one (an import names its line)
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
	Quads        int         `json:"quads"`
	Transactions int         `json:"transactions"` // distinct transaction graphs
	Head         record.TxID `json:"head"`         // the highest transaction id
	Principals   int         `json:"principals"`
	Claims       int         `json:"claims"`
	Keys         int         `json:"keys"`
	Revocations  int         `json:"revocations"`
	Artifacts    int         `json:"artifacts"` // artifact versions
	Problems     []Problem   `json:"problems"`
	// Omitted counts the problems found beyond MaxProblems.
	Omitted int `json:"omitted,omitempty"`
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

// Check reads every transaction of the open store and checks it. It holds the writer lock
// while it reads, so it sees whole transactions only, and writers wait.
func (s *Store) Check(ctx context.Context, opts CheckOptions) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := s.enter(); err != nil {
		return nil, err
	}
	defer s.leave()
	if opts.Now.IsZero() {
		opts.Now = s.clock()
	}
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
	r, sums, err := checkBackend(ctx, s.be, opts)
	if err != nil {
		unlock()
		return unreadable(s.be, err)
	}
	defer unlock()
	s.imu.Lock()
	defer s.imu.Unlock()
	if checkSnapshot(ctx, s.be, r, sums, "reopen the store to rebuild its index from the quads") {
		s.snapBroken = true // the index may hold what the snapshot said: never write it back
	}
	recordVerdict(s.be, r) // after the snapshot's removal: it refuses every write from now on
	return r, nil
}

// standalone fills in what a check or an import that opens its own store takes by default: a
// second to wait for a held file, and the options' clock (else the time now) as the time at
// which liveness is judged.
func standalone(opts *Options, copts *CheckOptions) {
	if opts.OpenTimeout <= 0 {
		opts.OpenTimeout = time.Second
	}
	if copts.Now.IsZero() {
		if opts.Clock != nil {
			copts.Now = opts.Clock()
		} else {
			copts.Now = time.Now()
		}
	}
}

// CheckDSN checks the store named by dsn (see Open) without opening it as a Store: it reads the
// quads straight from Cayley, so it also works on a store that Open refuses. It never creates a
// store, initialises a file or a schema, or writes a genesis: a bbolt file that does not exist
// is an error wrapping both ErrNoStore and fs.ErrNotExist, an empty file or a database without
// Cayley's tables wraps ErrNoStore, and "memory:", which has nothing to check, wraps
// fs.ErrNotExist. A bbolt file held by another
// process fails with ErrInUse after opts.OpenTimeout.
func CheckDSN(ctx context.Context, dsn string, opts Options, copts CheckOptions) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	standalone(&opts, &copts)
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
	r, sums, err := checkBackend(ctx, be, copts)
	unlock()
	if err != nil {
		return unreadable(be, err)
	}
	checkSnapshot(ctx, be, r, sums, "the next open rebuilds it from the quads")
	recordVerdict(be, r) // after the snapshot's removal: it refuses every write from now on
	return r, nil
}

// quadSums is what checkSnapshot compares a snapshot with: the hash of each transaction's
// quads (0: it did not decode), and whether the quads themselves are sound — as Open judges
// them, so without what the caller's rules (standings) found.
type quadSums struct {
	hashes []uint64
	sound  bool
	// logDamaged: the store's log lost or changed values or quads (ProblemLog), so reads miss
	// them, and a snapshot written before the damage may be the only whole copy left.
	logDamaged bool
}

// checkLog adds to r what is wrong with the backend's log of values and quads (a bbolt file's;
// see logProblems).
func checkLog(ctx context.Context, be backend, r *Report, sums *quadSums) error {
	b, ok := be.(*bboltBackend)
	if !ok {
		return nil
	}
	problems, err := b.logProblems(ctx)
	if err != nil || len(problems) == 0 {
		return err
	}
	for _, p := range problems {
		r.Add(Problem{Kind: ProblemLog, Msg: p})
	}
	r.Add(Problem{Kind: ProblemLog, Msg: "reads skip what the log no longer holds under its id, so the quads this check read are not all the quads written; " +
		"mql refuses writes to this file from now on: restore the store from an export or a backup"})
	sums.sound, sums.logDamaged = false, true
	return nil
}

// checkBackend checks every transaction of be, one at a time (see the file comment), and the
// log its quads are kept in. The caller holds the writer lock.
func checkBackend(ctx context.Context, be backend, opts CheckOptions) (*Report, quadSums, error) {
	c := newChecker(opts)
	c.deferDangling = true
	_, c.keepHashes = be.(snapshotter)
	counts, err := be.countGraphs(ctx)
	if err != nil {
		return nil, quadSums{}, storageErr("reading the store", err)
	}
	ids := make([]record.TxID, 0, len(counts.txs))
	for id := range counts.txs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var head record.TxID
	if len(ids) > 0 {
		head = ids[len(ids)-1]
	}
	// A scan of a bbolt file maps every page it reads: release them as it goes.
	release := func() {}
	if m, ok := be.(interface{ dropMapped() }); ok {
		release = m.dropMapped
	}
	release()
	read := 0
	// Transactions whose quads are not all reachable from their transaction node, with the
	// subjects that are (to name the others).
	unreached := map[record.TxID]map[quad.Value]bool{}
	next := record.TxID(1)
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, quadSums{}, err
		}
		if id > next {
			c.missing(next, id-1, head)
		}
		next = id + 1
		quads, err := be.txQuads(ctx, id)
		if err != nil {
			return nil, quadSums{}, storageErr(fmt.Sprintf("reading tx %d", id), err)
		}
		if len(quads) < counts.txs[id] {
			reach := map[quad.Value]bool{codec.TxIRI(id): true}
			for _, q := range quads {
				if q.Subject == codec.TxIRI(id) && q.Predicate == codec.MQLWrote {
					reach[q.Object] = true
				}
			}
			unreached[id] = reach
			c.sound = false
		}
		c.addTx(id, quads)
		c.r.Quads += counts.txs[id] - len(quads)
		if read += len(quads); read >= 1<<12 {
			release()
			read = 0
		}
	}
	release()
	c.r.Quads += counts.other
	r := c.finish()
	sums := quadSums{hashes: c.hashes, sound: c.added == c.byRules && counts.other == 0 && len(unreached) == 0}
	if counts.other > 0 || len(unreached) > 0 {
		// Read every quad once more to name the ones the transactions do not hold.
		err := be.eachQuad(ctx, func(q quad.Quad) error {
			q = codec.CanonQuad(q)
			id, ok := codec.ParseTxIRI(q.Label)
			switch {
			case !ok:
				r.Add(Problem{Kind: ProblemLabel, Msg: fmt.Sprintf("quad %s is not in a transaction graph <%sN>", formatQuadShort(q), codec.PrefTx)})
			case unreached[id] != nil && !unreached[id][q.Subject]:
				r.Add(Problem{Kind: ProblemEncoding, Tx: id, Msg: fmt.Sprintf("quad %s is not reachable from the transaction node: an mql transaction links every subject it writes with urn:mql:wrote", formatQuadShort(q))})
			}
			return nil
		})
		if err != nil {
			return nil, quadSums{}, storageErr("reading the store", err)
		}
	}
	if err := checkLog(ctx, be, r, &sums); err != nil {
		return nil, quadSums{}, err
	}
	return r, sums, nil
}

// CheckQuads checks a store's quads (see the file comment) and returns what it found: the
// same checks as Check, for quads held in memory. now is the time at which liveness is judged.
func CheckQuads(quads []quad.Quad, opts CheckOptions) *Report {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	c := newChecker(opts)
	c.deferDangling = true
	groups := map[record.TxID][]quad.Quad{}
	var other []quad.Quad
	for _, q := range quads {
		if id, ok := codec.ParseTxIRI(q.Label); ok {
			groups[id] = append(groups[id], q)
		} else {
			other = append(other, q)
		}
	}
	ids := make([]record.TxID, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, q := range other {
		c.add(ProblemLabel, 0, "", "quad %s is not in a transaction graph <%sN>", formatQuadShort(codec.CanonQuad(q)), codec.PrefTx)
	}
	next := record.TxID(1)
	for _, id := range ids {
		if id > next {
			c.missing(next, id-1, ids[len(ids)-1])
		}
		next = id + 1
		c.addTx(id, groups[id])
	}
	c.r.Quads += len(other)
	return c.finish()
}

// checkSnapshot compares every transaction of the backend's snapshot with the quads, as the
// check hashed them. A snapshot that differs is removed (it is only a cache; the quads are the
// truth) and reported with what to do next. It reports whether it found a difference.
func checkSnapshot(ctx context.Context, be backend, r *Report, sums quadSums, then string) bool {
	hashes := sums.hashes
	sn, ok := be.(snapshotter)
	if !ok {
		return false
	}
	var (
		bad    error
		badTx  record.TxID
		stale  bool
		chunks int
		next   = record.TxID(1)
	)
	errStop := errors.New("stop")
	err := sn.eachSnapshotChunk(ctx, func(data []byte) error {
		chunks++
		txs, err := decodeChunk(data)
		if errors.Is(err, errStaleSnapshot) {
			stale = true
			return errStop
		}
		if err != nil {
			bad, badTx = fmt.Errorf("the snapshot cannot be read: %v", err), next
			return errStop
		}
		for _, tx := range txs {
			if tx.ID != next {
				bad, badTx = fmt.Errorf("the snapshot holds tx %d where tx %d should be", tx.ID, next), next
				return errStop
			}
			if int(tx.ID) > len(hashes) || hashes[tx.ID-1] == 0 {
				bad, badTx = errors.New("the snapshot holds a transaction that the quads do not"), tx.ID
				return errStop
			}
			q, err := codec.EncodeTx(tx)
			if err != nil || hashQuads(canonQuads(q)) != hashes[tx.ID-1] {
				bad, badTx = errors.New("the snapshot's copy of this transaction differs from its quads"), tx.ID
				return errStop
			}
			next++
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return false // the snapshot cannot be read now; Open will judge it
	}
	if stale || chunks == 0 {
		return false // Open ignores and rewrites it
	}
	if bad == nil && !sums.sound && !sums.logDamaged {
		// Open trusts a snapshot whose ends match the transaction nodes; with quads that have
		// problems it must scan them instead, and judge them as it did before there was one.
		bad, badTx = errors.New("the quads have the problems above, so the snapshot cannot stand in for them"), 0
	}
	if bad == nil {
		return false
	}
	if badTx > 0 && int(badTx) <= len(hashes) {
		// The check read the transaction through its node and Open reads it in its graph: on a
		// sound store they are the same quads. When they differ, one of the store's indexes is
		// damaged, and the snapshot (which Open wrote from what it read) is not what is wrong.
		if gr, ok := be.(interface {
			graphQuads(context.Context, record.TxID) ([]quad.Quad, error)
		}); ok {
			inGraph, err := gr.graphQuads(ctx, badTx)
			if err == nil && len(inGraph) > 0 && hashQuads(canonQuads(inGraph)) != hashes[badTx-1] {
				r.Add(Problem{Kind: ProblemEncoding, Tx: badTx, Node: string(codec.TxIRI(badTx)),
					Msg: "the quads read through the transaction's node differ from the quads stored in its graph: one of the store's indexes is damaged"})
			}
		}
	}
	msg := bad.Error()
	if sums.logDamaged {
		// The snapshot was written from the quads when they were whole, and its chunks passed
		// their checksums: it is kept, and Open, which loads it, still serves what it holds.
		r.Add(Problem{Kind: ProblemSnapshot, Tx: badTx, Msg: msg + "; it was kept, since the log is damaged (above) and the snapshot may hold what the quads lost"})
		return true
	}
	if err := sn.resetSnapshot(ctx); err != nil {
		msg += fmt.Sprintf("; removing it failed (%v)", err)
	} else {
		msg += "; it was removed: " + then
	}
	r.Add(Problem{Kind: ProblemSnapshot, Tx: badTx, Msg: msg})
	return true
}

func canonQuads(qs []quad.Quad) []quad.Quad {
	out := make([]quad.Quad, len(qs))
	for i, q := range qs {
		out[i] = codec.CanonQuad(q)
	}
	return out
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

// short writes an IRI with the prefixes of docs/VOCABULARY.md.
func short(iri quad.IRI) string {
	s := string(iri)
	for _, p := range []struct{ ns, pre string }{{codec.NSRDF, "rdf:"}, {codec.NSPROV, "prov:"}, {codec.NSXSD, "xsd:"}, {codec.NSMQL, "mql:"}} {
		if strings.HasPrefix(s, p.ns) {
			return p.pre + s[len(p.ns):]
		}
	}
	return s
}

func formatQuadShort(q quad.Quad) string {
	s := nquads.FormatQuad(q)
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
