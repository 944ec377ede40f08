package dynclient

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/loader"
)

// TestResourceLibrary evaluates the CEL resource library on the dynamic
// client, through the engine: each expression is the validation of a
// ValidatingPolicy, in order (the last reads what the one before posted).
func TestResourceLibrary(t *testing.T) {
	cm := func(ns, name, team string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"team": team}},
			"data":     map[string]any{"n": "1"},
		}}
	}
	c := fakeClient(cm("a", "x", "blue"), cm("a", "y", "red"), cm("b", "z", "blue"))
	eng, err := engine.New(engine.WithCELLibraries(cel.Libraries{Resource: c}))
	if err != nil {
		t.Fatal(err)
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "a"}}
	for _, expr := range []string{
		`resource.Get("v1", "configmaps", "a", "x").data.n == "1"`,
		`dyn(resource.Get("v1", "configmaps", "a", "none")) == null`,
		`dyn(resource.List("v1", "configmaps", "").items).size() == 3`,
		`dyn(resource.List("v1", "configmaps", "a", {"team": "red"}).items).map(c, c.metadata.name) == ["y"]`,
		`resource.Post("v1", "configmaps", "b", {"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": "new"})}).metadata.name == "new"`,
		`dyn(resource.Get(resource.ToGVR("v1", "ConfigMap"), "b", "new")).metadata.namespace == "b"`,
	} {
		set := &loader.Set{}
		err := set.Read(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata: {name: resource-library}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: |
      `+expr+"\n"), "policy.yaml")
		if err != nil {
			t.Fatal(err)
		}
		ps, err := eng.Compile(set.Policies...)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		resp, err := ps.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		n := 0
		for _, r := range resp.Rules() {
			n++
			if r.Status != engine.StatusPass {
				t.Errorf("%s: %s %s", expr, r.Status, r.Message)
			}
		}
		if n != 1 {
			t.Errorf("%s: %d results, want 1", expr, n)
		}
	}
}
