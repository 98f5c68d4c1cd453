package mql_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cayleygraph/cayley"
	"github.com/cayleygraph/cayley/graph"
	"github.com/cayleygraph/cayley/graph/iterator"
	"github.com/cayleygraph/cayley/query/path"
	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/quadstore"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/nquads"
)

// graphBackends are the DSNs the graph tests run on. PostgreSQL runs when MQL_TEST_POSTGRES
// names a server, once its backend opens again.
func graphBackends(t *testing.T) map[string]func(t *testing.T) string {
	return map[string]func(t *testing.T) string{
		"memory": func(t *testing.T) string { return "memory:" },
		"bbolt":  func(t *testing.T) string { return filepath.Join(t.TempDir(), "graph.db") },
		"postgres": func(t *testing.T) string {
			dsn := postgresDSN(t)
			s, err := graphstore.Open(context.Background(), dsn, graphstore.Options{})
			if err != nil && strings.Contains(err.Error(), "being rebuilt") {
				t.Skip("the PostgreSQL backend is being rebuilt")
			}
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			return dsn
		},
	}
}

// graphStory is checkStory (grants, revisions, a revocation with a replacement, a contested and
// a corroborating claim, seen-by claims, artifacts derived from claims and artifacts, a
// review, a decay) with a source that has details, a claim valid until a time, a seen-by
// artifact, a run (a read for it, a decision and an outcome) and a token revoked.
func graphStory(t *testing.T, dsn string) *fixture {
	f := checkStory(t, dsn)
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Brimsole", Predicate: "price", Value: mql.Number(66), By: "orchestrator",
		Sources:    []mql.Source{{ID: "src:b/page 1", Excerpt: "66 € a seat", URI: "https://brimsole.example/p?x=1", Revision: "r1"}, {ID: "src:k0"}},
		ValidUntil: t0.AddDate(10, 0, 0), Confidence: mql.Confidence(0.75)}))
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "impression", From: []string{"Player7.mood", "plan@2"}, By: "orchestrator"}))
	if _, err := f.db.As("orchestrator").ForRun("r-1").Context(f.ctx, []string{"Klarveld", "Brimsole"}, 0); err != nil {
		t.Fatal(err)
	}
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "pick", From: []string{"Brimsole.price", "plan"}, By: "orchestrator", Run: "r-1"}))
	f.ok(f.db.Outcome(f.ctx, mql.OutcomeSpec{Run: "r-1", Result: mql.Failed, Because: "late", By: "orchestrator"}))
	_, tok, err := f.db.CreateToken(f.ctx, mql.TokenSpec{Principal: "worker-3", By: "owner", Expires: t0.AddDate(10, 0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	f.ok(f.db.RevokeToken(f.ctx, tok.ID, "owner"))
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Brimsole.price@1", By: "owner", Because: "stale"}))
	return f
}

// exportLines is an owner's export of r, without its comments.
func exportLines(t *testing.T, ctx context.Context, r mql.Reader) []string {
	t.Helper()
	var b bytes.Buffer
	if err := r.Export(ctx, &b); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

func parseLine(t *testing.T, l string) quad.Quad {
	t.Helper()
	q, err := nquads.NewReader(strings.NewReader(l + "\n")).Next()
	if err != nil {
		t.Fatalf("%s: %v", l, err)
	}
	return codec.CanonQuad(q)
}

// lines are the quads an iterator gives, as N-Quads lines, in the order given.
func lines(t *testing.T, ctx context.Context, qs graph.QuadStore, sh iterator.Shape) []string {
	t.Helper()
	it := sh.Iterate()
	defer it.Close()
	var out []string
	for it.Next(ctx) {
		q, err := qs.Quad(it.Result())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, nquads.FormatQuad(q))
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func sameLines(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(g, w) {
		var miss, extra []string
		for _, l := range w {
			if _, ok := slices.BinarySearch(g, l); !ok {
				miss = append(miss, l)
			}
		}
		for _, l := range g {
			if _, ok := slices.BinarySearch(w, l); !ok {
				extra = append(extra, l)
			}
		}
		t.Fatalf("%s: %d quads, want %d\nmissing:\n\t%s\nextra:\n\t%s", what, len(got), len(want),
			strings.Join(miss, "\n\t"), strings.Join(extra, "\n\t"))
	}
}

// The graph's quads are the export's, as a whole and node by node, in every direction.
func TestGraphIsTheExport(t *testing.T) {
	for name, dsn := range graphBackends(t) {
		t.Run(name, func(t *testing.T) {
			f := graphStory(t, dsn(t))
			ctx := f.ctx
			qs, err := f.db.Graph(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer qs.Close()
			want := exportLines(t, ctx, f.db.Reader())
			got := lines(t, ctx, qs, qs.QuadsAllIterator())
			sameLines(t, "every quad", got, want)
			if len(got) != len(want) {
				t.Fatalf("%d quads, the export %d", len(got), len(want))
			}

			// Node by node: what the export has with the node in each direction.
			byDir := map[quad.Direction]map[quad.Value][]string{}
			nodes := map[quad.Value]bool{}
			for _, l := range want {
				q := parseLine(t, l)
				for _, d := range quad.Directions {
					if byDir[d] == nil {
						byDir[d] = map[quad.Value][]string{}
					}
					byDir[d][q.Get(d)] = append(byDir[d][q.Get(d)], l)
					nodes[q.Get(d)] = true
				}
			}
			for v := range nodes {
				r, err := qs.ValueOf(v)
				if err != nil || r == nil {
					t.Fatalf("ValueOf(%s) = %v, %v", v, r, err)
				}
				if back, _ := qs.NameOf(r); back != v {
					t.Fatalf("NameOf(ValueOf(%s)) = %s", v, back)
				}
				for _, d := range quad.Directions {
					sh := qs.QuadIterator(d, r)
					sameLines(t, fmt.Sprintf("%s of %s", d, v), lines(t, ctx, qs, sh), byDir[d][v])
					size, err := qs.QuadIteratorSize(ctx, d, r)
					if err != nil {
						t.Fatal(err)
					}
					if size.Exact && size.Value != int64(len(byDir[d][v])) {
						t.Fatalf("QuadIteratorSize(%s, %s) = %d exactly, want %d", d, v, size.Value, len(byDir[d][v]))
					}
				}
			}

			// The quads of mql:subject, mql:predicate and mql:name from a name, which the
			// graph finds through the index, are the export's.
			for v := range nodes {
				if _, ok := v.(quad.String); !ok {
					continue
				}
				for _, p := range []quad.IRI{codec.MQLSubject, codec.MQLPredicate, codec.MQLName} {
					var want []string
					for _, l := range byDir[quad.Object][v] {
						if q := parseLine(t, l); q.Predicate == p {
							want = append(want, string(q.Subject.(quad.IRI)))
						}
					}
					slices.Sort(want)
					want = slices.Compact(want)
					in := cayley.StartPath(qs, v).In(p)
					if got := walkValues(t, ctx, qs, in); !slices.Equal(got, want) {
						t.Fatalf("In(%s) from %s: %s, want %s", p, v, got, want)
					}
					if got := walkValues(t, ctx, qs, cayley.StartPath(qs).Has(p, v)); !slices.Equal(got, want) {
						t.Fatalf("Has(%s, %s): %s, want %s", p, v, got, want)
					}
					if it := in.BuildIterator(ctx); !strings.Contains(describeShape(it), "MQLQuads(predicate") {
						t.Fatalf("In(%s) from %s is not found through the index: %s", p, v, describeShape(it))
					}
				}
			}

			// Every quad is in the iterators of its own nodes, and not in another node's.
			all := qs.QuadsAllIterator().Iterate()
			other, _ := qs.ValueOf(quad.String("no such literal"))
			for all.Next(ctx) {
				ref := all.Result()
				q, _ := qs.Quad(ref)
				for _, d := range quad.Directions {
					r, _ := qs.ValueOf(q.Get(d))
					if !qs.QuadIterator(d, r).Lookup().Contains(ctx, ref) {
						t.Fatalf("%s iterator of %s does not contain %s", d, q.Get(d), q.NQuad())
					}
					if qs.QuadIterator(d, other).Lookup().Contains(ctx, ref) {
						t.Fatalf("%s iterator of another node contains %s", d, q.NQuad())
					}
					if n, _ := qs.QuadDirection(ref, d); n == nil || n.Key() != r.Key() {
						t.Fatalf("QuadDirection(%s, %s) = %v", q.NQuad(), d, n)
					}
				}
			}
			all.Close()

			// Every node once, and only nodes.
			var gotNodes []quad.Value
			it := qs.NodesAllIterator().Iterate()
			for it.Next(ctx) {
				v, _ := qs.NameOf(it.Result())
				gotNodes = append(gotNodes, v)
			}
			if err := it.Err(); err != nil {
				t.Fatal(err)
			}
			seen := map[quad.Value]bool{}
			for _, v := range gotNodes {
				if seen[v] || !nodes[v] {
					t.Fatalf("NodesAllIterator gives %s twice or a value no quad holds", v)
				}
				seen[v] = true
			}
			if len(seen) != len(nodes) {
				t.Fatalf("NodesAllIterator gives %d nodes, the export has %d", len(seen), len(nodes))
			}
			lookup := qs.NodesAllIterator().Lookup()
			for v := range nodes {
				if !lookup.Contains(ctx, mustRef(t, qs, v)) {
					t.Fatalf("the nodes do not contain %s", v)
				}
			}
			for _, v := range []quad.Value{quad.String("no such literal"), codec.ProvUsed, quad.Int(123456)} {
				if r, _ := qs.ValueOf(v); lookup.Contains(ctx, r) && !nodes[v] {
					t.Fatalf("the nodes contain %s", v)
				}
			}

			st, err := qs.Stats(ctx, true)
			if err != nil {
				t.Fatal(err)
			}
			if st.Quads.Value != int64(len(want)) || st.Nodes.Value != int64(len(nodes)) || !st.Quads.Exact || !st.Nodes.Exact {
				t.Fatalf("Stats %+v, want %d quads and %d nodes", st, len(want), len(nodes))
			}
			if n, _ := f.db.QuadCount(ctx); n != int64(len(want)) {
				t.Fatalf("QuadCount %d, the export has %d", n, len(want))
			}
		})
	}
}

func mustRef(t testing.TB, qs graph.QuadStore, v quad.Value) graph.Ref {
	t.Helper()
	r, err := qs.ValueOf(v)
	if err != nil || r == nil {
		t.Fatalf("ValueOf(%s) = %v, %v", v, r, err)
	}
	return r
}

// The graph stays as of the transaction it was made at; a reader's graph is as of the
// reader's transaction; it is the owner's, read-only, and ends with Close.
func TestGraphAsOf(t *testing.T) {
	f := graphStory(t, filepath.Join(t.TempDir(), "asof.db"))
	ctx := f.ctx
	qs, err := f.db.Graph(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before := exportLines(t, ctx, f.db.Reader())
	head, _ := f.db.Head(ctx)
	f.assert("Klarveld", "price", mql.Number(90), "orchestrator")
	f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: "later", From: []string{"Klarveld.price@1"}, By: "orchestrator"}))
	sameLines(t, "the graph after later writes", lines(t, ctx, qs, qs.QuadsAllIterator()), before)
	if r, _ := qs.ValueOf(codec.ArtifactIRI(record.ArtifactID{Name: "later", Version: 1})); r != nil {
		t.Fatal("a graph resolves an artifact recorded after it")
	}
	impact := walkValues(t, ctx, qs, cayley.StartPath(qs, codec.ClaimIRI(*claimID(t, "Klarveld.price@1"))).
		FollowRecursive(path.StartMorphism().In(codec.ProvWasDerivedFrom), 0, nil))
	if slices.Contains(impact, "urn:mql:artifact:later@1") {
		t.Fatal("an impact walk on the earlier graph reaches a later artifact")
	}

	past, err := f.db.AsOfTx(head - 3).Graph(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := past.(*quadstore.QuadStore).AsOf(); got != record.TxID(head-3) {
		t.Fatalf("AsOfTx(%d).Graph is as of %d", head-3, got)
	}
	sameLines(t, "the graph as of a transaction", lines(t, ctx, past, past.QuadsAllIterator()), exportLines(t, ctx, f.db.AsOfTx(head-3)))
	past.Close()

	if _, err := f.db.As("orchestrator").Graph(ctx); !errors.Is(err, mql.ErrInvalid) {
		t.Fatalf("a principal's graph: %v", err)
	}
	if g, err := f.db.As("owner").Graph(ctx); err != nil {
		t.Fatalf("the owner's graph through As: %v", err)
	} else {
		g.Close()
	}
	if err := qs.ApplyDeltas([]graph.Delta{{Quad: quad.Make("a", "b", "c", nil), Action: graph.Add}}, graph.IgnoreOpts{}); !errors.Is(err, quadstore.ErrReadOnly) {
		t.Fatalf("ApplyDeltas: %v", err)
	}
	if _, err := qs.NewQuadWriter(); !errors.Is(err, quadstore.ErrReadOnly) {
		t.Fatalf("NewQuadWriter: %v", err)
	}

	// An iterator stops at a cancelled context, with its error.
	cctx, cancel := context.WithCancel(ctx)
	it := qs.QuadsAllIterator().Iterate()
	if !it.Next(cctx) {
		t.Fatal("no first quad")
	}
	cancel()
	if it.Next(cctx) || !errors.Is(it.Err(), context.Canceled) {
		t.Fatalf("after cancel: %v", it.Err())
	}

	c1 := mustRef(t, qs, codec.ClaimIRI(*claimID(t, "Klarveld.price@1")))
	lines(t, ctx, qs, qs.QuadIterator(quad.Subject, c1)) // found through the index, and kept
	qs.Close()
	it = qs.QuadsAllIterator().Iterate()
	if it.Next(ctx) || !errors.Is(it.Err(), quadstore.ErrClosed) {
		t.Fatalf("after Close: %v", it.Err())
	}
	it = qs.QuadIterator(quad.Subject, c1).Iterate()
	if it.Next(ctx) || !errors.Is(it.Err(), quadstore.ErrClosed) {
		t.Fatalf("after Close, a node's quads: %v", it.Err())
	}
	if _, err := f.db.Live(ctx, "Klarveld.price"); err != nil {
		t.Fatalf("closing the graph closed the store: %v", err)
	}
}

// Cayley's backend "mql" opens a store by its DSN.
func TestGraphBackend(t *testing.T) {
	for _, name := range []string{"bbolt", "postgres"} {
		t.Run(name, func(t *testing.T) {
			dsn := graphBackends(t)[name](t)
			f := graphStory(t, dsn)
			want := exportLines(t, f.ctx, f.db.Reader())
			f.db.Close()
			h, err := cayley.NewGraph(quadstore.Backend, dsn, nil)
			if err != nil {
				t.Fatal(err)
			}
			sameLines(t, "the backend's quads", lines(t, f.ctx, h.QuadStore, h.QuadStore.QuadsAllIterator()), want)
			if err := h.AddQuad(quad.Make(quad.IRI("urn:x"), quad.IRI("urn:y"), "z", nil)); err == nil {
				t.Fatal("a write through Cayley succeeded")
			}
			h.Close()
			old, err := graph.NewQuadStore(quadstore.Backend, dsn, graph.Options{"tx": 3})
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := old.Stats(f.ctx, true); n.Quads.Value >= int64(len(want)) {
				t.Fatalf("the graph as of tx 3 has %d quads", n.Quads.Value)
			}
			old.Close()
		})
	}
	if _, err := graph.NewQuadStore(quadstore.Backend, filepath.Join(t.TempDir(), "none.db"), nil); !errors.Is(err, mql.ErrNoStore) {
		t.Fatalf("a missing store: %v", err)
	}
	if _, err := graph.NewQuadStore(quadstore.Backend, "memory:", nil); err == nil {
		t.Fatal("the backend opened a memory: store")
	}
}

func claimID(t testing.TB, s string) *record.ClaimID {
	t.Helper()
	id, err := record.ParseClaimID(s)
	if err != nil {
		t.Fatal(err)
	}
	return &id
}

// walkValues runs a path and returns its nodes as strings (IRIs without brackets), sorted.
func walkValues(t *testing.T, ctx context.Context, qs graph.QuadStore, p *path.Path) []string {
	t.Helper()
	vs, err := p.Iterate(ctx).AllValues(qs)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		if iri, ok := v.(quad.IRI); ok {
			out[i] = string(iri)
		} else {
			out[i] = v.String()
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// artifactID parses "name@N".
func artifactID(t *testing.T, ref string) record.ArtifactID {
	t.Helper()
	at := strings.LastIndexByte(ref, '@')
	n, err := strconv.Atoi(ref[at+1:])
	if at < 0 || err != nil {
		t.Fatalf("artifact reference %q", ref)
	}
	return record.ArtifactID{Name: ref[:at], Version: n}
}

func artifactIRIs(t *testing.T, refs []string) []string {
	t.Helper()
	var out []string
	for _, r := range refs {
		out = append(out, string(codec.ArtifactIRI(artifactID(t, r))))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func claimIRIs(t *testing.T, refs []string) []string {
	t.Helper()
	var out []string
	for _, r := range refs {
		out = append(out, string(codec.ClaimIRI(*claimID(t, r))))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// walkStory: a claim with five versions (each from its own source, one revoked and replaced),
// and artifacts over versions of it and over each other, some superseded, with diamonds.
func walkStory(t *testing.T, dsn string) *fixture {
	f := openDSN(t, dsn, mql.Options{}).team()
	for i := range 5 {
		f.assert("Klarveld", "price", mql.Number(float64(40+i)), "worker-3", fmt.Sprintf("src:k%d", i))
	}
	f.assert("Klarveld", "soc2", mql.Bool(true), "worker-7", "src:trust", "src:k0")
	f.ok(f.db.Revoke(f.ctx, mql.RevokeSpec{Claim: "Klarveld.price@5", By: "owner", Because: "typo", ReplacedBy: "Klarveld.price@4"}))
	f.ok(f.db.Assert(f.ctx, mql.AssertSpec{Subject: "Klarveld", Predicate: "price", Value: mql.Number(1), By: "worker-7", Kind: mql.Inferred})) // contests @4
	for _, d := range []struct{ name, from string }{
		{"a", "Klarveld.price@1"}, {"b", "Klarveld.price@1,Klarveld.soc2"}, {"c", "a,b"}, {"d", "c,a"},
		{"e", "d"}, {"a", "Klarveld.price@2"}, {"f", "a@1,Klarveld.price@3"}, {"g", "f,e"}, {"h", "Klarveld.soc2"},
	} {
		f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: d.name, From: strings.Split(d.from, ","), By: "orchestrator"}))
	}
	f.ok(f.db.Review(f.ctx, mql.ReviewSpec{Artifact: "c", By: "alice", Because: "ok"}))
	return f
}

// Impact and why walked through Cayley's path API on the graph give what mql's Impact and Why
// give.
func TestGraphWalks(t *testing.T) {
	for name, dsn := range graphBackends(t) {
		t.Run(name, func(t *testing.T) {
			f := walkStory(t, dsn(t))
			ctx := f.ctx
			qs, err := f.db.Graph(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer qs.Close()
			derivedFrom := path.StartMorphism().In(codec.ProvWasDerivedFrom)
			for _, ref := range []string{"Klarveld.price@1", "Klarveld.price@2", "Klarveld.price@3", "Klarveld.soc2@1", "a@1", "b@1", "e@1", "Klarveld.price@6"} {
				r, err := f.db.Impact(ctx, ref, 0)
				if err != nil {
					t.Fatal(err)
				}
				var refs []string
				for _, d := range r.Dependents {
					refs = append(refs, d.Artifact.Ref)
				}
				var start quad.IRI
				if strings.Contains(ref, ".") {
					start = codec.ClaimIRI(*claimID(t, ref))
				} else {
					start = codec.ArtifactIRI(artifactID(t, ref))
				}
				got := walkValues(t, ctx, qs, cayley.StartPath(qs, start).FollowRecursive(derivedFrom, 0, nil))
				if ref == "Klarveld.price@1" && len(refs) < 7 {
					t.Fatalf("impact %s: %d dependents", ref, len(refs))
				}
				if want := artifactIRIs(t, refs); !slices.Equal(got, want) {
					t.Errorf("impact %s through Cayley:\n\t%s\nmql:\n\t%s", ref, strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
				}
			}

			// why of a key: its versions back through prov:wasRevisionOf, and the sources of
			// each.
			n, err := f.db.Why(ctx, "Klarveld.price")
			if err != nil {
				t.Fatal(err)
			}
			var versions, sources []string
			for c := n; c != nil; {
				versions = append(versions, c.Claim.Ref)
				var next *mql.Node
				for _, ch := range c.Children {
					switch {
					case ch.Kind == mql.NodeSource:
						sources = append(sources, "urn:mql:source:"+ch.Source.ID)
					case ch.Relation == "supersedes":
						next = ch
					}
				}
				c = next
			}
			slices.Sort(sources)
			live := codec.ClaimIRI(*claimID(t, n.Claim.Ref))
			chain := cayley.StartPath(qs, live).FollowRecursive(codec.ProvWasRevisionOf, 0, nil)
			gotVersions := walkValues(t, ctx, qs, chain.Clone().Or(cayley.StartPath(qs, live)))
			if want := claimIRIs(t, versions); !slices.Equal(gotVersions, want) || len(want) < 4 {
				t.Errorf("why's versions through Cayley:\n\t%s\nmql:\n\t%s", strings.Join(gotVersions, "\n\t"), strings.Join(want, "\n\t"))
			}
			gotSources := walkValues(t, ctx, qs, chain.Clone().Or(cayley.StartPath(qs, live)).Out(codec.ProvHadPrimarySource))
			if !slices.Equal(gotSources, slices.Compact(sources)) {
				t.Errorf("why's sources through Cayley:\n\t%s\nmql:\n\t%s", strings.Join(gotSources, "\n\t"), strings.Join(sources, "\n\t"))
			}
			// why of the contesting version: the claim it contests.
			n, err = f.db.Why(ctx, "Klarveld.price@6")
			if err != nil {
				t.Fatal(err)
			}
			var contested []string
			for _, ch := range n.Children {
				if ch.Relation == "contests" {
					contested = append(contested, ch.Claim.Ref)
				}
			}
			c6 := codec.ClaimIRI(*claimID(t, "Klarveld.price@6"))
			if got := walkValues(t, ctx, qs, cayley.StartPath(qs, c6).Out(codec.MQLContests)); len(contested) != 1 || !slices.Equal(got, claimIRIs(t, contested)) {
				t.Errorf("why's contested claim through Cayley: %s, mql: %s", got, contested)
			}

			// why of an artifact: its inputs, claims and artifacts, all the way down, and the
			// claims' sources.
			n, err = f.db.Why(ctx, "g")
			if err != nil {
				t.Fatal(err)
			}
			var inputs []string
			sources = nil
			var walk func(n *mql.Node)
			walk = func(n *mql.Node) {
				for _, ch := range n.Children {
					switch {
					case ch.Relation == "derived from" && ch.Kind == mql.NodeArtifact:
						inputs = append(inputs, artifactIRIs(t, []string{ch.Artifact.Ref})...)
					case ch.Relation == "derived from" && ch.Kind == mql.NodeClaim:
						inputs = append(inputs, claimIRIs(t, []string{ch.Claim.Ref})...)
					case ch.Kind == mql.NodeSource:
						sources = append(sources, "urn:mql:source:"+ch.Source.ID)
					}
					walk(ch)
				}
			}
			walk(n)
			slices.Sort(inputs)
			slices.Sort(sources)
			g := codec.ArtifactIRI(record.ArtifactID{Name: "g", Version: 1})
			down := cayley.StartPath(qs, g).FollowRecursive(codec.ProvWasDerivedFrom, 0, nil)
			if len(inputs) < 8 || len(sources) < 3 {
				t.Fatalf("why g: %d inputs, %d sources", len(inputs), len(sources))
			}
			if got := walkValues(t, ctx, qs, down); !slices.Equal(got, slices.Compact(inputs)) {
				t.Errorf("why g's inputs through Cayley:\n\t%s\nmql:\n\t%s", strings.Join(got, "\n\t"), strings.Join(inputs, "\n\t"))
			}
			if got := walkValues(t, ctx, qs, down.Clone().Out(codec.ProvHadPrimarySource)); !slices.Equal(got, slices.Compact(sources)) {
				t.Errorf("why g's sources through Cayley:\n\t%s\nmql:\n\t%s", strings.Join(got, "\n\t"), strings.Join(sources, "\n\t"))
			}

			// A walk that starts from a literal: the claims about Klarveld, by predicate.
			got := walkValues(t, ctx, qs, cayley.StartPath(qs, quad.String("Klarveld")).In(codec.MQLSubject).Has(codec.MQLPredicate, quad.String("soc2")))
			if want := claimIRIs(t, []string{"Klarveld.soc2@1"}); !slices.Equal(got, want) {
				t.Errorf("claims of Klarveld.soc2 through Cayley: %s", got)
			}
		})
	}
}

// A scan reads the transactions in batches, a snapshot each: across batches, and through a
// transaction larger than a batch, it gives every quad once.
func TestGraphBatches(t *testing.T) {
	f := open(t, mql.Options{}).team()
	for i := range 300 {
		f.assert(fmt.Sprintf("S%d", i%40), "p", mql.Number(float64(i)), "worker-3", fmt.Sprintf("src:%d", i%7))
	}
	var specs []mql.AssertSpec
	for i := range 1500 {
		specs = append(specs, mql.AssertSpec{Subject: fmt.Sprintf("B%d", i), Predicate: "q", Value: mql.String("x"), By: "worker-7"})
	}
	if _, err := f.db.AssertBatch(f.ctx, "worker-7", specs); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		f.ok(f.db.Derive(f.ctx, mql.DeriveSpec{Artifact: fmt.Sprintf("a%d", i), From: []string{fmt.Sprintf("S%d.p", i%40)}, By: "orchestrator"}))
	}
	ctx := f.ctx
	qs, err := f.db.Graph(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer qs.Close()
	want := exportLines(t, ctx, f.db.Reader())
	got := lines(t, ctx, qs, qs.QuadsAllIterator())
	if len(got) != len(want) {
		t.Fatalf("%d quads, the export has %d", len(got), len(want))
	}
	sameLines(t, "every quad", got, want)
	count := func(sh iterator.Shape) int { return len(lines(t, ctx, qs, sh)) }
	if n := count(qs.QuadIterator(quad.Predicate, mustRef(t, qs, codec.MQLSubject))); n != 1800 {
		t.Fatalf("%d quads of mql:subject, want 1800", n)
	}
	if n := count(qs.QuadIterator(quad.Object, mustRef(t, qs, quad.String("x")))); n != 1500 {
		t.Fatalf("%d quads with the value \"x\", want 1500", n)
	}
	if n := count(qs.QuadIterator(quad.Object, mustRef(t, qs, codec.PrincipalIRI("worker-3")))); n < 300 {
		t.Fatalf("%d quads point at worker-3", n)
	}
	st, err := qs.Stats(ctx, false)
	if err != nil || st.Quads.Exact || st.Quads.Value < int64(len(want))/2 || st.Quads.Value > 2*int64(len(want)) {
		t.Fatalf("estimated %+v for %d quads", st, len(want))
	}
}

func describeShape(sh iterator.Shape) string {
	var b strings.Builder
	var walk func(iterator.Shape, string)
	walk = func(sh iterator.Shape, indent string) {
		b.WriteString(indent + sh.String() + "\n")
		for _, s := range sh.SubIterators() {
			walk(s, indent+"  ")
		}
	}
	walk(sh, "")
	return b.String()
}
