package graphstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/graphstore/record"
)

// Found says what Inspect found at a data source name.
type Found int

const (
	// FoundNothing: nothing is there yet (a path that does not exist, a PostgreSQL database
	// without tables, memory:). Open would create a new store.
	FoundNothing Found = iota
	// FoundStore: an mql store.
	FoundStore
	// FoundOther: something that is not an mql store. Open would refuse it, or (a bbolt file
	// of another program, an empty file) make an mql store inside it.
	FoundOther
)

// Inspection is what Inspect found.
type Inspection struct {
	Found Found
	// Head is the store's last transaction (FoundStore): 1 when it holds nothing but its
	// genesis, 0 for an empty store that Open would give a genesis.
	Head record.TxID
	// Meta is the owner and strict flag the store was created with (FoundStore, Head ≥ 1).
	Meta record.StoreMeta
	// Other says what is there instead of an mql store (FoundOther), e.g. "a directory".
	Other string
}

// Inspect reports what dsn holds without writing anything there: a bbolt file is opened
// read-only (a missing one is not created), a PostgreSQL database is read in read-only
// transactions (a missing schema is not created). It reads and checks every transaction, as
// Open does, so it costs about as much as opening. A bbolt file held by another process is
// ErrInUse after timeout (1s if zero).
func Inspect(ctx context.Context, dsn string, timeout time.Duration) (Inspection, error) {
	if err := ctx.Err(); err != nil {
		return Inspection{}, err
	}
	if timeout <= 0 {
		timeout = time.Second
	}
	switch {
	case dsn == "memory:" || dsn == "memory":
		return Inspection{}, nil
	case strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://"):
		return inspectPostgres(ctx, dsn)
	case strings.HasPrefix(dsn, "bbolt:") && dsn != "bbolt:":
		return inspectBBolt(ctx, strings.TrimPrefix(dsn, "bbolt:"), timeout)
	case dsn != "" && !strings.Contains(dsn, "://") && !hasScheme(dsn):
		return inspectBBolt(ctx, dsn, timeout)
	}
	return Inspection{}, fmt.Errorf("cannot open %q: %w; use memory:, bbolt:PATH, a file path, or postgres://user@host:port/db", dsn, ErrBadDSN)
}

func other(format string, args ...any) (Inspection, error) {
	return Inspection{Found: FoundOther, Other: fmt.Sprintf(format, args...)}, nil
}

func inspectBBolt(ctx context.Context, path string, timeout time.Duration) (Inspection, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(path); lerr == nil {
			// bbolt would create the file the link points to.
			return other("a symbolic link to a file that does not exist")
		}
		return Inspection{}, nil
	}
	switch {
	case err != nil:
		return Inspection{}, StorageFailure(fmt.Errorf("cannot inspect %s: %w", path, err))
	case fi.IsDir():
		return other("a directory")
	case !fi.Mode().IsRegular():
		return other("not a regular file (%s)", fi.Mode().Type())
	case fi.Size() == 0:
		return other("an empty file")
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: timeout})
	if errors.Is(err, berrors.ErrTimeout) {
		return Inspection{}, fmt.Errorf("%s is held by another process (its lock was not released within %s); close the other mql session using it, or give another file: %w", path, timeout, ErrInUse)
	}
	if err != nil {
		return other("a file that is not a bbolt database (%v)", err)
	}
	defer db.Close()
	var in Inspection
	err = guarded(func() error {
		kind, err := boltKind(db)
		if err != nil {
			return err
		}
		switch kind {
		case "":
			in, err = other("a bbolt database with nothing in it")
			return err
		case "other":
			in, err = other("a bbolt database that is not an mql store")
			return err
		case "damaged":
			in, err = other("a damaged mql store: it holds buckets named as mql's but not %s", boltkv.Bucket)
			return err
		case "cayley":
			in, err = other("an mql store in the format of an earlier mql (Cayley quads): convert it with `mql migrate`")
			return err
		}
		st := boltkv.New(db, index.Schema)
		rt, err := st.Read(ctx)
		if err != nil {
			return err
		}
		defer rt.End()
		in, err = inspectKV(rt)
		return err
	})
	if err != nil {
		return Inspection{}, StorageFailure(fmt.Errorf("reading %s: %w", path, err))
	}
	return in, nil
}

// inspectKV says what a kv store holds: an mql store's head and meta, or what else.
func inspectKV(r kv.Reader) (Inspection, error) {
	ix, err := index.Open(r, nil)
	if errors.Is(err, index.ErrEarlierFormat) {
		return other("an mql store in an earlier format (%v): convert it with `mql migrate`", err)
	}
	if errors.Is(err, index.ErrNotStore) {
		return other("a store that does not hold a valid mql memory (%v)", err)
	}
	if err != nil {
		return Inspection{}, err
	}
	in := Inspection{Found: FoundStore, Head: ix.Head()}
	if in.Head > 0 {
		in.Meta = ix.Meta()
	}
	return in, nil
}
