// Package report turns engine results into policy reports: the
// wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport, or their
// OpenReports (openreports.io/v1alpha1) Report and ClusterReport twins,
// each a Report value.
//
// There are three ways to make reports, by kind of host:
//
//   - a batch host (CI, gitops, a one-off audit) evaluates each resource
//     with engine.PolicySet.Scan and gives all the results to Build, which
//     groups them as `kyverno apply --policy-report` does: every
//     ClusterPolicy result in one cluster report named "merged", one
//     namespaced report per Policy. WriteYAML and WriteJSON print them as
//     the upstream CLI does (WriteYAML gives exactly sigs.k8s.io/yaml's
//     bytes, about a hundred times faster on large reports), WriteTable as
//     `kubectl get policyreport`.
//   - a batch host with more results than it wants to hold (gavel apply)
//     gives them to a Stream one resource at a time: each resource's
//     entries are rendered where it was evaluated (a Renderer per
//     goroutine) and kept in a memory budget, then in a Spill such as a
//     temporary file; the Stream writes the bytes Build and WriteYAML (or
//     WriteJSON) would.
//   - a controller keeps a Store: it records the results of admission
//     requests and background scans per resource and renders the
//     in-cluster reports as upstream's reports controller lays them out
//     (one per resource, named after its UID, owned by it and naming it
//     in its scope, with the entries of every policy), which only hold
//     what is true now; it tells which reports changed since they were
//     last written.
//
// Each entry is made the way upstream's CLI makes it: the policy key, the
// rule, its result (fail becomes warn for a policy annotated
// policies.kyverno.io/scored: "false", and for an Audit policy with
// Options.AuditWarn; see EntryResult), its message, category and severity
// from the policies.kyverno.io/category and policies.kyverno.io/severity
// annotations, the resource reference (in the reports of Build and
// Stream; a Store's report names its resource in its scope), and
// properties: the rule's reportProperties, process ("background scan" or
// "admission review"), exceptions and the failed Pod Security controls.
//
// Timestamps come from Options.Clock (time.Now when nil). Inputs are never
// modified, and every value returned is new.
package report
