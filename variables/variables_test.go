package variables

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/jmespath"
)

func mustJSON(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return v
}

var data = map[string]any{
	"request": map[string]any{
		"operation": "CREATE",
		"object": map[string]any{
			"metadata": map[string]any{"name": "web", "labels": map[string]any{"app": "shop"}},
			"spec":     map[string]any{"replicas": 2.0, "paused": nil},
		},
	},
	"keys": map[string]any{"shop": "team-a"},
}

func TestSubstitute(t *testing.T) {
	for _, tt := range []struct {
		name, doc, want string
	}{
		{"whole value keeps its type", `{"r":"{{ request.object.spec.replicas }}"}`, `{"r":2}`},
		{"in a string: compact JSON", `{"s":"labels={{ request.object.metadata.labels }}"}`, `{"s":"labels={\"app\":\"shop\"}"}`},
		{"nested", `{"team":"{{ keys.{{ request.object.metadata.labels.app }} }}"}`, `{"team":"team-a"}`},
		{"map key", `{"{{ request.object.metadata.name }}":"x"}`, `{"web":"x"}`},
		{"escape", `{"s":"\\{{ request.operation }}"}`, `{"s":"{{ request.operation }}"}`},
		{"shallow form means the same", `{"s":"{{- request.operation }}"}`, `{"s":"CREATE"}`},
		{"functions", `{"s":"{{ to_lower(request.operation) }}-{{ length(request.object.metadata.name) }}"}`, `{"s":"create-3"}`},
		{"list", `{"l":["{{ request.operation }}",1,true,null]}`, `{"l":["CREATE",1,true,null]}`},
		{"reference with operator", `{"max":"4","min":"$(<=./../max)"}`, `{"max":"4","min":"<=4"}`},
		{"no variables", `{"a":{"b":[1,"two"]}}`, `{"a":{"b":[1,"two"]}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compile(mustJSON(t, tt.doc), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Substitute(data)
			if err != nil {
				t.Fatal(err)
			}
			if want := mustJSON(t, tt.want); !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v\nwant %#v", got, want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	deep := strings.Repeat("{{ a", 65) + strings.Repeat(" }}", 65)
	notFound := func(string) (any, bool, error) { return nil, false, nil }
	for _, tt := range []struct {
		name     string
		doc      any
		lookup   func(string) (any, bool, error) // nil: Substitute(data)
		compile  string                          // error of Compile
		subst    string                          // error of Substitute
		notFound bool
	}{
		{name: "unresolved", doc: map[string]any{"a": map[string]any{"b": "{{ request.missing }}"}},
			subst: "variable request.missing not resolved at path /a/b", notFound: true},
		{name: "null is not found", doc: "{{ request.object.spec.paused }}",
			subst: "variable request.object.spec.paused not resolved at path", notFound: true},
		{name: "unknown function", doc: map[string]any{"a": "{{ nope(@) }}"},
			compile: "variables: {{ nope(@) }} at path /a: "},
		{name: "syntax", doc: map[string]any{"a": "x-{{ request.[ }}"},
			compile: "variables: {{ request.[ }} at path /a: "},
		{name: "evaluation error", doc: map[string]any{"a": "{{ divide(`1`, `0`) }}"},
			subst: "failed to resolve divide(`1`, `0`) at path /a"},
		{name: "lookup error", doc: map[string]any{"a": "{{ x }}"},
			lookup: func(string) (any, bool, error) { return nil, false, errors.New("backend down") },
			subst:  "failed to resolve x at path /a: backend down"},
		{name: "lookup says not found", doc: map[string]any{"a": "{{ x }}"}, lookup: notFound,
			subst: "variable x not resolved at path /a", notFound: true},
		{name: "key not a string", doc: map[string]any{"{{ request.object.spec.replicas }}": "x"},
			subst: `expected string after substituting variables in key "{{ request.object.spec.replicas }}"`},
		{name: "reference to nothing", doc: map[string]any{"a": "$(./../b)"}, compile: "$(./../b)"},
		{name: "too deep", doc: deep, compile: "nest"},
		{name: "not JSON-like", doc: map[string]any{"a": struct{}{}}, compile: "struct"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Compile(tt.doc, nil)
			if tt.compile != "" {
				if err == nil || !strings.Contains(err.Error(), tt.compile) {
					t.Fatalf("Compile: %v, want an error with %q", err, tt.compile)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.lookup != nil {
				_, err = d.SubstituteFunc(tt.lookup)
			} else {
				_, err = d.Substitute(data)
			}
			if err == nil || !strings.Contains(err.Error(), tt.subst) {
				t.Fatalf("Substitute: %v, want an error with %q", err, tt.subst)
			}
			if errors.Is(err, ErrNotFound) != tt.notFound {
				t.Errorf("errors.Is(%v, ErrNotFound) = %v", err, !tt.notFound)
			}
		})
	}
	d, err := Compile("{{ x }}", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.SubstituteFunc(nil); err == nil {
		t.Error("SubstituteFunc(nil) substituted a variable")
	}
}

// TestConcurrentAndUnmodified: one compiled document serves many
// goroutines; neither the input nor the compiled document changes.
func TestConcurrentAndUnmodified(t *testing.T) {
	src := `{"metadata":{"name":"{{ request.object.metadata.name }}-copy","labels":{"static":"yes"}}}`
	doc := mustJSON(t, src)
	jp, err := jmespath.New()
	if err != nil {
		t.Fatal(err)
	}
	d, err := Compile(doc, jp)
	if err != nil {
		t.Fatal(err)
	}
	want := mustJSON(t, `{"metadata":{"name":"web-copy","labels":{"static":"yes"}}}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				got, err := d.Substitute(data)
				if err != nil || !reflect.DeepEqual(got, want) {
					t.Errorf("got %v, %v", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if b, _ := json.Marshal(doc); string(b) != `{"metadata":{"labels":{"static":"yes"},"name":"{{ request.object.metadata.name }}-copy"}}` {
		t.Errorf("input modified: %s", b)
	}
}

func BenchmarkSubstitute(b *testing.B) {
	d, err := Compile(mustJSON(b, `{"metadata":{"name":"{{ request.object.metadata.name }}-copy","labels":{"app":"{{ request.object.metadata.labels.app }}","static":"yes"}}}`), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Substitute(data); err != nil {
			b.Fatal(err)
		}
	}
}
