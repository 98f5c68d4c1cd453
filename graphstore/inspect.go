package graphstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/cayleygraph/cayley/graph"
	ckv "github.com/cayleygraph/cayley/graph/kv"
	"github.com/cayleygraph/quad"
	hbolt "github.com/hidal-go/hidalgo/kv/bbolt"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
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
	// genesis, 0 for an empty Cayley store that Open would give a genesis.
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
		return Inspection{}, fmt.Errorf("cannot inspect %s: %w: %w", path, ErrStorage, err)
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
	kv := hbolt.New(db)
	defer kv.Close()
	qs, err := ckv.New(kv, graph.Options{ckv.OptNoBloom: true})
	if err != nil {
		return other("a bbolt database that is not an mql store (%v)", err)
	}
	quads, err := allQuads(ctx, qs)
	if err != nil {
		return Inspection{}, fmt.Errorf("reading %s: %w: %w", path, ErrStorage, err)
	}
	return inspectQuads(quads)
}

// pgReadOnly makes every transaction of a connection to dsn read-only: lib/pq passes a URL
// parameter it does not know to the server as a run-time setting.
func pgReadOnly(dsn string) (string, error) {
	u, err := url.Parse(dsn)
	if err != nil {
		return "", fmt.Errorf("cannot parse %s: %w: %v", RedactDSN(dsn), ErrBadDSN, err)
	}
	q := u.Query()
	q.Set("default_transaction_read_only", "on")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func inspectPostgres(ctx context.Context, dsn string) (Inspection, error) {
	ro, err := pgReadOnly(dsn)
	if err != nil {
		return Inspection{}, err
	}
	db, err := sql.Open("postgres", ro)
	if err == nil {
		err = db.PingContext(ctx)
	}
	if err != nil {
		if db != nil {
			db.Close()
		}
		return Inspection{}, fmt.Errorf("cannot connect to PostgreSQL at %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
	}
	defer db.Close()
	var isStore bool
	err = db.QueryRowContext(ctx, `SELECT to_regclass('quads') IS NOT NULL AND to_regclass('nodes') IS NOT NULL`).Scan(&isStore)
	if err != nil {
		return Inspection{}, fmt.Errorf("inspecting %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
	}
	if !isStore {
		// Tables, views, sequences and the like of any schema but the system's.
		rows, err := db.QueryContext(ctx, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
			AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%' ORDER BY 1`)
		if err != nil {
			return Inspection{}, fmt.Errorf("inspecting %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
		}
		defer rows.Close()
		var names []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				return Inspection{}, fmt.Errorf("inspecting %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
			}
			names = append(names, name)
		}
		if err := rows.Err(); err != nil {
			return Inspection{}, fmt.Errorf("inspecting %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
		}
		if len(names) == 0 {
			return Inspection{}, nil
		}
		n := len(names)
		if n > 3 {
			names = append(names[:3], "…")
		}
		return other("a database with %d tables, views or sequences and no mql store (%s)", n, strings.Join(names, ", "))
	}
	qs, err := graph.NewQuadStore("postgres", ro, nil)
	if err != nil {
		return Inspection{}, fmt.Errorf("cannot open the Cayley store in %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
	}
	defer qs.Close()
	quads, err := pgUnescape(allQuads(ctx, qs))
	if err != nil {
		return Inspection{}, fmt.Errorf("reading %s: %w: %w", RedactDSN(dsn), ErrStorage, err)
	}
	return inspectQuads(quads)
}

// inspectQuads decodes and checks a store's quads as Open does.
func inspectQuads(quads []quad.Quad) (Inspection, error) {
	txs, err := codec.DecodeTxs(quads)
	if err != nil {
		return other("a Cayley store that does not hold a valid mql memory (%v)", err)
	}
	s := &Store{ix: index.New()}
	s.chain = indexChain(s.ix)
	s.ix.Reserve(txs)
	for _, tx := range txs {
		if err := s.index(tx); err != nil {
			return other("a Cayley store that does not hold a valid mql memory (%v)", err)
		}
	}
	in := Inspection{Found: FoundStore, Head: s.chain.Head()}
	if in.Head > 0 {
		in.Meta = s.ix.Meta()
	}
	return in, nil
}
