package repl

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// historyLimit is how many entries the history keeps.
const historyLimit = 1000

// HistoryPath returns where the REPL keeps its history: $MQL_HISTFILE if set, else
// $XDG_STATE_HOME/mql/history, else ~/.local/state/mql/history. getenv is os.Getenv, or a
// stand-in in tests.
func HistoryPath(getenv func(string) string) (string, error) {
	if p := getenv("MQL_HISTFILE"); p != "" {
		return p, nil
	}
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mql", "history"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", err
		}
	}
	if home == "" {
		return "", errors.New("no home directory for the history file")
	}
	return filepath.Join(home, ".local", "state", "mql", "history"), nil
}

// History is a history file: one entry per line, oldest first, mode 0600.
type History struct {
	mu      sync.Mutex
	path    string
	f       *os.File
	entries []string
}

// OpenHistory opens or creates the history file at path, creating its directory (mode 0700)
// if needed, and loads its last entries.
func OpenHistory(path string) (*History, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, err
	}
	h := &History{path: path, f: f}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4<<20)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			h.entries = append(h.entries, l)
		}
	}
	if err := sc.Err(); err != nil {
		f.Close()
		return nil, err
	}
	if len(h.entries) > 2*historyLimit {
		h.entries = h.entries[len(h.entries)-historyLimit:]
		if err := h.rewrite(); err != nil {
			f.Close()
			return nil, err
		}
	} else if len(h.entries) > historyLimit {
		h.entries = h.entries[len(h.entries)-historyLimit:]
	}
	return h, nil
}

// rewrite replaces the file with h.entries, atomically.
func (h *History) rewrite() error {
	tmp, err := os.CreateTemp(filepath.Dir(h.path), ".history-*")
	if err != nil {
		return err
	}
	w := bufio.NewWriter(tmp)
	for _, e := range h.entries {
		w.WriteString(e + "\n")
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	tmp.Chmod(0o600)
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), h.path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	h.f.Close()
	h.f, err = os.OpenFile(h.path, os.O_RDWR|os.O_APPEND, 0o600)
	return err
}

// Entries returns the loaded entries, oldest first.
func (h *History) Entries() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.entries...)
}

// Append adds an entry to the file, unless it repeats the last one.
func (h *History) Append(entry string) error {
	entry = strings.TrimSpace(strings.ReplaceAll(entry, "\n", " "))
	if entry == "" {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.entries); n > 0 && h.entries[n-1] == entry {
		return nil // a repeat of the previous entry is kept once
	}
	h.entries = append(h.entries, entry)
	_, err := h.f.WriteString(entry + "\n")
	return err
}

// Close closes the file.
func (h *History) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.f.Close()
}
