package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/engine"
)

// TestForeachElementVariables checks the variables a foreach element adds
// (element, elementN, elementIndex, elementIndexN) wherever a body reads
// them: nested lists, context entries set before and after they are read,
// preconditions, messages, and bodies that read no variable at all (the
// scope's variables are then never copied, see scope.addElement).
func TestForeachElementVariables(t *testing.T) {
	const pod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: a
    image: nginx:1
  - name: b
    image: redis:latest
`
	const head = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: scope
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
`
	for _, tc := range []struct {
		name, body string
		status     engine.Status
		message    string
	}{
		{"pattern only", `
      message: "tag"
      foreach:
      - list: request.object.spec.containers
        pattern:
          image: "!*:latest"
`, engine.StatusFail, "validation failure: validation error: tag. rule r failed at path /image/"},
		{"deny reads element and elementIndex", `
      foreach:
      - list: request.object.spec.containers
        deny:
          conditions:
            any:
            - key: "{{ element.name }}-{{ elementIndex }}-{{ element0.name }}-{{ elementIndex0 }}"
              operator: Equals
              value: b-1-b-1
`, engine.StatusFail, ""},
		{"nested lists see both elements", `
      foreach:
      - list: request.object.spec.containers
        foreach:
        - list: request.object.spec.containers
          deny:
            conditions:
              any:
              - key: "{{ element0.name }}{{ elementIndex0 }}/{{ element1.name }}{{ elementIndex1 }}/{{ element.name }}{{ elementIndex }}"
                operator: Equals
                value: b1/a0/a0
`, engine.StatusFail, ""},
		{"nested lists: the inner element wins", `
      foreach:
      - list: request.object.spec.containers
        foreach:
        - list: request.object.spec.containers
          deny:
            conditions:
              any:
              - key: "{{ element.name }}"
                operator: NotEquals
                value: "{{ element1.name }}"
`, engine.StatusPass, ""},
		{"context entry reads the element", `
      foreach:
      - list: request.object.spec.containers
        context:
        - name: tagged
          variable:
            jmesPath: "element.image"
        - name: element
          variable:
            value: replaced
        deny:
          conditions:
            any:
            - key: "{{ tagged }}/{{ element }}/{{ element0.name }}"
              operator: Equals
              value: redis:latest/replaced/b
`, engine.StatusFail, ""},
		{"preconditions read the element", `
      foreach:
      - list: request.object.spec.containers
        preconditions:
          all:
          - key: "{{ element.name }}"
            operator: Equals
            value: a
        pattern:
          image: "*:latest"
`, engine.StatusFail, ""},
		{"elements do not leak into the next one", `
      foreach:
      - list: request.object.spec.containers
        context:
        - name: first
          variable:
            jmesPath: "element.name"
            default: none
        deny:
          conditions:
            any:
            - key: "{{ first }}"
              operator: NotEquals
              value: "{{ element.name }}"
`, engine.StatusPass, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := rbCompile(t, head+tc.body)
			resp, err := set.Validate(context.Background(), rbRequest(t, pod))
			if err != nil {
				t.Fatal(err)
			}
			got := rbResults(resp)["scope/r"]
			if got.Status != tc.status || !strings.Contains(got.Message, tc.message) {
				t.Errorf("got %s %q, want %s containing %q", got.Status, got.Message, tc.status, tc.message)
			}
		})
	}
}

// TestMutateTargetVariable: a mutate rule reads the object as "target",
// at the top and in a foreach next to the element, and a rule that reads
// no variable sets none.
func TestMutateTargetVariable(t *testing.T) {
	const policy = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: target
spec:
  rules:
  - name: top
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            from-target: "{{ target.metadata.name }}"
  - name: plain
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      patchStrategicMerge:
        metadata:
          labels:
            plain: "yes"
  - name: each
    match:
      any:
      - resources:
          kinds: [Pod]
    mutate:
      foreach:
      - list: request.object.spec.containers
        patchStrategicMerge:
          metadata:
            annotations:
              "{{ element.name }}": "{{ target.metadata.labels.\"from-target\" }}-{{ elementIndex }}"
`
	const pod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: a
    image: nginx
  - name: b
    image: nginx
`
	set := rbCompile(t, policy)
	resp, err := set.Mutate(context.Background(), rbRequest(t, pod))
	if err != nil {
		t.Fatal(err)
	}
	md := resp.Resource["metadata"].(map[string]any)
	labels, _ := md["labels"].(map[string]any)
	annotations, _ := md["annotations"].(map[string]any)
	if labels["from-target"] != "p" || labels["plain"] != "yes" || annotations["a"] != "p-0" || annotations["b"] != "p-1" {
		t.Errorf("labels %v, annotations %v", labels, annotations)
	}
	for name, r := range rbResults(resp) {
		if r.Status != engine.StatusPass {
			t.Errorf("%s: %s %s", name, r.Status, r.Message)
		}
	}
}

// TestForeachScopesDoNotLeakBetweenRules: the element scopes of validate
// foreach loops, and their variable maps, are reused across the loops,
// rules and policies of a request (scope.recycled); a rule must never see
// a variable that only an earlier rule had, such as its own context entry
// or the element1 of its nested loop.
func TestForeachScopesDoNotLeakBetweenRules(t *testing.T) {
	const pod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
spec:
  containers:
  - name: a
    image: nginx:1
  - name: b
    image: redis:latest
`
	const policies = `
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: first
spec:
  rules:
  - name: nested
    match:
      any:
      - resources:
          kinds: [Pod]
    context:
    - name: leaked
      variable:
        value: "yes"
    validate:
      foreach:
      - list: request.object.spec.containers
        foreach:
        - list: request.object.spec.containers
          deny:
            conditions:
              any:
              - key: "{{ leaked }}/{{ element1.name }}"
                operator: NotIn
                value: [yes/a, yes/b]
  - name: flat
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      foreach:
      - list: request.object.spec.containers
        deny:
          conditions:
            any:
            - key: "{{ leaked || 'absent' }}/{{ element1.name || 'absent' }}/{{ elementIndex1 || 'absent' }}"
              operator: NotEquals
              value: absent/absent/absent
---
apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: second
spec:
  rules:
  - name: flat
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      foreach:
      - list: request.object.spec.containers
        foreach:
        - list: request.object.spec.initContainers || request.object.spec.containers
          deny:
            conditions:
              any:
              - key: "{{ leaked || 'absent' }}"
                operator: NotEquals
                value: absent
`
	set := rbCompile(t, policies)
	for range 3 { // the same request state serves every rule; run it more than once
		resp, err := set.Validate(context.Background(), rbRequest(t, pod))
		if err != nil {
			t.Fatal(err)
		}
		got := rbResults(resp)
		for _, key := range []string{"first/nested", "first/flat", "second/flat"} {
			if got[key].Status != engine.StatusPass {
				t.Errorf("%s: %s %q, want pass", key, got[key].Status, got[key].Message)
			}
		}
	}
}
