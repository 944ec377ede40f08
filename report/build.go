package report

import (
	"fmt"
	"github.com/gavelpolicy/gavel/internal/policykey"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// mergedReportName is the name of the cluster report Build makes of every
// ClusterPolicy result, as upstream's CLI names it.
const mergedReportName = "merged"

// inputError reports a malformed entry of Build's input.
type inputError struct {
	// Path locates the entry, for example "results[3].policy".
	Path string
	// Msg says what is wrong.
	Msg string
}

func (e *inputError) Error() string { return "report: " + e.Path + ": " + e.Msg }

// Build groups the results of a run into reports as upstream's
// `kyverno apply --policy-report` does:
//
//   - every rule result is reported, whatever the rule type (validate,
//     mutate, generate, verifyImages) and failure action (see convert);
//     policy results without rules are ignored;
//   - the results of all ClusterPolicies go into one cluster report named
//     "merged" (a ClusterPolicyReport, or a ClusterReport for OpenReports),
//     whatever the scope of the resources;
//   - the results of each namespaced Policy go into a report named after
//     the policy in the policy's namespace.
//
// The order is deterministic: the merged report lists policies in order of
// first appearance, and each policy's results in input order; namespaced
// reports follow the merged one, sorted by namespace and name. Every
// entry has the same timestamp, one reading of opts.Clock.
//
// The result holds *api.ClusterPolicyReport and *api.PolicyReport values
// (Format WGPolicy) or *api.OpenClusterReport and *api.OpenReport values
// (Format OpenReports); it is empty when there is no rule result.
func build(results []engine.PolicyResult, opts Options) ([]any, error) {
	ts := opts.now()
	source := opts.source()

	type group struct {
		name, namespace string
		results         []api.PolicyReportResult
	}
	var clusterOrder []string
	byPolicy := map[string]*group{}
	for i := range results {
		pr := &results[i]
		if len(pr.Rules) == 0 {
			continue
		}
		p := pr.Policy
		if p == nil {
			return nil, &inputError{Path: fmt.Sprintf("results[%d].policy", i), Msg: "no compiled policy"}
		}
		key := p.Key()
		g := byPolicy[key]
		if g == nil {
			g = &group{name: p.Source().GetName(), namespace: policykey.Namespace(p.Source())}
			byPolicy[key] = g
			if g.namespace == "" {
				clusterOrder = append(clusterOrder, key)
			}
		}
		ref := resourceRef(pr.Resource)
		for j := range pr.Rules {
			g.results = append(g.results, convert(pr, &pr.Rules[j], source, ts, opts.AuditWarn, ref))
		}
	}

	var out []any
	if len(clusterOrder) > 0 {
		n := 0
		for _, p := range clusterOrder {
			n += len(byPolicy[p].results)
		}
		merged := make([]api.PolicyReportResult, 0, n)
		for _, p := range clusterOrder {
			merged = append(merged, byPolicy[p].results...)
		}
		out = append(out, newReport(opts.Format, true, mergedReportName, "", nil, merged))
	}
	var namespaced []*group
	for _, g := range byPolicy {
		if g.namespace != "" {
			namespaced = append(namespaced, g)
		}
	}
	sort.Slice(namespaced, func(i, j int) bool {
		if namespaced[i].namespace != namespaced[j].namespace {
			return namespaced[i].namespace < namespaced[j].namespace
		}
		return namespaced[i].name < namespaced[j].name
	})
	for _, g := range namespaced {
		out = append(out, newReport(opts.Format, false, g.name, g.namespace, nil, g.results))
	}
	return out, nil
}

// newReport makes a report of the format and scope with the results (which
// it keeps) and their summary.
func newReport(f Format, cluster bool, name, namespace string, labels map[string]string, results []api.PolicyReportResult) any {
	meta := metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
	summary := summarize(results)
	switch {
	case f == OpenReports && cluster:
		return &api.OpenClusterReport{
			TypeMeta:   metav1.TypeMeta{APIVersion: api.OpenReportsGroupVersion, Kind: api.KindOpenClusterReport},
			ObjectMeta: meta, Summary: summary, Results: results,
		}
	case f == OpenReports:
		return &api.OpenReport{
			TypeMeta:   metav1.TypeMeta{APIVersion: api.OpenReportsGroupVersion, Kind: api.KindOpenReport},
			ObjectMeta: meta, Summary: summary, Results: results,
		}
	case cluster:
		return &api.ClusterPolicyReport{
			TypeMeta:   metav1.TypeMeta{APIVersion: api.ReportGroupVersion, Kind: api.KindClusterPolicyReport},
			ObjectMeta: meta, Summary: summary, Results: results,
		}
	default:
		return &api.PolicyReport{
			TypeMeta:   metav1.TypeMeta{APIVersion: api.ReportGroupVersion, Kind: api.KindPolicyReport},
			ObjectMeta: meta, Summary: summary, Results: results,
		}
	}
}
