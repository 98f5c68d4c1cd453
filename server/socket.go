package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// maxSocketPath is the longest path a Unix socket may have here (sockaddr_un holds 108 bytes
// on Linux, 104 on the BSDs, with the terminating NUL).
const maxSocketPath = 100

// SocketPaths lists where the local socket of a server holding the bbolt file at dbPath may
// be, in the order a client tries them: beside the store (dbPath + ".sock"), then, when that
// path is too long for a socket or its directory is not writable, under $XDG_RUNTIME_DIR/mql
// (else a private directory in the system's temporary directory), named by a hash of the
// store's absolute path.
func SocketPaths(dbPath string) []string {
	abs, err := filepath.Abs(dbPath)
	if err != nil {
		abs = dbPath
	}
	var out []string
	if beside := abs + ".sock"; len(beside) <= maxSocketPath {
		out = append(out, beside)
	}
	sum := sha256.Sum256([]byte(abs))
	return append(out, filepath.Join(runtimeDir(), hex.EncodeToString(sum[:8])+".sock"))
}

// runtimeDir is where sockets go when they cannot sit beside the store.
func runtimeDir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "mql")
	}
	return filepath.Join(os.TempDir(), "mql-"+strconv.Itoa(os.Getuid()))
}

// ListenLocal creates the local socket of a server holding the store at dbPath, at the first
// of SocketPaths that works. The socket is mode 0600 (its directory, when mql makes one, 0700):
// only the operating-system user who runs the server can connect, and that user is the
// store's owner, as PostgreSQL's peer authentication trusts the local user. The caller must
// hold the store (a stale socket from a server that died is removed); close the listener to
// remove the socket.
func ListenLocal(dbPath string) (net.Listener, string, error) {
	var errs []error
	for i, p := range SocketPaths(dbPath) {
		if i > 0 || filepath.Dir(p) == runtimeDir() {
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		ln, err := listenUnix(p)
		if err == nil {
			return ln, p, nil
		}
		errs = append(errs, err)
	}
	return nil, "", fmt.Errorf("no local socket for %s: %w", dbPath, errors.Join(errs...))
}

func listenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket; remove it", path)
		}
		// A server that holds the store cannot have a live socket here: it is ours or a dead
		// server's. Check anyway, so that two servers never steal each other's socket.
		if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use by another server", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	// The umask makes the socket 0600 from its creation: no moment when others could connect.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return &peerListener{Listener: ln}, nil
}

// peerListener accepts only connections from this process's own user, where the system says
// who the peer is (Linux: SO_PEERCRED) — a second lock behind the socket's file mode.
type peerListener struct{ net.Listener }

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if peerIsOwner(c) {
			return c, nil
		}
		c.Close()
	}
}
