package codec

import (
	"math"
	"testing"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/internal/nquads"
)

// TestNQuadsWriterTermsMatchExporter pins internal/nquads' term writer to the exporter's, for
// every kind of literal an export holds and the odd values around them.
func TestNQuadsWriterTermsMatchExporter(t *testing.T) {
	for _, v := range []quad.Value{
		quad.IRI("urn:mql:claim:x@1"),
		quad.String("plain"),
		quad.String("ctl \x00\x01\x08\x0b\x0c\x1f\x7f \\ \" \n \r \t é 😀"),
		quad.TypedString{Value: "PT600S", Type: XSDDuration},
		quad.Int(0), quad.Int(-42), quad.Int(math.MaxInt64),
		quad.Float(0.9), quad.Float(44), quad.Float(1e21), quad.Float(math.Copysign(0, -1)), quad.Float(5e-324),
		quad.Float(math.NaN()), quad.Float(math.Inf(1)), quad.Float(math.Inf(-1)),
		quad.Bool(true), quad.Bool(false),
		quad.Time(time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))),
		TimeLit(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
	} {
		if got, want := nquads.FormatTerm(v), formatTerm(v); got != want {
			t.Errorf("%#v: nquads.FormatTerm = %s, formatTerm = %s", v, got, want)
		}
	}
}
