package graphstore

// Integrity checking. Check reads a store's records, not its index, so it also works on a
// store whose index is damaged, and it reports every problem it finds rather than the first. It
// reads one snapshot, one transaction at a time in id order: it decodes the transaction's
// records, writes them as the quads an export holds, and checks those against what came before
// (checker.go, which an import of an export runs too); and it applies each transaction to a
// scratch store, so that at the end it can compare every entry the store holds with the ones
// its records give. It checks:
//
//  1. the ids run 1..head without gaps, and every transaction's records decode;
//  2. every transaction records its time, never before the previous transaction's, and its
//     principal;
//  3. every record (claim, revocation, artifact, …) has its mandatory fields, well typed: a
//     claim its subject, predicate, version, value, asserter, kind and confidence;
//  4. every reference resolves to a record of the right class recorded no later than the
//     record that refers to it (principals — seen-by ones too —, sources, claims, artifacts,
//     grants);
//  5. the versions of each key and artifact are unique and run 1..n without gaps, in
//     transaction order;
//  6. every revocation names a principal, a standing and a claim, and no claim is revoked twice;
//  7. replayed in order, at the head, each key has at most one live claim per audience;
//  8. every entry of the store (records and index) is the one its records give;
//  9. whatever the caller's rules check (package mql: authors and standings).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
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
	ProblemIndex      = "index"       // an entry of the store that its records do not give
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

// Check reads every transaction of the open store and checks it (see the file comment), on a
// snapshot: writers go on meanwhile, and what they commit is not checked.
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
	if r := storageReport(ctx, s.be); r != nil {
		return r, nil
	}
	r, err := checkKV(ctx, s.be, opts, nil)
	if errors.Is(err, ErrNoStore) {
		return nil, err
	}
	if se := (*scratchError)(nil); errors.As(err, &se) {
		return nil, storageErr("checking the store", se)
	}
	if err != nil {
		return unreadable(s.be, err)
	}
	recordVerdict(s.be, r)
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

