package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// celFiles are the inputs of the CEL flag tests: a policy whose rule reads
// a ConfigMap as its parameters, one that asks the authorizer, the
// parameter object in a plain file and in upstream's context file.
var celFiles = map[string]string{
	"params-policy.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: max-replicas
spec:
  validationFailureAction: Enforce
  rules:
  - name: limit
    match:
      any:
      - resources:
          kinds: [Deployment]
    validate:
      cel:
        paramKind:
          apiVersion: v1
          kind: ConfigMap
        paramRef:
          name: limits
        expressions:
        - expression: "object.spec.replicas <= int(params.data.maxReplicas)"
          messageExpression: "'at most ' + params.data.maxReplicas + ' replicas'"
`,
	"authz-policy.yaml": `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: may-delete
spec:
  validationFailureAction: Enforce
  rules:
  - name: delete-services
    match:
      any:
      - resources:
          kinds: [Service]
    validate:
      cel:
        expressions:
        - expression: "authorizer.group('').resource('services').namespace(object.metadata.namespace).check('delete').allowed()"
          message: "the requester must be able to delete services"
`,
	"limits.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: limits\n  namespace: shop\ndata:\n  maxReplicas: \"2\"\n",
	"context.yaml": `apiVersion: cli.kyverno.io/v1alpha1
kind: Context
metadata:
  name: context
spec:
  resources:
  - apiVersion: v1
    kind: ConfigMap
    metadata:
      name: limits
      namespace: shop
    data:
      maxReplicas: "2"
`,
	"bad-context.yaml":  "apiVersion: cli.kyverno.io/v1alpha1\nkind: Values\n",
	"typo-context.yaml": "apiVersion: cli.kyverno.io/v1alpha1\nkind: Context\nspec:\n  resource: []\n",
	"small.yaml":        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: small\n  namespace: shop\nspec:\n  replicas: 1\n",
	"big.yaml":          "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: big\n  namespace: shop\nspec:\n  replicas: 3\n",
	"svc.yaml":          "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  type: ClusterIP\n",
}

// TestApplyCEL: --parameter-resource and --context-file give CEL rules
// their parameter objects (read through the cluster, not evaluated), and
// the authorizer of CEL expressions denies every check, as upstream's CLI
// off a cluster.
func TestApplyCEL(t *testing.T) {
	dir := writeFiles(t, celFiles)
	p := func(name string) string { return filepath.Join(dir, name) }
	tests := []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string
	}{
		{name: "no parameter object", args: []string{p("params-policy.yaml"), "-r", p("small.yaml")}, code: 1},
		{name: "parameter-resource, within the limit", args: []string{p("params-policy.yaml"), "-r", p("small.yaml"), "--parameter-resource", p("limits.yaml")}, code: 0,
			stdout: []string{"Applying 1 policy rule(s) to 1 resource(s)...", "pass: 1, fail: 0"}},
		{name: "parameter-resource, over the limit", args: []string{p("params-policy.yaml"), "-r", p("big.yaml"), "--parameter-resource", p("limits.yaml")}, code: 1,
			stdout: []string{"policy max-replicas -> resource shop/Deployment/big failed:\n1 - limit at most 2 replicas\n"}},
		{name: "context-file", args: []string{p("params-policy.yaml"), "-r", p("big.yaml"), "-r", p("small.yaml"), "--context-file", p("context.yaml")}, code: 1,
			stdout: []string{"pass: 1, fail: 1"}},
		{name: "context-file of another kind", args: []string{p("params-policy.yaml"), "-r", p("small.yaml"), "--context-file", p("bad-context.yaml")}, code: 1,
			stderr: []string{"want Context"}},
		{name: "context-file with an unknown field", args: []string{p("params-policy.yaml"), "-r", p("small.yaml"), "--context-file", p("typo-context.yaml")}, code: 1,
			stderr: []string{"spec.resource"}},
		{name: "parameter-resource missing", args: []string{p("params-policy.yaml"), "-r", p("small.yaml"), "--parameter-resource", p("nope.yaml")}, code: 1,
			stderr: []string{"--parameter-resource"}},
		{name: "authorizer denies", args: []string{p("authz-policy.yaml"), "-r", p("svc.yaml")}, code: 1,
			stdout: []string{"1 - delete-services the requester must be able to delete services"}},
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
