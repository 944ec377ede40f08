package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gavelpolicy/gavel/api"
	"github.com/gavelpolicy/gavel/engine"
	"github.com/gavelpolicy/gavel/inmem"
)

// FuzzMutatingPolicy compiles a MutatingPolicy and a
// MutatingAdmissionPolicy whose ApplyConfiguration, JSON patch, variable
// and matchCondition come from the input, and mutates a resource decoded
// from the input with them: a compile error, or results for every
// request, never a panic, and the request's object never modified.
func FuzzMutatingPolicy(f *testing.F) {
	f.Add(`Object{metadata: Object.metadata{labels: {"a": variables.v}}}`, `[JSONPatch{op: "add", path: "/spec/x", value: 1}]`, "'b'", "true",
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"d"},"spec":{"containers":[{"name":"c","args":["x"]}]}}`))
	f.Add(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "c", args: ["y"]}]}}`, `[JSONPatch{op: "remove", path: "/metadata/x"}]`, "object.spec", "has(object.spec)",
		[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"template":{"spec":{"containers":[{"name":"c"}]}}}}`))
	f.Add(`Object{spec: Object.spec{size: 3}}`, `[JSONPatch{op: "test", path: "/spec/size", value: 2}, JSONPatch{op: "copy", from: "/spec", path: "/status"}]`, "1", "object.spec.size > 1",
		[]byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":2}}`))
	eng, err := engine.New(engine.WithClient(inmem.New()))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, apply, patch, variable, cond string, raw []byte) {
		if len(apply)+len(patch)+len(variable)+len(cond) > 4096 || len(raw) > 1<<16 {
			return
		}
		var obj map[string]any
		if json.Unmarshal(raw, &obj) != nil || obj == nil {
			return
		}
		q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
		src := `apiVersion: policies.kyverno.io/v1
kind: MutatingPolicy
metadata: {name: fuzz}
spec:
  reinvocationPolicy: IfNeeded
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
  variables:
  - {name: v, expression: ` + q(variable) + `}
  matchConditions:
  - {name: c, expression: ` + q(cond) + `}
  mutations:
  - {patchType: ApplyConfiguration, applyConfiguration: {expression: ` + q(apply) + `}}
  - {patchType: JSONPatch, jsonPatch: {expression: ` + q(patch) + `}}
---
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingAdmissionPolicy
metadata: {name: fuzz-map}
spec:
  reinvocationPolicy: IfNeeded
  failurePolicy: Ignore
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: ["*"], resources: ["*"]}
  mutations:
  - {patchType: JSONPatch, jsonPatch: {expression: ` + q(patch) + `}}
`
		docs, err := api.ReadDocuments(strings.NewReader(src), "fuzz.yaml")
		if err != nil {
			return
		}
		var policies []api.PolicyObject
		for _, d := range docs {
			p, err := api.DecodePolicy(d)
			if err != nil {
				return
			}
			policies = append(policies, p)
		}
		set, err := eng.Compile(policies...)
		if err != nil {
			return
		}
		before, _ := json.Marshal(obj)
		for _, req := range []*engine.Request{{Operation: api.Create, Object: obj}, {Operation: api.Update, Object: obj, OldObject: obj},
			{Object: obj, Background: true}} {
			resp, err := set.Mutate(context.Background(), req)
			if err != nil {
				continue
			}
			for _, r := range resp.Rules() {
				if strings.Contains(r.Message, "panicked") {
					t.Fatal(r.Message, r.Err)
				}
			}
		}
		if after, _ := json.Marshal(obj); string(after) != string(before) {
			t.Fatalf("the request's object was modified:\n%s\n%s", before, after)
		}
	})
}
