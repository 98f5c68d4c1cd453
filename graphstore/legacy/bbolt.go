package legacy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/cayley/graph/iterator"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	"github.com/cayleygraph/quad"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/boltfile"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
)

// The buckets of the old mql beside Cayley's: its gob snapshot (see the package comment), and
// the verdict of a check that found the store damaged. The current format's buckets are named
// "mql." and something else (graphstore/kv/boltkv).
var (
	snapshotBucket = []byte("mql.snapshot")
	damageBucket   = []byte("mql.damaged")
)

// releaseEvery is how many quads are read between two releases of the pages of the file's
// memory map read so far (dropMapped).
const releaseEvery = 1 << 12

// readBBolt reads the old-format bbolt file at path (see Read).
func readBBolt(ctx context.Context, path string, opts Options, fn func(*record.Tx) error) (Summary, error) {
	timeout := opts.OpenTimeout
	if timeout <= 0 {
		timeout = time.Second
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Summary{}, &notFound{path + " does not exist"}
	case err != nil:
		return Summary{}, graphstore.StorageFailure(fmt.Errorf("cannot read %s: %w", path, err))
	case fi.IsDir():
		return Summary{}, notOld("%s is a directory, not an mql store", path)
	case !fi.Mode().IsRegular():
		return Summary{}, notOld("%s is not a regular file", path)
	case fi.Size() == 0:
		return Summary{}, notOld("%s is an empty file, not an mql store", path)
	}
	f, err := os.Open(path) // read-only: nothing here can write to the file
	if err != nil {
		return Summary{}, graphstore.StorageFailure(fmt.Errorf("cannot read %s: %w", path, err))
	}
	// bbolt's Close closes f once it is open; until then, this does.
	owned := true
	defer func() {
		if owned {
			f.Close()
		}
	}()
	// A shared lock: the old mql took an exclusive one to open the file, so while it holds it
	// this waits and then fails, and while this holds it no old mql opens the file to write.
	if err := lockShared(f, timeout); err != nil {
		if errors.Is(err, errLockTimeout) {
			return Summary{}, failure(fmt.Sprintf("%s is in use: another process holds it (its lock was not released within %s); close the mql using it and try again", path, timeout), graphstore.ErrInUse)
		}
		return Summary{}, graphstore.StorageFailure(fmt.Errorf("cannot lock %s: %w", path, err))
	}
	st, err := f.Stat()
	if err != nil {
		return Summary{}, graphstore.StorageFailure(fmt.Errorf("cannot read %s: %w", path, err))
	}
	if !boltfile.HasMagic(f, st.Size()) {
		return Summary{}, notOld("%s is not a bbolt file, so not an mql store", path)
	}
	// The file, checked with bounds-checked reads before bbolt maps it.
	l, err := boltfile.Inspect(f, st.Size())
	if err != nil {
		return Summary{}, damaged(path, strings.TrimPrefix(err.Error(), graphstore.ErrDamaged.Error()+": "))
	}
	if problems := append(l.Problems, boltfile.Walk(ctx, f, l)...); len(problems) > 0 {
		if err := ctx.Err(); err != nil {
			return Summary{}, err
		}
		return Summary{}, damaged(path, joinProblems(problems))
	}
	var db *bolt.DB
	err = guarded(func() error {
		var err error
		db, err = bolt.Open(path, 0o600, &bolt.Options{
			ReadOnly: true,
			Timeout:  timeout,
			OpenFile: func(string, int, os.FileMode) (*os.File, error) { return f, nil },
		})
		return err
	})
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return Summary{}, failure(fmt.Sprintf("%s is in use: another process holds it; close the mql using it and try again", path), graphstore.ErrInUse)
	case errors.As(err, new(*enginePanic)):
		return Summary{}, damaged(path, err.Error())
	case err != nil:
		return Summary{}, notOld("%s is not a bbolt file (%v)", path, err)
	}
	owned = false
	b := &boltReader{path: path, db: db}
	defer func() {
		if !b.poisoned {
			db.Close()
		}
	}()
	var sum Summary
	err = b.guard(func() error {
		var err error
		sum, err = b.read(ctx, fn)
		return err
	})
	return sum, unwrapFn(err)
}

// boltReader is an old-format bbolt file, open read-only.
type boltReader struct {
	path     string
	db       *bolt.DB
	poisoned bool // bbolt panicked or faulted: it is not called again, not even to close it
}

// guard runs fn, which calls into bbolt or Cayley, and turns a panic or a memory fault inside
// it into an error (see guarded).
func (b *boltReader) guard(fn func() error) error {
	err := guarded(fn)
	if pe := (*enginePanic)(nil); errors.As(err, &pe) {
		b.poisoned = true
		return damaged(b.path, pe.Error())
	}
	return err
}

func (b *boltReader) release() { dropMapped(b.db) }

