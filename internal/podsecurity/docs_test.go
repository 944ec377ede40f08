package podsecurity

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// checkGolden compares got with testdata/golden/<name>.txt (rewritten with
// -update).
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name+".txt")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if strings.TrimSuffix(string(want), "\n") != got {
		t.Errorf("message differs from %s\n got: %s\nwant: %s", path, got, want)
	}
}

const (
	docBadPod01 = `
apiVersion: v1
kind: Pod
metadata:
  name: badpod01
spec:
  hostIPC: true
  containers:
    - name: container01
      image: dummyimagename
`
	docCapsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: goodpod01
spec:
  containers:
    - name: container01
      image: %IMAGE%
      securityContext:
        allowPrivilegeEscalation: false
        runAsNonRoot: true
        seccompProfile:
          type: RuntimeDefault
        capabilities:
          add:
            - SYS_ADMIN
          drop:
            - ALL
`
	docSeccompPod = `
apiVersion: v1
kind: Pod
metadata:
  name: goodpod01
spec:
  securityContext:
    seccompProfile:
      type: Unconfined
  containers:
    - name: container01
      image: busybox:1.28
      securityContext:
        allowPrivilegeEscalation: false
        runAsNonRoot: true
        capabilities:
          drop:
            - ALL
`
	docNginxAdd = `
apiVersion: v1
kind: Pod
metadata:
  name: nginx
spec:
  containers:
    - name: nginx
      image: nginx:latest
      securityContext:
        capabilities:
          add:
            - %CAP%
`
	docNginxSeccomp = `
apiVersion: v1
kind: Pod
metadata:
  name: nginx
spec:
  securityContext:
    seccompProfile:
      type: %TYPE%
  containers:
    - name: nginx
      image: nginx:latest
      securityContext:
        seccompProfile:
          type: Unconfined
`
	// The Pod of the guide's "Running as Non-root" exemption.
	docRootPod = `
apiVersion: v1
kind: Pod
metadata:
  name: nginx-pod
  namespace: delta
spec:
  containers:
  - name: nginx
    image: nginx
    args:
    - sleep
    - 1d
    securityContext:
      seccompProfile:
        type: RuntimeDefault
      runAsNonRoot: false
      allowPrivilegeEscalation: false
      capabilities:
        drop:
        - ALL
`
	// The Istio Pod of the guide's restrictedField exemption.
	docIstioPod = `
apiVersion: v1
kind: Pod
metadata:
  name: istio-pod
spec:
  initContainers:
  - name: istio-init
    image: docker.io/istio/proxyv2:1.20.2
    args: [istio-iptables, -p, "15001", -z, "15006", -u, "1337", -m, REDIRECT, -i, '*', -x, "", -b, '*', -d, "15090,15021,15020", --log_output_level=default:info]
    securityContext:
      allowPrivilegeEscalation: false
      capabilities:
        add:
%CAPS%
        drop:
          - ALL
      privileged: false
      readOnlyRootFilesystem: false
      runAsGroup: 0
      runAsNonRoot: false
      runAsUser: 0
  containers:
  - name: busybox
    image: busybox:1.35
    args:
    - sleep
    - infinity
`
)

func sub(doc string, kv ...string) string {
	return strings.NewReplacer(kv...).Replace(doc)
}

// TestDocumentationExamples covers every podSecurity example of the
// validate page (Pod Security, Exemptions) and of the PolicyException guide
// (Pod Security Exemptions, also seed 003).
func TestDocumentationExamples(t *testing.T) {
	tests := []struct {
		name   string
		rule   string
		ps     string
		pod    string
		extra  string // PolicyException podSecurity exemptions
		status string
		golden string // golden message file for failures
	}{
		{
			name: "baseline rejects hostIPC", rule: "baseline",
			ps:  "level: baseline\nversion: latest",
			pod: docBadPod01, status: "fail", golden: "doc-baseline-hostipc",
		},
		{
			name: "restricted reports cumulative violations", rule: "restricted",
			ps:  "level: restricted\nversion: latest",
			pod: docBadPod01, status: "fail", golden: "doc-restricted-badpod01",
		},
		{
			name: "exclude Host Namespaces", rule: "baseline",
			ps:  "level: baseline\nversion: latest\nexclude:\n- controlName: Host Namespaces",
			pod: docBadPod01, status: "pass",
		},
		{
			name: "exclude Capabilities for nginx and redis images: nginx allowed", rule: "restricted",
			ps:  "level: restricted\nversion: latest\nexclude:\n- controlName: Capabilities\n  images: [nginx*, redis*]",
			pod: sub(docCapsPod, "%IMAGE%", "nginx:1.1.9"), status: "pass",
		},
		{
			name: "exclude Capabilities for nginx and redis images: busybox rejected", rule: "restricted",
			ps:  "level: restricted\nversion: latest\nexclude:\n- controlName: Capabilities\n  images: [nginx*, redis*]",
			pod: sub(docCapsPod, "%IMAGE%", "busybox:1.28"), status: "fail", golden: "doc-capabilities-busybox",
		},
		{
			name: "exclude Seccomp at pod and container level", rule: "restricted",
			ps:  "level: restricted\nversion: latest\nexclude:\n- controlName: Seccomp\n- controlName: Seccomp\n  images: ['*']",
			pod: docSeccompPod, status: "pass",
		},
		{
			name: "Seccomp excluded at the pod level only still fails for the containers", rule: "restricted",
			ps:     "level: restricted\nversion: latest\nexclude:\n- controlName: Seccomp",
			pod:    sub(docSeccompPod, "        runAsNonRoot: true\n", "        runAsNonRoot: true\n        seccompProfile:\n          type: Unconfined\n"),
			status: "fail", golden: "doc-seccomp-pod-only",
		},
		{
			name: "restrictedField capabilities.add FOO allowed", rule: "baseline",
			ps:  "level: baseline\nversion: latest\nexclude:\n- controlName: Capabilities\n  images: [nginx*]\n  restrictedField: spec.containers[*].securityContext.capabilities.add\n  values: [FOO, BAR]",
			pod: sub(docNginxAdd, "%CAP%", "FOO"), status: "pass",
		},
		{
			name: "restrictedField capabilities.add BAZ rejected", rule: "baseline",
			ps:  "level: baseline\nversion: latest\nexclude:\n- controlName: Capabilities\n  images: [nginx*]\n  restrictedField: spec.containers[*].securityContext.capabilities.add\n  values: [FOO, BAR]",
			pod: sub(docNginxAdd, "%CAP%", "BAZ"), status: "fail", golden: "doc-restricted-field-baz",
		},
		{
			name: "restrictedField seccomp Unconfined at pod and container level allowed", rule: "baseline",
			ps: `level: baseline
version: latest
exclude:
- controlName: Seccomp
  restrictedField: spec.securityContext.seccompProfile.type
  values: [Unconfined]
- controlName: Seccomp
  images: [nginx*]
  restrictedField: spec.containers[*].securityContext.seccompProfile.type
  values: [Unconfined]`,
			pod: sub(docNginxSeccomp, "%TYPE%", "Unconfined"), status: "pass",
		},
		{
			name: "restrictedField seccomp Unknown at pod level rejected", rule: "baseline",
			ps: `level: baseline
version: latest
exclude:
- controlName: Seccomp
  restrictedField: spec.securityContext.seccompProfile.type
  values: [Unconfined]
- controlName: Seccomp
  images: [nginx*]
  restrictedField: spec.containers[*].securityContext.seccompProfile.type
  values: [Unconfined]`,
			pod: sub(docNginxSeccomp, "%TYPE%", "Unknown"), status: "fail", golden: "doc-seccomp-unknown",
		},
		{
			name: "exception: Running as Non-root", rule: "restricted",
			ps:    "level: restricted\nversion: latest",
			pod:   docRootPod,
			extra: `- controlName: "Running as Non-root"`, status: "skip",
		},
		{
			name: "no exception: root Pod rejected", rule: "restricted",
			ps:  "level: restricted\nversion: latest",
			pod: docRootPod, status: "fail", golden: "doc-root-pod",
		},
		{
			name: "exception: Capabilities for nginx and redis images", rule: "restricted",
			ps:    "level: restricted\nversion: latest",
			pod:   sub(docCapsPod, "%IMAGE%", "redis:7"),
			extra: "- controlName: Capabilities\n  images: [nginx*, redis*]", status: "skip",
		},
		{
			name: "exception: Istio init container NET_ADMIN and NET_RAW allowed", rule: "baseline",
			ps:  "level: baseline\nversion: latest",
			pod: sub(docIstioPod, "%CAPS%", "          - NET_ADMIN\n          - NET_RAW"),
			extra: `- controlName: Capabilities
  images: ["*/istio/proxyv2*", "*/linkerd/proxy-init*"]
  restrictedField: spec.initContainers[*].securityContext.capabilities.add
  values: [NET_ADMIN, NET_RAW]`,
			status: "skip",
		},
		{
			name: "exception: Istio init container SYS_ADMIN rejected", rule: "baseline",
			ps:  "level: baseline\nversion: latest",
			pod: sub(docIstioPod, "%CAPS%", "          - NET_ADMIN\n          - NET_RAW\n          - SYS_ADMIN"),
			extra: `- controlName: Capabilities
  images: ["*/istio/proxyv2*", "*/linkerd/proxy-init*"]
  restrictedField: spec.initContainers[*].securityContext.capabilities.add
  values: [NET_ADMIN, NET_RAW]`,
			status: "fail", golden: "doc-istio-sys-admin",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chk := mustCompile(t, mustPodSecurity(t, tt.ps), tt.rule)
			res := mustEvaluate(t, chk, mustObject(t, tt.pod), excludesOrNil(t, tt.extra))
			if got := res.status(); got != tt.status {
				t.Fatalf("status %s, want %s\n%s", got, tt.status, res.Message)
			}
			switch tt.status {
			case "pass":
				if want := "Validation rule '" + tt.rule + "' passed."; res.Message != want {
					t.Errorf("message %q, want %q", res.Message, want)
				}
			case "fail":
				checkGolden(t, tt.golden, res.Message)
			}
		})
	}
}
