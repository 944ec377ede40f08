// Package celpolicy compiles and evaluates the bodies of the CEL policy
// kinds: Kyverno's ValidatingPolicy (policies.kyverno.io) and Kubernetes'
// ValidatingAdmissionPolicy. A body (Validating) is compiled once from
// matchConditions, variables, validations and auditAnnotations on an
// environment of package cel, and evaluated on an Input per request;
// matchConstraints and binding matchResources compile into Constraints.
//
// The two kinds differ in details, kept apart by Semantics: a
// ValidatingPolicy evaluates its validations in order and stops at the
// first that does not hold, as upstream Kyverno's engine does; a
// ValidatingAdmissionPolicy evaluates them all, then the first denial
// decides, as the API server does.
//
// The package is the engine's: results are plain Outcomes that the engine
// turns into rule results.
package celpolicy
