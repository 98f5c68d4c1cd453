package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// The workload: one deterministic, seeded sequence of writes that every engine replays.
//
//   - n claims on vendors V0…: four predicates (price_per_seat, region, soc2, seats); three
//     quarters of them are first versions, one quarter revisions of random keys, asserted by
//     three agents, each with its own source; every 97th claim expires (valid until a past
//     time), and after the load 20 live claims are revoked by the owner;
//   - V0.price_per_seat gets 5 more versions (why: 5 superseded), V1.seats 19 more (history of
//     20 versions), as single-claim transactions;
//   - for each hub size h, a claim H<h>.score and h artifacts resting on it: a tree of fan-out
//     4 (chains of depth ~log4 h) where every third artifact also rests on a second, earlier
//     artifact of the level above (diamonds, fan-in);
//   - a dense derivation DAG: dagRoots claims D<j>.score and -dag artifacts g:<i> (5,000), each
//     derived from two distinct random earlier nodes (roots or artifacts), each its own
//     transaction: many diamonds; the root read is the one whose impact set is nearest 2,000. The
//     tree-shaped hubs alone hide what diamonds cost.

var predicates = []string{"price_per_seat", "region", "soc2", "seats"}
var agents = []string{"a1", "a2", "a3"}
var regions = []string{"EU", "US", "APAC"}

type claimOp struct {
	Subject, Predicate string
	Num                float64
	Str                string
	Bool               bool
	By, Source         string
	ValidUntil         time.Time
}

type deriveOp struct {
	Name   string
	Inputs []string // "Subject.predicate@1" or an artifact name (version 1)
}

type workload struct {
	claims      int        // bulk claims
	batchStarts []rand.PCG // the bulk generator's state at the start of each batch of 1,000 (see batch)
	revoke      []string   // Subject.predicate of keys whose live claim is revoked
	singles     []claimOp  // why and history keys
	hubs        []int
	levels      map[int][][]deriveOp // per hub: derivations level by level
	subjects    int
	whyKey      string
	histKey     string
	liveKey     string
	ctxSubjs    []string
	pastTime    time.Time
	hubClaims   []claimOp
	dagClaims   []claimOp
	dag         []deriveOp // in order: each its own transaction
	dagRoot     string     // the root whose impact is read
	dagImpact   []string   // the names of its impact set, sorted
	dagOthers   []string   // the artifacts outside it: new derivations rest on these, so the set stays
}

const (
	dagRoots = 50
	// dagImpactSize is the impact set the DAG's read aims at: an independent probe of this
	// shape read one of 2,187 artifacts at 100k claims.
	dagImpactSize = 2000
)

func abs(x int) int { return max(x, -x) }

func value(p string, r *rand.Rand, c *claimOp) {
	switch p {
	case "region":
		c.Str = regions[r.IntN(len(regions))]
	case "soc2":
		c.Bool = r.IntN(2) == 0
	case "price_per_seat":
		c.Num = float64(20 + r.IntN(180))
	default:
		c.Num = float64(1 + r.IntN(500))
	}
}

