package engine_test

import (
	"context"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// nsFilter filters every resource of the namespaces it names, and the
// Namespaces of those names (upstream's [*/*,NS,*] on a Namespace).
type nsFilter map[string]bool

func (f nsFilter) filtered(kind schema.GroupVersionKind, sub, namespace, name string) bool {
	if kind.Kind == "Namespace" && kind.Group == "" {
		return f[name]
	}
	return f[namespace]
}

const filterPolicies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: require-team
spec:
  validationFailureAction: Enforce
  rules:
  - name: team
    match:
      any:
      - resources: {kinds: [ConfigMap]}
    validate:
      message: team label required
      pattern:
        metadata:
          labels:
            team: "?*"
  - name: add-owner
    match:
      any:
      - resources: {kinds: [ConfigMap]}
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            owner: platform
`

func TestResourceFilter(t *testing.T) {
	eng, err := engine.New(engine.WithResourceFilter(nsFilter{"kube-system": true}.filtered))
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(filterPolicies).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	cm := func(ns string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": ns}}
	}
	for _, tc := range []struct {
		name      string
		req       *engine.Request
		wantRules int
	}{
		{"filtered namespace", &engine.Request{Operation: api.Create, Object: cm("kube-system")}, 0},
		{"namespace of the request", &engine.Request{Operation: api.Create, Namespace: "kube-system",
			Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"generateName": "c-"}}}, 0},
		{"old object filtered", &engine.Request{Operation: api.Delete, OldObject: cm("kube-system")}, 0},
		{"other namespace", &engine.Request{Operation: api.Create, Object: cm("default")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := set.Validate(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if n := countRules(v); n != tc.wantRules {
				t.Errorf("Validate: %d rule results, want %d", n, tc.wantRules)
			}
			if v.Resource == nil {
				t.Error("Validate: no resource in the response")
			}
			if tc.req.Object == nil {
				return
			}
			m, err := set.Mutate(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if n := countRules(m); n != tc.wantRules {
				t.Errorf("Mutate: %d rule results, want %d", n, tc.wantRules)
			}
			if tc.wantRules == 0 && len(m.Patch) > 0 {
				t.Errorf("Mutate: patch %s on a filtered resource", m.Patch)
			}
			s, err := set.Scan(context.Background(), &engine.Request{Object: tc.req.Object, Namespace: tc.req.Namespace, Background: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantRules == 0 && countRules(s) != 0 {
				t.Errorf("Scan: %d rule results on a filtered resource", countRules(s))
			}
		})
	}
}

func countRules(r *engine.Response) int {
	n := 0
	for range r.Rules() {
		n++
	}
	return n
}

// The background pass of a MutatingPolicy leaves the filtered targets
// alone: kube-system is not labelled (upstream's background controller
// checks its filters on each target).
func TestResourceFilterMutateExisting(t *testing.T) {
	cluster := inmem.New(
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"}},
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system"}},
	)
	eng, err := engine.New(engine.WithClient(cluster), engine.WithResourceFilter(nsFilter{"kube-system": true}.filtered))
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decode(`
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: label-namespaces
spec:
  evaluation:
    mutateExisting: {enabled: true}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [namespaces]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"owner": "platform"}}}'
`).Policies...)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := set.MutateExisting(context.Background(), set.Policies()[0])
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range resp.Rules() {
		for _, tg := range r.PatchedTargets {
			names = append(names, tg["metadata"].(map[string]any)["name"].(string))
		}
	}
	sort.Strings(names)
	if len(names) != 1 || names[0] != "team-a" {
		t.Errorf("patched targets %v, want [team-a]", names)
	}
}
