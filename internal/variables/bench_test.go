package variables

import "testing"

// a typical validate rule with a message, a deny condition and a pattern
func benchRule() any {
	return mustJSON(`{
	  "name": "check-owner",
	  "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
	  "validate": {
	    "message": "The owner label of {{ request.object.metadata.name }} must be {{ request.object.metadata.annotations.owner }}.",
	    "deny": {"conditions": {"any": [{"key": "{{ request.object.metadata.labels.owner || '' }}", "operator": "NotEquals", "value": "alice"}]}},
	    "pattern": {"metadata": {"labels": {"team": "?*", "tier": "backend"}}, "spec": {"containers": [{"name": "*", "image": "!*:latest", "resources": {"limits": {"memory": "?*"}}}]}}
	  }
	}`)
}

// benchContext stands for the engine's evaluator with its compiled-query
// cache: a map lookup, so that the benchmarks measure this package.
func benchContext() Evaluator {
	answers := map[string]any{
		"request.object.metadata.name":               "web",
		"request.object.metadata.annotations.owner":  "alice",
		"request.object.metadata.labels.owner || ''": "alice",
	}
	return EvaluatorFunc(func(expr string) (any, error) { return answers[expr], nil })
}

func BenchmarkCompileRule(b *testing.B) {
	rule := benchRule()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(rule); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSubstitute3Variables(b *testing.B) {
	tree, err := Compile(benchRule())
	if err != nil {
		b.Fatal(err)
	}
	ev := benchContext()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tree.Substitute(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSubstituteNoVariables(b *testing.B) {
	tree, err := Compile(mustJSON(`{"validate": {"message": "no variables here", "pattern": {"metadata": {"labels": {"team": "?*"}}}}}`))
	if err != nil {
		b.Fatal(err)
	}
	ev := benchContext()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tree.Substitute(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("ns-owner-{{request.namespace}}-{{ LabelsCM.data.{{ request.object.metadata.labels.app }} }}-binding"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderWhole(b *testing.B) {
	tmpl, _ := Parse("{{ request.object.metadata.name }}")
	ev := benchContext()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tmpl.Render(ev); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResolveReferences(b *testing.B) {
	doc := mustJSON(`{"spec": {"containers": [{"livenessProbe": {"tcpSocket": {"port": "$(<./../../../readinessProbe/tcpSocket/port)"}}, "readinessProbe": {"tcpSocket": {"port": "3000"}}}]}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ResolveReferences(doc); err != nil {
			b.Fatal(err)
		}
	}
}
