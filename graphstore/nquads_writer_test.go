package graphstore

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/internal/nquads"
)

// TestNQuadsWriterMatchesExporter pins internal/nquads' writer to the exporter's bytes, so the
// exporter can switch to it without changing a single exported file.
func TestNQuadsWriterMatchesExporter(t *testing.T) {
	txs := append(sampleChain(t), fullTx())
	n := 0
	for _, tx := range txs {
		qs, err := encodeTx(tx)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			n++
			if got, want := nquads.FormatQuad(q), formatQuad(q); got != want {
				t.Errorf("nquads.FormatQuad = %s\nformatQuad       = %s", got, want)
			}
		}
	}
	if n < 100 {
		t.Fatalf("compared only %d quads", n)
	}

	for _, v := range []quad.Value{
		quad.IRI("urn:mql:claim:x@1"),
		quad.String("plain"),
		quad.String("ctl \x00\x01\x08\x0b\x0c\x1f\x7f \\ \" \n \r \t é 😀"),
		quad.TypedString{Value: "PT600S", Type: xsdDuration},
		quad.Int(0), quad.Int(-42), quad.Int(math.MaxInt64),
		quad.Float(0.9), quad.Float(44), quad.Float(1e21), quad.Float(math.Copysign(0, -1)), quad.Float(5e-324),
		quad.Float(math.NaN()), quad.Float(math.Inf(1)), quad.Float(math.Inf(-1)),
		quad.Bool(true), quad.Bool(false),
		quad.Time(time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))),
		timeLit(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	} {
		if got, want := nquads.FormatTerm(v), formatTerm(v); got != want {
			t.Errorf("%#v: nquads.FormatTerm = %s, formatTerm = %s", v, got, want)
		}
	}
}

// TestNQuadsReaderReadsExport reads an export with the strict reader: every statement line
// parses, and written back canonically it is the same bytes.
func TestNQuadsReaderReadsExport(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteNQuads(&buf, append(sampleChain(t), fullTx())); err != nil {
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
