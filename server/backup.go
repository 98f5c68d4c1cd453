package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// backupDone is the trailer GET /v1/backup ends with once the whole copy was written: its
// length in bytes. A response without it is a copy cut short, whatever its body holds.
const backupDone = "Mql-Backup-Bytes"

// backup streams a consistent copy of the store's bbolt file (owner only, local socket):
// mql.DB.Backup, which checkpoints the log first, so that the copy holds every commit
// acknowledged before the request.
func (s *Server) backup(w http.ResponseWriter, r *http.Request) {
	setWhat(r, "backup")
	if id := identityOf(r.Context()); !id.local || id.principal != s.owner {
		s.fail(w, r, false, &Error{Class: "evaluation", ExitCode: exitFailed, Message: "only the owner backs the store up"}, http.StatusForbidden)
		return
	}
	if s.db.Backend() != "bbolt" {
		s.fail(w, r, false, &Error{Class: "usage", ExitCode: exitUsage, Message: "a " + s.db.Backend() + " store is not a file to copy"}, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Trailer", backupDone)
	n, err := s.db.Backup(r.Context(), w)
	if err != nil {
		setOutcome(r, "failed")
		if n == 0 {
			// Nothing was sent: the error can still be the answer.
			s.fail(w, r, false, &Error{Class: "transfer", ExitCode: 5, Message: err.Error()}, http.StatusServiceUnavailable)
		}
		return
	}
	w.Header().Set(backupDone, strconv.FormatInt(n, 10))
}

// Backup writes a consistent copy of the store the server holds to w (DB.Backup, through the
// server). The copy is whole when it returns nil.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.request(ctx, http.MethodGet, "/v1/backup", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, responseError(resp)
	}
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("the copy from the server was cut short after %d bytes: %w", n, err)
	}
	if want := resp.Trailer.Get(backupDone); want != strconv.FormatInt(n, 10) {
		return n, fmt.Errorf("the copy from the server was cut short after %d bytes: %w", n, errCutShort)
	}
	return n, nil
}

// errCutShort is a copy whose server did not say it was whole.
var errCutShort = errors.New("the server did not finish it")
