package walkv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReplay: any bytes in a log file are replayed without a panic, and a log that replays
// yields its entries again when written out as the records of a new log.
func FuzzReplay(f *testing.F) {
	dir := f.TempDir()
	l, err := createLog(filepath.Join(dir, "seed"), 1, false)
	if err != nil {
		f.Fatal(err)
	}
	l.append(appendOp(appendOp(nil, op{k: []byte("\x01a"), v: []byte("v")}), op{k: []byte("\x02b"), del: true}))
	l.append(appendOp(nil, op{k: []byte("\x03c"), v: nil}))
	seed, _ := os.ReadFile(l.path)
	l.close()
	f.Add(seed[:200])
	f.Add(seed[:logHeader+3])
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "x")
		if err := os.WriteFile(logName(path, 1), data, 0o600); err != nil {
			t.Fatal(err)
		}
		var ops []op
		if err := (&logFile{path: logName(path, 1), gen: 1}).replay(func(o op) { ops = append(ops, o) }); err != nil {
			return
		}
		if len(ops) == 0 {
			return
		}
		w, err := createLog(path+"2", 1, false)
		if err != nil {
			t.Fatal(err)
		}
		defer w.close()
		var payload []byte
		for _, o := range ops {
			payload = appendOp(payload, o)
		}
		if err := w.append(payload); err != nil {
			t.Fatal(err)
		}
		var again []op
		if err := w.replay(func(o op) { again = append(again, o) }); err != nil {
			t.Fatal(err)
		}
		if len(again) != len(ops) {
			t.Fatalf("%d entries, then %d", len(ops), len(again))
		}
		for i := range ops {
			if !bytes.Equal(ops[i].k, again[i].k) || !bytes.Equal(ops[i].v, again[i].v) || ops[i].del != again[i].del {
				t.Fatalf("entry %d: %+v, then %+v", i, ops[i], again[i])
			}
		}
	})
}

// append writes one record of payload, as a commit does.
func (l *logFile) append(payload []byte) error {
	rec := make([]byte, recHeader+len(payload))
	copy(rec[recHeader:], payload)
	return l.appendRecord(rec)
}
