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

	// EncodeRecordMatching keeps what EncodeRecord gives with a node in a direction.
	for _, d := range []quad.Direction{quad.Subject, quad.Object} {
		for _, v := range []quad.Value{ClaimIRI(*recordtest.ID("Klarveld.price_per_seat@2")), quad.String("worker-3"), PrincipalIRI("owner"), quad.Int(0)} {
			kept := 0
			for _, rec := range []any{tx.Claims[1], tx.Revocations[0], tx.Principals[1], tx.Claims[2], tx.Decays[0], tx.Artifacts[0]} {
				ord := slices.IndexFunc(records(tx, rec), func(x any) bool { return x == rec })
				all, err := EncodeRecord(header, ord, rec)
				if err != nil {
					t.Fatal(err)
				}
				var want []quad.Quad
				for _, q := range all {
					if q.Get(d) == v {
						want = append(want, q)
					}
				}
				got, err := EncodeRecordMatching(header, ord, rec, d, v)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("EncodeRecordMatching(%T %d, %v %s):\n%s\nwant\n%s", rec, ord, d, v, show(got), show(want))
				}
				kept += len(got)
			}
			if d == quad.Object && kept == 0 {
				t.Errorf("no quad has %s as object", v)
			}
		}
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

// records are the records of rec's kind in tx.
func records(tx *record.Tx, rec any) []any {
	var out []any
	add := func(x any, _ int) { out = append(out, x) }
	switch rec.(type) {
	case *record.Claim:
		each(tx.Claims, add)
	case *record.Revocation:
		each(tx.Revocations, add)
	case *record.Principal:
		each(tx.Principals, add)
	case *record.Decay:
		each(tx.Decays, add)
	case *record.Artifact:
		each(tx.Artifacts, add)
	}
	return out
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
