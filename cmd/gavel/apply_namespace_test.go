package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"
)

// TestApplyDefaultNamespace: resources of files without a namespace are in
// "default", as upstream's apply loads them, unless their kind is
// cluster-scoped (built-in, or by a --crd-path CRD); targets and parameter
// objects too.
func TestApplyDefaultNamespace(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"policy.yaml": `apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: namespace-of
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}
  validations:
  - expression: object.metadata.?namespace.orValue("") == "default"
    message: not in default
`,
		"resources.yaml": `apiVersion: v1
kind: Pod
metadata: {name: pod}
---
apiVersion: v1
kind: Pod
metadata: {name: shop-pod, namespace: shop}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: role}
---
apiVersion: sea.test/v1
kind: Fish
metadata: {name: fish}
---
apiVersion: sea.test/v1
kind: Ocean
metadata: {name: ocean}
`,
		"crds.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: oceans.sea.test}
spec:
  group: sea.test
  scope: Cluster
  names: {kind: Ocean, plural: oceans}
  versions: [{name: v1, served: true, storage: true}]
`,
	})
	_, stdout, stderr := runGavel("apply", filepath.Join(dir, "policy.yaml"), "-r", filepath.Join(dir, "resources.yaml"),
		"--crd-path", filepath.Join(dir, "crds.yaml"), "--output-format", "json")
	var doc struct {
		Results []struct{ Resource, Result string }
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	got := map[string]string{}
	for _, r := range doc.Results {
		got[r.Resource] = r.Result
	}
	want := map[string]string{"default/Pod/pod": "pass", "shop/Pod/shop-pod": "fail", "Namespace/ns": "fail",
		"ClusterRole/role": "fail", "default/Fish/fish": "pass", "Ocean/ocean": "fail"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
}
