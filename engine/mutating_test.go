package engine_test

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

const mpolHead = `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata:
  name: p
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
`

const mapHead = `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata:
  name: m
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [pods]
`

// TestCompileMutatingErrors checks that a malformed mutating policy is a
// compile error naming the policy, the field and its index.
func TestCompileMutatingErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown function", mpolHead + `  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: object.nosuch(), value: 1}]"`,
			[]string{"policy p:", "spec.mutations[0].jsonPatch.expression", "undeclared reference to 'nosuch'"}},
		{"not an Object", mpolHead + `  mutations:
  - patchType: JSONPatch
    jsonPatch:
      expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"
  - patchType: ApplyConfiguration
    applyConfiguration:
      expression: "{'metadata': {}}"`, []string{"spec.mutations[1].applyConfiguration.expression", "must evaluate to Object"}},
		{"unknown patch type", mpolHead + `  mutations:
  - patchType: StrategicMerge`, []string{`spec.mutations[0].patchType: Unsupported value: "StrategicMerge"`}},
		{"missing expression", mpolHead + `  mutations:
  - patchType: ApplyConfiguration`, []string{"spec.mutations[0].applyConfiguration.expression: Required value"}},
		{"no mutations", mpolHead, []string{"spec.mutations: Required value"}},
		{"no matchConstraints", `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: p}
spec:
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{"spec.matchConstraints: Required value"}},
		{"nothing evaluates it", mpolHead + `  evaluation:
    admission: {enabled: false}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{"spec.evaluation: Forbidden: disabling both admission and mutateExisting"}},
		{"JSON mode", mpolHead + `  evaluation:
    mode: JSON
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{`spec.evaluation.mode: Unsupported value: "JSON"`}},
		{"reinvocation policy", mpolHead + `  reinvocationPolicy: Always
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{`spec.reinvocationPolicy: Unsupported value: "Always"`}},
		{"variables in matchConditions of a policy made a MAP", mpolHead + `  autogen:
    mutatingAdmissionPolicy: {enabled: true}
  variables:
  - {name: x, expression: "true"}
  matchConditions:
  - {name: a, expression: "variables.x"}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{"spec.matchConditions[0].expression: Forbidden: variables cannot be referenced"}},
		{"error in a Pod controller variant", mpolHead + `  matchConditions:
  - {name: a, expression: "object.spec.x.y()"}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{"spec.matchConditions[0].expression"}},
		{"MAP: patch types only in mutations", mapHead + `  variables:
  - {name: o, expression: "Object{}"}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{"policy m:", "spec.variables[0].expression", "undeclared reference to 'Object'"}},
		{"MAP: params undeclared", mapHead + `  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: params.x}]"}`, []string{"spec.mutations[0].jsonPatch.expression", "undeclared reference to 'params'"}},
		{"MAP: match condition name", mapHead + `  matchConditions:
  - {name: "not a name", expression: "true"}
  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/a', value: 1}]"}`, []string{"spec.matchConditions[0].name: Invalid value"}},
		{"MAP binding with two param references", `apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicyBinding
metadata: {name: b}
spec:
  policyName: m
  paramRef:
    name: a
    selector: {matchLabels: {a: b}}`, []string{"policy b:", "spec.paramRef", "exactly one of name and selector"}},
	}
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := eng.Compile(decodeAll(t, tt.src)...)
			var ce *engine.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *CompileError", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestMutateCancelled checks that a cancelled context stops Mutate with
// its error.
func TestMutateCancelled(t *testing.T) {
	eng, err := engine.New()
	if err != nil {
		t.Fatal(err)
	}
	set, err := eng.Compile(decodeAll(t, mpolHead+`  mutations:
  - patchType: JSONPatch
    jsonPatch: {expression: "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]"}`)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "namespace": "ns"}}
	if _, err := set.Mutate(ctx, &engine.Request{Object: pod}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
}

// TestMutatingPolicyExisting follows a mutate-existing MutatingPolicy
// through admission and the controller: Generate at admission passes the
// trigger and queues an UpdateRequest naming no rule, Mutate leaves the
// trigger alone (the policy's targets are selected by
// targetMatchConstraints) and mutates no target; for the controller
// (Request.Controller) Mutate patches the targets that change, and only those.
func TestMutatingPolicyExisting(t *testing.T) {
	raw, err := os.ReadFile("../policytest/testdata/features/mpol-mutate-existing/policy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	secret := func(ns, name, annotation string) map[string]any {
		md := map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"rotate": "yes"}}
		if annotation != "" {
			md["annotations"] = map[string]any{"rotated-by": annotation}
		}
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": md}
	}
	cluster := inmem.New(secret("team-a", "fresh", ""), secret("team-b", "done", "rotation"))
	q := &genQueue{}
	set := genSet(t, string(raw), engine.WithClient(cluster), engine.WithUpdateRequestQueue(q))
	trigger := map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "rotation", "namespace": "ops"}}
	req := &engine.Request{Operation: api.Create, Object: trigger}
	ctx := context.Background()
	gen, err := set.Generate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for p, r := range gen.Rules() {
		got = append(got, p.Policy.Source().GetName()+": "+string(r.Status)+" "+r.Message)
	}
	if want := "rotate: pass mutate existing request queued|stamp-team-a: pass mutate existing request queued"; strings.Join(got, "|") != want {
		t.Errorf("Generate: %s, want %s", strings.Join(got, "|"), want)
	}
	if len(q.urs) != 2 || q.urs[0].Spec.Type != api.URMutate || q.urs[0].Spec.Policy != "rotate" ||
		len(q.urs[0].Spec.RuleContext) != 1 || q.urs[0].Spec.RuleContext[0].Rule != "" || q.urs[0].Spec.Resource.Name != "rotation" {
		t.Fatalf("update requests %+v", q.urs)
	}
	mut, err := set.Mutate(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mut.Rules() {
		t.Errorf("admission: result %s %s", r.Status, r.Message)
	}
	ctrl := *req
	ctrl.Controller = true
	mut, err = set.Mutate(ctx, &ctrl)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for p, r := range mut.Rules() {
		row := p.Policy.Source().GetName() + ": " + string(r.Status)
		for _, pt := range r.PatchedTargets {
			md := pt["metadata"].(map[string]any)
			row += " " + md["namespace"].(string) + "/" + md["name"].(string)
		}
		got = append(got, row)
	}
	sort.Strings(got)
	if want := "rotate: pass|rotate: pass team-a/fresh"; strings.Join(got, "|") != want {
		t.Errorf("controller: %s, want %s", strings.Join(got, "|"), want)
	}
}
