package main

// Damaged files: a small bbolt store is damaged in seeded random ways (byte flips, zeroed,
// random and duplicated pages, truncations, swapped and zeroed meta pages, damage aimed at the
// freelist, the root and page headers) and the real mql binary runs `check`, `export` (a read)
// and a write on each copy. The number of cases is set by an environment variable so that CI
// runs more:
//
//	MQL_DAMAGE_CASES  damaged copies (default 60; 200 when CI is set)
//	MQL_DAMAGE_SEED   seed of the damage (default 1)
//	MQL_DAMAGE_KEEP   a directory to keep a copy of every damaged case in, to reproduce one
//
// docs/RELIABILITY.md reports the figures of real runs.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// damageRun is one process run on a damaged store.
type damageRun struct {
	code   int
	stdout string
	stderr string
	took   time.Duration
}

// crashed reports whether the process died of a Go panic, a runtime fault or a signal, or hung.
func (r damageRun) crashed() bool {
	if r.code < 0 {
		return true // killed by a signal, or by the timeout below
	}
	for _, s := range []string{"panic:", "fatal error:", "unexpected fault address", "SIGSEGV", "SIGBUS", "goroutine "} {
		if strings.Contains(r.stderr, s) {
			return true
		}
	}
	return false
}

func (r damageRun) String() string {
	return fmt.Sprintf("exit %d\nstdout: %.600s\nstderr: %.2000s", r.code, r.stdout, r.stderr)
}

// exportDiff names the first line where got differs from want, for a failure message.
func exportDiff(want, got string) string {
	if want == got {
		return "the same as the sound store's"
	}
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("%d lines against %d; line %d differs:\nwant %.400q\ngot  %.400q", len(g), len(w), i+1, wl, gl)
		}
	}
	return "differs"
}

func damageExec(bin, home string, args ...string) damageRun {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = crashCmd(bin, home).Env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	if err != nil {
		code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode() // -1 when killed by a signal
		}
	}
	return damageRun{code: code, stdout: out.String(), stderr: errb.String(), took: took}
}

// boltGeometry reads the page size and high-water mark of a sound bbolt file from its first
// meta page (the layout is bbolt's: a 16-byte page header, then magic, version, page size,
// flags, root bucket, freelist, pgid, txid, checksum).
func boltGeometry(t *testing.T, data []byte) (pageSize, hwm int) {
	t.Helper()
	m0, m1 := data[16:], data[binary.LittleEndian.Uint32(data[24:])+16:]
	m := m0
	if binary.LittleEndian.Uint64(m1[48:]) > binary.LittleEndian.Uint64(m0[48:]) {
		m = m1
	}
	pageSize, hwm = int(binary.LittleEndian.Uint32(m[8:])), int(binary.LittleEndian.Uint64(m[40:]))
	if pageSize < 512 || hwm < 4 || hwm*pageSize > len(data) {
		t.Fatalf("not a sound bbolt file: page size %d, %d pages, %d bytes", pageSize, hwm, len(data))
	}
	return pageSize, hwm
}

// damage is one way of damaging a file: it returns the damaged bytes and says what it did.
type damage func(rng *rand.Rand, data []byte, ps, hwm int) ([]byte, string)

