package mql_test

// The twin-store property test of visibility (see property_test.go's header for what it
// checks): two stores, the same visible history, one of them with a hidden team's records too.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// ---- twins: the same visible history with and without hidden records --------------------------
//
// The strongest form of the visibility rule: a principal's every answer (receipt, error, read)
// is the same whether or not the store also holds records it may not see. Two stores get the
// same principals and the same visible writes; only the first gets the hidden ones. What may
// differ is named in docs/MODEL.md ("What a principal can infer"): version and transaction
// numbers count hidden records too, so references and transaction ids are compared through
// labels given to the records both stores made (a read for a run is labelled like a write, and
// the transaction a run's read was made at by the last labelled one at or before it); and the
// transaction count of stats. Nothing else is normalised, so a hidden record that changes a
// message, a state, an order or a count fails the comparison.

type twins struct {
	t      *testing.T
	f      [2]*fixture
	refs   [2]map[string]string // reference → label
	txs    [2]map[int64]string  // transaction id → label
	probes [][2]string          // references a write or read names, to a hidden record in the first store and to none in the second
	runs   []string             // run names any principal read, decided or recorded an outcome for, in either store
	labels int
	// compared counts the answers compared: writes' and reads'.
	compared int
}

func newTwins(t *testing.T, opts mql.Options) *twins {
	tw := &twins{t: t}
	for i := range tw.f {
		tw.f[i] = open(t, opts)
		tw.refs[i], tw.txs[i] = map[string]string{}, map[int64]string{}
	}
	return tw
}

// setup runs a write on both stores before any hidden record exists; it must succeed, and
// both stores give it the same transaction id.
func (tw *twins) setup(write func(f *fixture) (mql.Receipt, error)) {
	tw.t.Helper()
	for i, f := range tw.f {
		rc, err := write(f)
		if err != nil {
			tw.t.Fatalf("setup: %v", err)
		}
		tw.txs[i][rc.Tx] = strconv.FormatInt(rc.Tx, 10)
		f.clk.Add(time.Second)
	}
}

// visible runs a write on both stores and fails unless both answer alike. It returns each
// store's answer, and labels what it recorded.
func (tw *twins) visible(what string, write func(f *fixture) (mql.Receipt, error)) (rcs [2]mql.Receipt, errs [2]error) {
	tw.t.Helper()
	for i, f := range tw.f {
		f.clk.Add(time.Second)
		rcs[i], errs[i] = write(f)
	}
	if errs[0] == nil && errs[1] == nil {
		tw.labels++
		for i := range tw.f {
			if rcs[i].Ref != "" && strings.Contains(rcs[i].Ref, "@") {
				tw.refs[i][rcs[i].Ref] = fmt.Sprintf("#%d", tw.labels)
			}
			tw.txs[i][rcs[i].Tx] = fmt.Sprintf("T%d", tw.labels)
		}
	}
	tw.same(what, tw.answer(0, rcs[0], errs[0]), tw.answer(1, rcs[1], errs[1]))
	return rcs, errs
}

// hidden runs a write on the first store only, at the time of the last visible write.
func (tw *twins) hidden(write func(f *fixture) (mql.Receipt, error)) (mql.Receipt, error) {
	return write(tw.f[0])
}

// noteRun adds run to the names every read asks about.
func (tw *twins) noteRun(run string) {
	if run != "" && !slices.Contains(tw.runs, run) {
		tw.runs = append(tw.runs, run)
		slices.Sort(tw.runs)
	}
}

