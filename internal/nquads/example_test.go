package nquads_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mql-dev/mql/internal/nquads"
)

func ExampleReader() {
	doc := "# tx 1\n" +
		"<urn:mql:principal:\\u0061lice> <urn:mql:name> \"Alice\" <urn:mql:tx:1> .\n" +
		"<urn:mql:principal:bob> <urn:mql:name> bob <urn:mql:tx:1> .\n"
	r := nquads.NewReader(strings.NewReader(doc))
	for {
		q, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var se *nquads.SyntaxError
		if errors.As(err, &se) {
			fmt.Println("refused:", se)
			break
		}
		fmt.Printf("line %d: %s\n", r.Line(), nquads.FormatQuad(q))
	}
	// Output:
	// line 2: <urn:mql:principal:alice> <urn:mql:name> "Alice" <urn:mql:tx:1> .
	// refused: line 3, column 40: expected an object (an IRI <...>, a blank node _:label or a literal "..."), found "bob"
}
