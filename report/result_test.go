package report

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

const auditPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
  annotations:
    policies.kyverno.io/category: Best Practices
    policies.kyverno.io/severity: medium
spec:
  validationFailureAction: Audit
  background: true
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "The label team is required."
      pattern:
        metadata:
          labels:
            team: "?*"
`

const unscoredPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: unscored
  annotations:
    policies.kyverno.io/scored: "false"
    policies.kyverno.io/severity: urgent
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          labels:
            team: "?*"
`

const namespacedPolicy = `
apiVersion: kyverno.io/v1
kind: Policy
metadata:
  name: require-team
  namespace: payments
spec:
  validationFailureAction: Enforce
  background: false
  rules:
  - name: check-team
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          labels:
            team: "?*"
`

const pssPolicy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: psa-baseline
spec:
  background: true
  rules:
  - name: baseline
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      podSecurity:
        level: baseline
        version: latest
`

var testPod = map[string]any{
	"apiVersion": "v1",
	"kind":       "Pod",
	"metadata": map[string]any{
		"name":            "web",
		"namespace":       "payments",
		"uid":             "0dd94825-cc6e-435b-982b-fb76ac2fdc2a",
		"resourceVersion": "42",
	},
}

func TestResult(t *testing.T) {
	eng := newEngine(t)
	audit := compilePolicy(t, eng, auditPolicy)
	unscored := compilePolicy(t, eng, unscoredPolicy)
	namespaced := compilePolicy(t, eng, namespacedPolicy)
	pss := compilePolicy(t, eng, pssPolicy)
	ts := metav1.Timestamp{Seconds: fixedClock().Unix()}
	ref := api.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", Namespace: "payments",
		UID: "0dd94825-cc6e-435b-982b-fb76ac2fdc2a", ResourceVersion: "42"}
	bg := map[string]string{propertyProcess: processBackground}

	tests := []struct {
		name   string
		pr     engine.PolicyResult
		rr     engine.RuleResult
		opts   Options
		want   api.PolicyReportResult
		nilRef bool
	}{{
		name: "pass with category and severity",
		pr:   engine.PolicyResult{Policy: audit, Resource: testPod, FailureAction: api.Audit},
		rr:   engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusPass, Message: "validation rule 'check-team' passed."},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "require-team", Rule: "check-team", Category: "Best Practices",
			Severity: "medium", Timestamp: ts, Result: api.ResultPass, Scored: true, Resources: []api.ObjectReference{ref},
			Message: "validation rule 'check-team' passed.", Properties: bg},
	}, {
		name: "fail of an Audit policy",
		pr:   engine.PolicyResult{Policy: audit, Resource: testPod, FailureAction: api.Audit},
		rr:   engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusFail, Message: "validation error"},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "require-team", Rule: "check-team", Category: "Best Practices",
			Severity: "medium", Timestamp: ts, Result: api.ResultFail, Scored: true, Resources: []api.ObjectReference{ref},
			Message: "validation error", Properties: bg},
	}, {
		name: "audit-warn turns an Audit fail into warn",
		pr:   engine.PolicyResult{Policy: audit, Resource: testPod, FailureAction: api.Audit},
		rr:   engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusFail, Message: "validation error"},
		opts: Options{AuditWarn: true, Source: "gavel"},
		want: api.PolicyReportResult{Source: "gavel", Policy: "require-team", Rule: "check-team", Category: "Best Practices",
			Severity: "medium", Timestamp: ts, Result: api.ResultWarn, Scored: true, Resources: []api.ObjectReference{ref},
			Message: "validation error", Properties: bg},
	}, {
		name: "audit-warn keeps an Enforce fail (override)",
		pr:   engine.PolicyResult{Policy: audit, Resource: testPod, FailureAction: api.Enforce},
		rr:   engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusFail, Message: "validation error"},
		opts: Options{AuditWarn: true},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "require-team", Rule: "check-team", Category: "Best Practices",
			Severity: "medium", Timestamp: ts, Result: api.ResultFail, Scored: true, Resources: []api.ObjectReference{ref},
			Message: "validation error", Properties: bg},
	}, {
		name: "scored false turns fail into warn, unknown severity dropped",
		pr:   engine.PolicyResult{Policy: unscored, Resource: testPod, FailureAction: api.Enforce},
		rr:   engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusFail, Message: "m"},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "unscored", Rule: "check-team", Timestamp: ts,
			Result: api.ResultWarn, Scored: false, Resources: []api.ObjectReference{ref}, Message: "m",
			Properties: map[string]string{propertyProcess: processAdmission}},
	}, {
		name: "scored false keeps pass",
		pr:   engine.PolicyResult{Policy: unscored, Resource: testPod, FailureAction: api.Enforce},
		rr:   engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusPass, Message: "m"},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "unscored", Rule: "check-team", Timestamp: ts,
			Result: api.ResultPass, Resources: []api.ObjectReference{ref}, Message: "m",
			Properties: map[string]string{propertyProcess: processAdmission}},
	}, {
		name: "namespaced policy key, skip by exceptions, reportProperties",
		pr:   engine.PolicyResult{Policy: namespaced, Resource: testPod, FailureAction: api.Enforce},
		rr: engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusSkip,
			Message: "rule skipped due to policy exceptions payments/a, payments/b", Exceptions: []string{"payments/a", "payments/b"},
			Properties: map[string]string{"owner": "platform"}},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "payments/require-team", Rule: "check-team", Timestamp: ts,
			Result: api.ResultSkip, Scored: true, Resources: []api.ObjectReference{ref},
			Message:    "rule skipped due to policy exceptions payments/a, payments/b",
			Properties: map[string]string{propertyProcess: processAdmission, propertyExceptions: "a,b", "owner": "platform"}},
	}, {
		name: "error",
		pr:   engine.PolicyResult{Policy: audit, Resource: testPod, FailureAction: api.Audit},
		rr:   engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusError, Message: "variable substitution failed"},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "require-team", Rule: "check-team", Category: "Best Practices",
			Severity: "medium", Timestamp: ts, Result: api.ResultError, Scored: true, Resources: []api.ObjectReference{ref},
			Message: "variable substitution failed", Properties: bg},
	}, {
		name: "failed pod security controls",
		pr:   engine.PolicyResult{Policy: pss, Resource: testPod, FailureAction: api.Audit},
		rr: engine.RuleResult{Name: "baseline", Type: engine.Validation, Status: engine.StatusFail, Message: "m",
			PodSecurityChecks: []engine.PodSecurityCheck{{ID: "privileged"}, {ID: "hostNamespaces", Name: "Host Namespaces", Images: []string{"nginx:1.25"}}}},
		want: api.PolicyReportResult{Source: "kyverno", Policy: "psa-baseline", Rule: "baseline", Timestamp: ts,
			Result: api.ResultFail, Scored: true, Resources: []api.ObjectReference{ref}, Message: "m",
			Properties: map[string]string{
				propertyProcess:  processBackground,
				propertyStandard: "baseline", propertyVersion: "latest",
				propertyControls:     "privileged,hostNamespaces",
				propertyControlsJSON: `[{"ID":"privileged","Name":"Privileged Containers","Images":null},{"ID":"hostNamespaces","Name":"Host Namespaces","Images":["nginx:1.25"]}]`,
			}},
	}, {
		name:   "no resource",
		pr:     engine.PolicyResult{Policy: audit, FailureAction: api.Audit},
		rr:     engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusPass},
		nilRef: true,
		want: api.PolicyReportResult{Source: "kyverno", Policy: "require-team", Rule: "check-team", Category: "Best Practices",
			Severity: "medium", Timestamp: ts, Result: api.ResultPass, Scored: true, Resources: []api.ObjectReference{{}},
			Properties: bg},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Clock = fixedClock
			got := result(tt.pr, tt.rr, tt.opts)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Result:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestResultDoesNotModifyInput(t *testing.T) {
	eng := newEngine(t)
	p := compilePolicy(t, eng, auditPolicy)
	props := map[string]string{"owner": "platform"}
	rr := engine.RuleResult{Name: "check-team", Type: engine.Validation, Status: engine.StatusSkip,
		Exceptions: []string{"ns/x"}, Properties: props}
	got := result(engine.PolicyResult{Policy: p, Resource: testPod}, rr, Options{Clock: fixedClock})
	if len(props) != 1 || props["owner"] != "platform" {
		t.Errorf("reportProperties modified: %v", props)
	}
	got.Properties["owner"] = "changed"
	if props["owner"] != "platform" {
		t.Error("result shares the rule's properties map")
	}
}

// TestResultWithoutClockOrPolicy: without a clock the entry has the
// current time; without a policy, no policy key.
func TestResultWithoutClockOrPolicy(t *testing.T) {
	before := time.Now().Unix()
	got := result(engine.PolicyResult{}, engine.RuleResult{Name: "r", Status: "odd"}, Options{})
	if ts := got.Timestamp.Seconds; ts < before || ts > time.Now().Unix() || got.Result != "" || got.Policy != "" || got.Source != defaultSource {
		t.Errorf("got %+v", got)
	}
}

func TestResultNonStringMetadata(t *testing.T) {
	obj := map[string]any{"kind": 3, "metadata": map[string]any{"name": []any{"x"}, "uid": nil}}
	got := result(engine.PolicyResult{Resource: obj}, engine.RuleResult{}, Options{})
	if got.Resources[0] != (api.ObjectReference{}) {
		t.Errorf("got %+v", got.Resources[0])
	}
}

// TestControlsJSON compares the direct writer with encoding/json.
func TestControlsJSON(t *testing.T) {
	cases := [][]control{
		nil,
		{},
		{{ID: "privileged", Name: "Privileged Containers", Images: nil}},
		{{ID: "a", Name: "b", Images: []string{}}},
		{{ID: "capabilities_restricted", Name: "Capabilities", Images: []string{"nginx:1.2", "ghcr.io/x/y@sha256:abc"}}, {ID: "x", Name: "y", Images: []string{"z"}}},
		{{ID: "a", Name: "<b>&", Images: []string{"c"}}},
		{{ID: "a", Name: "b", Images: []string{"quote\"", "back\\slash", "tab\t", "ü", "\x7f", "\xff"}}},
	}
	for _, c := range cases {
		want, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := controlsJSON(c)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("controlsJSON(%+v) = %s, want %s", c, got, want)
		}
	}
}
