package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
)

// TestDeletingPolicyCompileErrors checks what upstream refuses in the
// deleting kinds: each is a compile error naming the field.
func TestDeletingPolicyCompileErrors(t *testing.T) {
	const dpol = `apiVersion: policies.kyverno.io/v1
kind: DeletingPolicy
metadata:
  name: d
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      resources: ["pods"]
`
	const ccpol = `apiVersion: kyverno.io/v2
kind: ClusterCleanupPolicy
metadata:
  name: c
spec:
  match:
    any:
    - resources:
        kinds: [Pod]
`
	cases := []struct {
		name, src, want string
	}{
		{"malformed schedule", dpol + "  schedule: \"61 * * * *\"\n", `spec.schedule: Invalid value: "61 * * * *": schedule spec in the deletingPolicy is not in proper cron format`},
		{"six fields", dpol + "  schedule: \"0 0 1 * * *\"\n", `spec.schedule: Invalid value`},
		{"no schedule", dpol, `spec.schedule: Required value`},
		{"propagation", dpol + "  schedule: \"@daily\"\n  deletionPropagationPolicy: Sideways\n", `spec.deletionPropagationPolicy: Unsupported value: "Sideways"`},
		{"condition", dpol + "  schedule: \"@daily\"\n  conditions:\n  - name: c\n    expression: nope(\n", `spec.conditions[0].expression`},
		{"condition type", dpol + "  schedule: \"@daily\"\n  conditions:\n  - name: c\n    expression: \"'x'\"\n", `must evaluate to bool`},
		{"variable", dpol + "  schedule: \"@daily\"\n  variables:\n  - name: v\n    expression: object.x(\n", `spec.variables[0].expression`},
		{"no constraints", "apiVersion: policies.kyverno.io/v1\nkind: DeletingPolicy\nmetadata:\n  name: d\nspec:\n  schedule: \"@daily\"\n", `spec.matchConstraints: Required value`},
		{"cleanup schedule", ccpol + "  schedule: \"every day\"\n", `spec.schedule: Invalid value: "every day": schedule spec in the cleanupPolicy is not in proper cron format`},
		{"user info", ccpol + "      subjects:\n      - kind: User\n        name: alice\n  schedule: \"@daily\"\n", `spec.match.any[0].subjects: Forbidden: Usage of user info is forbidden`},
		{"configMap context", ccpol + "  schedule: \"@daily\"\n  context:\n  - name: cm\n    configMap:\n      name: x\n      namespace: other\n", `ConfigMap is not allowed in CleanUp Policy`},
		{"condition operator", ccpol + "  schedule: \"@daily\"\n  conditions:\n    any:\n    - key: a\n      operator: Bigger\n      value: b\n", `spec.conditions.any[0].operator`},
		{"namespaced cluster kind", "apiVersion: kyverno.io/v2\nkind: CleanupPolicy\nmetadata:\n  name: c\n  namespace: ns\nspec:\n  schedule: \"@daily\"\n  match:\n    any:\n    - resources:\n        kinds: [Namespace]\n", `spec.match.any[0].resources.kinds[0]`},
		{"namespaced namespaces", "apiVersion: kyverno.io/v2\nkind: CleanupPolicy\nmetadata:\n  name: c\n  namespace: ns\nspec:\n  schedule: \"@daily\"\n  match:\n    any:\n    - resources:\n        kinds: [Pod]\n        namespaces: [other]\n", `namespaces`},
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := eng.CompilePolicy(decodeOne(t, c.src))
			var ce *engine.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a CompileError", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

// TestNextRunOtherKinds checks that policies without a schedule have none.
func TestNextRunOtherKinds(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	p, err := eng.CompilePolicy(decodeOne(t, `apiVersion: kyverno.io/v1
kind: ClusterPolicy
metadata:
  name: p
spec:
  rules:
  - name: r
    match:
      any:
      - resources:
          kinds: [Pod]
    validate:
      pattern:
        metadata:
          name: "?*"
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.NextRun(time.Now()); ok || p.DeletionPropagation() != "" || p.CleanupTargets() != nil {
		t.Error("a ClusterPolicy has no schedule")
	}
	resp, err := eng.NewPolicySet(p).Cleanup(context.Background(), &engine.Request{Object: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "x"}}})
	if err != nil || len(resp.Policies) != 0 {
		t.Errorf("Cleanup of a set without deleting policies: %v %v", resp, err)
	}
	if _, err := eng.NewPolicySet(p).Cleanup(context.Background(), &engine.Request{}); !errors.Is(err, engine.ErrNoObject) {
		t.Errorf("Cleanup without an object: %v", err)
	}
}

func ExamplePolicySet_Cleanup() {
	eng, _ := engine.New()
	set, err := eng.Compile(decodeExample(`apiVersion: policies.kyverno.io/v1
kind: DeletingPolicy
metadata:
  name: completed-jobs
spec:
  schedule: "0 2 * * *"
  deletionPropagationPolicy: Background
  matchConstraints:
    resourceRules:
    - apiGroups: ["batch"]
      apiVersions: ["v1"]
      resources: ["jobs"]
  conditions:
  - name: completed
    expression: "object.status.conditions.exists(c, c.type == 'Complete' && c.status == 'True')"
`)...)
	if err != nil {
		fmt.Println(err)
		return
	}
	p := set.Policies()[0]
	next, _ := p.NextRun(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	fmt.Println("next run:", next.Format(time.RFC3339), "propagation:", p.DeletionPropagation())
	job := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "nightly", "namespace": "ops"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}}
	resp, err := set.Cleanup(context.Background(), &engine.Request{Object: job})
	if err != nil {
		fmt.Println(err)
		return
	}
	for pr, r := range resp.Rules() {
		fmt.Println(pr.Policy.Source().GetName(), r.Type, r.Status, r.Message)
	}
	// Output:
	// next run: 2026-05-02T02:00:00Z propagation: Background
	// completed-jobs Deletion pass resource matched
}

// decodeExample decodes the policies of a YAML stream (nil on error).
func decodeExample(src string) []api.PolicyObject {
	docs, err := api.ReadDocuments(strings.NewReader(src), "example.yaml")
	if err != nil {
		return nil
	}
	var out []api.PolicyObject
	for _, d := range docs {
		if p, err := api.DecodePolicy(d); err == nil {
			out = append(out, p)
		}
	}
	return out
}
