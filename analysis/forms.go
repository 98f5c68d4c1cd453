package analysis

import (
	"slices"
	"strings"
)

// Forms returns every term of the word whose term t is, t included, when the word inflects
// irregularly: "buy" and "bought" for either of them, "go", "went" and "gone" for any of
// them, "child" and "children". A stemmer joins only what spelling rules join ("buys", "buying"
// and "buy" are one term already); a search takes a term and its forms as one word
// (graphstore/index.View.SearchText), so "What did she buy?" finds "I bought a used car".
// Nil when t has no other form. The caller must not change the result.
//
// No maintained lemmatizer for Go with an English dictionary is available to this project (the
// one considered, github.com/aaaton/golem, ships its English dictionary as a module of its
// own, which is not served here), so the forms are a fixed table: the irregular verbs of
// English and a few irregular plurals, without the forms that are stop words (be, have, do)
// and without those whose past form is a common word of its own ("rose", "bit", "born",
// "lay", "ground", "wound", "sprang": a search for the flower must not find "rise").
func Forms(t string) []string { return forms[t] }

// irregular lists a word per line: its base form, then its other forms.
const irregular = `arise arose arisen
awake awoke awoken
beat beaten
become became
begin began begun
bend bent
bleed bled
blow blew blown
break broke broken
breed bred
bring brought
build built
burn burnt
buy bought
catch caught
choose chose chosen
cling clung
come came
creep crept
deal dealt
dig dug
dive dove
draw drew drawn
dream dreamt
drink drank drunk
drive drove driven
eat ate eaten
fall fell fallen
feed fed
feel felt
fight fought
find found
flee fled
fly flew flown
forbid forbade forbidden
forget forgot forgotten
forgive forgave forgiven
freeze froze frozen
get got gotten
give gave given
go went gone
grow grew grown
hang hung
hear heard
hide hid hidden
hold held
keep kept
kneel knelt
know knew known
lead led
lean leant
leap leapt
learn learnt
leave left
lend lent
lose lost
make made
mean meant
meet met
pay paid
ride rode ridden
ring rang rung
run ran
say said
see saw seen
seek sought
sell sold
send sent
shake shook shaken
shine shone
shoot shot
show shown
shrink shrank shrunk
sing sang sung
sink sank sunk
sit sat
sleep slept
slide slid
speak spoke spoken
spend spent
spin spun
stand stood
steal stole stolen
stick stuck
sting stung
stink stank stunk
strike struck
strive strove striven
swear swore sworn
sweep swept
swim swam swum
swing swung
take took taken
teach taught
tear tore torn
tell told
think thought
throw threw thrown
understand understood
wake woke woken
wear wore worn
weave wove woven
weep wept
win won
write wrote written
child children
person people
man men
woman women
mouse mice
foot feet
tooth teeth`

// forms maps each term of the table to every term of its word, itself included: the terms are
// the analyzer's, so that they meet the terms of the text indexed and searched.
var forms = func() map[string][]string {
	a := New()
	m := map[string][]string{}
	for line := range strings.SplitSeq(irregular, "\n") {
		var word []string
		for _, w := range strings.Fields(line) {
			for _, t := range a.Terms(w) {
				if !slices.Contains(word, t) {
					word = append(word, t)
				}
			}
		}
		if len(word) < 2 {
			continue // every form stems alike, or is a stop word
		}
		for _, t := range word {
			for _, u := range word {
				if !slices.Contains(m[t], u) {
					m[t] = append(m[t], u)
				}
			}
		}
	}
	return m
}()
