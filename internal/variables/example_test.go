package variables_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gavelpolicy/gavel/internal/variables"
)

// lookup is a toy Evaluator: it resolves dotted paths in a fixed context.
func lookup(ctx map[string]any) variables.Evaluator {
	return variables.EvaluatorFunc(func(expr string) (any, error) {
		var cur any = ctx
		for _, k := range strings.Split(expr, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, nil
			}
			if cur, ok = m[k]; !ok {
				return nil, nil
			}
		}
		return cur, nil
	})
}

var ctx = map[string]any{
	"request": map[string]any{
		"namespace": "team-a",
		"userInfo":  map[string]any{"username": "alice"},
		"object": map[string]any{
			"metadata": map[string]any{
				"name":        "web",
				"labels":      map[string]any{"app": "web"},
				"annotations": map[string]any{"note": "{{ request.userInfo }}"},
			},
			"spec": map[string]any{"replicas": float64(3)},
		},
	},
	"LabelsCM": map[string]any{"data": map[string]any{"web": "frontend-team"}},
}

func ExampleParse() {
	tmpl, err := variables.Parse("ns-owner-{{request.namespace}}-{{request.userInfo.username}}-binding")
	if err != nil {
		panic(err)
	}
	out, err := tmpl.Render(lookup(ctx))
	fmt.Println(out, err)
	// Output: ns-owner-team-a-alice-binding <nil>
}

func ExampleTemplate_Render() {
	whole, _ := variables.Parse("{{ request.object.spec.replicas }}")
	v, _ := whole.Render(lookup(ctx))
	fmt.Printf("%T %v\n", v, v)

	inString, _ := variables.Parse("replicas={{ request.object.spec.replicas }} labels={{ request.object.metadata.labels }}")
	s, _ := inString.Render(lookup(ctx))
	fmt.Println(s)

	nested, _ := variables.Parse("{{ LabelsCM.data.{{ request.object.metadata.labels.app }} }}")
	team, _ := nested.Render(lookup(ctx))
	fmt.Println(team)

	escaped, _ := variables.Parse(`\{{ request.object.metadata.name }}`)
	lit, _ := escaped.Render(lookup(ctx))
	fmt.Println(lit)
	// Output:
	// float64 3
	// replicas=3 labels={"app":"web"}
	// frontend-team
	// {{ request.object.metadata.name }}
}

// A value brought in by a variable is text: the `{{ }}` inside a hostile
// annotation is copied, never evaluated.
func ExampleTemplate_Render_dataIsNotCode() {
	tmpl, _ := variables.Parse("note: {{ request.object.metadata.annotations.note }}")
	out, _ := tmpl.Render(lookup(ctx))
	fmt.Println(out)
	// Output: note: {{ request.userInfo }}
}

func ExampleCompile() {
	patch := map[string]any{
		"metadata": map[string]any{
			"annotations": map[string]any{
				"created-by": "{{ request.userInfo.username }}",
				"static":     "unchanged",
			},
		},
	}
	tree, err := variables.Compile(patch, variables.WithBasePath("/mutate/patchStrategicMerge"))
	if err != nil {
		panic(err)
	}
	out, err := tree.Substitute(lookup(ctx))
	fmt.Println(out, err)
	for _, v := range tree.Variables() {
		fmt.Println(v.Path, v.Expression)
	}
	// Output:
	// map[metadata:map[annotations:map[created-by:alice static:unchanged]]] <nil>
	// /mutate/patchStrategicMerge/metadata/annotations/created-by request.userInfo.username
}

// `{{ @ }}` is the current value of the field in the admitted resource.
func ExampleCompile_currentValue() {
	patch := map[string]any{"metadata": map[string]any{"name": "{{ @ }}-copy"}}
	tree, _ := variables.Compile(patch, variables.WithBasePath("/mutate/patchStrategicMerge"))
	out, _ := tree.Substitute(lookup(ctx))
	fmt.Println(out)
	// Output: map[metadata:map[name:web-copy]]
}

func ExampleTree_Substitute_errors() {
	tree, _ := variables.Compile(map[string]any{"owner": "{{ request.object.metadata.owner }}"})
	_, err := tree.Substitute(lookup(ctx))
	fmt.Println(err)
	var ue *variables.UnresolvedError
	fmt.Println(errors.As(err, &ue), ue.Path)

	out, _ := tree.Substitute(lookup(ctx), variables.WithUnresolvedAsNil())
	fmt.Println(out)
	// Output:
	// variable request.object.metadata.owner not resolved at path /owner
	// true /owner
	// map[owner:<nil>]
}

func ExampleResolveReferences() {
	pattern := map[string]any{
		"spec": map[string]any{
			"containers": []any{map[string]any{
				"livenessProbe":  map[string]any{"tcpSocket": map[string]any{"port": "$(<./../../../readinessProbe/tcpSocket/port)"}},
				"readinessProbe": map[string]any{"tcpSocket": map[string]any{"port": "3000"}},
			}},
			"env": `\$(POD_NAME)`,
		},
	}
	out, err := variables.ResolveReferences(pattern)
	spec := out.(map[string]any)["spec"].(map[string]any)
	fmt.Println(spec["containers"].([]any)[0].(map[string]any)["livenessProbe"], spec["env"], err)
	// Output: map[tcpSocket:map[port:<3000]] $(POD_NAME) <nil>
}
