package engine_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// A MutatingPolicy and a MutatingAdmissionPolicy with its binding in one
// Mutate: the MAP runs first, the MutatingPolicy sees its change.
func Example_mutatingPolicy() {
	eng, err := engine.New()
	if err != nil {
		fmt.Println(err)
		return
	}
	set, err := eng.Compile(decode(`
apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: owner-label
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: 'Object{metadata: Object.metadata{labels: {"owner": object.metadata.annotations.team}}}'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: team-annotation
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: '[JSONPatch{op: "add", path: "/metadata/annotations", value: {"team": "platform"}}]'
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata:
  name: team-annotation-binding
spec:
  policyName: team-annotation
`).Policies...)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := set.Mutate(context.Background(), &engine.Request{Operation: api.Create, Object: object(unlabelledPod)})
	if err != nil {
		fmt.Println(err)
		return
	}
	for p, r := range resp.Rules() {
		fmt.Printf("%s %q: %s: %s %v\n", api.KindOf(p.Policy.Source()), r.Name, r.Status, r.Message, r.Properties)
	}
	fmt.Println(string(resp.Patch))
	// Output:
	// MutatingAdmissionPolicy "team-annotation": pass: mutation is successfully applied map[mapBinding:team-annotation-binding]
	// MutatingPolicy "": pass: success map[]
	// [{"op":"add","path":"/metadata/annotations","value":{"team":"platform"}},{"op":"add","path":"/metadata/labels","value":{"owner":"platform"}}]
}

// MutateExisting evaluates a MutatingPolicy with mutateExisting on the
// existing resources it selects, without a trigger (what a host does when
// the policy is created); the results carry the patched targets, which
// the host writes.
func ExamplePolicySet_MutateExisting() {
	cluster := inmem.New(
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-a"}},
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "team-b"}},
	)
	eng, err := engine.New(engine.WithClient(cluster))
	if err != nil {
		fmt.Println(err)
		return
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
		fmt.Println(err)
		return
	}
	resp, err := set.MutateExisting(context.Background(), set.Policies()[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	var out []string
	for _, r := range resp.Rules() {
		for _, t := range r.PatchedTargets {
			md := t["metadata"].(map[string]any)
			out = append(out, fmt.Sprint(r.Status, " ", md["name"], " ", md["labels"]))
		}
	}
	sort.Strings(out)
	for _, o := range out {
		fmt.Println(o)
	}
	// Output:
	// pass team-a map[owner:platform]
	// pass team-b map[owner:platform]
}
