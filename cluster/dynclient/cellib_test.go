package dynclient

import (
	"context"
	"testing"

	"github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gavelpolicy/gavel/cel"
)

// TestResourceLibrary evaluates the CEL resource library on the dynamic
// client.
func TestResourceLibrary(t *testing.T) {
	cm := func(ns, name, team string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"team": team}},
			"data":     map[string]any{"n": "1"},
		}}
	}
	c := fakeClient(cm("a", "x", "blue"), cm("a", "y", "red"), cm("b", "z", "blue"))
	env, err := cel.NewEnv(cel.WithLibraries(cel.ValidatingPolicyLibraries))
	if err != nil {
		t.Fatal(err)
	}
	for _, expr := range []string{
		`resource.Get("v1", "configmaps", "a", "x").data.n == "1"`,
		`dyn(resource.Get("v1", "configmaps", "a", "none")) == null`,
		`dyn(resource.List("v1", "configmaps", "").items).size() == 3`,
		`dyn(resource.List("v1", "configmaps", "a", {"team": "red"}).items).map(c, c.metadata.name) == ["y"]`,
		`resource.Post("v1", "configmaps", "b", {"apiVersion": dyn("v1"), "kind": dyn("ConfigMap"), "metadata": dyn({"name": "new"})}).metadata.name == "new"`,
		`dyn(resource.Get(resource.ToGVR("v1", "ConfigMap"), "b", "new")).metadata.namespace == "b"`,
	} {
		comp := env.NewCompiler(false)
		p, err := comp.Compile(expr, cel.Validation)
		if err != nil {
			t.Fatal(err)
		}
		v, err := comp.NewEvaluation(context.Background(), &cel.Input{Libraries: &cel.Libraries{Resource: c}}, nil).Eval(p)
		if err != nil || v != types.True {
			t.Errorf("%s: %v %v", expr, v, err)
		}
	}
}
