package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/legacy"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/streammem"
	"github.com/mql-dev/mql/output"
)

const migrateUsage = `usage: mql migrate OLD [NEW | --db NEW]
Converts OLD, a store written by an earlier mql, in a bbolt file or a PostgreSQL database,
into the new store NEW in the current format (mql-kv/3); OLD is only read. OLD holds Cayley
quads (an mql before mql-kv/1) or is of format mql-kv/1 or mql-kv/2 (before the text index:
it is first checked as mql check checks a store). NEW must not exist yet. Every transaction
of OLD is checked as it is imported (as mql import checks it, indexing every claim), NEW is
checked afterwards (as mql check checks it), and the export of NEW must be byte for byte the
export of OLD. A bbolt NEW appears only once all of this passed; an interrupted or failed
migration creates nothing.
OLD and NEW are a bbolt file path, bbolt:PATH or postgres://…; NEW is the argument or --db NEW
(not both), and without it $MQL_DB, else $XDG_DATA_HOME/mql/default.db.
Exit status: 0 migrated; 2 usage; 4 OLD cannot be read (no such store, in use, not of an
earlier format, damaged); 5 refused or failed (NEW exists or is OLD, a check failed); 130
interrupted.
`

// runMigrate is `mql migrate OLD [NEW | --db NEW]`: it streams OLD's transactions, read (and,
// for a store of an earlier key-value format, checked) by package legacy, as N-Quads into an import of NEW (the check before), checks NEW (the check
// after), and compares the SHA-256 of NEW's export with that of the N-Quads it imported. A
// bbolt NEW is built under a hidden name beside it and linked into place at the end, so that
// an interrupted or failed migrate leaves no NEW.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := newFlags("mql migrate", migrateUsage, stdout, stderr)
	dbFlag := addDBFlag(flags.FlagSet)
	pos, code, ok := flags.parse(args)
	if !ok {
		return code
	}
	newDSN, rest, err := takeDB(*dbFlag, pos, 1)
	if err == nil && len(rest) != 1 {
		err = errors.New("name the old store to migrate, and the new store to create")
	}
	if err != nil {
		fmt.Fprintf(stderr, "mql migrate: %v\n", err)
		flags.usage(stderr)
		return exitUsage
	}
	oldDSN := rest[0]
	if newDSN == "" {
		if newDSN, err = defaultDB(true); err != nil {
			fmt.Fprintf(stderr, "mql migrate: %v\n", err)
			return exitOpen
		}
	}
	oldShown := output.EscapeText(graphstore.RedactDSN(oldDSN))
	newShown := output.EscapeText(graphstore.RedactDSN(newDSN))
	clock, err := testClock()
	if err != nil {
		fmt.Fprintf(stderr, "mql: %v\n", err)
		return exitUsage
	}
	// Refusals first: they read nothing and create nothing.
	if sameStore(oldDSN, newDSN) {
		fmt.Fprintf(stderr, "mql migrate: %s and %s are the same store: a migration writes a new store and leaves the old one as it is; name a NEW that does not exist\n", oldShown, newShown)
		return exitTransfer
	}
	newPath, isFile := graphstore.FilePath(newDSN)
	if isFile {
		if _, err := os.Lstat(newPath); err == nil {
			fmt.Fprintf(stderr, "mql migrate: %s exists: a migration creates a new store; name a file that does not exist (nothing was read or written)\n", newShown)
			return exitTransfer
		} else if !errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(stderr, "mql migrate: %s: %v\n", newShown, err)
			return exitTransfer
		}
	} else if newDSN == "memory:" || newDSN == "memory" {
		fmt.Fprintf(stderr, "mql migrate: %s is gone when mql exits: name a file or a postgres:// database for the new store\n", newShown)
		return exitUsage
	} else if in, err := mql.Inspect(ctx, newDSN); err == nil && in.Exists {
		fmt.Fprintf(stderr, "mql migrate: %s already holds a store (or something else): a migration creates a new store; name an empty database (nothing was read or written)\n", newShown)
		return exitTransfer
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	streammem.Bound()
	start := time.Now()

	// A bbolt NEW is built as a hidden file beside it, named after this process.
	target := newDSN
	if isFile {
		removeStaleMigrations(newPath)
		tmp := filepath.Join(filepath.Dir(newPath), "."+filepath.Base(newPath)+".migrate-"+strconv.Itoa(os.Getpid()))
		os.Remove(tmp) // a file of this name is an earlier run's of a process with our pid
		target = tmp
		defer func() {
			// Whatever happened, the hidden file is not left behind (it is linked into place
			// on success).
			os.Remove(tmp)
		}()
	}
	// fail reports a migration that did not complete. imported: the import into target
	// succeeded (a PostgreSQL NEW then holds it; a bbolt one is the hidden file, removed).
	imported := false
	fail := func(code int, format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		if isFile || !imported {
			msg += "; nothing was migrated and " + newShown + " was not created"
		} else {
			msg += "; " + newShown + " holds the imported store, which did not pass: drop that database before migrating again"
		}
		fmt.Fprintf(stderr, "mql migrate: %s\n", msg)
		return code
	}
	interrupted := func() int {
		fail(exitInterrupted, "interrupted")
		return exitInterrupted
	}
	// text is err's message, naming NEW where it names the hidden file.
	text := func(err error) string {
		msg := errText(err)
		if isFile {
			msg = strings.ReplaceAll(msg, output.EscapeText(target), output.EscapeText(newPath))
		}
		return msg
	}

	// The check before: OLD's transactions, as N-Quads, into an import of NEW, which checks
	// each one against everything before it.
	oldSum, imp, sent, err := migrateImport(ctx, oldDSN, target, clock)
	var ended *importEnded
	switch {
	case errors.Is(err, context.Canceled):
		return interrupted()
	case errors.As(err, &ended):
		err = ended.err
		switch {
		case errors.Is(err, mql.ErrBadDSN):
			return fail(exitOpen, "%s", text(err))
		case errors.Is(err, mql.ErrNotEmpty):
			return fail(exitTransfer, "%s", text(err))
		case errors.Is(err, graphstore.ErrBadImport):
			what := text(err)
			var ie *graphstore.ImportError
			if errors.As(err, &ie) {
				// The line is one of the N-Quads the migration streamed: OLD's export.
				what = ie.Msg
				if ie.Kind != "" {
					what = ie.Kind + ": " + what
				}
				what = output.EscapeText(what)
				if ie.Line > 0 {
					what += fmt.Sprintf(" (line %d of its export)", ie.Line)
				}
			}
			return fail(exitTransfer, "the check of %s's transactions refused one: %s; %s holds it nonetheless (the earlier mql checked less, or another program wrote it)",
				oldShown, what, oldShown)
		default:
			return fail(exitTransfer, "writing %s failed: %s", newShown, text(err))
		}
	case err != nil:
		// OLD cannot be read, or is not what it should be.
		return fail(exitOpen, "%s", text(err))
	}
	imported = true

	// The check after: NEW, read back as mql check reads it.
	rep, err := mql.CheckStore(ctx, target, mql.Options{Clock: clock})
	if errors.Is(err, context.Canceled) {
		return interrupted()
	}
	if err != nil {
		return fail(exitTransfer, "the check of %s after the import failed: %s", newShown, text(err))
	}
	if !rep.OK() {
		var b strings.Builder
		for i, p := range rep.Problems {
			if i == 3 {
				fmt.Fprintf(&b, "; and %d more", len(rep.Problems)+rep.Omitted-i)
				break
			}
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s: %s", p.Kind, p.String())
		}
		return fail(exitTransfer, "the check of %s after the import found %d problems (a bug of mql: please report it): %s",
			newShown, len(rep.Problems)+rep.Omitted, output.EscapeLine(b.String()))
	}

	// NEW's export, hashed as it is written, must be the N-Quads OLD gave.
	got, err := exportDigest(ctx, target, clock)
	if errors.Is(err, context.Canceled) {
		return interrupted()
	}
	if err != nil {
		return fail(exitTransfer, "exporting %s to compare it with %s failed: %s", newShown, oldShown, text(err))
	}
	if got != sent {
		return fail(exitTransfer, "the export of %s (%d bytes, SHA-256 %s) differs from the export of %s (%d bytes, SHA-256 %s) (a bug of mql: please report it)",
			newShown, got.n, got.hex(), oldShown, sent.n, sent.hex())
	}

	if isFile {
		// A link never replaces a file created meanwhile; a rename would.
		if err := os.Link(target, newPath); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fail(exitTransfer, "%s was created by someone else while migrating; it was not replaced", newShown)
			}
			if _, serr := os.Lstat(newPath); !errors.Is(serr, fs.ErrNotExist) {
				return fail(exitTransfer, "%v", err)
			}
			if err := os.Rename(target, newPath); err != nil { // a file system without hard links
				return fail(exitTransfer, "%v", err)
			}
		}
		syncDir(filepath.Dir(newPath))
	}
	fmt.Fprintf(stderr, "migrated %s into %s: %d transactions (%d claims, %d quads) in %.1f s; %s checked (no problems), and its export is the export of %s, byte for byte (%d bytes, SHA-256 %s); %s was left as it was\n",
		oldShown, newShown, oldSum.Transactions, oldSum.Claims, imp.Quads, time.Since(start).Seconds(),
		newShown, oldShown, sent.n, sent.hex()[:16], oldShown)
	return exitOK
}

