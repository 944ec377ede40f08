package cel_test

import (
	"context"
	"fmt"

	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/inmem"
)

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
	cluster := inmem.New(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "registries", "namespace": "kube-system"},
		"data":     map[string]any{"allowed": "ghcr.io"},
	})
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
