package mql

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mql-dev/mql/graphstore"
	"github.com/mql-dev/mql/graphstore/index"
	"github.com/mql-dev/mql/graphstore/record"
)

// On PostgreSQL, a single write (Assert, Revoke, Confirm, Derive, Review, AddPrincipal,
// Grant, SetDecay) that finds another process holding the writer lock is queued for that
// process, which builds it in its own group commit (graphstore.Request). What travels is the
// write's spec, as JSON under a kind that names its version; what comes back is its receipt,
// or its refusal as a message and the names of the errors it matches. The build is the same
// function the writer's own process would run, against the same state (the newest, under the
// lock), so a queued write is checked exactly as it would be at home.

// A kind's suffix is its encoding's version: a process that does not know it leaves the
// request to the process that queued it.
const (
	kindPrincipal = "principal/1"
	kindGrant     = "grant/1"
	kindAssert    = "assert/1"
	kindRevoke    = "revoke/1"
	kindConfirm   = "confirm/1"
	kindDerive    = "derive/1"
	kindReview    = "review/1"
	kindDecay     = "decay/1"
)

// wireValue is a claim's value as a request carries it: every field, so that the type travels
// with it (Value's own JSON form is the plain value a reader sees).
type wireValue struct {
	Type ValueType `json:"type"`
	Str  string    `json:"str,omitempty"`
	Num  float64   `json:"num,omitempty"`
	Bool bool      `json:"bool,omitempty"`
	Time time.Time `json:"time"`
}

// wireAssert is an AssertSpec as a request carries it (its Value shadows the spec's).
type wireAssert struct {
	AssertSpec
	Value wireValue
}

func (s AssertSpec) wire() (any, error) {
	v := s.Value
	return wireAssert{AssertSpec: s, Value: wireValue{Type: v.Type, Str: v.Str, Num: v.Num, Bool: v.Bool, Time: v.Time}}, nil
}

// A request carries references as text, in the fields every version of mql reads; the typed
// fields (json:"-") stay home. A typed reference that its text would not name (a subject
// holding a "." or an "@", say) fails its check here, and the write stays home too, where the
// build refuses it as it would anywhere.

func (s RevokeSpec) wire() (any, error) {
	var err error
	if s.Ref != (ClaimRef{}) {
		s.Claim, err = wireText(s.Ref)
	}
	if s.ReplacedByRef != (ClaimRef{}) && err == nil {
		s.ReplacedBy, err = wireText(s.ReplacedByRef)
	}
	return s, err
}

func (s ConfirmSpec) wire() (any, error) {
	var err error
	if s.Ref != (ClaimRef{}) {
		s.Claim, err = wireText(s.Ref)
	}
	return s, err
}

