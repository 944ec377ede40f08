package cel_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/cel"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
	"github.com/gavelpolicy/gavel/loader"
)

// A ValidatingPolicy reads a ConfigMap with Kyverno's resource library:
// the Libraries give it its host, here an in-memory cluster (the cluster
// module's client in a cluster).
func ExampleLibraries() {
	cluster := inmem.New(map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "registries", "namespace": "kube-system"},
		"data":     map[string]any{"allowed": "ghcr.io"},
	})
	eng, err := engine.New(engine.WithCELLibraries(cel.Libraries{Resource: cluster}))
	if err != nil {
		panic(err)
	}
	set := &loader.Set{}
	if err := set.Read(strings.NewReader(`
apiVersion: policies.kyverno.io/v1
kind: ValidatingPolicy
metadata:
  name: allowed-registries
spec:
  validationActions: [Deny]
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  variables:
  - name: allowed
    expression: resource.Get("v1", "configmaps", "kube-system", "registries").data.allowed
  validations:
  - expression: object.spec.containers.all(c, parseImageReference(c.image).registry() == variables.allowed)
    messageExpression: "'images must come from ' + variables.allowed"
`), "policy.yaml"); err != nil {
		panic(err)
	}
	ps, err := eng.Compile(set.Policies...)
	if err != nil {
		panic(err)
	}
	for _, image := range []string{"ghcr.io/team/app:1.0", "nginx:latest"} {
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "app", "namespace": "shop"},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}}
		resp, err := ps.Validate(context.Background(), &engine.Request{Operation: api.Create, Object: pod})
		if err != nil {
			panic(err)
		}
		for _, r := range resp.Rules() {
			fmt.Println(image, r.Status, r.Message)
		}
	}
	// Output:
	// ghcr.io/team/app:1.0 pass success
	// nginx:latest fail images must come from ghcr.io
}