var damages = []struct {
	name string
	fn   damage
}{
	{"flip", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		n := 1 + rng.IntN(8)
		var at []int
		for range n {
			i := rng.IntN(len(d))
			d[i] ^= byte(1 + rng.IntN(255))
			at = append(at, i)
		}
		return d, fmt.Sprintf("%d bytes flipped at %v", n, at)
	}},
	{"zero-page", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		p := 2 + rng.IntN(hwm-2)
		clear(d[p*ps : (p+1)*ps])
		return d, fmt.Sprintf("page %d zeroed", p)
	}},
	{"random-page", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		p := 2 + rng.IntN(hwm-2)
		for i := p * ps; i < (p+1)*ps; i++ {
			d[i] = byte(rng.Uint32())
		}
		return d, fmt.Sprintf("page %d filled with random bytes", p)
	}},
	{"truncate", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		n := 1 + rng.IntN(len(d)-1)
		return d[:n], fmt.Sprintf("truncated to %d of %d bytes", n, len(d))
	}},
	{"truncate-page", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		n := 1 + rng.IntN(len(d)/ps-1)
		return d[:n*ps], fmt.Sprintf("truncated to %d pages of %d", n, len(d)/ps)
	}},
	{"duplicate-page", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		a, b := 2+rng.IntN(hwm-2), 2+rng.IntN(hwm-2)
		copy(d[b*ps:(b+1)*ps], d[a*ps:(a+1)*ps])
		return d, fmt.Sprintf("page %d copied over page %d", a, b)
	}},
	{"swap-meta", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		m0 := bytes.Clone(d[:ps])
		copy(d[:ps], d[ps:2*ps])
		copy(d[ps:2*ps], m0)
		return d, "meta pages swapped"
	}},
	{"zero-meta", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		p := rng.IntN(2)
		clear(d[p*ps : (p+1)*ps])
		return d, fmt.Sprintf("meta page %d zeroed", p)
	}},
	{"flip-meta", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		p := rng.IntN(2)
		i := p*ps + 16 + rng.IntN(64)
		d[i] ^= byte(1 + rng.IntN(255))
		return d, fmt.Sprintf("meta page %d: byte %d flipped", p, i)
	}},
	{"flip-header", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		p := 2 + rng.IntN(hwm-2)
		i := p*ps + rng.IntN(16)
		d[i] ^= byte(1 + rng.IntN(255))
		return d, fmt.Sprintf("page %d: header byte %d flipped", p, i-p*ps)
	}},
	{"flip-elements", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		// The element table that follows the header: offsets and sizes of keys and values.
		p := 2 + rng.IntN(hwm-2)
		i := p*ps + 16 + rng.IntN(64)
		d[i] ^= byte(1 + rng.IntN(255))
		return d, fmt.Sprintf("page %d: element byte %d flipped", p, i-p*ps)
	}},
	{"freelist", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		m := d[16:]
		if binary.LittleEndian.Uint64(d[ps+16+48:]) > binary.LittleEndian.Uint64(m[48:]) {
			m = d[ps+16:]
		}
		fl := int(binary.LittleEndian.Uint64(m[32:]))
		i := fl*ps + rng.IntN(64)
		d[i] ^= byte(1 + rng.IntN(255))
		return d, fmt.Sprintf("freelist page %d: byte %d flipped", fl, i-fl*ps)
	}},
	{"extend", func(rng *rand.Rand, d []byte, ps, hwm int) ([]byte, string) {
		n := 1 + rng.IntN(3*ps)
		junk := make([]byte, n)
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		return append(d, junk...), fmt.Sprintf("%d random bytes appended", n)
	}},
}

