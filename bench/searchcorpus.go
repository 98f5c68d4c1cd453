package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// The search corpus: long conversations between two people over many sessions, generated from
// a seed, shaped like the held-out benchmarks of agent memory (LoCoMo-style). Every turn is a
// claim by its speaker: subject the speaker (a name unique in the corpus), predicate the turn's
// place in the conversation (s<session>_t<turn>), value the turn's text, valid from its
// session's date. Most turns are small talk drawn from an everyday vocabulary; some state a
// fact about the speaker (a pet adopted, a move, a new job), from the templates below, and each
// such fact is a question in words whose evidence is that turn (and, for some, a later turn of
// the speaker that comes back to it). Every speaker states facts of the same kinds as the
// others, so the words of a question are in many turns: the speaker's name is what tells
// the answer apart, as in a real memory.
//
// Turns that are not live, which a search must never return:
//   - corrections: a fact first stated wrongly (another value in the same words), then
//     corrected by its speaker (a new version of the same key, superseding the first);
//   - retractions: a fact of the same kind stated and then revoked ("no, that was my sister").
//
// Nothing is read from outside the repository: the words and templates are this file's.

// factKind is one kind of fact: the turn that states it, the question that asks for it, and
// optionally a later turn of the speaker that comes back to it (a second evidence turn).
type factKind struct {
	say, ask, again string // {x} is the fact's value, {y} a second slot, {name} the speaker's full name
	xs, ys          []string
}

var factKinds = []factKind{
	{"I adopted a {y} last month and we named her {x}, she is so tiny.", "What did {name} name the {y} they adopted?",
		"{x} the {y} chewed through my charger again, I can't stay mad at her.",
		[]string{"Biscuit", "Pepper", "Mochi", "Luna", "Olive", "Waffles", "Maple", "Juniper", "Pickles", "Clementine"},
		[]string{"puppy", "kitten", "rabbit", "parrot", "beagle", "ferret"}},
	{"We finally went hiking at {x} and the views from the ridge were unreal.", "Where did {name} go hiking?", "",
		[]string{"Eagle Creek", "Mount Tam", "Red Rock Canyon", "Cascade Pass", "Bear Lake", "Angels Landing", "Hoh Rainforest"}, nil},
	{"I've started taking {x} lessons on Tuesday evenings, my fingers hurt.", "What instrument is {name} learning to play?",
		"Practiced the {x} for an hour today, my teacher says I'm improving.",
		[]string{"cello", "violin", "piano", "banjo", "saxophone", "ukulele", "trumpet", "harp"}, nil},
	{"Big news: I got the {y} position at {x}, I start on Monday!", "Which company hired {name} as their new {y}?", "",
		[]string{"Northwind", "Globex", "Initech", "Umbrella Labs", "Hooli", "Vandelay Industries", "Stark Foods"},
		[]string{"designer", "nurse", "analyst", "engineer", "teacher", "accountant"}},
	{"I'm halfway through the book {x} and I can't put it down.", "What book is {name} reading?", "",
		[]string{"The Silent Orchard", "Paper Lanterns", "A Map of Salt", "The Glass Meridian", "Winter Harbor", "Iron and Honey"}, nil},
	{"My {y} is flying in from {x} next week, I have to clean everything.", "Which city is the relative visiting {name} flying in from?", "",
		[]string{"Lisbon", "Osaka", "Nairobi", "Toronto", "Santiago", "Krakow", "Melbourne", "Dublin"},
		[]string{"grandmother", "cousin", "aunt", "uncle", "brother", "sister"}},
	{"I signed up for the {x} marathon in the spring, training starts now.", "Which marathon did {name} sign up for?",
		"Ran eighteen miles this morning, the {x} marathon is going to be brutal.",
		[]string{"Boston", "Chicago", "Berlin", "Honolulu", "Portland", "Denver", "Seattle"}, nil},
	{"We're repainting the {y} {x} this weekend, wish me luck.", "What color is {name} painting the {y}?", "",
		[]string{"sage green", "navy blue", "terracotta", "mustard yellow", "charcoal gray", "lavender"},
		[]string{"kitchen", "bedroom", "living room", "hallway", "office"}},
	{"I made {x} for my {y}'s birthday dinner and everyone asked for seconds.", "What did {name} cook for the birthday dinner?", "",
		[]string{"lasagna", "paella", "chicken curry", "beef stew", "mushroom risotto", "pad thai", "pot roast"},
		[]string{"mom", "dad", "husband", "wife", "son", "daughter"}},
	{"I've been volunteering at the {x} on weekends, it keeps me grounded.", "Where does {name} volunteer?", "",
		[]string{"animal shelter", "food bank", "public library", "children's hospital", "community garden", "senior center"}, nil},
	{"I'm moving to {x} in the fall for a fresh start.", "Which city is {name} moving to?",
		"Boxes everywhere, the move to {x} is only three weeks away.",
		[]string{"Austin", "Minneapolis", "Savannah", "Tucson", "Raleigh", "Boise", "Pittsburgh", "Sacramento"}, nil},
	{"My favourite band right now is {x}, I saw them live twice.", "What is {name}'s favorite band?", "",
		[]string{"The Paper Kites", "Wild Nothing", "Glass Animals", "Big Thief", "Khruangbin", "Alvvays"}, nil},
	{"I just bought a used {x}, it runs great for its age.", "What car did {name} buy?", "",
		[]string{"Subaru Outback", "Honda Civic", "Toyota Tacoma", "Mazda Miata", "Volvo wagon", "Ford Ranger"}, nil},
	{"I'm taking a night class on {x} at the community college.", "What class is {name} taking?", "",
		[]string{"pottery", "astronomy", "Italian", "woodworking", "photography", "statistics", "accounting"}, nil},
	{"I'm allergic to {x}, I found out the hard way at a wedding.", "What is {name} allergic to?", "",
		[]string{"peanuts", "shellfish", "bees", "penicillin", "cats", "strawberries"}, nil},
}

