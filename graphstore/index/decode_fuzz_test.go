package index

import (
	"slices"
	"testing"

	"github.com/mql-dev/mql/graphstore/encoding"
	"github.com/mql-dev/mql/graphstore/record"
)

// FuzzDecode feeds arbitrary bytes to every decoder of a stored entry, as a damaged store would:
// each returns an error or a value, never panics, and never allocates beyond what the bytes
// hold.
func FuzzDecode(f *testing.F) {
	k := record.Key{Subject: "K", Predicate: "p"}
	c := &storedClaim{c: &record.Claim{ID: record.ClaimID{Key: k, Version: 2}, Value: record.Value{Type: record.Number, Num: 4}, By: "w",
		Sources: []string{"s"}, Excerpts: []string{"e"}, Kind: record.Observed, Confidence: 0.5, SeenBy: []string{"a"}, Supersedes: &record.ClaimID{Key: k, Version: 1}}, seq: 7,
		revisedBy: []revision{{3, 9}}, revocations: []event{{"r9.1", 9}}}
	ke := &keyEntry{key: k, seq: 3, n: 2, lastTx: 4, slots: []slotEntry{{audience: "a", first: 1, firstSeq: 1, firstTx: 2, live: 2, tx: 4, inline: true, value: record.Value{Type: record.String, Str: "x"}}}}
	h := &txHeader{id: 3, by: "w", principals: []string{"w"}, claims: []ref{{1, 2}}, grants: idList{n: 2}, revocations: idList{n: 1, ids: []string{"x"}}}
	a := &storedArtifact{a: &record.Artifact{ID: record.ArtifactID{Name: "a", Version: 2}, By: "w", Confidence: 1, Supersedes: &record.ArtifactID{Name: "a", Version: 1}},
		inputs: []storedInput{{artifact: true, ref: ref{1, 1}}}, reviews: []event{{"v5.1", 5}}}
	for _, seed := range [][]byte{c.encode(), ke.encode(), h.encode(), a.encode(), (&predEntry{types: []valueTypeOf{{tx: 1, typ: record.Number}}}).encode(),
		(&runEntry{firstTx: 1, retrievals: []event{{"q1.1", 1}}}).encode(), liveEntry{version: 2, audience: "a"}.encode(), encodeStoreMeta("owner", true), {}, {0xff},
		(&textBlock{audiences: []string{"", "a"}, posts: []textPost{{seq: 3, keySeq: 2, version: 1, tf: 1, length: 4}, {seq: 5, keySeq: 1, version: 3, tf: 2, length: 9, audience: 1}}}).appendTo(nil)} {
		f.Add(seed)
		f.Add(encoding.Seal(seed))
	}
	keyOf := func(uint64) record.Key { return k }
	nameOf := func(uint64) string { return "a" }
	f.Fuzz(func(t *testing.T, b []byte) {
		decodeClaim(record.ClaimID{Key: k, Version: 1}, b)
		decodeKeyEntry(k, b)
		decodeTxHeader(1, b)
		decodeArtifact(record.ArtifactID{Name: "a", Version: 1}, b)
		decodeArtEntry("a", b)
		decodePred(b)
		decodeRun(b)
		decodeLiveEntry(b)
		decodePrincipal("p", b)
		decodeGrant("g1.1", b)
		decodeSource("s", b)
		decodeRevocation("r1.1", b, keyOf)
		decodeConfirmation("c1.1", b, keyOf)
		decodeReview("v1.1", b, nameOf)
		decodeDecay(b)
		decodeToken("t1.1", b)
		decodeTokenRev("k1.1", b)
		decodeRetrieval("q1.1", b, keyOf, nameOf)
		decodeOutcome("o1.1", b)
		// A text block that decodes says the same once written again, in the compact form.
		if tb, err := decodeTextBlock(b); err == nil {
			again, err := decodeTextBlock(tb.appendTo(nil))
			if err != nil || !slices.Equal(again.audiences, tb.audiences) || !slices.Equal(again.posts, tb.posts) {
				t.Fatalf("text block %x decodes to %+v, written again to %+v, %v", b, tb, again, err)
			}
		}
		decodeTextStats(b)
		// The vector index's entries: one that decodes says the same once written again.
		if x, err := decodeVectorEntry(b); err == nil {
			if y, err := decodeVectorEntry(x.encode()); err != nil || y.listed != x.listed || y.list != x.list || len(y.vec) != len(x.vec) {
				t.Fatalf("vector entry %x decodes to %+v, written again to %+v, %v", b, x, y, err)
			}
		}
		if p, err := decodeIVFParams(b); err == nil {
			if q, err := decodeIVFParams(p.encode()); err != nil || q != p {
				t.Fatalf("vector index parameters %x decode to %+v, written again to %+v, %v", b, p, q, err)
			}
		}
		decodeIVFState(b)
		if cs, err := decodeCentroids(b); err == nil {
			if again, err := decodeCentroids(encodeCentroids(cs)); err != nil || len(again) != len(cs) {
				t.Fatalf("centroids %x decode to %d, written again to %d, %v", b, len(cs), len(again), err)
			}
		}
		var st storeState
		decodeStoreMeta(b, &st)
		decodeCounts(b, &st)
		encoding.Unseal(b)
		encoding.ValueFromKey(b)
	})
}

// A stored entry decodes to what was encoded.
func TestEncodeDecode(t *testing.T) {
	k := record.Key{Subject: "K", Predicate: "p"}
	c := &storedClaim{c: &record.Claim{ID: record.ClaimID{Key: k, Version: 2}, Value: record.Value{Type: record.Number, Num: 4}, By: "w",
		Sources: []string{"s"}, Excerpts: []string{"44 a seat"}, Kind: record.Observed, Confidence: 0.5, SeenBy: []string{"a"}, Grant: "g1.1", Contests: &record.ClaimID{Key: k, Version: 1}, Tx: 5},
		seq: 7, slot: 1, listing: 3, revisedBy: []revision{{3, 9}}, revocations: []event{{"r9.1", 9}}, promotions: []event{{"r8.1", 8}}, confirmations: []event{{"c7.1", 7}}}
	got, err := decodeClaim(c.c.ID, c.encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.c.Value != c.c.Value || got.c.Contests.Version != 1 || got.c.Grant != "g1.1" || len(got.c.Excerpts) != 1 || got.c.Excerpts[0] != "44 a seat" || got.seq != 7 || got.slot != 1 || got.listing != 3 ||
		len(got.revisedBy) != 1 || got.revocations[0].id != "r9.1" || got.promotions[0].tx != 8 || got.confirmations[0].id != "c7.1" || got.c.Tx != 5 {
		t.Fatalf("decoded %+v %+v", got, got.c)
	}
	ke := &keyEntry{key: k, seq: 3, n: 2, lastTx: 4, slots: []slotEntry{{audience: "a,b", first: 1, firstSeq: 1, firstTx: 2, live: 2, tx: 4, inline: true, value: record.Value{Type: record.String, Str: "x"}}}}
	gk, err := decodeKeyEntry(k, ke.encode())
	if err != nil || gk.n != 2 || gk.slots[0].value.Str != "x" || len(gk.slots[0].seenBy) != 2 || gk.slots[0].live != 2 {
		t.Fatalf("key entry %+v %v", gk, err)
	}
}
