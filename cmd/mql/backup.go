package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/server"
)

const backupUsage = `usage: mql backup [--force] DB FILE | mql backup [--force] --db DB FILE
Writes a consistent copy of the bbolt store DB to FILE while it stays in use: every commit
acknowledged before the backup began is in the copy, even while mql serve (through its socket)
or another writer goes on. The copy is written beside FILE, synced, checked as mql check does,
and only then renamed to FILE: FILE is the whole, sound copy or untouched. It never writes over
the store itself, and over an existing FILE only with --force. Restoring is opening the copy.
A PostgreSQL store is backed up with PostgreSQL's own tools (docs/SERVE.md).
` + dbUsage

// runBackup is `mql backup [--force] DB FILE`.
func runBackup(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlags("mql backup", backupUsage, stdout, stderr)
	force := flags.Bool("force", false, "write over an existing FILE (never over the store)")
	dbFlag := addDBFlag(flags.FlagSet)
	pos, code, ok := flags.parse(args)
	if !ok {
		return code
	}
	// FILE is the last argument: with --db it is the only one.
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "mql backup: name the FILE to write the copy to")
		flags.tryHelp(stderr)
		return exitUsage
	}
	file := pos[len(pos)-1]
	dsn, _, err := takeDB(*dbFlag, pos[:len(pos)-1], 0)
	if err != nil {
		fmt.Fprintf(stderr, "mql backup: %v\n", err)
		flags.tryHelp(stderr)
		return exitUsage
	}
	if dsn == "" {
		if dsn, err = defaultDB(false); err != nil {
			fmt.Fprintf(stderr, "mql backup: %v\n", err)
			return exitOpen
		}
	}
	path := mql.FilePath(dsn)
	if path == "" {
		fmt.Fprintf(stderr, "mql backup: %s is not a bbolt file: back a PostgreSQL store up with pg_dump or pg_basebackup (docs/SERVE.md, \"Backups\"); a memory: store lives only in its process\n", dsn)
		return exitUsage
	}
	if err := backupTarget(file, path, *force); err != nil {
		fmt.Fprintf(stderr, "mql backup: %v\n", err)
		return exitTransfer
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var copyTo func(w io.Writer) (int64, error)
	via := ""
	if c := attachIfServed(ctx, dsn); c != nil {
		defer c.Close()
		copyTo = func(w io.Writer) (int64, error) { return c.Backup(ctx, w) }
		via = " through mql serve (" + c.Socket + ")"
	} else {
		req := openReq{cmd: "mql backup", dsn: dsn, opts: mql.Options{MustExist: true}, failCode: exitOpen}
		req.attach = func(c *server.Client) int {
			return writeBackup(ctx, file, func(w io.Writer) (int64, error) { return c.Backup(ctx, w) }, " through mql serve ("+c.Socket+")", dsn, stdout, stderr)
		}
		db, _, code := openStore(ctx, req, stderr)
		if db == nil {
			return code
		}
		defer db.Close()
		copyTo = func(w io.Writer) (int64, error) { return db.Backup(ctx, w) }
	}
	return writeBackup(ctx, file, copyTo, via, dsn, stdout, stderr)
}

// errBackupTarget is a FILE that a backup must not replace.
var errBackupTarget = errors.New("refusing to write the backup over")

// backupTarget checks, before anything is read, that file may receive the copy of the store
// at storePath: never the store itself or its log, and an existing file only with force.
func backupTarget(file, storePath string, force bool) error {
	fi, err := os.Stat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	}
	if st, err := os.Stat(storePath); err == nil && os.SameFile(fi, st) {
		return fmt.Errorf("%w %s: it is the store being backed up, which no backup replaces, even when forced; name another file", errBackupTarget, file)
	}
	if abs, err := filepath.Abs(file); err == nil {
		if store, err := filepath.Abs(storePath); err == nil && strings.HasPrefix(abs, store+"-log-") {
			return fmt.Errorf("%w %s: it is the store's write-ahead log; name another file", errBackupTarget, file)
		}
	}
	switch {
	case fi.IsDir():
		return fmt.Errorf("%w %s: it is a directory; name a file", errBackupTarget, file)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%w %s: it is not a regular file; name a file", errBackupTarget, file)
	case !force:
		return fmt.Errorf("%w %s: it exists; add --force to replace it", errBackupTarget, file)
	}
	return nil
}

// writeBackup writes the copy to a temporary file beside file, syncs it, checks it as `mql
// check` does, and renames it to file (syncing the directory), so that file is either the
// whole, sound copy or as it was.
func writeBackup(ctx context.Context, file string, copyTo func(io.Writer) (int64, error), via, dsn string, stdout, stderr io.Writer) int {
	dir := filepath.Dir(file)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		fmt.Fprintf(stderr, "mql backup: cannot write beside %s: %v\n", file, err)
		return exitTransfer
	}
	defer os.Remove(tmp.Name()) // gone once renamed; a failed copy leaves nothing behind
	fail := func(format string, a ...any) int {
		tmp.Close()
		fmt.Fprintf(stderr, "mql backup: "+format+"; %s was not written\n", append(a, file)...)
		if ctx.Err() != nil {
			return exitInterrupted
		}
		return exitTransfer
	}
	n, err := copyTo(tmp)
	if err != nil {
		return fail("copying %s%s: %v", dsn, via, err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return fail("%v", err)
	}
	if err := tmp.Sync(); err != nil {
		return fail("syncing the copy: %v", err)
	}
	if err := tmp.Close(); err != nil {
		return fail("%v", err)
	}
	rep, err := mql.CheckStore(ctx, tmp.Name(), mql.Options{})
	if err != nil {
		return fail("checking the copy: %v", err)
	}
	if !rep.OK() {
		first := "?"
		if len(rep.Problems) > 0 {
			first = rep.Problems[0].String()
		}
		return fail("the copy does not pass mql check (%d problems, the first: %s)", len(rep.Problems)+rep.Omitted, first)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fail("%v", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		d.Close()
		if err != nil {
			fmt.Fprintf(stderr, "mql backup: syncing %s after the rename: %v\n", dir, err)
			return exitTransfer
		}
	}
	fmt.Fprintf(stdout, "%s: backed up %s%s: %d bytes, head %d, %d claims, checked: ok\n", file, dsn, via, n, rep.Head, rep.Claims)
	return exitOK
}
