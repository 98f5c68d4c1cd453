package main

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
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
	id := record.TxID(0)
	emit := func(tx *record.Tx) error {
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
		return codec.WriteNQuads(w, []*record.Tx{tx})
	}
	if err := emit(&record.Tx{By: "owner", Meta: &record.StoreMeta{Owner: "owner"},
		Principals: []*record.Principal{{Name: "owner", Type: record.User}}}); err != nil {
		return err
	}
	if err := emit(&record.Tx{By: "owner", Principals: []*record.Principal{
		{Name: "a1", Type: record.Agent}, {Name: "a2", Type: record.Agent}, {Name: "a3", Type: record.Agent},
		{Name: "alice", Type: record.User}}}); err != nil {
		return err
	}
	type keyState struct {
		version int
		live    bool // its newest version is live (not expired, not revoked)
	}
	keys := map[record.Key]*keyState{}
	var keyList []record.Key
	past := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	subjects := max(n*3/4/len(predicates), 12)
	made, txs := 0, 0
	for made < n {
		tx := &record.Tx{By: agents[txs%len(agents)]}
		inTx := map[record.Key]bool{}
		for i := 0; i < perTx && made < n; i++ {
			var k record.Key
			if len(keyList) > 0 && r.IntN(4) == 0 {
				k = keyList[r.IntN(len(keyList))]
			} else {
				k = record.Key{Subject: fmt.Sprintf("V%d", r.IntN(subjects)), Predicate: predicates[r.IntN(len(predicates))]}
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
			var v record.Value
			switch k.Predicate {
			case "region":
				v = record.Value{Type: record.String, Str: regions[r.IntN(len(regions))]}
			case "soc2":
				v = record.Value{Type: record.Bool, Bool: r.IntN(2) == 0}
			default:
				v = record.Value{Type: record.Number, Num: float64(1 + r.IntN(500))}
			}
			src := fmt.Sprintf("src:%d", made)
			tx.Sources = append(tx.Sources, &record.Source{ID: src, Excerpt: "seen on the vendor's page", URI: "https://example.com/" + k.Subject, Revision: "r0"})
			c := &record.Claim{ID: record.ClaimID{Key: k, Version: ks.version + 1}, Value: v, By: agents[(txs+i)%len(agents)],
				Sources: []string{src}, Kind: record.Observed, Confidence: 0.9}
			if ks.live {
				c.Supersedes = &record.ClaimID{Key: k, Version: ks.version}
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
					rev := &record.Revocation{ID: fmt.Sprintf("r%d.1", id+1), Claim: record.ClaimID{Key: k, Version: ks.version},
						By: "owner", Because: "outdated", Standing: "owner"}
					if err := emit(&record.Tx{By: "owner", Revocations: []*record.Revocation{rev}}); err != nil {
						return err
					}
					ks.live = false
					break
				}
			}
		}
		if txs%100 == 0 {
			k := keyList[r.IntN(len(keyList))]
			a := &record.Artifact{ID: record.ArtifactID{Name: fmt.Sprintf("plan:%d", txs), Version: 1},
				DerivedFrom: []record.NodeRef{{Claim: &record.ClaimID{Key: k, Version: 1}}}, By: "a1", Confidence: 0.8}
			if err := emit(&record.Tx{By: "a1", Artifacts: []*record.Artifact{a}}); err != nil {
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
