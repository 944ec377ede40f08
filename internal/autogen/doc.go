// Package autogen derives Pod-controller rules from rules written for Pods,
// the way Kyverno's ClusterPolicy/Policy auto-generation does.
//
// A rule that matches only Pods is turned into up to two extra rules:
//
//   - "autogen-<name>" for DaemonSet, Deployment, Job, ReplicaSet,
//     ReplicationController and StatefulSet (or the controllers named in the
//     pod-policies.kyverno.io/autogen-controllers annotation), whose patterns
//     and patches are moved under spec.template;
//   - "autogen-cronjob-<name>" for CronJob, moved under
//     spec.jobTemplate.spec.template.
//
// In both, variable references to request.object.spec, request.oldObject.spec,
// request.object.metadata and request.oldObject.metadata are rewritten to the
// Pod template (object.spec... and friends as well for CEL rules), and the
// match/exclude kinds are replaced by the fully qualified controller kinds
// ("apps/v1/Deployment", "batch/v1/CronJob", ...). Rule names are cut to 63
// bytes.
//
// Auto-generation is decided for the whole policy, as upstream does: it is off
// when any rule is a generate rule, uses a JSON 6902 patch (also inside a
// mutate foreach), or names resources (name, names), selects them by label
// selector or annotations, or mixes Pod with other kinds in one resource
// block; it is also off when no rule mentions Pod or a Pod controller by its
// bare kind name, and when the annotation is "none". Per rule, a rule is only
// expanded when its match kinds contain Pod and its exclude kinds, if any,
// contain Pod too.
//
// Rules is a pure function of its input: call it once when a policy is
// compiled, not per request. It never modifies the policy; generated rules
// share no memory with it. It is safe for concurrent use.
package autogen
