package variables_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gavelpolicy/gavel/jmespath"
	"github.com/gavelpolicy/gavel/variables"
)

var request = map[string]any{
	"request": map[string]any{
		"namespace": "team-a",
		"userInfo":  map[string]any{"username": "alice"},
		"object": map[string]any{
			"metadata": map[string]any{
				"name":        "web",
				"labels":      map[string]any{"app": "web"},
				"annotations": map[string]any{"note": "{{ request.userInfo }}"},
			},
			"spec": map[string]any{"replicas": 3},
		},
	},
}

// Variables are JMESPath queries on a map, with Kyverno's functions.
func ExampleDocument_Substitute() {
	doc := map[string]any{
		"metadata": map[string]any{
			"name":   "{{ request.object.metadata.name }}-copy",
			"labels": map[string]any{"owner": "{{ to_upper(request.userInfo.username) }}"},
		},
		"spec": map[string]any{"replicas": "{{ multiply(request.object.spec.replicas, `2`) }}"},
	}
	d, err := variables.Compile(doc, nil)
	if err != nil {
		panic(err)
	}
	out, err := d.Substitute(request)
	fmt.Println(out, err)
	for _, v := range d.Variables() {
		fmt.Println(v.Path, "=", v.Expression)
	}
	// Output:
	// map[metadata:map[labels:map[owner:ALICE] name:web-copy] spec:map[replicas:6]] <nil>
	// /metadata/labels/owner = to_upper(request.userInfo.username)
	// /metadata/name = request.object.metadata.name
	// /spec/replicas = multiply(request.object.spec.replicas, `2`)
}

// A value brought in by a variable is text: the `{{ }}` inside an
// annotation is copied, never evaluated.
func ExampleDocument_Substitute_dataIsNotCode() {
	d, _ := variables.Compile("note: {{ request.object.metadata.annotations.note }}", nil)
	out, _ := d.Substitute(request)
	fmt.Println(out)
	// Output: note: {{ request.userInfo }}
}

// An unresolved variable is an error naming it and its place.
func ExampleDocument_Substitute_errors() {
	d, _ := variables.Compile(map[string]any{"owner": "{{ request.object.metadata.owner }}"}, nil)
	_, err := d.Substitute(request)
	fmt.Println(err)
	fmt.Println(errors.Is(err, variables.ErrNotFound))
	// Output:
	// variable request.object.metadata.owner not resolved at path /owner
	// true
}

// A lookup function resolves variables however the caller likes; here
// from settings, by name.
func ExampleDocument_SubstituteFunc() {
	settings := map[string]string{"registry": "corp.io", "tag": "v1.2"}
	lookup := func(expr string) (any, bool, error) {
		v, ok := settings[strings.TrimPrefix(expr, "settings.")]
		return v, ok, nil
	}
	d, _ := variables.Compile(map[string]any{"image": "{{ settings.registry }}/app:{{ settings.tag }}"}, nil)
	out, err := d.SubstituteFunc(lookup)
	fmt.Println(out, err)
	// Output: map[image:corp.io/app:v1.2] <nil>
}

// References point into the document itself: a liveness probe on the
// readiness probe's port.
func ExampleCompile_references() {
	pattern := map[string]any{
		"spec": map[string]any{"containers": []any{map[string]any{
			"livenessProbe":  map[string]any{"tcpSocket": map[string]any{"port": "$(./../../../readinessProbe/tcpSocket/port)"}},
			"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": "8080"}},
			"command":        `\$(ENTRYPOINT)`,
		}}},
	}
	d, err := variables.Compile(pattern, nil)
	if err != nil {
		panic(err)
	}
	out, _ := d.Substitute(nil) // no variables: no data needed
	c := out.(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	fmt.Println(c["livenessProbe"], c["command"])
	// Output: map[tcpSocket:map[port:8080]] $(ENTRYPOINT)
}

// The interpreter gives the clock of time functions; a bad expression
// fails at Compile.
func ExampleCompile() {
	jp, err := jmespath.New(jmespath.WithClock(func() time.Time { return time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC) }))
	if err != nil {
		panic(err)
	}
	d, _ := variables.Compile("checked at {{ time_now_utc() }}", jp)
	out, _ := d.Substitute(nil)
	fmt.Println(out)

	_, err = variables.Compile(map[string]any{"a": "{{ to_upper(name, 'x') }}"}, jp)
	fmt.Println(err)
	// Output:
	// checked at 2024-05-01T12:00:00Z
	// variables: {{ to_upper(name, 'x') }} at path /a: invalid JMESPath expression "to_upper(name, 'x')": invalid arity, the function 'to_upper' expects at most 1 arguments but 2 were supplied
}
