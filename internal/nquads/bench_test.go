package nquads

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
)

// exportLike is n transactions' worth of statements shaped like mql's export: IRIs, plain and
// typed literals, and a transaction graph on every quad.
func exportLike(n int) []byte {
	var b bytes.Buffer
	for i := 1; i <= n; i++ {
		c := fmt.Sprintf("<urn:mql:claim:Klarveld.price_per_seat@%d>", i)
		g := fmt.Sprintf("<urn:mql:tx:%d>", i)
		fmt.Fprintf(&b, "# tx %d at 2026-01-02T03:04:05.000000006Z by owner\n", i)
		fmt.Fprintf(&b, "%s <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <urn:mql:Claim> %s .\n", c, g)
		fmt.Fprintf(&b, "%s <urn:mql:subject> \"Klarveld\" %s .\n", c, g)
		fmt.Fprintf(&b, "%s <urn:mql:value> \"44\"^^<http://www.w3.org/2001/XMLSchema#double> %s .\n", c, g)
		fmt.Fprintf(&b, "%s <urn:mql:because> \"read on the \\\"pricing\\\" page\\n(2026)\" %s .\n", c, g)
		fmt.Fprintf(&b, "<urn:mql:tx:%d> <http://www.w3.org/ns/prov#endedAtTime> \"2026-01-02T03:04:05.000000006Z\"^^<http://www.w3.org/2001/XMLSchema#dateTime> %s .\n", i, g)
	}
	return b.Bytes()
}

func BenchmarkReader(b *testing.B) {
	data := exportLike(10_000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		r := NewReader(bytes.NewReader(data))
		n = 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/quad")
}

func BenchmarkFormatQuad(b *testing.B) {
	qs, err := readAll(exportLike(1_000))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, q := range qs {
			_ = FormatQuad(q)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(qs)), "ns/quad")
}
