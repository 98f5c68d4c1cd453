package query

import "github.com/mql-dev/mql"

// Result is what one statement produced. Kind is the statement's keyword ("assert", "live",
// "why", …); exactly the fields that kind fills are set.
type Result struct {
	Kind      string               `json:"kind"`
	Statement string               `json:"statement"`            // canonical source of the statement
	Receipt   *mql.Receipt         `json:"receipt,omitempty"`    // every write
	Claims    []mql.Claim          `json:"claims,omitempty"`     // live
	Find      *mql.FindResult      `json:"find,omitempty"`       // find
	Why       *mql.Node            `json:"why,omitempty"`        // why
	RevokedBy *mql.RevokedByResult `json:"revoked_by,omitempty"` // revoked-by
	Impact    *mql.ImpactResult    `json:"impact,omitempty"`     // impact
	History   *mql.HistoryResult   `json:"history,omitempty"`    // history
	Conflicts []mql.Conflict       `json:"conflicts,omitempty"`  // conflicts
	Beliefs   *mql.BeliefsResult   `json:"beliefs,omitempty"`    // beliefs
	Context   *mql.ContextResult   `json:"context,omitempty"`    // context
	Stats     *mql.Stats           `json:"stats,omitempty"`      // stats
}
