package codec

// The IRIs of the quad vocabulary; docs/VOCABULARY.md describes each. Prefixes (Pref…) start
// the IRI of a record of each kind; MQL… name mql's classes and predicates, Prov… those of
// W3C PROV, XSD… literal datatypes.

import "github.com/cayleygraph/quad"

const (
	NSRDF  = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	NSPROV = "http://www.w3.org/ns/prov#"
	NSXSD  = "http://www.w3.org/2001/XMLSchema#"
	NSMQL  = "urn:mql:"

	// IRI prefixes of record nodes.
	PrefTx           = NSMQL + "tx:"
	PrefPrincipal    = NSMQL + "principal:"
	PrefGrant        = NSMQL + "grant:"
	PrefSource       = NSMQL + "source:"
	PrefClaim        = NSMQL + "claim:"
	PrefRevocation   = NSMQL + "revocation:"
	PrefConfirmation = NSMQL + "confirmation:"
	PrefArtifact     = NSMQL + "artifact:"
	PrefReview       = NSMQL + "review:"
	PrefDecay        = NSMQL + "decay:"
	PrefToken        = NSMQL + "token:"
	PrefTokenRevoke  = NSMQL + "tokenRevocation:"
	PrefRetrieval    = NSMQL + "retrieval:"
	PrefOutcome      = NSMQL + "outcome:"
	IRIStore         = quad.IRI(NSMQL + "store")
)

// RDF, PROV-O and XSD terms.
var (
	RDFType = quad.IRI(NSRDF + "type")

	ProvAgent         = quad.IRI(NSPROV + "Agent")
	ProvPerson        = quad.IRI(NSPROV + "Person")
	ProvSoftwareAgent = quad.IRI(NSPROV + "SoftwareAgent")
	ProvEntity        = quad.IRI(NSPROV + "Entity")
	ProvActivity      = quad.IRI(NSPROV + "Activity")

	ProvWasAttributedTo   = quad.IRI(NSPROV + "wasAttributedTo")
	ProvWasDerivedFrom    = quad.IRI(NSPROV + "wasDerivedFrom")
	ProvHadPrimarySource  = quad.IRI(NSPROV + "hadPrimarySource")
	ProvWasRevisionOf     = quad.IRI(NSPROV + "wasRevisionOf")
	ProvInvalidated       = quad.IRI(NSPROV + "invalidated")
	ProvWasInvalidatedBy  = quad.IRI(NSPROV + "wasInvalidatedBy")
	ProvInvalidatedAtTime = quad.IRI(NSPROV + "invalidatedAtTime")
	ProvWasAssociatedWith = quad.IRI(NSPROV + "wasAssociatedWith")
	ProvEndedAtTime       = quad.IRI(NSPROV + "endedAtTime")
	ProvUsed              = quad.IRI(NSPROV + "used")

	XSDDateTime = quad.IRI(NSXSD + "dateTime")
	XSDDuration = quad.IRI(NSXSD + "duration")
	XSDDouble   = quad.IRI(NSXSD + "double")
	XSDInteger  = quad.IRI(NSXSD + "integer")
	XSDBoolean  = quad.IRI(NSXSD + "boolean")
	XSDString   = quad.IRI(NSXSD + "string")
)

