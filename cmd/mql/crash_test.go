package main

// Crash safety: the real mql binary is killed with SIGKILL at random points while it writes a
// stream of transactions, or while it imports a large export, and the store is then checked.
// Durations and counts are set by environment variables so that CI can run them longer:
//
//	MQL_CRASH_SEED         seed of the random kill points and scripts (default 1)
//	MQL_CRASH_KILLS        kills of a statement stream (default 20)
//	MQL_CRASH_IMPORT_KILLS kills of an import (default 6)
//	MQL_CRASH_IMPORT_TXS   transactions in the imported export (default 500)
//
// docs/RELIABILITY.md reports the figures of real runs.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mql-dev/mql"
	"github.com/mql-dev/mql/query"
)

func crashEnvInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// crashBuild builds the mql binary into a temporary directory. It is built without the race
// detector even when the tests run with it: each process under test is one writer (the
// in-process tests cover races), and the times and memory measured are those of the real
// command, five times faster and several times smaller than a race build.
func crashBuild(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("SIGKILL")
	}
	bin := filepath.Join(t.TempDir(), "mql")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func crashCmd(bin, home string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "MQL_DB=", "MQL_HISTFILE=", testClockEnv+"=")
	return cmd
}

// crashCheck runs `mql check` on path and fails the test unless the store is sound. It
// returns false (without failing) when the store holds no transaction yet: the writer was
// killed before it wrote the genesis.
func crashCheck(t *testing.T, bin, home, path string) bool {
	t.Helper()
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() == 0) {
		// Killed before bbolt wrote the file's first pages: mql check calls it no store.
		return false
	}
	var out, errb bytes.Buffer
	cmd := crashCmd(bin, home, "check", path)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err == nil {
		return true
	}
	if strings.Contains(out.String(), "holds no transactions") && strings.Count(out.String(), "\n") == 3 {
		return false
	}
	t.Fatalf("mql check %s after a kill: %v\n%s%s", path, err, out.String(), errb.String())
	return false
}

// ---- a generator of statements that always succeed -------------------------------------------

type crashClaim struct {
	ref, by string
	value   any // as the JSON output prints it
	revoked bool
}

type crashStmt struct {
	src   string
	kind  string // the JSON result kind
	ref   string // the reference the receipt names
	node  func(tx int64) string
	value any // asserts: the value
	// vector is an assert's vector, as the export writes it ("" for none): a vector is
	// committed with its claim, so a kill keeps both or neither.
	vector string
	apply  func(g *crashGen)
}

type crashGen struct {
	rng    *rand.Rand
	vers   map[string]int // key -> versions ("principal:NAME" -> 1 once recorded)
	claims []*crashClaim
	arts   []int // versions of artifact a<i>
	n      int
}

var crashKeys = []string{"S0.price", "S1.price", "S2.price", "S0.note", "S1.note", "S3.note"}
var crashAgents = []string{"p0", "p1", "p2", "p3"}

func newCrashGen(seed uint64) *crashGen {
	return &crashGen{rng: rand.New(rand.NewPCG(seed, 0x6d716c)), vers: map[string]int{}, arts: make([]int, 4)}
}

func (g *crashGen) clone() *crashGen {
	c := *g
	c.rng = rand.New(rand.NewPCG(g.rng.Uint64(), g.rng.Uint64()))
	c.vers = map[string]int{}
	for k, v := range g.vers {
		c.vers[k] = v
	}
	c.claims = nil
	for _, cl := range g.claims {
		x := *cl
		c.claims = append(c.claims, &x)
	}
	c.arts = append([]int(nil), g.arts...)
	return &c
}

// script returns n statements that follow on from g's state; g is unchanged.
func (g *crashGen) script(n int) []crashStmt {
	s := g.clone()
	var out []crashStmt
	for len(out) < n {
		st := s.next()
		st.apply(s)
		out = append(out, st)
	}
	return out
}

