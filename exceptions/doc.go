// Package exceptions compiles Kyverno PolicyExceptions (kyverno.io/v2,
// v2beta1) into an immutable Set indexed by policy and rule, and matches them
// against resources with upstream's semantics.
//
// Compile once, then per rule evaluation:
//
//	set, err := exceptions.Compile(polexs, exceptions.Namespaces("kyverno"))
//	for _, e := range set.Candidates(policyKey, rule.Name) {
//		ok, err := e.Matches(resource, request)
//		// then evaluate e.Conditions (the engine owns variable substitution)
//	}
//
// A policy key is the name of a ClusterPolicy or "<namespace>/<name>" of a
// Policy, as exceptions name them in spec.exceptions[].policyName; the
// comparison is exact, so an exception naming "p" does not apply to a Policy
// "ns/p". Rule names in ruleNames take the wildcards '*' and '?'.
//
// policies.kyverno.io PolicyExceptions (the CEL kind) join a Set with the
// CEL option; CELCandidates finds them by the kind and name of the policy
// their policyRefs name, and the engine evaluates their matchConditions.
//
// A Set and its Exceptions are immutable and safe for concurrent use. The
// PolicyExceptions given to Compile are referenced, never modified, and must
// not be modified afterwards.
package exceptions
