// Package podsecurity evaluates Kyverno's validate.podSecurity rule body and
// the podSecurity exemptions of PolicyExceptions, on top of the Pod Security
// Standards checks of k8s.io/pod-security-admission.
//
// The flow follows the compile-once / evaluate-many shape used across gavel:
//
//	ev, err := podsecurity.NewEvaluator()          // once per process
//	chk, err := ev.Compile(rule.Validation.PodSecurity,
//		podsecurity.WithRuleName(rule.Name))       // once per rule
//	res, err := chk.Evaluate(resource, exceptionExcludes) // per request
//
// An Evaluator and a Check are immutable and safe for concurrent use.
//
// # Semantics
//
// The checks run are those of the library for the rule's level and version,
// selected the way upstream Kyverno selects them: with version "latest" (or
// no version) the newest revision of every check runs; with a pinned version
// "v1.N" every revision whose minimum version is not newer than v1.N runs,
// so a check can report more than once. The baseline level runs only the
// baseline checks; the restricted level runs all of them, including the
// baseline checks that the restricted ones override in Pod Security
// Admission (upstream reports both, for example capabilities_baseline and
// capabilities_restricted). The privileged level runs no check.
//
// Every failed check carries a list of field errors (path, kind of error and
// the offending values), computed the way Kyverno's fork of the library
// reports them. Exemptions work on those lists exactly like upstream: for
// each exclusion the pod is re-evaluated in a reduced form (without
// containers when the exclusion names no images, or with only the containers
// whose image matches otherwise) and every field error of the excluded
// control found there removes one matching field error of the full pod; an
// excluded control that still has field errors left keeps failing. With a
// restrictedField and values, only field errors on that field whose values
// all match the listed values are removed.
//
// Exemptions from PolicyExceptions are applied after those of the rule, and
// only when the rule fails; when they clear every failure the result is
// marked Exempted (upstream reports the rule as skipped).
//
// Pods, the pod templates of Deployments, DaemonSets, StatefulSets,
// ReplicaSets, ReplicationControllers and Jobs, and the pod template of
// CronJobs are evaluated; any other kind is an error wrapping
// ErrUnsupportedKind, as upstream. Field paths in results are paths of the
// evaluated resource (spec.template.spec... for a Deployment).
//
// Messages use upstream's current format:
//
//	Validation rule 'r' failed. It violates PodSecurity "restricted:latest": (Forbidden reason: host namespaces, field error list: [spec.hostIPC is forbidden, forbidden values found: true])
//
// # Differences from upstream Kyverno
//
//   - Level privileged runs no check (upstream's evaluator only filters the
//     baseline level, so it runs every check).
//   - Failed checks keep the library's order; upstream returns them in Go
//     map order once any exemption was applied.
//   - Exemptions match field paths of the pod for every kind. Upstream
//     rewrites the paths of controllers (spec.template.spec...) before it
//     applies PolicyException exemptions, which then never match.
//   - appArmorProfile and hostProbesAndHostLifecycle carry field errors;
//     upstream's library fork leaves their list nil.
//   - The pod metadata of a CronJob is spec.jobTemplate.spec.template.metadata
//     (upstream reads spec.jobTemplate.metadata); metadata paths of a Pod stay
//     metadata... (upstream rewrites them to spec.template.metadata).
//   - Only the fields the checks read are decoded, with their exact JSON
//     names; upstream decodes the whole object with encoding/json.
//   - CheckResult.Images holds container images as written; upstream
//     renders them through its image parser.
//   - An empty level is a compile error.
//   - Version latest is k8s.io/pod-security-admission's latest (1.35+
//     checks): an unmasked procMount fails the restricted level's
//     procMount_restricted check, which overrides the baseline procMount
//     check; upstream's fork predates 1.35, so it reports the baseline
//     check (the same Pods fail either way; the check named differs).
package podsecurity
