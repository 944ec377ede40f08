package mutate

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// TestPreprocess checks the anchor preprocessing alone: the patch it
// produces for a resource, or the condition that failed.
func TestPreprocess(t *testing.T) {
	tests := []struct {
		name      string
		patch     string
		resource  string
		want      string // expected patch; ignored when condition is set
		condition string // expected *ConditionError message
		global    bool
	}{
		{
			name: "conditional list element bound by name for every container",
			patch: `{"spec":{"containers":[{"(name)":"*","securityContext":{"+(allowPrivilegeEscalation)":false,
				"+(capabilities)":{"drop":["NET_CAP"]},"+(privileged)":false}}],
				"initContainers":[{"(name)":"*","securityContext":{"+(privileged)":false}}]}}`,
			resource: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{
				"containers":[{"name":"c1","image":"ubuntu"},{"name":"c2","image":"ubuntu"}],
				"initContainers":[{"name":"i1","image":"ubuntu"}]}}`,
			want: `{"spec":{"containers":[
				{"name":"c1","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["NET_CAP"]},"privileged":false}},
				{"name":"c2","securityContext":{"allowPrivilegeEscalation":false,"capabilities":{"drop":["NET_CAP"]},"privileged":false}}],
				"initContainers":[{"name":"i1","securityContext":{"privileged":false}}]}}`,
		},
		{
			name:  "global anchor in a list holds for one element",
			patch: `{"metadata":{"annotations":{"+(safe-to-evict)":"true"}},"spec":{"volumes":[{"<(emptyDir)":{}}]}}`,
			resource: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"volumes":[
				{"name":"cache","emptyDir":{}},{"name":"tok","secret":{"secretName":"t"}}]}}`,
			want: `{"metadata":{"annotations":{"safe-to-evict":"true"}}}`,
		},
		{
			name:     "null patch value is kept",
			patch:    `{"metadata":null}`,
			resource: `{"metadata":{"name":"hello"}}`,
			want:     `{"metadata":null}`,
		},
		{
			name:     "plain field added to every matching element",
			patch:    `{"spec":{"containers":[{"(name)":"*","(image)":"gcr.io/busybox:*","new":"x"}],"imagePullSecrets":[{"name":"regcred"}]}}`,
			resource: `{"spec":{"containers":[{"name":"hello","image":"gcr.io/busybox:latest"}]}}`,
			want:     `{"spec":{"containers":[{"name":"hello","new":"x"}],"imagePullSecrets":[{"name":"regcred"}]}}`,
		},
		{
			name:     "element of conditions only is dropped",
			patch:    `{"spec":{"containers":[{"(image)":"gcr.io/busybox:*"}],"imagePullSecrets":[{"name":"regcred"}]}}`,
			resource: `{"spec":{"containers":[{"name":"a","image":"gcr.io/busybox:1"},{"name":"b","image":"gcr.io/nginx:1"}]}}`,
			want:     `{"spec":{"imagePullSecrets":[{"name":"regcred"}]}}`,
		},
		{
			name:     "existing add-if-not-present key is dropped, empty maps removed",
			patch:    `{"metadata":{"annotations":{"+(a1)":"x","+(a2)":"y"},"labels":{"+(l1)":"z"}}}`,
			resource: `{"metadata":{"annotations":{"a1":"old"},"labels":{"l1":"old","l2":"old"}}}`,
			want:     `{"metadata":{"annotations":{"a2":"y"}}}`,
		},
		{
			name:     "all add-if-not-present keys present gives an empty patch",
			patch:    `{"metadata":{"annotations":{"+(a1)":"x"}}}`,
			resource: `{"metadata":{"annotations":{"a1":"old"}}}`,
			want:     `{}`,
		},
		{
			name:      "global anchor on a map fails",
			patch:     `{"metadata":{"labels":{"+(x)":"y"}},"spec":{"volumes":[{"<(hostPath)":{"path":"*"}}]}}`,
			resource:  `{"spec":{"volumes":[{"name":"v","emptyDir":{}}]}}`,
			condition: `global condition failed: could not found "hostPath" key in the resource`,
			global:    true,
		},
		{
			name: "condition on a list value",
			patch: `{"spec":{"(volumes)":[{"(hostPath)":{"path":"/var/run/docker.sock"}}],
				"containers":[{"(image)":"*:latest","imagePullPolicy":"Always"}]}}`,
			resource: `{"spec":{"containers":[{"name":"nginx","image":"nginx:latest"},{"name":"bb","image":"busybox:latest"}],
				"volumes":[{"name":"v","hostPath":{"path":"/var/run/docker.sock"}}]}}`,
			want: `{"spec":{"containers":[{"imagePullPolicy":"Always","name":"nginx"},{"imagePullPolicy":"Always","name":"bb"}]}}`,
		},
		{
			name:      "missing conditional key fails",
			patch:     `{"metadata":{"labels":{"(key1)":"value1"}},"spec":{"containers":[{"name":"busybox"}]}}`,
			resource:  `{"metadata":{"name":"hello"},"spec":{"containers":[{"name":"hello"}]}}`,
			condition: `condition failed: could not found "key1" key in the resource`,
		},
		{
			name:     "add-if-not-present inside a matched conditional value",
			patch:    `{"spec":{"volumes":[{"(emptyDir)":{"+(sizeLimit)":"20Mi"},"name":"*"}]}}`,
			resource: `{"spec":{"volumes":[{"emptyDir":{},"name":"vol02"}]}}`,
			want:     `{"spec":{"volumes":[{"emptyDir":{"sizeLimit":"20Mi"},"name":"vol02"}]}}`,
		},
		{
			name:     "add-if-not-present in a list of a missing parent",
			patch:    `{"spec":{"template":{"spec":{"containers":[{"(name)":"*","resources":{"limits":{"+(memory)":"300Mi","+(cpu)":"100"}}}]}}}}`,
			resource: `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","resources":{"limits":{"cpu":"50m"}}}]}}}}`,
			want:     `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","resources":{"limits":{"memory":"300Mi"}}}]}}}}`,
		},
		{
			name:     "conditions in nested lists",
			patch:    `{"spec":{"containers":[{"(name)":"app","env":[{"(name)":"LOG_*","value":"info"}]}]}}`,
			resource: `{"spec":{"containers":[{"name":"app","env":[{"name":"LOG_LEVEL","value":"debug"},{"name":"X","value":"y"}]}]}}`,
			want:     `{"spec":{"containers":[{"name":"app","env":[{"name":"LOG_LEVEL","value":"info"}]}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			patch := mustNode(t, tt.patch)
			resource := mustNode(t, tt.resource)
			err := preprocess(patch, resource)
			if tt.condition != "" {
				var ce *ConditionError
				if !errors.As(err, &ce) {
					t.Fatalf("want condition error %q, got %v", tt.condition, err)
				}
				if ce.Error() != tt.condition || ce.Global != tt.global {
					t.Fatalf("got condition %q (global %v), want %q (global %v)", ce.Error(), ce.Global, tt.condition, tt.global)
				}
				return
			}
			if err != nil {
				t.Fatalf("preprocess: %v", err)
			}
			got, err := toValue(patch, nil)
			if err != nil {
				t.Fatal(err)
			}
			var want any
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				gb, _ := json.Marshal(got)
				t.Fatalf("got patch %s\nwant       %s", gb, tt.want)
			}
		})
	}
}

func mustNode(t *testing.T, s string) *node {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad JSON %s: %v", s, err)
	}
	n, err := fromValue(v, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestParseAnchor(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		kind anchorKind
		key  string
	}{
		{"(name)", true, anchorCondition, "name"},
		{"<(image)", true, anchorGlobal, "image"},
		{"+(a.b/c)", true, anchorAdd, "a.b/c"},
		{"X(hostPath)", true, anchorNegation, "hostPath"},
		{"=(x)", true, anchorEquality, "x"},
		{"^(x)", true, anchorExistence, "x"},
		{"()", false, 0, ""},
		{"+()", false, 0, ""},
		{"name", false, 0, ""},
		{"(name", false, 0, ""},
		{"+name)", false, 0, ""},
		{"Y(name)", false, 0, ""},
		{"((a))", true, anchorCondition, "(a)"},
	}
	for _, tt := range tests {
		a, ok := parseAnchor(tt.in)
		if ok != tt.ok || (ok && (a.kind != tt.kind || a.key != tt.key)) {
			t.Errorf("parseAnchor(%q) = %+v, %v", tt.in, a, ok)
		}
		if ok && a.String() != tt.in {
			t.Errorf("anchor %q prints as %q", tt.in, a.String())
		}
	}
}

// TestConditionPath: the condition a Result reports names the anchor of
// the element that decided (the last one), in every mode.
func TestConditionPath(t *testing.T) {
	sm, err := CompileStrategicMerge(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"+(a)": "b"}},
		"spec": map[string]any{
			"volumes":    []any{map[string]any{"<(emptyDir)": map[string]any{}}},
			"containers": []any{map[string]any{"(name)": "x", "image": "y"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p"}, "spec": map[string]any{
		"containers": []any{map[string]any{"name": "a"}, map[string]any{"name": "b"}},
		"volumes":    []any{map[string]any{"name": "v1", "hostPath": map[string]any{"path": "/x"}}, map[string]any{"name": "v2", "secret": map[string]any{}}},
	}}
	want := ConditionError{Global: true, Path: "spec.volumes[1].<(emptyDir)", Reason: `could not found "emptyDir" key in the resource`}
	for name, f := range map[string]func(map[string]any) (Result, error){
		"Mutate":          sm.Mutate,
		"copying":         func(r map[string]any) (Result, error) { return sm.mutate(r, false, true) },
		"MutateCanonical": func(r map[string]any) (Result, error) { return sm.MutateCanonical(r, nil) },
	} {
		r, err := f(res)
		if err != nil {
			t.Fatal(err)
		}
		if r.Condition == nil || *r.Condition != want || !r.Skipped {
			t.Errorf("%s: condition %+v (skipped %v), want %+v", name, r.Condition, r.Skipped, want)
		}
	}
}
