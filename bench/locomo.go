package main

// -locomo: the search bench over conversations in LoCoMo's shape (Maharana et al., "Evaluating
// Very Long-Term Conversational Memory of LLM Agents", 2024) instead of the generated corpus.
// The data is not in the repository (its licence does not allow it): give the path of its
// locomo10.json, or of a directory of one file per conversation.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// locomoCorpus is a LoCoMo file's conversations: every turn a claim by its speaker (subject
// the speaker, predicate the conversation and the turn's id, valid from its session's date),
// every question with evidence a question, its evidence the turns its "evidence" names.
type locomoCorpus struct {
	path     string
	convs    []conversation
	speakers []string
	qs       []question
	claims   int
}

// locomoSample is one conversation of the file: either the object itself holds the sessions
// (one file per conversation) or its "conversation" does (locomo10.json).
type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []locomoQA                 `json:"qa"`
}

type locomoQA struct {
	Question string   `json:"question"`
	Evidence []string `json:"evidence"`
}

type locomoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

var (
	locomoSession = regexp.MustCompile(`^session_(\d+)$`)
	locomoDia     = regexp.MustCompile(`D(\d+):(\d+)`)
)

func loadLocomo(path string, captions bool) (*locomoCorpus, error) {
	files := []string{path}
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if fi.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.json")); err != nil {
			return nil, err
		}
		slices.Sort(files)
	}
	lc := &locomoCorpus{path: path}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var samples []json.RawMessage
		if err := json.Unmarshal(data, &samples); err != nil {
			samples = []json.RawMessage{data}
		}
		for _, raw := range samples {
			var s locomoSample
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			if s.Conversation == nil {
				if err := json.Unmarshal(raw, &s.Conversation); err != nil {
					return nil, fmt.Errorf("%s: %w", f, err)
				}
			}
			if err := lc.add(s, captions, seen); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
		}
	}
	if len(lc.convs) == 0 {
		return nil, fmt.Errorf("%s: no conversation in LoCoMo's shape", path)
	}
	return lc, nil
}

func (lc *locomoCorpus) add(s locomoSample, captions bool, seen map[string]bool) error {
	ci := len(lc.convs)
	var sessions []int
	for k := range s.Conversation {
		if m := locomoSession.FindStringSubmatch(k); m != nil {
			n, _ := strconv.Atoi(m[1])
			sessions = append(sessions, n)
		}
	}
	slices.Sort(sessions)
	var c conversation
	keys := map[string]string{} // dia_id → key
	for _, n := range sessions {
		var turns []locomoTurn
		if err := json.Unmarshal(s.Conversation[fmt.Sprintf("session_%d", n)], &turns); err != nil {
			return fmt.Errorf("session_%d: %w", n, err)
		}
		var when string
		_ = json.Unmarshal(s.Conversation[fmt.Sprintf("session_%d_date_time", n)], &when)
		at, err := time.Parse("3:04 pm on 2 January, 2006", when)
		if err != nil {
			at = time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n)
		}
		for _, t := range turns {
			m := locomoDia.FindStringSubmatch(t.DiaID)
			if m == nil {
				continue
			}
			speaker := identifier(t.Speaker)
			if !seen[speaker] {
				seen[speaker] = true
				lc.speakers = append(lc.speakers, speaker)
			}
			op := turnOp{Speaker: speaker, Predicate: fmt.Sprintf("c%d_d%s_%s", ci+1, m[1], m[2]), Text: t.Text, ValidFrom: at}
			if captions && t.Caption != "" {
				op.Text += " [" + t.Caption + "]"
			}
			keys[m[0]] = op.key()
			c.ops = append(c.ops, op)
			lc.claims++
		}
	}
	for _, q := range s.QA {
		var ev []string
		for _, e := range q.Evidence {
			for _, m := range locomoDia.FindAllString(e, -1) {
				if k, ok := keys[m]; ok && !slices.Contains(ev, k) {
					ev = append(ev, k)
				}
			}
		}
		if len(ev) > 0 && strings.TrimSpace(q.Question) != "" {
			lc.qs = append(lc.qs, question{Text: q.Question, Evidence: ev})
		}
	}
	lc.convs = append(lc.convs, c)
	return nil
}

// identifier makes a speaker's name a subject: letters and digits kept, others '_'.
func identifier(name string) string {
	out := strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, strings.TrimSpace(name))
	if out == "" || unicode.IsDigit([]rune(out)[0]) {
		out = "S" + out
	}
	return out
}

func (lc *locomoCorpus) name() string                    { return "LoCoMo (" + filepath.Base(lc.path) + ")" }
func (lc *locomoCorpus) size() (int, int)                { return len(lc.convs), lc.claims }
func (lc *locomoCorpus) conversation(i int) conversation { return lc.convs[i] }
func (lc *locomoCorpus) principals() []string            { return lc.speakers }

// questions are every question with evidence, or the first n if fewer are asked for.
func (lc *locomoCorpus) questions(n int) []question {
	if n <= 0 || n >= len(lc.qs) {
		return lc.qs
	}
	return lc.qs[:n]
}