// The small talk's words: everyday nouns, verbs and adjectives, some of them the words the facts
// and questions use, so that those words are in many turns besides the answers.
var (
	talkNouns = strings.Fields(`weekend morning coffee dinner lunch movie show game trip work office meeting
		boss project deadline weather rain snow garden kitchen car bus train traffic phone email friend family
		kids dog cat puppy book music song concert class lesson teacher school college job news party wedding
		birthday holiday vacation beach city park trail hike run gym team match league week month year night
		house apartment room paint color food recipe pizza soup salad bread cake restaurant market store price
		money plan idea story picture photo camera drive road view ridge lake river mountain forest shelter
		library hospital garden volunteer marathon band instrument piano guitar car moment feeling luck time
		name favorite relative mom dad sister brother cousin neighbor doctor appointment flight airport`)
	talkVerbs = strings.Fields(`love like hate miss enjoy need want try start finish visit cook paint read watch
		play learn teach buy sell move run hike drive call text plan think hope wish remember forget help take
		bring make bake clean fix build write sing dance travel work rest sleep adopt sign train practice`)
	talkAdjs = strings.Fields(`great awful busy quiet crazy lovely tiny huge cozy rainy sunny tired happy
		nervous excited proud calm late early new old favorite perfect strange funny boring amazing brutal
		gorgeous fresh little long short`)
	talkShapes = []string{
		"How was your {n}? Mine was {a}.",
		"I {v} the {n} so much, it was {a}.",
		"Did you {v} the {n} yet? I heard it's {a}.",
		"Ha, that sounds {a}. We should {v} a {n} together sometime.",
		"Honestly the {n} this week was {a}, I just want to {v}.",
		"{first}, you have to {v} the {n}, trust me.",
		"Yeah, the {n} and the {n} kept me {a} all day.",
		"I'm trying to {v} more and worry about the {n} less.",
		"No way! What did your {n} say about the {n}?",
		"We might {v} at the {n} later if the weather stays {a}.",
	}
	firstNames = strings.Fields(`Caroline Melanie Joanna Nate Tim John Maria Gina Jon Audrey Evan Sam Calvin
		Dave Deborah Jolene Andrew James Priya Omar Lucia Mateo Hana Kenji Amara Tobias Ingrid Rafael Nadia
		Felix Greta Hugo Iris Jasper Kira Leo Mira Nico Opal Pavel Quinn Rosa Silas Tess Uma Victor Wren Xavier
		Yara Zane Abel Bea Cyrus Dora Emil Fern Gus Hazel Ivo Jade Kurt Lena Milo Nora Otto Pia Reid Sage Theo`)
	lastNames = strings.Fields(`Reyes Okafor Lindqvist Brennan Takahashi Moreau Castillo Novak Haddad Whitaker
		Sorensen Adeyemi Kowalski Ferreira Nakamura Delgado Osei Petrov Ashworth Byrne Caldwell Dimitrou Eklund
		Fontaine Galloway Hargrove Iwasaki Jovanovic Kincaid Larsen Mbeki Navarro Oyelaran Pemberton Quintero
		Rasmussen Salazar Thorne Ueda Varga Wojcik Yilmaz Zamora Abernathy Bianchi Cortez Dunmore Espinoza Farrow
		Gallagher Holloway Ibarra Jaramillo Kessler Lombardi Marchetti Nilsen Ortega Prescott Renner Sterling
		Tanaka Underwood Valdez Winslow Yates Zeller Aldana Barros Crowe Dalton Ellery Fischer Greer Hale Ivers`)
)

