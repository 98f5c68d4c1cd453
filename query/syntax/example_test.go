package syntax_test

import (
	"errors"
	"fmt"

	"github.com/mql-dev/mql/query/syntax"
)

func ExampleParse() {
	script, err := syntax.Parse("story.mql", `
principal worker-3 agent
assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0" confidence 0.9
derive plan:pick-vendor from Klarveld.price_per_seat,
    Brimsole.price_per_seat by orchestrator   -- continued: the line above ends with ","
as of tx 42 impact Klarveld.price_per_seat@1 depth 2; stats
`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, st := range script.Stmts {
		fmt.Printf("%s  %T\n", st.Pos(), st)
	}
	a := script.Stmts[1].(*syntax.Assert)
	fmt.Println(a.Key.Subject, a.Key.Predicate, a.Value.Num, *a.Confidence, a.Sources[0].ID)
	fmt.Print(script)
	// Output:
	// story.mql:2:1  *syntax.Principal
	// story.mql:3:1  *syntax.Assert
	// story.mql:4:1  *syntax.Derive
	// story.mql:6:1  *syntax.Impact
	// story.mql:6:55  *syntax.Stats
	// Klarveld price_per_seat 44 0.9 src:Klarveld:rev0
	// principal worker-3 agent
	// assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0" confidence 0.9
	// derive plan:pick-vendor from Klarveld.price_per_seat, Brimsole.price_per_seat by orchestrator
	// as of tx 42 impact Klarveld.price_per_seat@1 depth 2
	// stats
}

func ExampleParse_errors() {
	_, err := syntax.Parse("audit.mql", "live Klarveld\nimpact Klarveld.price@ depth 2\nasert K.p = 1 by w\n")
	fmt.Println(errors.Is(err, syntax.ErrSyntax))
	var list syntax.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			fmt.Println(e.Pos.Line, e.Pos.Column, e.Msg[:min(len(e.Msg), 60)])
		}
	}
	// Output:
	// true
	// 2 24 expected version number after "@", found "depth"
	// 3 1 unknown statement "asert"; expected one of principal, grant,
}

func ExampleParseStmt() {
	st, err := syntax.ParseStmt("repl", `as architect why plan:pick-vendor@2`)
	if err != nil {
		fmt.Println(err)
		return
	}
	why := st.(*syntax.Why)
	fmt.Println(why.Mods.As, why.Node.Subject, why.Node.IsClaim(), why.Node.Version)

	_, err = syntax.ParseStmt("repl", `assert Klarveld.price_per_seat = 44 by worker-3 confidence 1.5`)
	fmt.Println(err)
	// Output:
	// architect plan:pick-vendor false 2
	// repl:1:60: confidence must be between 0 and 1
}

func ExampleComplete() {
	// A REPL keeps reading lines while the input so far ends mid-statement.
	for _, input := range []string{
		"stats",
		"assert Klarveld.price_per_seat = ",
		"derive plan:x from A.b,",
		"derive plan:x from A.b,\n  C.d by orchestrator",
		`review plan:x by alice because "still typing`,
		"asert K.p", // an error, but more input would not fix it
	} {
		fmt.Printf("%-45q %v\n", input, syntax.Complete(input))
	}
	// Output:
	// "stats"                                       true
	// "assert Klarveld.price_per_seat = "           false
	// "derive plan:x from A.b,"                     false
	// "derive plan:x from A.b,\n  C.d by orchestrator" true
	// "review plan:x by alice because \"still typing" false
	// "asert K.p"                                   true
}
