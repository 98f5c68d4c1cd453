package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/mql-dev/mql/graphstore"
)

// writeExport writes the owner's export of a generated history of n claims to path, straight
// from the records (no store is built, so a million claims take a minute): the file `mql import`
// and, once imported, `mql check` are measured on (docs/RELIABILITY.md). The history is shaped
// like the sizes workload: claims on vendors' four predicates, a quarter of them new versions of
// earlier keys (superseding the live one), each with its own source, asserted by three agents in
// transactions of up to perTx claims; every 97th claim expires; every 50th transaction is followed by
// the owner's revocation of a live claim, every 100th by an artifact derived from a claim.
func writeExport(path string, n, perTx int, seed uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(seed, 2))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	id := graphstore.TxID(0)
	emit := func(tx *graphstore.Tx) error {
		id++
		tx.ID, tx.Time = id, t0.Add(time.Duration(id)*time.Millisecond)
		for _, x := range tx.Principals {
			x.Tx = id
		}
		for _, x := range tx.Sources {
			x.Tx = id
		}
		for _, x := range tx.Claims {
			x.Tx = id
		}
		for _, x := range tx.Revocations {
			x.Tx = id
		}
		for _, x := range tx.Artifacts {
			x.Tx = id
		}
		return graphstore.WriteNQuads(w, []*graphstore.Tx{tx})
	}
	if err := emit(&graphstore.Tx{By: "owner", Meta: &graphstore.StoreMeta{Owner: "owner"},
		Principals: []*graphstore.Principal{{Name: "owner", Type: graphstore.User}}}); err != nil {
		return err
	}
	if err := emit(&graphstore.Tx{By: "owner", Principals: []*graphstore.Principal{
		{Name: "a1", Type: graphstore.Agent}, {Name: "a2", Type: graphstore.Agent}, {Name: "a3", Type: graphstore.Agent},
		{Name: "alice", Type: graphstore.User}}}); err != nil {
		return err
	}
	type keyState struct {
		version int
		live    bool // its newest version is live (not expired, not revoked)
	}
	keys := map[graphstore.Key]*keyState{}
	var keyList []graphstore.Key
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	subjects := max(n*3/4/len(predicates), 12)
	made, txs := 0, 0
	for made < n {
		tx := &graphstore.Tx{By: agents[txs%len(agents)]}
		inTx := map[graphstore.Key]bool{}
		for i := 0; i < perTx && made < n; i++ {
			var k graphstore.Key
			if len(keyList) > 0 && r.IntN(4) == 0 {
				k = keyList[r.IntN(len(keyList))]
			} else {
				k = graphstore.Key{Subject: fmt.Sprintf("V%d", r.IntN(subjects)), Predicate: predicates[r.IntN(len(predicates))]}
			}
			if inTx[k] {
				continue
			}
			inTx[k] = true
			ks := keys[k]
			if ks == nil {
				ks = &keyState{}
				keys[k] = ks
				keyList = append(keyList, k)
			}
			made++
			var v graphstore.Value
			switch k.Predicate {
			case "region":
				v = graphstore.Value{Type: graphstore.String, Str: regions[r.IntN(len(regions))]}
			case "soc2":
				v = graphstore.Value{Type: graphstore.Bool, Bool: r.IntN(2) == 0}
			default:
				v = graphstore.Value{Type: graphstore.Number, Num: float64(1 + r.IntN(500))}
			}
			src := fmt.Sprintf("src:%d", made)
			tx.Sources = append(tx.Sources, &graphstore.Source{ID: src, Excerpt: "seen on the vendor's page", URI: "https://example.com/" + k.Subject, Revision: "r0"})
			c := &graphstore.Claim{ID: graphstore.ClaimID{Key: k, Version: ks.version + 1}, Value: v, By: agents[(txs+i)%len(agents)],
				Sources: []string{src}, Kind: graphstore.Observed, Confidence: 0.9}
			if ks.live {
				c.Supersedes = &graphstore.ClaimID{Key: k, Version: ks.version}
			}
			ks.version, ks.live = ks.version+1, true
			if made%97 == 0 {
				c.ValidUntil, ks.live = past, false
			}
			tx.Claims = append(tx.Claims, c)
		}
		if err := emit(tx); err != nil {
			return err
		}
		txs++
		if txs%50 == 0 {
			for range 20 {
				k := keyList[r.IntN(len(keyList))]
				if ks := keys[k]; ks.live {
					rev := &graphstore.Revocation{ID: fmt.Sprintf("r%d.1", id+1), Claim: graphstore.ClaimID{Key: k, Version: ks.version},
						By: "owner", Because: "outdated", Standing: "owner"}
					if err := emit(&graphstore.Tx{By: "owner", Revocations: []*graphstore.Revocation{rev}}); err != nil {
						return err
					}
					ks.live = false
					break
				}
			}
		}
		if txs%100 == 0 {
			k := keyList[r.IntN(len(keyList))]
			a := &graphstore.Artifact{ID: graphstore.ArtifactID{Name: fmt.Sprintf("plan:%d", txs), Version: 1},
				DerivedFrom: []graphstore.NodeRef{{Claim: &graphstore.ClaimID{Key: k, Version: 1}}}, By: "a1", Confidence: 0.8}
			if err := emit(&graphstore.Tx{By: "a1", Artifacts: []*graphstore.Artifact{a}}); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %d claims in %d transactions to %s\n", made, id, path)
	return nil
}
