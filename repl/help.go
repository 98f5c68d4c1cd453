package repl

import (
	"fmt"
	"io"
	"strings"
)

// StatementHelp is the help for one statement: its syntax and an example.
type StatementHelp struct {
	Name    string
	Summary string
	Syntax  string
	Example string
}

// Statements is the help for every statement of the language, writes first.
var Statements = []StatementHelp{
	{"principal", "record an actor", `principal NAME user|agent|tool`, `principal worker-3 agent`},
	{"grant", "give a principal a right over a scope", `grant PRINCIPAL assert|revoke|confirm|grant on *|predicate|Subject.*|Subject.predicate by PRINCIPAL`, `grant worker-3 assert on price_per_seat by alice`},
	{"assert", "record a claim", `assert Subject.predicate = VALUE by PRINCIPAL
    [from "SOURCE" [excerpt "TEXT"] [uri "URI"] [revision "REV"], ...]
    [confidence 0..1] [kind observed|inferred]
    [valid from TIME] [valid until TIME] [seen by PRINCIPAL, ...]

A claim with a source is observed, one without is inferred (unless kind says). A claim
supersedes the live one when its kind ranks as high (confirmed > observed > inferred);
otherwise it is recorded as contested: an inferred claim (no source) cannot supersede an
observed one, so name a source. The receipt says so.`, `assert Klarveld.price_per_seat = 44 by worker-3 from "src:Klarveld:rev0" confidence 0.9`},
	{"revoke", "declare a claim version no longer valid", `revoke Subject.predicate@N by PRINCIPAL [because "WHY"] [replaced by Subject.predicate@M]`, `revoke Klarveld.price_per_seat@2 by alice because "misread the page" replaced by Klarveld.price_per_seat@3`},
	{"confirm", "confirm the live claim as a user", `confirm Subject.predicate[@N] by PRINCIPAL`, `confirm Brimsole.soc2 by alice`},
	{"derive", "record an artifact derived from claims and artifacts", `derive ARTIFACT from REF, ... by PRINCIPAL [confidence 0..1] [seen by PRINCIPAL, ...] [in run RUN]

With in run, the artifact is a decision of the deriver's run RUN, citing its inputs.`, `derive plan:pick-vendor from Klarveld.price_per_seat, Brimsole.price_per_seat by orchestrator`},
	{"review", "record that an artifact was looked at again", `review ARTIFACT[@N] by PRINCIPAL [because "WHY"]`, `review plan:pick-vendor by alice because "re-checked against the new price"`},
	{"decay", "give a predicate a confidence half-life", `decay PREDICATE half-life DURATION`, `decay signal half-life 10m`},
	{"outcome", "record how a run ended", `outcome run RUN succeeded|failed|declined [by PRINCIPAL] [because "WHY"]

declined: the agent said it lacked the evidence to act. The last outcome recorded counts.`, `outcome run r-17 failed by worker-3 because "paid 89, not 44"`},
	{"live", "the live claims matching a pattern", `live Subject | Subject.predicate | *.predicate [where value =|!=|<|<=|>|>= VALUE]`, `live *.soc2 where value = true`},
	{"find", "conjunctive patterns over live claims", `find ?v, ... where ?v.predicate OP VALUE|?w, ... [order by ?v [asc|desc], ...] [limit N]`, `find ?v, ?p where ?v.soc2 = true, ?v.price_per_seat = ?p order by ?p limit 1`},
	{"why", "the provenance tree of a claim or artifact", `why Subject.predicate[@N] | ARTIFACT[@N]`, `why Klarveld.price_per_seat`},
	{"revoked-by", "who revoked a claim version, when, why, with what standing", `revoked-by Subject.predicate@N`, `revoked-by Klarveld.price_per_seat@2`},
	{"impact", "every artifact that depends on a claim or artifact", `impact Subject.predicate[@N] | ARTIFACT[@N] [depth N]`, `impact Klarveld.price_per_seat@1 depth 3`},
	{"history", "every version of a key or artifact", `history Subject.predicate | ARTIFACT`, `history Klarveld.price_per_seat`},
	{"conflicts", "contested claims beside the live claim they dispute", `conflicts [Subject, ...]`, `conflicts Klarveld`},
	{"beliefs", "the distribution of confidence over candidates, and the gate's decision", `beliefs PATTERN [gate LOW HIGH]`, `beliefs *.holds_horcrux gate 1.0 2.5`},
	{"context", "compact working context for a model", `context Subject, ... | * | for "QUESTION" [budget TOKENS]

One line per subject with its live claims, in the order asked, until the budget is spent; a
last line names the subjects left out. for "QUESTION": the live claims search finds for the
question, each subject's matching claims in one line, the best match first.`, `context for "EU pricing for the team plan" budget 60`},
	{"search", "the live claims whose text best matches, best first (BM25)", `search "TEXT" [on PATTERN, ...] [vector "V"] [signals NAME, ...] [limit N] [history]

A claim's text is its subject and predicate (split into words: price_per_seat, pricePerSeat),
its value when a string and its sources' excerpts. Words are matched after case folding and
English stemming ("pricing" finds "prices", "buy" finds "bought"); a word of the search that a
claim's subject holds weighs more (the subject signal). vector ranks the claims that carry one
by cosine similarity too, fused by reciprocal rank; signals text, subject, vector names those
to rank by. Only live claims are answers (history: every version, each with its state); scores
count only what the reader may see. limit defaults to 20.`, `search "EU pricing for the team plan" on Klarveld.*, *.price_per_seat limit 10`},
	{"stats", "claims by state, reviews due, stale rate; the memory metrics of the runs", `stats [for PRINCIPAL] [since TIME]

for and since narrow the memory metrics to one principal's runs, and to the runs begun at or
after TIME.`, `stats for worker-3 since 2026-11-01`},
	{"run", "what was served to a run, what it decided, how it ended: memory or downstream", `run RUN`, `run r-17`},
	{"runs", "the runs, one line each", `runs [PRINCIPAL] [since TIME]`, `runs worker-3 since 2026-11-01`},
	{"principals", "the principals, with the rights each holds", `principals [PATTERN]`, `principals worker*`},
	{"grants", "the grants, or those one principal holds", `grants [PRINCIPAL]`, `grants worker-3`},
	{"subjects", "the subjects, with counts of their claims", `subjects [PATTERN]`, `subjects Kl*`},
	{"predicates", "the predicates, with value type, half-life and counts", `predicates [PATTERN]`, `predicates price*`},
	{"artifacts", "the artifacts, with their newest version", `artifacts [PATTERN]`, `artifacts plan:*`},
	{"sources", "the sources cited by claims", `sources [PATTERN | "PATTERN"]`, `sources "src:Klarveld:*"`},
	{"describe", "what a name is: principal, subject, predicate or artifact", `describe NAME`, `describe Klarveld`},
	{"begin", "start a transaction: the statements up to commit run together, all or nothing", `begin`, "begin\nassert Klarveld.price_per_seat = 89 by worker-7 from \"src:Klarveld:rev1\"\nderive plan:pick-vendor from Klarveld.price_per_seat by orchestrator\ncommit"},
	{"commit", "run the statements since begin as one transaction", `commit`, `commit`},
	{"rollback", "discard the statements since begin", `rollback`, `rollback`},
}