// forRun makes a read for run as who on both stores and fails unless both answer alike. A read
// for a run is a write: the retrieval each store recorded is labelled like a visible write's
// transaction.
func (tw *twins) forRun(what, who, run string, read func(f *fixture, r mql.Reader) (any, error)) {
	tw.t.Helper()
	tw.noteRun(run)
	var got [2]string
	var errs [2]error
	var heads [2]int64
	for i, f := range tw.f {
		f.clk.Add(time.Second)
		res, err := read(f, f.db.As(who).ForRun(run))
		got[i], errs[i] = tw.read(i, res, err), err
		st, err := f.db.Stats(f.ctx)
		if err != nil {
			tw.t.Fatal(err)
		}
		heads[i] = int64(st.Transactions)
	}
	if errs[0] == nil && errs[1] == nil {
		tw.labels++
		for i := range tw.f {
			tw.txs[i][heads[i]] = fmt.Sprintf("T%d", tw.labels)
		}
	}
	tw.same(what, got[0], got[1])
}

// hiddenForRun makes a read for run as who on the first store only.
func (tw *twins) hiddenForRun(who, run string, read func(f *fixture, r mql.Reader) (any, error)) error {
	tw.noteRun(run)
	_, err := read(tw.f[0], tw.f[0].db.As(who).ForRun(run))
	return err
}

// atTx labels the transaction a read was made at: a hidden transaction changes nothing a
// visible principal sees, so a read at it is a read at the last labelled transaction before it.
func (tw *twins) atTx(side int, n int64) (string, bool) {
	best := int64(-1)
	for tx := range tw.txs[side] {
		if tx <= n && tx > best {
			best = tx
		}
	}
	if best < 0 {
		return "", false
	}
	return "at " + tw.txs[side][best], true
}

func (tw *twins) same(what, a, b string) {
	tw.t.Helper()
	tw.compared++
	if a != b {
		tw.t.Fatalf("%s answers differently when hidden records exist:\n  with:    %s\n  without: %s", what, a, b)
	}
}

// answer is a write's answer, normalised.
func (tw *twins) answer(side int, rc mql.Receipt, err error) string {
	if err != nil {
		return "error: " + tw.text(side, err.Error())
	}
	return tw.json(side, rc)
}

// read renders a read's answer (or error) as side's reader got it, normalised.
func (tw *twins) read(side int, res any, err error) string {
	if err != nil {
		return "error: " + tw.text(side, err.Error())
	}
	if cx, ok := res.(mql.ContextResult); ok {
		// A context line gives a claim's version alone ("price=89 @2"): spell out the reference.
		i := 0
		spell := func(s string) string {
			return twVersionRE.ReplaceAllStringFunc(s, func(m string) string {
				if i < len(cx.Refs) {
					m = " " + cx.Refs[i]
				}
				i++
				return m
			})
		}
		cx.Text = spell(cx.Text)
		cx.Tokens = 0 // counts the digits of version numbers
		i = 0
		cx.Lines = slices.Clone(cx.Lines)
		for j := range cx.Lines {
			cx.Lines[j] = spell(cx.Lines[j])
		}
		res = cx
	}
	if names, ok := res.([]string); ok {
		out := make([]string, len(names))
		for i, n := range names {
			out[i] = tw.text(side, n)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	return tw.json(side, res)
}

var (
	twRefRE     = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_:/-]*(\.[A-Za-z0-9_:/-]+)?@[0-9]+`)
	twTxRE      = regexp.MustCompile(`(\btx |urn:mql:tx:|urn:mql:(?:revocation|confirmation|review|grant|retrieval|outcome):[rcvgqo])([0-9]+)`)
	twReadAtRE  = regexp.MustCompile(`(<urn:mql:readAtTx> ")([0-9]+)`)
	twVersionRE = regexp.MustCompile(` @[0-9]+`)
)

// text normalises references and transaction ids in a message or an export line.
func (tw *twins) text(side int, s string) string {
	s = strings.ReplaceAll(s, "urn:mql:claim:", "urn:mql:claim: ")
	s = strings.ReplaceAll(s, "urn:mql:artifact:", "urn:mql:artifact: ")
	s = twRefRE.ReplaceAllStringFunc(s, func(ref string) string {
		for i, p := range tw.probes {
			if p[side] == ref {
				return fmt.Sprintf("<probe %d>", i)
			}
		}
		if l, ok := tw.refs[side][ref]; ok {
			return l
		}
		return ref
	})
	s = twReadAtRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := twReadAtRE.FindStringSubmatch(m)
		n, _ := strconv.ParseInt(sub[2], 10, 64)
		if l, ok := tw.atTx(side, n); ok {
			return sub[1] + l
		}
		return m
	})
	return twTxRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := twTxRE.FindStringSubmatch(m)
		n, _ := strconv.ParseInt(sub[2], 10, 64)
		if l, ok := tw.txs[side][n]; ok {
			return sub[1] + l
		}
		return m
	})
}