const (
	searchSessions = 20 // sessions of a conversation
	searchTurns    = 25 // turns of a session
	convTurns      = searchSessions * searchTurns
	factsPerPerson = 8 // facts each speaker states over a conversation
)

// turnOp is one write of the corpus: a turn's claim (a first version, or a correction
// superseding the key's live version), or the revocation of a key's live version.
type turnOp struct {
	Speaker   string // the subject, and the asserter
	Predicate string
	Text      string
	ValidFrom time.Time
	Revoke    bool // revoke the key's live version instead of asserting
}

func (t turnOp) key() string { return t.Speaker + "." + t.Predicate }

// question is a question of the corpus and the keys of its evidence turns (their live versions).
type question struct {
	Text     string
	Evidence []string
}

// conversation is one generated conversation: its writes in order and its questions.
type conversation struct {
	ops       []turnOp
	questions []question
	speakers  [2]string
}

// searchCorpus is a corpus of conversations, each generated on demand from the seed and its
// number, so that a corpus of a million turns is never held whole.
type searchCorpus struct {
	seed          uint64
	conversations int
	claims        int // the claim versions asserted (first versions and corrections)
}

// speakerNames is the full name of the two speakers of conversation i: every speaker of the
// corpus has a name of their own (first × last names: 5,000 and more pairs).
func speakerNames(i int) [2]string {
	n := len(firstNames) * len(lastNames)
	var out [2]string
	for j := range 2 {
		// A fixed stride coprime with n walks every pair once before repeating.
		k := ((2*i + j) * 7919) % n
		out[j] = firstNames[k%len(firstNames)] + "_" + lastNames[k/len(firstNames)]
	}
	return out
}

// searchSource is a corpus of conversations the search bench writes and asks questions of:
// the generated one, or a file of LoCoMo's shape (-locomo).
type searchSource interface {
	name() string
	size() (conversations, claims int)
	conversation(i int) conversation
	principals() []string // every speaker, each a principal of the store
	questions(n int) []question
}

func (sc *searchCorpus) name() string { return "generated" }

func (sc *searchCorpus) size() (int, int) { return sc.conversations, sc.claims }

func (sc *searchCorpus) principals() []string {
	var out []string
	for i := range sc.conversations {
		s := speakerNames(i)
		out = append(out, s[:]...)
	}
	return out
}

// newSearchCorpus sizes a corpus to about claims claim versions.
func newSearchCorpus(claims int, seed uint64) *searchCorpus {
	sc := &searchCorpus{seed: seed, conversations: max(1, (claims+convTurns/2)/convTurns)}
	if maxConv := len(firstNames) * len(lastNames) / 2; sc.conversations > maxConv {
		// Every speaker's name its own: at most 2,622 conversations, some 1.3M claims. A larger
		// size is cut to that; the report gives the claims written.
		sc.conversations = maxConv
	}
	for i := range sc.conversations {
		for _, op := range sc.conversation(i).ops {
			if !op.Revoke {
				sc.claims++
			}
		}
	}
	return sc
}

// questions draws n questions from the corpus, spread over its conversations.
func (sc *searchCorpus) questions(n int) []question {
	var all []question
	per := max(1, (n+sc.conversations-1)/sc.conversations)
	for i := range sc.conversations {
		qs := sc.conversation(i).questions
		r := rand.New(rand.NewPCG(sc.seed, uint64(i)^0x7175657374))
		r.Shuffle(len(qs), func(a, b int) { qs[a], qs[b] = qs[b], qs[a] })
		all = append(all, qs[:min(per, len(qs))]...)
	}
	r := rand.New(rand.NewPCG(sc.seed, 0x716e))
	r.Shuffle(len(all), func(a, b int) { all[a], all[b] = all[b], all[a] })
	return all[:min(n, len(all))]
}

func fill(s string, vals map[string]string) string {
	for k, v := range vals {
		s = strings.ReplaceAll(s, "{"+k+"}", v)
	}
	return s
}

func pick(r *rand.Rand, xs []string) string { return xs[r.IntN(len(xs))] }

