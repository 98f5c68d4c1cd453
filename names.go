package mql

import (
	"fmt"
	"regexp"

	"golang.org/x/text/unicode/norm"

	"github.com/mql-dev/mql/graphstore/record"
)

// Names are Unicode: letters (Klärveld, 東京) and digits of any script. A name can be written
// in more than one sequence of code points (an ä composed, or an a and a combining diaeresis);
// mql stores every name in its NFC form, and normalises every name it is given — through the
// API, the language or MCP — so that one name is one name however it was typed; an import
// refuses a file holding a name that is not in NFC.

// nfc is s in Unicode normalization form C.
func nfc(s string) string {
	if norm.NFC.IsNormalString(s) {
		return s
	}
	return norm.NFC.String(s)
}

func nfcAll(list []string) []string {
	for i, s := range list {
		if n := nfc(s); n != s {
			out := make([]string, len(list))
			copy(out, list)
			for j := i; j < len(list); j++ {
				out[j] = nfc(list[j])
			}
			return out
		}
	}
	return list
}

// nfcValue normalises the name a reference value holds.
func nfcValue(v Value) Value {
	if v.Type == record.Ref {
		v.Str = nfc(v.Str)
	}
	return v
}

func (s PrincipalSpec) norm() PrincipalSpec { s.Name, s.By = nfc(s.Name), nfc(s.By); return s }

func (s GrantSpec) norm() GrantSpec {
	s.Grantee, s.Scope, s.By = nfc(s.Grantee), nfc(s.Scope), nfc(s.By)
	return s
}

func (s AssertSpec) norm() AssertSpec {
	s.Subject, s.Predicate, s.By = nfc(s.Subject), nfc(s.Predicate), nfc(s.By)
	s.SeenBy, s.Value = nfcAll(s.SeenBy), nfcValue(s.Value)
	return s
}

func (s RevokeSpec) norm() RevokeSpec {
	s.Claim, s.By, s.ReplacedBy = nfc(s.Claim), nfc(s.By), nfc(s.ReplacedBy)
	s.Ref, s.ReplacedByRef = s.Ref.norm(), s.ReplacedByRef.norm()
	return s
}

func (s ConfirmSpec) norm() ConfirmSpec {
	s.Claim, s.By, s.Ref = nfc(s.Claim), nfc(s.By), s.Ref.norm()
	return s
}

func (s DeriveSpec) norm() DeriveSpec {
	s.Artifact, s.By, s.Run = nfc(s.Artifact), nfc(s.By), nfc(s.Run)
	s.From, s.SeenBy = nfcAll(s.From), nfcAll(s.SeenBy)
	if len(s.FromRefs) > 0 {
		refs := make([]NodeRef, len(s.FromRefs))
		for i, n := range s.FromRefs {
			refs[i] = normNode(n)
		}
		s.FromRefs = refs
	}
	return s
}

func (s ReviewSpec) norm() ReviewSpec {
	s.Artifact, s.By, s.Ref = nfc(s.Artifact), nfc(s.By), s.Ref.norm()
	return s
}

func (s DecaySpec) norm() DecaySpec { s.Predicate, s.By = nfc(s.Predicate), nfc(s.By); return s }

// notNFC returns the first name tx records that is not in NFC, and whether there is one: no
// write records one, so a file that holds one was not written by mql, and an import refuses it
// (rather than changing what it imports).
func notNFC(tx *record.Tx) (string, bool) {
	bad := ""
	nfc := func(s string) string {
		if bad == "" && !norm.NFC.IsNormalString(s) {
			bad = s
		}
		return s
	}
	nfcAll := func(list []string) []string {
		for _, s := range list {
			nfc(s)
		}
		return list
	}
	nfcValue := func(v Value) Value {
		if v.Type == record.Ref {
			nfc(v.Str)
		}
		return v
	}
	id := func(c *record.ClaimID) {
		if c != nil {
			c.Subject, c.Predicate = nfc(c.Subject), nfc(c.Predicate)
		}
	}
	art := func(a *record.ArtifactID) {
		if a != nil {
			a.Name = nfc(a.Name)
		}
	}
	tx.By = nfc(tx.By)
	if tx.Meta != nil {
		tx.Meta.Owner = nfc(tx.Meta.Owner)
	}
	for _, p := range tx.Principals {
		p.Name = nfc(p.Name)
	}
	for _, g := range tx.Grants {
		g.Grantee, g.Scope, g.By = nfc(g.Grantee), nfc(g.Scope), nfc(g.By)
	}
	for _, c := range tx.Claims {
		id(&c.ID)
		id(c.Supersedes)
		id(c.Contests)
		id(c.Corroborates)
		c.By, c.SeenBy, c.Value = nfc(c.By), nfcAll(c.SeenBy), nfcValue(c.Value)
	}
	for _, r := range tx.Revocations {
		id(&r.Claim)
		id(r.ReplacedBy)
		r.By = nfc(r.By)
	}
	for _, c := range tx.Confirmations {
		id(&c.Claim)
		c.By = nfc(c.By)
	}
	for _, a := range tx.Artifacts {
		art(&a.ID)
		art(a.Supersedes)
		for _, in := range a.DerivedFrom {
			id(in.Claim)
			art(in.Artifact)
		}
		a.By, a.SeenBy, a.Run = nfc(a.By), nfcAll(a.SeenBy), nfc(a.Run)
	}
	for _, r := range tx.Reviews {
		art(&r.Artifact)
		r.By = nfc(r.By)
	}
	for _, d := range tx.Decays {
		d.Predicate, d.By = nfc(d.Predicate), nfc(d.By)
	}
	for _, t := range tx.Tokens {
		t.Principal, t.By = nfc(t.Principal), nfc(t.By)
	}
	for _, r := range tx.TokenRevocations {
		r.By = nfc(r.By)
	}
	for _, r := range tx.Retrievals {
		for i := range r.Claims {
			id(&r.Claims[i])
		}
		for i := range r.Artifacts {
			art(&r.Artifacts[i])
		}
		r.Run, r.By = nfc(r.Run), nfc(r.By)
	}
	for _, o := range tx.Outcomes {
		o.Run, o.By = nfc(o.Run), nfc(o.By)
	}
	return bad, bad != ""
}

