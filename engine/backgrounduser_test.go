package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

const backgroundPolicies = `
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: pin-agent
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"agent": "1.5"}}}'
---
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: always
spec:
  evaluation:
    admission: {enabled: true}
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"seen": "yes"}}}'
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: copy
spec:
  rules:
  - name: gen
    match:
      any:
      - resources: {kinds: [ConfigMap]}
    generate:
      apiVersion: v1
      kind: Secret
      name: copy
      namespace: "{{request.object.metadata.namespace}}"
      data:
        data: {}
  - name: gen-always
    skipBackgroundRequests: false
    match:
      any:
      - resources: {kinds: [ConfigMap]}
    generate:
      apiVersion: v1
      kind: Secret
      name: copy-always
      namespace: "{{request.object.metadata.namespace}}"
      data:
        data: {}
`

// The background controller's own writes skip the policies (and rules)
// whose skipBackgroundRequests is on, the default: a MutatingPolicy does
// not undo what a mutate-existing policy wrote, as upstream's webhooks.
func TestControllerWrite(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	// "always" opts out of skipping
	pols := decode(backgroundPolicies).Policies
	pols[1].(*api.MutatingPolicy).Spec.EvaluationConfiguration.SkipBackgroundRequests = new(false)
	set, err := eng.Compile(pols...)
	if err != nil {
		t.Fatal(err)
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default"}}
	for _, tc := range []struct {
		name       string
		write      bool
		controller bool
		wantLabels map[string]any
		wantRules  []string
	}{
		{"another user's request", false, false, map[string]any{"agent": "1.5", "seen": "yes"}, []string{"gen", "gen-always"}},
		{"the controller's write", true, false, map[string]any{"seen": "yes"}, []string{"gen-always"}},
		// (the controller does not mutate a trigger of a MutatingPolicy)
		{"the controller's own evaluation", true, true, nil, []string{"gen", "gen-always"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &engine.Request{Operation: api.Create, Object: cm, ControllerWrite: tc.write, Controller: tc.controller}
			m, err := set.Mutate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			md, _ := m.Resource["metadata"].(map[string]any)
			labels, _ := md["labels"].(map[string]any)
			if len(labels) != len(tc.wantLabels) || labels["agent"] != tc.wantLabels["agent"] || labels["seen"] != tc.wantLabels["seen"] {
				t.Errorf("labels %v, want %v", labels, tc.wantLabels)
			}
			g, err := set.Generate(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			var rules []string
			for _, r := range g.Rules() {
				rules = append(rules, r.Name)
			}
			if len(rules) != len(tc.wantRules) || (len(rules) > 0 && rules[0] != tc.wantRules[0]) {
				t.Errorf("generate rules %v, want %v", rules, tc.wantRules)
			}
		})
	}
}

// The background controller's own write of a target
// (Request.ControllerWrite) is not mutated again by a MutatingPolicy
// (skipBackgroundRequests defaults to true); other requests are.
func ExampleRequest_controllerWrite() {
	eng, err := engine.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(`
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: pin-agent
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"agent": "1.5"}}}'
`).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, write := range []bool{false, true} {
		resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Update,
			Object:          map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default"}},
			OldObject:       map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "default"}},
			ControllerWrite: write})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("controller's write %v: %s\n", write, resp.Patch)
	}
	// Output:
	// controller's write false: [{"op":"add","path":"/metadata/labels","value":{"agent":"1.5"}}]
	// controller's write true:
}