// errText is err's message as a user reads it: escaped, without the storage layer's package
// name and sentinel (as package mql's errors are).
func errText(err error) string {
	msg := strings.ReplaceAll(err.Error(), "graphstore: ", "")
	msg = strings.ReplaceAll(msg, graphstore.ErrStorage.Error()+": ", "")
	return output.EscapeText(msg)
}

// digest is the SHA-256 and length of a stream of N-Quads.
type digest struct {
	sum [sha256.Size]byte
	n   int64
}

func (d digest) hex() string { return hex.EncodeToString(d.sum[:]) }

// hashWriter counts and hashes what is written through it.
type hashWriter struct {
	h hash.Hash
	n int64
}

func newHashWriter() *hashWriter { return &hashWriter{h: sha256.New()} }

func (w *hashWriter) Write(p []byte) (int, error) {
	w.h.Write(p)
	w.n += int64(len(p))
	return len(p), nil
}

func (w *hashWriter) digest() digest {
	var d digest
	copy(d.sum[:], w.h.Sum(nil))
	d.n = w.n
	return d
}

// importEnded is an error of the import (not of reading OLD).
type importEnded struct{ err error }

func (e *importEnded) Error() string { return e.err.Error() }
func (e *importEnded) Unwrap() error { return e.err }

// errImportDone ends the writing side of the pipe once the import has returned.
var errImportDone = errors.New("the import ended")

