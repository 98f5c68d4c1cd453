package codec

import (
	"slices"
	"strings"
	"testing"

	"github.com/cayleygraph/quad"

	"github.com/mql-dev/mql/graphstore/record"
	"github.com/mql-dev/mql/graphstore/record/recordtest"
)

// EncodeRecord and EncodeTxNode give, record by record, exactly what EncodeTx writes: the
// transaction's quads are its node's, then each record's in order, without a quad twice.
func TestEncodeRecord(t *testing.T) {
	tx := recordtest.FullTx()
	// Two revocations of one claim in one transaction write its invalidation time once.
	tx.Revocations = append(tx.Revocations, &record.Revocation{ID: "r7.3", Claim: *recordtest.ID("Klarveld.soc2@1"), By: "owner", Tx: tx.ID})
	want, err := EncodeTx(tx)
	if err != nil {
		t.Fatal(err)
	}
	label := TxIRI(tx.ID)
	node, err := EncodeTxNode(tx)
	if err != nil {
		t.Fatal(err)
	}
	var wantNode []quad.Quad
	for _, q := range want {
		if q.Subject == label {
			wantNode = append(wantNode, q)
		}
	}
	wrote := 0
	for _, q := range wantNode {
		if q.Predicate == MQLWrote {
			wrote++
			if w := WroteQuad(tx.ID, q.Object.(quad.IRI)); w != q {
				t.Errorf("WroteQuad = %s, EncodeTx wrote %s", w.NQuad(), q.NQuad())
			}
		}
	}
	if wrote == 0 {
		t.Error("EncodeTx wrote no urn:mql:wrote")
	}
	if !slices.Equal(node, wantNode) {
		t.Errorf("EncodeTxNode:\n%s\nwant\n%s", show(node), show(wantNode))
	}

	header := &record.Tx{ID: tx.ID, Time: tx.Time} // EncodeRecord reads nothing else
	var got []quad.Quad
	seen := map[quad.Quad]bool{}
	add := func(rec any, ord int) {
		t.Helper()
		qs, err := EncodeRecord(header, ord, rec)
		if err != nil {
			t.Fatalf("EncodeRecord(%T %d): %v", rec, ord, err)
		}
		if len(qs) == 0 {
			t.Fatalf("EncodeRecord(%T %d) wrote nothing", rec, ord)
		}
		for _, q := range qs {
			if !seen[q] {
				seen[q] = true
				got = append(got, q)
			}
		}
	}
	add(tx.Meta, 0)
	each(tx.Principals, add)
	each(tx.Grants, add)
	each(tx.Sources, add)
	each(tx.Claims, add)
	each(tx.Revocations, add)
	each(tx.Confirmations, add)
	each(tx.Artifacts, add)
	each(tx.Reviews, add)
	each(tx.Decays, add)
	each(tx.Tokens, add)
	each(tx.TokenRevocations, add)
	each(tx.Retrievals, add)
	each(tx.Outcomes, add)
	var wantRecords []quad.Quad
	for _, q := range want {
		if q.Subject != label {
			wantRecords = append(wantRecords, q)
		}
	}
	if !slices.Equal(got, wantRecords) {
		t.Errorf("EncodeRecord, record by record:\n%s\nwant\n%s", show(got), show(wantRecords))
	}

	// They refuse what EncodeTx refuses, with its message.
	bad := *tx.Claims[0]
	bad.Confidence = 2
	if _, err := EncodeRecord(header, 0, &bad); err == nil || !strings.Contains(err.Error(), "tx 7: claim Klarveld.price_per_seat@1: confidence 2 is not in [0,1]") {
		t.Errorf("EncodeRecord of a bad claim: %v", err)
	}
	if _, err := EncodeRecord(header, 0, "claim"); err == nil {
		t.Error("EncodeRecord of a string: no error")
	}
	tx.Claims = append(tx.Claims, &bad)
	if _, err := EncodeTxNode(tx); err == nil {
		t.Error("EncodeTxNode of a transaction EncodeTx refuses: no error")
	}

	for i := range tx.Decays {
		id, n, ok := ParseDecayIRI(decayIRI(tx.ID, i))
		if !ok || id != tx.ID || n != i {
			t.Errorf("ParseDecayIRI(%s) = %d %d %v", decayIRI(tx.ID, i), id, n, ok)
		}
	}
	for _, s := range []string{"urn:mql:decay:7", "urn:mql:decay:07.1", "urn:mql:decay:7.-1", "urn:mql:decay:0.1", "urn:mql:claim:7.1"} {
		if _, _, ok := ParseDecayIRI(quad.IRI(s)); ok {
			t.Errorf("ParseDecayIRI(%s) is ok", s)
		}
	}
}

func each[T any](xs []T, add func(any, int)) {
	for i, x := range xs {
		add(x, i)
	}
}

func show(qs []quad.Quad) string {
	var b strings.Builder
	for _, q := range qs {
		b.WriteString(q.NQuad() + "\n")
	}
	return b.String()
}
