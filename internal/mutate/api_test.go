package mutate

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestSchema(t *testing.T) {
	pod := schemaFor("v1", "Pod")
	if pod == nil {
		t.Fatal("no schema for v1/Pod")
	}
	tests := []struct {
		name     string
		sch      *schemaNode
		assoc    bool
		keys     []string
		strategy string
	}{
		{"containers", pod.field("spec").field("containers"), true, []string{"name"}, "merge"},
		{"volumes", pod.field("spec").field("volumes"), true, []string{"name"}, "merge,retainKeys"},
		{"ports", pod.field("spec").field("containers").elements().field("ports"), true, []string{"containerPort", "protocol"}, "merge"},
		{"volumeMounts", pod.field("spec").field("containers").elements().field("volumeMounts"), true, []string{"mountPath"}, "merge"},
		{"env", pod.field("spec").field("containers").elements().field("env"), true, []string{"name"}, "merge"},
		{"args", pod.field("spec").field("containers").elements().field("args"), false, nil, ""},
		{"tolerations", pod.field("spec").field("tolerations"), false, nil, ""},
		{"finalizers", pod.field("metadata").field("finalizers"), true, nil, "merge"},
		{"ownerReferences", pod.field("metadata").field("ownerReferences"), true, []string{"uid"}, "merge"},
		{"topologySpreadConstraints", pod.field("spec").field("topologySpreadConstraints"), true, []string{"topologyKey", "whenUnsatisfiable"}, "merge"},
		{"service ports", schemaFor("v1", "Service").field("spec").field("ports"), true, []string{"port", "protocol"}, "merge"},
		{"deployment containers", schemaFor("apps/v1", "Deployment").field("spec").field("template").field("spec").field("containers"), true, []string{"name"}, "merge"},
		{"cronjob containers", schemaFor("batch/v1", "CronJob").field("spec").field("jobTemplate").field("spec").field("template").field("spec").field("containers"), true, []string{"name"}, "merge"},
		{"webhooks", schemaFor("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration").field("webhooks"), true, []string{"name"}, "merge"},
	}
	for _, tt := range tests {
		if tt.sch == nil {
			t.Errorf("%s: no schema", tt.name)
			continue
		}
		if tt.sch.associative() != tt.assoc || tt.sch.strategy != tt.strategy || !reflect.DeepEqual(tt.sch.keys, tt.keys) {
			t.Errorf("%s: associative=%v strategy=%q keys=%v", tt.name, tt.sch.associative(), tt.sch.strategy, tt.sch.keys)
		}
	}
	// Fields unknown to the Kubernetes 1.21 schema have no schema.
	if s := pod.field("spec").field("schedulingGates"); s != nil {
		t.Errorf("schedulingGates should have no schema")
	}
	// Leaves and maps.
	if s := pod.field("metadata").field("creationTimestamp"); s == nil || s.field("x") != nil {
		t.Errorf("creationTimestamp should be a leaf")
	}
	if s := pod.field("metadata").field("labels").field("any"); s == nil {
		t.Errorf("labels values should have a schema")
	}
	if s := pod.field("spec").field("containers").elements().field("resources").field("limits").field("cpu"); s == nil {
		t.Errorf("resource quantities should have a schema")
	}
	if schemaFor("example.com/v1", "Widget") != nil || schemaFor("apps/v1beta1", "Deployment") != nil {
		t.Errorf("unknown kinds must have no schema")
	}
}

