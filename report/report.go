package report

import (
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// Report is one policy report. A report with a namespace is a
// PolicyReport (Format WGPolicy) or a Report (OpenReports); one without is
// a ClusterPolicyReport or a ClusterReport.
type Report struct {
	Format    Format
	Name      string
	Namespace string
	Labels    map[string]string
	// OwnerReferences and Scope are those of a Store's report: the
	// resource it is about (nil in the reports of Build and Stream).
	OwnerReferences []metav1.OwnerReference
	Scope           *api.ObjectReference
	Summary         api.PolicyReportSummary
	Results         []api.PolicyReportResult
}

// Object returns the report as the API object of its format and scope,
// ready to be marshalled or written to a cluster: an *api.PolicyReport,
// *api.ClusterPolicyReport, *api.OpenReport or *api.OpenClusterReport.
// The object shares the report's labels, owner references, scope and
// results.
func (r *Report) Object() any {
	meta := metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace, Labels: r.Labels, OwnerReferences: r.OwnerReferences}
	switch {
	case r.Format == OpenReports && r.Namespace == "":
		return &api.OpenClusterReport{TypeMeta: metav1.TypeMeta{APIVersion: api.OpenReportsGroupVersion, Kind: api.KindOpenClusterReport},
			ObjectMeta: meta, Scope: r.Scope, Summary: r.Summary, Results: r.Results}
	case r.Format == OpenReports:
		return &api.OpenReport{TypeMeta: metav1.TypeMeta{APIVersion: api.OpenReportsGroupVersion, Kind: api.KindOpenReport},
			ObjectMeta: meta, Scope: r.Scope, Summary: r.Summary, Results: r.Results}
	case r.Namespace == "":
		return &api.ClusterPolicyReport{TypeMeta: metav1.TypeMeta{APIVersion: api.ReportGroupVersion, Kind: api.KindClusterPolicyReport},
			ObjectMeta: meta, Scope: r.Scope, Summary: r.Summary, Results: r.Results}
	default:
		return &api.PolicyReport{TypeMeta: metav1.TypeMeta{APIVersion: api.ReportGroupVersion, Kind: api.KindPolicyReport},
			ObjectMeta: meta, Scope: r.Scope, Summary: r.Summary, Results: r.Results}
	}
}

// fromObjects converts report objects (the values of newReport) to
// Reports.
func fromObjects(objs []any) []Report {
	out := make([]Report, 0, len(objs))
	for _, o := range objs {
		var r Report
		switch v := o.(type) {
		case *api.PolicyReport:
			r = Report{Format: WGPolicy, Name: v.Name, Namespace: v.Namespace, Labels: v.Labels, OwnerReferences: v.OwnerReferences, Scope: v.Scope, Summary: v.Summary, Results: v.Results}
		case *api.ClusterPolicyReport:
			r = Report{Format: WGPolicy, Name: v.Name, Labels: v.Labels, OwnerReferences: v.OwnerReferences, Scope: v.Scope, Summary: v.Summary, Results: v.Results}
		case *api.OpenReport:
			r = Report{Format: OpenReports, Name: v.Name, Namespace: v.Namespace, Labels: v.Labels, OwnerReferences: v.OwnerReferences, Scope: v.Scope, Summary: v.Summary, Results: v.Results}
		case *api.OpenClusterReport:
			r = Report{Format: OpenReports, Name: v.Name, Labels: v.Labels, OwnerReferences: v.OwnerReferences, Scope: v.Scope, Summary: v.Summary, Results: v.Results}
		default:
			continue
		}
		out = append(out, r)
	}
	return out
}

func objects(reports []Report) []any {
	out := make([]any, len(reports))
	for i := range reports {
		out[i] = reports[i].Object()
	}
	return out
}

// Build groups the results of a run into reports as upstream's
// `kyverno apply --policy-report` does:
//
//   - every rule result is reported, whatever the rule type (validate,
//     mutate, generate, verifyImages) and failure action; policy results
//     without rules are ignored;
//   - the results of all ClusterPolicies go into one cluster report named
//     "merged", whatever the scope of the resources;
//   - the results of each namespaced Policy go into a report named after
//     the policy in the policy's namespace.
//
// The order is deterministic: the merged report first, listing policies in
// order of first appearance and each policy's results in input order, then
// the namespaced reports sorted by namespace and name. Every entry has the
// same timestamp, one reading of the clock. It fails for a result without
// a policy.
func Build(results []engine.PolicyResult, opts Options) ([]Report, error) {
	objs, err := build(results, opts)
	if err != nil {
		return nil, err
	}
	return fromObjects(objs), nil
}

// WriteYAML writes the reports as YAML documents separated by "---" lines,
// as the upstream CLI prints them: byte for byte what sigs.k8s.io/yaml
// gives for each report's Object, written far faster on large reports.
func WriteYAML(w io.Writer, reports []Report) error {
	return writeYAML(w, objects(reports))
}

// WriteJSON writes the reports as JSON documents, one per line, separated
// by "---" lines as the upstream CLI does with -o json.
func WriteJSON(w io.Writer, reports []Report) error {
	return writeJSON(w, objects(reports))
}

// WriteTable prints the summary of the reports as `kubectl get
// policyreport` does: one row per report with columns NAME, PASS, FAIL,
// WARN, ERROR and SKIP, preceded by NAMESPACE when a report is namespaced.
func WriteTable(w io.Writer, reports []Report) error {
	return writeTable(w, objects(reports))
}
