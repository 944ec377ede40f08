// Package report is the implementation of the public report package
// (github.com/gavelpolicy/gavel/report) and the streaming writer of
// `gavel apply --policy-report`. It turns engine results into policy
// reports: the wgpolicyk8s.io/v1alpha2 PolicyReport and
// ClusterPolicyReport, or their OpenReports (openreports.io/v1alpha1)
// Report and ClusterReport twins.
//
//   - Result converts one rule result into one report entry, as upstream's
//     CLI does (policy key, rule, result with the policies.kyverno.io/scored
//     and --audit-warn conversions to warn, message, category and severity
//     from the policy annotations, the resource reference, and properties:
//     the rule's reportProperties, process, exceptions and the failed Pod
//     Security controls).
//   - Build groups the results of a whole run the way `kyverno apply
//     --policy-report` does: every ClusterPolicy result in one cluster
//     report named "merged", and one namespaced report per Policy.
//   - Store keeps the current results of each resource, from admission and
//     from background scans, and renders the in-cluster reports.
//
// WriteYAML and WriteJSON print reports as the upstream CLI does (WriteYAML
// gives exactly sigs.k8s.io/yaml's bytes, about a hundred times faster on
// large reports), WriteTable prints the summary table of `kubectl get
// policyreport`. WriteYAMLResults prints what Build and WriteYAML would,
// without building the reports; Stream does the same for results that
// arrive one resource at a time, rendering each resource's entries where it
// was evaluated and keeping them in a bounded memory budget (then in a
// Spill, such as a temporary file the host provides): the CLI's memory
// bound. Only gavel's own packages use those two.
//
// Timestamps come from Options.Clock; the package never reads the system
// clock. Inputs are never modified, and every value returned is new.
package report
