package graphstore

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/codec"
	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/graphstore/record/recordtest"
)

// sampleChain is a valid history from the genesis on, built without a store.
func sampleChain(t testing.TB) []*record.Tx {
	s := mustOpen(t, "memory:", Options{Clock: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC) }})
	defer s.Close()
	writeSample(t, s)
	return txsOf(s)
}

func TestNQuadsRoundTrip(t *testing.T) {
	txs := sampleChain(t)
	full := recordtest.FullTx()
	var buf bytes.Buffer
	if err := codec.WriteNQuads(&buf, txs); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, bad := range []string{"<xsd:", `"True"`, `"False"`} {
		if strings.Contains(out, bad) {
			t.Errorf("export contains %s", bad)
		}
	}
	for _, want := range []string{
		"<http://www.w3.org/ns/prov#wasDerivedFrom>",
		`"2026-01-02T03:04:05.000000006Z"^^<http://www.w3.org/2001/XMLSchema#dateTime>`,
		`"PT600S"^^<http://www.w3.org/2001/XMLSchema#duration>`,
		`"true"^^<http://www.w3.org/2001/XMLSchema#boolean>`,
		`"0.9"^^<http://www.w3.org/2001/XMLSchema#double>`,
		`<urn:mql:claim:Klarveld.price_per_seat@2> <http://www.w3.org/ns/prov#wasInvalidatedBy> <urn:mql:revocation:r5.1> <urn:mql:tx:5> .`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("export lacks %s", want)
		}
	}
	got, err := ReadNQuads(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, txs) {
		t.Fatal("N-Quads round trip differs")
	}
	// A single transaction that is not the genesis reads back on its own too.
	buf.Reset()
	codec.WriteNQuads(&buf, []*record.Tx{full})
	got, err = ReadNQuads(&buf)
	if err != nil || !reflect.DeepEqual(got, []*record.Tx{full}) {
		t.Fatalf("full tx: %v", err)
	}
}

func TestReadNQuadsErrors(t *testing.T) {
	txs := sampleChain(t)
	var buf bytes.Buffer
	codec.WriteNQuads(&buf, txs)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	find := func(substr string) int {
		for i, l := range lines {
			if strings.Contains(l, substr) {
				return i
			}
		}
		t.Fatalf("no line with %s", substr)
		return -1
	}
	edit := func(i int, repl string) string {
		c := append([]string{}, lines...)
		c[i] = repl
		return strings.Join(c, "\n")
	}
	kind := find(`<urn:mql:kind> "inferred"`)
	cases := map[string]struct{ in, want string }{
		"garbage":        {edit(10, "this is not a quad"), "line 11, column 1: expected a subject"},
		"no graph":       {edit(10, "<urn:a> <urn:b> <urn:c> ."), "line 11: quad has no graph"},
		"foreign graph":  {edit(10, "<urn:a> <urn:b> <urn:c> <urn:g> ."), "line 11: graph <urn:g>"},
		"unknown kind":   {edit(kind, strings.Replace(lines[kind], `"inferred"`, `"guessed"`, 1)), "unknown kind"},
		"renamed pred":   {edit(kind, strings.Replace(lines[kind], `<urn:mql:kind>`, `<urn:mql:mood>`, 1)), "missing <urn:mql:kind>"},
		"extra quad":     {edit(kind, lines[kind]+"\n"+strings.Replace(lines[kind], `<urn:mql:kind>`, `<urn:mql:mood>`, 1)), "line " + strconv.Itoa(kind+2) + ": tx 3: unexpected quad"},
		"non-contiguous": {strings.Join(dropTx(lines, 3), "\n"), "jump from 2 to 4"},
		"dangling":       {exportOf(t, txs[:2]) + renumbered(t, txs[4], 3), "which was never recorded"},
	}
	for name, c := range cases {
		_, err := ReadNQuads(strings.NewReader(c.in))
		if !errors.Is(err, ErrBadImport) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want …%s…", name, err, c.want)
		}
	}
	if got, err := ReadNQuads(strings.NewReader("# nothing\n\n")); err != nil || len(got) != 0 {
		t.Errorf("empty file: %v %v", got, err)
	}
}