// mql classes.
var (
	MQLTransaction  = quad.IRI(NSMQL + "Transaction")
	MQLStore        = quad.IRI(NSMQL + "Store")
	MQLPrincipal    = quad.IRI(NSMQL + "Principal")
	MQLGrant        = quad.IRI(NSMQL + "Grant")
	MQLSource       = quad.IRI(NSMQL + "Source")
	MQLClaim        = quad.IRI(NSMQL + "Claim")
	MQLRevocation   = quad.IRI(NSMQL + "Revocation")
	MQLConfirmation = quad.IRI(NSMQL + "Confirmation")
	MQLArtifact     = quad.IRI(NSMQL + "Artifact")
	MQLReview       = quad.IRI(NSMQL + "Review")
	MQLDecay        = quad.IRI(NSMQL + "Decay")
	MQLToken        = quad.IRI(NSMQL + "Token")
	MQLTokenRevoke  = quad.IRI(NSMQL + "TokenRevocation")
	MQLRetrieval    = quad.IRI(NSMQL + "Retrieval")
	MQLOutcome      = quad.IRI(NSMQL + "Outcome")

	// MQLRefType is the datatype of a claim value of type Ref: "Brimsole"^^<urn:mql:Ref>.
	MQLRefType = quad.IRI(NSMQL + "Ref")

	// MQLVectorType is the datatype of a claim's vector: its components as float32, in
	// Go's shortest decimal form that reads back to the same float32, separated by single
	// spaces ("0.25 -1 3.5e-05"^^<urn:mql:Vector>).
	MQLVectorType = quad.IRI(NSMQL + "Vector")
)

// mql predicates.
var (
	MQLWrote            = quad.IRI(NSMQL + "wrote")
	MQLOrd              = quad.IRI(NSMQL + "ord")
	MQLOwner            = quad.IRI(NSMQL + "owner")
	MQLStrict           = quad.IRI(NSMQL + "strict")
	MQLName             = quad.IRI(NSMQL + "name")
	MQLPrincipalType    = quad.IRI(NSMQL + "principalType")
	MQLGrantee          = quad.IRI(NSMQL + "grantee")
	MQLRight            = quad.IRI(NSMQL + "right")
	MQLScope            = quad.IRI(NSMQL + "scope")
	MQLExcerpt          = quad.IRI(NSMQL + "excerpt")
	MQLURI              = quad.IRI(NSMQL + "uri")
	MQLRevision         = quad.IRI(NSMQL + "revision")
	MQLSubject          = quad.IRI(NSMQL + "subject")
	MQLPredicate        = quad.IRI(NSMQL + "predicate")
	MQLVersion          = quad.IRI(NSMQL + "version")
	MQLValue            = quad.IRI(NSMQL + "value")
	MQLKind             = quad.IRI(NSMQL + "kind")
	MQLConfidence       = quad.IRI(NSMQL + "confidence")
	MQLValidFrom        = quad.IRI(NSMQL + "validFrom")
	MQLValidUntil       = quad.IRI(NSMQL + "validUntil")
	MQLSeenBy           = quad.IRI(NSMQL + "seenBy")
	MQLSeenByOrder      = quad.IRI(NSMQL + "seenByOrder")
	MQLSourceOrder      = quad.IRI(NSMQL + "sourceOrder")
	MQLSourceExcerpts   = quad.IRI(NSMQL + "sourceExcerpts")
	MQLDerivedFromOrder = quad.IRI(NSMQL + "derivedFromOrder")
	MQLContests         = quad.IRI(NSMQL + "contests")
	MQLCorroborates     = quad.IRI(NSMQL + "corroborates")
	MQLGrantPred        = quad.IRI(NSMQL + "grant")
	MQLBecause          = quad.IRI(NSMQL + "because")
	MQLStanding         = quad.IRI(NSMQL + "standing")
	MQLReplacedBy       = quad.IRI(NSMQL + "replacedBy")
	MQLConfirms         = quad.IRI(NSMQL + "confirms")
	MQLHalfLife         = quad.IRI(NSMQL + "halfLife")
	MQLHolder           = quad.IRI(NSMQL + "holder")
	MQLSecretHash       = quad.IRI(NSMQL + "secretSHA256")
	MQLExpires          = quad.IRI(NSMQL + "expires")
	MQLRun              = quad.IRI(NSMQL + "run")
	MQLReadAtTx         = quad.IRI(NSMQL + "readAtTx")
	MQLStatement        = quad.IRI(NSMQL + "statement")
	MQLUsedOrder        = quad.IRI(NSMQL + "usedOrder")
	MQLResult           = quad.IRI(NSMQL + "result")
	MQLVector           = quad.IRI(NSMQL + "vector")
)
