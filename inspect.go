package mql

import (
	"context"

	"github.com/mql-dev/mql/graphstore"
)

// StoreInfo is what Inspect found at a data source name.
type StoreInfo struct {
	// Exists is false when nothing is there yet: Open would create a new store.
	Exists bool
	// MQL says that what exists is an mql store. Transactions is then its number of
	// transactions (1: nothing but its genesis; 0: an empty store, which Open would give
	// a genesis), and Owner and Strict are what it was created with.
	MQL          bool
	Transactions int64
	Owner        string
	Strict       bool
	// Other says what exists when it is not an mql store, e.g. "a directory" or "a database
	// with 2 tables, views or sequences and no mql store (public.users, public.users_id_seq)".
	Other string
}

// Inspect reports what dsn holds without writing anything there or creating anything: a bbolt
// file is opened read-only, a PostgreSQL database is read in read-only transactions. Use it to
// decide whether to Open: Open creates what is missing and gives a new store its genesis, also
// inside an empty file or another program's bbolt database. Inspect reads and checks every
// transaction, so it costs about as much as Open. A bbolt file another process holds is
// ErrInUse after a second.
func Inspect(ctx context.Context, dsn string) (StoreInfo, error) {
	in, err := graphstore.Inspect(ctx, dsn, 0)
	if err != nil {
		return StoreInfo{}, err
	}
	switch in.Found {
	case graphstore.FoundStore:
		return StoreInfo{Exists: true, MQL: true, Transactions: int64(in.Head), Owner: in.Meta.Owner, Strict: in.Meta.Strict}, nil
	case graphstore.FoundOther:
		return StoreInfo{Exists: true, Other: in.Other}, nil
	}
	return StoreInfo{}, nil
}
