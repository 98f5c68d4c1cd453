package repl

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrOverwrite is returned (wrapped in ErrTransfer by \export) when an export was not written
// because its file exists: always for an mql store or the open store, and for any other file
// unless the export was forced (\export --force, mql export --force) or, in the REPL, confirmed.
var ErrOverwrite = errors.New("refusing to overwrite")

// bboltMagic is the magic number bbolt writes in the meta page at the start of every file,
// after the 16-byte page header, in the byte order of the machine that made it.
const bboltMagic = 0xED0CDAED

// IsStoreFile reports whether the file at path is a bbolt file (every mql store file is one),
// from its first meta page. A file that cannot be read is not one.
func IsStoreFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [20]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return false
	}
	m := head[16:20]
	return binary.LittleEndian.Uint32(m) == bboltMagic || binary.BigEndian.Uint32(m) == bboltMagic
}

// CheckOutput says whether an export may be written to path, storeFile being the file of the
// open store ("" when it has none). It refuses, with an error wrapping ErrOverwrite whatever
// the caller's force, the open store under any name (a symbolic or hard link included: the
// files are compared, not the names), any other mql store file, and what is not a regular file.
// Otherwise exists reports that path names a file already, which only a forced or confirmed
// export may replace.
func CheckOutput(path, storeFile string) (exists bool, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if _, lerr := os.Lstat(path); lerr == nil {
			// A dangling symbolic link: renaming over it replaces the link, nothing else.
			return true, nil
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if storeFile != "" {
		if st, err := os.Stat(storeFile); err == nil && os.SameFile(fi, st) {
			same := ""
			if path != storeFile {
				same = " " + storeFile + ","
			}
			return true, fmt.Errorf("%w %s: it is the store being exported,%s which no export replaces, even when forced; export to another file", ErrOverwrite, path, same)
		}
	}
	switch {
	case fi.IsDir():
		return true, fmt.Errorf("%w %s: it is a directory; name a file", ErrOverwrite, path)
	case !fi.Mode().IsRegular():
		return true, fmt.Errorf("%w %s: it is not a regular file; name a file, or export to stdout", ErrOverwrite, path)
	case IsStoreFile(path):
		return true, fmt.Errorf("%w %s: it is an mql store (a bbolt file), which no export replaces, even when forced; export to another file", ErrOverwrite, path)
	}
	return true, nil
}

// checkResultsFile says whether \o may send results to path: never over the open store, under
// any name, nor over another mql store, and not into a directory. Unlike an export it writes
// in place, so a device or a pipe (\o /dev/null, as in psql) takes them as well as a file.
func checkResultsFile(path, storeFile string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil // a missing file is created; any other problem is the open's to report
	}
	if storeFile != "" {
		if st, err := os.Stat(storeFile); err == nil && os.SameFile(fi, st) {
			return fmt.Errorf("%w %s: it is the open store, which \\o never writes over; send the results to another file", ErrOverwrite, path)
		}
	}
	switch {
	case fi.IsDir():
		return fmt.Errorf("%w %s: it is a directory; name a file", ErrOverwrite, path)
	case fi.Mode().IsRegular() && IsStoreFile(path):
		return fmt.Errorf("%w %s: it is an mql store (a bbolt file), which \\o never writes over; send the results to another file", ErrOverwrite, path)
	}
	return nil
}

func (s *Shell) importFile(ctx context.Context, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrTransfer, err)
	}
	defer f.Close()
	if err := s.cfg.Session.Import(ctx, f); err != nil {
		return fmt.Errorf("%w: import %s: %w", ErrTransfer, path, err)
	}
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
	return nil
}

// exportFile writes what the session's principal may see to path, atomically. Over an existing
// file it asks first in the interactive loop, and refuses in a script unless forced; it never
// writes over a store. done is false when the user declined.
func (s *Shell) exportFile(ctx context.Context, path string, force bool) (done bool, err error) {
	exists, err := CheckOutput(path, s.cfg.StoreFile)
	if err != nil {
		return false, fmt.Errorf("%w: export: %w", ErrTransfer, err)
	}
	if exists && !force {
		if s.lr == nil {
			return false, fmt.Errorf("%w: export: %w %s: it exists; \\export --force %s writes over it", ErrTransfer, ErrOverwrite, path, path)
		}
		if !s.confirm(fmt.Sprintf("%s exists; write over it? [y/N] ", path)) {
			fmt.Fprintf(s.cfg.Stderr, "not exported: %s is unchanged\n", path)
			return false, nil
		}
	}
	if err := WriteFileAtomic(path, func(w io.Writer) error { return s.cfg.Session.Export(ctx, w) }); err != nil {
		return false, fmt.Errorf("%w: export %s: %w", ErrTransfer, path, err)
	}
	return true, nil
}

// confirm asks question on the interactive loop's line reader; only y or yes (any case) is yes.
// Ctrl-C, Ctrl-D and anything else are no.
func (s *Shell) confirm(question string) bool {
	s.lr.SetPrompt(question)
	line, err := s.lr.Readline()
	if err != nil {
		return false
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// WriteFileAtomic writes a file through write, to a temporary file in the same directory
// renamed into place when write succeeds: the file is either complete or untouched.
func WriteFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