// conversation generates conversation i.
func (sc *searchCorpus) conversation(i int) conversation {
	r := rand.New(rand.NewPCG(sc.seed, uint64(i)))
	c := conversation{speakers: speakerNames(i)}
	start := time.Date(2022, 1, 1, 18, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(700))

	// Each speaker's facts: distinct kinds, each at a random turn of theirs; a few first said
	// wrongly and corrected, and a few kinds also stated once more and retracted.
	type planned struct {
		text      string
		wrong     string // a correction: the text first said, superseded by text
		again     string // a later turn of the speaker's that comes back to the fact
		retracted string // another fact of the kind, stated then revoked
		ask       string
	}
	plan := map[int]planned{} // by turn number in the conversation
	for s, speaker := range c.speakers {
		first := strings.SplitN(speaker, "_", 2)[0]
		full := strings.ReplaceAll(speaker, "_", " ")
		kinds := r.Perm(len(factKinds))[:factsPerPerson]
		for _, k := range kinds {
			fk := factKinds[k]
			vals := map[string]string{"x": pick(r, fk.xs), "name": full, "first": first}
			if len(fk.ys) > 0 {
				vals["y"] = pick(r, fk.ys)
			}
			p := planned{text: fill(fk.say, vals), ask: fill(fk.ask, vals)}
			if fk.again != "" && r.IntN(2) == 0 {
				p.again = fill(fk.again, vals)
			}
			alt := func() string {
				v := map[string]string{"x": pick(r, fk.xs), "y": vals["y"]}
				if v["x"] == vals["x"] {
					v["x"] = fk.xs[(indexOf(fk.xs, vals["x"])+1)%len(fk.xs)]
				}
				return fill(fk.say, v)
			}
			switch r.IntN(6) {
			case 0:
				p.wrong = alt()
			case 1:
				p.retracted = alt()
			}
			// A turn of this speaker's (turns alternate, speaker 0 first) in the first three
			// quarters of the conversation, free of another fact.
			for {
				t := 2*r.IntN(convTurns*3/8) + s
				if _, taken := plan[t]; !taken {
					plan[t] = p
					break
				}
			}
		}
	}

	pred := func(t int) string { return fmt.Sprintf("s%d_t%d", t/searchTurns+1, t%searchTurns+1) }
	date := func(t int) time.Time { return start.AddDate(0, 0, 9*(t/searchTurns)) }
	laterAt := map[int]turnOp{}    // turns planned while writing an earlier one, by turn number
	revokeAt := map[int][]turnOp{} // revocations to write after a turn, by its number
	free := func(t int) bool {
		_, fact := plan[t]
		_, taken := laterAt[t]
		return t < convTurns && !fact && !taken
	}
	for t := range convTurns {
		s := t % 2
		speaker, other := c.speakers[s], c.speakers[1-s]
		op := turnOp{Speaker: speaker, Predicate: pred(t), ValidFrom: date(t)}
		if l, ok := laterAt[t]; ok {
			c.ops = append(c.ops, l)
		} else if p, ok := plan[t]; ok {
			ev := []string{op.key()}
			if p.wrong != "" {
				w := op
				w.Text = p.wrong
				c.ops = append(c.ops, w)
			}
			op.Text = p.text
			c.ops = append(c.ops, op)
			// The retracted fact: the speaker's next turn, revoked after their turn after that.
			if rt := t + 2; p.retracted != "" && free(rt) && rt+2 < convTurns {
				laterAt[rt] = turnOp{Speaker: speaker, Predicate: pred(rt), Text: p.retracted, ValidFrom: date(rt)}
				revokeAt[rt+2] = append(revokeAt[rt+2], turnOp{Speaker: speaker, Predicate: pred(rt), Revoke: true})
			}
			if p.again != "" {
				// A turn of this speaker's two to four sessions later.
				at := t + searchTurns*(2+r.IntN(3))
				at += (at - t) % 2 // the same speaker's turn
				for ; at < convTurns; at += 2 {
					if free(at) {
						laterAt[at] = turnOp{Speaker: speaker, Predicate: pred(at), Text: p.again, ValidFrom: date(at)}
						ev = append(ev, laterAt[at].key())
						break
					}
				}
			}
			c.questions = append(c.questions, question{Text: p.ask, Evidence: ev})
		} else {
			op.Text = smallTalk(r, strings.SplitN(other, "_", 2)[0])
			c.ops = append(c.ops, op)
		}
		c.ops = append(c.ops, revokeAt[t]...)
	}
	return c
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// smallTalk is a turn of small talk: two or three sentences of everyday words, now and then
// addressing the other speaker by their first name.
func smallTalk(r *rand.Rand, first string) string {
	n := 2 + r.IntN(2)
	parts := make([]string, n)
	for i := range parts {
		s := talkShapes[r.IntN(len(talkShapes))]
		for strings.Contains(s, "{n}") {
			s = strings.Replace(s, "{n}", pick(r, talkNouns), 1)
		}
		s = strings.ReplaceAll(s, "{v}", pick(r, talkVerbs))
		s = strings.ReplaceAll(s, "{a}", pick(r, talkAdjs))
		parts[i] = strings.ReplaceAll(s, "{first}", first)
	}
	return strings.Join(parts, " ")
}
