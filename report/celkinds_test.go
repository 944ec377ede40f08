package report

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

const celKindsPolicies = `
apiVersion: policies.kyverno.io/v1
kind: NamespacedValidatingPolicy
metadata:
  name: replicas
  namespace: shop
  annotations:
    policies.kyverno.io/category: Best Practices
    policies.kyverno.io/severity: high
spec:
  validationActions: [Deny]
  evaluation:
    background: {enabled: false}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 2"
    message: at most two replicas
  auditAnnotations:
  - {key: replicas, valueExpression: "string(object.spec.replicas)"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: vap-replicas
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 3"
    message: at most three replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: vap-replicas-binding
spec:
  policyName: vap-replicas
  validationActions: [Audit]
`

// TestCELKindEntries checks the entries of the CEL kinds: upstream's
// sources, the policy key of a namespaced kind, the rule name of a
// ValidatingAdmissionPolicy and its binding, audit annotations and the
// validation index as properties, the process, and --audit-warn.
func TestCELKindEntries(t *testing.T) {
	eng := newEngine(t)
	set, err := eng.Compile(readSet(t, celKindsPolicies).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big, namespace: shop}\nspec: {replicas: 5}\n")
	resp, err := set.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var got []api.PolicyReportResult
	for p, r := range resp.Rules() {
		got = append(got, result(*p, *r, Options{Clock: fixedClock}))
	}
	if len(got) != 2 {
		t.Fatalf("%d entries, want 2", len(got))
	}
	vp, vap := got[0], got[1]
	if vp.Source != SourceValidatingPolicy || vp.Policy != "shop/replicas" || vp.Rule != "" || vp.Result != api.ResultFail ||
		vp.Severity != "high" || vp.Properties["replicas"] != "5" || vp.Properties["cel.validationIndex"] != "0" ||
		vp.Properties[propertyProcess] != processAdmission {
		t.Errorf("ValidatingPolicy entry %+v", vp)
	}
	if vap.Source != SourceValidatingAdmissionPolicy || vap.Policy != "vap-replicas" || vap.Rule != "vap-replicas" ||
		vap.Properties["binding"] != "vap-replicas-binding" || vap.Properties[propertyProcess] != processBackground {
		t.Errorf("ValidatingAdmissionPolicy entry %+v", vap)
	}
	// upstream gives the CEL kinds no failure action: --audit-warn makes
	// every failure a warning, Deny or not
	for p, r := range resp.Rules() {
		if res := result(*p, *r, Options{AuditWarn: true}); res.Result != api.ResultWarn {
			t.Errorf("%s with --audit-warn: %s, want warn", p.Policy.Name(), res.Result)
		}
	}
	// the streaming encoder writes the same sources
	var buf bytes.Buffer
	if _, err := writeYAMLResults(&buf, resp.Policies, Options{Clock: fixedClock}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"source: KyvernoValidatingPolicy", "source: ValidatingAdmissionPolicy", "rule: vap-replicas"} {
		if !strings.Contains(buf.String(), w) {
			t.Errorf("the stream lacks %q:\n%s", w, buf.String())
		}
	}
}

// TestGeneratingPolicyEntries checks the entry of a GeneratingPolicy:
// upstream's source and process (admission review, whatever the policy
// says), no rule name, the audit annotations as properties.
func TestGeneratingPolicyEntries(t *testing.T) {
	eng := newEngine(t)
	set, err := eng.Compile(readSet(t, `
apiVersion: policies.kyverno.io/v1
kind: GeneratingPolicy
metadata:
  name: quota
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [namespaces]}
  auditAnnotations:
  - {key: target, valueExpression: "string(object.metadata.name)"}
  generate:
  - expression: 'generator.Apply(object.metadata.name, [{"kind": dyn("ResourceQuota"), "apiVersion": dyn("v1"), "metadata": dyn({"name": "q"})}])'
`).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	obj := object(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n")
	resp, err := set.Generate(context.Background(), &engine.Request{Operation: api.Create, Object: obj})
	if err != nil {
		t.Fatal(err)
	}
	var got []api.PolicyReportResult
	for p, r := range resp.Rules() {
		got = append(got, result(*p, *r, Options{Clock: fixedClock}))
	}
	if len(got) != 1 {
		t.Fatalf("%d entries, want 1", len(got))
	}
	e := got[0]
	if e.Source != SourceGeneratingPolicy || e.Policy != "quota" || e.Rule != "quota" || e.Result != api.ResultPass ||
		e.Properties[propertyProcess] != processAdmission || e.Properties["target"] != "team" {
		t.Errorf("GeneratingPolicy entry %+v", e)
	}
}
