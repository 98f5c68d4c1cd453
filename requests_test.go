package mql

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/mql-dev/mql/graphstore/record"
)

// A write queued for another process arrives as it was sent: each spec's payload decodes to
// the same spec, and its build is the spec's own.
func TestRequestPayloads(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 891011121, time.UTC)
	half := 0.5
	for _, tc := range []struct {
		kind string
		spec any
	}{
		{kindAssert, AssertSpec{Subject: "Klärveld", Predicate: "price", Value: Number(-0.1), By: "w1", Confidence: &half,
			Sources: []Source{{ID: "s1", Excerpt: "<b>&", URI: "https://x", Revision: "r2"}}, Kind: Observed,
			ValidFrom: at, ValidUntil: at.Add(time.Hour), SeenBy: []string{"w1", "w2"}, Vector: []float32{0.1, -3e-7, 1}}},
		{kindAssert, AssertSpec{Subject: "K", Predicate: "ref", Value: record.Value{Type: record.Ref, Str: "Other"}, By: "w1"}},
		{kindAssert, AssertSpec{Subject: "K", Predicate: "when", Value: Time(at), By: "w1"}},
		{kindAssert, AssertSpec{Subject: "K", Predicate: "ok", Value: Bool(true), By: "w1"}},
		{kindAssert, AssertSpec{Subject: "K", Predicate: "name", Value: String("東京 \"quoted\""), By: "w1"}},
		{kindPrincipal, PrincipalSpec{Name: "w3", Type: Agent, By: "owner"}},
		{kindGrant, GrantSpec{Grantee: "w3", Right: RightRevoke, Scope: "K.*", By: "owner"}},
		{kindRevoke, RevokeSpec{Claim: "K.price@2", By: "w1", Because: "wrong", ReplacedBy: "K.price@3"}},
		{kindConfirm, ConfirmSpec{Claim: "K.price", By: "owner"}},
		{kindDerive, DeriveSpec{Artifact: "plan", From: []string{"K.price", "other@2"}, By: "w1", Confidence: &half, SeenBy: []string{"w1"}, Run: "r1"}},
		{kindReview, ReviewSpec{Artifact: "plan@1", By: "owner", Because: "checked"}},
		{kindDecay, DecaySpec{Predicate: "price", HalfLife: 90 * time.Minute, By: "owner"}},
	} {
		t.Run(fmt.Sprintf("%s %T", tc.kind, tc.spec), func(t *testing.T) {
			b, err := request(tc.kind, tc.spec).Payload()
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeRequest(tc.kind, b)
			if err != nil {
				t.Fatalf("decoding %s: %v", b, err)
			}
			if !sameSpec(got, tc.spec) {
				t.Errorf("decoded %#v\nsent    %#v", got, tc.spec)
			}
		})
	}
	if spec, err := decodeRequest("assert/2", []byte("{}")); spec != nil || err != nil {
		t.Errorf("a kind of a later version: %v, %v; want it left to its process", spec, err)
	}
}

// sameSpec reports whether two specs hold the same write: times the same instant.
func sameSpec(a, b any) bool {
	if x, ok := a.(AssertSpec); ok {
		y := b.(AssertSpec)
		if !x.Value.Time.Equal(y.Value.Time) || !x.ValidFrom.Equal(y.ValidFrom) || !x.ValidUntil.Equal(y.ValidUntil) {
			return false
		}
		x.Value.Time, y.Value.Time, x.ValidFrom, y.ValidFrom, x.ValidUntil, y.ValidUntil = time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}, time.Time{}
		return reflect.DeepEqual(x, y)
	}
	return reflect.DeepEqual(a, b)
}

// A write whose payload JSON would change stays in its own process.
func TestRequestPayloadRefused(t *testing.T) {
	for _, s := range []AssertSpec{
		{Subject: "K", Predicate: "p", Value: Number(math.NaN()), By: "w1"},
		{Subject: "K", Predicate: "p", Value: Number(math.Inf(1)), By: "w1"},
		{Subject: "K", Predicate: "p", Value: Number(1), By: "w1", Vector: []float32{float32(math.NaN())}},
		{Subject: "K", Predicate: "p", Value: String("not \xff UTF-8"), By: "w1"},
	} {
		if b, err := request(kindAssert, s).Payload(); err == nil {
			t.Errorf("%v: payload %s, want an error (the write stays home)", s.Value, b)
		}
	}
}