// json renders v as JSON with references and transaction ids normalised, version fields (the
// reference carries them) and the transaction count of stats left out.
func (tw *twins) json(side int, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		tw.t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		tw.t.Fatal(err)
	}
	var walk func(x any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case map[string]any:
			for k, val := range x {
				switch k {
				case "version", "transactions":
					delete(x, k)
				case "tx", "decision_tx", "outcome_tx", "served_tx":
					// A record's own transaction: a visible write's, or a visible read's for a run.
					if n, ok := val.(float64); ok {
						if l, ok := tw.txs[side][int64(n)]; ok {
							x[k] = l
						}
					}
				case "read_at_tx":
					if n, ok := val.(float64); ok {
						if l, ok := tw.atTx(side, int64(n)); ok {
							x[k] = l
						}
					}
				default:
					x[k] = walk(val)
				}
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case string:
			return tw.text(side, x)
		}
		return x
	}
	out, err := json.Marshal(walk(x))
	if err != nil {
		tw.t.Fatal(err)
	}
	return string(out)
}

// reads runs every read as who on both stores and fails unless both answer alike. keys and
// arts name what to ask about, besides every labelled record and the probes.
func (tw *twins) reads(who string, keys, arts []string, asOf int) {
	tw.t.Helper()
	var got [2][]string
	for side, f := range tw.f {
		ctx := f.ctx
		r := f.db.As(who)
		if asOf > 0 {
			// The same visible write, in each store: the asOf-th label.
			want := fmt.Sprintf("T%d", asOf)
			for tx, l := range tw.txs[side] {
				if l == want {
					r = r.AsOfTx(tx)
				}
			}
		}
		add := func(res any, err error) { got[side] = append(got[side], tw.read(side, res, err)) }
		add(r.Live(ctx, "*"))
		for _, p := range pmPredicates {
			add(r.Find(ctx, mql.FindQuery{Select: []string{"?s", "?v"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: p, Op: "=", Object: mql.Var("v")}}}))
			add(r.Find(ctx, mql.FindQuery{Select: []string{"?s"}, Where: []mql.Cond{{Subject: mql.Var("s"), Predicate: p, Op: "=", Object: mql.Var("v")}}, OrderBy: []mql.Order{{Var: "?v", Desc: true}}, Limit: 2}))
			add(r.Live(ctx, "*."+p, mql.Filter{Op: ">=", Value: mql.Number(2)}))
			add(r.Beliefs(ctx, "*."+p, nil))
		}
		for _, k := range keys {
			add(r.History(ctx, k))
			add(r.Why(ctx, k))
			add(r.Impact(ctx, k, 0))
		}
		for _, a := range arts {
			add(r.History(ctx, a))
			add(r.Why(ctx, a))
			add(r.Impact(ctx, a, 0))
		}
		labels := make([]string, 0, len(tw.refs[side]))
		for ref := range tw.refs[side] {
			labels = append(labels, ref)
		}
		slices.SortFunc(labels, func(x, y string) int { return strings.Compare(tw.refs[side][x], tw.refs[side][y]) })
		for _, ref := range labels {
			add(r.Why(ctx, ref))
			if strings.Contains(ref, ".") {
				add(r.RevokedBy(ctx, ref))
			}
			add(r.Impact(ctx, ref, 1))
		}
		for _, p := range tw.probes {
			add(r.Why(ctx, p[side]))
			add(r.Impact(ctx, p[side], 0))
		}
		// Runs: every name any principal used, in either store (a hidden principal's run of the
		// same name as a visible one's is another run), and the runs of a hidden principal.
		for _, run := range tw.runs {
			add(r.Run(ctx, run))
		}
		add(r.Runs(ctx, "", time.Time{}))
		add(r.Runs(ctx, who, time.Time{}))
		add(r.MemoryStats(ctx, "", time.Time{}))
		for _, h := range []string{"worker-7", "h1"} {
			add(r.Runs(ctx, h, time.Time{}))
			add(r.MemoryStats(ctx, h, time.Time{}))
		}
		add(r.Conflicts(ctx))
		// (Not with a token budget: where it cuts depends on how many digits the version
		// numbers in the text have, and those may differ.)
		add(r.Context(ctx, []string{"*"}, 0))
		add(r.Stats(ctx))
		add(r.Names(ctx))
		// The catalogue: what the store holds, counted from what the reader may see.
		add(r.Principals(ctx, ""))
		add(r.Grants(ctx, ""))
		add(r.Subjects(ctx, ""))
		add(r.Predicates(ctx, ""))
		add(r.Artifacts(ctx, ""))
		add(r.Sources(ctx, ""))
		for _, k := range keys {
			subj, pred, _ := strings.Cut(k, ".")
			add(r.Describe(ctx, subj))
			add(r.Describe(ctx, pred))
		}
		for _, a := range arts {
			add(r.Describe(ctx, a))
		}
		var b bytes.Buffer
		err := r.Export(ctx, &b)
		var lines []string
		for _, l := range strings.Split(b.String(), "\n") {
			if !strings.Contains(l, "<urn:mql:version>") {
				lines = append(lines, l)
			}
		}
		add(strings.Join(lines, "\n"), err)
	}
	for i := range got[0] {
		tw.same(fmt.Sprintf("read %d as %s (as of %d)", i, who, asOf), got[0][i], got[1][i])
	}
}

