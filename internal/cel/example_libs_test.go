package cel_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/internal/cel"
)

// configMaps is a ResourceClient that has ConfigMaps only.
type configMaps map[string]map[string]any // namespace/name -> object

func (c configMaps) GetResource(_ context.Context, apiVersion, resource, namespace, name string) (map[string]any, error) {
	if apiVersion != "v1" || resource != "configmaps" {
		return nil, nil
	}
	return c[namespace+"/"+name], nil
}

func (c configMaps) ListResources(context.Context, string, string, string, map[string]string) (map[string]any, error) {
	return nil, fmt.Errorf("list: %w", cel.ErrNotConfigured)
}

func (c configMaps) PostResource(context.Context, string, string, string, map[string]any) (map[string]any, error) {
	return nil, fmt.Errorf("post: %w", cel.ErrNotConfigured)
}

func (c configMaps) ToGVR(_ context.Context, apiVersion, kind string) (schema.GroupVersionResource, error) {
	return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, nil
}

// An expression of a ValidatingPolicy that reads a ConfigMap with
// Kyverno's resource library and parses images with its image library.
// The compiled program is shared; each Input binds its hosts.
func ExampleWithLibraries() {
	env, err := cel.NewEnv(cel.WithLibraries(cel.ValidatingPolicyLibraries))
	if err != nil {
		panic(err)
	}
	c := env.NewCompiler(false)
	if _, err := c.AddVariable("allowed", `resource.Get("v1", "configmaps", "kube-system", "registries").data.allowed`); err != nil {
		panic(err)
	}
	p, err := c.Compile(`object.spec.containers.all(c, parseImageReference(c.image).registry() == variables.allowed)`, cel.Validation)
	if err != nil {
		panic(err)
	}
	cluster := configMaps{"kube-system/registries": {
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "registries", "namespace": "kube-system"},
		"data":     map[string]any{"allowed": "ghcr.io"},
	}}
	libs := &cel.Libraries{Resource: cluster}
	for _, image := range []string{"ghcr.io/team/app:1.0", "nginx:latest"} {
		pod := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}}
		v, err := c.NewEvaluation(context.Background(), &cel.Input{Object: pod, Libraries: libs}, nil).Eval(p)
		fmt.Println(image, v, err)
	}

	// a library whose host the Input does not have is an error
	bad, err := c.Compile(`variables.allowed == "ghcr.io"`, cel.Validation)
	if err != nil {
		panic(err)
	}
	_, err = c.NewEvaluation(context.Background(), &cel.Input{}, nil).Eval(bad)
	fmt.Println(err)
	// Output:
	// ghcr.io/team/app:1.0 true <nil>
	// nginx:latest false <nil>
	// expression 'variables.allowed == "ghcr.io"' resulted in error: composited variable "allowed" fails to evaluate: failed to get resource: resource library: not configured
}
