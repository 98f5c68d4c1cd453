package graphstore

// The IRIs of the quad vocabulary; docs/VOCABULARY.md describes each.

import "github.com/cayleygraph/quad"

const (
	nsRDF  = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsPROV = "http://www.w3.org/ns/prov#"
	nsXSD  = "http://www.w3.org/2001/XMLSchema#"
	nsMQL  = "urn:mql:"

	// IRI prefixes of record nodes.
	prefTx           = nsMQL + "tx:"
	prefPrincipal    = nsMQL + "principal:"
	prefGrant        = nsMQL + "grant:"
	prefSource       = nsMQL + "source:"
	prefClaim        = nsMQL + "claim:"
	prefRevocation   = nsMQL + "revocation:"
	prefConfirmation = nsMQL + "confirmation:"
	prefArtifact     = nsMQL + "artifact:"
	prefReview       = nsMQL + "review:"
	prefDecay        = nsMQL + "decay:"
	prefToken        = nsMQL + "token:"
	prefTokenRevoke  = nsMQL + "tokenRevocation:"
	prefRetrieval    = nsMQL + "retrieval:"
	prefOutcome      = nsMQL + "outcome:"
	iriStore         = quad.IRI(nsMQL + "store")
)

// RDF, PROV-O and XSD terms.
var (
	rdfType = quad.IRI(nsRDF + "type")

	provAgent         = quad.IRI(nsPROV + "Agent")
	provPerson        = quad.IRI(nsPROV + "Person")
	provSoftwareAgent = quad.IRI(nsPROV + "SoftwareAgent")
	provEntity        = quad.IRI(nsPROV + "Entity")
	provActivity      = quad.IRI(nsPROV + "Activity")

	provWasAttributedTo   = quad.IRI(nsPROV + "wasAttributedTo")
	provWasDerivedFrom    = quad.IRI(nsPROV + "wasDerivedFrom")
	provHadPrimarySource  = quad.IRI(nsPROV + "hadPrimarySource")
	provWasRevisionOf     = quad.IRI(nsPROV + "wasRevisionOf")
	provInvalidated       = quad.IRI(nsPROV + "invalidated")
	provWasInvalidatedBy  = quad.IRI(nsPROV + "wasInvalidatedBy")
	provInvalidatedAtTime = quad.IRI(nsPROV + "invalidatedAtTime")
	provWasAssociatedWith = quad.IRI(nsPROV + "wasAssociatedWith")
	provEndedAtTime       = quad.IRI(nsPROV + "endedAtTime")
	provUsed              = quad.IRI(nsPROV + "used")

	xsdDateTime = quad.IRI(nsXSD + "dateTime")
	xsdDuration = quad.IRI(nsXSD + "duration")
	xsdDouble   = quad.IRI(nsXSD + "double")
	xsdInteger  = quad.IRI(nsXSD + "integer")
	xsdBoolean  = quad.IRI(nsXSD + "boolean")
	xsdString   = quad.IRI(nsXSD + "string")
)

// mql classes.
var (
	mqlTransaction  = quad.IRI(nsMQL + "Transaction")
	mqlStore        = quad.IRI(nsMQL + "Store")
	mqlPrincipal    = quad.IRI(nsMQL + "Principal")
	mqlGrant        = quad.IRI(nsMQL + "Grant")
	mqlSource       = quad.IRI(nsMQL + "Source")
	mqlClaim        = quad.IRI(nsMQL + "Claim")
	mqlRevocation   = quad.IRI(nsMQL + "Revocation")
	mqlConfirmation = quad.IRI(nsMQL + "Confirmation")
	mqlArtifact     = quad.IRI(nsMQL + "Artifact")
	mqlReview       = quad.IRI(nsMQL + "Review")
	mqlDecay        = quad.IRI(nsMQL + "Decay")
	mqlToken        = quad.IRI(nsMQL + "Token")
	mqlTokenRevoke  = quad.IRI(nsMQL + "TokenRevocation")
	mqlRetrieval    = quad.IRI(nsMQL + "Retrieval")
	mqlOutcome      = quad.IRI(nsMQL + "Outcome")

	// mqlRefType is the datatype of a claim value of type Ref: "Brimsole"^^<urn:mql:Ref>.
	mqlRefType = quad.IRI(nsMQL + "Ref")
)

// mql predicates.
var (
	mqlWrote            = quad.IRI(nsMQL + "wrote")
	mqlOrd              = quad.IRI(nsMQL + "ord")
	mqlOwner            = quad.IRI(nsMQL + "owner")
	mqlStrict           = quad.IRI(nsMQL + "strict")
	mqlName             = quad.IRI(nsMQL + "name")
	mqlPrincipalType    = quad.IRI(nsMQL + "principalType")
	mqlGrantee          = quad.IRI(nsMQL + "grantee")
	mqlRight            = quad.IRI(nsMQL + "right")
	mqlScope            = quad.IRI(nsMQL + "scope")
	mqlExcerpt          = quad.IRI(nsMQL + "excerpt")
	mqlURI              = quad.IRI(nsMQL + "uri")
	mqlRevision         = quad.IRI(nsMQL + "revision")
	mqlSubject          = quad.IRI(nsMQL + "subject")
	mqlPredicate        = quad.IRI(nsMQL + "predicate")
	mqlVersion          = quad.IRI(nsMQL + "version")
	mqlValue            = quad.IRI(nsMQL + "value")
	mqlKind             = quad.IRI(nsMQL + "kind")
	mqlConfidence       = quad.IRI(nsMQL + "confidence")
	mqlValidFrom        = quad.IRI(nsMQL + "validFrom")
	mqlValidUntil       = quad.IRI(nsMQL + "validUntil")
	mqlSeenBy           = quad.IRI(nsMQL + "seenBy")
	mqlSeenByOrder      = quad.IRI(nsMQL + "seenByOrder")
	mqlSourceOrder      = quad.IRI(nsMQL + "sourceOrder")
	mqlDerivedFromOrder = quad.IRI(nsMQL + "derivedFromOrder")
	mqlContests         = quad.IRI(nsMQL + "contests")
	mqlCorroborates     = quad.IRI(nsMQL + "corroborates")
	mqlGrantPred        = quad.IRI(nsMQL + "grant")
	mqlBecause          = quad.IRI(nsMQL + "because")
	mqlStanding         = quad.IRI(nsMQL + "standing")
	mqlReplacedBy       = quad.IRI(nsMQL + "replacedBy")
	mqlConfirms         = quad.IRI(nsMQL + "confirms")
	mqlHalfLife         = quad.IRI(nsMQL + "halfLife")
	mqlHolder           = quad.IRI(nsMQL + "holder")
	mqlSecretHash       = quad.IRI(nsMQL + "secretSHA256")
	mqlExpires          = quad.IRI(nsMQL + "expires")
	mqlRun              = quad.IRI(nsMQL + "run")
	mqlReadAtTx         = quad.IRI(nsMQL + "readAtTx")
	mqlStatement        = quad.IRI(nsMQL + "statement")
	mqlUsedOrder        = quad.IRI(nsMQL + "usedOrder")
	mqlResult           = quad.IRI(nsMQL + "result")
)