// migrateImport reads OLD's transactions (package legacy) and writes them as N-Quads, one
// transaction at a time, into an import of target, hashing what it sends. An error of the
// import is an *importEnded; any other error is OLD's. When OLD's read fails, even after its
// last transaction (the quads it did not hold), the pipe ends with that error, so that the
// import fails and creates nothing.
func migrateImport(ctx context.Context, oldDSN, target string, clock func() time.Time) (legacy.Summary, mql.ImportSummary, digest, error) {
	pr, pw := io.Pipe()
	hw := newHashWriter()
	var (
		oldSum  legacy.Summary
		readErr error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		bw := bufio.NewWriterSize(io.MultiWriter(pw, hw), 1<<16)
		oldSum, readErr = legacy.Read(ctx, oldDSN, legacy.Options{}, func(tx *record.Tx) error {
			return codec.WriteNQuads(bw, []*record.Tx{tx})
		})
		if readErr == nil {
			readErr = bw.Flush()
		}
		if readErr != nil {
			pw.CloseWithError(readErr)
		} else {
			pw.Close()
		}
	}()
	imp, importErr := mql.ImportStore(ctx, target, pr, mql.Options{Clock: clock})
	pr.CloseWithError(errImportDone)
	<-done
	switch {
	case readErr != nil && !errors.Is(readErr, errImportDone):
		// OLD's own problem is the cause, even if the import failed on the pipe's end first:
		// never keep what came from a store that did not read whole.
		return oldSum, imp, digest{}, readErr
	case importErr != nil:
		return oldSum, imp, digest{}, &importEnded{importErr}
	}
	return oldSum, imp, hw.digest(), nil
}

