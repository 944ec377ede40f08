package podsecurity

import (
	"sync"
	"testing"

	"github.com/gavelpolicy/gavel/api"
)

const typicalPod = `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: shop
  labels: {app: web}
spec:
  securityContext:
    runAsNonRoot: true
    seccompProfile: {type: RuntimeDefault}
  initContainers:
  - name: init
    image: busybox:1.36
    command: [sh, -c, "true"]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL]}
  containers:
  - name: web
    image: ghcr.io/example/web:1.2.3
    ports: [{containerPort: 8080, name: http}]
    env: [{name: MODE, value: prod}]
    resources: {limits: {cpu: 500m, memory: 256Mi}}
    readinessProbe: {httpGet: {path: /healthz, port: 8080}}
    volumeMounts: [{name: tmp, mountPath: /tmp}]
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities: {drop: [ALL]}
  - name: sidecar
    image: ghcr.io/example/proxy:2.0
    securityContext:
      allowPrivilegeEscalation: false
      capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}
  volumes:
  - {name: tmp, emptyDir: {}}
`

func BenchmarkEvaluateRestrictedLatest(b *testing.B) {
	chk := mustCompile(b, api.PodSecurity{Level: "restricted", Version: "latest"}, "restricted")
	obj := mustObject(b, typicalPod)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := chk.Evaluate(obj, nil)
		if err != nil || !res.Allowed {
			b.Fatal(err, res.Message)
		}
	}
}

func BenchmarkEvaluateRestrictedFailing(b *testing.B) {
	chk := mustCompile(b, api.PodSecurity{Level: "restricted", Version: "latest"}, "restricted")
	obj := mustObject(b, docBadPod01)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err := chk.Evaluate(obj, nil); err != nil || res.Allowed {
			b.Fatal(err)
		}
	}
}

func BenchmarkEvaluateWithExemptions(b *testing.B) {
	chk := mustCompile(b, mustPodSecurity(b, "level: restricted\nexclude:\n- controlName: Seccomp\n- controlName: Seccomp\n  images: ['*']"), "restricted")
	obj := mustObject(b, docSeccompPod)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if res, err := chk.Evaluate(obj, nil); err != nil || !res.Allowed {
			b.Fatal(err, res.Message)
		}
	}
}

func BenchmarkCompile(b *testing.B) {
	ps := mustPodSecurity(b, "level: restricted\nversion: latest\nexclude:\n- controlName: Capabilities\n  images: [nginx*]")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := testEvaluator.Compile(ps); err != nil {
			b.Fatal(err)
		}
	}
}

// TestConcurrentEvaluate shares one Check between goroutines (run with -race).
func TestConcurrentEvaluate(t *testing.T) {
	chk := mustCompile(t, mustPodSecurity(t, "level: restricted\nexclude:\n- controlName: Running as Non-root"), "r")
	objs := []map[string]any{mustObject(t, typicalPod), mustObject(t, docBadPod01), mustObject(t, docRootPod)}
	want := make([]string, len(objs))
	for i, o := range objs {
		want[i] = mustEvaluate(t, chk, o, nil).Message
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				k := (g + i) % len(objs)
				res, err := chk.Evaluate(objs[k], nil)
				if err != nil || res.Message != want[k] {
					t.Errorf("goroutine %d: %v %q", g, err, res.Message)
					return
				}
			}
		}()
	}
	wg.Wait()
}
