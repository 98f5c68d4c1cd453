// Package exstore opens the store an example program is told to write into, and refuses one it
// must not write into before anything is written.
//
// An example writes only into a store it creates (a path that does not exist yet, an empty
// PostgreSQL database) or into an mql store that holds nothing but its genesis. It never
// writes into anything that is not an mql store (a directory, an empty or foreign file, a
// database with other tables), nor into a strict store (its agents would need grants). An mql
// store that holds other data is refused too, unless the program was told to reuse it; then the
// run is first rehearsed on an in-memory copy of the store, so that a run the store would refuse
// halfway is refused before it starts. Nothing is ever deleted.
package exstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/examples/internal/exflag"
)

// Policy says what a program may write into besides a new store.
type Policy struct {
	// Reuse allows an mql store that holds other data.
	Reuse bool
	// ReuseFlag is the flag that sets Reuse ("-reuse"), named in the refusal; "" if the program
	// has none.
	ReuseFlag string
}

// Check inspects dsn, without writing anything, and refuses it as Open would. A refusal is an
// exflag usage error; a store that cannot be read (in use, unreachable) is an ordinary error.
func Check(ctx context.Context, dsn string, p Policy) (mql.StoreInfo, error) {
	info, err := mql.Inspect(ctx, dsn)
	if errors.Is(err, mql.ErrBadDSN) {
		return info, exflag.Usage(err)
	}
	if err != nil {
		return info, err
	}
	const give = "give a path that does not exist yet (a new bbolt file is created there), an empty PostgreSQL database, or memory:"
	switch {
	case !info.Exists:
		if path, ok := filePath(dsn); ok {
			dir := filepath.Dir(path)
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				return info, exflag.Usagef("%s is not a directory that exists: %s", dir, give)
			}
		}
		return info, nil
	case !info.MQL:
		return info, exflag.Usagef("it is %s, not an mql store; nothing was written: %s", info.Other, give)
	case info.Strict:
		return info, exflag.Usagef("it is a strict mql store (owner %s): the example's agents would need grants to write there; nothing was written: %s", info.Owner, give)
	case info.Transactions > 1 && !p.Reuse:
		also := ""
		if p.ReuseFlag != "" {
			also = fmt.Sprintf(", or add %s to write this run on top of what it holds", p.ReuseFlag)
		}
		return info, exflag.Usagef("it is an mql store that already holds %d transactions besides its genesis; the example writes only into a new store or one that holds nothing but its genesis, and nothing was written: %s%s", info.Transactions-1, give, also)
	}
	return info, nil
}

// filePath is the file a bbolt data source name names.
func filePath(dsn string) (string, bool) {
	switch {
	case dsn == "memory:" || dsn == "memory" || strings.Contains(dsn, "://"):
		return "", false
	case strings.HasPrefix(dsn, "bbolt:"):
		return strings.TrimPrefix(dsn, "bbolt:"), true
	}
	return dsn, true
}

// Redact hides a password in a PostgreSQL URL, for messages.
func Redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return dsn
}

// Store is a store an example writes into.
type Store struct {
	*mql.DB
	DSN string
	// Before is what the store held when it was opened.
	Before mql.StoreInfo
}

// Open checks dsn (see Check) and opens it with opts.
func Open(ctx context.Context, dsn string, p Policy, opts mql.Options) (*Store, error) {
	info, err := Check(ctx, dsn, p)
	if err != nil {
		return nil, err
	}
	db, err := mql.Open(ctx, dsn, opts)
	if err != nil {
		return nil, err
	}
	return &Store{DB: db, DSN: dsn, Before: info}, nil
}

// Reused reports whether the store held other data (transactions besides its genesis).
func (s *Store) Reused() bool { return s.Before.Transactions > 1 }

// Note says what the example does with the store, for the user; "" for a new store or one
// that held nothing but its genesis.
func (s *Store) Note() string {
	if !s.Reused() {
		return ""
	}
	return fmt.Sprintf("%s held %d transactions besides its genesis. The run was rehearsed on an in-memory copy of it first and is written on top of them:\n"+
		"principals already recorded are kept as they are, each claim becomes a new version of its key (superseding, or contesting a claim that ranks higher),\n"+
		"artifacts get new versions, and the figures describe the store as a whole, not a fresh run. Nothing that was there is changed or removed.",
		Redact(s.DSN), s.Before.Transactions-1)
}

// Rehearse runs run on an in-memory copy of the store (its export imported into memory: with
// opts, the store's owner and strictness) when the store held other data, and does nothing
// otherwise: a run that the store would refuse halfway is then refused before anything is
// written. A writer that changes a shared store between the rehearsal and the run can still
// make the run fail.
func (s *Store) Rehearse(ctx context.Context, opts mql.Options, run func(*mql.DB) error) error {
	if !s.Reused() {
		return nil
	}
	var export bytes.Buffer
	if err := s.Export(ctx, &export); err != nil {
		return fmt.Errorf("exporting %s to rehearse the run: %w", Redact(s.DSN), err)
	}
	opts.Owner, opts.Strict = s.Before.Owner, s.Before.Strict
	cp, err := mql.Open(ctx, "memory:", opts)
	if err != nil {
		return err
	}
	defer cp.Close()
	if err := cp.Import(ctx, &export); err != nil {
		// The store does not check out as a whole (Import checks as mql check does).
		return exflag.Usagef("copying the store into memory to rehearse the run failed, and nothing was written: %w", err)
	}
	if err := run(cp); err != nil {
		return exflag.Usagef("the run would fail on what the store holds (rehearsed on an in-memory copy; nothing was written): %w", err)
	}
	return nil
}
