package graphstore

// TEMPORARY (storage rewrite in progress): the PostgreSQL backend is being rebuilt on package
// kv; until it lands, opening a postgres:// store fails.

import (
	"context"
	"errors"
	"io"
	"strings"
)

var errPostgresPending = errors.New("the PostgreSQL backend is being rebuilt")

func openPostgres(ctx context.Context, dsn string, opts Options) (backend, error) {
	return nil, errPostgresPending
}

func importPostgres(ctx context.Context, dsn string, r io.Reader, opts Options, copts CheckOptions) (ImportSummary, error) {
	return ImportSummary{}, errPostgresPending
}

func inspectPostgres(ctx context.Context, dsn string) (Inspection, error) {
	return Inspection{}, errPostgresPending
}

// RedactDSN returns dsn with its password, if any, replaced by ***.
func RedactDSN(dsn string) string {
	if i := strings.Index(dsn, "://"); i >= 0 {
		rest := dsn[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if colon := strings.Index(rest[:at], ":"); colon >= 0 {
				return dsn[:i+3] + rest[:colon] + ":***" + rest[at:]
			}
		}
	}
	return dsn
}