// exportDigest writes the owner's export of the store dsn, one transaction at a time, as `mql
// export` writes it (mql.Reader.Export: every transaction, through codec.WriteNQuads), and
// returns its digest; it never holds more than a transaction of it.
func exportDigest(ctx context.Context, dsn string, clock func() time.Time) (digest, error) {
	s, err := graphstore.Open(ctx, dsn, graphstore.Options{MustExist: true, Clock: clock})
	if err != nil {
		return digest{}, err
	}
	defer s.Close()
	hw := newHashWriter()
	bw := bufio.NewWriterSize(hw, 1<<16)
	err = s.Read(ctx, func(ix *index.Index) error {
		for id := record.TxID(1); id <= ix.Head(); id++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			tx := ix.Tx(id)
			if tx == nil {
				return fmt.Errorf("tx %d cannot be read", id)
			}
			if err := codec.WriteNQuads(bw, []*record.Tx{tx}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return digest{}, err
	}
	return hw.digest(), nil
}

// sameStore reports whether a and b name the same store: the same file (under any name, when
// both exist), or the same PostgreSQL database.
func sameStore(a, b string) bool {
	if a == b {
		return true
	}
	pa, fa := graphstore.FilePath(a)
	pb, fb := graphstore.FilePath(b)
	if fa && fb {
		if sa, err := os.Stat(pa); err == nil {
			if sb, err := os.Stat(pb); err == nil {
				return os.SameFile(sa, sb)
			}
		}
		aa, err1 := filepath.Abs(pa)
		ab, err2 := filepath.Abs(pb)
		return err1 == nil && err2 == nil && aa == ab
	}
	if fa || fb {
		return false
	}
	ka, oka := pgDatabase(a)
	kb, okb := pgDatabase(b)
	return oka && okb && ka == kb
}

// pgDatabase is the server and database a postgres:// URL names, with libpq's defaults.
func pgDatabase(dsn string) (string, bool) {
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return "", false
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", false
	}
	host, port := u.Hostname(), u.Port()
	if h := u.Query().Get("host"); h != "" {
		host = h
	}
	if p := u.Query().Get("port"); p != "" {
		port = p
	}
	if host == "" || host == "127.0.0.1" || host == "::1" {
		host = "localhost"
	}
	if port == "" {
		port = "5432"
	}
	db := strings.TrimPrefix(u.Path, "/")
	if d := u.Query().Get("dbname"); d != "" {
		db = d
	}
	if db == "" {
		db = u.User.Username()
	}
	return host + ":" + port + "/" + db, true
}

// removeStaleMigrations removes the hidden files that migrations into path killed before they
// could clean up left behind: .NAME.migrate-PID of a process that is gone, and the files of
// the import into it.
func removeStaleMigrations(path string) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	stale, _ := filepath.Glob(filepath.Join(dir, "."+base+".migrate-*"))
	more, _ := filepath.Glob(filepath.Join(dir, ".."+base+".migrate-*"))
	for _, p := range append(stale, more...) {
		name := strings.TrimPrefix(filepath.Base(p), ".")
		name = strings.TrimPrefix(name, ".")
		rest := strings.TrimPrefix(name, base+".migrate-")
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			rest = rest[:i]
		}
		pid, err := strconv.Atoi(rest)
		if err != nil || pid <= 0 || processAlive(pid) {
			continue
		}
		os.Remove(p)
	}
}

// processAlive reports whether the process pid is running (where that can be told).
func processAlive(pid int) bool {
	if pid == os.Getpid() {
		return true
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	if runtime.GOOS == "windows" {
		return true // FindProcess finds only processes that exist; Signal(0) is not supported
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EPERM)
}

// syncDir makes a new directory entry durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
