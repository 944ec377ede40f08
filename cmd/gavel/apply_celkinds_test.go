package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// celKindFiles are the inputs of the tests of CEL policy kinds.
var celKindFiles = map[string]string{
	"vpol.yaml": `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: require-team
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
  validations:
  - expression: "'team' in object.metadata.?labels.orValue({})"
    message: the team label is required
`,
	"json-vpol.yaml": `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: plan-version
spec:
  evaluation: {mode: JSON}
  matchConditions:
  - {name: plan, expression: "has(object.terraform_version)"}
  validations:
  - expression: "object.terraform_version.startsWith('1.5.')"
    message: terraform 1.5 is required
`,
	"vap.yaml": `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
    messageExpression: "'at most ' + params.data.maxReplicas + ' replicas'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef: {name: limits}
`,
	"exception.yaml": `apiVersion: policies.kyverno.io/v1
kind: PolicyException
metadata:
  name: sandbox
  namespace: sandbox
spec:
  policyRefs:
  - {name: require-team, kind: ValidatingPolicy}
  matchConditions:
  - {name: sandbox, expression: "object.metadata.namespace == 'sandbox'"}
`,
	"limits.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: limits\n  namespace: shop\ndata:\n  maxReplicas: \"2\"\n",
	"pods.yaml":    "apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: shop}\nspec: {containers: [{name: c, image: c}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: sandbox}\nspec: {containers: [{name: c, image: c}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: c, namespace: shop, labels: {team: x}}\nspec: {containers: [{name: c, image: c}]}\n",
	"deploys.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: small, namespace: shop}\nspec: {replicas: 1}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big, namespace: shop}\nspec: {replicas: 3}\n",
	"plan.json":    `{"terraform_version": "1.6.0"}`,
	"typo.yaml":    "apiVersion: policies.kyverno.io/v1\nkind: ValidatingPolicie\nmetadata: {name: x}\nspec: {}\n",
}

// TestApplyCELKinds runs gavel apply on ValidatingPolicies,
// ValidatingAdmissionPolicies with bindings, CEL PolicyExceptions and
// JSON payloads, as upstream's kyverno apply does.
func TestApplyCELKinds(t *testing.T) {
	dir := writeFiles(t, celKindFiles)
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
	}{
		{name: "ValidatingPolicy", args: []string{p("vpol.yaml"), "-r", p("pods.yaml")}, code: 1,
			stdout: []string{"Applying 1 policy rule(s) to 3 resource(s)...", "policy require-team -> resource shop/Pod/a failed:\n1 -  the team label is required\n",
				"pass: 1, fail: 2, warn: 0, error: 0, skip: 0"}},
		{name: "CEL exception", args: []string{p("vpol.yaml"), "-r", p("pods.yaml"), "-e", p("exception.yaml")}, code: 1,
			stdout: []string{"with 1 exception(s)", "pass: 1, fail: 1, warn: 0, error: 0, skip: 1"}},
		{name: "CEL exception among the resources", args: []string{p("vpol.yaml"), "-r", p("pods.yaml"), "-r", p("exception.yaml"), "--exceptions-with-resources"}, code: 1,
			stdout: []string{"skip: 1"}},
		{name: "report sources", args: []string{p("vpol.yaml"), "-r", p("pods.yaml"), "--policy-report"}, code: 1,
			stdout: []string{"source: KyvernoValidatingPolicy", "cel.validationIndex: \"0\""}},
		{name: "ValidatingAdmissionPolicy with params", args: []string{p("vap.yaml"), "-r", p("deploys.yaml"), "--parameter-resource", p("limits.yaml")}, code: 1,
			stdout: []string{"Applying 1 policy rule(s) to 2 resource(s)...", "policy replica-limit -> resource shop/Deployment/big failed:\n1 - replica-limit at most 2 replicas\n", "pass: 1, fail: 1"}},
		{name: "JSON payload", args: []string{p("json-vpol.yaml"), "--json", p("plan.json")}, code: 1,
			stdout: []string{"policy plan-version -> resource JSON payload failed:\n1 -  terraform 1.5 is required\n"}},
		{name: "JSON-mode policy on resources", args: []string{p("json-vpol.yaml"), "-r", p("pods.yaml")}, code: 0,
			stdout: []string{"pass: 0, fail: 0, warn: 0, error: 0, skip: 3"}},
		{name: "unknown kind", args: []string{p("typo.yaml"), "-r", p("pods.yaml")}, code: 1,
			stderr: []string{`unknown kind "ValidatingPolicie"`}},
		{name: "unknown kind among the resources", args: []string{p("vpol.yaml"), "-r", p("typo.yaml")}, code: 1,
			stderr: []string{`typo.yaml[0]: unknown kind "ValidatingPolicie"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := applyRun(t, "", tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
		})
	}
}
