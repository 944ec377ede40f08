package report

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/gavelpolicy/gavel/api"
)

// WriteTable prints the summary of the reports as `kubectl get policyreport`
// does: one row per report with columns NAME, PASS, FAIL, WARN, ERROR and
// SKIP, preceded by NAMESPACE when a report is namespaced (empty for the
// cluster reports). The reports are printed in the given order. It accepts
// the values Build and Store.Reports return (pointers or values); anything
// else is an error and nothing is written.
func writeTable(w io.Writer, reports []any) error {
	type row struct {
		namespace, name string
		s               api.PolicyReportSummary
	}
	rows := make([]row, 0, len(reports))
	withNamespace := false
	for i, r := range reports {
		var x row
		switch v := r.(type) {
		case *api.PolicyReport:
			if v == nil {
				return nilReport(i)
			}
			x = row{v.Namespace, v.Name, v.Summary}
		case api.PolicyReport:
			x = row{v.Namespace, v.Name, v.Summary}
		case *api.ClusterPolicyReport:
			if v == nil {
				return nilReport(i)
			}
			x = row{v.Namespace, v.Name, v.Summary}
		case api.ClusterPolicyReport:
			x = row{v.Namespace, v.Name, v.Summary}
		case *api.OpenReport:
			if v == nil {
				return nilReport(i)
			}
			x = row{v.Namespace, v.Name, v.Summary}
		case api.OpenReport:
			x = row{v.Namespace, v.Name, v.Summary}
		case *api.OpenClusterReport:
			if v == nil {
				return nilReport(i)
			}
			x = row{v.Namespace, v.Name, v.Summary}
		case api.OpenClusterReport:
			x = row{v.Namespace, v.Name, v.Summary}
		default:
			return &inputError{Path: fmt.Sprintf("reports[%d]", i), Msg: fmt.Sprintf("unsupported report type %T", r)}
		}
		if x.namespace != "" {
			withNamespace = true
		}
		rows = append(rows, x)
	}
	tw := tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
	if withNamespace {
		fmt.Fprint(tw, "NAMESPACE\t")
	}
	fmt.Fprintln(tw, "NAME\tPASS\tFAIL\tWARN\tERROR\tSKIP")
	for _, x := range rows {
		if withNamespace {
			fmt.Fprintf(tw, "%s\t", x.namespace)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", x.name, x.s.Pass, x.s.Fail, x.s.Warn, x.s.Error, x.s.Skip)
	}
	return tw.Flush()
}

func nilReport(i int) error {
	return &inputError{Path: fmt.Sprintf("reports[%d]", i), Msg: "nil report"}
}

// Summary adds up the summaries of the reports (the values Build and
// Store.Reports return); it ignores anything else.
func summaryOf(reports []any) api.PolicyReportSummary {
	var total api.PolicyReportSummary
	add := func(s api.PolicyReportSummary) {
		total.Pass += s.Pass
		total.Fail += s.Fail
		total.Warn += s.Warn
		total.Error += s.Error
		total.Skip += s.Skip
	}
	for _, r := range reports {
		switch v := r.(type) {
		case *api.PolicyReport:
			if v != nil {
				add(v.Summary)
			}
		case *api.ClusterPolicyReport:
			if v != nil {
				add(v.Summary)
			}
		case *api.OpenReport:
			if v != nil {
				add(v.Summary)
			}
		case *api.OpenClusterReport:
			if v != nil {
				add(v.Summary)
			}
		case api.PolicyReport:
			add(v.Summary)
		case api.ClusterPolicyReport:
			add(v.Summary)
		case api.OpenReport:
			add(v.Summary)
		case api.OpenClusterReport:
			add(v.Summary)
		}
	}
	return total
}
