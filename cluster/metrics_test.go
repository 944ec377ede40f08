package cluster

import (
	"strings"
	"testing"
	"time"

	"net/http/httptest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// The metrics carry upstream's names and labels.
func TestMetricsNamesAndLabels(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg); err == nil {
		t.Error("a second set of the same metrics was registered")
	}
	eng, err := engine.New(engine.WithPolicyTiming())
	if err != nil {
		t.Fatal(err)
	}
	po, err := api.DecodePolicy(api.Document{Object: requireLabel("need-team", "team", false).Object})
	if err != nil {
		t.Fatal(err)
	}
	p, err := eng.CompilePolicy(po)
	if err != nil {
		t.Fatal(err)
	}
	set := eng.NewPolicySet(p)
	req := &engine.Request{Operation: api.Create, Object: pod(nil)}
	resp, err := set.Validate(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	m.Results(req, resp, false)
	m.Admission(ValidatingWebhook, "Pod", "default", api.Create, false, 3*time.Millisecond)
	m.policyChange(PolicyChange{Key: "need-team", New: p, Set: set})
	m.setPolicies(set, nil)
	m.reconcile("policies")

	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	out := rec.Body.String()
	for _, tt := range []struct{ metric, want string }{
		{"kyverno_policy_results_total", `kyverno_policy_results_total{dry_run="false",policy_background_mode="true",policy_name="need-team",policy_namespace="-",policy_type="cluster",policy_validation_mode="enforce",resource_kind="Pod",resource_namespace="default",resource_request_operation="create",rule_execution_cause="admission_request",rule_name="check",rule_result="fail",rule_type="validate"} 1`},
		{"kyverno_admission_requests_total", `kyverno_admission_requests_total{request_allowed="false",request_webhook="ValidatingWebhookConfiguration",resource_kind="Pod",resource_namespace="default",resource_request_operation="create"} 1`},
		{"kyverno_policy_changes_total", `kyverno_policy_changes_total{policy_background_mode="true",policy_change_type="create",policy_name="need-team",policy_namespace="-",policy_type="cluster",policy_validation_mode="audit"} 1`},
		{"kyverno_controller_reconcile_total", `kyverno_controller_reconcile_total{controller_name="policies"} 1`},
	} {
		if !strings.Contains(out, tt.want) {
			t.Errorf("%s: the exposition lacks\n%s", tt.metric, tt.want)
		}
	}
	n, err := testutil.GatherAndCount(reg, "kyverno_policy_rule_info_total", "kyverno_policy_execution_duration_seconds", "kyverno_admission_review_duration_seconds")
	// three rules (check and its two autogen rules), one policy's
	// execution, one review
	if err != nil || n != 5 {
		t.Errorf("rule info, execution and review durations: %d series, %v; want 5", n, err)
	}
	var nilMetrics *Metrics
	nilMetrics.Admission(MutatingWebhook, "Pod", "", api.Create, true, time.Millisecond) // records nothing, no panic
}
