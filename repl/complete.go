package repl

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/mql-dev/mql/output"
	"github.com/mql-dev/mql/query"
)

// metaCommands are completed after \ or . at the start of a line.
var metaCommands = []string{"help", "format", "timing", "import", "export", "quit"}

// isWordRune reports whether r belongs to a completable word: names, references
// (Subject.predicate@N), artifact names (plan:pick-vendor), variables and keywords.
func isWordRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r > 127:
		return true
	}
	return strings.ContainsRune("_:/-.@*?", r)
}

// Complete returns Tab-completion candidates for line with the cursor at pos, in the form
// readline's AutoCompleter wants: the rest of each candidate after the word being typed, and
// the length of that word. Candidates are keywords and, from the store, principals,
// subjects, predicates, claim keys and references, and artifact names. A reference is
// completed one part at a time: "Kl" gives "Klarveld", "Klarveld." its predicates,
// "Klarveld.price_per_seat@" its versions. A single complete candidate gets a trailing space.
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

	var cands []string
	if (strings.HasPrefix(before, `\`) && before != `\`) || (strings.HasPrefix(before, ".") && isMeta(strings.TrimSpace(before))) {
		// an argument of a meta command
		if fields := strings.Fields(before[1:]); len(fields) == 1 {
			switch strings.ToLower(fields[0]) {
			case "format":
				for _, f := range output.Formats {
					cands = append(cands, string(f))
				}
			case "help":
				for _, st := range Statements {
					cands = append(cands, st.Name)
				}
			case "timing":
				cands = []string{"on", "off"}
			}
		}
		return finish(prefixed(cands, word), word, false)
	}
	if before == `\` || (before == "" && strings.HasPrefix(word, ".")) {
		// a meta command: "\" is not a word rune, "." is
		w := strings.TrimPrefix(word, ".")
		return finish(prefixed(metaCommands, w), w, false)
	}

	for _, k := range query.Keywords() {
		if strings.HasPrefix(k, strings.ToLower(word)) {
			cands = append(cands, k)
		}
	}
	for _, n := range s.storeNames() {
		if strings.HasPrefix(n, word) {
			cands = append(cands, n)
		}
	}
	return finish(cands, word, true)
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

// storeNames returns the store's names, fetched again after a write, with the claim keys of
// every claim reference added.
func (s *Shell) storeNames() []string {
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
	set := map[string]bool{}
	for _, n := range names {
		set[n] = true
		if i := strings.LastIndexByte(n, '@'); i > 0 && strings.Contains(n[:i], ".") {
			set[n[:i]] = true
		}
	}
	s.names = s.names[:0]
	for n := range set {
		s.names = append(s.names, n)
	}
	slices.Sort(s.names)
	s.stale = false
	return s.names
}