// ---- twins, randomly --------------------------------------------------------------------------

// twRec is a record a visible write made, known to both stores by its label.
type twRec struct {
	refs   [2]string
	key    string // Subject.predicate, or the artifact's name
	claim  bool
	seenBy []string
}

type twRun struct {
	t      *testing.T
	tw     *twins
	rng    *rand.Rand
	vis    []twRec
	hid    []twRec // refs[0] only
	counts map[string]int
}

var (
	twVisible = []string{"v1", "v2", "v3"}
	twHidden  = []string{"h1", "h2"}
	twSources = []string{"src-1", "src-2", "src-3", "src-4"}
	twRuns    = []string{"run-a", "run-b"} // both teams use the same names: another principal's run-a is another run
)

func runTwins(t *testing.T, seed uint64, ops int) {
	r := &twRun{t: t, rng: rand.New(rand.NewPCG(seed, 7)), counts: map[string]int{}}
	r.tw = newTwins(t, mql.Options{Strict: seed%2 == 0})
	for _, p := range []struct {
		name string
		typ  mql.PrincipalType
	}{{"v1", mql.User}, {"v2", mql.Agent}, {"v3", mql.Agent}, {"h1", mql.User}, {"h2", mql.Agent}} {
		r.tw.setup(func(f *fixture) (mql.Receipt, error) {
			return f.db.AddPrincipal(f.ctx, mql.PrincipalSpec{Name: p.name, Type: p.typ, By: "owner"})
		})
		for _, right := range []mql.Right{mql.RightAssert, mql.RightRevoke, mql.RightConfirm} {
			if p.name == "v3" && right != mql.RightAssert {
				continue // v3 is refused revocations of others' claims
			}
			r.tw.setup(func(f *fixture) (mql.Receipt, error) {
				return f.db.Grant(f.ctx, mql.GrantSpec{Grantee: p.name, Right: right, Scope: "*", By: "owner"})
			})
		}
	}
	for step := range ops {
		if r.rng.IntN(10) < 4 {
			r.hiddenWrite()
		} else {
			r.visibleWrite(step)
		}
		if r.rng.IntN(4) == 0 {
			r.runStep(step)
		}
		if step%20 == 0 {
			r.reads(r.pick(twVisible), step)
		}
	}
	for _, who := range twVisible {
		r.reads(who, ops)
	}
	for i := range r.tw.f {
		if rep, err := r.tw.f[i].db.Check(r.tw.f[i].ctx); err != nil || !rep.OK() {
			t.Fatalf("check: %v %v", err, rep.Problems)
		}
	}
	var refused []string
	for _, k := range sortedKeys(r.counts) {
		if why, ok := strings.CutPrefix(k, "refused "); ok {
			refused = append(refused, fmt.Sprintf("%s %d", why, r.counts[k]))
		}
	}
	t.Logf("seed %d (strict %v): %d operations: visible writes %d accepted, %d refused (%s); hidden writes %d recorded, %d refused; reads for runs %d visible, %d hidden; outcomes %d visible, %d hidden; %d answers compared",
		seed, seed%2 == 0, ops, r.counts["visible"], r.counts["visible refused"], strings.Join(refused, ", "),
		r.counts["hidden"], r.counts["hidden refused"], r.counts["reads for runs"], r.counts["hidden reads for runs"], r.counts["visible outcomes"], r.counts["hidden outcomes"], r.tw.compared)
}