// A refusal carried back from the process that built the write matches what it matched
// there, and says the same.
func TestRequestErrors(t *testing.T) {
	for name, sentinel := range requestErrors {
		err := fmt.Errorf("claim 3 (K.p): %w", sentinel)
		got := requestBuilds{}.DecodeError(requestBuilds{}.EncodeError(err))
		if got.Error() != err.Error() {
			t.Errorf("%s: message %q, want %q", name, got, err)
		}
		for other, o := range requestErrors {
			if errors.Is(got, o) != errors.Is(err, o) {
				t.Errorf("%s: errors.Is(%s) %v, want %v", name, other, errors.Is(got, o), errors.Is(err, o))
			}
		}
	}
	both := fmt.Errorf("%w: %w", ErrInvalid, ErrVector)
	got := requestBuilds{}.DecodeError(requestBuilds{}.EncodeError(both))
	if !errors.Is(got, ErrInvalid) || !errors.Is(got, ErrVector) || errors.Is(got, ErrConflict) {
		t.Errorf("two at once: %v", got)
	}
	if err := (requestBuilds{}).DecodeError([]byte("{")); !errors.Is(err, ErrStorage) {
		t.Errorf("a refusal that does not decode: %v, want ErrStorage", err)
	}
}

// A request carries typed references as the text that names them, which any version reads;
// one its text would not name stays home.
func TestRequestTypedRefs(t *testing.T) {
	c2, c3 := ClaimRef{Subject: "K", Predicate: "price", Version: 2}, ClaimRef{Subject: "K", Predicate: "price", Version: 3}
	for _, tc := range []struct {
		kind        string
		typed, sent any
	}{
		{kindRevoke, RevokeSpec{Ref: c2, ReplacedByRef: c3, By: "w1"}, RevokeSpec{Claim: "K.price@2", ReplacedBy: "K.price@3", By: "w1"}},
		{kindRevoke, RevokeSpec{Ref: c2, Claim: "ignored", By: "w1"}, RevokeSpec{Claim: "K.price@2", By: "w1"}},
		{kindConfirm, ConfirmSpec{Ref: ClaimRef{Subject: "K", Predicate: "price"}, By: "owner"}, ConfirmSpec{Claim: "K.price", By: "owner"}},
		{kindDerive, DeriveSpec{Artifact: "plan", FromRefs: []NodeRef{c2, ArtifactRef{Name: "other", Version: 2}}, By: "w1"},
			DeriveSpec{Artifact: "plan", From: []string{"K.price@2", "other@2"}, By: "w1"}},
		{kindReview, ReviewSpec{Ref: ArtifactRef{Name: "plan"}, By: "owner"}, ReviewSpec{Artifact: "plan", By: "owner"}},
	} {
		b, err := request(tc.kind, tc.typed).Payload()
		if err != nil {
			t.Fatalf("%#v: %v", tc.typed, err)
		}
		got, err := decodeRequest(tc.kind, b)
		if err != nil || !reflect.DeepEqual(got, tc.sent) {
			t.Errorf("%#v arrived as %#v (%v), want %#v", tc.typed, got, err, tc.sent)
		}
	}
	for _, tc := range []struct {
		kind string
		spec any
	}{
		{kindRevoke, RevokeSpec{Ref: ClaimRef{Subject: "K", Predicate: "price@2"}, By: "w1"}}, // text would name K.price@2
		{kindRevoke, RevokeSpec{Ref: c2, ReplacedByRef: ClaimRef{Subject: "K.x", Predicate: "p", Version: 1}, By: "w1"}},
		{kindConfirm, ConfirmSpec{Ref: ClaimRef{Subject: "K", Predicate: "p", Version: -1}, By: "owner"}},
		{kindDerive, DeriveSpec{Artifact: "plan", FromRefs: []NodeRef{c2, nil}, By: "w1"}},
		{kindReview, ReviewSpec{Ref: ArtifactRef{Name: "plan@1"}, By: "owner"}},
	} {
		if b, err := request(tc.kind, tc.spec).Payload(); !errors.Is(err, ErrBadReference) {
			t.Errorf("%#v: payload %s, %v; want ErrBadReference (the write stays home)", tc.spec, b, err)
		}
	}
}
