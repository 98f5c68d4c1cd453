package mcpserver_test

import (
	"strings"
	"testing"
)

// Arguments that do not fit a tool's schema are refused with the rule said in words a model
// can act on: what is wrong, where, and what would do; never the schema's regular expression
// or a validator's internals.
func TestSchemaErrorsInWords(t *testing.T) {
	db := openStore(t, "memory:", newClock())
	team(t, db)
	w3 := connect(t, db, "worker-3")
	before := w3.stats()
	k := func(extra ...any) map[string]any {
		m := map[string]any{"subject": "Klarveld", "predicate": "price_per_seat", "value": 44}
		for i := 0; i < len(extra); i += 2 {
			m[extra[i].(string)] = extra[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"assert", k("subject", "Klar veld"), `subject "Klar veld" is not a name: letters and digits (of any script), _ : and /, with single dashes between them, starting with a letter or _, such as "Klarveld"`},
		{"assert", k("predicate", "1st"), `predicate "1st" is not a name: letters and digits`},
		{"assert", k("seen_by", []any{"worker-3", "a b"}), `seen_by[1] "a b" is not a name`},
		{"assert", k("valid_until", "next year"), `valid_until "next year" is not a date "2027-01-01" (midnight UTC) or an RFC 3339 time "2027-01-01T10:00:00Z"`},
		{"assert", k("confidence", 1.5), `confidence is 1.5: it must be from 0 to 1`},
		{"assert", k("kind", "confirmed"), `kind is "confirmed": it must be one of "observed", "inferred"`},
		{"assert", k("value", nil), `value must be a string, a number or a boolean (true or false), not null`},
		{"assert", k("subject", 7), `subject must be a string, not a whole number`},
		{"assert", k("by", "alice"), `"by" is not an argument of assert: its arguments are subject, predicate, value,`},
		{"assert", k("sources", []any{map[string]any{"id": ""}}), `sources[0].id is empty`},
		{"assert", k("sources", []any{map[string]any{"url": "x"}}), `"url" is not a field of sources[0]: its fields are id, excerpt, uri, revision`},
		{"assert", map[string]any{"subject": "Klarveld", "predicate": "price_per_seat"}, `value is missing: assert needs subject, predicate, value`},
		{"revoke", map[string]any{"claim": "Klarveld.price_per_seat"}, `claim "Klarveld.price_per_seat" is not a claim version Subject.predicate@N, such as "Klarveld.price_per_seat@2"`},
		{"derive", map[string]any{"artifact": "plan:x", "from": []any{}}, `from is empty: give at least 1`},
		{"derive", map[string]any{"artifact": "plan:x", "from": []any{"Klarveld price"}}, `from[0] "Klarveld price" is not a subject, a key Subject.predicate or an artifact, with @N for one version`},
		{"review", map[string]any{"artifact": "plan:x.y"}, `artifact "plan:x.y" is not an artifact's name, with @N for one version, such as "plan:pick-vendor" or "plan:pick-vendor@1" (no ".")`},
		{"context", map[string]any{"subjects": []any{"a b"}}, `subjects[0] "a b" is not a subject's name, or "*" for every subject`},
		{"context", map[string]any{"subjects": []any{"Klarveld"}, "budget": 2.5}, `budget is 2.5: it must be a whole number`},
		{"impact", map[string]any{"ref": "Klarveld.price_per_seat@1", "depth": -1}, `depth is -1: it must be 0 or more`},
		{"query", map[string]any{}, `statement is missing: query needs statement`},
		{"query", map[string]any{"statement": "stats", "run": "r 17"}, `run "r 17" is not a name`},
	} {
		msg := w3.fail(tc.tool, tc.args, tc.want)
		for _, bad := range []string{"regular expression", `\x`, "^", "validating", "/properties", "reflect"} {
			if strings.Contains(msg, bad) {
				t.Errorf("%s %v: the error speaks the schema (%q): %s", tc.tool, tc.args, bad, msg)
			}
		}
	}
	if after := w3.stats(); mustJSON(after) != mustJSON(before) {
		t.Fatalf("refused calls changed the store:\n%+v\n%+v", before, after)
	}
}