// badName returns the first name tx records that no write accepts as a name (CheckName: a
// control character, a space, over 256 bytes), as an error saying what it names: a file
// holding one was not written by mql, and the language could never name it again.
func badName(tx *record.Tx) error {
	var bad error
	check := func(what, s string) {
		if bad == nil && s != "" {
			bad = checkName(what, s)
		}
	}
	claim := func(c *record.ClaimID) {
		if c != nil {
			check("subject", c.Subject)
			check("predicate", c.Predicate)
		}
	}
	art := func(a *record.ArtifactID) {
		if a != nil {
			check("artifact", a.Name)
		}
	}
	principals := func(names ...string) {
		for _, n := range names {
			check("principal", n)
		}
	}
	principals(tx.By)
	if tx.Meta != nil {
		principals(tx.Meta.Owner)
	}
	for _, p := range tx.Principals {
		principals(p.Name)
	}
	for _, g := range tx.Grants {
		principals(g.Grantee, g.By)
	}
	for _, c := range tx.Claims {
		claim(&c.ID)
		principals(c.By)
		principals(c.SeenBy...)
	}
	for _, r := range tx.Revocations {
		claim(&r.Claim)
		principals(r.By)
	}
	for _, c := range tx.Confirmations {
		claim(&c.Claim)
		principals(c.By)
	}
	for _, a := range tx.Artifacts {
		art(&a.ID)
		principals(a.By)
		principals(a.SeenBy...)
		check("run", a.Run)
	}
	for _, r := range tx.Reviews {
		art(&r.Artifact)
		principals(r.By)
	}
	for _, d := range tx.Decays {
		check("predicate", d.Predicate)
		principals(d.By)
	}
	for _, t := range tx.Tokens {
		principals(t.Principal, t.By)
	}
	for _, r := range tx.TokenRevocations {
		principals(r.By)
	}
	for _, r := range tx.Retrievals {
		check("run", r.Run)
		principals(r.By)
	}
	for _, o := range tx.Outcomes {
		check("run", o.Run)
		principals(o.By)
	}
	return bad
}

// nameRE is the shape of every name mql stores: subjects, predicates, artifacts, principals.
// It is the language's identifier, so anything written through the API can be named in mql.
// Letters and digits are Unicode's (a combining mark may follow a letter: names are stored in
// NFC, see nfc).
var nameRE = regexp.MustCompile(`^[\p{L}_][\p{L}\p{M}\p{Nd}_:/]*(-[\p{L}\p{M}\p{Nd}_:/]+)*$`)

// CheckName reports whether s is a valid name for a principal, subject, predicate or artifact:
// letters, digits, _ : / and single - between them, starting with a letter or _, at most 256
// bytes. Letters and digits are any script's (Klärveld, 東京). The error wraps ErrBadReference and names s as what ("owner", "principal", …).
func CheckName(what, s string) error { return checkName(what, s) }

func checkName(what, s string) error {
	if len(s) > 256 {
		return fmt.Errorf("%s %.40q…: %w: names are at most 256 bytes", what, s, ErrBadReference)
	}
	if !asciiName(s) && !nameRE.MatchString(s) {
		return fmt.Errorf("%s %q: %w: use letters, digits (of any script), _ : / and single - between them, starting with a letter or _", what, s, ErrBadReference)
	}
	return nil
}

// asciiName reports whether s is a name of nameRE's shape made of ASCII only: the common case,
// judged without the regular expression, which cost a read as much as its lookups.
func asciiName(s string) bool {
	if s == "" {
		return false
	}
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
		return false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == ':', c == '/':
		case c == '-':
			// a single - between name characters
			if i == len(s)-1 || s[i+1] == '-' {
				return false
			}
		default:
			return false
		}
	}
	return true
}
