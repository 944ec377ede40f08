package jmespath

import (
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
)

func TestNumbersFromEmbedders(t *testing.T) {
	intr := mustNew(t)
	data := map[string]any{
		"int":     3,
		"int64":   int64(4),
		"uint8":   uint8(5),
		"float32": float32(1.5),
		"number":  json.Number("6.25"),
		"list":    []any{1, int32(2), json.Number("3")},
		"strings": []string{"a", "b"},
		"labels":  map[string]string{"app": "web"},
		"typed":   []map[string]any{{"port": 80}},
		"nested":  map[string]any{"deep": []any{map[string]any{"n": int64(7)}}},
	}
	runCases(t, intr, []fnCase{
		{expr: "add(int, int64)", data: data, want: 7.0},
		{expr: "int == `3`", data: data, want: true},
		{expr: "uint8", data: data, want: 5.0},
		{expr: "float32", data: data, want: 1.5},
		{expr: "number", data: data, want: 6.25},
		{expr: "sum(list)", data: data, want: 6.0},
		{expr: "max(list)", data: data, want: 3.0},
		{expr: "join(',', strings)", data: data, want: "a,b"},
		{expr: "label_match(`{\"app\":\"web\"}`, labels)", data: data, want: true},
		{expr: "typed[0].port", data: data, want: 80.0},
		{expr: "nested.deep[0].n", data: data, want: 7.0},
		{expr: "type(int)", data: data, want: "number"},
		{expr: "@", data: 42, want: 42.0},
		{name: "nil typed slice", expr: "@", data: []string(nil), want: []any{}},
	})
	// The caller's tree is left untouched.
	if _, ok := data["int"].(int); !ok {
		t.Fatal("input was modified")
	}
	if _, ok := data["list"].([]any)[0].(int); !ok {
		t.Fatal("input list was modified")
	}
	if _, ok := data["nested"].(map[string]any)["deep"].([]any)[0].(map[string]any)["n"].(int64); !ok {
		t.Fatal("nested input was modified")
	}
}

func TestNormalizeNoCopyWhenCanonical(t *testing.T) {
	in := map[string]any{"a": []any{1.0, "x", map[string]any{"b": true}}}
	out, changed, err := normalize(in, "")
	if err != nil || changed {
		t.Fatalf("changed=%v err=%v", changed, err)
	}
	if reflect.ValueOf(out).Pointer() != reflect.ValueOf(in).Pointer() {
		t.Fatal("canonical tree was copied")
	}
}

func TestInvalidJSONNumber(t *testing.T) {
	_, err := mustNew(t).Search("a", map[string]any{"spec": map[string]any{"ports": []any{json.Number("12x")}}})
	var ie *InputError
	if !errors.As(err, &ie) || ie.Path != "spec.ports[0]" {
		t.Fatalf("error = %v, want InputError at spec.ports[0]", err)
	}
	if err.Error() != `invalid input data at spec.ports[0]: invalid number "12x"` {
		t.Fatalf("message = %q", err.Error())
	}
}

func TestConcurrentUse(t *testing.T) {
	intr := mustNew(t, WithRandom(seeded(5)), WithCacheSize(4))
	pod := readJSON(t, "admission-pod.json")
	q, err := intr.Compile("request.object.spec.containers[].image")
	if err != nil {
		t.Fatal(err)
	}
	exprs := []string{
		"request.object.spec.containers[?regex_match('^app-[0-3]$', name)].name | length(@)",
		"sum(request.object.spec.containers[].resources.requests.memory)",
		"random('[a-z]{8}')",
		"image_normalize(request.object.spec.initContainers[0].image)",
		"time_now_utc()",
		"to_upper(request.object.metadata.name)",
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 50; k++ {
				if got, err := q.Search(pod); err != nil || len(got.([]any)) != 4 {
					errs <- err
					return
				}
				if _, err := intr.Search(exprs[(g+k)%len(exprs)], pod); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestCanonicalAndSearchCanonical(t *testing.T) {
	intr := mustNew(t)
	q, err := intr.Compile("add(spec.replicas, `1`)")
	if err != nil {
		t.Fatal(err)
	}
	raw := map[string]any{"spec": map[string]any{"replicas": 2}}
	canon, err := Canonical(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := q.SearchCanonical(canon); err != nil || got != 3.0 {
		t.Fatalf("SearchCanonical = %v, %v", got, err)
	}
	// Without normalisation an int is not a number: an error, not a panic.
	if _, err := q.SearchCanonical(raw); err == nil {
		t.Fatal("want an error for a non-canonical int")
	}
	if _, err := Canonical(json.Number("x")); err == nil {
		t.Fatal("want an error for an invalid json.Number")
	}
}