func (g *crashGen) next() crashStmt {
	g.n++
	for _, p := range append(append([]string(nil), crashAgents...), "alice") {
		if g.vers["principal:"+p] == 0 {
			typ := "agent"
			if p == "alice" {
				typ = "user"
			}
			return crashStmt{src: "principal " + p + " " + typ, kind: "principal", ref: p,
				node:  func(int64) string { return "urn:mql:principal:" + p },
				apply: func(g *crashGen) { g.vers["principal:"+p] = 1 }}
		}
	}
	r := g.rng.IntN(100)
	switch {
	case r < 15:
		var open []*crashClaim
		for _, c := range g.claims {
			if !c.revoked {
				open = append(open, c)
			}
		}
		if len(open) == 0 {
			break
		}
		c := open[g.rng.IntN(len(open))]
		ref := c.ref
		return crashStmt{src: fmt.Sprintf("revoke %s by %s because \"crash test\"", ref, c.by), kind: "revoke", ref: ref,
			node: func(tx int64) string { return fmt.Sprintf("urn:mql:revocation:r%d.1", tx) },
			apply: func(g *crashGen) {
				for _, x := range g.claims {
					if x.ref == ref {
						x.revoked = true
					}
				}
			}}
	case r < 30:
		if len(g.claims) == 0 {
			break
		}
		i := g.rng.IntN(len(g.arts))
		from := []string{g.claims[g.rng.IntN(len(g.claims))].ref}
		if j := g.rng.IntN(len(g.arts)); j < i && g.arts[j] > 0 {
			from = append(from, fmt.Sprintf("a%d", j)) // only from lower-numbered artifacts: never a cycle
		}
		ref := fmt.Sprintf("a%d@%d", i, g.arts[i]+1)
		by := crashAgents[g.rng.IntN(len(crashAgents))]
		return crashStmt{src: fmt.Sprintf("derive a%d from %s by %s", i, strings.Join(from, ", "), by), kind: "derive", ref: ref,
			node:  func(int64) string { return "urn:mql:artifact:" + ref },
			apply: func(g *crashGen) { g.arts[i]++ }}
	case r < 35:
		var have []int
		for i, v := range g.arts {
			if v > 0 {
				have = append(have, i)
			}
		}
		if len(have) == 0 {
			break
		}
		i := have[g.rng.IntN(len(have))]
		ref := fmt.Sprintf("a%d@%d", i, g.arts[i])
		return crashStmt{src: fmt.Sprintf("review a%d by alice because \"looked again\"", i), kind: "review", ref: ref,
			node:  func(tx int64) string { return fmt.Sprintf("urn:mql:review:v%d.1", tx) },
			apply: func(*crashGen) {}}
	}
	key := crashKeys[g.rng.IntN(len(crashKeys))]
	by := crashAgents[g.rng.IntN(len(crashAgents))]
	var lit string
	var val any
	if strings.HasSuffix(key, ".price") {
		n := g.rng.IntN(1000)
		lit, val = strconv.Itoa(n), float64(n)
	} else {
		s := fmt.Sprintf("note %d of run %d", g.rng.IntN(1000), g.n)
		lit, val = strconv.Quote(s), s
	}
	src := fmt.Sprintf("assert %s = %s by %s", key, lit, by)
	if g.rng.IntN(2) == 0 {
		src += fmt.Sprintf(" from \"src:%d\"", g.n)
	}
	var vec string
	if g.rng.IntN(2) == 0 {
		vec = fmt.Sprintf("1 %d 0.5", g.n%7)
		src += fmt.Sprintf(" vector %q", vec)
	}
	ref := fmt.Sprintf("%s@%d", key, g.vers[key]+1)
	return crashStmt{src: src, kind: "assert", ref: ref, value: val, vector: vec,
		node: func(int64) string { return "urn:mql:claim:" + ref },
		apply: func(g *crashGen) {
			g.vers[key]++
			g.claims = append(g.claims, &crashClaim{ref: ref, by: by, value: val})
		}}
}

