package walkv_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mql-dev/mql/graphstore/kv"
	"github.com/mql-dev/mql/graphstore/kv/boltkv"
	"github.com/mql-dev/mql/graphstore/kv/kvtest"
	"github.com/mql-dev/mql/graphstore/kv/memkv"
	"github.com/mql-dev/mql/graphstore/kv/walkv"
)

func openBolt(t *testing.T, path string) (*bolt.DB, *boltkv.Store) {
	t.Helper()
	// A commit that grows bbolt's memory map waits for every open read transaction; kvtest
	// holds one while it commits, and the checkpointer commits to bbolt meanwhile.
	db, err := bolt.Open(path, 0o600, &bolt.Options{InitialMmapSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if err := boltkv.Init(db); err != nil {
		t.Fatal(err)
	}
	return db, boltkv.New(db, kvtest.Schema)
}

// The log in front of a store behaves as a kv store, however often it checkpoints: never,
// every few entries, as soon as a commit is made.
func TestKV(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries int
		after   time.Duration
	}{
		{"never checkpointed", 1 << 30, time.Hour},
		{"every 5 entries", 5, time.Hour},
		{"at once", 1 << 30, time.Microsecond},
	} {
		t.Run("memory/"+tc.name, func(t *testing.T) {
			s, err := walkv.Open(context.Background(), memkv.New(kvtest.Schema), kvtest.Schema, walkv.Options{
				Path: filepath.Join(t.TempDir(), "m"), CheckpointEntries: tc.entries, CheckpointAfter: tc.after})
			if err != nil {
				t.Fatal(err)
			}
			kvtest.Run(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		})
		t.Run("bbolt/"+tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "kv.db")
			db, base := openBolt(t, path)
			defer db.Close()
			s, err := walkv.Open(context.Background(), base, kvtest.Schema, walkv.Options{
				Path: path, CheckpointEntries: tc.entries, CheckpointAfter: tc.after})
			if err != nil {
				t.Fatal(err)
			}
			kvtest.Run(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if logs, _ := filepath.Glob(path + "-log-*"); len(logs) != 0 {
				t.Errorf("Close left %v", logs)
			}
		})
	}
}

func put(t *testing.T, s kv.Store, k, v string) {
	t.Helper()
	w, err := s.Write(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Put(0, []byte(k), []byte(v)); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s kv.Store, k string) string {
	t.Helper()
	r, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer r.End()
	v, err := r.Get(0, []byte(k))
	if err != nil {
		t.Fatal(err)
	}
	return string(v)
}

// crashCopy copies the bbolt file and the log of a store that is still open, as the disk would
// hold them if the machine stopped now: every acknowledged commit is in the log, none of them
// in the file.
func crashCopy(t *testing.T, path string) string {
	t.Helper()
	dir := t.TempDir()
	files, _ := filepath.Glob(path + "*")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, filepath.Base(path))
}

func openNever(t *testing.T, path string) (*bolt.DB, *walkv.Store, error) {
	t.Helper()
	db, base := openBolt(t, path)
	s, err := walkv.Open(context.Background(), base, kvtest.Schema, walkv.Options{Path: path, CheckpointEntries: 1 << 30, CheckpointAfter: time.Hour})
	if err != nil {
		db.Close()
	}
	return db, s, err
}

// Every acknowledged commit survives a crash: opening replays the log into the file, and a
// record torn by the crash (never acknowledged) is left out.
func TestReplayAfterCrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	db, s, err := openNever(t, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		put(t, s, fmt.Sprintf("k%02d", i), fmt.Sprintf("v%d", i))
	}
	put(t, s, "k00", "again")
	if n := s.Pending(); n != 50 {
		t.Fatalf("pending %d entries, want 50", n)
	}
	crashed := crashCopy(t, path)
	s.Close()
	db.Close()

	// The last record torn: cut inside it.
	torn := crashCopy(t, crashed)
	logs, _ := filepath.Glob(torn + "-log-*")
	if len(logs) != 1 {
		t.Fatalf("logs %v", logs)
	}
	b, _ := os.ReadFile(logs[0])
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	b[end-2] ^= 0xff // the last record's last byte but one
	os.WriteFile(logs[0], b, 0o600)

	for _, tc := range []struct {
		path string
		k00  string
	}{{crashed, "again"}, {torn, "v0"}} {
		db, s, err := openNever(t, tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if n := s.Pending(); n != 0 {
			t.Errorf("%s: Open left %d entries in the log", tc.path, n)
		}
		for i := 1; i < 50; i++ {
			if got := get(t, s, fmt.Sprintf("k%02d", i)); got != fmt.Sprintf("v%d", i) {
				t.Errorf("%s: k%02d = %q after the crash", tc.path, i, got)
			}
		}
		if got := get(t, s, "k00"); got != tc.k00 {
			t.Errorf("%s: k00 = %q, want %q", tc.path, got, tc.k00)
		}
		s.Close()
		db.Close()
	}
}

// A record damaged in the middle of the log, with whole records after it, is damage, not a
// crash: Open refuses the store rather than drop acknowledged commits.
func TestDamagedLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	db, s, err := openNever(t, path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		put(t, s, fmt.Sprintf("k%d", i), "v")
	}
	crashed := crashCopy(t, path)
	s.Close()
	db.Close()
	logs, _ := filepath.Glob(crashed + "-log-*")
	b, _ := os.ReadFile(logs[0])
	b[16+8+3] ^= 0x40 // inside the first record's payload
	os.WriteFile(logs[0], b, 0o600)
	db, s, err = openNever(t, crashed)
	if !errors.Is(err, walkv.ErrLog) {
		t.Fatalf("Open of a damaged log: %v", err)
	}
	_ = s
	db.Close()
}

