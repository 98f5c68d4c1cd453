package mql

import (
	"errors"

	"github.com/mql-dev/mql/authority"
	"github.com/mql-dev/mql/graphstore"
)

// Errors returned by mql. Each is wrapped with detail, so match them with errors.Is. A write
// that fails with any of them changed nothing.
var (
	// ErrNotFound is returned when a claim, version, artifact or source that a statement names
	// does not exist, or is not visible to the reader.
	ErrNotFound = errors.New("not found")
	// ErrUnknownPrincipal is returned when a write or a read names a principal that was never
	// recorded; record it first with `principal NAME user|agent|tool`.
	ErrUnknownPrincipal = errors.New("unknown principal")
	// ErrBadReference is returned for a malformed name or reference, such as
	// "Klarveld.price@x" or an empty subject.
	ErrBadReference = errors.New("bad reference")
	// ErrValueType is returned when a value's type differs from the type the predicate's first
	// claim fixed (a predicate holds one type everywhere).
	ErrValueType = errors.New("wrong value type")
	// ErrInvalid is returned for a value outside its domain: a confidence outside [0,1], an
	// unknown kind, right or principal type, a negative half-life, an empty budget.
	ErrInvalid = errors.New("invalid input")
	// ErrCycle is returned when a derivation would make an artifact depend on itself.
	ErrCycle = errors.New("derivation cycle")
	// ErrNoStanding is returned when the acting principal lacks the right a write needs; the
	// error names the principal, the right and the scope.
	ErrNoStanding = authority.ErrNoStanding
	// ErrConflict is returned when a write contradicts recorded state: revoking a claim already
	// revoked, recording a principal twice, a replacement that is not eligible.
	ErrConflict = errors.New("conflict")
	// ErrInUse is returned by Open when another process holds the store file.
	ErrInUse = graphstore.ErrInUse
	// ErrBadDSN is returned by Open for a data source name it does not understand.
	ErrBadDSN = graphstore.ErrBadDSN
	// ErrNotEmpty is returned by ImportStore when the store it would create exists already (a
	// file, or a database holding a store), and by Import when the store is not a new memory:
	// store. An import creates a store; it never adds to one.
	ErrNotEmpty = graphstore.ErrNotEmpty
	// ErrBadImport is returned (wrapped in an *ImportError) when a file to import is not a
	// sound export; nothing was imported.
	ErrBadImport = graphstore.ErrBadImport
	// ErrStorage is returned when the storage engine failed to apply a write; nothing of that
	// write was applied.
	ErrStorage = graphstore.ErrStorage
)