func (s DeriveSpec) wire() (any, error) {
	if len(s.FromRefs) == 0 {
		return s, nil
	}
	s.From = make([]string, len(s.FromRefs))
	for i, n := range s.FromRefs {
		var err error
		if s.From[i], err = wireText(n); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s ReviewSpec) wire() (any, error) {
	var err error
	if s.Ref != (ArtifactRef{}) {
		s.Artifact, err = wireText(s.Ref)
	}
	return s, err
}

func wireText(n NodeRef) (string, error) {
	if err := checkNode(n); err != nil {
		return "", err
	}
	return n.String(), nil
}

// request is the graphstore request of a write of kind with spec, which build builds.
func request(kind string, spec any) *graphstore.Request {
	return &graphstore.Request{Kind: kind, Payload: func() ([]byte, error) {
		if w, ok := spec.(interface{ wire() (any, error) }); ok {
			var err error
			if spec, err = w.wire(); err != nil {
				return nil, err
			}
		}
		// A NaN or an infinity fails here, and the write stays in its own process; so does
		// text that is not UTF-8, which JSON would carry as U+FFFD (written \ufffd; text
		// that holds those six characters stays home too).
		b, err := json.Marshal(spec)
		if err == nil && bytes.Contains(b, []byte(`\ufffd`)) {
			err = errors.New("text that JSON does not carry as it is")
		}
		return b, err
	}}
}

// requestBuilds builds the requests other processes queue (graphstore.Requests).
type requestBuilds struct{}

func (requestBuilds) Build(by, kind string, payload []byte) (func(ix *index.Index, tx *record.Tx) ([]byte, error), bool) {
	spec, err := decodeRequest(kind, payload)
	if spec == nil || err != nil {
		return nil, false
	}
	return func(ix *index.Index, tx *record.Tx) ([]byte, error) {
		var rc Receipt
		err := runBuild(ix, tx, by, spec.build, &rc)
		res, merr := json.Marshal(rc)
		if merr != nil && err == nil {
			err = merr
		}
		return res, err
	}, true
}

// writeSpec is a write's spec: what it records is its build's.
type writeSpec interface {
	build(v *index.View, tx *record.Tx, rc *Receipt) error
}

// decodeRequest returns the spec a request's payload holds, nil for a kind this version does
// not know.
func decodeRequest(kind string, payload []byte) (writeSpec, error) {
	decode, ok := requestDecoders[kind]
	if !ok {
		return nil, nil
	}
	return decode(payload)
}

var requestDecoders = map[string]func([]byte) (writeSpec, error){
	kindAssert: decodeAssert, kindPrincipal: decodeSpec[PrincipalSpec], kindGrant: decodeSpec[GrantSpec],
	kindRevoke: decodeSpec[RevokeSpec], kindConfirm: decodeSpec[ConfirmSpec], kindDerive: decodeSpec[DeriveSpec],
	kindReview: decodeSpec[ReviewSpec], kindDecay: decodeSpec[DecaySpec],
}

func decodeAssert(payload []byte) (writeSpec, error) {
	var w wireAssert
	err := json.Unmarshal(payload, &w)
	s := w.AssertSpec
	s.Value = record.Value{Type: w.Value.Type, Str: w.Value.Str, Num: w.Value.Num, Bool: w.Value.Bool, Time: w.Value.Time}
	return s, err
}

func decodeSpec[S writeSpec](payload []byte) (writeSpec, error) {
	var s S
	err := json.Unmarshal(payload, &s)
	return s, err
}

// requestErrors names the errors a refusal carries back: the one who queued the write matches
// it with errors.Is as the builder did.
var requestErrors = map[string]error{
	"not-found": ErrNotFound, "unknown-principal": ErrUnknownPrincipal, "bad-reference": ErrBadReference,
	"value-type": ErrValueType, "invalid": ErrInvalid, "vector": ErrVector, "cycle": ErrCycle,
	"no-standing": ErrNoStanding, "conflict": ErrConflict, "in-use": ErrInUse, "storage": ErrStorage,
	"damaged": ErrDamaged, "unauthorized": ErrUnauthorized, "unchanged": errUnchanged,
	"index-invalid": index.ErrInvalid, "canceled": context.Canceled, "deadline": context.DeadlineExceeded,
}

type wireError struct {
	Message string   `json:"message"`
	Is      []string `json:"is,omitempty"`
}

func (requestBuilds) EncodeError(err error) []byte {
	w := wireError{Message: err.Error()}
	for name, e := range requestErrors {
		if errors.Is(err, e) {
			w.Is = append(w.Is, name)
		}
	}
	b, _ := json.Marshal(w)
	return b
}

func (requestBuilds) DecodeError(b []byte) error {
	var w wireError
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("%w: the refusal of a write another process built does not decode: %v", ErrStorage, err)
	}
	e := &remoteError{msg: w.Message}
	for _, name := range w.Is {
		if x, ok := requestErrors[name]; ok {
			e.is = append(e.is, x)
		}
	}
	return e
}

// remoteError is the refusal of a write that another process built: its message, and the
// errors it matched there.
type remoteError struct {
	msg string
	is  []error
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool {
	for _, x := range e.is {
		if x == target {
			return true
		}
	}
	return false
}
