package main

// -search: mql's text search against SQLite FTS5's bm25() on the same text (searchcorpus.go),
// in one process: recall@10 on the corpus's questions, whether anything not live is returned,
// search latency, bulk ingest with and without mql's text index, and the indexes' sizes.

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/analysis"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/internal/benchknob"
)

// searchK is the depth recall is measured at: the limit of every search.
const searchK = 10

// The engines of the search table, in column order.
const (
	seMQL      = iota // mql: search "QUESTION" limit 10
	seFTSAll          // FTS5: every word of the question, ORed
	seFTSKept         // FTS5: the words mql keeps (its stop words dropped), ORed
	seFTSAlone        // the same, FTS5's table alone: no live filter, so not live rows come back
	nSearchEngines
)

var searchEngineNames = [nSearchEngines]string{"mql", "FTS5, every word ORed", "FTS5, mql's words ORed",
	"FTS5 alone, mql's words ORed, no live filter"}

// ftsMissing is the note for FTS5's columns when this binary's SQLite has no FTS5.
const ftsMissing = "not measured: this binary's SQLite has no FTS5 (mattn/go-sqlite3 compiles it in only with the build tag sqlite_fts5: go run -tags sqlite_fts5 ./bench -search)"

type searchEngineResult struct {
	Name string `json:"name"`
	// Unfiltered: the engine does not keep to live rows (FTS5's floor, for its latency): its
	// non-live rows are reported, not failed.
	Unfiltered bool    `json:"unfiltered,omitempty"`
	Recall     float64 `json:"recall_at_10"` // mean over the questions of the share of their evidence turns in the top 10
	Found      int     `json:"evidence_found"`
	NonLive    int     `json:"non_live_returned"` // rows returned that are not the live version of their key
	Empty      int     `json:"questions_without_hits"`
	Latency    *stat   `json:"latency"` // seconds a search, over every question and run
	P90        float64 `json:"p90_s"`
	Queries    int     `json:"queries"`
	LatencyBy  float64 `json:"latency_p50_ratio,omitempty"` // mql's p50 ÷ this engine's (FTS5 columns)
	P90By      float64 `json:"latency_p90_ratio,omitempty"`
}

type searchResult struct {
	Corpus        string               `json:"corpus"`
	Claims        int                  `json:"claims"` // claim versions asserted (first versions and corrections)
	Conversations int                  `json:"conversations"`
	Superseded    int                  `json:"superseded"`
	Revoked       int                  `json:"revoked"`
	Questions     int                  `json:"questions"`
	Evidence      int                  `json:"evidence_turns"`
	Runs          int                  `json:"runs"`
	FTS5          string               `json:"fts5,omitempty"` // why the FTS5 columns are empty
	Engines       []searchEngineResult `json:"engines"`
	// Bulk ingest, claims/s per conversation (one AssertBatch and one transaction of its
	// revocations; SQLite: one transaction), interleaved conversation by conversation.
	IngestMQL    *stat   `json:"ingest_mql"`
	IngestNoText *stat   `json:"ingest_mql_without_text_index"`
	IngestRatio  float64 `json:"ingest_ratio"` // with ÷ without
	IngestSQLite *stat   `json:"ingest_sqlite_fts5,omitempty"`
	FileMQL      float64 `json:"file_mql"`
	FileNoText   float64 `json:"file_mql_without_text_index"`
	// The pages in use of the two stores' trees (bbolt grows a file in steps of many pages,
	// so the files' sizes differ by more or less than what they hold).
	PagesMQL        float64 `json:"pages_mql"`
	PagesNoText     float64 `json:"pages_mql_without_text_index"`
	TextIndexBytes  float64 `json:"mql_text_index_bytes"`    // PagesMQL − PagesNoText
	TextKVBytes     float64 `json:"mql_text_index_kv_bytes"` // its keys and values
	FTSIndexBytes   float64 `json:"fts5_index_bytes,omitempty"`
	FTSIndexRatio   float64 `json:"index_size_ratio,omitempty"` // TextIndexBytes ÷ FTSIndexBytes
	SQLiteFileBytes float64 `json:"sqlite_file,omitempty"`
}

