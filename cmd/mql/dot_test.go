package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// graphviz returns the path of Graphviz's dot, skipping the test without it (failing in CI,
// which installs it).
func graphviz(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("dot")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("Graphviz's dot is not installed; CI must install it (apt-get install graphviz)")
		}
		t.Skip("Graphviz's dot is not installed (apt-get install graphviz)")
	}
	return p
}

// renderSVG pipes DOT text through `dot -Tsvg` and returns the SVG.
func renderSVG(t *testing.T, dot, src string) string {
	t.Helper()
	cmd := exec.Command(dot, "-Tsvg")
	cmd.Stdin = strings.NewReader(src)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil || errb.Len() > 0 || !strings.Contains(out.String(), "<svg") {
		t.Fatalf("dot -Tsvg: %v\n%s\n--- input ---\n%s", err, errb.String(), src)
	}
	return out.String()
}

// The README's session: `mql -c 'why …' --format dot` and impact, as the golden file shows
// them, and both parse with Graphviz.
func TestDotGolden(t *testing.T) {
	dir := testEnv(t)
	db := filepath.Join(dir, "team.db")
	if _, errOut, code := mqlRun(t, "", "-c", `principal worker-3 agent
principal worker-7 agent
principal orchestrator agent
assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0"
derive plan:pick-vendor from Klarveld.price_per_seat by orchestrator
assert Klarveld.price_per_seat = 89 by worker-7 from "src:Klarveld:rev1"`, db); code != 0 {
		t.Fatalf("setup: %d %s", code, errOut)
	}
	out, errOut, code := mqlRun(t, "", "--format", "dot", "-c", "why Klarveld.price_per_seat\nimpact Klarveld.price_per_seat@1", db)
	checkGolden(t, "testdata/procurement.dot.golden", golden(out, errOut, code))
	if dot, err := exec.LookPath("dot"); err == nil {
		renderSVG(t, dot, out)
	}
	// Any other read is refused, with what to do instead.
	_, errOut, code = mqlRun(t, "", "--format", "dot", "-c", "live Klarveld", db)
	if code != exitFailed || !strings.Contains(errOut, "the dot format draws why and impact only") || !strings.Contains(errOut, "--format table, tree, json or csv") {
		t.Errorf("live in dot: exit %d, %q", code, errOut)
	}
}

// Every why and impact of every scenario (the scripts of testdata and the demo) — each one the
// scripts ask, and one for every claim version and artifact version they leave — draws a
// graph that Graphviz's dot parses.
func TestDotParsesForEveryScenario(t *testing.T) {
	dot := graphviz(t)
	scripts := map[string]string{"demo.mql": demoScript}
	files, _ := filepath.Glob("testdata/*.mql")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scripts[f] = string(b)
	}
	scripts["hostile"] = `principal w agent
assert K.p = "a\"b\\c}{<td>\n\x1b[31m\u202e" by w from "src:\"x\"\\y\x07" excerpt "} -> n0 [label=\"pwned\"]; {" uri "javascript:alert(1)" revision "r\"1"
derive plan:x from K.p by w
assert K.p = "fine" by w from "ok"
revoke K.p@2 by w because "\" ]; n9 [label=\"injected\"]; //" replaced by K.p@1`
	total := 0
	for name, src := range scripts {
		t.Run(filepath.Base(name), func(t *testing.T) {
			ctx := context.Background()
			db, err := mql.Open(ctx, "memory:", mql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			sess := query.NewSession(db, db.Owner())
			script, _ := query.Parse(name, src)
			var asked []*query.Result
			for _, st := range script.Stmts {
				res, err := sess.Eval(ctx, st)
				if err == nil && (res.Why != nil || res.Impact != nil) {
					asked = append(asked, res)
				}
			}
			var refs []string
			cat, err := db.Reader().Catalog(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range append(cat.Keys, cat.Artifacts...) {
				h, err := db.History(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range h.Claims {
					refs = append(refs, c.Ref)
				}
				for _, a := range h.Artifacts {
					refs = append(refs, a.Ref)
				}
			}
			for _, ref := range refs {
				for _, stmt := range []string{"why " + ref, "impact " + ref} {
					st, err := query.ParseStmt("test", stmt)
					if err != nil {
						t.Fatal(err)
					}
					res, err := sess.Eval(ctx, st)
					if err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
					asked = append(asked, res)
				}
			}
			if len(asked) == 0 {
				t.Skip("no graph in this scenario")
			}
			for _, res := range asked {
				out, err := output.Render(res, output.Style{Format: output.FormatDOT})
				if err != nil {
					t.Fatalf("%s: %v", res.Statement, err)
				}
				svg := renderSVG(t, dot, out)
				total++
				// Each node of the DOT text is one node of the picture: no string made a node of
				// its own or ended its label early.
				if nodes := regexp.MustCompile(`(?m)^  n[0-9]+ \[`).FindAllString(out, -1); strings.Count(svg, `class="node"`) != len(nodes) {
					t.Errorf("%s: %d nodes in the DOT text, %d in the picture:\n%s", res.Statement, len(nodes), strings.Count(svg, `class="node"`), out)
				}
				if strings.ContainsAny(svg, "\x1b\x07\u202e") || strings.Contains(svg, ">injected<") {
					t.Errorf("%s: a raw control character or an injected node:\n%s", res.Statement, svg)
				}
			}
		})
	}
	t.Logf("%d graphs parsed by dot", total)
}

// Reads without a graph are refused with ErrNoGraph; writes are comment lines.
func TestDotRefusesOtherReads(t *testing.T) {
	ctx := context.Background()
	db, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sess := query.NewSession(db, db.Owner())
	for _, stmt := range []string{"principal w agent", `assert K.p = 1 by w`, "live *", "stats", "history K.p", "conflicts", `context *`, "revoked-by K.p@1", "find ?s where ?s.p = 1", "beliefs K.p"} {
		st, err := query.ParseStmt("test", stmt)
		if err != nil {
			t.Fatal(err)
		}
		res, err := sess.Eval(ctx, st)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		out, err := output.Render(res, output.Style{Format: output.FormatDOT})
		if query.IsRead(st) {
			if !errors.Is(err, output.ErrNoGraph) {
				t.Errorf("%s in dot: %q, %v", stmt, out, err)
			}
		} else if err != nil || !strings.HasPrefix(out, "// ") || strings.Count(out, "\n") != 1 {
			t.Errorf("%s in dot: %q, %v", stmt, out, err)
		}
	}
}