func TestCompileErrors(t *testing.T) {
	for _, p := range []any{nil, []any{map[string]any{}}, "x", float64(1)} {
		if _, err := CompileStrategicMerge(p); !errors.Is(err, ErrInvalidPatch) {
			t.Errorf("CompileStrategicMerge(%#v): got %v", p, err)
		}
	}
	if _, err := CompileStrategicMerge(map[string]any{"a": struct{}{}}); !errors.Is(err, ErrUnsupportedValue) {
		t.Errorf("struct in patch: got %v", err)
	}
	if _, err := CompileStrategicMerge(map[string]any{"a": map[string]any{"b": math.NaN()}}); !errors.Is(err, ErrUnsupportedValue) || !strings.Contains(err.Error(), "a.b") {
		t.Errorf("NaN in patch: got %v", err)
	}
	bad := map[string]any{
		"empty":          "",
		"not a list":     `{"op": "add"}`,
		"unknown op":     `[{"op": "merge", "path": "/a"}]`,
		"no path":        `[{"op": "add", "value": 1}]`,
		"no value":       "- op: add\n  path: /a\n",
		"move no from":   "- op: move\n  path: /a\n",
		"not yaml":       "- op: [",
		"tree no op":     []any{map[string]any{"path": "/a"}},
		"tree bad value": []any{map[string]any{"op": "add", "path": "/a", "value": complex(1, 1)}},
	}
	for name, ops := range bad {
		if _, err := CompileJSONPatch(ops); err == nil {
			t.Errorf("%s: CompileJSONPatch succeeded", name)
		}
	}
	ok := []any{
		"- op: remove\n  path: /a\n",
		`[{"op":"add","path":"/a","value":null}]`,
		[]any{map[string]any{"op": "replace", "path": "/a", "value": int64(1)}},
		[]byte(`[{"op":"copy","from":"/a","path":"/b"}]`),
	}
	for _, ops := range ok {
		if _, err := CompileJSONPatch(ops); err != nil {
			t.Errorf("CompileJSONPatch(%v): %v", ops, err)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	smp, _ := CompileStrategicMerge(map[string]any{"spec": map[string]any{"x": "y"}})
	if _, err := objectOf(smp.Mutate(nil)); !errors.Is(err, ErrApply) {
		t.Errorf("nil resource: %v", err)
	}
	if _, err := objectOf(smp.Mutate(map[string]any{"spec": map[string]any{"bad": make(chan int)}})); !errors.Is(err, ErrUnsupportedValue) || !strings.Contains(err.Error(), "spec.bad") {
		t.Errorf("channel in resource: %v", err)
	}
	if _, err := objectOf(smp.Mutate(map[string]any{"spec": "scalar"})); !errors.Is(err, ErrKindMismatch) {
		t.Errorf("kind mismatch: %v", err)
	}
	jp, _ := CompileJSONPatch(`[{"op":"replace","path":"/nope","value":1}]`)
	var e *Error
	if _, err := objectOf(jp.Mutate(map[string]any{})); !errors.As(err, &e) || e.Path != "/nope" || !errors.Is(err, ErrApply) {
		t.Errorf("missing path: %v", err)
	}
}

// TestValueTypes checks that numbers of every Go type are accepted and that
// untouched values keep their representation (no int to float drift).
func TestValueTypes(t *testing.T) {
	resource := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "web", "generation": int64(1 << 60)},
		"spec": map[string]any{
			"replicas": int64(3),
			"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": "app", "ports": []any{map[string]any{"containerPort": json.Number("80")}}},
			}}},
			"minReadySeconds": 10,
		},
	}
	smp, err := CompileStrategicMerge(map[string]any{"spec": map[string]any{"revisionHistoryLimit": json.Number("2")}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := objectOf(smp.Mutate(resource))
	if err != nil {
		t.Fatal(err)
	}
	spec := out["spec"].(map[string]any)
	if spec["replicas"] != int64(3) || spec["minReadySeconds"] != 10 || spec["revisionHistoryLimit"] != json.Number("2") {
		t.Errorf("strategic merge changed number types: %#v", spec)
	}
	if out["metadata"].(map[string]any)["generation"] != int64(1<<60) {
		t.Errorf("large integer changed: %#v", out["metadata"])
	}
	jp, err := CompileJSONPatch("- op: replace\n  path: /spec/replicas\n  value: 5\n")
	if err != nil {
		t.Fatal(err)
	}
	out, err = objectOf(jp.Mutate(resource))
	if err != nil {
		t.Fatal(err)
	}
	spec = out["spec"].(map[string]any)
	if spec["replicas"] != float64(5) || spec["minReadySeconds"] != 10 {
		t.Errorf("json patch numbers: %#v", spec)
	}
	port := spec["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)["ports"].([]any)[0].(map[string]any)
	if port["containerPort"] != json.Number("80") {
		t.Errorf("untouched json.Number changed: %#v", port)
	}
	if out["metadata"].(map[string]any)["generation"] != int64(1<<60) {
		t.Errorf("large integer changed: %#v", out["metadata"])
	}
	b, _ := json.Marshal(out)
	if !strings.Contains(string(b), `"replicas":5`) || !strings.Contains(string(b), `"containerPort":80`) {
		t.Errorf("JSON output drifted: %s", b)
	}
}

func TestOtherContainerTypes(t *testing.T) {
	smp, _ := CompileStrategicMerge(map[string]any{"metadata": map[string]string{"name": "x"}})
	out, err := objectOf(smp.Mutate(map[string]any{"metadata": map[string]any{"labels": map[string]string{"a": "b"}}, "list": []string{"a"}}))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"metadata": map[string]any{"name": "x", "labels": map[string]any{"a": "b"}}, "list": []any{"a"}}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("got %#v", out)
	}
}

