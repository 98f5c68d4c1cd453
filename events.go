package mql

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/provenance"
)

// Event kinds of the change feed.
const (
	EventPrincipal    = "principal"    // a principal was recorded
	EventGrant        = "grant"        // a right was given
	EventDecay        = "decay"        // a predicate got a half-life
	EventClaim        = "claim"        // a claim version was recorded (live, contested, …)
	EventRevocation   = "revocation"   // a claim version was revoked
	EventConfirmation = "confirmation" // a claim was confirmed
	EventArtifact     = "artifact"     // an artifact version was derived
	EventReview       = "review"       // an artifact version was reviewed
	EventNeedsReview  = "needs review" // an artifact version now needs review
)

// Event is one effect of a committed transaction, as a reader may see it: what the change
// feed (Reader.Events, `mql serve`'s /v1/watch) reports. Exactly the fields its Kind needs are
// set; the state of a claim or artifact is its state right after the transaction.
type Event struct {
	Tx   int64     `json:"tx"`
	At   time.Time `json:"at"`
	By   string    `json:"by"` // the transaction's principal
	Kind string    `json:"kind"`
	Ref  string    `json:"ref"` // the claim, artifact, principal, grant id or predicate

	// Supersedes and Contests name the version a new claim or artifact version superseded or
	// disputes, when the reader may see it.
	Supersedes string `json:"supersedes,omitempty"`
	Contests   string `json:"contests,omitempty"`

	Claim      *Claim      `json:"claim,omitempty"`      // claim, revocation, confirmation
	Artifact   *Artifact   `json:"artifact,omitempty"`   // artifact, review, needs review
	Revocation *Revocation `json:"revocation,omitempty"` // revocation
	Review     *Review     `json:"review,omitempty"`     // review
	Grant      *Grant      `json:"grant,omitempty"`      // grant
	// Because lists, for "needs review", the inputs this transaction made stale.
	Because []string `json:"because,omitempty"`
}

// MaxEventTxs bounds how many transactions one Events call reads; ask again from the head it
// returned for the rest.
const MaxEventTxs = 1000

// Events describes transactions after..head (at most MaxEventTxs of them) as the reader may
// see them, oldest first, keeping those whose reference matches pattern ("" or "*" for all;
// see MatchRef). It returns the events and the last transaction it read, to pass as after in
// the next call. A transaction that recorded nothing the reader may see yields no event. An
// artifact that a transaction made need review, by the review state rule (provenance's
// ReviewState: an input of it, transitively, stopped being live, and no review accepted that)
// yields a "needs review" event in that transaction; one that already needed review yields
// none. Expiry is not an event: nothing was written when time passed.
func (r reads) Events(ctx context.Context, after int64, pattern string) ([]Event, int64, error) {
	if after < 0 {
		return nil, 0, fmt.Errorf("events after tx %d: %w: transactions start at 1", after, ErrInvalid)
	}
	var out []Event
	last := after
	err := r.view(ctx, func(now *index.View) error {
		head := now.AsOf()
		if record.TxID(after) > head {
			return fmt.Errorf("events after tx %d: %w: the head is tx %d", after, ErrNotFound, head)
		}
		ix := now.Index()
		for id := record.TxID(after) + 1; id <= head && id <= record.TxID(after)+MaxEventTxs; id++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			tx := ix.Tx(id)
			v := ix.View(id, tx.Time, now.Viewer())
			for _, e := range txEvents(v, tx) {
				if MatchRef(pattern, e.Ref) {
					out = append(out, e)
				}
			}
			last = int64(id)
		}
		return nil
	})
	return out, last, err
}

