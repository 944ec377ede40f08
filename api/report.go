package api

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Report API group and kinds.
const (
	ReportGroupVersion      = "wgpolicyk8s.io/v1alpha2"
	KindPolicyReport        = "PolicyReport"
	KindClusterPolicyReport = "ClusterPolicyReport"
	OpenReportsGroupVersion = "openreports.io/v1alpha1"
	KindOpenReport          = "Report"
	KindOpenClusterReport   = "ClusterReport"
)

// PolicyResult is the result of one rule for one resource in a report.
type PolicyResult string

// Report results.
const (
	ResultPass  PolicyResult = "pass"
	ResultFail  PolicyResult = "fail"
	ResultWarn  PolicyResult = "warn"
	ResultError PolicyResult = "error"
	ResultSkip  PolicyResult = "skip"
)

// PolicyResultSeverity is the severity of a result.
type PolicyResultSeverity string

// PolicyReport is a namespaced report (wgpolicyk8s.io/v1alpha2).
type PolicyReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Scope             *ObjectReference      `json:"scope,omitempty"`
	ScopeSelector     *metav1.LabelSelector `json:"scopeSelector,omitempty"`
	Summary           PolicyReportSummary   `json:"summary,omitempty"`
	Results           []PolicyReportResult  `json:"results,omitempty"`
}

// ClusterPolicyReport is the cluster-scoped report (wgpolicyk8s.io/v1alpha2).
type ClusterPolicyReport PolicyReport

// OpenReport is the namespaced report of the OpenReports API
// (openreports.io/v1alpha1, kind Report). It carries the same results as a
// PolicyReport plus a report-level source, which upstream always prints
// (no omitempty).
type OpenReport struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Source            string                `json:"source"`
	Scope             *ObjectReference      `json:"scope,omitempty"`
	ScopeSelector     *metav1.LabelSelector `json:"scopeSelector,omitempty"`
	Summary           PolicyReportSummary   `json:"summary,omitempty"`
	Results           []PolicyReportResult  `json:"results,omitempty"`
}

// OpenClusterReport is the cluster-scoped report of the OpenReports API
// (openreports.io/v1alpha1, kind ClusterReport).
type OpenClusterReport OpenReport

// PolicyReportSummary counts results.
type PolicyReportSummary struct {
	Pass  int `json:"pass"`
	Fail  int `json:"fail"`
	Warn  int `json:"warn"`
	Error int `json:"error"`
	Skip  int `json:"skip"`
}

// PolicyReportResult is one entry of a report.
type PolicyReportResult struct {
	Source           string                `json:"source"`
	Policy           string                `json:"policy"`
	Rule             string                `json:"rule,omitempty"`
	Category         string                `json:"category,omitempty"`
	Severity         PolicyResultSeverity  `json:"severity,omitempty"`
	Timestamp        metav1.Timestamp      `json:"timestamp,omitempty"`
	Result           PolicyResult          `json:"result,omitempty"`
	Scored           bool                  `json:"scored,omitempty"`
	Resources        []ObjectReference     `json:"resources,omitempty"`
	ResourceSelector *metav1.LabelSelector `json:"resourceSelector,omitempty"`
	Message          string                `json:"message,omitempty"`
	Properties       map[string]string     `json:"properties,omitempty"`
}

// ObjectReference refers to a Kubernetes object (core/v1 ObjectReference).
type ObjectReference struct {
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}
