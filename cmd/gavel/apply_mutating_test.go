package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mutatingFiles are the inputs of the CEL mutating kinds' CLI tests: a
// MutatingPolicy, a MutatingAdmissionPolicy with its binding and
// parameter object, and a Pod.
var mutatingFiles = map[string]string{
	"mpol.yaml": `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: pull-always
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: >-
        Object{spec: Object.spec{containers: object.spec.containers.map(c,
        Object.spec.containers{name: c.name, imagePullPolicy: "Always"})}}
`,
	"map.yaml": `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: team-label
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/metadata/labels", value: {"team": params.data.team}}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: team-label-binding
spec:
  policyName: team-label
  paramRef: {name: team, namespace: shop}
`,
	"team.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: team\n  namespace: shop\ndata:\n  team: blue\n",
	"pod.yaml":  "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: shop\nspec:\n  containers:\n  - name: nginx\n    image: nginx\n",
}

// TestApplyMutatingKinds: gavel apply prints and writes (-o) the
// resources a MutatingPolicy and a MutatingAdmissionPolicy (its parameter
// object from --parameter-resource) mutated, the MAP's mutation first.
func TestApplyMutatingKinds(t *testing.T) {
	dir := writeFiles(t, mutatingFiles)
	p := func(name string) string { return filepath.Join(dir, name) }
	out := filepath.Join(dir, "out.yaml")
	code, stdout, stderr := applyRun(t, "", p("mpol.yaml"), p("map.yaml"), "-r", p("pod.yaml"), "--parameter-resource", p("team.yaml"), "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "pass: 2, fail: 0") {
		t.Errorf("stdout:\n%s", stdout)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"team: blue", "imagePullPolicy: Always", "name: web"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s lacks %q:\n%s", out, want, raw)
		}
	}
}
