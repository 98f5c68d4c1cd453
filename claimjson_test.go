package mql_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mql-dev/mql"
)

// A claim's JSON reads back to the same claim, its value typed by value_type.
func TestClaimJSONRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)
	for _, v := range []mql.Value{mql.String("EU"), mql.Number(44.5), mql.Bool(true), mql.Time(at), mql.Ref("Brimsole")} {
		c := mql.Claim{Ref: "K.p@1", Subject: "K", Predicate: "p", Version: 1, Value: v, ValueType: v.Type, State: mql.Live, By: "w", Sources: []mql.Source{{ID: "s"}}}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		var back mql.Claim
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !back.Value.Equal(v) || back.Ref != c.Ref || back.By != "w" || len(back.Sources) != 1 {
			t.Errorf("%s read back as %+v", b, back)
		}
	}
	var c mql.Claim
	if err := json.Unmarshal([]byte(`{"value":1,"value_type":"colour"}`), &c); err == nil {
		t.Error("an unknown value type read without error")
	}
}
