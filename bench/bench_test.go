package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestEndToEnd runs the whole program at a tiny size, once: every operation on every engine,
// the JSON report and the document. No timing is asserted.
func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "BENCHMARKS.md")
	var out bytes.Buffer
	cfg, err := parseFlags([]string{"-sizes", "500", "-hubs", "3,12", "-runs", "1", "-json", "-dir", dir, "-write-doc", doc})
	if err != nil {
		t.Fatal(err)
	}
	cfg.out = &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Sizes) != 1 || len(rep.Sizes[0].Rows) < 12 {
		t.Fatalf("report: %+v", rep)
	}
	for _, r := range rep.Sizes[0].Rows {
		if r.BBolt == nil {
			t.Errorf("%s: no bbolt figure", r.Op)
		}
	}
	if b, err := os.ReadFile(doc); err != nil || !bytes.Contains(b, []byte("| live lookup")) {
		t.Fatalf("doc: %v\n%s", err, b)
	}

	cfg, err = parseFlags([]string{"-writers", "3", "-rate", "60", "-duration", "300ms", "-json", "-dir", dir})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	cfg.out = &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	rep = report{}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if w := rep.Writers; w == nil || w.Acknowledged == 0 || w.Errors != 0 || !w.Durable {
		t.Fatalf("writers: %+v", w)
	}
}

// TestMain lets the test binary stand in for the program when it measures opening in a child
// process.
func TestMain(m *testing.M) {
	if len(os.Args) > 3 && os.Args[1] == "-child-open" {
		childOpen(os.Args[2], os.Args[3])
		os.Exit(0)
	}
	os.Exit(m.Run())
}
