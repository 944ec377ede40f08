package variables

import (
	"encoding/json"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"{{ request.object.metadata.name }}", "ns-{{a}}-{{b}}", `\{{ a }}`, "{{ a.{{ b }} }}",
		"{{- hcl }}", "{{{a}}}", "{{ {a: b} }}", "{{}}", "{{@}}", `\\{{a}}`, "{{a}}{{b}}{{c}}",
		"$(./../x)", "é{{a}}\xff", `{{ a.\"b/c\" || '' }}`,
	} {
		f.Add(s, "/mutate/foreach/0/patchStrategicMerge/spec")
	}
	f.Fuzz(func(t *testing.T, s, path string) {
		tmpl, err := Parse(s, WithBasePath(path))
		if err != nil {
			return
		}
		_ = tmpl.Variables()
		out, err := tmpl.Render(EvaluatorFunc(func(expr string) (any, error) {
			switch len(expr) % 4 {
			case 0:
				return expr, nil
			case 1:
				return float64(len(expr)), nil
			case 2:
				return nil, nil
			}
			return map[string]any{"k": expr}, nil
		}), WithDeleteRequest(true))
		if err == nil && !tmpl.HasVariables() && out != tmpl.text {
			t.Fatalf("literal template rendered %v", out)
		}
		// where upstream's re-scanning cannot see anything new, the result
		// must be upstream's
		if len(s) < 200 && !strings.Contains(s, "@") {
			want, wantErr := modelSubstitute(s, modelEval)
			got, err := gavelSubstitute(s)
			if (err == nil) != (wantErr == nil) || (err == nil && toJSON(got) != toJSON(want)) {
				t.Fatalf("%q: got %v (%v), model %v (%v)", s, got, err, want, wantErr)
			}
		}
	})
}

func FuzzSubstitute(f *testing.F) {
	f.Add(`{"a": "{{ x }}", "{{ k }}": ["{{ y.{{ z }} }}", 1, true, null], "r": "$(./a)"}`, `{"x": 1, "k": "key", "y": {"v": "w"}, "z": "v"}`)
	f.Add(`"{{@}}"`, `{"request": {"object": {}}}`)
	f.Add(`{"m": {"{{ n }}": "x"}, "p": "$(<./../m)"}`, `{"n": 2}`)
	f.Fuzz(func(t *testing.T, docJSON, dataJSON string) {
		var doc, data any
		if json.Unmarshal([]byte(docJSON), &doc) != nil || json.Unmarshal([]byte(dataJSON), &data) != nil {
			return
		}
		before := toJSON(doc)
		resolved, err := ResolveReferences(doc)
		if err != nil {
			resolved = doc
		}
		tree, err := Compile(resolved, WithBasePath("/mutate/patchStrategicMerge"))
		if err != nil {
			return
		}
		ctx, _ := data.(map[string]any)
		ev := newFake(ctx)
		_, _ = tree.Substitute(ev)
		_, _ = tree.Substitute(ev, WithUnresolvedAsNil(), WithDeleteRequest(true))
		_, _ = tree.Substitute(plainEvaluator{ev}, WithCurrentValuePrefix("target"))
		if toJSON(doc) != before {
			t.Fatal("input modified")
		}
	})
}
