package query

import "github.com/mql-dev/mql"

// The library names claims and artifacts with its own types, which parse them; a Ref of the
// language crosses to them and back through these conversions only. They are functions of
// this package, not methods of Ref, because package syntax does not import the library.

// ClaimRefOf is r as the library names a claim.
func ClaimRefOf(r Ref) mql.ClaimRef {
	return mql.ClaimRef{Subject: r.Subject, Predicate: r.Predicate, Version: r.Version}
}

// ArtifactRefOf is r as the library names an artifact (or, for a reference value, an entity).
func ArtifactRefOf(r Ref) mql.ArtifactRef {
	return mql.ArtifactRef{Name: r.Subject, Version: r.Version}
}

// NodeRefOf is r as the library names a claim or an artifact.
func NodeRefOf(r Ref) mql.NodeRef {
	if r.IsClaim() {
		return ClaimRefOf(r)
	}
	return ArtifactRefOf(r)
}

// RefOf is the Ref that names what n names, with no position; nil gives the zero Ref.
func RefOf(n mql.NodeRef) Ref {
	switch n := n.(type) {
	case mql.ClaimRef:
		return Ref{Subject: n.Subject, Predicate: n.Predicate, Version: n.Version}
	case mql.ArtifactRef:
		return Ref{Subject: n.Name, Version: n.Version}
	}
	return Ref{}
}
