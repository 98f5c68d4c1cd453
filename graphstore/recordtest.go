package graphstore

import "time"

// cid is the claim id s names; it panics if s names none.
func cid(s string) *ClaimID {
	id, err := ParseClaimID(s)
	if err != nil {
		panic(err)
	}
	return &id
}

// fullTx holds every record type and every value type, with names that need escaping.
func fullTx() *Tx {
	const id = 7
	ts := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	return &Tx{
		ID:   id,
		Time: ts,
		By:   "owner",
		Meta: &StoreMeta{Owner: "owner", Strict: true},
		Principals: []*Principal{
			{Name: "owner", Type: User, Tx: id},
			{Name: "worker-3", Type: Agent, Tx: id},
			{Name: "tools/scrape: v2 ü", Type: Tool, Tx: id},
		},
		Grants: []*Grant{
			{ID: "g7.1", Grantee: "worker-3", Right: RightAssert, Scope: "price_per_seat", By: "owner", Tx: id},
			{ID: "g7.2", Grantee: "worker-3", Right: RightRevoke, Scope: "Klarveld.*", By: "owner", Tx: id},
		},
		Sources: []*Source{
			{ID: "src:Klarveld:rev0", Excerpt: "Price: 44 €/seat\n\"quoted\" \\ tab\t", URI: "https://klarveld.example/pricing?x=1&y=2", Revision: "rev0", Tx: id},
			{ID: "src/b 100%", Tx: id},
		},
		Claims: []*Claim{
			{ID: *cid("Klarveld.price_per_seat@1"), Value: Value{Type: Number, Num: 44.5}, By: "worker-3",
				Sources: []string{"src:Klarveld:rev0", "src/b 100%"}, Kind: Observed, Confidence: 0.9, Grant: "g7.1", Tx: id},
			{ID: *cid("Klarveld.price_per_seat@2"), Value: Value{Type: Number, Num: -1e-300}, By: "worker-3",
				Kind: Inferred, Confidence: 0, Supersedes: cid("Klarveld.price_per_seat@1"), Tx: id},
			{ID: *cid("Klarveld.price_per_seat@3"), Value: Value{Type: Number, Num: 45}, By: "worker-3",
				Sources: []string{"src/b 100%"}, Kind: Inferred, Confidence: 0.25, Contests: cid("Klarveld.price_per_seat@2"), Tx: id},
			{ID: *cid("Klarveld.region@1"), Value: Value{Type: String, Str: "EU \\x00 \x01 ü\r\n"}, By: "worker-3",
				Kind: Confirmed, Confidence: 1, ValidFrom: ts.Add(-time.Hour), ValidUntil: time.Date(2027, 1, 1, 0, 0, 0, 1, time.UTC),
				SeenBy: []string{"worker-3", "owner"}, Tx: id},
			{ID: *cid("Klarveld.soc2@1"), Value: Value{Type: Bool, Bool: true}, By: "owner", Kind: Observed, Confidence: 1, SeenBy: []string{"owner"}, Tx: id},
			{ID: *cid("Klarveld.soc2@2"), Value: Value{Type: Bool, Bool: false}, By: "owner", Kind: Observed, Confidence: 1, Tx: id},
			{ID: *cid("Klarveld.founded@1"), Value: Value{Type: Time, Time: time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)}, By: "owner", Kind: Observed, Confidence: 0.5, Tx: id},
			{ID: *cid("Klarveld.parent@1"), Value: Value{Type: Ref, Str: "Brimsole"}, By: "owner", Kind: Inferred, Confidence: 0.5, Tx: id},
			{ID: *cid("Sub:ject-1/x.pred.with.dots@x@1"), Value: Value{Type: String}, By: "owner", Kind: Inferred, Confidence: 0.5, Tx: id},
		},
		Revocations: []*Revocation{
			{ID: "r7.1", Claim: *cid("Klarveld.price_per_seat@2"), By: "owner", Because: "misread the page", Standing: "owner", ReplacedBy: cid("Klarveld.price_per_seat@3"), Tx: id},
			{ID: "r7.2", Claim: *cid("Klarveld.soc2@1"), By: "owner", Standing: "own claim", Tx: id},
		},
		Confirmations: []*Confirmation{
			{ID: "c7.1", Claim: *cid("Klarveld.region@1"), By: "owner", Standing: "owner", Tx: id},
		},
		Artifacts: []*Artifact{
			{ID: ArtifactID{Name: "plan:pick-vendor", Version: 1}, DerivedFrom: []NodeRef{{Claim: cid("Klarveld.price_per_seat@3")}, {Claim: cid("Klarveld.region@1")}},
				By: "worker-3", Confidence: 1, Run: "r-17 ü", Tx: id},
			{ID: ArtifactID{Name: "plan:pick-vendor", Version: 2}, DerivedFrom: []NodeRef{{Artifact: &ArtifactID{Name: "plan:pick-vendor", Version: 1}}},
				By: "worker-3", Confidence: 0.75, SeenBy: []string{"worker-3"}, Tx: id},
			{ID: ArtifactID{Name: "plan:pick-vendor", Version: 3}, By: "worker-3", Confidence: 1,
				Supersedes: &ArtifactID{Name: "plan:pick-vendor", Version: 1}, Tx: id},
			{ID: ArtifactID{Name: "summary@x", Version: 1}, By: "owner", Confidence: 1, Tx: id},
		},
		Reviews: []*Review{
			{ID: "v7.1", Artifact: ArtifactID{Name: "plan:pick-vendor", Version: 1}, By: "owner", Because: "re-checked", Tx: id},
			{ID: "v7.2", Artifact: ArtifactID{Name: "plan:pick-vendor", Version: 2}, By: "owner", Tx: id},
		},
		Decays: []*Decay{
			{Predicate: "signal", HalfLife: 10 * time.Minute, By: "owner", Tx: id},
			{Predicate: "price_per_seat", HalfLife: 1500*time.Millisecond + 1, By: "owner", Tx: id},
		},
		Retrievals: []*Retrieval{
			{ID: "q7.1", Run: "r-17 ü", By: "worker-3", ReadAt: 6, Statement: "context Klarveld budget 60 for run r-17",
				Claims:    []ClaimID{*cid("Klarveld.region@1"), *cid("Klarveld.price_per_seat@3")},
				Artifacts: []ArtifactID{{Name: "plan:pick-vendor", Version: 1}}, Tx: id},
			{ID: "q7.2", Run: "r-18", By: "owner", ReadAt: 1, Tx: id},
			{ID: "q7.3", Run: "r-18", By: "owner", ReadAt: 6, Claims: []ClaimID{*cid("Klarveld.soc2@2")}, Tx: id},
		},
		Outcomes: []*Outcome{
			{ID: "o7.1", Run: "r-17 ü", Result: Failed, Because: "picked the wrong vendor", By: "worker-3", Tx: id},
			{ID: "o7.2", Run: "r-18", Result: Declined, By: "owner", Tx: id},
		},
	}
}