func (r *twRun) pick(xs []string) string { return xs[r.rng.IntN(len(xs))] }

func (r *twRun) key() string {
	return r.pick(pmSubjects) + "." + r.pick(pmPredicates)
}

// value is a value for pred: the visible team mostly keeps p0 to strings and p1 to numbers;
// the hidden team writes any type anywhere, which must never refuse the visible team's.
func (r *twRun) value(pred string, hidden bool) mql.Value {
	x := r.rng.IntN(20)
	switch {
	case hidden && x < 7 || !hidden && x == 0:
		return mql.Bool(r.rng.IntN(2) == 0)
	case hidden && x < 14 || !hidden && x == 1 || !hidden && pred == "p1" && x > 2:
		return mql.Number(float64(r.rng.IntN(4)))
	}
	return mql.String(fmt.Sprintf("val-%d", r.rng.IntN(6)))
}

// sources names none, one or two sources (perhaps the same one twice) from a small pool.
func (r *twRun) sources() []mql.Source {
	var out []mql.Source
	for range r.rng.IntN(3) {
		out = append(out, mql.Source{ID: r.pick(twSources), Excerpt: []string{"", "e1", "e2"}[r.rng.IntN(3)]})
	}
	return out
}

// hiddenWrite records something seen by hidden principals only, in the first store. It may be
// refused; then nothing happened.
func (r *twRun) hiddenWrite() {
	f := r.tw.f[0]
	by := r.pick(twHidden)
	seen := []string{by}
	if r.rng.IntN(3) == 0 {
		seen = twHidden
	}
	var rc mql.Receipt
	var err error
	kind := ""
	switch x := r.rng.IntN(10); {
	case x < 5:
		kind = "assert"
		k := r.key()
		subj, pred, _ := strings.Cut(k, ".")
		spec := mql.AssertSpec{Subject: subj, Predicate: pred, Value: r.value(pred, true), By: by, SeenBy: seen, Sources: r.sources()}
		rc, err = f.db.Assert(f.ctx, spec)
		// Refused for its type: the hidden team keeps to its own types, then.
		for _, v := range []mql.Value{mql.String("val-0"), mql.Number(1), mql.Bool(true)} {
			if errors.Is(err, mql.ErrValueType) {
				spec.Value = v
				rc, err = f.db.Assert(f.ctx, spec)
			}
		}
		if err == nil {
			r.hid = append(r.hid, twRec{refs: [2]string{rc.Ref}, key: k, claim: true, seenBy: seen})
		}
	case x < 8:
		kind = "derive"
		name := r.pick(pmArtNames)
		var from []string
		for range 1 + r.rng.IntN(2) {
			switch y := r.rng.IntN(4); {
			case y == 0 && len(r.hid) > 0:
				from = append(from, r.hid[r.rng.IntN(len(r.hid))].refs[0])
			case y == 1 && len(r.vis) > 0:
				from = append(from, r.vis[r.rng.IntN(len(r.vis))].refs[0])
			case y == 2:
				from = append(from, r.pick(pmArtNames))
			default:
				from = append(from, r.key())
			}
		}
		spec := mql.DeriveSpec{Artifact: name, From: from, By: by, SeenBy: seen}
		if r.rng.IntN(3) == 0 {
			spec.Run = r.pick(twRuns)
			r.tw.noteRun(spec.Run)
		}
		rc, err = f.db.Derive(f.ctx, spec)
		if err == nil {
			r.hid = append(r.hid, twRec{refs: [2]string{rc.Ref}, key: name, seenBy: seen})
		}
	default:
		if len(r.hid) == 0 {
			return
		}
		h := r.hid[r.rng.IntN(len(r.hid))]
		switch {
		case !h.claim:
			kind = "review"
			rc, err = f.db.Review(f.ctx, mql.ReviewSpec{Artifact: h.refs[0], By: by})
		case r.rng.IntN(2) == 0:
			kind = "confirm"
			rc, err = f.db.Confirm(f.ctx, mql.ConfirmSpec{Claim: h.refs[0], By: "h1"})
		default:
			kind = "revoke"
			spec := mql.RevokeSpec{Claim: h.refs[0], By: by}
			if o := r.hid[r.rng.IntN(len(r.hid))]; o.claim && o.key == h.key && r.rng.IntN(2) == 0 {
				spec.ReplacedBy = o.refs[0]
			}
			rc, err = f.db.Revoke(f.ctx, spec)
		}
	}
	_, _ = rc, kind
	if err == nil {
		r.counts["hidden"]++
	} else {
		r.counts["hidden refused"]++
	}
}

