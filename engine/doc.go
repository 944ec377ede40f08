// Package engine evaluates Kyverno-language policies (and Kubernetes'
// ValidatingAdmissionPolicies) against Kubernetes resources.
//
// An Engine holds configuration and host dependencies (ConfigMap lookups,
// Kubernetes API calls, image registries, namespace labels, exceptions). It
// compiles policies once into an immutable PolicySet that is safe for
// concurrent use; each Validate, Mutate or Generate call then evaluates one
// request:
//
//	eng, err := engine.New(engine.WithConfigMapResolver(cms))
//	set, err := eng.Compile(policies...)
//	resp, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: pod})
//
// Evaluation follows the upstream order for every rule: match/exclude,
// policy exceptions, context entries, preconditions (then, for rules other
// than validate.cel, celPreconditions), then the rule body. A validate.cel
// body runs, for each parameter object, its celPreconditions and then
// every CEL expression, on the API server's CEL environment (package cel);
// its expressions are type-checked at Compile.
//
// A set may mix policy kinds: ValidatingPolicy and
// NamespacedValidatingPolicy (policies.kyverno.io) are evaluated as
// upstream's CEL engine evaluates them (matchConstraints, CEL
// PolicyExceptions, matchConditions, variables, validations in order,
// auditAnnotations; Pod controller variants; JSON payloads with
// ValidatePayload), ValidatingAdmissionPolicy with its bindings as the API
// server does; their results join the same Response. Policy.Kind tells the
// kinds apart. ValidatingPolicy expressions reach Kyverno's CEL libraries
// (resource, http, image, imagedata, globalContext, ...), whose hosts are
// the engine's (WithCELLibraries completes them).
//
// Results are plain data (RuleResult, read with Response.Rules) that the
// report package turns into PolicyReports. Response.Blocked is upstream's
// decision to deny an admission request, which the admission package turns
// into an AdmissionResponse; PolicySet.Scan evaluates a resource the way
// `gavel apply` does.
//
// Objects are JSON-like maps (map[string]any as encoding/json and
// unstructured.Unstructured hold them); convert typed objects with
// runtime.DefaultUnstructuredConverter. The engine never modifies them.
package engine
