// Package mql is an embedded graph-database memory for AI agents. Agents write typed claims
// into a shared graph; the graph keeps every version, who said it, from what evidence, with what
// standing, and what was derived from it, and answers what is true now, why it is believed, who
// revoked it and what must be reviewed now that it changed.
//
// Open a store with a data source name ("memory:", a bbolt file path, or "postgres://…"),
// write with Assert, Revoke, Confirm, Derive and Review, and read with Live, Find, Why, Impact
// and the rest, as the owner or, through As, as one principal who sees only what it may see.
package mql
