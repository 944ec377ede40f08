package mutate

import (
	"fmt"
	"testing"
)

// benchPod returns a realistic Pod: three containers with env, ports, volume
// mounts and resources, volumes, labels and annotations.
func benchPod() map[string]any {
	containers := []any{}
	for i, name := range []string{"app", "sidecar", "proxy"} {
		containers = append(containers, map[string]any{
			"name":            name,
			"image":           fmt.Sprintf("registry.example.com/%s:1.%d", name, i),
			"imagePullPolicy": "IfNotPresent",
			"args":            []any{"--port", "8080", "--verbose"},
			"env": []any{
				map[string]any{"name": "A", "value": "1"},
				map[string]any{"name": "B", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}},
			},
			"ports": []any{
				map[string]any{"containerPort": float64(8080 + i), "protocol": "TCP", "name": "http"},
			},
			"volumeMounts": []any{
				map[string]any{"name": "data", "mountPath": "/data"},
				map[string]any{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": true},
			},
			"resources": map[string]any{
				"requests": map[string]any{"cpu": "100m", "memory": "128Mi"},
				"limits":   map[string]any{"cpu": "500m", "memory": "256Mi"},
			},
		})
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":        "bench",
			"namespace":   "default",
			"labels":      map[string]any{"app": "bench", "tier": "backend"},
			"annotations": map[string]any{"example.com/owner": "team-a"},
		},
		"spec": map[string]any{
			"serviceAccountName": "default",
			"containers":         containers,
			"volumes": []any{
				map[string]any{"name": "data", "emptyDir": map[string]any{}},
				map[string]any{"name": "cfg", "configMap": map[string]any{"name": "cfg"}},
			},
			"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
		},
	}
}

func BenchmarkStrategicMergeApply(b *testing.B) {
	patch, err := CompileStrategicMerge(map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"+(example.com/mutated)": "true"}},
		"spec": map[string]any{
			"containers": []any{map[string]any{
				"(image)":         "registry.example.com/*",
				"imagePullPolicy": "Always",
				"securityContext": map[string]any{"+(runAsNonRoot)": true},
			}},
			"imagePullSecrets": []any{map[string]any{"name": "regcred"}},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	pod := benchPod()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := objectOf(patch.Mutate(pod)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStrategicMergeApplyPlain(b *testing.B) {
	patch, err := CompileStrategicMerge(map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"mutated": "true"}},
	})
	if err != nil {
		b.Fatal(err)
	}
	pod := benchPod()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := objectOf(patch.Mutate(pod)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkJSONPatchApply(b *testing.B) {
	patch, err := CompileJSONPatch(`[
		{"op": "add", "path": "/metadata/labels/mutated", "value": "true"},
		{"op": "replace", "path": "/spec/containers/0/imagePullPolicy", "value": "Always"},
		{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "x", "operator": "Exists"}}
	]`)
	if err != nil {
		b.Fatal(err)
	}
	pod := benchPod()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := objectOf(patch.Mutate(pod)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiff(b *testing.B) {
	patch, err := CompileStrategicMerge(map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"mutated": "true"}},
		"spec": map[string]any{"containers": []any{
			map[string]any{"name": "sidecar", "imagePullPolicy": "Always"},
			map[string]any{"name": "init", "image": "busybox"},
		}},
	})
	if err != nil {
		b.Fatal(err)
	}
	pod := benchPod()
	patched, err := objectOf(patch.Mutate(pod))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Diff(pod, patched); err != nil {
			b.Fatal(err)
		}
	}
}
