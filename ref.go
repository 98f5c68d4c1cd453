package mql

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mql-dev/mql/graphstore/record"
)

// ClaimRef names a claim: one version of a key ("Subject.predicate@N"), or with Version 0
// the key's live claim ("Subject.predicate").
type ClaimRef struct {
	Subject   string
	Predicate string
	Version   int // 0: the live claim
}

// ArtifactRef names an artifact: one version ("name@N"), or with Version 0 its newest.
type ArtifactRef struct {
	Name    string
	Version int // 0: the newest version
}

// NodeRef is a ClaimRef or an ArtifactRef: what a derivation rests on.
type NodeRef interface {
	String() string
	node() // only ClaimRef and ArtifactRef are nodes
}

func (ClaimRef) node()    {}
func (ArtifactRef) node() {}

func (c ClaimRef) String() string { return c.Subject + "." + c.Predicate + versionSuffix(c.Version) }

func (a ArtifactRef) String() string { return a.Name + versionSuffix(a.Version) }

func versionSuffix(n int) string {
	if n == 0 {
		return ""
	}
	return "@" + strconv.Itoa(n)
}

// ParseClaimRef parses "Subject.predicate@N", or "Subject.predicate" for the live claim.
func ParseClaimRef(s string) (ClaimRef, error) {
	s = nfc(s)
	base, ver, hasVer := strings.Cut(s, "@")
	subj, pred, dotted := strings.Cut(base, ".")
	if !dotted {
		return ClaimRef{}, fmt.Errorf("claim reference %q: %w: write Subject.predicate@N", s, ErrBadReference)
	}
	c := ClaimRef{Subject: subj, Predicate: pred}
	if err := c.checkNames(); err != nil {
		return ClaimRef{}, err
	}
	if hasVer {
		n, ok := parseVersion(ver)
		if !ok {
			return ClaimRef{}, fmt.Errorf("claim reference %q: %w: the version after @ must be a positive integer", s, ErrBadReference)
		}
		c.Version = n
	}
	return c, nil
}

// ParseArtifactRef parses "name@N", or "name" for the artifact's newest version.
func ParseArtifactRef(s string) (ArtifactRef, error) {
	s = nfc(s)
	name, ver, hasVer := strings.Cut(s, "@")
	if err := checkName("artifact", name); err != nil {
		return ArtifactRef{}, err
	}
	a := ArtifactRef{Name: name}
	if hasVer {
		n, ok := parseVersion(ver)
		if !ok {
			return ArtifactRef{}, fmt.Errorf("artifact reference %q: %w: the version after @ must be a positive integer", s, ErrBadReference)
		}
		a.Version = n
	}
	return a, nil
}

// ParseNodeRef parses a claim reference (a "." before any "@": see ParseClaimRef) or else an
// artifact reference (see ParseArtifactRef). Artifact names hold no ".", so the two never
// overlap. The NodeRef is nil when there is an error, never a zero ClaimRef or ArtifactRef.
func ParseNodeRef(s string) (NodeRef, error) {
	base, _, _ := strings.Cut(s, "@")
	if strings.Contains(base, ".") {
		c, err := ParseClaimRef(s)
		if err != nil {
			return nil, err
		}
		return c, nil
	}
	a, err := ParseArtifactRef(s)
	if err != nil {
		return nil, err
	}
	return a, nil
}

// parseVersion reads the N of @N: a positive integer.
func parseVersion(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1
}

// checkRefValue checks a reference value (Ref): a subject, a claim or an artifact, with or
// without a version. It names what is wrong as a "reference", since a value does not say which
// of the three it means.
func checkRefValue(s string) error {
	base, ver, hasVer := strings.Cut(s, "@")
	if hasVer {
		if _, ok := parseVersion(ver); !ok {
			return fmt.Errorf("reference %q: %w: the version after @ must be a positive integer", s, ErrBadReference)
		}
	}
	subj, pred, dotted := strings.Cut(base, ".")
	if err := checkName("reference", subj); err != nil {
		return err
	}
	if dotted {
		return checkName("reference", pred)
	}
	return nil
}

func (c ClaimRef) checkNames() error {
	if err := checkName("subject", c.Subject); err != nil {
		return err
	}
	return checkName("predicate", c.Predicate)
}

// check judges a ClaimRef a caller built as ParseClaimRef judges text.
func (c ClaimRef) check() error {
	if err := c.checkNames(); err != nil {
		return err
	}
	if c.Version < 0 {
		return fmt.Errorf("claim reference %q: %w: the version must be a positive integer, or 0 for the live claim", c, ErrBadReference)
	}
	return nil
}

// check judges an ArtifactRef a caller built as ParseArtifactRef judges text.
func (a ArtifactRef) check() error {
	if err := checkName("artifact", a.Name); err != nil {
		return err
	}
	if a.Version < 0 {
		return fmt.Errorf("artifact reference %q: %w: the version must be a positive integer, or 0 for the newest", a, ErrBadReference)
	}
	return nil
}

// checkNode judges a NodeRef a caller built.
func checkNode(n NodeRef) error {
	switch n := n.(type) {
	case ClaimRef:
		return n.check()
	case ArtifactRef:
		return n.check()
	}
	return fmt.Errorf("%w: a reference must be a ClaimRef or an ArtifactRef, not nil", ErrBadReference)
}

func (c ClaimRef) norm() ClaimRef {
	c.Subject, c.Predicate = nfc(c.Subject), nfc(c.Predicate)
	return c
}

func (a ArtifactRef) norm() ArtifactRef {
	a.Name = nfc(a.Name)
	return a
}

func normNode(n NodeRef) NodeRef {
	switch n := n.(type) {
	case ClaimRef:
		return n.norm()
	case ArtifactRef:
		return n.norm()
	}
	return n
}

// claimRef is the claim a spec names: typed when it is set, else as text.
func claimRef(typed ClaimRef, text string) (ClaimRef, error) {
	if typed != (ClaimRef{}) {
		return typed, typed.check()
	}
	return ParseClaimRef(text)
}

// artifactRef is the artifact a spec names: typed when it is set, else as text.
func artifactRef(typed ArtifactRef, text string) (ArtifactRef, error) {
	if typed != (ArtifactRef{}) {
		return typed, typed.check()
	}
	return ParseArtifactRef(text)
}

// refArg is the reference a read was given: text, which it parses, or a typed reference, which
// it checks. Either is judged inside the read's view, after what the read checks first.
type refArg struct {
	text  string // as given, or the typed reference's String
	typed bool
	ref   NodeRef
}

func textRef(s string) refArg { return refArg{text: s} }

func typedRef(n NodeRef) refArg {
	n = normNode(n)
	a := refArg{typed: true, ref: n}
	if n != nil {
		a.text = n.String()
	}
	return a
}

func (a refArg) String() string { return a.text }

func (a refArg) node() (NodeRef, error) {
	if a.typed {
		if err := checkNode(a.ref); err != nil {
			return nil, err
		}
		return a.ref, nil
	}
	return ParseNodeRef(a.text)
}

// claim is a as a claim reference; only RevokedByRef gives one typed, and as a ClaimRef.
func (a refArg) claim() (ClaimRef, error) {
	if a.typed {
		c, _ := a.ref.(ClaimRef)
		return c, c.check()
	}
	return ParseClaimRef(a.text)
}

func (c ClaimRef) id() record.ClaimID {
	return record.ClaimID{Key: record.Key{Subject: c.Subject, Predicate: c.Predicate}, Version: c.Version}
}

func (a ArtifactRef) id() record.ArtifactID {
	return record.ArtifactID{Name: a.Name, Version: a.Version}
}