// CheckDSN checks the store named by dsn (see Open) without opening it as a Store, so it also
// works on a store that Open refuses. It never creates a store, initialises a file or a
// schema, or writes a genesis: a bbolt file that does not exist is an error wrapping both
// ErrNoStore and fs.ErrNotExist, an empty file or a database without mql's tables wraps
// ErrNoStore, and "memory:", which has nothing to check, wraps fs.ErrNotExist. A bbolt file
// held by another process fails with ErrInUse after opts.OpenTimeout.
func CheckDSN(ctx context.Context, dsn string, opts Options, copts CheckOptions) (*Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	standalone(&opts, &copts)
	if dsn == "memory:" || dsn == "memory" {
		return nil, fmt.Errorf("check %s: %w: a new in-memory store holds nothing to check", dsn, fs.ErrNotExist)
	}
	if path, ok := bboltPath(dsn); ok {
		st, err := os.Stat(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errNoStore(err, "%s does not exist", path)
		}
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("check %s: %w: it is a directory, not a bbolt file", path, ErrBadDSN)
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
	r, err := checkKV(ctx, be, copts, nil)
	if errors.Is(err, ErrNoStore) {
		return nil, err
	}
	if errors.Is(err, index.ErrEarlierFormat) {
		return nil, earlierFormatErr(be.name(), err)
	}
	if se := (*scratchError)(nil); errors.As(err, &se) {
		return nil, storageErr("checking the store", se)
	}
	if err != nil {
		return unreadable(be, err)
	}
	recordVerdict(be, r)
	return r, nil
}

// maxIndexProblems bounds the differences a check lists per bucket.
const maxIndexProblems = 20

// checkKV checks the records and the index of be's kv store (see the file comment). each, if
// set, is called with each transaction once it was checked, and makes checkKV check a store of
// an earlier format too (ReadEarlier); an error it returns ends the check, as an *eachError.
func checkKV(ctx context.Context, be backend, opts CheckOptions, each func(*record.Tx) error) (*Report, error) {
	var r *Report
	err := be.guard(func() error {
		rt, err := be.kv().Read(ctx)
		if err != nil {
			return err
		}
		defer rt.End()
		open := func(r kv.Reader) (*index.Index, error) { return index.Open(r, nil) }
		if each != nil {
			open = index.OpenEarlier
		}
		ix, err := open(rt)
		if errors.Is(err, index.ErrNotStore) && !strings.Contains(err.Error(), "format") || err == nil && ix.Head() == 0 {
			// Its creation was interrupted before the genesis: Open finishes it.
			return errNoStore(nil, "%s holds no mql memory yet (no genesis transaction): opening it with mql makes it a store", be.name())
		}
		if err != nil {
			return err
		}
		sc, err := newScratch()
		if err != nil {
			return &scratchError{err}
		}
		defer sc.close()
		if sc.label, err = index.Format(rt); err != nil {
			return err
		}
		if sc.filing, err = index.FilingOf(rt); err != nil {
			return err
		}
		c := newChecker(opts, sc)
		c.deferDangling = true
		var rel *releaser
		if b, ok := be.(*bboltBackend); ok {
			// The store's pages are dropped under rt, which this check holds until rel stops:
			// a new read transaction of the store could wait behind a writer that waits for rt.
			size := int64(0)
			if s, ok := rt.(interface{ Size() int64 }); ok {
				size = s.Size()
			}
			rel = releasingHeld(b.db, size, sc.db)
		} else {
			rel = releasing(sc.db)
		}
		defer rel.stop()
		c.tick, sc.tick = rel.check, rel.check
		ix.Every(rel.check) // the store's records, read a transaction at a time
		replayed := true
		for id := record.TxID(1); id <= ix.Head(); id++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			var tx *record.Tx
			if ferr := index.Guard(func() error { tx = ix.Tx(id); return nil }); ferr != nil || tx == nil {
				if ferr == nil {
					ferr = errors.New("it is missing")
				}
				c.add(ProblemRecord, id, "", "the transaction's records cannot be read: %v", ferr)
				c.sound, replayed = false, false
				continue
			}
			quads, err := codec.EncodeTx(tx)
			if err != nil {
				c.add(ProblemEncoding, id, "", "the transaction's records are not a valid transaction: %v", err)
				c.sound, replayed = false, false
				continue
			}
			c.addTx(id, quads) // which applies it to the scratch store, if it decodes and chains
			if c.err != nil {
				return &scratchError{c.err}
			}
			if err := c.applyErr; err != nil && replayed {
				c.add(ProblemIndex, id, "", "the transaction cannot be indexed again: %v", err)
				replayed = false
			}
			if each != nil {
				if err := each(tx); err != nil {
					return &eachError{err}
				}
			}
			ix.Release() // what the check decoded is in the scratch store now
			rel.check()
		}
		r = c.finish()
		if c.err != nil {
			return &scratchError{c.err}
		}
		if replayed && c.sound {
			if err := sc.finish(ctx); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return &scratchError{err}
			}
			compareIndex(rt, sc, r, rel.check)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// compareIndex adds to r every entry that the store holds and a replay of its records does not
// give, or gives otherwise.
// tick is called between the pages of entries it compares.
func compareIndex(rt kv.Reader, sc *scratch, r *Report, tick func()) {
	st, err := sc.read()
	if err != nil {
		r.Add(Problem{Kind: ProblemIndex, Msg: fmt.Sprintf("the replay cannot be read: %v", err)})
		return
	}
	defer st.End()
	for b, def := range index.Schema.Buckets {
		bucket := kv.Bucket(b)
		found := 0
		report := func(format string, args ...any) {
			found++
			if found <= maxIndexProblems {
				r.Add(Problem{Kind: ProblemIndex, Msg: def.Name + ": " + fmt.Sprintf(format, args...)})
			}
		}
		diffBuckets(rt, st, bucket, report, tick)
		if found > maxIndexProblems {
			r.Add(Problem{Kind: ProblemIndex, Msg: fmt.Sprintf("%s: and %d more entries differ", def.Name, found-maxIndexProblems)})
		}
	}
	if r.OK() {
		return
	}
	for _, p := range r.Problems {
		if p.Kind == ProblemIndex {
			r.Add(Problem{Kind: ProblemIndex, Msg: rebuildAdvice})
			return
		}
	}
}

// rebuildAdvice is the problem a check adds after the entries that differ.
const rebuildAdvice = "the store's entries are not what its records give: copy it with `mql export` and `mql import`, which rebuilds them"

// diffBuckets reports the keys of bucket b that a and want do not hold alike.
func diffBuckets(a, want kv.Reader, b kv.Bucket, report func(string, ...any), tick func()) {
	type kvp struct{ k, v []byte }
	// Both scans go in key order; walk them side by side, a page at a time.
	var have []kvp
	next := func(r kv.Reader, from []byte, out *[]kvp) {
		tick()
		*out = (*out)[:0]
		r.Scan(b, nil, kv.ScanOptions{From: from}, func(k, v []byte) (bool, error) {
			if from != nil && string(k) == string(from) {
				return true, nil
			}
			*out = append(*out, kvp{bytes.Clone(k), bytes.Clone(v)})
			return len(*out) < 512, nil
		})
	}
	var wantPage []kvp
	var fromA, fromW []byte
	next(a, nil, &have)
	next(want, nil, &wantPage)
	i, j := 0, 0
	for {
		if i == len(have) && len(have) > 0 {
			fromA = have[len(have)-1].k
			next(a, fromA, &have)
			i = 0
		}
		if j == len(wantPage) && len(wantPage) > 0 {
			fromW = wantPage[len(wantPage)-1].k
			next(want, fromW, &wantPage)
			j = 0
		}
		switch {
		case i == len(have) && j == len(wantPage):
			return
		case j == len(wantPage) || i < len(have) && bytes.Compare(have[i].k, wantPage[j].k) < 0:
			report("the store holds %s, which its records do not give", showKey(have[i].k))
			i++
		case i == len(have) || bytes.Compare(have[i].k, wantPage[j].k) > 0:
			report("the store lacks %s, which its records give", showKey(wantPage[j].k))
			j++
		default:
			if !index.SameEntry(b, have[i].k, have[i].v, wantPage[j].v) {
				report("%s is not what its records give", showKey(have[i].k))
			}
			i++
			j++
		}
	}
}

// showKey renders a stored key for a message: its printable bytes, the others escaped.
func showKey(k []byte) string {
	s := strconv.QuoteToASCII(string(k))
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}

// scratchError is a failure of a check's scratch store, not of the store checked.
type scratchError struct{ err error }

func (e *scratchError) Error() string { return "the check's scratch store: " + e.err.Error() }
func (e *scratchError) Unwrap() error { return e.err }

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