// A read-only open sees what the log holds and writes nothing.
func TestReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	db, s, err := openNever(t, path)
	if err != nil {
		t.Fatal(err)
	}
	put(t, s, "a", "1")
	crashed := crashCopy(t, path)
	s.Close()
	db.Close()
	db, base := openBolt(t, crashed)
	defer db.Close()
	ro, err := walkv.Open(context.Background(), base, kvtest.Schema, walkv.Options{Path: crashed, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(t, ro, "a"); got != "1" {
		t.Errorf("read-only: a = %q", got)
	}
	if _, err := ro.Write(context.Background()); err == nil {
		t.Error("a read-only store took a write")
	}
	ro.Close()
	if logs, _ := filepath.Glob(crashed + "-log-*"); len(logs) != 1 {
		t.Errorf("a read-only open changed the log: %v", logs)
	}
}

// A store that is only read writes no log; its first commit starts one, and Close removes it.
func TestLogOnlyWhenWritten(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.db")
	db, s, err := openNever(t, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if get(t, s, "a") != "" {
		t.Fatal("a key in a new store")
	}
	if logs, _ := filepath.Glob(path + "-log-*"); len(logs) != 0 {
		t.Fatalf("a read wrote %v", logs)
	}
	put(t, s, "a", "1")
	if logs, _ := filepath.Glob(path + "-log-*"); len(logs) != 1 {
		t.Fatalf("after a commit: %v", logs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if logs, _ := filepath.Glob(path + "-log-*"); len(logs) != 0 {
		t.Fatalf("after Close: %v", logs)
	}
}

// gated is a store below whose write transactions wait for open.
type gated struct {
	*memkv.Store
	open chan struct{}
}

func (g gated) Write(ctx context.Context) (kv.WriteTx, error) {
	<-g.open
	return g.Store.Write(ctx)
}

// Commits faster than checkpoints wait once the log holds MaxPending entries the store below
// does not: the overlay's memory stays bounded.
func TestBackpressure(t *testing.T) {
	g := gated{memkv.New(kvtest.Schema), make(chan struct{})}
	s, err := walkv.Open(context.Background(), g, kvtest.Schema, walkv.Options{
		Path: filepath.Join(t.TempDir(), "m"), CheckpointEntries: 5, MaxPending: 10, CheckpointAfter: time.Hour, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			put(t, s, fmt.Sprintf("k%03d", i), "v")
		}
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("100 commits went through with no checkpoint able to finish")
	default:
	}
	if n := s.Pending(); n > 11 {
		t.Errorf("%d entries pending, MaxPending 10", n)
	}
	close(g.open)
	<-done
	if got := get(t, s, "k099"); got != "v" {
		t.Errorf("k099 = %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// remapping is a store below whose every commit waits for all open read transactions to end,
// and whose new read transactions wait for a commit that waits: what bbolt does when a commit
// grows the file past its memory map.
type remapping struct {
	*memkv.Store
	mu *sync.RWMutex
}

type rlocked struct {
	kv.ReadTx
	mu   *sync.RWMutex
	once sync.Once
}

func (t *rlocked) End() { t.ReadTx.End(); t.once.Do(t.mu.RUnlock) }

type remapCommit struct {
	kv.WriteTx
	mu *sync.RWMutex
}

func (w remapCommit) Commit(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.WriteTx.Commit(ctx)
}

func (r remapping) Read(ctx context.Context) (kv.ReadTx, error) {
	r.mu.RLock()
	t, err := r.Store.Read(ctx)
	if err != nil {
		r.mu.RUnlock()
		return nil, err
	}
	return &rlocked{ReadTx: t, mu: r.mu}, nil
}

func (r remapping) Write(ctx context.Context) (kv.WriteTx, error) {
	w, err := r.Store.Write(ctx)
	return remapCommit{w, r.mu}, err
}

// Writers, readers and checkpoints at once, on a store below that remaps at every checkpoint:
// a writer holds a read transaction of it until its commit is published, so nothing may wait
// for the store below while holding what a commit needs. Everything finishes.
func TestConcurrentRemaps(t *testing.T) {
	base := remapping{memkv.New(kvtest.Schema), &sync.RWMutex{}}
	s, err := walkv.Open(context.Background(), base, kvtest.Schema, walkv.Options{
		Path: filepath.Join(t.TempDir(), "m"), CheckpointEntries: 2, CheckpointAfter: time.Microsecond, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	var writers, readers sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range 300 {
				wt, err := s.Write(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				wt.Put(0, []byte(fmt.Sprintf("w%d-%04d", w, i)), []byte("v"))
				if err := wt.Commit(context.Background()); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 3 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				r, err := s.Read(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				r.Get(0, []byte("w0-0001"))
				r.End()
			}
		}()
	}
	done := make(chan struct{})
	go func() { writers.Wait(); close(stop); readers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("stuck:\n%s", buf[:runtime.Stack(buf, true)])
	}
	if got := get(t, s, "w3-0299"); got != "v" {
		t.Errorf("w3-0299 = %q", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// A snapshot's version names the state it reads: the same until a commit publishes one, larger
// after it, unchanged by a checkpoint; a write transaction has none, and a rolled-back or empty
// one changes nothing.
func TestVersion(t *testing.T) {
	ctx := context.Background()
	s, err := walkv.Open(ctx, memkv.New(kvtest.Schema), kvtest.Schema, walkv.Options{
		Path: filepath.Join(t.TempDir(), "m"), CheckpointEntries: 1, CheckpointAfter: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	version := func() uint64 {
		t.Helper()
		rt, err := s.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rt.End()
		v, ok := rt.(kv.Versioned)
		if !ok {
			t.Fatalf("a snapshot (%T) is not kv.Versioned", rt)
		}
		return v.Version()
	}
	write := func(commit bool, keys ...string) {
		t.Helper()
		wt, err := s.Write(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := wt.(kv.Versioned); ok {
			t.Fatal("a write transaction says it has a version")
		}
		for _, k := range keys {
			if err := wt.Put(0, []byte(k), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		if !commit {
			wt.Rollback()
			return
		}
		if err := wt.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	v0 := version()
	if v := version(); v != v0 {
		t.Fatalf("two snapshots of one state: versions %d and %d", v0, v)
	}
	write(false, "a")
	write(true)
	if v := version(); v != v0 {
		t.Fatalf("a rollback and an empty commit changed the version: %d, then %d", v0, v)
	}
	write(true, "a")
	v1 := version()
	if v1 <= v0 {
		t.Fatalf("a commit left the version at %d (was %d)", v1, v0)
	}
	time.Sleep(20 * time.Millisecond) // the checkpointer applies the commit to the store below
	if v := version(); v != v1 {
		t.Fatalf("a checkpoint changed the version from %d to %d", v1, v)
	}
}

// A key longer than the store below takes is refused when it is written: never logged,
// acknowledged, and then refused by every checkpoint (a log no open could apply).
func TestKeyTooLarge(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, bs := openBolt(t, filepath.Join(dir, "b.db"))
	defer db.Close()
	s, err := walkv.Open(ctx, bs, kvtest.Schema, walkv.Options{Path: filepath.Join(dir, "b.db"), MaxKey: kv.MaxKey})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := s.Write(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.Put(0, make([]byte, kv.MaxKey), []byte("v")); err != nil {
		t.Fatalf("a key of the largest size: %v", err)
	}
	if err := wt.Put(0, make([]byte, kv.MaxKey+1), []byte("v")); !errors.Is(err, walkv.ErrKeyTooLarge) {
		t.Fatalf("a key one byte too long: %v, want ErrKeyTooLarge", err)
	}
	if err := wt.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close (the checkpoint into bbolt): %v", err)
	}
}

// Snapshots reuse the read transactions of the store below that ended while it did not
// change. Readers must still see every commit (none older than the checkpoint they began
// after), and a checkpoint that grows bbolt's file, which remaps it and so waits for every
// read transaction, must not wait for one kept idle; nor must a write outside the log
// (Exclusive).
func TestReusedSnapshots(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "kv.db")
	db, err := bolt.Open(path, 0o600, nil) // the default map: the values below grow it often
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := boltkv.Init(db); err != nil {
		t.Fatal(err)
	}
	s, err := walkv.Open(ctx, boltkv.New(db, kvtest.Schema), kvtest.Schema, walkv.Options{
		Path: path, NoSync: true, CheckpointEntries: 3, CheckpointAfter: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := string(make([]byte, 256<<10))
	const commits = 60
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := 0
			for {
				select {
				case <-done:
					return
				default:
				}
				rt, err := s.Read(ctx)
				if err != nil {
					errs <- err
					return
				}
				n := 0
				if v, err := rt.Get(0, []byte("n")); err == nil && v != nil {
					fmt.Sscan(string(v), &n)
				}
				var bad error
				if n < last {
					bad = fmt.Errorf("a snapshot read n=%d after one read %d", n, last)
				} else if n > 0 {
					if v, err := rt.Get(0, []byte(fmt.Sprint("v", n))); err != nil || len(v) != len(big) {
						bad = fmt.Errorf("n=%d but its value has %d bytes (%v)", n, len(v), err)
					}
				}
				rt.End()
				if bad != nil {
					errs <- bad
					return
				}
				last = n
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for i := 1; i <= commits; i++ {
			w, err := s.Write(ctx)
			if err != nil {
				errs <- err
				return
			}
			w.Put(0, []byte(fmt.Sprint("v", i)), []byte(big))
			w.Put(0, []byte("n"), []byte(fmt.Sprint(i)))
			if err := w.Commit(ctx); err != nil {
				errs <- err
				return
			}
			if i%10 == 0 {
				if err := s.Checkpoint(ctx); err != nil {
					errs <- err
					return
				}
				// A write outside the log that grows the file.
				err := s.Exclusive(func() error {
					return db.Update(func(tx *bolt.Tx) error {
						bk, err := tx.CreateBucketIfNotExists([]byte("outside"))
						if err != nil {
							return err
						}
						return bk.Put([]byte(fmt.Sprint(i)), make([]byte, 1<<20))
					})
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}
	}()
	select {
	case <-finished:
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(60 * time.Second):
		t.Fatal("the writer is stuck: a checkpoint or a write outside the log waits for a read transaction")
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, "n"); got != fmt.Sprint(commits) {
		t.Fatalf("after the last checkpoint a snapshot reads n=%s, want %d", got, commits)
	}
}