// ---- verification ----------------------------------------------------------------------------

var crashWroteRE = regexp.MustCompile(`^<urn:mql:tx:(\d+)> <urn:mql:wrote> <([^>]*)>`)

// crashVerify opens the store and checks that it holds exactly the statements done, in order,
// each in its own transaction after the genesis, and nothing else.
func crashVerify(t *testing.T, path string, done []crashStmt) {
	t.Helper()
	ctx := context.Background()
	db, err := mql.Open(ctx, path, mql.Options{OpenTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open after a kill: %v", err)
	}
	defer db.Close()
	head, err := db.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head != int64(len(done))+1 {
		t.Fatalf("the store holds %d transactions after the genesis, %d statements were done", head-1, len(done))
	}
	var nq bytes.Buffer
	if err := db.Export(ctx, &nq); err != nil {
		t.Fatal(err)
	}
	wrote := map[string]string{} // record IRI -> tx
	for _, line := range strings.Split(nq.String(), "\n") {
		// (A revocation writes on the claim it revokes too: keep the first transaction.)
		if m := crashWroteRE.FindStringSubmatch(line); m != nil && wrote[m[2]] == "" {
			wrote[m[2]] = m[1]
		}
	}
	for i, st := range done {
		tx := int64(i) + 2
		node := st.node(tx)
		if wrote[node] != strconv.FormatInt(tx, 10) {
			t.Fatalf("statement %d (%s): %s is in tx %q, want tx %d", i, st.src, node, wrote[node], tx)
		}
		if st.kind == "assert" {
			rb, err := db.RevokedBy(ctx, st.ref)
			if err != nil || rb.Claim.Tx != tx {
				t.Fatalf("%s: %v, tx %d", st.ref, err, rb.Claim.Tx)
			}
			if got, _ := json.Marshal(rb.Claim.Value); string(got) != mustJSON(st.value) {
				t.Fatalf("%s = %s, want %s", st.ref, got, mustJSON(st.value))
			}
			line := fmt.Sprintf("<urn:mql:claim:%s> <urn:mql:vector> %q^^<urn:mql:Vector>", st.ref, st.vector)
			if has := strings.Contains(nq.String(), line); has != (st.vector != "") || st.vector == "" && strings.Contains(nq.String(), "<urn:mql:claim:"+st.ref+"> <urn:mql:vector>") {
				t.Fatalf("%s: the export holds its vector %v, want %q", st.ref, has, st.vector)
			}
		}
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

type crashAck struct {
	Kind string `json:"kind"`
	Rows []struct {
		Tx  int64  `json:"tx"`
		Ref string `json:"ref"`
	} `json:"rows"`
}

// TestCrashDuringWrites kills `mql -f -` with SIGKILL at random points while it commits a stream
// of statements into one bbolt store, run after run. After every kill `mql check` passes, every
// acknowledged statement is in the store, in its own transaction, and of the statements not
// acknowledged at most the one in flight is, whole.
func TestCrashDuringWrites(t *testing.T) {
	kills := crashEnvInt(t, "MQL_CRASH_KILLS", 20)
	seed := uint64(crashEnvInt(t, "MQL_CRASH_SEED", 1))
	if kills == 0 {
		t.Skip("MQL_CRASH_KILLS=0")
	}
	bin := crashBuild(t)
	home := t.TempDir()
	path := filepath.Join(home, "crash.db")
	rng := rand.New(rand.NewPCG(seed, 1))
	gen := newCrashGen(seed)
	var done []crashStmt
	killed, acked, inflight, beforeGenesis, completed := 0, 0, 0, 0, 0
	for run := 0; killed < kills; run++ {
		if run > 4*kills {
			t.Fatalf("%d runs for %d kills", run, killed)
		}
		script := gen.script(200)
		var src strings.Builder
		for _, st := range script {
			src.WriteString(st.src)
			src.WriteByte('\n')
		}
		cmd := crashCmd(bin, home, "--format", "json", "-f", "-", path)
		cmd.Stdin = strings.NewReader(src.String())
		var errb bytes.Buffer
		cmd.Stderr = &errb
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Kill after a random number of acknowledgements (0: at a random moment of start-up,
		// possibly before the store exists), then a random fraction of a commit later.
		target := rng.IntN(40)
		if target == 0 {
			time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		}
		var acks []crashAck
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for len(acks) < target && sc.Scan() {
			var a crashAck
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil || len(a.Rows) != 1 {
				t.Fatalf("acknowledgement %q: %v", sc.Text(), err)
			}
			acks = append(acks, a)
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		cmd.Process.Signal(syscall.SIGKILL)
		// Anything acknowledged after the decision to kill counts too.
		for sc.Scan() {
			var a crashAck
			if json.Unmarshal(sc.Bytes(), &a) == nil && len(a.Rows) == 1 {
				acks = append(acks, a)
			}
		}
		werr := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(werr, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled() {
			killed++
		} else {
			completed++
			if werr != nil {
				t.Fatalf("run %d ended with %v before the kill:\n%s", run, werr, errb.String())
			}
		}
		// Every acknowledgement names the statement and transaction expected.
		for i, a := range acks {
			st := script[i]
			if want := int64(len(done) + i + 2); a.Kind != st.kind || a.Rows[0].Tx != want || a.Rows[0].Ref != st.ref {
				t.Fatalf("run %d, ack %d: %s %s in tx %d; want %s %s in tx %d", run, i, a.Kind, a.Rows[0].Ref, a.Rows[0].Tx, st.kind, st.ref, want)
			}
		}
		acked += len(acks)
		if !crashCheck(t, bin, home, path) {
			if len(done)+len(acks) > 0 {
				t.Fatalf("run %d: the store is gone after %d statements", run, len(done)+len(acks))
			}
			beforeGenesis++
			continue
		}
		// What the store holds: every acknowledged statement, and perhaps the one in flight.
		db, err := mql.Open(context.Background(), path, mql.Options{})
		if err != nil {
			t.Fatalf("run %d: open after the kill: %v", run, err)
		}
		head, _ := db.Head(context.Background())
		db.Close()
		n := int(head) - 1 - len(done)
		switch {
		case n == len(acks):
		case n == len(acks)+1 && n <= len(script):
			inflight++
		default:
			t.Fatalf("run %d: %d statements acknowledged, the store holds %d new transactions", run, len(acks), n)
		}
		for _, st := range script[:n] {
			st.apply(gen)
		}
		done = append(done, script[:n]...)
		crashVerify(t, path, done)
	}
	t.Logf("seed %d: %d SIGKILLs survived (%d runs completed unkilled, %d killed before the genesis); %d acknowledged statements, %d committed while in flight; %d statements verified after every kill",
		seed, killed, completed, beforeGenesis, acked, inflight, len(done))
}

// TestCrashDuringImport kills `mql import` of a large export at random points: afterwards the
// store either does not exist or is the whole import, sound, and an interrupted import can be
// run again into the same path.
func TestCrashDuringImport(t *testing.T) {
	kills := crashEnvInt(t, "MQL_CRASH_IMPORT_KILLS", 6)
	ntx := crashEnvInt(t, "MQL_CRASH_IMPORT_TXS", 500)
	seed := uint64(crashEnvInt(t, "MQL_CRASH_SEED", 1))
	if kills == 0 {
		t.Skip("MQL_CRASH_IMPORT_KILLS=0")
	}
	bin := crashBuild(t)
	home := t.TempDir()
	ctx := context.Background()

	// The export: ntx transactions of the statement generator, written in memory.
	src, err := mql.Open(ctx, "memory:", mql.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sess := newCrashSession(src)
	for _, st := range newCrashGen(seed).script(ntx - 1) {
		if err := sess(st.src); err != nil {
			t.Fatalf("%s: %v", st.src, err)
		}
	}
	var want bytes.Buffer
	if err := src.Export(ctx, &want); err != nil {
		t.Fatal(err)
	}
	src.Close()
	nq := filepath.Join(home, "big.nq")
	if err := os.WriteFile(nq, want.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	exportOf := func(path string) []byte {
		db, err := mql.Open(ctx, path, mql.Options{})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer db.Close()
		var b bytes.Buffer
		if err := db.Export(ctx, &b); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	importOnce := func(path string) time.Duration {
		start := time.Now()
		if out, err := crashCmd(bin, home, "import", "--db", path, nq).CombinedOutput(); err != nil {
			t.Fatalf("import: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	full := importOnce(filepath.Join(home, "full.db"))
	// An import is the exported store, exactly: its export is the same file.
	if !bytes.Equal(exportOf(filepath.Join(home, "full.db")), want.Bytes()) {
		t.Fatal("an import that ran to the end differs from its export")
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	killed, whole, noStore, finished := 0, 0, 0, 0
	for i := 0; killed < kills; i++ {
		if i > 4*kills {
			t.Fatalf("%d runs for %d kills", i, killed)
		}
		path := filepath.Join(home, fmt.Sprintf("imp%d.db", i))
		cmd := crashCmd(bin, home, "import", "--db", path, nq)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Half the kills anywhere in the run, half in its last quarter, where the file is
		// synced and moved into place.
		if i%2 == 0 {
			time.Sleep(time.Duration(rng.Int64N(int64(full))))
		} else {
			time.Sleep(full*3/4 + time.Duration(rng.Int64N(int64(full)/4)))
		}
		cmd.Process.Signal(syscall.SIGKILL)
		werr := cmd.Wait()
		var ee *exec.ExitError
		wasKilled := errors.As(werr, &ee) && ee.ProcessState.Sys().(syscall.WaitStatus).Signaled()
		if wasKilled {
			killed++
		} else if werr != nil {
			t.Fatalf("import ended with %v:\n%s", werr, errb.String())
		} else {
			finished++
		}
		acknowledged := strings.Contains(errb.String(), "imported ")
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			if acknowledged {
				t.Fatal("an acknowledged import left no store")
			}
			noStore++
			importOnce(path) // the interrupted import runs again into the same path
		} else {
			if !crashCheck(t, bin, home, path) {
				t.Fatal("an import left a store without transactions")
			}
			db, err := mql.Open(ctx, path, mql.Options{})
			if err != nil {
				t.Fatalf("open after a kill: %v", err)
			}
			head, _ := db.Head(ctx)
			db.Close()
			if head != int64(ntx) {
				t.Fatalf("after a kill the store holds %d of %d transactions (acknowledged: %v)", head, ntx, acknowledged)
			}
			if wasKilled {
				whole++
			}
		}
		if !bytes.Equal(exportOf(path), want.Bytes()) {
			t.Fatal("the store differs from the export after the kill and a rerun")
		}
	}
	leftover, _ := filepath.Glob(filepath.Join(home, ".imp*.import-*"))
	t.Logf("seed %d: import of %d transactions (%d quads) takes %s; %d SIGKILLs: %d left the whole store, %d no store (%d temporary files left beside them); %d runs finished before the kill; all reimported and equal to the export",
		seed, ntx, strings.Count(want.String(), " .\n"), full.Round(time.Millisecond), killed, whole, noStore, len(leftover), finished)
}

// newCrashSession evaluates statements one at a time against db, through the same query layer
// as the command.
func newCrashSession(db *mql.DB) func(src string) error {
	sess := query.NewSession(db, "")
	return func(src string) error { return sess.Exec(context.Background(), "gen", src, nil) }
}