func TestConcurrentApply(t *testing.T) {
	smp, err := CompileStrategicMerge(map[string]any{"spec": map[string]any{"containers": []any{
		map[string]any{"(name)": "*", "securityContext": map[string]any{"+(runAsNonRoot)": true}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	jp, err := CompileJSONPatch(`[{"op":"add","path":"/metadata/labels/x","value":"y"}]`)
	if err != nil {
		t.Fatal(err)
	}
	resource := benchPod()
	want, _ := objectOf(smp.Mutate(resource))
	wantJP, _ := objectOf(jp.Mutate(resource))
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				got, err := objectOf(smp.Mutate(resource))
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("concurrent strategic merge differs: %v", err)
					return
				}
				got, err = objectOf(jp.Mutate(resource))
				if err != nil || !reflect.DeepEqual(got, wantJP) {
					t.Errorf("concurrent JSON patch differs: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestDiff(t *testing.T) {
	tests := []struct {
		name      string
		a, b      string
		wantPatch string
	}{
		{"equal", `{"a":1}`, `{"a":1.0}`, `[]`},
		{"add remove replace", `{"a":1,"b":2}`, `{"b":3,"c":null}`,
			`[{"op":"remove","path":"/a"},{"op":"replace","path":"/b","value":3},{"op":"add","path":"/c","value":null}]`},
		{"escaping", `{}`, `{"a/b":{"c~d":1}}`, `[{"op":"add","path":"/a~1b","value":{"c~d":1}}]`},
		{"prepend", `{"l":[{"n":"a"}]}`, `{"l":[{"n":"new"},{"n":"a"}]}`, `[{"op":"add","path":"/l/0","value":{"n":"new"}}]`},
		{"append", `{"l":[1,2]}`, `{"l":[1,2,3]}`, `[{"op":"add","path":"/l/2","value":3}]`},
		{"insert middle", `{"l":[1,3]}`, `{"l":[1,2,3]}`, `[{"op":"add","path":"/l/1","value":2}]`},
		{"remove middle", `{"l":[1,2,3,4]}`, `{"l":[1,4]}`, `[{"op":"remove","path":"/l/1"},{"op":"remove","path":"/l/1"}]`},
		{"nested change in element", `{"l":[{"n":"a","v":1},{"n":"b"}]}`, `{"l":[{"n":"a","v":2},{"n":"b"}]}`,
			`[{"op":"replace","path":"/l/0/v","value":2}]`},
		{"kind change", `{"a":[1]}`, `{"a":{"b":1}}`, `[{"op":"replace","path":"/a","value":{"b":1}}]`},
		{"root", `[1]`, `"x"`, `[{"op":"replace","path":"","value":"x"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a, b any
			_ = json.Unmarshal([]byte(tt.a), &a)
			_ = json.Unmarshal([]byte(tt.b), &b)
			got, err := DiffJSON(a, b)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.wantPatch {
				t.Errorf("got  %s\nwant %s", got, tt.wantPatch)
			}
			if am, ok := a.(map[string]any); ok {
				if bm, ok := b.(map[string]any); ok {
					checkDiffRoundTrip(t, am, bm)
				}
			}
		})
	}
	if _, err := Diff(map[string]any{"a": make(chan int)}, nil); !errors.Is(err, ErrUnsupportedValue) {
		t.Errorf("unsupported value: %v", err)
	}
}

func TestOperationJSON(t *testing.T) {
	ops := []Operation{
		{Op: "add", Path: "/a", Value: nil},
		{Op: "remove", Path: "/b", Value: "ignored"},
		{Op: "move", From: "/c", Path: "/d"},
	}
	b, err := json.Marshal(ops)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"add","path":"/a","value":null},{"op":"remove","path":"/b"},{"op":"move","path":"/d","from":"/c"}]`
	if string(b) != want {
		t.Errorf("got %s", b)
	}
	jp, err := CompileJSONPatch(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if got := jp.Operations(); len(got) != 3 || got[2].From != "/c" {
		t.Errorf("operations: %#v", got)
	}
}

// objectOf is the object of a Mutate's result.
func objectOf(r Result, err error) (map[string]any, error) {
	if err != nil {
		return nil, err
	}
	return r.Object, nil
}