// statementGroups are the headings of \help: the index in Statements each starts at.
var statementGroups = []struct {
	at    int
	title string
}{{0, "Writes:"}, {9, "Reads:"}, {22, "What the store holds (PATTERN: names and *, as Kl* or plan:*):"}, {29, "Transactions:"}}

// modifierHelp explains the read modifiers.
const modifierHelp = `Reads may be prefixed by modifiers:
  as of TIME       the store as it was at TIME (2026-11-29T10:00:00Z)
  as of tx N       the store right after transaction N
  as PRINCIPAL     only what PRINCIPAL may see
and, on the reads that serve claims (live, find, why, revoked-by, impact, history, conflicts,
beliefs, context, search), followed by:
  for run RUN      also record what the read served to your run RUN`

// metaHelp lists the meta commands.
const metaHelp = `Meta commands (prefix \ or .):
  \help [STATEMENT]                  this list, or one statement's syntax and an example
  \d [NAME]                          the predicates and artifacts, or what NAME is (describe NAME)
  \dp [NAME]                         the principals and grants, or one principal's
  \conninfo                          which store, which backend, which principal
  \format [table|tree|json|csv|dot]  show or set the output format (also .mode)
  \x [on|off]                        expanded display: one field per line
  \pager [on|off]                    long output through $PAGER (on a terminal)
  \timing [on|off]                   print the time each statement took (also .timer)
  \i FILE                            run the statements of a script file (also .read)
  \o [FILE]                          send results to FILE; \o alone: back to the terminal (also .output)
  \import FILE                       make this new memory: store the exported one, all or nothing
                                     (owner only; to create a file store: mql import FILE DB)
  \export [--force] FILE             write what you may see as N-Quads; asks before replacing a file
                                     (--force: does not ask); never replaces an mql store
  \watch [PATTERN]                   print each change as it is committed, until Ctrl-C
  \quit                              leave (also \q, quit, exit, Ctrl-D)`

// writeHelp writes the general help, or one statement's.
func writeHelp(w io.Writer, topic string) error {
	topic = strings.ToLower(strings.TrimSpace(strings.TrimLeft(topic, `\.`)))
	if topic == "" {
		fmt.Fprintln(w, "Statements end at \";\" or at the end of a line that is a complete statement; one that goes on\nover several lines runs at \";\" or an empty line.")
		for i, s := range Statements {
			for _, g := range statementGroups {
				if g.at == i {
					fmt.Fprintln(w, g.title)
				}
			}
			fmt.Fprintf(w, "  %-11s %s\n", s.Name, s.Summary)
		}
		fmt.Fprintln(w, modifierHelp)
		fmt.Fprintln(w, metaHelp)
		fmt.Fprintln(w, `Type \help STATEMENT for its syntax and an example.`)
		return nil
	}
	for _, s := range Statements {
		if s.Name == topic {
			fmt.Fprintf(w, "%s: %s\n\nSyntax:\n  %s\n\nExample:\n  %s\n", s.Name, s.Summary, s.Syntax, s.Example)
			return nil
		}
	}
	switch topic {
	case "as", "modifiers", "as-of":
		fmt.Fprintln(w, modifierHelp)
		return nil
	case "meta", "format", "timing", "import", "export", "quit", "help", "d", "dp", "conninfo", "x", "pager", "i", "o", "include", "output", "read", "mode", "timer":
		fmt.Fprintln(w, metaHelp)
		return nil
	}
	return fmt.Errorf("no help for %q: \\help lists the statements", topic)
}
