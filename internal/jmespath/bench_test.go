package jmespath

import "testing"

func BenchmarkCompile(b *testing.B) {
	intr := mustNew(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := intr.Compile("request.object.spec.containers[].image"); err != nil {
			b.Fatal(err)
		}
	}
}

func benchSearch(b *testing.B, expr string) {
	intr := mustNew(b)
	pod := readJSON(b, "admission-pod.json")
	q, err := intr.Compile(expr)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := q.Search(pod); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchImages(b *testing.B) {
	benchSearch(b, "request.object.spec.containers[].image")
}

func BenchmarkSearchRegexFilter(b *testing.B) {
	benchSearch(b, "request.object.spec.containers[?regex_match('^app-[0-9]+$', name)].name")
}

func BenchmarkSearchSumQuantities(b *testing.B) {
	benchSearch(b, "sum(request.object.spec.containers[].resources.requests.memory)")
}

func BenchmarkInterpreterSearchCached(b *testing.B) {
	intr := mustNew(b)
	pod := readJSON(b, "admission-pod.json")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := intr.Search("request.object.spec.containers[].image", pod); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchIntInput(b *testing.B) {
	intr := mustNew(b)
	data := map[string]any{"spec": map[string]any{"replicas": int64(3), "template": readJSON(b, "admission-pod.json")}}
	q, _ := intr.Compile("spec.replicas")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.Search(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchCanonicalImages(b *testing.B) {
	intr := mustNew(b)
	pod, err := Canonical(readJSON(b, "admission-pod.json"))
	if err != nil {
		b.Fatal(err)
	}
	q, _ := intr.Compile("request.object.spec.containers[].image")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.SearchCanonical(pod); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchToUpperDrop(b *testing.B) {
	intr := mustNew(b)
	el := map[string]any{"element": map[string]any{"name": "c", "securityContext": map[string]any{"capabilities": map[string]any{"drop": []any{"all", "net_raw"}}}}}
	q, err := intr.Compile("element.securityContext.capabilities.drop[].to_upper(@) || `[]`")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.SearchCanonical(el); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSearchKeysFlatten(b *testing.B) {
	intr := mustNew(b)
	el := map[string]any{"element": map[string]any{"name": "c", "image": "x", "securityContext": map[string]any{}}}
	q, err := intr.Compile("element.keys(@)[]")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := q.SearchCanonical(el); err != nil {
			b.Fatal(err)
		}
	}
}
