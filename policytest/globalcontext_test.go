package policytest

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestMockGlobalContext(t *testing.T) {
	e := &env{t: &Test{}, dir: "testdata/features/global-context"}
	data := json.RawMessage(`{"a":{"b":[1,2]}}`)
	tests := []struct {
		name    string
		entries []globalContextEntryValue
		err     string
	}{
		{"no name", []globalContextEntryValue{{Data: data}}, "name is required"},
		{"duplicate", []globalContextEntryValue{{Name: "x", Data: data}, {Name: "x", Data: data}}, `duplicate name "x"`},
		{"no source", []globalContextEntryValue{{Name: "x"}}, "exactly one of data, resources and resourceFiles"},
		{"two sources", []globalContextEntryValue{{Name: "x", Data: data, ResourceFiles: []string{"registries.yaml"}}}, "exactly one of"},
		{"projection without path", []globalContextEntryValue{{Name: "x", Data: data, Projections: []globalContextProjection{{Name: "p"}}}}, "path is required"},
	}
	for _, tt := range tests {
		if _, err := e.newMockGlobalContext(tt.entries); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.err)
		}
	}
	g, err := e.newMockGlobalContext([]globalContextEntryValue{
		{Name: "plain", Data: data},
		{Name: "narrowed", Data: data, FieldPath: "a"},
		{Name: "projected", Data: data, FieldPath: "a", Projections: []globalContextProjection{{Name: "n", Path: "length(b)"}, {Name: "first", Path: "b[0]"}}},
		{Name: "files", ResourceFiles: []string{"registries.yaml"}, FieldPath: "[].metadata.name"},
		{Name: "broken", Data: data, FieldPath: "a.("},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"plain":     map[string]any{"a": map[string]any{"b": []any{1.0, 2.0}}},
		"narrowed":  map[string]any{"b": []any{1.0, 2.0}},
		"projected": map[string]any{"n": 2.0, "first": 1.0},
		"files":     []any{"registry-a", "registry-b"},
	}
	for name, w := range want {
		got, err := g.GlobalContextEntry(context.Background(), name)
		if err != nil || !reflect.DeepEqual(got, w) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, w)
		}
	}
	if _, err := g.GlobalContextEntry(context.Background(), "broken"); err == nil || !strings.Contains(err.Error(), "fieldPath") {
		t.Errorf("broken: error %v, want a fieldPath error", err)
	}
	if _, err := g.GlobalContextEntry(context.Background(), "unknown"); err == nil {
		t.Error("unknown entry: no error")
	}
}
