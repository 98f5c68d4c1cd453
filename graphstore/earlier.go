package graphstore

// Stores of an earlier key-value format (encoding.Earlier: mql-kv/1, mql-kv/2) hold every
// bucket of the current one but the text index. Adding it in place would write the index of
// every claim in one commit (on bbolt, one log record as large as the index) into a store the
// mql that wrote it may still open, so Open refuses such a store, and `mql migrate` copies it
// into a new one instead (ReadEarlier, then an import that indexes every claim).

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// earlierFormatErr is Open's and the check's error for the store named name, of an earlier
// key-value format, which err (wrapping index.ErrEarlierFormat) refused.
func earlierFormatErr(name string, err error) error { return &earlierFormatError{name, err} }

// earlierFormatError says what to run for a store of an earlier key-value format; it matches
// ErrOldFormat and index.ErrEarlierFormat.
type earlierFormatError struct {
	name string
	err  error
}

func (e *earlierFormatError) Error() string {
	return fmt.Sprintf("%s: %v; convert it with `mql migrate %s NEW` (NEW a new file or an empty database: every claim is indexed again, the new store is checked and its export compared with the old one's, and the old one is left as it is)", e.name, e.err, e.name)
}

func (e *earlierFormatError) Unwrap() []error { return []error{ErrOldFormat, e.err} }

// eachError is an error returned by checkKV's each, returned by ReadEarlier as it is.
type eachError struct{ err error }

func (e *eachError) Error() string { return e.err.Error() }
func (e *eachError) Unwrap() error { return e.err }

// ReadEarlier reads the store dsn (see Open) for `mql migrate`, without writing to it (a bbolt
// file is opened read-only, its log replayed into memory only; a PostgreSQL database in
// read-only transactions), and returns the format it is labelled with ("" for none). Only a
// store of an earlier key-value format (encoding.Earlier) is read further: it is checked as
// `mql check` checks a store, under its own format (its records decode and chain, and every
// entry is the one a replay of them gives), and fn is called with each of its transactions in
// id order once it was checked, all on one snapshot. An error returned by fn ends the read and
// is returned as it is.
//
// ReadEarlier returns nil only if the whole store was read and found sound: an error wrapping
// ErrDamaged, saying what is wrong, may come after fn has seen every transaction, so a caller
// must keep nothing of what fn was given unless ReadEarlier returned nil.
func ReadEarlier(ctx context.Context, dsn string, opts Options, fn func(*record.Tx) error) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	copts := CheckOptions{}
	standalone(&opts, &copts)
	opts.MustExist = true
	var be backend
	var err error
	if path, ok := bboltPath(dsn); ok {
		be, err = openBBoltReadOnly(path, opts.OpenTimeout)
	} else if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		be, err = openPG(ctx, dsn, opts, pgEarlier)
	} else {
		be, err = openBackend(ctx, dsn, opts) // memory: holds no store to read
	}
	if err != nil {
		return "", err
	}
	defer be.close()
	var label string
	err = be.guard(func() error {
		rt, err := be.kv().Read(ctx)
		if err != nil {
			return err
		}
		defer rt.End()
		label, err = index.Format(rt)
		return err
	})
	if err != nil {
		return "", storageErr("reading the store's format", err)
	}
	if !encoding.Earlier(label) {
		return label, nil
	}
	if r := storageReport(ctx, be); r != nil {
		return label, earlierDamaged(be.name(), r)
	}
	r, err := checkKV(ctx, be, copts, fn)
	var ee *eachError
	switch {
	case errors.As(err, &ee):
		return label, ee.err
	case errors.Is(err, ErrNoStore), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return label, err
	case errors.As(err, new(*scratchError)):
		return label, storageErr("checking the store", err)
	case err != nil:
		if _, ok := be.(*bboltBackend); ok {
			return label, &earlierDamagedError{fmt.Sprintf("%s is damaged: its records cannot be read (%v); restore it from a backup", be.name(), err)}
		}
		return label, storageErr("reading the store", err)
	}
	if !r.OK() {
		return label, earlierDamaged(be.name(), r)
	}
	return label, nil
}

// earlierDamaged is the error for the store named name, of an earlier format, whose check
// before its migration found r: what is wrong, and what to do. It wraps ErrDamaged.
func earlierDamaged(name string, r *Report) error {
	var b strings.Builder
	n := 0
	for _, p := range r.Problems {
		if p.Msg == rebuildAdvice {
			continue // this mql cannot export the store: the advice below is what to do
		}
		if n++; n <= 3 {
			if n > 1 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %s", p.Kind, p.String())
		}
	}
	if n += r.Omitted; n > 3 {
		fmt.Fprintf(&b, "; and %d more", n-3)
	}
	return &earlierDamagedError{fmt.Sprintf("%s is damaged: its check found %d problems: %s; restore it from a backup, or export it with the mql that wrote it (`mql export`) and import the export with this one (`mql import`, which builds a new store)", name, n, b.String())}
}

// earlierDamagedError says what is wrong with a store of an earlier format; it matches
// ErrDamaged.
type earlierDamagedError struct{ msg string }

func (e *earlierDamagedError) Error() string { return e.msg }
func (e *earlierDamagedError) Unwrap() error { return ErrDamaged }
