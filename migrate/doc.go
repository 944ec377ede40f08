// Package migrate converts Kyverno's ClusterPolicies and Policies into the
// CEL policy types, and proves a conversion by evaluating it and its source
// on the same resources.
//
// Convert takes one document: a ClusterPolicy or Policy becomes a
// ValidatingPolicy (validate rules), a MutatingPolicy (mutate rules), a
// GeneratingPolicy (generate rules) and an ImageValidatingPolicy
// (verifyImages rules), each named after the policy, or <name>-vpol,
// -mpol, -gpol, -ivpol when the policy has rules of several types; a
// kyverno.io PolicyException becomes a policies.kyverno.io PolicyException
// naming the outputs that hold its rules (WithPolicies gives the converted
// policies); a CleanupPolicy or ClusterCleanupPolicy becomes a
// DeletingPolicy. Every rule has an outcome: converted, or the Problems
// that kept it out of the outputs (the construct and its field path). A
// rule is never half converted, and every expression of an output is
// compiled on its policy type's environment before it is kept: CEL that
// does not compile is a problem of the rules it came from.
// Conversion.WriteYAML renders the outputs with YAML comments saying where
// each part comes from.
//
// # Translation
//
// The CEL is the one a person would write where that is exact, and longer
// where Kyverno's semantics need it:
//
//   - match and exclude: kinds and operations into matchConstraints (a bare
//     kind matches every version of its group), selectors every rule shares
//     too; names, namespaces, annotations, other selectors and subjects
//     into conditions (Kyverno's wildcards as startsWith, endsWith,
//     contains or an anchored regular expression);
//   - preconditions and the conditions that make Kyverno skip a rule (a
//     condition anchor, a foreach where no element applies) into
//     matchConditions, so that the output is skipped where the rule was;
//     with several rules, their conditions guard each rule's part and the
//     matchConditions hold when one of them applies;
//   - context entries into variables: configMap and apiCall paths into
//     resource.Get and resource.List, service calls into http.Get and
//     http.Post, globalReference into globalContext.Get, imageRegistry
//     into image.GetMetadata (configData read as config, manifestList as
//     imageIndex); JMESPath into CEL (projections as map and filter, null
//     where JMESPath gives null: a plain path stays strict, since Kyverno
//     reports its missing fields as errors), Kyverno's functions into the
//     CEL libraries (merge into transform.listObjToMap, time_to_cron,
//     time_add and time_since into the time library and timestamp
//     arithmetic, regex_replace_all into regex.replace, to_string of a
//     list or map into json.marshal, divide of quantities into the ratio of
//     quantity values);
//   - Kyverno's images variable into a variable that builds the same map
//     from the Pod spec at its path in the rule's kinds (each image parsed
//     as Kyverno parses it: docker.io the default registry, latest the
//     default tag);
//   - patterns into the CEL of Kyverno's matcher (anchors, operators,
//     quantities, durations, lists), deny conditions into their negation,
//     anyPattern into a disjunction, foreach into all and exists,
//     messages with variables into messageExpression;
//   - validationFailureAction and emitWarning into validationActions,
//     background, admission, failurePolicy and the webhook timeout into
//     their fields; the Pod controller rules Kyverno would generate either
//     stay with the output's own generation (spec.autogen), or are written
//     out when the output's generation could not reproduce them;
//   - patchStrategicMerge into an ApplyConfiguration (Object{...}: keyed
//     lists merge by their keys, a condition anchor on a list element
//     selects the elements patched, add-if-not-present keeps the
//     resource's value, global anchors guard the patch, maps that an apply
//     replaces are patched key by key), patchesJson6902 into a JSONPatch
//     list (adds create missing parents, removes of missing paths do
//     nothing, as Kyverno's patches do), mutate foreach into one patch of
//     the selected elements (a strategic merge patch's element lifted into
//     the innermost list literal that holds it; JSON patches of nested
//     foreach in each foreach's order; the foreach patches of a rule with a
//     context in one list, since Kyverno computes the context once);
//   - mutate targets into targetMatchConstraints (resource.Get of a named
//     target, resource.List and a targetMatchCondition on the name
//     otherwise); the rule's context reads the trigger as request.object;
//   - generate data into the object generator.Apply creates, clone and
//     cloneList into resource.Get and resource.List;
//   - verifyImages into matchImageReferences, attestors and attestations,
//     and validations counting the attestors that verify each image.
//
// Constructs without a CEL form are problems: the roles Kyverno computes
// for a user (upstream's CEL request has none either), JMESPath functions
// without an exact CEL equivalent (arithmetic on durations, time layouts
// other than RFC 3339, named groups in a replacement), rule-level
// PolicyExceptions of a policy whose other rules share the output,
// several mutate targets, validate.manifests, and of validate.podSecurity
// a pinned version (it runs every revision of a check up to it) and
// exclusions by restrictedField and values (they exempt single field
// errors). validate.podSecurity at the latest version becomes the Pod
// Security Standards' checks in CEL, less its exclusions as Kyverno
// applies them (see podsecurity.go).
//
// # Verification
//
// Verify evaluates each source policy and its outputs through the engine,
// with the same hosts (WithEngineOptions) and requests (WithRequests), on
// every resource, and reports per policy the resources whose results
// differ: the validate result (the first failure or error of the rules,
// else pass, else skip; whether a failure blocks), the mutated resource,
// the generated resources. A skip and no result are the same; errors are
// equal whatever their messages. An output of a kind the engine does not
// evaluate, or of a type whose rules were not all converted, is reported
// as not verified. CEL PolicyExceptions among the conversions apply to the
// outputs, their sources to the source policies. A MutatingPolicy with
// targets is verified on its targets only (admission off in the verified
// copy), as upstream's admission webhook runs it. A test's values stand for
// the context entries the outputs turned into variables and cel.bind
// names (in the expressions of the rule they belong to); a value that is
// the JSON text of a list or map is that list or map, as Kyverno's
// operators read it. The values of the request (request.namespace,
// request.object.x, request.operation, serviceAccountName) are applied to
// the request the outputs see. A resource on which one side needed a host
// the verification was not given (an error wrapping
// engine.ErrNotConfigured) is listed in NotCompared, not compared.
//
// Deliberate differences, which verification shows where they matter: a
// rule without operations matches CREATE and UPDATE (and DELETE when its
// conditions ask for DELETE requests), not every operation; in background
// scans the CEL request's operation is CREATE, not empty; where Kyverno
// reports a pattern mismatch as an error (a negation, condition or
// existence anchor whose key the resource lacks) the output fails; Kyverno
// rewrites request.object.metadata.namespace in its Pod controller rules,
// the output keeps the controller's namespace; new elements of a keyed list
// go last with an apply, first with Kyverno's strategic merge.
package migrate
