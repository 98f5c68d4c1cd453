package codec

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/internal/nquads"
)

// WriteNQuads writes txs as RDF 1.1 N-Quads, one quad per line, each transaction's quads in
// the graph <urn:mql:tx:N> and preceded by a comment line naming it. Literals carry full XSD
// datatype IRIs, so any RDF or PROV tool can read the file; an import reads it back exactly.
func WriteNQuads(w io.Writer, txs []*record.Tx) error {
	bw := bufio.NewWriter(w)
	for _, tx := range txs {
		quads, err := EncodeTx(tx)
		if err != nil {
			return fmt.Errorf("export: %w", err)
		}
		fmt.Fprintf(bw, "# tx %d at %s by %s\n", tx.ID, tx.Time.UTC().Format(time.RFC3339Nano), oneLine(tx.By))
		for _, q := range quads {
			bw.WriteString(nquads.FormatQuad(q))
			bw.WriteByte('\n')
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}
