package repl

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/mql-dev/mql/output"
)

// isWordRune reports whether r belongs to a completable word: names, references
// (Subject.predicate@N), artifact names (plan:pick-vendor), variables and keywords.
func isWordRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r > 127:
		return true
	}
	return strings.ContainsRune("_:/-.@*?", r)
}

// statementKeywords start a statement; clauseKeywords are what may follow a statement's head.
var (
	statementKeywords = []string{
		"principal", "grant", "assert", "revoke", "confirm", "derive", "review", "decay", "outcome",
		"live", "find", "why", "revoked-by", "impact", "history", "conflicts", "beliefs", "context", "stats", "search",
		"run", "runs", "principals", "grants", "subjects", "predicates", "artifacts", "sources", "describe",
		"begin", "commit", "rollback", "as",
	}
	clauseKeywords = map[string][]string{
		"assert":  {"by", "from", "confidence", "kind", "valid", "seen", "excerpt", "uri", "revision"},
		"revoke":  {"by", "because", "replaced"},
		"confirm": {"by"},
		"derive":  {"from", "by", "confidence", "seen", "in"},
		"review":  {"by", "because"},
		"grant":   {"assert", "revoke", "confirm", "grant", "on", "by"},
		"decay":   {"half-life"},
		"live":    {"where", "value"},
		"find":    {"where", "order", "by", "limit", "asc", "desc"},
		"impact":  {"depth"},
		"beliefs": {"gate"},
		"context": {"budget"},
		"search":  {"on", "limit", "history"},
	}
)

// Complete returns Tab-completion candidates for line with the cursor at pos, in the form
// readline's AutoCompleter wants: the rest of each candidate after the word being typed, and
// the length of that word. What is offered depends on where the cursor is: statement keywords
// at the start of a statement, principals after "by", "as" or "grant", subjects (and, after
// their ".", their predicates) where a claim or a pattern goes, predicates after "*." or
// "decay", artifacts after "review" or "derive", clause keywords after a statement's head. A
// reference is completed one part at a time: "Kl" gives "Klarveld", "Klarveld." its
// predicates, "Klarveld.price_per_seat@" its versions. A single complete candidate gets a
// trailing space.
func (s *Shell) Complete(line []rune, pos int) ([][]rune, int) {
	if pos > len(line) {
		pos = len(line)
	}
	start := pos
	for start > 0 && isWordRune(line[start-1]) {
		start--
	}
	word := string(line[start:pos])
	before := strings.TrimLeft(string(line[:start]), " \t")

	if (strings.HasPrefix(before, `\`) && before != `\`) || (strings.HasPrefix(before, ".") && isMeta(strings.TrimSpace(before))) {
		// an argument of a meta command
		var cands []string
		if fields := strings.Fields(before[1:]); len(fields) == 1 {
			switch strings.ToLower(fields[0]) {
			case "format", "mode":
				for _, f := range output.Formats {
					cands = append(cands, string(f))
				}
			case "help", "h", "?":
				for _, st := range Statements {
					cands = append(cands, st.Name)
				}
			case "timing", "timer", "x", "pager":
				cands = []string{"on", "off"}
			case "d":
				n := s.storeNames()
				cands = slices.Concat(n.Principals, n.Subjects, n.Predicates, n.Artifacts)
			case "dp":
				cands = s.storeNames().Principals
			}
		}
		return finish(prefixed(cands, word), word, false)
	}
	if before == `\` || (before == "" && strings.HasPrefix(word, ".")) {
		// a meta command: "\" is not a word rune, "." is
		w := strings.TrimPrefix(word, ".")
		return finish(prefixed(metaCommands, w), w, false)
	}
	return finish(s.candidates(before, word), word, true)
}

// candidates lists what may stand where word is being typed after before.
func (s *Shell) candidates(before, word string) []string {
	// The statement the cursor is in: what follows the last ";".
	if i := strings.LastIndexByte(before, ';'); i >= 0 {
		before = before[i+1:]
	}
	toks := strings.Fields(strings.ReplaceAll(before, ",", " , "))
	// The statement keyword, after the read modifiers.
	kind, i := "", 0
	for i < len(toks) && toks[i] == "as" {
		if i+1 < len(toks) && toks[i+1] == "of" {
			i += 3
			if i-1 < len(toks) && toks[i-1] == "tx" {
				i++
			}
		} else {
			i += 2
		}
	}
	if i < len(toks) {
		kind = toks[i]
	}
	prev, prev2 := "", ""
	if n := len(toks); n > 0 {
		prev = toks[n-1]
		if n > 1 {
			prev2 = toks[n-2]
		}
	}
	n := s.storeNames()
	low := strings.ToLower(word)
	keywords := func(list []string) []string { return prefixed(list, low) }
	names := func(lists ...[]string) []string { return prefixed(slices.Concat(lists...), word) }
	// Inside a reference: after "*." predicates, after "Subject." its keys and versions.
	if dot := strings.IndexByte(word, '.'); dot >= 0 {
		if word[:dot] == "*" {
			var out []string
			for _, p := range n.Predicates {
				out = append(out, "*."+p)
			}
			return prefixed(out, word)
		}
		return names(n.Keys, n.Refs)
	}
	switch {
	case len(toks) == i: // the start of a statement, or of the statement after modifiers
		if i > 0 {
			return keywords(statementKeywords[:len(statementKeywords)-1])
		}
		return keywords(statementKeywords)
	case prev == "as" && len(toks) == i+1 && kind == "as":
		return append(keywords([]string{"of"}), names(n.Principals)...)
	case prev == "as" && prev2 != "of":
		return append(keywords([]string{"of"}), names(n.Principals)...)
	case prev == "of" && prev2 == "as":
		return keywords([]string{"tx"})
	case prev == "by" && prev2 == "order":
		return nil
	case prev == "by", prev == "grant" && len(toks) == i+1, prev == "grants", prev == "principals", prev == "dp":
		return names(n.Principals)
	case prev == "seen", prev == "replaced" && kind == "revoke":
		return keywords([]string{"by"})
	case prev == "," && (prev2 != "" && (kind == "assert" || kind == "derive") && seenList(toks)):
		return names(n.Principals)
	}
	switch kind {
	case "principal":
		if len(toks) == i+2 {
			return keywords([]string{"user", "agent", "tool"})
		}
		return nil
	case "grant":
		switch {
		case len(toks) == i+2:
			return keywords([]string{"assert", "revoke", "confirm", "grant"})
		case len(toks) == i+3:
			return keywords([]string{"on"})
		case prev == "on":
			return append(names(n.Predicates, n.Subjects), keywords([]string{"*"})...)
		}
		return keywords([]string{"by"})
	case "decay", "predicates":
		if len(toks) == i+1 {
			return names(n.Predicates)
		}
		return keywords([]string{"half-life"})
	case "review", "artifacts":
		if len(toks) == i+1 {
			return names(n.Artifacts)
		}
	case "derive":
		switch {
		case len(toks) == i+1:
			return names(n.Artifacts)
		case prev == "from" || prev == ",":
			return names(n.Subjects, n.Keys, n.Refs, n.Artifacts)
		}
	case "outcome":
		switch len(toks) {
		case i + 1:
			return keywords([]string{"run"})
		case i + 2:
			return nil // the run's name
		case i + 3:
			return keywords([]string{"succeeded", "failed", "declined"})
		}
		return keywords([]string{"by", "because"})
	case "describe":
		if len(toks) == i+1 {
			return names(n.Principals, n.Subjects, n.Predicates, n.Artifacts)
		}
	case "search":
		// The text, then clauses; a pattern after "on" or its ",".
		if prev == "on" || prev == "," {
			return names(n.Subjects, n.Keys)
		}
		if len(toks) == i+1 {
			return nil
		}
		return keywords(clauseKeywords[kind])
	case "context":
		// Subjects, or "for" and a question; after the question, its clauses only.
		switch {
		case len(toks) == i+1:
			return append(keywords([]string{"for"}), names(n.Subjects)...)
		case prev == ",":
			return names(n.Subjects)
		case toks[i+1] == "for" && len(toks) == i+2:
			return nil
		case toks[i+1] == "for" && strings.HasPrefix(toks[i+2], `"`):
			return keywords(clauseKeywords[kind])
		}
	case "subjects", "conflicts":
		if len(toks) == i+1 || prev == "," {
			return names(n.Subjects)
		}
	case "live", "beliefs", "assert", "revoke", "revoked-by", "confirm":
		// A subject, then (after its ".") its keys, then (after "@") their versions.
		if len(toks) == i+1 || prev == "by" && prev2 == "replaced" {
			return names(n.Subjects, n.Keys, n.Refs)
		}
	case "why", "impact", "history":
		if len(toks) == i+1 {
			return names(n.Subjects, n.Keys, n.Refs, n.Artifacts)
		}
	case "":
		return keywords(statementKeywords)
	}
	// After a statement's head: its clause keywords, and any name.
	return append(keywords(clauseKeywords[kind]), names(n.all())...)
}

