package images

import (
	"fmt"
	"testing"
)

func BenchmarkParse(b *testing.B) {
	cfg := DefaultConfig()
	for _, image := range []string{"nginx", "ghcr.io/acme/app:1.0", "docker.io/library/nginx@" + digest} {
		b.Run(image[:min(len(image), 24)], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(image, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchPod(n int) map[string]any {
	containers := make([]any, n)
	for i := range containers {
		containers[i] = map[string]any{"name": fmt.Sprintf("c%d", i), "image": fmt.Sprintf("ghcr.io/acme/app%d:1.%d", i, i)}
	}
	return map[string]any{
		"kind": "Deployment",
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
			"initContainers": []any{map[string]any{"name": "init", "image": "busybox"}},
			"containers":     containers,
		}}},
	}
}

func BenchmarkExtractVariable(b *testing.B) {
	x, err := NewExtractor(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	deploy := benchPod(3)
	b.ReportAllocs()
	for b.Loop() {
		infos, err := x.Extract(deploy)
		if err != nil {
			b.Fatal(err)
		}
		if v := Variable(infos); len(v) != 2 {
			b.Fatal(v)
		}
	}
}
