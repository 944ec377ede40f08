package report

import (
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	ireport "github.com/gavelpolicy/gavel/internal/report"
)

// Format selects the API of the reports.
type Format int

// Report formats.
const (
	// WGPolicy is wgpolicyk8s.io/v1alpha2 PolicyReport and
	// ClusterPolicyReport.
	WGPolicy Format = iota
	// OpenReports is openreports.io/v1alpha1 Report and ClusterReport,
	// what the upstream CLI prints since it moved to OpenReports.
	OpenReports
)

// Options configures Build and NewStore. The zero value is ready to use.
type Options struct {
	// Clock gives the timestamps of report entries (seconds precision, as
	// upstream). Nil means time.Now, the engine's default clock; an
	// engine built WithClock shares its clock with Clock: eng.Now.
	Clock func() time.Time
	// Source is the source of every entry; "kyverno" when empty.
	Source string
	// AuditWarn reports the fail results of policies whose effective
	// failure action is Audit as warn (the CLI's --audit-warn).
	AuditWarn bool
	// Format selects wgpolicyk8s.io (the default) or openreports.io
	// reports.
	Format Format
}

func (o Options) internal() ireport.Options {
	clock := o.Clock
	if clock == nil {
		clock = time.Now
	}
	return ireport.Options{Clock: clock, Source: o.Source, AuditWarn: o.AuditWarn, Format: ireport.Format(o.Format)}
}

// Report is one policy report. A report with a namespace is a
// PolicyReport (Format WGPolicy) or a Report (OpenReports); one without is
// a ClusterPolicyReport or a ClusterReport.
type Report struct {
	Format    Format
	Name      string
	Namespace string
	Labels    map[string]string
	Summary   api.PolicyReportSummary
	Results   []api.PolicyReportResult
}

// Object returns the report as the API object of its format and scope,
// ready to be marshalled or written to a cluster: an *api.PolicyReport,
// *api.ClusterPolicyReport, *api.OpenReport or *api.OpenClusterReport.
// The object shares the report's labels and results.
func (r *Report) Object() any {
	meta := metav1.ObjectMeta{Name: r.Name, Namespace: r.Namespace, Labels: r.Labels}
	switch {
	case r.Format == OpenReports && r.Namespace == "":
		return &api.OpenClusterReport{TypeMeta: metav1.TypeMeta{APIVersion: api.OpenReportsGroupVersion, Kind: api.KindOpenClusterReport},
			ObjectMeta: meta, Summary: r.Summary, Results: r.Results}
	case r.Format == OpenReports:
		return &api.OpenReport{TypeMeta: metav1.TypeMeta{APIVersion: api.OpenReportsGroupVersion, Kind: api.KindOpenReport},
			ObjectMeta: meta, Summary: r.Summary, Results: r.Results}
	case r.Namespace == "":
		return &api.ClusterPolicyReport{TypeMeta: metav1.TypeMeta{APIVersion: api.ReportGroupVersion, Kind: api.KindClusterPolicyReport},
			ObjectMeta: meta, Summary: r.Summary, Results: r.Results}
	default:
		return &api.PolicyReport{TypeMeta: metav1.TypeMeta{APIVersion: api.ReportGroupVersion, Kind: api.KindPolicyReport},
			ObjectMeta: meta, Summary: r.Summary, Results: r.Results}
	}
}

// fromObjects converts the reports of the implementation.
func fromObjects(objs []any) []Report {
	out := make([]Report, 0, len(objs))
	for _, o := range objs {
		var r Report
		switch v := o.(type) {
		case *api.PolicyReport:
			r = Report{Format: WGPolicy, Name: v.Name, Namespace: v.Namespace, Labels: v.Labels, Summary: v.Summary, Results: v.Results}
		case *api.ClusterPolicyReport:
			r = Report{Format: WGPolicy, Name: v.Name, Labels: v.Labels, Summary: v.Summary, Results: v.Results}
		case *api.OpenReport:
			r = Report{Format: OpenReports, Name: v.Name, Namespace: v.Namespace, Labels: v.Labels, Summary: v.Summary, Results: v.Results}
		case *api.OpenClusterReport:
			r = Report{Format: OpenReports, Name: v.Name, Labels: v.Labels, Summary: v.Summary, Results: v.Results}
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
	objs, err := ireport.Build(results, opts.internal())
	if err != nil {
		return nil, err
	}
	return fromObjects(objs), nil
}

// WriteYAML writes the reports as YAML documents separated by "---" lines,
// as the upstream CLI prints them: byte for byte what sigs.k8s.io/yaml
// gives for each report's Object, written far faster on large reports.
func WriteYAML(w io.Writer, reports []Report) error {
	return ireport.WriteYAML(w, objects(reports))
}

// WriteJSON writes the reports as JSON documents, one per line, separated
// by "---" lines as the upstream CLI does with -o json.
func WriteJSON(w io.Writer, reports []Report) error {
	return ireport.WriteJSON(w, objects(reports))
}

// WriteTable prints the summary of the reports as `kubectl get
// policyreport` does: one row per report with columns NAME, PASS, FAIL,
// WARN, ERROR and SKIP, preceded by NAMESPACE when a report is namespaced.
func WriteTable(w io.Writer, reports []Report) error {
	return ireport.WriteTable(w, objects(reports))
}
