package query

import (
	"time"

	"github.com/mql-dev/mql"
)

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
	Search    *mql.SearchResult    `json:"search,omitempty"`     // search
	Stats     *mql.Stats           `json:"stats,omitempty"`      // stats
	Run       []mql.RunReport      `json:"run,omitempty"`        // run: one report per principal's run of the name
	Runs      []mql.RunSummary     `json:"runs,omitempty"`       // runs

	Principals []mql.PrincipalInfo `json:"principals,omitempty"` // principals
	Grants     []mql.Grant         `json:"grants,omitempty"`     // grants
	Subjects   []mql.SubjectInfo   `json:"subjects,omitempty"`   // subjects
	Predicates []mql.PredicateInfo `json:"predicates,omitempty"` // predicates
	Artifacts  []mql.ArtifactInfo  `json:"artifacts,omitempty"`  // artifacts
	Sources    []mql.SourceInfo    `json:"sources,omitempty"`    // sources
	Describe   *mql.Description    `json:"describe,omitempty"`   // describe

	Control *Control `json:"control,omitempty"` // commit, rollback
}

// Control is the result of ending a transaction: how many statements it held and, for a
// commit that wrote, the transaction's id and time (0 and zero when its writes were all
// no-ops, or it only read).
type Control struct {
	Statements int       `json:"statements"`
	Tx         int64     `json:"tx,omitempty"`
	At         time.Time `json:"at,omitzero"`
}
