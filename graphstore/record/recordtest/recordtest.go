// Package recordtest holds records for tests of the storage packages: a transaction that holds
// every record and value type (FullTx) and claim ids from their text (ID).
package recordtest

import (
	"time"

	"github.com/mql-dev/mql/graphstore/record"
)

// ID is the claim id s names; it panics if s names none.
func ID(s string) *record.ClaimID {
	id, err := record.ParseClaimID(s)
	if err != nil {
		panic(err)
	}
	return &id
}

// FullTx holds every record type and every value type, with names that need escaping.
func FullTx() *record.Tx {
	const id = 7
	ts := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	return &record.Tx{
		ID:   id,
		Time: ts,
		By:   "owner",
		Meta: &record.StoreMeta{Owner: "owner", Strict: true},
		Principals: []*record.Principal{
			{Name: "owner", Type: record.User, Tx: id},
			{Name: "worker-3", Type: record.Agent, Tx: id},
			{Name: "tools/scrape: v2 ü", Type: record.Tool, Tx: id},
		},
		Grants: []*record.Grant{
			{ID: "g7.1", Grantee: "worker-3", Right: record.RightAssert, Scope: "price_per_seat", By: "owner", Tx: id},
			{ID: "g7.2", Grantee: "worker-3", Right: record.RightRevoke, Scope: "Klarveld.*", By: "owner", Tx: id},
		},
		Sources: []*record.Source{
			{ID: "src:Klarveld:rev0", Excerpt: "Price: 44 €/seat\n\"quoted\" \\ tab\t", URI: "https://klarveld.example/pricing?x=1&y=2", Revision: "rev0", Tx: id},
			{ID: "src/b 100%", Tx: id},
		},
		Claims: []*record.Claim{
			{ID: *ID("Klarveld.price_per_seat@1"), Value: record.Value{Type: record.Number, Num: 44.5}, By: "worker-3",
				Sources: []string{"src:Klarveld:rev0", "src/b 100%"}, Excerpts: []string{"", "44.5 \"a\" seat <b>&\n\\ ü"}, Kind: record.Observed, Confidence: 0.9, Grant: "g7.1", Tx: id},
			{ID: *ID("Klarveld.price_per_seat@2"), Value: record.Value{Type: record.Number, Num: -1e-300}, By: "worker-3",
				Kind: record.Inferred, Confidence: 0, Supersedes: ID("Klarveld.price_per_seat@1"), Tx: id},
			{ID: *ID("Klarveld.price_per_seat@3"), Value: record.Value{Type: record.Number, Num: 45}, By: "worker-3",
				Sources: []string{"src/b 100%"}, Excerpts: []string{"45 a seat"}, Kind: record.Inferred, Confidence: 0.25, Contests: ID("Klarveld.price_per_seat@2"), Tx: id},
			{ID: *ID("Klarveld.region@1"), Value: record.Value{Type: record.String, Str: "EU \\x00 \x01 ü\r\n"}, By: "worker-3",
				Kind: record.Confirmed, Confidence: 1, ValidFrom: ts.Add(-time.Hour), ValidUntil: time.Date(2027, 1, 1, 0, 0, 0, 1, time.UTC),
				SeenBy: []string{"worker-3", "owner"}, Tx: id},
			{ID: *ID("Klarveld.soc2@1"), Value: record.Value{Type: record.Bool, Bool: true}, By: "owner", Kind: record.Observed, Confidence: 1, SeenBy: []string{"owner"}, Tx: id},
			{ID: *ID("Klarveld.soc2@2"), Value: record.Value{Type: record.Bool, Bool: false}, By: "owner", Kind: record.Observed, Confidence: 1, Tx: id},
			{ID: *ID("Klarveld.founded@1"), Value: record.Value{Type: record.Time, Time: time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)}, By: "owner", Kind: record.Observed, Confidence: 0.5, Tx: id},
			{ID: *ID("Klarveld.parent@1"), Value: record.Value{Type: record.Ref, Str: "Brimsole"}, By: "owner", Kind: record.Inferred, Confidence: 0.5, Tx: id},
			{ID: *ID("Sub:ject-1/x.pred.with.dots@x@1"), Value: record.Value{Type: record.String}, By: "owner", Kind: record.Inferred, Confidence: 0.5, Tx: id},
		},
		Revocations: []*record.Revocation{
			{ID: "r7.1", Claim: *ID("Klarveld.price_per_seat@2"), By: "owner", Because: "misread the page", Standing: "owner", ReplacedBy: ID("Klarveld.price_per_seat@3"), Tx: id},
			{ID: "r7.2", Claim: *ID("Klarveld.soc2@1"), By: "owner", Standing: "own claim", Tx: id},
		},
		Confirmations: []*record.Confirmation{
			{ID: "c7.1", Claim: *ID("Klarveld.region@1"), By: "owner", Standing: "owner", Tx: id},
		},
		Artifacts: []*record.Artifact{
			{ID: record.ArtifactID{Name: "plan:pick-vendor", Version: 1}, DerivedFrom: []record.NodeRef{{Claim: ID("Klarveld.price_per_seat@3")}, {Claim: ID("Klarveld.region@1")}},
				By: "worker-3", Confidence: 1, Run: "r-17 ü", Tx: id},
			{ID: record.ArtifactID{Name: "plan:pick-vendor", Version: 2}, DerivedFrom: []record.NodeRef{{Artifact: &record.ArtifactID{Name: "plan:pick-vendor", Version: 1}}},
				By: "worker-3", Confidence: 0.75, SeenBy: []string{"worker-3"}, Tx: id},
			{ID: record.ArtifactID{Name: "plan:pick-vendor", Version: 3}, By: "worker-3", Confidence: 1,
				Supersedes: &record.ArtifactID{Name: "plan:pick-vendor", Version: 1}, Tx: id},
			{ID: record.ArtifactID{Name: "summary@x", Version: 1}, By: "owner", Confidence: 1, Tx: id},
		},
		Reviews: []*record.Review{
			{ID: "v7.1", Artifact: record.ArtifactID{Name: "plan:pick-vendor", Version: 1}, By: "owner", Because: "re-checked", Tx: id},
			{ID: "v7.2", Artifact: record.ArtifactID{Name: "plan:pick-vendor", Version: 2}, By: "owner", Tx: id},
		},
		Decays: []*record.Decay{
			{Predicate: "signal", HalfLife: 10 * time.Minute, By: "owner", Tx: id},
			{Predicate: "price_per_seat", HalfLife: 1500*time.Millisecond + 1, By: "owner", Tx: id},
		},
		Retrievals: []*record.Retrieval{
			{ID: "q7.1", Run: "r-17 ü", By: "worker-3", ReadAt: 6, Statement: "context Klarveld budget 60 for run r-17",
				Claims:    []record.ClaimID{*ID("Klarveld.region@1"), *ID("Klarveld.price_per_seat@3")},
				Artifacts: []record.ArtifactID{{Name: "plan:pick-vendor", Version: 1}}, Tx: id},
			{ID: "q7.2", Run: "r-18", By: "owner", ReadAt: 1, Tx: id},
			{ID: "q7.3", Run: "r-18", By: "owner", ReadAt: 6, Claims: []record.ClaimID{*ID("Klarveld.soc2@2")}, Tx: id},
		},
		Outcomes: []*record.Outcome{
			{ID: "o7.1", Run: "r-17 ü", Result: record.Failed, Because: "picked the wrong vendor", By: "worker-3", Tx: id},
			{ID: "o7.2", Run: "r-18", Result: record.Declined, By: "owner", Tx: id},
		},
	}
}
