// Package exceptions compiles Kyverno PolicyExceptions (kyverno.io/v2,
// v2beta1) and policies.kyverno.io PolicyExceptions (the CEL kind, with
// the CEL option) into an immutable Set for the engine:
//
//	set, err := exceptions.Compile(polexs, exceptions.Namespaces("kyverno"))
//	eng, err := engine.New(engine.WithExceptions(set))
//
// The engine applies them with upstream's semantics: an exception names
// policies (the name of a ClusterPolicy or "<namespace>/<name>" of a
// Policy, exactly) and their rules (wildcards '*' and '?'), and exempts
// the resources its match block selects, its exclude block does not and
// its conditions hold for; a rule so excepted is skipped ("rule is skipped
// due to policy exception: ns/name"), or, for a podSecurity rule, the
// controls it names are exempted. A CEL exception exempts the resources
// its matchConditions hold for from the CEL policies its policyRefs name
// by kind and name, evaluated on the environment of each policy.
//
// A Set is immutable and safe for concurrent use. The PolicyExceptions
// given to Compile are referenced, never modified, and must not be
// modified afterwards.
package exceptions
