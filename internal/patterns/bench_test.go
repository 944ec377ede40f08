package patterns

import "testing"

// The pattern of the require-pod-requests-limits policy (best-practices)
// with an initContainers clause, and a typical three-container Pod.
const (
	benchPattern = `{"spec":{
		"containers":[{"resources":{"requests":{"memory":"?*","cpu":"?*"},"limits":{"memory":"?*"}}}],
		"=(initContainers)":[{"resources":{"requests":{"memory":"?*","cpu":"?*"},"limits":{"memory":"?*"}}}]}}`
	benchPod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop","labels":{"app":"web","tier":"frontend"}},
		"spec":{"serviceAccountName":"web","securityContext":{"runAsNonRoot":true},
		"initContainers":[{"name":"init","image":"busybox:1.36","resources":{"requests":{"memory":"16Mi","cpu":"10m"},"limits":{"memory":"32Mi"}}}],
		"containers":[
			{"name":"web","image":"registry.example.com/web:1.4.2","ports":[{"containerPort":8080}],"resources":{"requests":{"memory":"256Mi","cpu":"250m"},"limits":{"memory":"512Mi","cpu":"1"}}},
			{"name":"proxy","image":"envoyproxy/envoy:v1.30","resources":{"requests":{"memory":"64Mi","cpu":"50m"},"limits":{"memory":"128Mi"}}},
			{"name":"logs","image":"fluent/fluent-bit:3.0","resources":{"requests":{"memory":"32Mi","cpu":"20m"},"limits":{"memory":"64Mi"}}}]}}`
	benchAnchors = `{"spec":{"containers":[{"name":"*","(image)":"*:latest | !*:*","imagePullPolicy":"Always",
		"=(securityContext)":{"=(privileged)":false,"X(capabilities)":"null"}}],"=(hostNetwork)":false}}`
)

func BenchmarkCompile(b *testing.B) {
	pattern := mustJSON(b, benchPattern)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compile(pattern); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	benchmarkMatch(b, benchPattern, benchPod, true)
}

func BenchmarkMatchParallel(b *testing.B) {
	p, err := Compile(mustJSON(b, benchPattern))
	if err != nil {
		b.Fatal(err)
	}
	res := mustJSON(b, benchPod)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := p.Match(res); err != nil {
				b.Error(err)
			}
		}
	})
}

func BenchmarkMatchFail(b *testing.B) {
	benchmarkMatch(b, `{"spec":{"containers":[{"resources":{"limits":{"cpu":"<=500m"}}}]}}`, benchPod, false)
}

func BenchmarkMatchAnchorsSkip(b *testing.B) {
	benchmarkMatch(b, benchAnchors, benchPod, false)
}

func benchmarkMatch(b *testing.B, pattern, resource string, wantPass bool) {
	p, err := Compile(mustJSON(b, pattern))
	if err != nil {
		b.Fatal(err)
	}
	res := mustJSON(b, resource)
	if err := p.Match(res); (err == nil) != wantPass {
		b.Fatalf("Match = %v", err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = p.Match(res)
	}
}
