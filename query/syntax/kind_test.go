package syntax

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// stmtTypes names every statement type of the package, found as the receivers of stmtNode in
// its source, so that a statement added to the grammar is missing from a table until it is
// classified.
func stmtTypes(t *testing.T) []string {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv == nil || fn.Name.Name != "stmtNode" {
				continue
			}
			if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
				if id, ok := star.X.(*ast.Ident); ok {
					names = append(names, id.Name)
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatal("no statement types found")
	}
	return names
}

// TestIsRead classifies one statement of every kind the grammar has: whether it only reads
// (IsRead), is a read at all and for which run (ReadFor), and is transaction control.
func TestIsRead(t *testing.T) {
	tests := []struct {
		src     string
		read    bool   // IsRead
		isRead  bool   // ReadFor's ok
		run     string // ReadFor's run
		control bool   // IsControl
	}{
		{src: `principal harry user`},
		{src: `grant alice grant on * by owner`},
		{src: `assert Diary.holds = true by seeker-1`},
		{src: `revoke Klarveld.price@1 by alice because "misread"`},
		{src: `confirm Brimsole.soc2 by alice`},
		{src: `derive plan:pick from Klarveld.price by orchestrator`},
		{src: `review plan:pick@2 by alice`},
		{src: `outcome run r-1 succeeded by alice`},
		{src: `decay holds half-life 2d`},
		{src: `begin`, control: true},
		{src: `commit`, control: true},
		{src: `rollback`, control: true},
		{src: `live Klarveld`, read: true, isRead: true},
		{src: `as of tx 3 live Klarveld`, read: true, isRead: true},
		{src: `live Klarveld for run r-1`, isRead: true, run: "r-1"},
		{src: `find ?v where ?v.soc2 = true`, read: true, isRead: true},
		{src: `find ?v where ?v.soc2 = true for run r-1`, isRead: true, run: "r-1"},
		{src: `why Klarveld.price`, read: true, isRead: true},
		{src: `why Klarveld.price for run r-1`, isRead: true, run: "r-1"},
		{src: `revoked-by Klarveld.price@1`, read: true, isRead: true},
		{src: `revoked-by Klarveld.price@1 for run r-1`, isRead: true, run: "r-1"},
		{src: `impact Klarveld.price@1`, read: true, isRead: true},
		{src: `impact Klarveld.price@1 for run r-1`, isRead: true, run: "r-1"},
		{src: `history Klarveld.price`, read: true, isRead: true},
		{src: `history Klarveld.price for run r-1`, isRead: true, run: "r-1"},
		{src: `conflicts Ring, Locket`, read: true, isRead: true},
		{src: `conflicts Ring, Locket for run r-1`, isRead: true, run: "r-1"},
		{src: `beliefs *.holds`, read: true, isRead: true},
		{src: `beliefs *.holds for run r-1`, isRead: true, run: "r-1"},
		{src: `context Klarveld budget 60`, read: true, isRead: true},
		{src: `context Klarveld budget 60 for run r-1`, isRead: true, run: "r-1"},
		{src: `search "EU pricing"`, read: true, isRead: true},
		{src: `search "EU pricing" for run r-1`, isRead: true, run: "r-1"},
		{src: `stats`, read: true, isRead: true},
		{src: `run r-1`, read: true, isRead: true},
		{src: `runs`, read: true, isRead: true},
		{src: `principals`, read: true, isRead: true},
		{src: `grants`, read: true, isRead: true},
		{src: `subjects`, read: true, isRead: true},
		{src: `predicates`, read: true, isRead: true},
		{src: `artifacts`, read: true, isRead: true},
		{src: `sources`, read: true, isRead: true},
		{src: `describe Klarveld`, read: true, isRead: true},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		s, err := Parse("test", tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		if len(s.Stmts) != 1 {
			t.Fatalf("%s: %d statements", tc.src, len(s.Stmts))
		}
		st := s.Stmts[0]
		seen[reflect.TypeOf(st).Elem().Name()] = true
		if got := IsRead(st); got != tc.read {
			t.Errorf("IsRead(%s) = %v, want %v", tc.src, got, tc.read)
		}
		if run, ok := ReadFor(st); ok != tc.isRead || run != tc.run {
			t.Errorf("ReadFor(%s) = %q, %v, want %q, %v", tc.src, run, ok, tc.run, tc.isRead)
		}
		if got := IsControl(st); got != tc.control {
			t.Errorf("IsControl(%s) = %v, want %v", tc.src, got, tc.control)
		}
	}
	for _, name := range stmtTypes(t) {
		if !seen[name] {
			t.Errorf("no statement of type %s in the table: classify it", name)
		}
	}
}