// target picks what a visible write names: a record both stores hold (by label), or a probe
// naming a hidden record in the first store and a version that never existed in the second.
// A probe stays with the twins, so that later reads ask about it too.
func (r *twRun) target(claim bool) (refs [2]string, ok bool) {
	if r.rng.IntN(5) == 0 {
		var hs []twRec
		for _, h := range r.hid {
			if h.claim == claim {
				hs = append(hs, h)
			}
		}
		if len(hs) > 0 {
			h := hs[r.rng.IntN(len(hs))]
			for _, p := range r.tw.probes {
				if p[0] == h.refs[0] {
					return p, true
				}
			}
			refs = [2]string{h.refs[0], fmt.Sprintf("%s@%d", h.key, 1000+len(r.tw.probes))}
			r.tw.probes = append(r.tw.probes, refs)
			return refs, true
		}
	}
	var vs []twRec
	for _, v := range r.vis {
		if v.claim == claim {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return refs, false
	}
	return vs[r.rng.IntN(len(vs))].refs, true
}

func (r *twRun) visibleWrite(step int) {
	by := r.pick(twVisible)
	var what string
	var w [2]func(f *fixture) (mql.Receipt, error)
	same := func(fn func(f *fixture) (mql.Receipt, error)) {
		w = [2]func(f *fixture) (mql.Receipt, error){fn, fn}
	}
	var rec *twRec
	switch x := r.rng.IntN(100); {
	case x < 40:
		k := r.key()
		subj, pred, _ := strings.Cut(k, ".")
		var seen []string
		switch r.rng.IntN(6) {
		case 0, 1:
			seen = []string{by}
		case 2:
			seen = []string{by, r.pick(twVisible)}
		case 3:
			seen = []string{by, r.pick(twHidden)}
		case 4:
			seen = []string{r.pick(twVisible)} // refused unless by is in it
		}
		spec := mql.AssertSpec{Subject: subj, Predicate: pred, Value: r.value(pred, false), By: by, SeenBy: seen, Sources: r.sources()}
		if r.rng.IntN(3) == 0 {
			spec.Kind = mql.Inferred
		}
		what = fmt.Sprintf("assert %s = %s by %s seen by %v from %v", k, spec.Value, by, seen, spec.Sources)
		same(func(f *fixture) (mql.Receipt, error) { return f.db.Assert(f.ctx, spec) })
		rec = &twRec{key: k, claim: true, seenBy: seen}
	case x < 55:
		refs, ok := r.target(true)
		if !ok {
			return
		}
		var repl [2]string
		if r.rng.IntN(3) == 0 {
			if o, ok := r.target(true); ok {
				repl = o
			}
		}
		what = fmt.Sprintf("revoke %v by %s replaced by %v", refs, by, repl)
		for i := range w {
			spec := mql.RevokeSpec{Claim: refs[i], By: by, ReplacedBy: repl[i]}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Revoke(f.ctx, spec) }
		}
	case x < 65:
		refs, ok := r.target(true)
		if !ok {
			return
		}
		if k, _, _ := strings.Cut(refs[0], "@"); r.rng.IntN(3) == 0 {
			refs = [2]string{k, k} // the live claim the confirmer sees
		}
		what = fmt.Sprintf("confirm %v by %s", refs, by)
		for i := range w {
			spec := mql.ConfirmSpec{Claim: refs[i], By: by}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Confirm(f.ctx, spec) }
		}
	case x < 88:
		name := r.pick(pmArtNames)
		var from [2][]string
		for range 1 + r.rng.IntN(2) {
			var refs [2]string
			switch y := r.rng.IntN(6); {
			case y < 4:
				var ok bool
				if refs, ok = r.target(y < 2); !ok {
					continue
				}
			case y == 4:
				a := r.pick(pmArtNames)
				refs = [2]string{a, a}
			default:
				k := r.key()
				refs = [2]string{k, k}
			}
			from[0], from[1] = append(from[0], refs[0]), append(from[1], refs[1])
		}
		if len(from[0]) == 0 {
			return
		}
		var seen []string
		switch r.rng.IntN(5) {
		case 0:
			seen = []string{by}
		case 1:
			seen = []string{by, r.pick(twVisible)}
		}
		run := ""
		if r.rng.IntN(3) == 0 {
			run = r.pick(twRuns)
			r.tw.noteRun(run)
		}
		what = fmt.Sprintf("derive %s from %v by %s seen by %v in run %q", name, from, by, seen, run)
		for i := range w {
			spec := mql.DeriveSpec{Artifact: name, From: from[i], By: by, SeenBy: seen, Run: run}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Derive(f.ctx, spec) }
		}
		rec = &twRec{key: name, seenBy: seen}
	default:
		refs, ok := r.target(false)
		if !ok {
			return
		}
		if a, _, _ := strings.Cut(refs[0], "@"); r.rng.IntN(3) == 0 {
			refs = [2]string{a, a}
		}
		what = fmt.Sprintf("review %v by %s", refs, by)
		for i := range w {
			spec := mql.ReviewSpec{Artifact: refs[i], By: by}
			w[i] = func(f *fixture) (mql.Receipt, error) { return f.db.Review(f.ctx, spec) }
		}
	}
	i := 0
	rcs, errs := r.tw.visible(fmt.Sprintf("step %d: %s", step, what), func(f *fixture) (mql.Receipt, error) {
		defer func() { i++ }()
		return w[i](f)
	})
	if errs[0] != nil {
		r.counts["visible refused"]++
		r.counts["refused "+errName(errs[0])]++
		return
	}
	r.counts["visible"]++
	if rec != nil {
		rec.refs = [2]string{rcs[0].Ref, rcs[1].Ref}
		r.vis = append(r.vis, *rec)
	}
}