func genWorkload(n int, hubs []int, seed uint64) *workload {
	src := rand.NewPCG(seed, 0x6d716c)
	r := rand.New(src)
	w := &workload{hubs: hubs, levels: map[int][][]deriveOp{}, pastTime: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
	first := n * 3 / 4
	w.subjects = max(first/len(predicates), 12)
	w.claims = n
	w.liveKey = fmt.Sprintf("V%d.region", w.subjects/2)
	// The bulk claims are not kept: one pass draws them (without formatting a string) to leave
	// the generator where the rest of the workload starts and to note its state at the start
	// of each batch, from which batch regenerates that batch's claims when it is written. At
	// 10M claims the claims would take ~1.6 GiB of the heap, a batch takes ~150 KiB.
	// (Claims beyond n, when the vendors' first versions alone are more, are drawn and dropped.)
	total := max(n, w.subjects*len(predicates))
	for j := range total {
		if j < n && j%bulkBatch == 0 {
			w.batchStarts = append(w.batchStarts, *src)
		}
		w.claimAt(r, j, false)
	}
	k := total
	mk := func(s, p string) claimOp {
		k++
		c := claimOp{Subject: s, Predicate: p, By: agents[k%len(agents)], Source: fmt.Sprintf("src:%d", k)}
		value(p, r, &c)
		if k%97 == 0 && s != "V0" && s != "V1" && s != "V2" && s+"."+p != w.liveKey {
			c.ValidUntil = w.pastTime
		}
		return c
	}
	for i := range 20 {
		w.revoke = append(w.revoke, fmt.Sprintf("V%d.seats", 3+i))
	}
	for range 5 {
		w.singles = append(w.singles, mk("V0", "price_per_seat"))
	}
	for range 19 {
		w.singles = append(w.singles, mk("V1", "seats"))
	}
	w.whyKey, w.histKey = "V0.price_per_seat", "V1.seats"
	for i := range 12 {
		w.ctxSubjs = append(w.ctxSubjs, fmt.Sprintf("V%d", (i*w.subjects)/12+2))
	}
	for _, h := range hubs {
		hc := claimOp{Subject: fmt.Sprintf("H%d", h), Predicate: "score", Num: 1, By: "a1", Source: fmt.Sprintf("src:hub%d", h)}
		w.hubClaims = append(w.hubClaims, hc)
		root := hc.Subject + ".score@1"
		var levels [][]deriveOp
		made := 0
		var prev []string
		for made < h {
			size := 4
			if len(prev) > 0 {
				size = 4 * len(prev)
			}
			size = min(size, h-made)
			var lvl []deriveOp
			var names []string
			for j := range size {
				name := fmt.Sprintf("h%d:a%d", h, made+j)
				d := deriveOp{Name: name}
				if len(prev) == 0 {
					d.Inputs = []string{root}
				} else {
					d.Inputs = []string{prev[j/4]}
					if j%3 == 0 && len(prev) > 1 {
						if o := prev[r.IntN(len(prev))]; o != prev[j/4] {
							d.Inputs = append(d.Inputs, o)
						}
					}
				}
				lvl = append(lvl, d)
				names = append(names, name)
			}
			made += size
			levels = append(levels, lvl)
			prev = names
		}
		w.levels[h] = levels
	}
	return w
}

// bulkBatch is the size of a bulk batch: one transaction, one run of the ingest row.
const bulkBatch = 1000

// batches is the number of bulk batches.
func (w *workload) batches() int { return len(w.batchStarts) }

// batch generates bulk batch i: claims i×1,000 to (i+1)×1,000 (or n), the same every time.
func (w *workload) batch(i int) []claimOp {
	src := w.batchStarts[i]
	r := rand.New(&src)
	lo, hi := i*bulkBatch, min((i+1)*bulkBatch, w.claims)
	out := make([]claimOp, 0, hi-lo)
	for j := lo; j < hi; j++ {
		out = append(out, w.claimAt(r, j, true))
	}
	return out
}

// claimAt draws bulk claim j (from 0) from r, which must be where claim j-1 left it: the
// first versions of the vendors' four predicates in order, then revisions of random keys of
// vendors V10 on. Without strings it only draws (the subject, source and time stay empty).
//
// The keys the reads look up must stay live: at 1M claims the live-lookup key's first claim
// is a 97th, so it never expires, nor do V0, V1 and V2.
func (w *workload) claimAt(r *rand.Rand, j int, full bool) claimOp {
	var subj int
	var p string
	if j < w.subjects*len(predicates) {
		subj, p = j/len(predicates), predicates[j%len(predicates)]
	} else {
		subj = 10 + r.IntN(w.subjects-10)
		p = predicates[r.IntN(len(predicates))]
	}
	k := j + 1
	c := claimOp{Predicate: p, By: agents[k%len(agents)]}
	value(p, r, &c)
	if !full {
		return c
	}
	c.Subject, c.Source = fmt.Sprintf("V%d", subj), fmt.Sprintf("src:%d", k)
	if k%97 == 0 && subj > 2 && c.Subject+"."+p != w.liveKey {
		c.ValidUntil = w.pastTime
	}
	return c
}

// addDAG adds the dense derivation DAG of arts artifacts (none if 0) and works out its root's
// impact set.
func (w *workload) addDAG(arts int, seed uint64) {
	if arts <= 0 {
		return
	}
	r := rand.New(rand.NewPCG(seed, 0x646167))
	var nodes []string
	for j := range dagRoots {
		c := claimOp{Subject: fmt.Sprintf("D%d", j), Predicate: "score", Num: 1, By: "a1", Source: fmt.Sprintf("src:dag%d", j)}
		w.dagClaims = append(w.dagClaims, c)
		nodes = append(nodes, c.Subject+".score@1")
	}
	dependents := map[string][]string{}
	for i := range arts {
		d := deriveOp{Name: fmt.Sprintf("g:%d", i)}
		a, b := r.IntN(len(nodes)), r.IntN(len(nodes)-1)
		if b >= a {
			b++
		}
		d.Inputs = []string{nodes[a], nodes[b]}
		for _, in := range d.Inputs {
			dependents[in] = append(dependents[in], d.Name)
		}
		w.dag = append(w.dag, d)
		nodes = append(nodes, d.Name)
	}
	// The root read is the one whose impact set is nearest dagImpactSize artifacts.
	best := -1
	for j := range dagRoots {
		root := fmt.Sprintf("D%d.score@1", j)
		var set []string
		seen := map[string]bool{}
		queue := []string{root}
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, d := range dependents[n] {
				if !seen[d] {
					seen[d] = true
					set = append(set, d)
					queue = append(queue, d)
				}
			}
		}
		if d := abs(len(set) - dagImpactSize); best < 0 || d < best {
			best, w.dagRoot, w.dagImpact = d, root, set
		}
	}
	slices.Sort(w.dagImpact)
	for _, d := range w.dag {
		if _, in := slices.BinarySearch(w.dagImpact, d.Name); !in {
			w.dagOthers = append(w.dagOthers, d.Name)
		}
	}
}