// runSearchBench builds the corpus of every size into the engines and measures them.
func runSearchBench(ctx context.Context, cfg *config, dir string) ([]searchResult, error) {
	var out []searchResult
	sizes := cfg.sizes
	if cfg.locomo != "" {
		sizes = sizes[:1]
	}
	for _, n := range sizes {
		sr, err := searchSize(ctx, cfg, dir, n)
		if err != nil {
			return nil, fmt.Errorf("search, %d claims: %w", n, err)
		}
		out = append(out, *sr)
		if !cfg.jsonOut {
			fmt.Fprintln(cfg.out, renderSearch(sr))
		}
	}
	return out, nil
}

// searchTruth is what the bench knows of every key it wrote: its live version (0: revoked),
// and the number of versions asserted.
type searchTruth struct {
	live     map[string]int
	versions map[string]int
}

func searchSize(ctx context.Context, cfg *config, dir string, n int) (*searchResult, error) {
	sub := filepath.Join(dir, fmt.Sprintf("search%d", n))
	if err := os.RemoveAll(sub); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(sub, 0o755); err != nil {
		return nil, err
	}
	if !cfg.keep {
		defer os.RemoveAll(sub)
	}
	began := time.Now()
	label := strconv.Itoa(n)
	if cfg.locomo != "" {
		label = filepath.Base(cfg.locomo)
	}
	logf := func(format string, args ...any) {
		if !cfg.jsonOut {
			fmt.Fprintf(os.Stderr, "[search %s] %s +%s rss %d MiB: "+format+"\n", append([]any{label, time.Now().UTC().Format("15:04:05"),
				time.Since(began).Round(time.Second), procStatus("VmRSS:") >> 20}, args...)...)
		}
	}
	var sc searchSource = newSearchCorpus(n, cfg.seed)
	if cfg.locomo != "" {
		var err error
		if sc, err = loadLocomo(cfg.locomo, cfg.locomoCaptions); err != nil {
			return nil, err
		}
	}
	nconv, nclaims := sc.size()
	qs := sc.questions(cfg.questions)
	res := &searchResult{Claims: nclaims, Conversations: nconv, Questions: len(qs), Runs: cfg.runs, Corpus: sc.name()}
	for _, q := range qs {
		res.Evidence += len(q.Evidence)
	}
	logf("corpus: %d conversations, %d claims, %d questions", nconv, nclaims, len(qs))

	withPath, withoutPath, sqlPath := filepath.Join(sub, "mql.db"), filepath.Join(sub, "notext.db"), filepath.Join(sub, "fts.sqlite")
	with, err := openSearchMQL(ctx, withPath, sc)
	if err != nil {
		return nil, err
	}
	defer with.db.Close()
	without, err := openSearchMQL(ctx, withoutPath, sc)
	if err != nil {
		return nil, err
	}
	defer without.db.Close()
	fts, err := openFTS(sqlPath)
	if err != nil {
		return nil, err
	}
	if fts == nil {
		res.FTS5 = ftsMissing
		logf("FTS5: %s", ftsMissing)
	} else {
		defer fts.db.Close()
	}

	// Bulk ingest, interleaved conversation by conversation.
	truth := searchTruth{live: map[string]int{}, versions: map[string]int{}}
	var rates [3][]float64 // with, without, SQLite
	for i := range nconv {
		if i > 0 && i%max(1, nconv/10) == 0 {
			logf("ingest: %d of %d conversations", i, nconv)
		}
		c := sc.conversation(i)
		claims := 0
		for _, op := range c.ops {
			if !op.Revoke {
				claims++
			}
		}
		// The versions each op asserts or revokes, as both engines will number them.
		vers := make([]int, len(c.ops))
		for j, op := range c.ops {
			k := op.key()
			if op.Revoke {
				vers[j] = truth.versions[k]
				truth.live[k] = 0
				continue
			}
			truth.versions[k]++
			vers[j] = truth.versions[k]
			truth.live[k] = vers[j]
		}
		t := time.Now()
		if err := with.ingest(c.ops, vers); err != nil {
			return nil, fmt.Errorf("mql ingest: %w", err)
		}
		rates[0] = append(rates[0], float64(claims)/time.Since(t).Seconds())
		benchknob.NoTextIndex.Store(true)
		t = time.Now()
		err := without.ingest(c.ops, vers)
		rates[1] = append(rates[1], float64(claims)/time.Since(t).Seconds())
		benchknob.NoTextIndex.Store(false)
		if err != nil {
			return nil, fmt.Errorf("mql ingest without the text index: %w", err)
		}
		if fts != nil {
			t = time.Now()
			if err := fts.ingest(c.ops, vers); err != nil {
				return nil, fmt.Errorf("SQLite ingest: %w", err)
			}
			rates[2] = append(rates[2], float64(claims)/time.Since(t).Seconds())
		}
	}
	for k, v := range truth.live {
		switch {
		case v == 0:
			res.Revoked++
			res.Superseded += truth.versions[k] - 1
		default:
			res.Superseded += v - 1
		}
	}
	res.IngestMQL, res.IngestNoText = summarize(rates[0], "claims/s"), summarize(rates[1], "claims/s")
	res.IngestRatio = res.IngestMQL.Median / res.IngestNoText.Median
	res.IngestSQLite = summarize(rates[2], "claims/s")
	if err := without.db.Close(); err != nil {
		return nil, err
	}

	// The searches: every question once per run, on every engine in turn (the order rotating
	// question by question), each call timed alone.
	logf("searches: %d questions × %d runs", len(qs), cfg.runs)
	type searchFn func(string) ([]hitKey, error)
	fns := [nSearchEngines]searchFn{seMQL: with.search}
	if fts != nil {
		fns[seFTSAll] = func(q string) ([]hitKey, error) { return fts.search(ftsQueryAll(q)) }
		fns[seFTSKept] = func(q string) ([]hitKey, error) { return fts.search(ftsQueryKept(q)) }
		fns[seFTSAlone] = func(q string) ([]hitKey, error) { return fts.searchAlone(ftsQueryKept(q)) }
	}
	engines := make([]searchEngineResult, nSearchEngines)
	times := make([][]float64, nSearchEngines)
	for e := range engines {
		engines[e].Name = searchEngineNames[e]
		engines[e].Unfiltered = e == seFTSAlone
	}
	for run := range cfg.runs {
		for qi, q := range qs {
			for j := range nSearchEngines {
				e := (qi + j + run) % nSearchEngines
				if fns[e] == nil {
					continue
				}
				t := time.Now()
				hits, err := fns[e](q.Text)
				if err != nil {
					return nil, fmt.Errorf("%s: %q: %w", searchEngineNames[e], q.Text, err)
				}
				times[e] = append(times[e], time.Since(t).Seconds())
				if run == 0 {
					score(&engines[e], q, hits, truth)
				}
			}
		}
	}
	for e := range engines {
		if fns[e] == nil {
			continue
		}
		r := &engines[e]
		r.Recall /= float64(len(qs))
		r.Latency = summarize(times[e], "s")
		r.P90 = percentile(times[e], 0.9)
		r.Queries = len(times[e])
		if e != seMQL {
			r.LatencyBy = engines[seMQL].Latency.Median / r.Latency.Median
			r.P90By = engines[seMQL].P90 / r.P90
		}
		res.Engines = append(res.Engines, *r)
	}

	// Sizes: mql's text index is the difference of the pages the two stores use, and its keys
	// and values; FTS5's, the difference its tables make to a vacuumed SQLite file.
	logf("sizes")
	if err := with.db.Close(); err != nil {
		return nil, err
	}
	res.FileMQL, res.FileNoText = fileSize(withPath), fileSize(withoutPath)
	if res.PagesMQL, res.TextKVBytes, err = boltBytes(withPath); err != nil {
		return nil, err
	}
	if res.PagesNoText, _, err = boltBytes(withoutPath); err != nil {
		return nil, err
	}
	res.TextIndexBytes = res.PagesMQL - res.PagesNoText
	if fts != nil {
		if res.FTSIndexBytes, res.SQLiteFileBytes, err = fts.indexBytes(); err != nil {
			return nil, err
		}
		res.FTSIndexRatio = res.TextIndexBytes / res.FTSIndexBytes
	}
	logf("done")
	return res, nil
}