// TestDamagedStores damages a store and requires of every damaged copy: no process crashes
// (a Go panic, a fault, a signal) or hangs; `mql check` answers 0, 1 (problems) or 4
// (unopenable); if it answers 0, the store exports exactly as before the damage and takes a
// write; if it rejects the store, a write is refused, unless the check itself repaired what it
// found (it removes a snapshot that differs from the quads, a cache), in which case a second
// check passes and the export is exactly the one before the damage.
func TestDamagedStores(t *testing.T) {
	cases := crashEnvInt(t, "MQL_DAMAGE_CASES", 60)
	if os.Getenv("CI") != "" && os.Getenv("MQL_DAMAGE_CASES") == "" {
		cases = 200
	}
	seed := uint64(crashEnvInt(t, "MQL_DAMAGE_SEED", 1))
	if cases == 0 {
		t.Skip("MQL_DAMAGE_CASES=0")
	}
	bin := crashBuild(t)
	home := t.TempDir()
	path := filepath.Join(home, "sound.db")

	// A few hundred claims, revocations, derivations and reviews, one transaction each.
	var src strings.Builder
	for _, st := range newCrashGen(seed).script(300) {
		src.WriteString(st.src)
		src.WriteByte('\n')
	}
	script := filepath.Join(home, "setup.mql")
	if err := os.WriteFile(script, []byte(src.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := damageExec(bin, home, "--format", "json", "-f", script, path); r.code != 0 {
		t.Fatalf("setup: %s", r)
	}
	want := damageExec(bin, home, "export", "--db", path)
	soundCheck := damageExec(bin, home, "check", path)
	if want.code != 0 || soundCheck.code != 0 {
		t.Fatalf("the sound store: %s\ncheck: %s", want, soundCheck)
	}
	sound, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps, hwm := boltGeometry(t, sound)
	t.Logf("sound store: %d bytes, %d pages of %d bytes in use, %d lines of export; check: %s", len(sound), hwm, ps, strings.Count(want.stdout, "\n"), strings.TrimSpace(soundCheck.stdout))

	type outcome struct {
		kind, what                    string
		check, export, write, recheck damageRun
		checkOK, exported, wrote      bool
	}
	outcomes := make([]outcome, cases)
	rng := rand.New(rand.NewPCG(seed, 0x64616d))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range cases {
		d := damages[i%len(damages)]
		data, what := d.fn(rng, bytes.Clone(sound), ps, hwm)
		casePath := filepath.Join(home, fmt.Sprintf("case%03d.db", i))
		if err := os.WriteFile(casePath, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if keep := os.Getenv("MQL_DAMAGE_KEEP"); keep != "" {
			if err := os.MkdirAll(keep, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(keep, filepath.Base(casePath)+".damaged"), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			o := outcome{kind: d.name, what: what}
			o.check = damageExec(bin, home, "check", casePath)
			o.export = damageExec(bin, home, "export", "--db", casePath)
			o.write = damageExec(bin, home, "--format", "json", "-c", `assert Z.note = "after the damage" by owner`, casePath)
			if o.check.code != 0 && o.write.code == 0 {
				o.recheck = damageExec(bin, home, "check", casePath)
			}
			o.checkOK, o.exported, o.wrote = o.check.code == 0, o.export.code == 0, o.write.code == 0
			outcomes[i] = o
		}()
	}
	wg.Wait()

	crashes, rejected, unopenable, repaired, benign := 0, 0, 0, 0, 0
	var slowest time.Duration
	for i, o := range outcomes {
		for _, r := range []damageRun{o.check, o.export, o.write, o.recheck} {
			slowest = max(slowest, r.took)
		}
		for _, r := range []damageRun{o.check, o.export, o.write, o.recheck} {
			if r.crashed() {
				crashes++
				t.Errorf("case %d (%s: %s): a process crashed: %s", i, o.kind, o.what, r)
				break
			}
		}
		switch o.check.code {
		case 0:
			benign++
			if !o.exported || o.export.stdout != want.stdout {
				t.Errorf("case %d (%s: %s): check passed, but the export differs from the sound store's (export: %s)", i, o.kind, o.what, o.export)
			}
			if !o.wrote {
				t.Errorf("case %d (%s: %s): check passed, but a write was refused: %s", i, o.kind, o.what, o.write)
			}
		case 1, 4:
			if o.check.code == 4 {
				unopenable++
			} else {
				rejected++
			}
			if o.wrote {
				// Acceptable only if the check repaired a cache: the quads were sound all along.
				if o.recheck.code == 0 && o.exported && o.export.stdout == want.stdout {
					repaired++
					continue
				}
				t.Errorf("case %d (%s: %s): check rejected the store, but a write was accepted\ncheck: %s\nwrite: %s\nrecheck: %s\nexport: exit %d, %s", i, o.kind, o.what, o.check, o.write, o.recheck, o.export.code, exportDiff(want.stdout, o.export.stdout))
			}
		default:
			t.Errorf("case %d (%s: %s): check: %s", i, o.kind, o.what, o.check)
		}
	}
	t.Logf("%d damaged copies (seed %d): %d crashes; check passed %d (benign damage, export unchanged), found problems in %d, found %d unopenable; %d repaired by check (a snapshot it removed); slowest process %s",
		cases, seed, crashes, benign, rejected, unopenable, repaired, slowest.Round(time.Millisecond))
}