// read checks the kind of store and Cayley's log (boltfile.Walk checked the pages), then reads every
// transaction through Cayley and hands it to fn. It runs guarded, on one goroutine.
func (b *boltReader) read(ctx context.Context, fn func(*record.Tx) error) (Summary, error) {
	r := &reader{fn: fn, sum: Summary{Backend: "bbolt"}}
	kind, verdict := "", ""
	err := b.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("log")) != nil && tx.Bucket([]byte("sp")) != nil && tx.Bucket([]byte("ops")) != nil && tx.Bucket(cayleyMetaBucket) != nil {
			kind = "cayley"
		}
		r.sum.Snapshot = tx.Bucket(snapshotBucket) != nil
		if bk := tx.Bucket(damageBucket); bk != nil {
			verdict = fmt.Sprintf("a check on %s found that %s", bk.Get([]byte("at")), bk.Get([]byte("what")))
		}
		return tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
			if kind == "" && strings.HasPrefix(string(name), "mql.") && !bytes.Equal(name, snapshotBucket) && !bytes.Equal(name, damageBucket) {
				kind = "current"
			}
			return nil
		})
	})
	if err != nil {
		return r.sum, damaged(b.path, err.Error())
	}
	switch kind {
	case "current":
		return r.sum, errKV
	case "":
		return r.sum, notOld("%s is a bbolt file but not an mql store of the earlier format (it has no Cayley buckets log, sp, ops and meta)", b.path)
	}
	if verdict != "" {
		// The old mql recorded it in the file and refused writes from then on.
		return r.sum, damaged(b.path, verdict)
	}
	// Cayley's log: what reads would silently skip.
	logProblems, logQuads, err := scanLog(ctx, b.db, b.release)
	if err != nil {
		return r.sum, b.readErr(ctx, "reading Cayley's log", err)
	}
	if len(logProblems) > 0 {
		return r.sum, damaged(b.path, "in Cayley's log of values and quads, which reads skip silently where it is damaged: "+joinProblems(logProblems))
	}
	// The quads, as the old mql read them: Cayley's kv store through hidalgo's bbolt, without
	// the bloom filter (which would read the whole log into memory at open).
	qs, err := ckv.New(hbolt.New(b.db), graph.Options{ckv.OptNoBloom: true})
	switch {
	case errors.Is(err, graph.ErrNotInitialized):
		return r.sum, notOld("%s is a bbolt file but not a Cayley store", b.path)
	case err != nil:
		return r.sum, damaged(b.path, "Cayley cannot open its store in it: "+err.Error())
	}
	// Not qs.Close: it would close b.db, which readBBolt closes.
	if n, err := cayleySize(ctx, qs); err == nil && n != int64(logQuads) {
		return r.sum, damaged(b.path, fmt.Sprintf("Cayley's count of quads says %d, but its log holds %d", n, logQuads))
	} else if err != nil {
		return r.sum, b.readErr(ctx, "reading Cayley's count of quads", err)
	}
	read := 0
	for id := record.TxID(1); ; id++ {
		if err := ctx.Err(); err != nil {
			return r.sum, err
		}
		quads, err := txQuadsOf(ctx, qs, id)
		if err != nil {
			return r.sum, b.readErr(ctx, fmt.Sprintf("reading tx %d", id), err)
		}
		if len(quads) == 0 {
			break // the head was the transaction before
		}
		for i := range quads {
			quads[i] = codec.CanonQuad(quads[i])
		}
		tx, err := codec.DecodeTx(id, quads)
		if err != nil {
			return r.sum, damaged(b.path, fmt.Sprintf("tx %d does not decode: %s", id, strings.TrimPrefix(err.Error(), fmt.Sprintf("tx %d: ", id))))
		}
		if err := r.call(tx, len(quads)); err != nil {
			return r.sum, err
		}
		if read += len(quads); read >= releaseEvery {
			b.release()
			read = 0
		}
	}
	b.release()
	if r.sum.Transactions == 0 {
		return r.sum, damaged(b.path, "it holds no transaction 1 (the genesis); an mql store always has one")
	}
	if r.sum.Quads != logQuads {
		return r.sum, damaged(b.path, b.unread(ctx, qs, record.TxID(r.sum.Transactions), logQuads-r.sum.Quads))
	}
	return r.sum, nil
}

// readErr is a failure to read the file: damage, unless ctx ended.
func (b *boltReader) readErr(ctx context.Context, what string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	return damaged(b.path, fmt.Sprintf("%s: %v", what, err))
}

