package celpolicy

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	celgo "github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/gavelpolicy/gavel/internal/cel"
	"github.com/gavelpolicy/gavel/internal/typeconv"
)

func jsonObj(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func apply(expr string) Mutation {
	return Mutation{PatchType: PatchTypeApplyConfiguration, Expression: expr}
}
func patch(expr string) Mutation { return Mutation{PatchType: PatchTypeJSONPatch, Expression: expr} }

const mutPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},
 "spec":{"containers":[{"name":"c","image":"nginx","args":["x"]}]}}`

func TestMutate(t *testing.T) {
	kyverno, err := cel.NewEnv(append(EnvOptions(), cel.WithPatchTypes())...)
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := typeconv.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	ignore := admissionregistrationv1.Ignore
	tests := []struct {
		name   string
		sem    Semantics
		ssa    bool
		spec   MutatingSpec
		status Status
		want   string // the object, or the error's text
		audits map[string]string
	}{{
		name: "apply configuration", status: Pass,
		spec: MutatingSpec{Mutations: []Mutation{apply(`Object{metadata: Object.metadata{labels: {"b": "2"}}}`)}},
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2"}},"spec":{"containers":[{"name":"c","image":"nginx","args":["x"]}]}}`,
	}, {
		name: "JSON patch, the next mutation sees its result", status: Pass,
		spec: MutatingSpec{Mutations: []Mutation{
			patch(`[JSONPatch{op: "add", path: "/metadata/labels/b", value: "2"}]`),
			patch(`[JSONPatch{op: "add", path: "/metadata/labels/c", value: object.metadata.labels.b + "3"}]`)}},
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2","c":"23"}},"spec":{"containers":[{"name":"c","image":"nginx","args":["x"]}]}}`,
	}, {
		name: "variables keep the value of their first use", status: Pass,
		spec: MutatingSpec{Variables: []admissionregistrationv1.Variable{{Name: "n", Expression: "size(object.metadata.labels)"}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "one", Expression: "variables.n == 1"}},
			Mutations: []Mutation{
				patch(`[JSONPatch{op: "add", path: "/metadata/labels/b", value: "2"}]`),
				patch(`[JSONPatch{op: "add", path: "/metadata/labels/n", value: string(variables.n)}]`)}},
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2","n":"1"}},"spec":{"containers":[{"name":"c","image":"nginx","args":["x"]}]}}`,
	}, {
		name: "a failed test operation leaves the object", status: Pass,
		spec: MutatingSpec{Mutations: []Mutation{patch(`[JSONPatch{op: "test", path: "/metadata/name", value: "q"}, JSONPatch{op: "remove", path: "/metadata/labels"}]`)}},
		want: mutPod,
	}, {
		name: "an empty list leaves no field, as in the API server's typed object", status: Pass,
		spec: MutatingSpec{Mutations: []Mutation{apply(`Object{spec: Object.spec{initContainers: []}}`)}},
		want: mutPod,
	}, {
		name:   "match condition false",
		spec:   MutatingSpec{MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "no", Expression: "false"}}, Mutations: []Mutation{patch(`[JSONPatch{op: "test", path: "/metadata/name", value: "p"}]`)}},
		status: NoMatch,
	}, {
		name:   "match condition error, whatever the failure policy (Kyverno)",
		spec:   MutatingSpec{FailurePolicy: &ignore, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "e", Expression: "object.nope == 1"}}, Mutations: []Mutation{patch(`[JSONPatch{op: "test", path: "/metadata/name", value: "p"}]`)}},
		status: Error, want: "no such key: nope",
	}, {
		name:   "match condition error ignored (API server)",
		sem:    APIServer,
		spec:   MutatingSpec{FailurePolicy: &ignore, MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "e", Expression: "object.nope == 1"}}, Mutations: []Mutation{patch(`[JSONPatch{op: "test", path: "/metadata/name", value: "p"}]`)}},
		status: NoMatch,
	}, {
		name:   "type names must follow the field path",
		spec:   MutatingSpec{Mutations: []Mutation{apply(`Object{metadata: Object.spec{labels: {"b": "2"}}}`)}},
		status: Error, want: `type mismatch: unexpected type name "Object.spec", expected "Object.metadata", which matches field name path from root Object type`,
	}, {
		name:   "atomic values are guarded",
		spec:   MutatingSpec{Mutations: []Mutation{apply(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "c", args: ["y"]}]}}`)}},
		status: Error, want: "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.containers[0].args",
	}, {
		name: "useServerSideApply replaces atomic values", status: Pass,
		ssa:  true,
		spec: MutatingSpec{Mutations: []Mutation{apply(`Object{spec: Object.spec{containers: [Object.spec.containers{name: "c", args: ["y"]}]}}`)}},
		want: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"nginx","args":["y"]}]}}`,
	}, {
		name: "the first error stops (Kyverno)",
		spec: MutatingSpec{Mutations: []Mutation{
			patch(`[JSONPatch{op: "add", path: "/metadata/labels/b", value: "2"}]`),
			patch(`[JSONPatch{op: "remove", path: "/metadata/nope"}]`),
			patch(`[JSONPatch{op: "add", path: "/metadata/labels/c", value: "3"}]`)}},
		status: Error, want: "JSON Patch: error in remove for path: '/metadata/nope': unable to remove nonexistent key: nope: missing value",
	}, {
		name: "a failed mutation is skipped (API server)",
		sem:  APIServer,
		spec: MutatingSpec{Mutations: []Mutation{
			patch(`[JSONPatch{op: "add", path: "/metadata/labels/b", value: "2"}]`),
			patch(`[JSONPatch{op: "remove", path: "/metadata/nope"}]`),
			patch(`[JSONPatch{op: "add", path: "/metadata/labels/c", value: "3"}]`)}},
		status: Error,
		want:   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2","c":"3"}},"spec":{"containers":[{"name":"c","image":"nginx","args":["x"]}]}}`,
	}, {
		name: "audit annotations after the mutations", status: Pass,
		spec: MutatingSpec{Mutations: []Mutation{patch(`[JSONPatch{op: "add", path: "/metadata/labels/b", value: "2"}]`)},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "b", ValueExpression: "string(object.metadata.labels.b)"}}},
		want:   `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1","b":"2"}},"spec":{"containers":[{"name":"c","image":"nginx","args":["x"]}]}}`,
		audits: map[string]string{"b": "2"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := kyverno
			if tt.sem == APIServer {
				env = apiserver
			}
			m, errs := CompileMutating(env, &tt.spec, tt.sem, MutatingOptions{ServerSideApply: tt.ssa}, field.NewPath("spec"))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			obj := jsonObj(t, mutPod)
			before, _ := json.Marshal(obj)
			o := m.Mutate(context.Background(), &cel.Input{Object: obj}, nil, schemas)
			if after, _ := json.Marshal(obj); string(after) != string(before) {
				t.Fatal("the input object was modified")
			}
			if o.Status != tt.status {
				t.Fatalf("status %v, want %v (%s)", o.Status, tt.status, o.Message)
			}
			if o.Status == Error && tt.sem == Kyverno {
				if o.Message != tt.want {
					t.Fatalf("message %q, want %q", o.Message, tt.want)
				}
				return
			}
			if o.Status == NoMatch {
				return
			}
			got, _ := json.Marshal(o.Object)
			if !reflect.DeepEqual(jsonObj(t, string(got)), jsonObj(t, tt.want)) {
				t.Fatalf("got %s\nwant %s", got, tt.want)
			}
			if !reflect.DeepEqual(o.AuditAnnotations, tt.audits) {
				t.Fatalf("audit annotations %v, want %v", o.AuditAnnotations, tt.audits)
			}
		})
	}
}

