package server

import (
	"encoding/json"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// resultJSON is a result in the JSON of docs/OUTPUT.md.
func resultJSON(r *query.Result) (json.RawMessage, error) { return output.JSON(r) }

// renderer renders results in a named format, for the command line attached to a server;
// terminal says that its output goes to a terminal, expanded that tables are shown one
// field per line (see output.Style).
func renderer(format string, terminal, expanded bool) (func(*query.Result) (string, error), error) {
	f, err := output.ParseFormat(format)
	if err != nil {
		return nil, err
	}
	st := output.Style{Format: f, Terminal: terminal, Expanded: expanded}
	return func(r *query.Result) (string, error) { return output.Render(r, st) }, nil
}