// seenList reports whether the last list of toks is a "seen by" list.
func seenList(toks []string) bool {
	for j := len(toks) - 1; j > 0; j-- {
		if toks[j] == "by" {
			return toks[j-1] == "seen"
		}
		if toks[j] != "," && j < len(toks)-1 && toks[j+1] != "," {
			return false
		}
	}
	return false
}

func prefixed(list []string, prefix string) []string {
	var out []string
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

// finish turns full candidates into readline's form. With parts set, each candidate is cut
// after the next "." or "@" beyond the word, so that references complete one part at a time.
func finish(cands []string, word string, parts bool) ([][]rune, int) {
	wl := len([]rune(word))
	type cand struct {
		s     string
		final bool
	}
	seen := map[string]int{} // index in list
	var list []cand
	for _, c := range cands {
		rs := []rune(c)
		if len(rs) < wl {
			continue
		}
		final := true
		if parts {
			for i := wl; i < len(rs); i++ {
				if rs[i] == '.' || rs[i] == '@' {
					if i > wl {
						rs, final = rs[:i], false
					}
					break
				}
			}
		}
		s := string(rs)
		if i, ok := seen[s]; ok {
			list[i].final = list[i].final && final // more follows if any candidate goes on
			continue
		}
		seen[s] = len(list)
		list = append(list, cand{s, final})
	}
	slices.SortFunc(list, func(a, b cand) int { return strings.Compare(a.s, b.s) })
	out := make([][]rune, 0, len(list))
	for _, c := range list {
		rest := []rune(c.s)[wl:]
		if len(list) == 1 && c.final {
			rest = append(rest, ' ')
		}
		out = append(out, rest)
	}
	return out, wl
}

// storeNames returns the store's names, fetched again after a write.
func (s *Shell) storeNames() Names {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.stale || s.cfg.Session == nil {
		return s.names
	}
	ctx, cancel := context.WithTimeout(s.ctx, 2*time.Second)
	defer cancel()
	names, err := s.cfg.Session.Names(ctx)
	if err != nil {
		return s.names // keep the old ones; try again next time
	}
	s.names = names
	s.stale = false
	return s.names
}