// hitKey is a row a search returned: its key and version.
type hitKey struct {
	key     string
	version int
}

// score adds one question's answers to an engine's figures: the share of its evidence found in
// the top 10 (each evidence turn counts once, and only as its live version), and every row
// that is not the live version of its key.
func score(r *searchEngineResult, q question, hits []hitKey, truth searchTruth) {
	found := 0
	for _, ev := range q.Evidence {
		if slices.ContainsFunc(hits, func(h hitKey) bool { return h.key == ev && h.version == truth.live[ev] }) {
			found++
		}
	}
	for _, h := range hits {
		if truth.live[h.key] != h.version {
			r.NonLive++
		}
	}
	if len(hits) == 0 {
		r.Empty++
	}
	r.Found += found
	r.Recall += float64(found) / float64(len(q.Evidence))
}

// percentile is the p-th quantile of xs (nearest rank).
func percentile(xs []float64, p float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// ---- mql -----------------------------------------------------------------------------------

type searchMQL struct {
	db  *mql.DB
	ctx context.Context
}

// openSearchMQL creates a store at path with every speaker of the corpus as a principal.
func openSearchMQL(ctx context.Context, path string, sc searchSource) (*searchMQL, error) {
	db, err := mql.Open(ctx, path, mql.Options{})
	if err != nil {
		return nil, err
	}
	_, err = db.Tx(ctx, "owner", func(tx *mql.Tx) error {
		for _, s := range sc.principals() {
			if _, err := tx.AddPrincipal(mql.PrincipalSpec{Name: s, Type: mql.Agent, By: "owner"}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &searchMQL{db: db, ctx: ctx}, nil
}

// ingest writes a conversation: its turns in one AssertBatch, then its revocations in one
// transaction.
func (e *searchMQL) ingest(ops []turnOp, vers []int) error {
	var specs []mql.AssertSpec
	var revokes []string
	for i, op := range ops {
		if op.Revoke {
			revokes = append(revokes, fmt.Sprintf("%s@%d", op.key(), vers[i]))
			continue
		}
		specs = append(specs, mql.AssertSpec{Subject: op.Speaker, Predicate: op.Predicate, Value: mql.String(op.Text), By: op.Speaker, ValidFrom: op.ValidFrom})
	}
	if _, err := e.db.AssertBatch(e.ctx, "owner", specs); err != nil {
		return err
	}
	if len(revokes) == 0 {
		return nil
	}
	_, err := e.db.Tx(e.ctx, "owner", func(tx *mql.Tx) error {
		for _, ref := range revokes {
			if _, err := tx.Revoke(mql.RevokeSpec{Claim: ref, By: "owner", Because: "retracted by its speaker"}); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

func (e *searchMQL) search(q string) ([]hitKey, error) {
	r, err := e.db.Search(e.ctx, q, mql.SearchOptions{Limit: searchK})
	if err != nil {
		return nil, err
	}
	out := make([]hitKey, len(r.Hits))
	for i, h := range r.Hits {
		out[i] = hitKey{key: h.Subject + "." + h.Predicate, version: h.Version}
	}
	return out, nil
}

// boltBytes is the bytes of the pages the store's tree uses in the closed store at path, and
// the bytes of the keys and values of its text index's kv buckets.
func boltBytes(path string) (float64, float64, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	var pages, n int
	err = db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket([]byte(boltkv.Bucket))
		if bk == nil {
			return fmt.Errorf("%s: no bucket %s", path, boltkv.Bucket)
		}
		st := bk.Stats()
		pages = (st.BranchPageN + st.BranchOverflowN + st.LeafPageN + st.LeafOverflowN) * db.Info().PageSize
		c := bk.Cursor()
		for _, b := range index.TextBuckets {
			// boltkv puts each kv bucket's number before its keys.
			prefix := []byte{byte(b)}
			for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
				n += len(k) + len(v)
			}
		}
		return nil
	})
	return float64(pages), float64(n), err
}

// ---- SQLite FTS5 ---------------------------------------------------------------------------

// The peer: the turns as rows, live-ness a column updated in the same transaction (as the
// relational peer keeps it), and an FTS5 index of the same text mql indexes (the subject, the
// predicate and the value) with the porter and unicode61 tokenizers, its content the turns
// table (external content: the text is not stored twice). Every version is indexed, as in
// mql; a search keeps the live rows.
const ftsSchema = `
CREATE TABLE turns(id INTEGER PRIMARY KEY, subject TEXT NOT NULL, predicate TEXT NOT NULL, version INTEGER NOT NULL,
	body TEXT NOT NULL, valid_from INTEGER NOT NULL, live INTEGER NOT NULL);
CREATE INDEX turns_live ON turns(subject, predicate) WHERE live = 1;
CREATE VIRTUAL TABLE fts USING fts5(body, content='turns', content_rowid='id', tokenize='porter unicode61');
`

const ftsSearch = `SELECT t.subject, t.predicate, t.version FROM fts JOIN turns t ON t.id = fts.rowid
	WHERE fts MATCH ? AND t.live = 1 ORDER BY bm25(fts) LIMIT 10`

// ftsSearchAlone is FTS5's fastest form of the search: its own top 10 by rank (bm25), with no
// join before the limit. It returns rows that are not live; it is measured for its latency.
const ftsSearchAlone = `SELECT t.subject, t.predicate, t.version FROM turns t
	WHERE t.id IN (SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT 10)`

type ftsEngine struct {
	db                  *sql.DB
	search, searchAlone func(string) ([]hitKey, error)
}

// openFTS creates the peer at path, or returns nil if this binary's SQLite has no FTS5.
func openFTS(path string) (*ftsEngine, error) {
	db, err := sql.Open("sqlite3", sqliteDSN(path, "NORMAL"))
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(ftsSchema); err != nil {
		db.Close()
		if strings.Contains(err.Error(), "no such module: fts5") {
			return nil, os.Remove(path)
		}
		return nil, err
	}
	e := &ftsEngine{db: db}
	if e.search, err = ftsQuery(db, ftsSearch); err == nil {
		e.searchAlone, err = ftsQuery(db, ftsSearchAlone)
	}
	if err != nil {
		db.Close()
		return nil, err
	}
	return e, nil
}

// ftsQuery prepares query (of one MATCH parameter) and returns its runner.
func ftsQuery(db *sql.DB, query string) (func(string) ([]hitKey, error), error) {
	stmt, err := db.Prepare(query)
	if err != nil {
		return nil, err
	}
	return func(match string) ([]hitKey, error) {
		rows, err := stmt.Query(match)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []hitKey
		for rows.Next() {
			var s, p string
			var v int
			if err := rows.Scan(&s, &p, &v); err != nil {
				return nil, err
			}
			out = append(out, hitKey{key: s + "." + p, version: v})
		}
		return out, rows.Err()
	}, nil
}

// ftsBody is the text FTS5 indexes for a turn: what mql indexes of its claim.
func ftsBody(op turnOp) string { return op.Speaker + " " + op.Predicate + " " + op.Text }

func (e *ftsEngine) ingest(ops []turnOp, vers []int) error {
	tx, err := e.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for i, op := range ops {
		// The live version of the key, if any, is no longer live: superseded or revoked.
		if _, err := tx.Exec(`UPDATE turns SET live = 0 WHERE subject = ? AND predicate = ? AND live = 1`, op.Speaker, op.Predicate); err != nil {
			return err
		}
		if op.Revoke {
			continue
		}
		body := ftsBody(op)
		r, err := tx.Exec(`INSERT INTO turns(subject, predicate, version, body, valid_from, live) VALUES (?, ?, ?, ?, ?, 1)`,
			op.Speaker, op.Predicate, vers[i], body, op.ValidFrom.Unix())
		if err != nil {
			return err
		}
		id, err := r.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO fts(rowid, body) VALUES (?, ?)`, id, body); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// indexBytes is the bytes FTS5's tables add to the SQLite file: the file vacuumed, less the
// file vacuumed again after dropping them. It drops them: call it last. It also returns the
// file's size with them.
func (e *ftsEngine) indexBytes() (float64, float64, error) {
	size := func() (float64, error) {
		if _, err := e.db.Exec(`VACUUM`); err != nil {
			return 0, err
		}
		var pages, pageSize int64
		if err := e.db.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
			return 0, err
		}
		if err := e.db.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
			return 0, err
		}
		return float64(pages * pageSize), nil
	}
	with, err := size()
	if err != nil {
		return 0, 0, err
	}
	if _, err := e.db.Exec(`DROP TABLE fts`); err != nil {
		return 0, 0, err
	}
	without, err := size()
	return with - without, with, err
}

// ftsWords are the words of a question as a user would pass them to FTS5: the runs of letters
// and digits (FTS5's query syntax gives punctuation a meaning, so it is dropped).
func ftsWords(q string) []string {
	return strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}

// ftsOr is the FTS5 query matching any of words: each a quoted string, joined by OR.
func ftsOr(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = `"` + w + `"`
	}
	return strings.Join(quoted, " OR ")
}

// ftsQueryAll is the question as an FTS5 query: every word, ORed.
func ftsQueryAll(q string) string { return ftsOr(ftsWords(q)) }

// ftsQueryKept is the question as an FTS5 query of the words mql searches for: the words its
// analyzer keeps (its stop words, such as "what" and "the", dropped), ORed.
func ftsQueryKept(q string) string {
	an := analysis.New()
	var kept []string
	for _, w := range ftsWords(q) {
		if len(an.Terms(w)) > 0 {
			kept = append(kept, w)
		}
	}
	return ftsOr(kept)
}

// ---- report --------------------------------------------------------------------------------

func renderSearch(sr *searchResult) string {
	var b strings.Builder
	shape := fmt.Sprintf("%d sessions × %d turns", searchSessions, searchTurns)
	if sr.Corpus != "generated" {
		shape = sr.Corpus
	}
	fmt.Fprintf(&b, "\n### Search: %d claims\n\n", sr.Claims)
	fmt.Fprintf(&b, "%d conversations of %s; %d superseded versions (corrections), %d revoked turns (retractions); %d questions with %d evidence turns; latency over %d runs of every question.\n\n",
		sr.Conversations, shape, sr.Superseded, sr.Revoked, sr.Questions, sr.Evidence, sr.Runs)
	if sr.FTS5 != "" {
		fmt.Fprintf(&b, "FTS5: %s.\n\n", sr.FTS5)
	}
	b.WriteString("| engine | recall@10 | evidence found | non-live rows returned | questions without a hit | search p50 | p90 | mql ÷ it, p50 | p90 |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, e := range sr.Engines {
		r50, r90 := "—", "—"
		if e.LatencyBy != 0 {
			r50, r90 = fmtVal(e.LatencyBy, "ratio"), fmtVal(e.P90By, "ratio")
		}
		fmt.Fprintf(&b, "| %s | %.3f | %d of %d | %d | %d | %s | %s | %s | %s |\n", e.Name, e.Recall, e.Found, sr.Evidence, e.NonLive, e.Empty,
			fmtVal(e.Latency.Median, "s"), fmtVal(e.P90, "s"), r50, r90)
	}
	b.WriteString("\n| ingest and size | mql | mql without its text index | SQLite + FTS5 | ratio |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| bulk ingest (claims/s, a conversation a batch) | %s | %s | %s | %s with ÷ without |\n",
		fmtStat(sr.IngestMQL), fmtStat(sr.IngestNoText), fmtStat(sr.IngestSQLite), fmtVal(sr.IngestRatio, "ratio"))
	fts, sqlite, ratio := "—", "—", "—"
	if sr.FTSIndexBytes > 0 {
		fts, sqlite, ratio = fmtVal(sr.FTSIndexBytes, "bytes"), fmtVal(sr.SQLiteFileBytes, "bytes"), fmtVal(sr.FTSIndexRatio, "ratio")+" mql's ÷ FTS5's"
	}
	fmt.Fprintf(&b, "| file | %s | %s | %s (vacuumed) | |\n", fmtVal(sr.FileMQL, "bytes"), fmtVal(sr.FileNoText, "bytes"), sqlite)
	fmt.Fprintf(&b, "| pages in use (bbolt's tree) | %s | %s | | |\n", fmtVal(sr.PagesMQL, "bytes"), fmtVal(sr.PagesNoText, "bytes"))
	fmt.Fprintf(&b, "| text index (mql: the difference of the pages in use; FTS5: of the vacuumed file without its tables) | %s | | %s | %s |\n", fmtVal(sr.TextIndexBytes, "bytes"), fts, ratio)
	fmt.Fprintf(&b, "| text index, its keys and values alone | %s | | | |\n", fmtVal(sr.TextKVBytes, "bytes"))
	return b.String()
}
