package deepcopy

import (
	"reflect"
	"testing"
)

func TestValue(t *testing.T) {
	leaf := []string{"shared"}
	src := map[string]any{
		"s": "x", "f": 1.5, "i": 3, "b": true, "n": nil, "typed": leaf,
		"m":      map[string]any{"l": []any{map[string]any{"k": "v"}, 2.0, []any{}}},
		"nilmap": map[string]any(nil), "nillist": []any(nil),
	}
	want := map[string]any{
		"s": "x", "f": 1.5, "i": 3, "b": true, "n": nil, "typed": leaf,
		"m":      map[string]any{"l": []any{map[string]any{"k": "v"}, 2.0, []any{}}},
		"nilmap": map[string]any(nil), "nillist": []any(nil),
	}
	got := Object(src)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("copy %v, want %v", got, want)
	}
	// the copy's maps and lists are its own
	got["m"].(map[string]any)["l"].([]any)[0].(map[string]any)["k"] = "changed"
	got["m"].(map[string]any)["new"] = 1
	if !reflect.DeepEqual(src, want) {
		t.Errorf("the source changed: %v", src)
	}
	if Object(nil) != nil || Value(nil) != nil {
		t.Error("nil is not kept")
	}
	if v := Value("x"); v != "x" {
		t.Errorf("leaf %v", v)
	}
}
