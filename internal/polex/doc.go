// Package polex is the compiled form of PolicyExceptions that the engine
// evaluates: Kyverno's PolicyExceptions (kyverno.io/v2, v2beta1) indexed
// by policy and rule, with their match and exclude blocks compiled, and
// policies.kyverno.io PolicyExceptions indexed by the kind and name of the
// policies their policyRefs name. Package exceptions is its public facade:
// a user compiles a Set there and hands it to the engine, which reads it
// through this package.
//
// Compile once, then per rule evaluation:
//
//	set, err := polex.Compile(polexs, polex.Namespaces("kyverno"))
//	for _, e := range set.Candidates(policyKey, rule.Name) {
//		ok, err := e.Matches(resource, request)
//		// then evaluate e.Conditions (the engine owns variable substitution)
//	}
//
// A policy key is the name of a ClusterPolicy or "<namespace>/<name>" of a
// Policy, as exceptions name them in spec.exceptions[].policyName; the
// comparison is exact, so an exception naming "p" does not apply to a Policy
// "ns/p". Rule names in ruleNames take the wildcards '*' and '?'.
// CELCandidates finds the CEL exceptions by the kind and name of the
// policy their policyRefs name; the engine evaluates their
// matchConditions.
//
// A Set and its Exceptions are immutable and safe for concurrent use. The
// PolicyExceptions given to Compile are referenced, never modified, and must
// not be modified afterwards.
package polex
