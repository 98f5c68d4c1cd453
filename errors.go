package mql

import (
	"errors"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/record"
)

// Errors returned by mql. Each is wrapped with detail, so match them with errors.Is. A write
// that fails with any of them changed nothing (but for the one case ErrStorage describes).
var (
	// ErrNotFound is returned when a claim, version, artifact or source that a statement names
	// does not exist, or is not visible to the reader: the message is the same either way.
	ErrNotFound = errors.New("not found")
	// ErrUnknownPrincipal is returned when a write or a read names a principal that was never
	// recorded; record it first with `principal NAME user|agent|tool`.
	ErrUnknownPrincipal = errors.New("unknown principal")
	// ErrBadReference is returned for a malformed name or reference, such as
	// "Klarveld.price@x" or an empty subject.
	ErrBadReference = errors.New("bad reference")
	// ErrValueType is returned when a value's type differs from the type of the first claim of
	// its predicate that the asserting principal may see (for the owner, the very first claim).
	// Claims the asserter may not see are never consulted, so a predicate may hold values of
	// several types in different audiences, and the owner may see them all.
	ErrValueType = errors.New("wrong value type")
	// ErrInvalid is returned for a value outside its domain: a confidence outside [0,1], an
	// unknown kind, right or principal type, a negative half-life, an empty budget, a seen-by
	// that leaves out its (non-owner) writer.
	ErrInvalid = record.ErrInvalid
	// ErrVector is returned, with ErrInvalid, for a claim's or a search's vector that is
	// empty, holds a NaN or an infinity, is zero, has more than MaxVectorDim dimensions, or
	// has not the store's dimension (fixed by the first vector written).
	ErrVector = record.ErrVector
	// ErrCycle is returned when a derivation would make an artifact depend on itself.
	ErrCycle = errors.New("derivation cycle")
	// ErrNoStanding is returned when the acting principal lacks the right a write needs; the
	// error names the principal, the right and the scope.
	ErrNoStanding = authority.ErrNoStanding
	// ErrConflict is returned when a write contradicts recorded state: revoking a claim already
	// revoked, recording a principal twice, a replacement that is not eligible.
	ErrConflict = errors.New("conflict")
	// ErrActAs is returned when an Actor is asked to act for another principal than its own: a
	// write whose By names another, a read as another, an import. Only the owner's Actor acts
	// on others' behalf. The error is an *ActAsError, which names them.
	ErrActAs = errors.New("cannot act as another principal")
	// ErrInUse is returned by Open when another process holds the store file (bbolt), and on
	// PostgreSQL by a write that waited Options.WriteLockTimeout for another process's write.
	ErrInUse = graphstore.ErrInUse
	// ErrNoStore is returned by Open with Options.MustExist, and by CheckStore, when there is
	// no mql store at the DSN: a bbolt path that does not exist, an empty file or a bbolt file
	// that is not an mql store, a PostgreSQL database without mql's tables. Nothing was
	// created; a write (Open without MustExist) creates the store.
	ErrNoStore = graphstore.ErrNoStore
	// ErrBadDSN is returned by Open for a data source name it does not understand.
	ErrBadDSN = graphstore.ErrBadDSN
	// ErrNotEmpty is returned by ImportStore when the store it would create exists already (a
	// file, or a database holding a store), and by Import when the store is not a new memory:
	// store. An import creates a store; it never adds to one.
	ErrNotEmpty = graphstore.ErrNotEmpty
	// ErrBadImport is returned (wrapped in an *ImportError) when a file to import is not a
	// sound export; nothing was imported.
	ErrBadImport = graphstore.ErrBadImport
	// ErrStorage is returned when the store's storage (the bbolt file, the PostgreSQL
	// database) fails to read or write, or holds data that is not an mql store of the current
	// format (on PostgreSQL, also a stored value that fails its checksum or does not decode,
	// which on bbolt is ErrDamaged). A write that fails with it recorded nothing, except on
	// PostgreSQL when the connection failed during the commit and PostgreSQL could not be
	// asked whether it committed: the message then says that the write may or may not have
	// been recorded, and the next read shows it if it was.
	ErrStorage = graphstore.ErrStorage
	// ErrDamaged is returned when a bbolt store's file is damaged: by Open for a file it cannot
	// read safely; by a read that meets damage (a page that is not what it should be, a stored
	// value that fails its checksum or does not decode, a fault or panic of bbolt); and by every
	// write once damage was found, or once a check recorded in the file that the store is
	// unsound. Reads that do not need what is damaged go on. Run `mql check` to see what is
	// wrong, and restore the store from an export or a backup.
	ErrDamaged = graphstore.ErrDamaged
)
