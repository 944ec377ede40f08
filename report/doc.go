// Package report turns engine results into policy reports: the
// wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport, or their
// OpenReports (openreports.io/v1alpha1) Report and ClusterReport twins,
// each a Report value.
//
// There are two ways to make reports, one per kind of host:
//
//   - a batch host (CI, gitops, a one-off audit) evaluates each resource
//     with engine.PolicySet.Scan and gives all the results to Build, which
//     groups them as `kyverno apply --policy-report` does: every
//     ClusterPolicy result in one cluster report named "merged", one
//     namespaced report per Policy. WriteYAML and WriteJSON print them as
//     the upstream CLI does, WriteTable as `kubectl get policyreport`.
//   - a controller keeps a Store: it records the results of admission
//     requests and background scans per resource and renders the
//     in-cluster reports (one per policy and namespace, named
//     cpol-<policy> or pol-<policy>), which only hold what is true now.
//
// Each entry is made the way upstream's CLI makes it: the policy key, the
// rule, its result (fail becomes warn for a policy annotated
// policies.kyverno.io/scored: "false", and for an Audit policy with
// Options.AuditWarn), its message, category and severity from the
// policies.kyverno.io/category and policies.kyverno.io/severity
// annotations, the resource reference, and properties: the rule's
// reportProperties, process ("background scan" or "admission review"),
// exceptions and the failed Pod Security controls.
//
// Inputs are never modified, and every value returned is new.
package report