// runStep reads for a run, or records a run's outcome: as a visible principal in both stores, or
// as a hidden one in the first. A hidden run is served what its principal sees, visible claims
// included, under the same names as the visible runs.
func (r *twRun) runStep(step int) {
	run := r.pick(twRuns)
	hidden := r.rng.IntN(10) < 4
	who := r.pick(twVisible)
	if hidden {
		who = r.pick(twHidden)
	}
	if r.rng.IntN(4) == 0 {
		result := []mql.OutcomeResult{mql.Succeeded, mql.Failed, mql.Declined}[r.rng.IntN(3)]
		r.tw.noteRun(run)
		out := func(f *fixture) (mql.Receipt, error) {
			return f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: run, Result: result, By: who})
		}
		if hidden {
			if _, err := r.tw.hidden(out); err != nil {
				r.t.Fatalf("step %d: hidden outcome: %v", step, err)
			}
			r.counts["hidden outcomes"]++
			return
		}
		r.tw.visible(fmt.Sprintf("step %d: outcome run %s %s by %s", step, run, result, who), out)
		r.counts["visible outcomes"]++
		return
	}
	// What to read: a claim or artifact the reader may or may not see (by label, or a probe).
	var refs [2]string
	if hidden && len(r.hid) > 0 && r.rng.IntN(2) == 0 {
		refs[0] = r.hid[r.rng.IntN(len(r.hid))].refs[0]
	} else if t, ok := r.target(r.rng.IntN(2) == 0); ok {
		refs = t
	}
	var what string
	var read func(side int) func(f *fixture, rd mql.Reader) (any, error)
	switch x := r.rng.IntN(5); {
	case x == 0 || refs[0] == "":
		what = "context *"
		read = func(int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Context(f.ctx, []string{"*"}, 0) }
		}
	case x == 1:
		what = "live *"
		read = func(int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Live(f.ctx, "*") }
		}
	case x == 2:
		what = "beliefs *.p1"
		read = func(int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Beliefs(f.ctx, "*.p1", nil) }
		}
	case x == 3 && strings.Contains(refs[0], "."):
		what = fmt.Sprintf("revoked-by %v", refs)
		read = func(side int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.RevokedBy(f.ctx, refs[side]) }
		}
	default:
		what = fmt.Sprintf("why %v", refs)
		read = func(side int) func(*fixture, mql.Reader) (any, error) {
			return func(f *fixture, rd mql.Reader) (any, error) { return rd.Why(f.ctx, refs[side]) }
		}
	}
	if hidden {
		// Refused or not, a hidden read changes nothing a visible principal sees.
		_ = r.tw.hiddenForRun(who, run, read(0))
		r.counts["hidden reads for runs"]++
		return
	}
	side := 0
	r.tw.forRun(fmt.Sprintf("step %d: %s for run %s as %s", step, what, run, who), who, run, func(f *fixture, rd mql.Reader) (any, error) {
		defer func() { side++ }()
		return read(side)(f, rd)
	})
	r.counts["reads for runs"]++
}

func (r *twRun) reads(who string, step int) {
	r.t.Helper()
	var keys []string
	for _, s := range pmSubjects {
		for _, p := range pmPredicates {
			keys = append(keys, s+"."+p)
		}
	}
	asOf := 0
	if r.tw.labels > 0 && r.rng.IntN(3) == 0 {
		asOf = 1 + r.rng.IntN(r.tw.labels)
	}
	r.tw.reads(who, keys, pmArtNames, asOf)
}