// txEvents is what tx did, seen through v (the view right after tx).
func txEvents(v *index.View, tx *record.Tx) []Event {
	var out []Event
	ev := func(kind, ref string) Event {
		return Event{Tx: int64(tx.ID), At: tx.Time, By: tx.By, Kind: kind, Ref: ref}
	}
	for _, p := range tx.Principals {
		out = append(out, ev(EventPrincipal, p.Name))
	}
	for _, g := range tx.Grants {
		e := ev(EventGrant, g.ID)
		e.Grant = grantOf(v, g.ID)
		out = append(out, e)
	}
	for _, d := range tx.Decays {
		out = append(out, ev(EventDecay, d.Predicate))
	}
	var prev *index.View // right before tx
	if tx.ID > 1 {
		prev = v.Index().View(tx.ID-1, v.Index().TxTime(tx.ID-1), v.Viewer())
	}
	var changed []record.NodeRef // versions that stopped being live in tx
	for _, c := range tx.Claims {
		ce := v.Claim(c.ID)
		if ce == nil {
			continue
		}
		e := ev(EventClaim, c.ID.String())
		cl := claimOf(v, ce)
		e.Claim = &cl
		e.Supersedes = visibleRef(v, c.Supersedes)
		e.Contests = visibleRef(v, c.Contests)
		if c.Supersedes != nil && v.Claim(*c.Supersedes) != nil {
			id := *c.Supersedes
			changed = append(changed, record.NodeRef{Claim: &id})
		}
		out = append(out, e)
	}
	for _, rv := range tx.Revocations {
		ce := v.Claim(rv.Claim)
		if ce == nil {
			continue
		}
		e := ev(EventRevocation, rv.Claim.String())
		cl := claimOf(v, ce)
		r := revocationOf(v, rv)
		e.Claim, e.Revocation = &cl, &r
		id := rv.Claim
		changed = append(changed, record.NodeRef{Claim: &id})
		out = append(out, e)
	}
	for _, c := range tx.Confirmations {
		ce := v.Claim(c.Claim)
		if ce == nil {
			continue
		}
		e := ev(EventConfirmation, c.Claim.String())
		cl := claimOf(v, ce)
		e.Claim = &cl
		out = append(out, e)
	}
	pc := provenance.NewCache(v)
	for _, a := range tx.Artifacts {
		an := v.Artifact(a.ID)
		if an == nil {
			continue
		}
		e := ev(EventArtifact, a.ID.String())
		art := artifactOf(v, pc, an)
		e.Artifact = &art
		for _, old := range v.ArtifactVersions(a.ID.Name) {
			// The version this one superseded: superseded now, and not before tx.
			if old.Tx < tx.ID && !v.ArtifactSupersededAt(old).IsZero() && (prev == nil || prev.ArtifactSupersededAt(old).IsZero()) {
				e.Supersedes = old.ID.String()
				id := old.ID
				changed = append(changed, record.NodeRef{Artifact: &id})
			}
		}
		out = append(out, e)
	}
	for _, rv := range tx.Reviews {
		an := v.Artifact(rv.Artifact)
		if an == nil {
			continue
		}
		e := ev(EventReview, rv.Artifact.String())
		art := artifactOf(v, pc, an)
		r := reviewOf(v, rv)
		e.Artifact, e.Review = &art, &r
		out = append(out, e)
	}
	return append(out, needsReview(v, prev, tx, changed, pc, ev)...)
}

// needsReview is an event for each artifact that tx made need review (provenance.Flagged).
func needsReview(v, prev *index.View, tx *record.Tx, changed []record.NodeRef, pc *provenance.Cache, ev func(kind, ref string) Event) []Event {
	var out []Event
	for _, f := range provenance.Flagged(v, prev, tx.ID, changed, pc, MaxImpactResults) {
		e := ev(EventNeedsReview, f.Artifact.ID.String())
		art := artifactOf(v, pc, f.Artifact)
		e.Artifact = &art
		for _, s := range f.Because {
			e.Because = append(e.Because, s.String())
		}
		out = append(out, e)
	}
	return out
}

// MatchRef reports whether a reference (a claim "S.p@N", an artifact "name@N", or a principal,
// grant or predicate name) matches a feed pattern: "" and "*" match everything; "S" matches the
// claims of subject S and the artifact S; "S.p" the claims of that key; a * in a pattern stands
// for any run of characters ("Klarveld.*", "*.price_per_seat", "plan:*").
func MatchRef(pattern, ref string) bool {
	if pattern == "" || pattern == "*" {
		return true
	}
	base, _, _ := strings.Cut(ref, "@")
	if !strings.Contains(pattern, "*") {
		if base == pattern {
			return true
		}
		subj, _, dotted := strings.Cut(base, ".")
		return dotted && !strings.Contains(pattern, ".") && subj == pattern
	}
	return glob(pattern, base)
}

// glob matches s against p, in which * stands for any run of characters.
func glob(p, s string) bool {
	parts := strings.Split(p, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i, part := range parts[1:] {
		if i == len(parts)-2 {
			return strings.HasSuffix(s, part)
		}
		j := strings.Index(s, part)
		if j < 0 {
			return false
		}
		s = s[j+len(part):]
	}
	return true
}

// ReviewQueue lists the newest artifact versions the reader may see that need review, in the
// order their names were first derived.
func (r reads) ReviewQueue(ctx context.Context) ([]Artifact, error) {
	out := []Artifact{}
	err := r.view(ctx, func(v *index.View) error {
		pc := provenance.NewCache(v)
		for _, name := range v.ArtifactNames() {
			for _, a := range v.ArtifactVersions(name) {
				if !v.ArtifactSupersededAt(a).IsZero() {
					continue
				}
				if pc.ReviewState(a).Needs {
					out = append(out, artifactOf(v, pc, a))
				}
			}
		}
		return nil
	})
	return out, err
}

// Follow calls emit with each event of the transactions committed after after, as Events
// describes them, as they are committed, until ctx ends (then it returns nil) or emit fails.
// On a shared store (PostgreSQL) it also looks for other processes' commits every poll (200ms
// if zero).
func (r reads) Follow(ctx context.Context, after int64, pattern string, poll time.Duration, emit func(Event) error) error {
	sub, stop := r.db.Subscribe()
	defer stop()
	var tick <-chan time.Time
	if r.db.store.Backend() == "postgres" {
		if poll <= 0 {
			poll = 200 * time.Millisecond
		}
		t := time.NewTicker(poll)
		defer t.Stop()
		tick = t.C
	}
	for {
		for {
			events, last, err := r.Events(ctx, after, pattern)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				return err
			}
			for _, e := range events {
				if err := emit(e); err != nil {
					return err
				}
			}
			full := last-after >= MaxEventTxs
			after = last
			if !full {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-sub:
		case <-tick:
			if _, err := r.db.Head(ctx); err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
}
