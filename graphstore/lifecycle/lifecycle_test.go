package lifecycle

import (
	"testing"

	"github.com/mql-dev/mql/graphstore/record"
)

func TestRelate(t *testing.T) {
	num := func(n float64) record.Value { return record.Value{Type: record.Number, Num: n} }
	cases := []struct {
		name      string
		hasLive   bool
		liveKind  record.Kind
		liveValue record.Value
		kind      record.Kind
		value     record.Value
		want      Relation
	}{
		{"no live claim", false, "", record.Value{}, record.Inferred, num(1), First},
		{"equal rank supersedes", true, record.Observed, num(1), record.Observed, num(2), Supersedes},
		{"higher rank supersedes", true, record.Inferred, num(1), record.Observed, num(2), Supersedes},
		{"same value at equal rank supersedes", true, record.Observed, num(1), record.Observed, num(1), Supersedes},
		{"lower rank, other value, contests", true, record.Observed, num(1), record.Inferred, num(2), Contests},
		{"lower rank, same value, corroborates", true, record.Observed, num(1), record.Inferred, num(1), Corroborates},
		{"nothing outranks a confirmed claim", true, record.Confirmed, num(1), record.Observed, num(2), Contests},
	}
	for _, c := range cases {
		if got := Relate(c.hasLive, c.liveKind, c.liveValue, c.kind, c.value); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFold(t *testing.T) {
	type tx = record.TxID
	cases := []struct {
		name                      string
		rel                       Relation
		revised, promoted, revoke []tx
		asOf                      tx
		want                      State
		since                     tx
	}{
		{"a new claim is live", First, nil, nil, nil, 9, Live, 1},
		{"superseded", Supersedes, []tx{3}, nil, nil, 9, Superseded, 3},
		{"not yet superseded as of before", Supersedes, []tx{3}, nil, nil, 2, Live, 1},
		{"contested stays contested when revised", Contests, []tx{3}, nil, nil, 9, Contested, 1},
		{"corroborating evidence is superseded from birth", Corroborates, nil, nil, nil, 9, Superseded, 1},
		{"revoked", First, nil, nil, []tx{4}, 9, Revoked, 4},
		{"only the first revocation counts", First, nil, nil, []tx{4, 6}, 9, Revoked, 4},
		{"promoted after supersession is live again", First, []tx{2}, []tx{5}, nil, 9, Live, 5},
		{"a promotion does not undo a revocation", First, nil, []tx{5}, []tx{3}, 9, Revoked, 3},
		{"a contested claim promoted is live", Contests, nil, []tx{4}, nil, 9, Live, 4},
		{"revision and revocation in one transaction: revoked", First, []tx{4}, nil, []tx{4}, 9, Revoked, 4},
	}
	for _, c := range cases {
		st, since := Fold(c.rel, 1, c.revised, c.promoted, c.revoke, c.asOf)
		if st != c.want || since != c.since {
			t.Errorf("%s: %s since %d, want %s since %d", c.name, st, since, c.want, c.since)
		}
	}
}

// Fold and the incremental Birth/Next the checker uses agree on every sequence of events.
func TestFoldIsNextOverEvents(t *testing.T) {
	for rel := First; rel <= Corroborates; rel++ {
		for mask := 0; mask < 1<<6; mask++ {
			// Six transactions 2..7, each holding at most one event of a kind chosen by mask.
			var revised, promoted, revoked []record.TxID
			p := Birth(rel)
			for i := 0; i < 6; i++ {
				id := record.TxID(i + 2)
				switch (mask >> i) & 1 {
				case 0:
					if i%2 == 0 {
						revised = append(revised, id)
						p = Next(p, Revised)
					} else {
						promoted = append(promoted, id)
						p = Next(p, Promoted)
					}
				case 1:
					if i == 3 {
						revoked = append(revoked, id)
						p = Next(p, Revocation)
					}
				}
			}
			if st, _ := Fold(rel, 1, revised, promoted, revoked, 9); st != p.State() {
				t.Errorf("relation %d, events %06b: Fold %s, Next %s", rel, mask, st, p.State())
			}
		}
	}
}