func TestCompileMutatingErrors(t *testing.T) {
	apiserver, err := cel.NewEnv()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec MutatingSpec
		want string
	}{
		{"no mutations", MutatingSpec{}, "spec.mutations: Required value: mutations must not be empty"},
		{"unknown patch type", MutatingSpec{Mutations: []Mutation{{PatchType: "Merge", Expression: "x"}}},
			`spec.mutations[0].patchType: Unsupported value: "Merge": supported values: "ApplyConfiguration", "JSONPatch"`},
		{"no expression", MutatingSpec{Mutations: []Mutation{apply(" ")}}, "spec.mutations[0].applyConfiguration.expression: Required value: expression is required"},
		{"not an Object", MutatingSpec{Mutations: []Mutation{apply(`{"a": 1}`)}}, "must evaluate to Object but got map(string, int)"},
		{"not JSON patches", MutatingSpec{Mutations: []Mutation{patch(`[1]`)}}, "must evaluate to list(JSONPatch) but got list(int)"},
		{"patch types only in mutations (API server)", MutatingSpec{Variables: []admissionregistrationv1.Variable{{Name: "o", Expression: "Object{}"}},
			Mutations: []Mutation{patch(`[JSONPatch{op: "test", path: "/metadata/name", value: "p"}]`)}}, "spec.variables[0].expression"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := CompileMutating(apiserver, &tt.spec, APIServer, MutatingOptions{}, field.NewPath("spec"))
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tt.want) {
				t.Fatalf("errors %v, want %q", errs, tt.want)
			}
		})
	}
}

// TestTargetsNull checks that a target expression that gives null (the
// resource library's Get of an object that does not exist) selects no
// target, and that an object or a list of them are the targets.
func TestTargetsNull(t *testing.T) {
	env, err := cel.NewEnv(append(EnvOptions(), cel.WithPatchTypes(),
		cel.WithVariable("found", celgo.MapType(celgo.StringType, celgo.AnyType)))...)
	if err != nil {
		t.Fatal(err)
	}
	spec := MutatingSpec{TargetExpression: "found", Mutations: []Mutation{apply(`Object{metadata: Object.metadata{labels: {"b": "2"}}}`)}}
	m, errs := CompileMutating(env, &spec, Kyverno, MutatingOptions{}, field.NewPath("spec"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	obj := map[string]any{"metadata": map[string]any{"name": "t"}}
	tests := []struct {
		name  string
		found any
		want  int
	}{
		{"null", nil, 0},
		{"an object", obj, 1},
		{"a list", map[string]any{"items": []any{obj, obj}}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &cel.Input{Object: jsonObj(t, mutPod), Extra: map[string]any{"found": tt.found}}
			got, err := m.Targets(context.Background(), in, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.want {
				t.Errorf("%d targets, want %d", len(got), tt.want)
			}
		})
	}
}
