package graphstore

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record/recordtest"
	"github.com/mql-dev/mql/internal/nquads"
)

// TestNQuadsReaderReadsExport reads an export with the strict reader: every statement line
// parses, and written back canonically it is the same bytes.
func TestNQuadsReaderReadsExport(t *testing.T) {
	var buf bytes.Buffer
	if err := codec.WriteNQuads(&buf, append(sampleChain(t), recordtest.FullTx())); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(buf.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	r := nquads.NewReader(&buf)
	for i := 0; ; i++ {
		q, err := r.Next()
		if errors.Is(err, io.EOF) && i == len(want) {
			break
		}
		if err != nil {
			t.Fatalf("read %d of %d statements: %v", i, len(want), err)
		}
		if got := nquads.FormatQuad(q); got != want[i] {
			t.Fatalf("line %d reads back as\n%s\nwant\n%s", r.Line(), got, want[i])
		}
	}
}
