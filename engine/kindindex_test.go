package engine_test

import (
	"context"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

// A mutation that changes the resource's kind changes which later rules
// match, within the policy and in later policies, as upstream re-matches
// every rule against the patched resource.
func TestMutateKindChangeRematches(t *testing.T) {
	set := rbCompile(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: a-rename}
spec:
  rules:
  - name: to-thing
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchesJson6902: |-
        - op: replace
          path: /kind
          value: Thing
  - name: pod-after
    match: {any: [{resources: {kinds: [Pod]}}]}
    mutate:
      patchStrategicMerge: {metadata: {labels: {pod-after: "yes"}}}
  - name: thing-after
    match: {any: [{resources: {kinds: [Thing]}}]}
    mutate:
      patchStrategicMerge: {metadata: {labels: {thing-after: "yes"}}}
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: b-thing}
spec:
  rules:
  - name: thing
    match: {any: [{resources: {kinds: [Thing]}}]}
    mutate:
      patchStrategicMerge: {metadata: {labels: {thing: "yes"}}}
`)
	for i := range 2 { // the second round reads the cached kind index
		resp, err := set.Mutate(context.Background(), rbRequest(t, rbPod))
		if err != nil {
			t.Fatal(err)
		}
		got := rbResults(resp)
		for name, want := range map[string]engine.Status{
			"a-rename/to-thing":    engine.StatusPass,
			"a-rename/thing-after": engine.StatusPass,
			"b-thing/thing":        engine.StatusPass,
		} {
			if got[name].Status != want {
				t.Errorf("round %d: %s = %q, want %q", i, name, got[name].Status, want)
			}
		}
		if r, ok := got["a-rename/pod-after"]; ok {
			t.Errorf("round %d: pod-after applied to a Thing: %+v", i, r)
		}
		labels, _ := resp.Resource["metadata"].(map[string]any)["labels"].(map[string]any)
		if labels["thing"] != "yes" || labels["thing-after"] != "yes" || labels["pod-after"] != nil {
			t.Errorf("round %d: labels = %v", i, labels)
		}
	}
}

// Rules whose kinds do not select the resource give no result, also when
// another rule of the policy matches, and every kind spelling selects.
func TestValidateKindCandidates(t *testing.T) {
	set := rbCompile(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: kinds}
spec:
  validationFailureAction: Audit
  background: false
  rules:
  - name: deploy
    match: {any: [{resources: {kinds: [Deployment]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: pod
    match: {any: [{resources: {kinds: [Pod]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: v1-pod
    match: {any: [{resources: {kinds: [v1/Pod]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: wildcard
    match: {any: [{resources: {kinds: ["*"]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: any-of-two
    match: {any: [{resources: {kinds: [Service]}}, {resources: {kinds: [Pod]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: pod-exec
    match: {any: [{resources: {kinds: [Pod/exec]}}]}
    validate: {pattern: {metadata: {name: "?*"}}}
`)
	resp, err := set.Validate(context.Background(), rbRequest(t, rbPod))
	if err != nil {
		t.Fatal(err)
	}
	got := rbResults(resp)
	for _, name := range []string{"pod", "v1-pod", "wildcard", "any-of-two"} {
		if got["kinds/"+name].Status != engine.StatusPass {
			t.Errorf("%s = %+v, want pass", name, got["kinds/"+name])
		}
	}
	for _, name := range []string{"deploy", "pod-exec"} {
		if r, ok := got["kinds/"+name]; ok {
			t.Errorf("%s applied to a Pod: %+v", name, r)
		}
	}
}

// Two rules with the same preconditions text but different context
// values are decided separately: only blocks that read nothing but the
// request are shared between rules.
func TestPreconditionsSharedOnlyWhenPure(t *testing.T) {
	set := rbCompile(t, `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata: {name: pre}
spec:
  validationFailureAction: Audit
  rules:
  - name: x-is-a
    match: {any: [{resources: {kinds: [Pod]}}]}
    context: [{name: x, variable: {value: a}}]
    preconditions: {all: [{key: "{{ x }}", operator: Equals, value: a}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: x-is-b
    match: {any: [{resources: {kinds: [Pod]}}]}
    context: [{name: x, variable: {value: b}}]
    preconditions: {all: [{key: "{{ x }}", operator: Equals, value: a}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: shop-1
    match: {any: [{resources: {kinds: [Pod]}}]}
    preconditions: {all: [{key: "{{ request.object.metadata.namespace }}", operator: Equals, value: shop}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: shop-2
    match: {any: [{resources: {kinds: [Pod]}}]}
    preconditions: {all: [{key: "{{ request.object.metadata.namespace }}", operator: Equals, value: shop}]}
    validate: {pattern: {metadata: {name: "?*"}}}
  - name: not-shop
    match: {any: [{resources: {kinds: [Pod]}}]}
    preconditions: {all: [{key: "{{ request.object.metadata.namespace }}", operator: NotEquals, value: shop}]}
    validate: {pattern: {metadata: {name: "?*"}}}
`)
	resp, err := set.Validate(context.Background(), rbRequest(t, rbPod))
	if err != nil {
		t.Fatal(err)
	}
	got := rbResults(resp)
	for name, want := range map[string]engine.Status{
		"pre/x-is-a":   engine.StatusPass,
		"pre/x-is-b":   engine.StatusSkip,
		"pre/shop-1":   engine.StatusPass,
		"pre/shop-2":   engine.StatusPass,
		"pre/not-shop": engine.StatusSkip,
	} {
		if got[name].Status != want {
			t.Errorf("%s = %q (%s), want %q", name, got[name].Status, got[name].Message, want)
		}
	}
}