// dropTx removes the lines of transaction id.
func dropTx(lines []string, id int) []string {
	label := "<urn:mql:tx:" + strconv.Itoa(id) + "> ."
	var out []string
	for _, l := range lines {
		if !strings.HasSuffix(l, label) {
			out = append(out, l)
		}
	}
	return out
}

func exportOf(t testing.TB, txs []*record.Tx) string {
	var buf bytes.Buffer
	if err := codec.WriteNQuads(&buf, txs); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// renumbered exports a copy of tx with another id.
func renumbered(t testing.TB, tx *record.Tx, id record.TxID) string {
	c := *tx
	c.ID = id
	c.Revocations, c.Confirmations, c.Decays = nil, nil, nil
	for _, r := range tx.Revocations {
		rc := *r
		rc.Tx = id
		c.Revocations = append(c.Revocations, &rc)
	}
	return exportOf(t, []*record.Tx{&c})
}

func FuzzReadNQuads(f *testing.F) {
	txs := sampleChain(f)
	var buf bytes.Buffer
	codec.WriteNQuads(&buf, txs[:3])
	f.Add(buf.String())
	buf.Reset()
	codec.WriteNQuads(&buf, []*record.Tx{recordtest.FullTx()})
	f.Add(buf.String())
	f.Add("")
	f.Add("# comment\n<urn:a> <urn:b> \"c\" <urn:mql:tx:1> .\n")
	f.Add(`<urn:mql:tx:1> <http://www.w3.org/ns/prov#endedAtTime> "2026-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:mql:tx:1> .`)
	f.Add("<a> <b> \"\\u0000\\U0010FFFF\" <urn:mql:tx:9223372036854775807> .")
	f.Fuzz(func(t *testing.T, in string) {
		txs, err := ReadNQuads(strings.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrBadImport) {
				t.Fatalf("error does not wrap ErrBadImport: %v", err)
			}
			return
		}
		// Whatever is accepted exports and reads back to the same transactions.
		var out bytes.Buffer
		if err := codec.WriteNQuads(&out, txs); err != nil {
			t.Fatalf("accepted input does not export: %v", err)
		}
		again, err := ReadNQuads(&out)
		if err != nil {
			t.Fatalf("export of accepted input does not read back: %v\n%s", err, out.String())
		}
		if !reflect.DeepEqual(again, txs) {
			t.Fatal("export of accepted input reads back differently")
		}
	})
}

// A reader that keeps every literal as written — a typed string with its full datatype IRI, as
// a strict RDF 1.1 reader does — gives quads that decode to the same transactions: strings,
// integers, doubles, booleans and times are brought to the encoder's forms.
func TestDecodeLiteralsAsWritten(t *testing.T) {
	for _, tx := range sampleChain(t) {
		qs, err := codec.EncodeTx(tx)
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range qs {
			var lex string
			var typ quad.IRI
			switch o := q.Object.(type) {
			case quad.String:
				lex, typ = string(o), codec.XSDString
			case quad.Int:
				lex, typ = strconv.FormatInt(int64(o), 10), codec.XSDInteger
			case quad.Float:
				lex, typ = strconv.FormatFloat(float64(o), 'g', -1, 64), codec.XSDDouble
			case quad.Bool:
				lex, typ = strconv.FormatBool(bool(o)), codec.XSDBoolean
			default:
				continue
			}
			qs[i].Object = quad.TypedString{Value: quad.String(lex), Type: typ}
		}
		got, err := codec.DecodeTx(tx.ID, canonQuads(qs))
		if err != nil || !reflect.DeepEqual(got, tx) {
			t.Fatalf("tx %d from literals as written: %v", tx.ID, err)
		}
	}
}
