package jmespath

import (
	"reflect"
	"testing"
)

// TestPlainPathAgreesWithInterpreter checks the direct walk of plain paths
// against the full interpreter.
func TestPlainPathAgreesWithInterpreter(t *testing.T) {
	data := map[string]any{
		"a": map[string]any{
			"b":   []any{map[string]any{"c": "x"}, "y"},
			"d.e": 1.0,
			"n":   nil,
		},
		"list": []any{1.0, 2.0},
	}
	exprs := []string{
		"a", "a.b", "a.b[0]", "a.b[0].c", "a.b[1]", "a.b[1].c", "a.b[5]", "a.\"d.e\"",
		"a.n", "a.n.x", "missing", "missing.x", "list[0]", "list.a", "a.b.c", "a[0]",
	}
	i, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range exprs {
		q, err := i.Compile(e)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if q.path == nil {
			t.Errorf("%s: not recognised as a plain path", e)
			continue
		}
		fast, _ := q.SearchCanonical(data)
		slow := *q
		slow.path = nil
		want, err := slow.SearchCanonical(data)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if !reflect.DeepEqual(fast, want) {
			t.Errorf("%s: walk = %#v, interpreter = %#v", e, fast, want)
		}
	}
	for _, e := range []string{"a.b[-1]", "a.b[*].c", "length(a)", "@", "a || b", "a.b[0:1]"} {
		q, err := i.Compile(e)
		if err != nil {
			t.Fatalf("%s: %v", e, err)
		}
		if q.path != nil {
			t.Errorf("%s: must not be a plain path", e)
		}
	}
}
