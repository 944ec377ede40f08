package engine_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestHostTypedObjects: an object built by a host with Go types (ints,
// []string, map[string]string) is evaluated as the same object decoded
// from JSON: same results, same patch, same mutated object.
func TestHostTypedObjects(t *testing.T) {
	set := rbCompile(t, `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: ports
spec:
  rules:
  - name: label
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            +(checked): "yes"
        spec:
          containers:
          - (name): "*"
            imagePullPolicy: Always
  - name: port
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      message: "port {{ request.object.spec.containers[0].ports[0].containerPort }} is not 80"
      pattern:
        spec:
          containers:
          - ports:
            - containerPort: 80
`)
	typed := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]string{"app": "web"}},
		"spec": map[string]any{"containers": []map[string]any{{"name": "web", "image": "nginx", "args": []string{"-x"},
			"ports": []any{map[string]any{"containerPort": 8080, "protocol": "TCP"}}}}},
	}
	canonical := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx", "args": []any{"-x"},
			"ports": []any{map[string]any{"containerPort": 8080.0, "protocol": "TCP"}}}}},
	}
	ctx := context.Background()
	var got [2]*engine.Response
	var gotV [2]*engine.Response
	for i, obj := range []map[string]any{typed, canonical} {
		m, err := set.Mutate(ctx, &engine.Request{Operation: api.Create, Object: obj})
		if err != nil {
			t.Fatal(err)
		}
		v, err := set.Validate(ctx, &engine.Request{Operation: api.Create, Object: m.Resource})
		if err != nil {
			t.Fatal(err)
		}
		got[i], gotV[i] = m, v
	}
	if !reflect.DeepEqual(got[0].Resource, got[1].Resource) || string(got[0].Patch) != string(got[1].Patch) {
		t.Errorf("mutate: typed object gives %v %s, canonical %v %s", got[0].Resource, got[0].Patch, got[1].Resource, got[1].Patch)
	}
	if string(got[1].Patch) == "" {
		t.Error("no patch for the canonical object")
	}
	r0, r1 := gotV[0].Policies[0].Rules, gotV[1].Policies[0].Rules
	if len(r0) != 1 || !reflect.DeepEqual(r0, r1) || r0[0].Status != engine.StatusFail {
		t.Errorf("validate: typed %+v, canonical %+v", r0, r1)
	}
}