// unread says which quads the transactions did not hold (n of them): it reads every quad once
// more and names the first few that lie outside every transaction read, or in one of them but
// out of reach of its transaction node.
func (b *boltReader) unread(ctx context.Context, qs graph.QuadStore, head record.TxID, n int) string {
	const show = 3
	var found []string
	reach := map[quad.Value]bool{}
	var reachOf record.TxID
	beyond := false // reported once: every transaction after it is out of reach too
	it := qs.QuadsAllIterator().Iterate()
	defer it.Close()
	for i := 1; it.Next(ctx) && len(found) < show; i++ {
		if i%releaseEvery == 0 {
			b.release()
		}
		q, err := qs.Quad(it.Result())
		if err != nil {
			break
		}
		q = codec.CanonQuad(q)
		id, ok := codec.ParseTxIRI(q.Label)
		switch {
		case !ok:
			found = append(found, fmt.Sprintf("quad %s is not in a transaction graph", showQuad(q)))
		case id > head:
			if !beyond {
				beyond = true
				found = append(found, fmt.Sprintf("quad %s is in tx %d, but tx %d cannot be read through its transaction node, so the transactions read stop at tx %d", showQuad(q), id, head+1, head))
			}
		default:
			if reachOf != id {
				clear(reach)
				reachOf = id
				reach[codec.TxIRI(id)] = true
				own, err := subjectQuads(ctx, qs, codec.TxIRI(id))
				if err != nil {
					break
				}
				for _, o := range own {
					if o.Label == codec.TxIRI(id) && o.Predicate == codec.MQLWrote {
						reach[o.Object] = true
					}
				}
			}
			if !reach[q.Subject] {
				found = append(found, fmt.Sprintf("quad %s of tx %d is not reachable from its transaction node (urn:mql:wrote)", showQuad(q), id))
			}
		}
	}
	msg := fmt.Sprintf("%d of its quads lie in no transaction that could be read", n)
	if len(found) > 0 {
		msg += ": " + strings.Join(found, "; ")
	}
	return msg
}

func showQuad(q quad.Quad) string {
	s := fmt.Sprintf("%s %s %s %s", codec.Show(q.Subject), codec.Show(q.Predicate), codec.Show(q.Object), codec.Show(q.Label))
	if len(s) > 200 {
		s = s[:197] + "..."
	}
	return s
}

func joinProblems(problems []string) string {
	const show = 5
	if len(problems) <= show {
		return strings.Join(problems, "; ")
	}
	return strings.Join(problems[:show], "; ") + fmt.Sprintf(" (and %d more problems)", len(problems)-show)
}

// cayleySize is the quad count Cayley keeps in its meta bucket.
func cayleySize(ctx context.Context, qs graph.QuadStore) (int64, error) {
	st, err := qs.Stats(ctx, false)
	if err != nil {
		return 0, err
	}
	return st.Quads.Value, nil
}

// The reads below are the old mql's (graphstore/backend_cayley.go at 05cc83f).

func quadsOf(ctx context.Context, qs graph.QuadStore, sh iterator.Shape) ([]quad.Quad, error) {
	it := sh.Iterate()
	defer it.Close()
	var out []quad.Quad
	for it.Next(ctx) {
		q, err := qs.Quad(it.Result())
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return out, ctx.Err()
}

// subjectQuads returns the quads whose subject is v (using the subject index).
func subjectQuads(ctx context.Context, qs graph.QuadStore, v quad.Value) ([]quad.Quad, error) {
	ref, err := qs.ValueOf(v)
	if err != nil || ref == nil {
		return nil, err
	}
	return quadsOf(ctx, qs, qs.QuadIterator(quad.Subject, ref))
}

// txQuadsOf collects the quads of transaction id without a label scan (Cayley's kv store has
// no label index): the transaction node's own quads, then those of every subject it links with
// urn:mql:wrote, keeping the ones labelled with this transaction.
func txQuadsOf(ctx context.Context, qs graph.QuadStore, id record.TxID) ([]quad.Quad, error) {
	label := codec.TxIRI(id)
	own, err := subjectQuads(ctx, qs, label)
	if err != nil || len(own) == 0 {
		return nil, err
	}
	var out []quad.Quad
	for _, q := range own {
		if q.Label == label {
			out = append(out, q)
		}
	}
	for _, q := range own {
		if q.Label != label || q.Predicate != codec.MQLWrote {
			continue
		}
		more, err := subjectQuads(ctx, qs, q.Object)
		if err != nil {
			return nil, err
		}
		for _, m := range more {
			if m.Label == label {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// enginePanic is a panic or a memory fault inside bbolt or Cayley, caught by guarded.
type enginePanic struct{ value any }

func (p *enginePanic) Error() string { return fmt.Sprintf("the storage engine failed: %v", p.value) }

// guarded runs fn and returns a panic inside it as an *enginePanic instead of crashing the
// process: bbolt reads its file through a memory mapping and panics on what it finds
// inconsistent, and a page beyond the end of a file truncated meanwhile is a SIGBUS, which
// SetPanicOnFault turns into a panic, but only in the goroutine that sets it: fn must not hand
// its work to other goroutines.
func guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = &enginePanic{r}
		}
	}()
	return fn()
}
